package kubesim

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestStageFiles(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"b.yaml", "a.yml", "kustomization.yaml", "README.md"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := StageFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "a.yml"), filepath.Join(dir, "b.yaml")}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("StageFiles = %v, want %v", got, want)
	}
	if _, err := StageFiles(t.TempDir()); err == nil {
		t.Fatal("StageFiles of an empty directory succeeded")
	}
	if _, err := StageFiles(""); err == nil {
		t.Fatal("StageFiles without a directory succeeded")
	}
}

func TestNodeName(t *testing.T) {
	if got := NodeName("management", 0); got != "management-node-0" {
		t.Fatalf("NodeName = %q, want management-node-0", got)
	}
	// The name is also the hostname label: at most 63 characters, and distinct per index.
	long := strings.Repeat("x", 80)
	a, b := NodeName(long, 1), NodeName(long, 2)
	if len(a) > 63 || len(b) > 63 || a == b {
		t.Fatalf("NodeName of a long cluster name: %q, %q", a, b)
	}
}
