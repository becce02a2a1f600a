package stack

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOCIVersion(t *testing.T) {
	d := "sha256:bb7451f24dd5ea1a1a3daf717cfe4527dd03a962b960b7e12a00697c3aaf54c6"
	for in, want := range map[string]string{
		"v1":             "1.0.0+bb7451f24dd5",
		"1.2.3":          "1.2.3+bb7451f24dd5",
		"1.2.3+build.1":  "1.2.3+bb7451f24dd5",
		"v0-sha.abc1234": "0.0.0-sha.abc1234+bb7451f24dd5",
		"not a version":  "not a version+bb7451f24dd5",
	} {
		if got := OCIVersion(in, d); got != want {
			t.Errorf("OCIVersion(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestOCINotes: the reference stack names its objects OCI-safe; the SCS naming with the bare
// .Chart.Version gets a note naming the file and the object.
func TestOCINotes(t *testing.T) {
	ref := filepath.Join("..", "..", "stacks", "aws", "base", "1-36")
	if notes := OCINotes(ref); len(notes) != 0 {
		t.Fatalf("the reference stack: %v", notes)
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(ref)); err != nil {
		t.Fatal(err)
	}
	helpers := filepath.Join(dir, "cluster-class", "templates", "_helpers.tpl")
	b, err := os.ReadFile(helpers)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(helpers, []byte(strings.ReplaceAll(string(b), `{{ .Chart.Version | replace "+" "-" }}`, "{{ .Chart.Version }}")), 0o644); err != nil {
		t.Fatal(err)
	}
	notes := OCINotes(dir)
	if len(notes) == 0 {
		t.Fatal("no note for names built from the bare .Chart.Version")
	}
	if n := notes[0]; !strings.HasPrefix(n.File, "cluster-class/templates/") || !strings.Contains(n.Message, "1.0.0+000000000000") || !strings.Contains(n.Message, `replace "+" "-"`) {
		t.Errorf("note %+v", n)
	}
	if Lint(dir, "") != nil {
		t.Errorf("the SCS naming is no problem from Git: %v", Lint(dir, ""))
	}
}
