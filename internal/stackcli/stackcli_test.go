package stackcli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// referenceStack is the repository's reference stack.
var referenceStack = filepath.Join("..", "..", "stacks", "aws", "base", "1-36")

// copyStack copies the reference stack into a temporary directory and applies mutate.
func copyStack(t *testing.T, mutate func(dir string)) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "stack")
	if err := os.CopyFS(dir, os.DirFS(referenceStack)); err != nil {
		t.Fatal(err)
	}
	if mutate != nil {
		mutate(dir)
	}
	return dir
}

// withoutClusterClass removes the stack's cluster-class directory.
func withoutClusterClass(t *testing.T) func(dir string) {
	return func(dir string) {
		if err := os.RemoveAll(filepath.Join(dir, "cluster-class")); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLint(t *testing.T) {
	noClusterClass := copyStack(t, withoutClusterClass(t))
	tests := []struct {
		name           string
		dir, version   string
		code           int
		stdout, stderr string
	}{
		{name: "the reference stack is fine", dir: referenceStack, code: ExitOK, stderr: referenceStack + ": ok\n"},
		{name: "a missing cluster-class: the problem as <dir>/<file>: message, the count on stderr", dir: noClusterClass, code: ExitProblems,
			stdout: noClusterClass + "/cluster-class/: missing: a stack needs a cluster-class directory (a Helm chart or a kustomize directory producing the ClusterClass)\n",
			stderr: "1 problem(s)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut strings.Builder
			if code := Lint(tt.dir, tt.version, &out, &errOut); code != tt.code {
				t.Errorf("exit code %d, want %d", code, tt.code)
			}
			if out.String() != tt.stdout || errOut.String() != tt.stderr {
				t.Errorf("stdout %q, stderr %q; want %q, %q", out.String(), errOut.String(), tt.stdout, tt.stderr)
			}
		})
	}
	t.Run("a version the chart does not have is a problem", func(t *testing.T) {
		var out, errOut strings.Builder
		if code := Lint(referenceStack, "v3", &out, &errOut); code != ExitProblems || !strings.Contains(out.String(), "cluster-class/Chart.yaml") {
			t.Errorf("exit code %d, stdout %q", code, out.String())
		}
	})
}

func TestTemplate(t *testing.T) {
	brokenChart := copyStack(t, func(dir string) {
		p := filepath.Join(dir, "cluster-class", "templates", "cluster-class.yaml")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(b), "spec:\n", "spec:\n  # {{ .Values.doesNotExist.field }}\n", 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("the reference stack: YAML documents, the ClusterClass named for the version", func(t *testing.T) {
		var out, errOut strings.Builder
		if code := Template("stackctl", referenceStack, "v2", &out, &errOut); code != ExitOK {
			t.Fatalf("exit code %d: %s", code, errOut.String())
		}
		if !strings.HasPrefix(out.String(), "---\n") || !strings.Contains(out.String(), "kind: ClusterClass\n") || !strings.Contains(out.String(), "name: aws-base-1-36-v2\n") || errOut.Len() != 0 {
			t.Errorf("stdout:\n%s\nstderr: %s", out.String(), errOut.String())
		}
	})
	t.Run("a chart that fails: the program's name and the error on stderr", func(t *testing.T) {
		var out, errOut strings.Builder
		if code := Template("kubectl clusterstack", brokenChart, "", &out, &errOut); code != ExitProblems {
			t.Errorf("exit code %d", code)
		}
		if out.Len() != 0 || !strings.HasPrefix(errOut.String(), "kubectl clusterstack template: cluster-class/templates/cluster-class.yaml: ") {
			t.Errorf("stdout %q, stderr %q", out.String(), errOut.String())
		}
	})
	t.Run("a malformed stack: its problems on stdout", func(t *testing.T) {
		dir := copyStack(t, withoutClusterClass(t))
		var out, errOut strings.Builder
		if code := Template("stackctl", dir, "", &out, &errOut); code != ExitProblems || !strings.HasPrefix(out.String(), dir+"/cluster-class/: missing") {
			t.Errorf("exit code %d, stdout %q", code, out.String())
		}
	})
}
