package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// root is the repository root, seen from this package's directory.
const root = "../.."

// TestDocsUpToDate fails when docs/api-reference.md or docs/conditions.md are not what the
// generator makes of api/v1alpha1 now.
func TestDocsUpToDate(t *testing.T) {
	docs, err := generate(root)
	if err != nil {
		t.Fatalf("generate the docs: %v", err)
	}
	names := make([]string, 0, len(docs))
	for name := range docs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		path := filepath.Join(root, docsDir, name)
		have, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: %v: run `make docs`", filepath.Join(docsDir, name), err)
			continue
		}
		if d := firstDifference(have, docs[name]); d != "" {
			t.Errorf("%s is out of date with %s: run `make docs` (or `go run ./hack/apidocs`) and commit the result.\n%s",
				filepath.Join(docsDir, name), apiDir, d)
		}
	}
}

// firstDifference describes the first line where have and want differ; "" when they are equal.
func firstDifference(have, want []byte) string {
	if bytes.Equal(have, want) {
		return ""
	}
	h, w := strings.Split(string(have), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < max(len(h), len(w)); i++ {
		hl, wl := "<end of file>", "<end of file>"
		if i < len(h) {
			hl = h[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if hl != wl {
			col := 0
			for col < len(hl) && col < len(wl) && hl[col] == wl[col] {
				col++
			}
			return fmt.Sprintf("first difference at line %d, column %d:\n  committed: %s\n  generated: %s", i+1, col+1, around(hl, col), around(wl, col))
		}
	}
	return "the files differ"
}

// around is the part of line around byte col, at most 100 bytes either side.
func around(line string, col int) string {
	from, to := max(0, col-100), min(len(line), col+100)
	out := line[from:to]
	if from > 0 {
		out = "..." + out
	}
	if to < len(line) {
		out += "..."
	}
	return out
}

// TestReasonMarkersMatchTheCode checks the +docs:on markers against the operator's code: a
// reason documented as set somewhere is used by the controllers or their internal packages, and
// a reason documented as never set ("none") is not. Likewise every update risk is used.
func TestReasonMarkersMatchTheCode(t *testing.T) {
	p, err := loadPackage(filepath.Join(root, apiDir))
	if err != nil {
		t.Fatal(err)
	}
	m, err := buildConditions(p)
	if err != nil {
		t.Fatal(err)
	}
	used, err := referencedIdentifiers(filepath.Join(root, "controllers"), filepath.Join(root, "internal"))
	if err != nil {
		t.Fatal(err)
	}
	if len(used) == 0 {
		t.Fatal("found no reference to any API constant in controllers/ and internal/: the scan is broken")
	}
	for _, r := range m.Reasons {
		switch {
		case len(r.On) > 0 && !used[r.Name]:
			t.Errorf("%s is documented as set on %s (+%s), but no code in controllers/ or internal/ uses it: fix the marker in %s/%s, or remove the constant",
				r.Name, strings.Join(r.On, ", "), onMarker, apiDir, r.File)
		case len(r.On) == 0 && used[r.Name]:
			t.Errorf("%s is documented as never set (+%s=none), but controllers/ or internal/ use it: say where it is set in %s/%s",
				r.Name, onMarker, apiDir, r.File)
		}
	}
	for _, r := range m.Risks {
		if !used[r.Name] {
			t.Errorf("update risk %s is documented, but no code in controllers/ or internal/ uses it", r.Name)
		}
	}
}

// apiRef matches a qualified reference to a constant of the API package, e.g. csv1.ReasonInUse.
var apiRef = regexp.MustCompile(`\b[A-Za-z0-9_]+\.((?:Reason|Risk)[A-Za-z0-9_]+)\b`)

// referencedIdentifiers returns the Reason* and Risk* names referenced by the non-test Go files
// under dirs.
func referencedIdentifiers(dirs ...string) (map[string]bool, error) {
	used := map[string]bool{}
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range apiRef.FindAllStringSubmatch(string(src), -1) {
				used[m[1]] = true
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("scan %s: %w", dir, err)
		}
	}
	return used, nil
}
