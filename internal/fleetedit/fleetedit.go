// Package fleetedit finds ClusterStack and Cluster manifests in a fleet repository and edits
// their versions in place: only the bytes of the edited values change, so comments, quoting,
// indentation and everything else in the files stay as the people who wrote them left them.
// YAML is parsed (go.yaml.in/yaml/v3) only to locate the values; the new text is spliced into
// the original bytes.
package fleetedit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// ObjectKey identifies an object in the fleet repository.
type ObjectKey struct{ Kind, Namespace, Name string }

func (k ObjectKey) String() string { return k.Kind + " " + k.Namespace + "/" + k.Name }

// Location is where an object's manifest is: a file (slash-separated, relative to the root
// given to Scan) and the index of the document in it.
type Location struct {
	Path     string
	Document int
}

// Skipped is a file Scan could not read as manifests.
type Skipped struct {
	Path string
	Err  string
}

// Index says where each ClusterStack and Cluster is.
type Index struct {
	Objects map[ObjectKey][]Location
	Skipped []Skipped
}

// Lookup returns the one location of key, or an error when it has none or several.
func (x Index) Lookup(key ObjectKey) (Location, error) {
	locs := x.Objects[key]
	switch len(locs) {
	case 1:
		return locs[0], nil
	case 0:
		msg := fmt.Sprintf("no manifest of %s found", key)
		if len(x.Skipped) > 0 {
			msg += fmt.Sprintf(" (%d file(s) could not be read, e.g. %s: %s)", len(x.Skipped), x.Skipped[0].Path, x.Skipped[0].Err)
		}
		return Location{}, errors.New(msg)
	default:
		var where []string
		for _, l := range locs {
			where = append(where, fmt.Sprintf("%s#%d", l.Path, l.Document))
		}
		return Location{}, fmt.Errorf("%s is defined more than once (%s): refusing to guess which to edit", key, strings.Join(where, ", "))
	}
}

// kinds are the objects the package finds: group and kind.
var kinds = map[string]string{"ClusterStack": "clusterstack.io", "Cluster": "cluster.x-k8s.io"}

// Scan walks root below dir and indexes the ClusterStacks and Clusters in its *.yaml and *.yml
// files (kustomization files excluded). Objects without metadata.namespace are in
// defaultNamespace; a non-empty targetNamespace overrides every namespace (as Flux's
// Kustomization spec.targetNamespace does). Files that do not parse are listed in Skipped.
func Scan(root fs.FS, dir, defaultNamespace, targetNamespace string) (Index, error) {
	idx := Index{Objects: map[ObjectKey][]Location{}}
	err := fs.WalkDir(root, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return fs.SkipDir
			}
			return nil
		}
		ext := path.Ext(p)
		base := strings.ToLower(path.Base(p))
		if (ext != ".yaml" && ext != ".yml") || strings.TrimSuffix(base, ext) == "kustomization" {
			return nil
		}
		content, err := fs.ReadFile(root, p)
		if err != nil {
			return err
		}
		docs, err := parse(content)
		if err != nil {
			idx.Skipped = append(idx.Skipped, Skipped{Path: p, Err: err.Error()})
			return nil
		}
		for i, doc := range docs {
			if key, ok := keyOf(doc, defaultNamespace, targetNamespace); ok {
				idx.Objects[key] = append(idx.Objects[key], Location{Path: p, Document: i})
			}
		}
		return nil
	})
	return idx, err
}

// parse decodes every document of content.
func parse(content []byte) ([]*yaml.Node, error) {
	if bytes.HasPrefix(content, []byte("\xEF\xBB\xBF")) {
		return nil, errors.New("the file starts with a byte order mark: remove it")
	}
	dec := yaml.NewDecoder(bytes.NewReader(content))
	var docs []*yaml.Node
	for {
		n := &yaml.Node{}
		err := dec.Decode(n)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, n)
	}
}

// keyOf identifies a document that is a ClusterStack or a Cluster.
func keyOf(doc *yaml.Node, defaultNamespace, targetNamespace string) (ObjectKey, bool) {
	m := doc
	if m.Kind == yaml.DocumentNode && len(m.Content) == 1 {
		m = m.Content[0]
	}
	if m.Kind != yaml.MappingNode {
		return ObjectKey{}, false
	}
	kind, apiVersion := scalar(get(m, "kind")), scalar(get(m, "apiVersion"))
	group, ok := kinds[kind]
	if !ok || !strings.HasPrefix(apiVersion, group+"/") {
		return ObjectKey{}, false
	}
	meta := get(m, "metadata")
	name, ns := scalar(get(meta, "name")), scalar(get(meta, "namespace"))
	if name == "" {
		return ObjectKey{}, false
	}
	if ns == "" {
		ns = defaultNamespace
	}
	if targetNamespace != "" {
		ns = targetNamespace
	}
	return ObjectKey{Kind: kind, Namespace: ns, Name: name}, true
}

func get(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func scalar(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}

// Edit is one change to make.
type Edit struct {
	Key ObjectKey
	// Versions, when not nil, replaces a ClusterStack's spec.versions (which must exist).
	Versions []string
	// Class sets a Cluster's ClusterClass (spec.topology.classRef.name, or spec.topology.class
	// in v1beta1) and KubernetesVersion its spec.topology.version, when not empty.
	Class, KubernetesVersion string
}

// splice is one replacement of the bytes [start, end).
type splice struct {
	start, end int
	text       string
}

// Apply makes the edits that concern the documents of content (a file at path, for messages)
// and returns the new content and whether it changed. Edits of objects not in the file are
// ignored; values already as wanted change nothing, and an unchanged file is returned as is.
func Apply(content []byte, path string, edits []Edit, defaultNamespace, targetNamespace string) ([]byte, bool, error) {
	for _, e := range edits {
		for _, v := range append([]string{e.Class, e.KubernetesVersion}, e.Versions...) {
			if !utf8.ValidString(v) || strings.IndexFunc(v, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
				return nil, false, fmt.Errorf("%s: %s: value %q has characters that are not printable", path, e.Key, v)
			}
		}
	}
	docs, err := parse(content)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", path, err)
	}
	lines := lineStarts(content)
	var splices []splice
	for _, doc := range docs {
		key, ok := keyOf(doc, defaultNamespace, targetNamespace)
		if !ok {
			continue
		}
		for _, e := range edits {
			if e.Key != key {
				continue
			}
			s, err := editDoc(content, lines, doc.Content[0], e)
			if err != nil {
				return nil, false, fmt.Errorf("%s: %s: %w", path, key, err)
			}
			splices = append(splices, s...)
		}
	}
	if len(splices) == 0 {
		return content, false, nil
	}
	sort.Slice(splices, func(i, j int) bool { return splices[i].start < splices[j].start })
	var out bytes.Buffer
	pos := 0
	for _, s := range splices {
		if s.start < pos {
			return nil, false, fmt.Errorf("%s: overlapping edits", path)
		}
		out.Write(content[pos:s.start])
		out.WriteString(s.text)
		pos = s.end
	}
	out.Write(content[pos:])
	if bytes.Equal(out.Bytes(), content) {
		return content, false, nil
	}
	return out.Bytes(), true, nil
}

func editDoc(content []byte, lines []int, m *yaml.Node, e Edit) ([]splice, error) {
	var out []splice
	switch e.Key.Kind {
	case "ClusterStack":
		if e.Versions == nil {
			return nil, nil
		}
		seq := get(get(m, "spec"), "versions")
		if seq == nil {
			return nil, errors.New("spec.versions is not set in the manifest: add it (the operator only changes existing values)")
		}
		s, err := replaceSequence(content, lines, seq, e.Versions)
		if err != nil {
			return nil, fmt.Errorf("spec.versions: %w", err)
		}
		out = append(out, s...)
	case "Cluster":
		topo := get(get(m, "spec"), "topology")
		if topo == nil {
			return nil, errors.New("spec.topology is not set: the Cluster does not use a ClusterClass")
		}
		if e.Class != "" {
			n, field := get(get(topo, "classRef"), "name"), "spec.topology.classRef.name"
			if n == nil {
				n, field = get(topo, "class"), "spec.topology.class"
			}
			if n == nil {
				return nil, errors.New("neither spec.topology.classRef.name nor spec.topology.class is set")
			}
			s, err := replaceScalar(content, lines, n, e.Class)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", field, err)
			}
			out = append(out, s)
		}
		if e.KubernetesVersion != "" {
			n := get(topo, "version")
			if n == nil {
				return nil, errors.New("spec.topology.version is not set")
			}
			s, err := replaceScalar(content, lines, n, e.KubernetesVersion)
			if err != nil {
				return nil, fmt.Errorf("spec.topology.version: %w", err)
			}
			out = append(out, s)
		}
	}
	return out, nil
}

// lineStarts are the byte offsets of the lines' starts.
func lineStarts(content []byte) []int {
	starts := []int{0}
	for i, b := range content {
		if b == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// offset converts a node's 1-based line and (rune) column to a byte offset.
func offset(content []byte, lines []int, line, column int) (int, error) {
	if line < 1 || line > len(lines) {
		return 0, fmt.Errorf("position %d:%d out of range", line, column)
	}
	off := lines[line-1]
	for c := 1; c < column; c++ {
		if off >= len(content) {
			return 0, fmt.Errorf("position %d:%d out of range", line, column)
		}
		_, size := utf8.DecodeRune(content[off:])
		off += size
	}
	return off, nil
}

// replaceScalar replaces a scalar's text, keeping its quoting style.
func replaceScalar(content []byte, lines []int, n *yaml.Node, value string) (splice, error) {
	if n.Kind == yaml.AliasNode {
		return splice{}, errors.New("the value is an alias (*" + n.Value + "): edit the anchor instead")
	}
	if n.Kind != yaml.ScalarNode {
		return splice{}, errors.New("not a plain value")
	}
	if n.Tag == "!!null" && n.Value == "" {
		return splice{}, errors.New("the value is empty: write the current value first (the operator only changes existing values)")
	}
	if n.Anchor != "" {
		return splice{}, errors.New("the value carries an anchor (&" + n.Anchor + ") others may refer to: refusing to change it")
	}
	start, err := offset(content, lines, n.Line, n.Column)
	if err != nil {
		return splice{}, err
	}
	end, err := scalarEnd(content, start, n)
	if err != nil {
		return splice{}, err
	}
	if n.Value == value {
		return splice{start: start, end: end, text: string(content[start:end])}, nil
	}
	var text string
	switch {
	case n.Style&yaml.DoubleQuotedStyle != 0:
		text = strconv.Quote(value)
	case n.Style&yaml.SingleQuotedStyle != 0:
		text = "'" + strings.ReplaceAll(value, "'", "''") + "'"
	case n.Style == 0 && plainSafe(value):
		text = value
	case n.Style == 0:
		text = strconv.Quote(value)
	default:
		return splice{}, errors.New("block scalars (| or >) are not edited")
	}
	return splice{start: start, end: end, text: text}, nil
}

// scalarEnd finds where a scalar's text ends in content.
func scalarEnd(content []byte, start int, n *yaml.Node) (int, error) {
	switch {
	case n.Style&yaml.DoubleQuotedStyle != 0:
		for i := start + 1; i < len(content); i++ {
			switch content[i] {
			case '\\':
				i++
			case '"':
				return i + 1, nil
			}
		}
	case n.Style&yaml.SingleQuotedStyle != 0:
		for i := start + 1; i < len(content); i++ {
			if content[i] == '\'' {
				if i+1 < len(content) && content[i+1] == '\'' {
					i++
					continue
				}
				return i + 1, nil
			}
		}
	case n.Style == 0 || n.Style == yaml.FlowStyle:
		if end := start + len(n.Value); end <= len(content) && string(content[start:end]) == n.Value {
			return end, nil
		}
		return 0, errors.New("a plain value written over several lines is not edited: put it on one line")
	default:
		return 0, errors.New("block scalars (| or >) are not edited")
	}
	return 0, errors.New("unterminated quoted value")
}

// plainSafe reports whether value can be written unquoted and reads back as the same string.
func plainSafe(value string) bool {
	if value == "" || strings.ContainsAny(value, ":#{}[],&*!|>'\"%@`\n\r\t") || strings.TrimSpace(value) != value {
		return false
	}
	var back any
	if err := yaml.Unmarshal([]byte(value), &back); err != nil {
		return false
	}
	s, ok := back.(string)
	return ok && s == value
}

// replaceSequence replaces a sequence of scalars with values, keeping its style: item by item
// (with their comments) where the lengths allow, adding lines like the last item's or removing
// lines for block sequences, rewriting [a, b] for flow sequences.
func replaceSequence(content []byte, lines []int, seq *yaml.Node, values []string) ([]splice, error) {
	if seq.Kind == yaml.AliasNode {
		return nil, errors.New("the value is an alias: edit the anchor instead")
	}
	if seq.Kind != yaml.SequenceNode {
		return nil, errors.New("not a list")
	}
	for _, it := range seq.Content {
		if it.Kind != yaml.ScalarNode {
			return nil, errors.New("an item is not a plain value")
		}
	}
	if seq.Style&yaml.FlowStyle != 0 || len(seq.Content) == 0 {
		start, err := offset(content, lines, seq.Line, seq.Column)
		if err != nil {
			return nil, err
		}
		if start >= len(content) || content[start] != '[' {
			return nil, errors.New("an empty list in block style cannot be edited: write it as [ ]")
		}
		end := bytes.IndexByte(content[start:], ']')
		if end < 0 {
			return nil, errors.New("unterminated list")
		}
		var items []string
		for i, v := range values {
			if i < len(seq.Content) {
				s, err := replaceScalar(content, lines, seq.Content[i], v)
				if err != nil {
					return nil, err
				}
				items = append(items, s.text)
				continue
			}
			items = append(items, quoteLike(seq.Content, v))
		}
		text := "[" + strings.Join(items, ", ") + "]"
		if len(seq.Content) == len(values) {
			same := true
			for i, it := range seq.Content {
				same = same && it.Value == values[i]
			}
			if same {
				text = string(content[start : start+end+1])
			}
		}
		return []splice{{start: start, end: start + end + 1, text: text}}, nil
	}
	// Block style: one line per item.
	var out []splice
	n := min(len(values), len(seq.Content))
	for i := 0; i < n; i++ {
		s, err := replaceScalar(content, lines, seq.Content[i], values[i])
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	last := seq.Content[len(seq.Content)-1]
	lastStart, err := offset(content, lines, last.Line, last.Column)
	if err != nil {
		return nil, err
	}
	if last.Line >= len(lines) && len(values) > len(seq.Content) {
		return nil, errors.New("the list ends the file without a newline")
	}
	switch {
	case len(values) > len(seq.Content):
		prefix := string(content[lines[last.Line-1]:lastStart])
		var add strings.Builder
		for _, v := range values[len(seq.Content):] {
			add.WriteString(prefix + quoteLike(seq.Content, v) + "\n")
		}
		pos := lines[last.Line]
		out = append(out, splice{start: pos, end: pos, text: add.String()})
	case len(values) < len(seq.Content):
		first := seq.Content[len(values)]
		from := lines[first.Line-1]
		to := len(content)
		if last.Line < len(lines) {
			to = lines[last.Line]
		}
		out = append(out, splice{start: from, end: to, text: ""})
	}
	return out, nil
}

// quoteLike writes v quoted like the first of items.
func quoteLike(items []*yaml.Node, v string) string {
	style := yaml.Style(0)
	if len(items) > 0 {
		style = items[0].Style
	}
	switch {
	case style&yaml.DoubleQuotedStyle != 0:
		return strconv.Quote(v)
	case style&yaml.SingleQuotedStyle != 0:
		return "'" + strings.ReplaceAll(v, "'", "''") + "'"
	case plainSafe(v):
		return v
	default:
		return strconv.Quote(v)
	}
}
