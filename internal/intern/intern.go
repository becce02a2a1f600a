// Package intern makes the strings of decoded API objects share their bytes.
//
// An informer decodes every object on its own: the same label key, condition type, reason,
// namespace, release name or API version is a new string in each of ten thousand cached
// objects, and a message a ClusterAddon repeats in three of its conditions is three strings.
// Strings replaces each string reachable from an object with the canonical copy Go's unique
// package keeps for it, so equal strings held by the cache share one copy. unique holds its
// copies weakly: a string no cached object refers to any more is collected.
package intern

import (
	"reflect"
	"unique"
)

// maxLen is the length up to which strings are interned: the ones that repeat across objects
// (names, keys, reasons, versions, the messages of conditions) are shorter, and a longer one
// (an encoded document, say) is more likely unique, where interning only adds the canonical
// map's entry.
const maxLen = 256

// String returns the canonical copy of s (s itself when it is longer than maxLen).
func String(s string) string {
	if s == "" || len(s) > maxLen {
		return s
	}
	return unique.Make(s).Value()
}

// Strings replaces, in place, every string obj reaches through exported struct fields,
// pointers, slices, arrays, maps and interfaces (an unstructured object's map[string]any too)
// with its canonical copy. Map keys are interned by rebuilding the map. obj must be a pointer;
// cycles are not followed (API objects have none).
func Strings(obj any) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return
	}
	walk(v.Elem())
}

// walk interns the strings of v, which is settable when it is a string or holds one directly.
func walk(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if v.CanSet() {
			v.SetString(String(v.String()))
		}
	case reflect.Pointer:
		if !v.IsNil() {
			walk(v.Elem())
		}
	case reflect.Struct:
		t := v.Type()
		for i := range v.NumField() {
			if t.Field(i).IsExported() {
				walk(v.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			return // []byte: data, not strings
		}
		for i := range v.Len() {
			walk(v.Index(i))
		}
	case reflect.Map:
		if v.IsNil() || !v.CanSet() {
			return
		}
		v.Set(internMap(v))
	case reflect.Interface:
		if v.IsNil() || !v.CanSet() {
			return
		}
		if e := interned(v.Elem()); e.IsValid() {
			v.Set(e)
		}
	}
}

// internMap returns a copy of the map m with its keys and values interned.
func internMap(m reflect.Value) reflect.Value {
	out := reflect.MakeMapWithSize(m.Type(), m.Len())
	it := m.MapRange()
	for it.Next() {
		k := interned(it.Key())
		if !k.IsValid() {
			k = it.Key()
		}
		val := interned(it.Value())
		if !val.IsValid() {
			val = it.Value()
		}
		out.SetMapIndex(k, val)
	}
	return out
}

// interned returns a settable copy of the (not settable) value v with its strings interned,
// or the invalid Value when v holds no strings to intern.
func interned(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.String:
		c := reflect.New(v.Type()).Elem()
		c.SetString(String(v.String()))
		return c
	case reflect.Interface:
		if v.IsNil() {
			return reflect.Value{}
		}
		e := interned(v.Elem())
		if !e.IsValid() {
			return reflect.Value{}
		}
		c := reflect.New(v.Type()).Elem()
		c.Set(e)
		return c
	case reflect.Map:
		if v.IsNil() {
			return reflect.Value{}
		}
		return internMap(v)
	case reflect.Slice:
		if v.IsNil() || v.Type().Elem().Kind() == reflect.Uint8 {
			return reflect.Value{}
		}
		walk(v) // the elements of a slice are settable through it
		return reflect.Value{}
	case reflect.Pointer:
		if !v.IsNil() {
			walk(v.Elem())
		}
		return reflect.Value{}
	case reflect.Struct, reflect.Array:
		c := reflect.New(v.Type()).Elem()
		c.Set(v)
		walk(c)
		return c
	}
	return reflect.Value{}
}
