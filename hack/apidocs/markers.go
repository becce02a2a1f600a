package main

import (
	"fmt"
	"strconv"
	"strings"
)

// marker is one `// +name=value` comment line: kubebuilder's markers and this generator's own
// `+docs:` markers. Markers with several arguments (XValidation, printcolumn, resource) keep
// their arguments unparsed in value; args parses them.
type marker struct {
	Name  string
	Value string
}

// multiArgMarkers take `key=value,key=value` arguments after their name. For every other marker
// the name ends at the first '='.
var multiArgMarkers = []string{
	"kubebuilder:validation:XValidation",
	"kubebuilder:printcolumn",
	"kubebuilder:resource",
}

// parseMarker parses one comment line without its "//" ("+kubebuilder:default=1"); ok is false
// when the line is no marker.
func parseMarker(line string) (marker, bool) {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "+") || len(line) < 2 {
		return marker{}, false
	}
	line = line[1:]
	for _, name := range multiArgMarkers {
		if rest, ok := strings.CutPrefix(line, name+":"); ok {
			return marker{Name: name, Value: rest}, true
		}
	}
	name, value, _ := strings.Cut(line, "=")
	return marker{Name: name, Value: value}, true
}

// markers is the list of markers of one declaration, in source order.
type markers []marker

// get returns the value of the first marker called name.
func (ms markers) get(name string) (string, bool) {
	for _, m := range ms {
		if m.Name == name {
			return m.Value, true
		}
	}
	return "", false
}

// has reports whether a marker called name is present.
func (ms markers) has(name string) bool {
	_, ok := ms.get(name)
	return ok
}

// all returns the markers called name.
func (ms markers) all(name string) []marker {
	var out []marker
	for _, m := range ms {
		if m.Name == name {
			out = append(out, m)
		}
	}
	return out
}

// args parses the `key=value,...` arguments of a multi-argument marker. Values are Go string
// literals ("..." or `...`) or bare words up to the next comma.
func args(s string) (map[string]string, error) {
	out := map[string]string{}
	for s != "" {
		key, rest, ok := strings.Cut(s, "=")
		if !ok {
			return nil, fmt.Errorf("argument %q has no value", s)
		}
		key = strings.TrimSpace(key)
		var value string
		var err error
		value, s, err = literal(rest)
		if err != nil {
			return nil, fmt.Errorf("argument %s: %w", key, err)
		}
		out[key] = value
		if s != "" {
			if s[0] != ',' {
				return nil, fmt.Errorf("argument %s: unexpected %q after the value", key, s)
			}
			s = s[1:]
		}
	}
	return out, nil
}

// literal reads one value from the start of s: a double-quoted Go string (with escapes), a
// back-quoted raw string, or a bare word up to the next comma. It returns the value and the rest.
func literal(s string) (value, rest string, err error) {
	switch {
	case strings.HasPrefix(s, `"`):
		for i := 1; i < len(s); i++ {
			switch s[i] {
			case '\\':
				i++
			case '"':
				v, err := strconv.Unquote(s[:i+1])
				if err != nil {
					return "", "", fmt.Errorf("bad string %s: %w", s[:i+1], err)
				}
				return v, s[i+1:], nil
			}
		}
		return "", "", fmt.Errorf("unterminated string %s", s)
	case strings.HasPrefix(s, "`"):
		end := strings.IndexByte(s[1:], '`')
		if end < 0 {
			return "", "", fmt.Errorf("unterminated raw string %s", s)
		}
		return s[1 : end+1], s[end+2:], nil
	default:
		if i := strings.IndexByte(s, ','); i >= 0 {
			return s[:i], s[i:], nil
		}
		return s, "", nil
	}
}

// value is the value of a single-value marker: a Go string literal unquoted, anything else as written.
func value(s string) string {
	if v, rest, err := literal(s); err == nil && rest == "" && (strings.HasPrefix(s, `"`) || strings.HasPrefix(s, "`")) {
		return v
	}
	return s
}
