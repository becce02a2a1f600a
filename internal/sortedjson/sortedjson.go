// Package sortedjson rewrites the JSON that encoding/json writes for a typed object into the JSON
// it writes for the same object converted to an unstructured one: every object's members sorted
// by key, every number written as the int64 or float64 the conversion holds.
//
// The applied-hash annotation of every object the operator generates is a digest of that
// unstructured JSON (json.Marshal of runtime.DefaultUnstructuredConverter.ToUnstructured). The
// conversion walks the object by reflection and builds a map for every JSON object in it, the
// largest share of what a reconcile allocates; encoding the typed object and sorting its bytes
// costs a fraction, and gives the same bytes, so that the annotations already applied stay what
// they are. The package's tests hold it to the conversion.
package sortedjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Object appends to dst the JSON object src (as json.Marshal writes it) with the members of every
// object in it sorted by key, and its numbers and strings written as json.Marshal writes the
// values an unstructured object holds; the top-level members named in omit are left out.
func Object(dst, src []byte, omit ...string) ([]byte, error) {
	s := scanner{src: src}
	s.space()
	if s.i >= len(src) || src[s.i] != '{' {
		return dst, errors.New("sortedjson: not a JSON object")
	}
	dst, err := s.object(dst, omit)
	if err != nil {
		return dst, err
	}
	if s.space(); s.i != len(src) {
		return dst, fmt.Errorf("sortedjson: unexpected %q after the object", src[s.i])
	}
	return dst, nil
}

// scanner reads src from i. members is a stack of the members of the objects being written,
// shared by all of them so that an object costs no allocation of its own.
type scanner struct {
	src     []byte
	i       int
	members []member
}

var (
	errEnd   = errors.New("sortedjson: unexpected end of JSON")
	literals = [][]byte{[]byte("true"), []byte("false"), []byte("null")}
)

func (s *scanner) space() {
	for s.i < len(s.src) {
		switch s.src[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// value appends the value at s.i.
func (s *scanner) value(dst []byte) ([]byte, error) {
	s.space()
	if s.i >= len(s.src) {
		return dst, errEnd
	}
	switch c := s.src[s.i]; c {
	case '{':
		return s.object(dst, nil)
	case '[':
		return s.array(dst)
	case '"':
		raw, key, err := s.str()
		if err != nil {
			return dst, err
		}
		return appendString(dst, raw, key), nil
	case 't', 'f', 'n':
		for _, lit := range literals {
			if bytes.HasPrefix(s.src[s.i:], lit) {
				s.i += len(lit)
				return append(dst, lit...), nil
			}
		}
		return dst, fmt.Errorf("sortedjson: invalid literal at offset %d", s.i)
	default:
		return s.number(dst)
	}
}

// member is one member of an object: its key (decoded, for sorting), the key as written, and
// the offset of its value in src.
type member struct {
	key, raw []byte
	value    int
}

// object appends the object at s.i with its members sorted by key, leaving out those named in
// omit. It finds the members first (skipping their values), then writes them in order.
func (s *scanner) object(dst []byte, omit []string) ([]byte, error) {
	s.i++ // {
	base := len(s.members)
	defer func() { s.members = s.members[:base] }()
	for first := true; ; first = false {
		s.space()
		if s.i >= len(s.src) {
			return dst, errEnd
		}
		if s.src[s.i] == '}' {
			s.i++
			break
		}
		if !first {
			if s.src[s.i] != ',' {
				return dst, fmt.Errorf("sortedjson: want , or } at offset %d", s.i)
			}
			s.i++
			s.space()
		}
		if s.i >= len(s.src) || s.src[s.i] != '"' {
			return dst, fmt.Errorf("sortedjson: want a key at offset %d", s.i)
		}
		raw, key, err := s.str()
		if err != nil {
			return dst, err
		}
		if s.space(); s.i >= len(s.src) || s.src[s.i] != ':' {
			return dst, fmt.Errorf("sortedjson: want : at offset %d", s.i)
		}
		s.i++
		s.space()
		value := s.i
		if err := s.skip(); err != nil {
			return dst, err
		}
		if len(omit) > 0 && slices.Contains(omit, string(key)) {
			continue
		}
		s.members = append(s.members, member{key: key, raw: raw, value: value})
	}
	end := s.i
	// encoding/json sorts a map's keys as strings (byte-wise); of a key written twice, decoding
	// into a map keeps the last value.
	slices.SortStableFunc(s.members[base:], func(a, b member) int { return bytes.Compare(a.key, b.key) })
	dst = append(dst, '{')
	n := len(s.members)
	for i := base; i < n; i++ {
		m := s.members[i] // a copy: writing a value below may grow s.members
		if i+1 < n && bytes.Equal(m.key, s.members[i+1].key) {
			continue
		}
		if dst[len(dst)-1] != '{' {
			dst = append(dst, ',')
		}
		dst = appendString(dst, m.raw, m.key)
		dst = append(dst, ':')
		s.i = m.value
		var err error
		if dst, err = s.value(dst); err != nil {
			return dst, err
		}
	}
	s.i = end
	return append(dst, '}'), nil
}

// skip moves past the value at s.i without writing it (and without checking it beyond finding
// its end: value checks what it writes).
func (s *scanner) skip() error {
	depth := 0
	for s.i < len(s.src) {
		c := s.src[s.i]
		switch {
		case c == '"':
			if _, _, err := s.scanString(); err != nil {
				return err
			}
		case c == '{' || c == '[':
			depth++
			s.i++
		case c == '}' || c == ']':
			if depth == 0 {
				return nil // the end of the object or array around the value
			}
			depth--
			s.i++
		case c == ',' && depth == 0:
			return nil
		default:
			s.i++
		}
		if depth == 0 && (c == '"' || c == '}' || c == ']') {
			return nil
		}
	}
	if depth != 0 {
		return errEnd
	}
	return nil
}

func (s *scanner) array(dst []byte) ([]byte, error) {
	s.i++ // [
	dst = append(dst, '[')
	for first := true; ; first = false {
		s.space()
		if s.i >= len(s.src) {
			return dst, errEnd
		}
		if s.src[s.i] == ']' {
			s.i++
			return append(dst, ']'), nil
		}
		if !first {
			if s.src[s.i] != ',' {
				return dst, fmt.Errorf("sortedjson: want , or ] at offset %d", s.i)
			}
			s.i++
			dst = append(dst, ',')
		}
		var err error
		if dst, err = s.value(dst); err != nil {
			return dst, err
		}
	}
}

// str scans the string at s.i and returns it as written (quotes included) and decoded (by
// encoding/json, which also replaces invalid UTF-8 with U+FFFD, unless it is ASCII without
// escapes).
func (s *scanner) str() (raw, decoded []byte, err error) {
	start := s.i
	raw, ascii, err := s.scanString()
	if err != nil || ascii {
		return raw, raw[1 : len(raw)-1], err
	}
	var v string
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, nil, fmt.Errorf("sortedjson: string at offset %d: %w", start, err)
	}
	return raw, []byte(v), nil
}

// scanString moves past the string at s.i and returns it as written, and whether it is ASCII
// without escapes.
func (s *scanner) scanString() (raw []byte, ascii bool, err error) {
	start := s.i
	ascii = true
	for s.i++; s.i < len(s.src); s.i++ {
		switch c := s.src[s.i]; {
		case c == '\\':
			ascii = false
			s.i++
		case c >= utf8.RuneSelf:
			ascii = false
		case c == '"':
			s.i++
			return s.src[start:s.i], ascii, nil
		}
	}
	return nil, false, errEnd
}

// appendString appends the string decoded as json.Marshal writes it: raw itself when it is
// plain printable ASCII that needs no escape, as json.Marshal's own output is.
func appendString(dst, raw, decoded []byte) []byte {
	if plain(raw) {
		return append(dst, raw...)
	}
	b, err := json.Marshal(string(decoded))
	if err != nil { // a string always encodes
		return append(dst, raw...)
	}
	return append(dst, b...)
}

// plain reports whether the string raw (quotes included) holds only printable ASCII that
// json.Marshal writes as is (no escape, no <, > or &).
func plain(raw []byte) bool {
	for _, c := range raw[1 : len(raw)-1] {
		if c < 0x20 || c >= utf8.RuneSelf || c == '\\' || c == '"' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// number appends the number at s.i as the unstructured conversion holds it: an int64 when it is
// one, else a float64 (as k8s.io/apimachinery/pkg/util/json converts numbers), each written as
// json.Marshal writes it.
func (s *scanner) number(dst []byte) ([]byte, error) {
	start := s.i
	for s.i < len(s.src) && strings.IndexByte("+-0123456789.eE", s.src[s.i]) >= 0 {
		s.i++
	}
	tok := string(s.src[start:s.i])
	if tok == "" {
		return dst, fmt.Errorf("sortedjson: unexpected %q at offset %d", s.src[start], start)
	}
	if n, err := strconv.ParseInt(tok, 10, 64); err == nil {
		return strconv.AppendInt(dst, n, 10), nil
	}
	f, err := strconv.ParseFloat(tok, 64)
	if err != nil {
		return dst, fmt.Errorf("sortedjson: number %q at offset %d: %w", tok, start, err)
	}
	b, err := json.Marshal(f) // as encoding/json writes a float64; floats are rare in these objects
	if err != nil {
		return dst, fmt.Errorf("sortedjson: number %q at offset %d: %w", tok, start, err)
	}
	return append(dst, b...), nil
}
