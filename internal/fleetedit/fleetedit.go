// Package fleetedit finds ClusterStack and Cluster manifests in a fleet repository and edits
// their versions in place: only the bytes of the edited values change, so comments, quoting,
// indentation, blank lines and everything else in the files stay as the people who wrote them
// left them.
//
// YAML is parsed (go.yaml.in/yaml/v3) only to locate the values; the new text is spliced into
// the original bytes, and the result is parsed again to check that it says what the original
// said except for the edited values. The package does no I/O besides reading the fs.FS given
// to Scan.
package fleetedit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Kinds and API groups of the objects the package finds and edits.
const (
	// KindClusterStack is the kind of a ClusterStack (group GroupClusterStack).
	KindClusterStack = "ClusterStack"
	// KindCluster is the kind of a Cluster API Cluster (group GroupCluster).
	KindCluster = "Cluster"
	// GroupClusterStack is the API group of ClusterStacks.
	GroupClusterStack = "clusterstack.io"
	// GroupCluster is the API group of Cluster API Clusters.
	GroupCluster = "cluster.x-k8s.io"
)

// groups maps the kinds the package finds to their API group.
var groups = map[string]string{KindClusterStack: GroupClusterStack, KindCluster: GroupCluster}

// ObjectKey identifies an object in the fleet repository.
type ObjectKey struct {
	// Kind is KindClusterStack or KindCluster.
	Kind string
	// Namespace is the namespace the object is applied in: its metadata.namespace, the
	// default namespace or the Flux Kustomization's target namespace.
	Namespace string
	// Name is the object's metadata.name.
	Name string
}

// String returns "Kind namespace/name", as error messages name objects.
func (k ObjectKey) String() string { return k.Kind + " " + k.Namespace + "/" + k.Name }

// Location is where an object's manifest is.
type Location struct {
	// Path is the file, slash-separated and relative to the root given to Scan.
	Path string
	// Document is the index, from 0, of the YAML document in the file, as the YAML parser
	// counts them: an empty document between two "---" counts, comments before the first
	// "---" do not.
	Document int
}

// String returns "path (document N)" with N counted from 1, for people.
func (l Location) String() string { return fmt.Sprintf("%s (document %d)", l.Path, l.Document+1) }

// Skipped is a file Scan could not read as YAML manifests.
type Skipped struct {
	// Path is the file, as in Location.Path.
	Path string
	// Err says why the file was skipped.
	Err error
}

// Conflict is an object defined in more than one place.
type Conflict struct {
	// Key is the object.
	Key ObjectKey
	// Locations are the places it is defined, in the order Scan found them.
	Locations []Location
}

// Index says where each ClusterStack and Cluster of a directory tree is.
type Index struct {
	// Objects are the objects defined exactly once, and where.
	Objects map[ObjectKey]Location
	// Conflicts are the objects defined more than once, sorted by key: editing one of their
	// definitions would be a guess.
	Conflicts []Conflict
	// Skipped are the YAML files that could not be parsed, in the order Scan found them.
	Skipped []Skipped
}

// Lookup returns the one location of key, or an error saying that the object is defined more
// than once (naming the places) or nowhere (naming a file that could not be read, if any).
func (x Index) Lookup(key ObjectKey) (Location, error) {
	if loc, ok := x.Objects[key]; ok {
		return loc, nil
	}
	for _, c := range x.Conflicts {
		if c.Key == key {
			where := make([]string, 0, len(c.Locations))
			for _, l := range c.Locations {
				where = append(where, l.String())
			}
			return Location{}, fmt.Errorf("%s is defined more than once (%s): refusing to guess which to edit", key, strings.Join(where, ", "))
		}
	}
	msg := fmt.Sprintf("no manifest of %s found", key)
	if len(x.Skipped) > 0 {
		msg += fmt.Sprintf(" (%d file(s) could not be parsed, e.g. %s: %v)", len(x.Skipped), x.Skipped[0].Path, x.Skipped[0].Err)
	}
	return Location{}, errors.New(msg)
}

// MaxManifestBytes bounds the size of a file Scan reads; larger files are skipped.
const MaxManifestBytes = 8 << 20

// errSymlink says why a symbolic link is skipped.
var errSymlink = errors.New("a symbolic link: not followed (Flux does not apply files behind symbolic links either)")

// Scan walks root below dir and indexes the ClusterStacks and Clusters in its *.yaml and *.yml
// files. Kustomization files (kustomization.yaml, kustomization.yml; Kustomization has no YAML
// extension) and .git directories are left out; documents that are not ClusterStacks or
// Clusters are ignored. dir is slash-separated, like a Flux Kustomization's spec.path:
// "./clusters/prod", "clusters/prod" and "/clusters/prod" are the same, "" and "." are all of
// root, and ".." cannot climb out of root.
//
// Symbolic links are never followed (source-controller leaves them out of the artifacts Flux
// applies): a dir with a symbolic link in it is an error, and a symbolic link below dir, like
// any file that is not a regular file or is larger than MaxManifestBytes, is listed in
// Index.Skipped without being read. Use a root that implements fs.ReadLinkFS (os.DirFS,
// os.Root.FS), or links cannot be told from what they point to.
//
// Objects without metadata.namespace are in defaultNamespace; a non-empty targetNamespace
// overrides every namespace, as a Flux Kustomization's spec.targetNamespace does. Files that
// do not parse are listed in Index.Skipped and objects defined more than once in
// Index.Conflicts; only a failure to walk or read root is an error.
//
// Scan does not run kustomize: resources a kustomization.yaml does not list are indexed all
// the same, and its namespace, namePrefix and patches are not applied.
func Scan(root fs.FS, dir, defaultNamespace, targetNamespace string) (Index, error) {
	dir = strings.TrimPrefix(path.Clean("/"+dir), "/")
	if dir == "" {
		dir = "."
	}
	if dir != "." {
		parts := strings.Split(dir, "/")
		for i := range parts {
			p := strings.Join(parts[:i+1], "/")
			if fi, err := fs.Lstat(root, p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
				return Index{}, fmt.Errorf("scan %s: %s is %w", dir, p, errSymlink)
			}
		}
	}
	found := map[ObjectKey][]Location{}
	var order []ObjectKey
	var skipped []Skipped
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
		if d.Type()&fs.ModeSymlink != 0 {
			skipped = append(skipped, Skipped{Path: p, Err: errSymlink})
			return nil
		}
		if !isManifestFile(p) {
			return nil
		}
		if !d.Type().IsRegular() {
			skipped = append(skipped, Skipped{Path: p, Err: errors.New("not a regular file")})
			return nil
		}
		if fi, err := d.Info(); err != nil {
			return err
		} else if fi.Size() > MaxManifestBytes {
			skipped = append(skipped, Skipped{Path: p, Err: fmt.Errorf("%d bytes, more than the %d read", fi.Size(), MaxManifestBytes)})
			return nil
		}
		content, err := fs.ReadFile(root, p)
		if err != nil {
			return err
		}
		text, _ := stripBOM(content)
		docs, err := parse(text)
		if err != nil {
			skipped = append(skipped, Skipped{Path: p, Err: err})
			return nil //nolint:nilerr // recorded in skipped; the walk goes on with the next file
		}
		for i, doc := range docs {
			key, ok := keyOf(doc, defaultNamespace, targetNamespace)
			if !ok {
				continue
			}
			if _, seen := found[key]; !seen {
				order = append(order, key)
			}
			found[key] = append(found[key], Location{Path: p, Document: i})
		}
		return nil
	})
	if err != nil {
		return Index{}, fmt.Errorf("scan %s: %w", dir, err)
	}
	idx := Index{Objects: map[ObjectKey]Location{}, Skipped: skipped}
	for _, key := range order {
		if locs := found[key]; len(locs) == 1 {
			idx.Objects[key] = locs[0]
		} else {
			idx.Conflicts = append(idx.Conflicts, Conflict{Key: key, Locations: locs})
		}
	}
	sort.Slice(idx.Conflicts, func(i, j int) bool { return keyLess(idx.Conflicts[i].Key, idx.Conflicts[j].Key) })
	return idx, nil
}

// isManifestFile reports whether the file at p may hold manifests: a *.yaml or *.yml file
// that is not a kustomization file.
func isManifestFile(p string) bool {
	ext := path.Ext(p)
	if ext != ".yaml" && ext != ".yml" {
		return false
	}
	return !strings.EqualFold(strings.TrimSuffix(path.Base(p), ext), "kustomization")
}

// keyLess orders keys by kind, namespace and name.
func keyLess(a, b ObjectKey) bool {
	if a.Kind != b.Kind {
		return a.Kind < b.Kind
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}

// bom is the UTF-8 byte order mark.
var bom = []byte("\xEF\xBB\xBF")

// stripBOM returns content without its UTF-8 byte order mark, and the mark (nil without one).
func stripBOM(content []byte) (text, mark []byte) {
	if bytes.HasPrefix(content, bom) {
		return content[len(bom):], bom
	}
	return content, nil
}

// parse decodes every document of text, which must be UTF-8 without a byte order mark (the
// byte offsets computed from the nodes' positions count UTF-8 characters).
func parse(text []byte) ([]*yaml.Node, error) {
	if bytes.HasPrefix(text, []byte("\xFE\xFF")) || bytes.HasPrefix(text, []byte("\xFF\xFE")) {
		return nil, errors.New("the file is UTF-16: only UTF-8 is supported")
	}
	if !utf8.Valid(text) {
		return nil, errors.New("the file is not valid UTF-8")
	}
	dec := yaml.NewDecoder(bytes.NewReader(text))
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

// body returns the top node of a document.
func body(doc *yaml.Node) *yaml.Node {
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		return doc.Content[0]
	}
	return doc
}

// keyOf identifies a document that is a ClusterStack or a Cluster: its apiVersion is
// <group>/<version> with the kind's group, and it has a name.
func keyOf(doc *yaml.Node, defaultNamespace, targetNamespace string) (ObjectKey, bool) {
	m := body(doc)
	if m.Kind != yaml.MappingNode {
		return ObjectKey{}, false
	}
	kind, apiVersion := str(lookup(m, "kind")), str(lookup(m, "apiVersion"))
	group, ok := groups[kind]
	version, found := strings.CutPrefix(apiVersion, group+"/")
	if !ok || !found || version == "" || strings.Contains(version, "/") {
		return ObjectKey{}, false
	}
	meta := lookup(m, "metadata")
	name, ns := str(lookup(meta, "name")), str(lookup(meta, "namespace"))
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

// resolve follows an alias to the node it refers to.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	return n
}

// lookup returns the value of key in the mapping m (aliases followed), or nil. It reads the
// first of duplicate keys; the editing code refuses duplicates (see child).
func lookup(m *yaml.Node, key string) *yaml.Node {
	m = resolve(m)
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := resolve(m.Content[i]); k != nil && k.Kind == yaml.ScalarNode && k.Value == key {
			return resolve(m.Content[i+1])
		}
	}
	return nil
}

// str returns the value of a scalar that is not null, or "".
func str(n *yaml.Node) string {
	n = resolve(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return ""
	}
	return n.Value
}
