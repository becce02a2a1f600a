package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// execute runs the plugin's command line with args and returns stdout, stderr and the exit code
// main would use. Only the commands that need no API server are run here; the others run
// against a real one in test/e2e (plugin_test.go).
func execute(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var in, out, errOut bytes.Buffer
	code := Run(context.Background(), args, genericiooptions.IOStreams{In: &in, Out: &out, ErrOut: &errOut})
	return out.String(), errOut.String(), code
}

var referenceStack = filepath.Join("..", "..", "..", "stacks", "aws", "base", "1-36")

func TestStackDirCommands(t *testing.T) {
	broken := filepath.Join(t.TempDir(), "stack")
	if err := os.CopyFS(broken, os.DirFS(referenceStack)); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(broken, "cluster-class")); err != nil {
		t.Fatal(err)
	}
	missing := broken + "/cluster-class/: missing: a stack needs a cluster-class directory (a Helm chart or a kustomize directory producing the ClusterClass)\n"

	tests := []struct {
		name                       string
		args                       []string
		code                       int
		stdout, stderr, stdoutPart string
	}{
		{name: "lint: stackctl's output", args: []string{"lint", referenceStack}, code: 0, stderr: referenceStack + ": ok\n"},
		{name: "lint: problems, exit code 1", args: []string{"lint", broken}, code: 1, stdout: missing, stderr: "1 problem(s)\n"},
		{name: "lint -o json: the problems as data, exit code 1", args: []string{"lint", broken, "-o", "json"}, code: 1,
			stdoutPart: `"file": "cluster-class/"`},
		{name: "lint -o yaml of a fine stack", args: []string{"lint", referenceStack, "--version", "v1", "-o", "yaml"}, code: 0,
			stdout: "dir: " + referenceStack + "\nproblems: []\nversion: v1\n"},
		{name: "template: YAML documents", args: []string{"template", referenceStack, "--version", "v2"}, code: 0, stdoutPart: "---\napiVersion: "},
		{name: "template -o json of a malformed stack: problems on stderr", args: []string{"template", broken, "-o", "json"}, code: 1, stderr: missing},
		{name: "an unknown output format", args: []string{"lint", referenceStack, "-o", "wide"}, code: 1,
			stderr: "error: unknown output format \"wide\": use -o json or -o yaml, or leave -o out for text\n"},
		{name: "a missing argument", args: []string{"why"}, code: 1, stderr: "error: accepts 1 arg(s), received 0\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := execute(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit code %d, want %d (stderr %q)", code, tt.code, errOut)
			}
			if tt.stdoutPart != "" {
				if !strings.Contains(out, tt.stdoutPart) {
					t.Errorf("stdout lacks %q:\n%s", tt.stdoutPart, out)
				}
			} else if out != tt.stdout {
				t.Errorf("stdout %q, want %q", out, tt.stdout)
			}
			if errOut != tt.stderr {
				t.Errorf("stderr %q, want %q", errOut, tt.stderr)
			}
		})
	}

	out, _, _ := execute(t, "template", referenceStack, "-o", "json")
	var objs []map[string]any
	if err := json.Unmarshal([]byte(out), &objs); err != nil || len(objs) == 0 {
		t.Errorf("template -o json: %v, %d objects", err, len(objs))
	}
}

func TestClusterInternal(t *testing.T) {
	for host, want := range map[string]bool{
		"source-controller.flux-system.svc.cluster.local.": true,
		"source-controller.flux-system.svc.cluster.local":  true,
		"source-controller.flux-system.svc":                true,
		"127.0.0.1":                                        false,
		"source.example.com":                               false,
		"localhost":                                        false,
	} {
		if got := clusterInternal(host); got != want {
			t.Errorf("clusterInternal(%q) = %t", host, got)
		}
	}
}
