package fleetedit

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Edit is one change to make to an object's manifest.
type Edit struct {
	// Key is the object to change.
	Key ObjectKey
	// Versions, when not nil, replaces a ClusterStack's spec.versions, which must be set in
	// the manifest (as a list, possibly empty) and must not become empty.
	Versions []string
	// Class, when not empty, sets a Cluster's ClusterClass: spec.topology.classRef.name
	// (v1beta2) or spec.topology.class (v1beta1), whichever the manifest sets.
	Class string
	// KubernetesVersion, when not empty, sets a Cluster's spec.topology.version, which must be
	// set in the manifest.
	KubernetesVersion string
}

// change is a field an edit sets in a document: its path from the document's top mapping
// and its new value (a string, or a []any of strings).
type change struct {
	path  []string
	value any
}

// docChanges are the changes made in a document, and the object it defines.
type docChanges struct {
	key     ObjectKey
	changes []change
}

// Apply makes the edits that concern the documents of content (the file at path, which only
// names the file in errors) and returns the new content and whether it changed. The
// namespaces are as for Scan. Edits of objects the file does not define are ignored; an object
// defined twice in the file, or edits of one object that disagree, are errors.
//
// Only the bytes of the edited values change: a scalar keeps its quoting (a plain value that
// would not read back as the same string in plain style is double-quoted) and the comment after
// it; a list keeps its style, its items are replaced one for one, and items are added after the
// last one (like it) or removed from the end with their lines. Values already as wanted change
// nothing, and content is then returned as is with changed false.
//
// Apply refuses, with an error naming the file, the object and the field, to edit a field that
// is missing or empty, an alias, anchored and used elsewhere, a Flux variable (${...}), a block
// scalar (| or >), a plain value written over several lines, or one that may come from a merge
// key (<<). Before returning the new content it parses it again and checks that every document
// decodes as before except for the edited values. Line breaks may be LF or CRLF (or any the
// YAML parser knows); a UTF-8 byte order mark is kept; UTF-16 is refused.
func Apply(content []byte, path string, edits []Edit, defaultNamespace, targetNamespace string) ([]byte, bool, error) {
	wanted, err := mergeEdits(edits)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", path, err)
	}
	if len(wanted) == 0 {
		return content, false, nil
	}
	text, mark := stripBOM(content)
	docs, err := parse(text)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", path, err)
	}
	f := newFile(text)
	var splices []splice
	changes := map[int]docChanges{}
	defined := map[ObjectKey]int{}
	for i, doc := range docs {
		key, ok := keyOf(doc, defaultNamespace, targetNamespace)
		if !ok {
			continue
		}
		e, ok := wanted[key]
		if !ok {
			continue
		}
		if j, twice := defined[key]; twice {
			return nil, false, fmt.Errorf("%s: %s is defined twice in the file (documents %d and %d): refusing to guess which to edit", path, key, j+1, i+1)
		}
		defined[key] = i
		s, c, err := f.editDoc(doc, e)
		if err != nil {
			return nil, false, fmt.Errorf("%s: %s: %w", path, key, err)
		}
		splices = append(splices, s...)
		if len(c) > 0 {
			changes[i] = docChanges{key: key, changes: c}
		}
	}
	if len(splices) == 0 {
		return content, false, nil
	}
	out, err := apply(text, splices)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", path, err)
	}
	if bytes.Equal(out, text) {
		return content, false, nil
	}
	if err := verify(docs, out, changes); err != nil {
		return nil, false, fmt.Errorf("%s: %w", path, err)
	}
	if mark != nil {
		out = append(slices.Clip(mark), out...)
	}
	return out, true, nil
}

// mergeEdits checks the edits and merges those of the same object.
func mergeEdits(edits []Edit) (map[ObjectKey]Edit, error) {
	merged := map[ObjectKey]Edit{}
	for _, e := range edits {
		if err := checkEdit(e); err != nil {
			return nil, fmt.Errorf("%s: %w", e.Key, err)
		}
		m, ok := merged[e.Key]
		if !ok {
			merged[e.Key] = e
			continue
		}
		switch {
		case e.Versions != nil && m.Versions != nil && !slices.Equal(e.Versions, m.Versions):
			return nil, fmt.Errorf("%s: two edits set spec.versions to %q and %q", e.Key, m.Versions, e.Versions)
		case e.Class != "" && m.Class != "" && e.Class != m.Class:
			return nil, fmt.Errorf("%s: two edits set the ClusterClass to %q and %q", e.Key, m.Class, e.Class)
		case e.KubernetesVersion != "" && m.KubernetesVersion != "" && e.KubernetesVersion != m.KubernetesVersion:
			return nil, fmt.Errorf("%s: two edits set spec.topology.version to %q and %q", e.Key, m.KubernetesVersion, e.KubernetesVersion)
		}
		if e.Versions != nil {
			m.Versions = e.Versions
		}
		if e.Class != "" {
			m.Class = e.Class
		}
		if e.KubernetesVersion != "" {
			m.KubernetesVersion = e.KubernetesVersion
		}
		merged[e.Key] = m
	}
	return merged, nil
}

// checkEdit checks that an edit sets fields its kind has, to values that can be written.
func checkEdit(e Edit) error {
	switch e.Key.Kind {
	case KindClusterStack:
		if e.Class != "" || e.KubernetesVersion != "" {
			return errors.New("a ClusterStack has no ClusterClass or Kubernetes version to set")
		}
		if e.Versions != nil && len(e.Versions) == 0 {
			return errors.New("refusing to empty spec.versions")
		}
		for _, v := range e.Versions {
			if err := checkValue(v); err != nil {
				return fmt.Errorf("spec.versions: %w", err)
			}
		}
	case KindCluster:
		if e.Versions != nil {
			return errors.New("a Cluster has no stack versions to set")
		}
		if e.Class != "" {
			if err := checkValue(e.Class); err != nil {
				return fmt.Errorf("ClusterClass: %w", err)
			}
		}
		if e.KubernetesVersion != "" {
			if err := checkValue(e.KubernetesVersion); err != nil {
				return fmt.Errorf("spec.topology.version: %w", err)
			}
		}
	default:
		return fmt.Errorf("kind %q is not edited (only %s and %s are)", e.Key.Kind, KindClusterStack, KindCluster)
	}
	return nil
}

// checkValue refuses values that are empty or hold characters that are not printable.
func checkValue(v string) error {
	if v == "" {
		return errors.New("empty value")
	}
	if !utf8.ValidString(v) || strings.IndexFunc(v, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return fmt.Errorf("value %q has characters that are not printable", v)
	}
	if strings.Contains(v, "${") {
		return fmt.Errorf("value %q would be read as a Flux variable (${...})", v)
	}
	return nil
}

// editDoc computes the splices and changes that make e in doc.
func (f *file) editDoc(doc *yaml.Node, e Edit) ([]splice, []change, error) {
	shared := anchorsUsed(doc)
	switch e.Key.Kind {
	case KindClusterStack:
		if e.Versions == nil {
			return nil, nil, nil
		}
		at, err := field(doc, "spec", "versions")
		if err != nil {
			return nil, nil, err
		}
		if at.node == nil {
			return nil, nil, errors.New("spec.versions is not set: add it (only values already in the manifest are changed)")
		}
		if sameList(at.node, e.Versions) {
			return nil, nil, nil
		}
		if err := at.editable(shared); err != nil {
			return nil, nil, err
		}
		for _, it := range at.node.Content {
			if it = resolve(it); it.Kind == yaml.ScalarNode && strings.Contains(it.Value, "${") {
				return nil, nil, fmt.Errorf("spec.versions holds %s, a Flux variable: change the versions where the variable is set", it.Value)
			}
		}
		s, err := f.replaceSequence(at.node, e.Versions)
		if err != nil {
			return nil, nil, fmt.Errorf("spec.versions: %w", err)
		}
		items := make([]any, len(e.Versions))
		for i, v := range e.Versions {
			items[i] = v
		}
		return s, []change{{path: at.path, value: items}}, nil
	case KindCluster:
		var splices []splice
		var changes []change
		set := func(at located, value string) error {
			if sameString(at.node, value) {
				return nil
			}
			if err := at.editable(shared); err != nil {
				return err
			}
			if n := resolve(at.node); n.Kind == yaml.ScalarNode && strings.Contains(n.Value, "${") {
				return fmt.Errorf("%s is %s, a Flux variable: change the value where the variable is set", at.name(), n.Value)
			}
			s, err := f.replaceScalar(at.node, value)
			if err != nil {
				return fmt.Errorf("%s: %w", at.name(), err)
			}
			splices = append(splices, s)
			changes = append(changes, change{path: at.path, value: value})
			return nil
		}
		if e.Class == "" && e.KubernetesVersion == "" {
			return nil, nil, nil
		}
		topology, err := field(doc, "spec", "topology")
		if err != nil {
			return nil, nil, err
		}
		if topology.node == nil {
			return nil, nil, errors.New("spec.topology is not set: the Cluster does not use a ClusterClass")
		}
		if e.Class != "" {
			at, err := classField(doc)
			if err != nil {
				return nil, nil, err
			}
			if err := set(at, e.Class); err != nil {
				return nil, nil, err
			}
		}
		if e.KubernetesVersion != "" {
			at, err := field(doc, "spec", "topology", "version")
			if err != nil {
				return nil, nil, err
			}
			if at.node == nil {
				return nil, nil, errors.New("spec.topology.version is not set: add it (only values already in the manifest are changed)")
			}
			if err := set(at, e.KubernetesVersion); err != nil {
				return nil, nil, err
			}
		}
		return splices, changes, nil
	}
	return nil, nil, nil
}

// classField finds where a Cluster names its ClusterClass: spec.topology.classRef.name
// (v1beta2) or spec.topology.class (v1beta1).
func classField(doc *yaml.Node) (located, error) {
	ref, err := field(doc, "spec", "topology", "classRef")
	if err != nil {
		return located{}, err
	}
	class, err := field(doc, "spec", "topology", "class")
	if err != nil {
		return located{}, err
	}
	switch {
	case ref.node != nil && class.node != nil:
		return located{}, errors.New("both spec.topology.classRef and spec.topology.class are set: remove the one the Cluster's apiVersion does not have")
	case class.node != nil:
		return class, nil
	case ref.node == nil:
		return located{}, errors.New("neither spec.topology.classRef.name (v1beta2) nor spec.topology.class (v1beta1) is set")
	}
	name, err := field(doc, "spec", "topology", "classRef", "name")
	if err != nil {
		return located{}, err
	}
	if name.node == nil {
		return located{}, errors.New("spec.topology.classRef.name is not set")
	}
	return name, nil
}

// sameString reports whether n is the string value.
func sameString(n *yaml.Node, value string) bool {
	n = resolve(n)
	return n != nil && n.Kind == yaml.ScalarNode && n.Tag == "!!str" && n.Value == value
}

// sameList reports whether n is the list of strings values.
func sameList(n *yaml.Node, values []string) bool {
	n = resolve(n)
	if n == nil || n.Kind != yaml.SequenceNode || len(n.Content) != len(values) {
		return false
	}
	for i, it := range n.Content {
		if !sameString(it, values[i]) {
			return false
		}
	}
	return true
}

// located is a field found in a document.
type located struct {
	// path is the field's path from the document's top mapping.
	path []string
	// node is the field's value (aliases followed), nil when the field is not set.
	node *yaml.Node
	// nodes are the mappings on the way and the value, aliases followed.
	nodes []*yaml.Node
	// alias is the path of the first alias on the way ("" without one) and aliasName its
	// anchor.
	alias, aliasName string
}

// name returns the field's dotted path.
func (l located) name() string { return strings.Join(l.path, ".") }

// editable refuses to change a field reached through an alias or held in a node that is
// anchored and used elsewhere in the document: the change would show in other places too.
func (l located) editable(shared map[*yaml.Node]bool) error {
	if l.alias != "" {
		return fmt.Errorf("%s is an alias (*%s): change the anchor &%s by hand or write the value out", l.alias, l.aliasName, l.aliasName)
	}
	for i, n := range l.nodes {
		if shared[n] {
			return fmt.Errorf("%s is anchored (&%s) and used elsewhere in the document through *%s: refusing to change both; change it by hand", strings.Join(l.path[:i+1], "."), n.Anchor, n.Anchor)
		}
	}
	return nil
}

// field finds the field at path below a document's top mapping. It is not set (node nil, no
// error) when a mapping on the way lacks the key or a node on the way is not a mapping; a key
// that appears twice or that may come from a merge key (<<) is an error.
func field(doc *yaml.Node, path ...string) (located, error) {
	l := located{path: path}
	m := body(doc)
	for i, key := range path {
		if m.Kind != yaml.MappingNode {
			return located{path: path}, nil
		}
		var v *yaml.Node
		merged := false
		for j := 0; j+1 < len(m.Content); j += 2 {
			k := m.Content[j]
			if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
				merged = true
			}
			if resolve(k).Kind != yaml.ScalarNode || resolve(k).Value != key {
				continue
			}
			if v != nil {
				return located{}, fmt.Errorf("%s appears more than once in the manifest", strings.Join(path[:i+1], "."))
			}
			v = m.Content[j+1]
		}
		if v == nil {
			if merged {
				return located{}, fmt.Errorf("%s is not written out in the manifest and may come from a merge key (<<): write it out", strings.Join(path[:i+1], "."))
			}
			return located{path: path}, nil
		}
		if v.Kind == yaml.AliasNode && l.alias == "" {
			l.alias, l.aliasName = strings.Join(path[:i+1], "."), v.Value
		}
		m = resolve(v)
		if m == nil {
			return located{path: path}, nil
		}
		l.nodes = append(l.nodes, m)
	}
	l.node = m
	return l, nil
}

// anchorsUsed returns the nodes of doc that aliases refer to.
func anchorsUsed(doc *yaml.Node) map[*yaml.Node]bool {
	used := map[*yaml.Node]bool{}
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n == nil {
			return
		}
		if n.Kind == yaml.AliasNode {
			used[n.Alias] = true
			return
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(doc)
	return used
}

// splice is one replacement of the bytes [start, end) of a file with text.
type splice struct {
	start, end int
	text       string
}

// apply makes the splices in text; they must not overlap.
func apply(text []byte, splices []splice) ([]byte, error) {
	sort.SliceStable(splices, func(i, j int) bool { return splices[i].start < splices[j].start })
	var out bytes.Buffer
	out.Grow(len(text))
	pos := 0
	for _, s := range splices {
		if s.start < pos || s.end < s.start || s.end > len(text) {
			return nil, fmt.Errorf("overlapping edits at byte %d", s.start)
		}
		out.Write(text[pos:s.start])
		out.WriteString(s.text)
		pos = s.end
	}
	out.Write(text[pos:])
	return out.Bytes(), nil
}
