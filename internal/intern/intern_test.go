package intern

import (
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

type inner struct {
	Reason  string
	Message *string
}

type object struct {
	Name        string
	Labels      map[string]string
	Conditions  []inner
	ByName      map[string]inner
	Fixed       [2]string
	Data        []byte
	Raw         map[string]any
	Pointers    []*inner
	Named       kind
	unexported  string
	NilMap      map[string]string
	NilAny      any
	EmptyString string
}

type kind string

// fresh returns a copy of s in its own memory, as a decoder makes one per object.
func fresh(s string) string { return strings.Clone(s) }

func sample() *object {
	msg := fresh("cluster bench/c-1: v1 is available")
	return &object{
		Name:       fresh("c-1"),
		Labels:     map[string]string{fresh("app.kubernetes.io/managed-by"): fresh("clusterstack-operator")},
		Conditions: []inner{{Reason: fresh("AsExpected"), Message: &msg}, {Reason: fresh("AsExpected")}},
		ByName:     map[string]inner{fresh("cni"): {Reason: fresh("AsExpected")}},
		Fixed:      [2]string{fresh("True"), fresh("False")},
		Data:       []byte("AsExpected"),
		Raw: map[string]any{
			fresh("spec"): map[string]any{
				fresh("region"):  fresh("eu-west-1"),
				fresh("subnets"): []any{fresh("AsExpected"), map[string]any{fresh("id"): fresh("AsExpected")}, int64(3)},
			},
		},
		Pointers:   []*inner{{Reason: fresh("AsExpected")}, nil},
		Named:      kind(fresh("Helm")),
		unexported: fresh("AsExpected"),
	}
}

// data is the address of s's bytes.
func data(s string) *byte { return unsafe.StringData(s) }

func TestStrings(t *testing.T) {
	a, b := sample(), sample()
	want := sample()
	Strings(a)
	Strings(b)
	if !reflect.DeepEqual(a, want) {
		t.Fatalf("interning changed the object:\n got %#v\nwant %#v", a, want)
	}
	shared := []struct {
		what string
		x, y string
	}{
		{"field", a.Name, b.Name},
		{"map key", keyOf(a.Labels), keyOf(b.Labels)},
		{"map value", a.Labels[keyOf(a.Labels)], b.Labels[keyOf(b.Labels)]},
		{"slice of structs", a.Conditions[0].Reason, b.Conditions[1].Reason},
		{"through a pointer", *a.Conditions[0].Message, *b.Conditions[0].Message},
		{"struct in a map", a.ByName["cni"].Reason, b.ByName["cni"].Reason},
		{"array", a.Fixed[1], b.Fixed[1]},
		{"pointer in a slice", a.Pointers[0].Reason, a.Conditions[0].Reason},
		{"named string type", string(a.Named), string(b.Named)},
		{"unstructured map value", a.Raw["spec"].(map[string]any)["region"].(string), b.Raw["spec"].(map[string]any)["region"].(string)},
		{"unstructured list", a.Raw["spec"].(map[string]any)["subnets"].([]any)[0].(string), a.Conditions[0].Reason},
		{"unstructured map in a list", a.Raw["spec"].(map[string]any)["subnets"].([]any)[1].(map[string]any)["id"].(string), a.Conditions[0].Reason},
		{"unstructured map key", keyOf(a.Raw), keyOf(b.Raw)},
	}
	for _, s := range shared {
		if data(s.x) != data(s.y) {
			t.Errorf("%s: %q and %q do not share their bytes", s.what, s.x, s.y)
		}
	}
	if data(a.unexported) == data(b.unexported) {
		t.Error("an unexported field was interned")
	}
	if string(a.Data) != "AsExpected" {
		t.Errorf("[]byte changed: %q", a.Data)
	}
}

func keyOf[V any](m map[string]V) string {
	for k := range m {
		return k
	}
	return ""
}

func TestStringLongLeftAlone(t *testing.T) {
	long := strings.Repeat("x", maxLen+1)
	a, b := fresh(long), fresh(long)
	if data(String(a)) == data(String(b)) {
		t.Error("a string longer than maxLen was interned")
	}
	if x, y := fresh("x"), fresh("x"); data(String(x)) != data(String(y)) {
		t.Error("a short string was not interned")
	}
}

func TestStringsNotAPointer(t *testing.T) {
	o := *sample()
	Strings(o)              // not a pointer: nothing to change, and no panic
	Strings((*object)(nil)) // nil pointer
	Strings(nil)            // nothing
	var m map[string]any    // nil map through an interface
	Strings(&struct{ M any }{M: m})
}
