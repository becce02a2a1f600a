package v1alpha1_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/google/go-cmp/cmp"
)

// TestStatusOwnership checks that every status field of the API names its one writer in its
// godoc ("Written by the ClusterAddon status reconciler"), and that docs/status-ownership.md says
// the same, field by field and condition type by condition type: the two cannot drift, and a new
// status field cannot be added without saying which reconciler owns it.
func TestStatusOwnership(t *testing.T) {
	fromGodoc := ownersFromGodoc(t)
	fromDocs := ownersFromDocs(t, filepath.Join("..", "..", "docs", "status-ownership.md"))
	if diff := cmp.Diff(fromGodoc, fromDocs); diff != "" {
		t.Errorf("status field writers: godoc in api/v1alpha1 (-) and docs/status-ownership.md (+) differ:\n%s", diff)
	}
	// Each writer named exists in controllers/.
	src := ""
	files, _ := filepath.Glob(filepath.Join("..", "..", "controllers", "*.go"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src += string(b)
	}
	seen := map[string]bool{}
	for _, w := range fromGodoc {
		if !seen[w] && !strings.Contains(src, "type "+w+" struct") {
			t.Errorf("writer %s: no such reconciler type in controllers/", w)
		}
		seen[w] = true
	}
}

// statusKinds are the status structs, by kind; nested are the structs whose fields are listed
// under a status field (path prefix).
var (
	statusKinds = map[string]string{
		"ClusterStackStatus":        "ClusterStack",
		"ClusterStackReleaseStatus": "ClusterStackRelease",
		"ClusterAddonStatus":        "ClusterAddon",
		"ManagementOperatorStatus":  "ManagementOperator",
	}
	nested = map[string]bool{"AddonComponentStatus": true, "ReleaseSummary": true, "StackVersions": true}

	writtenBy   = regexp.MustCompile(`Written by the ([A-Za-z ]+?) reconciler`)
	decides     = regexp.MustCompile(`The ([A-Za-z ]+?) reconciler decides which`)
	alone       = regexp.MustCompile(`Written by the ([A-Za-z ]+?) reconciler alone`)
	condWriters = regexp.MustCompile(`^(.*?) (?:are written )?by the ([A-Za-z ]+?) reconciler$`)
)

// typeName turns "ClusterAddon status" into "ClusterAddonStatusReconciler".
func typeName(words string) string {
	var b strings.Builder
	for _, w := range strings.Fields(words) {
		r := []rune(w)
		r[0] = unicode.ToUpper(r[0])
		b.WriteString(string(r))
	}
	return b.String() + "Reconciler"
}

// ownersFromGodoc maps "<Kind> <field path>" to the writer's type name, from the godoc.
func ownersFromGodoc(t *testing.T) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	structs := map[string]*ast.TypeSpec{}
	docs := map[string]string{}
	for _, f := range files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, s := range g.Specs {
				if ts, ok := s.(*ast.TypeSpec); ok {
					if _, ok := ts.Type.(*ast.StructType); ok {
						structs[ts.Name.Name] = ts
						docs[ts.Name.Name] = godoc(g.Doc)
					}
				}
			}
		}
	}
	out := map[string]string{}
	add := func(key, writer string) {
		if old, ok := out[key]; ok && old != writer {
			t.Errorf("%s has two writers: %s and %s", key, old, writer)
		}
		out[key] = writer
	}
	var walk func(kind, typ, prefix, def string)
	walk = func(kind, typ, prefix, def string) {
		for _, f := range structs[typ].Type.(*ast.StructType).Fields.List {
			if f.Tag == nil || len(f.Names) == 0 {
				continue
			}
			name := strings.Split(reflect.StructTag(strings.Trim(f.Tag.Value, "`")).Get("json"), ",")[0]
			doc := godoc(f.Doc)
			path := prefix + name
			elem := f.Type
			list := false
			for {
				switch e := elem.(type) {
				case *ast.StarExpr:
					elem = e.X
					continue
				case *ast.ArrayType:
					elem, list = e.Elt, true
					continue
				}
				break
			}
			elemName := ""
			if id, ok := elem.(*ast.Ident); ok {
				elemName = id.Name
			}
			switch {
			case name == "conditions" && def != "":
				add(kind+" conditions[*]", def)
			case name == "conditions":
				body := strings.TrimPrefix(strings.TrimSuffix(doc, "."), "conditions: ")
				for _, part := range strings.Split(body, ";") {
					m := condWriters.FindStringSubmatch(strings.TrimSpace(part))
					if m == nil {
						t.Errorf("%s %s: %q does not say which reconciler writes which condition types", kind, path, part)
						continue
					}
					for _, ct := range regexp.MustCompile(`,| and `).Split(m[1], -1) {
						add(kind+" conditions["+strings.TrimSpace(ct)+"]", typeName(m[2]))
					}
				}
			case nested[elemName]:
				if m := decides.FindStringSubmatch(doc); m != nil {
					add(kind+" "+path+"[]", typeName(m[1]))
				}
				sub := path + "."
				if list {
					sub = path + "[]."
				}
				walk(kind, elemName, sub, def)
			default:
				if m := writtenBy.FindStringSubmatch(doc); m != nil {
					add(kind+" "+path, typeName(m[1]))
				} else if def != "" {
					add(kind+" "+path, def)
				} else {
					t.Errorf("%s status.%s: its godoc does not say \"Written by the ... reconciler\"", kind, path)
				}
			}
		}
	}
	for typ, kind := range statusKinds {
		def := ""
		if m := alone.FindStringSubmatch(docs[typ]); m != nil {
			def = typeName(m[1])
		}
		walk(kind, typ, "", def)
	}
	return out
}

// godoc is a comment's text on one line, without markers (+kubebuilder:...).
func godoc(c *ast.CommentGroup) string {
	var lines []string
	for _, l := range strings.Split(c.Text(), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "+") {
			lines = append(lines, l)
		}
	}
	return strings.Join(strings.Fields(strings.Join(lines, " ")), " ")
}

// ownersFromDocs maps "<Kind> <field path>" to the writer's type name, from the tables of
// docs/status-ownership.md: a "## <Kind>" section, rows "| fields | `Writer` | file |" whose
// fields are backticked paths, "`list[]`: which entries, `a`, `b`" (the entries and their
// fields a and b), "`conditions[type=A, B]`" and "`conditions` (all types)".
func ownersFromDocs(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	kind := ""
	tick := regexp.MustCompile("`([^`]+)`")
	for _, line := range strings.Split(string(b), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			kind = ""
			for _, k := range statusKinds {
				if h == k {
					kind = k
				}
			}
			continue
		}
		cells := strings.Split(line, "|")
		if kind == "" || len(cells) < 4 || strings.HasPrefix(strings.TrimSpace(cells[1]), "Field") || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") {
			continue
		}
		fields, writerCell := cells[1], cells[2]
		wm := tick.FindStringSubmatch(writerCell)
		if wm == nil {
			t.Errorf("%s: row %q names no writer", path, line)
			continue
		}
		writer := wm[1]
		prefix := ""
		for _, m := range tick.FindAllStringSubmatchIndex(fields, -1) {
			f := fields[m[2]:m[3]]
			after := fields[m[1]:]
			switch {
			case strings.HasPrefix(f, "conditions[type="):
				for _, ct := range strings.Split(strings.TrimSuffix(strings.TrimPrefix(f, "conditions[type="), "]"), ",") {
					add(t, out, kind+" conditions["+strings.TrimSpace(ct)+"]", writer)
				}
			case f == "conditions" && strings.HasPrefix(strings.TrimSpace(after), "(all types)"):
				add(t, out, kind+" conditions[*]", writer)
			case strings.HasSuffix(f, "[]") && strings.HasPrefix(after, ":"):
				prefix = f + "."
				add(t, out, kind+" "+f, writer)
			default:
				add(t, out, kind+" "+prefix+f, writer)
			}
		}
	}
	return out
}

func add(t *testing.T, out map[string]string, key, writer string) {
	t.Helper()
	if old, ok := out[key]; ok && old != writer {
		t.Errorf("docs/status-ownership.md: %s has two writers: %s and %s", key, old, writer)
	}
	out[key] = writer
}
