package fleetedit

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"
)

// file is the text of a YAML file and where its lines start.
type file struct {
	text []byte
	// lines are the byte offsets of the lines' starts. Lines end where the YAML parser sees
	// a line break: CRLF, LF, CR, NEL, LS or PS.
	lines []int
}

// newFile indexes the lines of text.
func newFile(text []byte) *file {
	f := &file{text: text, lines: []int{0}}
	for i := 0; i < len(text); {
		if n := breakLen(text, i); n > 0 {
			i += n
			f.lines = append(f.lines, i)
			continue
		}
		i++
	}
	return f
}

// breakLen returns the length of the line break at text[i], or 0.
func breakLen(text []byte, i int) int {
	switch {
	case i >= len(text):
		return 0
	case text[i] == '\r' && i+1 < len(text) && text[i+1] == '\n':
		return 2
	case text[i] == '\r' || text[i] == '\n':
		return 1
	case text[i] == 0xC2 && i+1 < len(text) && text[i+1] == 0x85: // NEL
		return 2
	case text[i] == 0xE2 && i+2 < len(text) && text[i+1] == 0x80 && (text[i+2] == 0xA8 || text[i+2] == 0xA9): // LS, PS
		return 3
	}
	return 0
}

// offset converts a node's position (1-based line and column, in characters) to a byte offset.
func (f *file) offset(n *yaml.Node) (int, error) {
	if n.Line < 1 || n.Line > len(f.lines) || n.Column < 1 {
		return 0, fmt.Errorf("line %d column %d is out of the file", n.Line, n.Column)
	}
	off := f.lines[n.Line-1]
	for c := 1; c < n.Column; c++ {
		if off >= len(f.text) || breakLen(f.text, off) > 0 {
			return 0, fmt.Errorf("line %d column %d is out of the file", n.Line, n.Column)
		}
		_, size := utf8.DecodeRune(f.text[off:])
		off += size
	}
	return off, nil
}

// lineStart returns the offset of the start of the line holding off.
func (f *file) lineStart(off int) int {
	i := sort.Search(len(f.lines), func(i int) bool { return f.lines[i] > off })
	return f.lines[i-1]
}

// lineEnd returns the offset of the line break ending the line holding off, or the end of the
// text.
func (f *file) lineEnd(off int) int {
	for i := off; i < len(f.text); i++ {
		if breakLen(f.text, i) > 0 {
			return i
		}
	}
	return len(f.text)
}

// newline returns the line break to write after the line holding off: the one ending it, or
// else the file's first, or else LF.
func (f *file) newline(off int) string {
	end := f.lineEnd(off)
	if n := breakLen(f.text, end); n > 0 {
		return string(f.text[end : end+n])
	}
	for i := range f.text {
		if n := breakLen(f.text, i); n > 0 {
			return string(f.text[i : i+n])
		}
	}
	return "\n"
}

// restOfLineIsComment reports whether the line holding off has only blanks and maybe a
// comment from off on.
func (f *file) restOfLineIsComment(off int) bool {
	rest := strings.TrimLeft(string(f.text[off:f.lineEnd(off)]), " \t")
	return rest == "" || rest[0] == '#'
}

// baseStyle is a node's style without the flags that do not say how a scalar is written.
func baseStyle(n *yaml.Node) yaml.Style { return n.Style &^ (yaml.TaggedStyle | yaml.FlowStyle) }

// span returns where the text of a scalar (after its tag and anchor, if any) or of an alias
// is in the file.
func (f *file) span(n *yaml.Node) (start, end int, err error) {
	start, err = f.offset(n)
	if err != nil {
		return 0, 0, err
	}
	t := f.text
	if n.Kind == yaml.AliasNode {
		if end = start + 1 + len(n.Value); end <= len(t) && t[start] == '*' && string(t[start+1:end]) == n.Value {
			return start, end, nil
		}
		return 0, 0, errors.New("could not find the alias in the text")
	}
	if n.Kind != yaml.ScalarNode {
		return 0, 0, errors.New("not a single value")
	}
	// Skip the node's properties (&anchor, !tag) when they are on the value's line.
	for start < len(t) && (t[start] == '&' || t[start] == '!') {
		for start < len(t) && t[start] != ' ' && t[start] != '\t' && breakLen(t, start) == 0 {
			start++
		}
		for start < len(t) && (t[start] == ' ' || t[start] == '\t') {
			start++
		}
	}
	switch baseStyle(n) {
	case 0:
		if n.Value == "" {
			return 0, 0, errors.New("the value is empty: write the current value first (only values already in the manifest are changed)")
		}
		if end = start + len(n.Value); end <= len(t) && string(t[start:end]) == n.Value {
			return start, end, nil
		}
		return 0, 0, errors.New("a value written over several lines, or after its tag or anchor on another line, is not edited: write it on one line")
	case yaml.DoubleQuotedStyle:
		if start < len(t) && t[start] == '"' {
			for i := start + 1; i < len(t); i++ {
				switch t[i] {
				case '\\':
					i++
				case '"':
					return start, i + 1, nil
				}
			}
		}
	case yaml.SingleQuotedStyle:
		if start < len(t) && t[start] == '\'' {
			for i := start + 1; i < len(t); i++ {
				if t[i] == '\'' {
					if i+1 < len(t) && t[i+1] == '\'' {
						i++
						continue
					}
					return start, i + 1, nil
				}
			}
		}
	default:
		return 0, 0, errors.New("block scalars (| or >) are not edited: write the value on one line")
	}
	return 0, 0, errors.New("could not find the quoted value in the text")
}

// replaceScalar replaces a scalar's text with value, written in the scalar's style.
func (f *file) replaceScalar(n *yaml.Node, value string) (splice, error) {
	if n.Kind != yaml.ScalarNode {
		return splice{}, errors.New("not a single value")
	}
	if n.Style&yaml.TaggedStyle != 0 && n.Tag != "!!str" {
		return splice{}, fmt.Errorf("the value has the tag %s: remove it", n.Tag)
	}
	start, end, err := f.span(n)
	if err != nil {
		return splice{}, err
	}
	return splice{start: start, end: end, text: quoteLike(n, value)}, nil
}

// replaceSequence replaces the items of a list of single values with values (at least one),
// keeping its style: items are replaced one for one; in a flow list ([a, b]) items are added
// after the last one or removed from the end within the brackets; in a block list (- a) lines
// like the last item's are added after it, and removed items lose their lines.
func (f *file) replaceSequence(seq *yaml.Node, values []string) ([]splice, error) {
	switch {
	case seq.Kind == yaml.ScalarNode && seq.Tag == "!!null":
		return nil, errors.New("the list is null: write it as [] or with its items")
	case seq.Kind != yaml.SequenceNode:
		return nil, errors.New("not a list")
	case len(values) == 0:
		return nil, errors.New("refusing to empty the list")
	}
	items := seq.Content
	for i, it := range items {
		if it.Kind == yaml.AliasNode && i < len(values) && !sameString(it, values[i]) {
			return nil, fmt.Errorf("item %d is an alias (*%s): write the value out", i+1, it.Value)
		}
		if it.Kind != yaml.ScalarNode && it.Kind != yaml.AliasNode {
			return nil, fmt.Errorf("item %d is not a single value", i+1)
		}
	}
	var out []splice
	keep := min(len(values), len(items))
	for i := range keep {
		if sameString(items[i], values[i]) {
			continue
		}
		s, err := f.replaceScalar(items[i], values[i])
		if err != nil {
			return nil, fmt.Errorf("item %d: %w", i+1, err)
		}
		out = append(out, s)
	}
	if len(values) == len(items) {
		return out, nil
	}
	if seq.Style&yaml.FlowStyle != 0 {
		s, err := f.resizeFlow(seq, values, keep)
		if err != nil {
			return nil, err
		}
		return append(out, s), nil
	}
	s, err := f.resizeBlock(seq, values, keep)
	if err != nil {
		return nil, err
	}
	return append(out, s), nil
}

// resizeFlow adds values[keep:] after the last item of a flow list, or removes the items
// from keep on.
func (f *file) resizeFlow(seq *yaml.Node, values []string, keep int) (splice, error) {
	items := seq.Content
	if len(items) == 0 {
		open, err := f.offset(seq)
		if err != nil {
			return splice{}, err
		}
		if open >= len(f.text) || f.text[open] != '[' {
			return splice{}, errors.New("could not find the list's [ in the text")
		}
		return splice{start: open + 1, end: open + 1, text: joinLike(nil, values)}, nil
	}
	_, lastEnd, err := f.span(items[len(items)-1])
	if err != nil {
		return splice{}, fmt.Errorf("item %d: %w", len(items), err)
	}
	if len(values) > len(items) {
		return splice{start: lastEnd, end: lastEnd, text: ", " + joinLike(items[len(items)-1], values[len(items):])}, nil
	}
	_, keptEnd, err := f.span(items[keep-1])
	if err != nil {
		return splice{}, fmt.Errorf("item %d: %w", keep, err)
	}
	return splice{start: keptEnd, end: lastEnd, text: ""}, nil
}

// resizeBlock adds values[keep:] on lines after the last item of a block list, written like
// it, or removes the lines of the items from keep on.
func (f *file) resizeBlock(seq *yaml.Node, values []string, keep int) (splice, error) {
	items := seq.Content
	last := items[len(items)-1]
	_, lastEnd, err := f.span(last)
	if err != nil {
		return splice{}, fmt.Errorf("item %d: %w", len(items), err)
	}
	if !f.restOfLineIsComment(lastEnd) {
		return splice{}, fmt.Errorf("item %d: something other than a comment follows it on its line", len(items))
	}
	if len(values) > len(items) {
		prefix, err := f.itemPrefix(last, len(items))
		if err != nil {
			return splice{}, err
		}
		var add strings.Builder
		nl := f.newline(lastEnd)
		for _, v := range values[len(items):] {
			add.WriteString(nl + prefix + quoteLike(last, v))
		}
		at := f.lineEnd(lastEnd)
		return splice{start: at, end: at, text: add.String()}, nil
	}
	for i := keep; i < len(items); i++ {
		if _, err := f.itemPrefix(items[i], i+1); err != nil {
			return splice{}, err
		}
	}
	from, err := f.offset(items[keep])
	if err != nil {
		return splice{}, err
	}
	from = f.lineStart(from)
	to := f.lineEnd(lastEnd)
	to += breakLen(f.text, to)
	return splice{start: from, end: to, text: ""}, nil
}

// itemPrefix returns what precedes a block list item on its line: indentation, a dash and
// blanks. Item number i (from 1) names it in errors.
func (f *file) itemPrefix(item *yaml.Node, i int) (string, error) {
	at, err := f.offset(item)
	if err != nil {
		return "", err
	}
	prefix := string(f.text[f.lineStart(at):at])
	rest := strings.TrimLeft(prefix, " ")
	if len(rest) < 2 || rest[0] != '-' || strings.Trim(rest[1:], " \t") != "" {
		return "", fmt.Errorf("item %d is not on its own line after a dash (- value): edit it by hand", i)
	}
	return prefix, nil
}

// joinLike writes values like ref (see quoteLike), separated by ", ".
func joinLike(ref *yaml.Node, values []string) string {
	parts := make([]string, len(values))
	for i, v := range values {
		parts[i] = quoteLike(ref, v)
	}
	return strings.Join(parts, ", ")
}

// quoteLike writes v in the style of the scalar ref: double- or single-quoted like it, or
// plain when ref is plain (or nil, or an alias) and v reads back as the same string in plain
// style, else double-quoted.
func quoteLike(ref *yaml.Node, v string) string {
	style := yaml.Style(0)
	if ref != nil && ref.Kind == yaml.ScalarNode {
		style = baseStyle(ref)
	}
	switch {
	case style == yaml.SingleQuotedStyle:
		return "'" + strings.ReplaceAll(v, "'", "''") + "'"
	case style == 0 && plainSafe(v):
		return v
	default:
		return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
	}
}

// plainSafe reports whether v can be written unquoted, in block and flow context, and reads
// back as the same string both as YAML 1.2 (go.yaml.in/yaml/v3, kustomize) and as YAML 1.1
// (sigs.k8s.io/yaml, kubectl), where yes, on and the like are booleans.
func plainSafe(v string) bool {
	if v == "" || strings.TrimSpace(v) != v || strings.ContainsAny(v, ":#{}[],&*!|>'\"%@`\\?\n\r\t") || strings.HasPrefix(v, "-") {
		return false
	}
	var back any
	if err := yaml.Unmarshal([]byte(v), &back); err != nil {
		return false
	}
	if s, ok := back.(string); !ok || s != v {
		return false
	}
	j, err := sigsyaml.YAMLToJSON([]byte(v))
	if err != nil {
		return false
	}
	var s string
	return json.Unmarshal(j, &s) == nil && s == v
}
