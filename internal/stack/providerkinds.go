package stack

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// ProviderKind is the API version and kind of objects a cluster-class creates.
type ProviderKind struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// Bounds of ProviderKinds: the kinds it returns, and the files and bytes it reads.
const (
	MaxProviderKinds     = 32
	maxProviderKindFiles = 1000
	maxProviderKindBytes = 16 << 20
)

// topLevel matches a document's top-level "apiVersion: x" or "kind: x" line, the value
// literal (no template action).
var topLevel = regexp.MustCompile(`^(apiVersion|kind):\s*["']?([A-Za-z0-9./-]+)["']?\s*(#.*)?$`)

// ProviderKinds are the kinds of the objects the stack in dir declares in its cluster-class
// besides its ClusterClass and templates, whose API group readable accepts, sorted, at most
// MaxProviderKinds: the provider objects (a machine image, say) that must be ready before a
// Cluster can be built from the release. They are read from the YAML documents of the
// cluster-class's files (a chart's templates, a kustomize directory's resources) whose top-level
// apiVersion and kind are written literally, as they nearly always are, without rendering the
// chart: the operator reads them of every release a tenant publishes, and a template can be made
// to run for as long as it likes. Reading stops at maxProviderKindFiles files or
// maxProviderKindBytes bytes.
func ProviderKinds(dir string, s *Stack, readable func(group string) bool) []ProviderKind {
	root := filepath.Join(dir, filepath.FromSlash(s.ClusterClass.Path))
	seen := map[ProviderKind]bool{}
	var out []ProviderKind
	files, total := 0, 0
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil //nolint:nilerr // an unreadable entry declares nothing
		}
		if d.IsDir() {
			if d.Name() == "charts" && p != root {
				return fs.SkipDir // subcharts' objects are the subcharts' business
			}
			return nil
		}
		ext := strings.ToLower(filepath.Ext(p))
		if ext != ".yaml" && ext != ".yml" {
			return nil
		}
		if files++; files > maxProviderKindFiles {
			return fs.SkipAll
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil //nolint:nilerr // as above
		}
		if total += len(b); total > maxProviderKindBytes {
			return fs.SkipAll
		}
		for _, doc := range splitYAMLDocuments(string(b)) {
			k := declaredKind(doc)
			group := ""
			if i := strings.Index(k.APIVersion, "/"); i >= 0 {
				group = k.APIVersion[:i]
			}
			if k.APIVersion == "" || k.Kind == "" || k.Kind == "ClusterClass" || strings.HasSuffix(k.Kind, "Template") || !readable(group) || seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, k)
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool {
		if out[i].APIVersion != out[j].APIVersion {
			return out[i].APIVersion < out[j].APIVersion
		}
		return out[i].Kind < out[j].Kind
	})
	if len(out) > MaxProviderKinds {
		out = out[:MaxProviderKinds]
	}
	return out
}

// declaredKind is the literal top-level apiVersion and kind of a YAML document.
func declaredKind(doc string) ProviderKind {
	var k ProviderKind
	sc := bufio.NewScanner(bytes.NewReader([]byte(doc)))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		m := topLevel.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		if m[1] == "apiVersion" && k.APIVersion == "" {
			k.APIVersion = m[2]
		} else if m[1] == "kind" && k.Kind == "" {
			k.Kind = m[2]
		}
	}
	return k
}
