package stackcli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
)

// bumpCNI gives the stack's cni chart a new version and a ClusterRole, and its values
// template a larger MTU.
func bumpCNI(t *testing.T, dir string) {
	t.Helper()
	replace := func(rel, old, repl string) {
		p := filepath.Join(dir, rel)
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), old) {
			t.Fatalf("%s: %v, or no %q", p, err, old)
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(b), old, repl, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	replace("cluster-addon/cni/Chart.yaml", "version: 1.0.0", "version: 1.1.0")
	replace("cluster-addon/cni/overwrite.yaml", "  apiServer:\n", "  mtu: 9001\n  apiServer:\n")
	role := "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: cni-nodes\nrules: []\n"
	if err := os.WriteFile(filepath.Join(dir, "cluster-addon/cni/templates/clusterrole.yaml"), []byte(role), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := stack.SetChartVersion(dir, "v2"); err != nil {
		t.Fatal(err)
	}
}

// checkoutWithReleases is a Git repository holding the reference stack at stacks/1-36 with the
// tags aws-base-1-36-v1 and aws-base-1-36-v2 (bumpCNI), and the stack directory.
func checkoutWithReleases(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "stacks", "1-36")
	if err := os.CopyFS(dir, os.DirFS(referenceStack)); err != nil {
		t.Fatal(err)
	}
	repo, err := git.PlainInit(root, false)
	if err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"v1", "v2"} {
		if v == "v2" {
			bumpCNI(t, dir)
		}
		if err := wt.AddGlob("."); err != nil {
			t.Fatal(err)
		}
		h, err := wt.Commit("release "+v, &git.CommitOptions{Author: &object.Signature{Name: "a", Email: "a@example.com", When: time.Unix(1_800_000_000, 0)}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := repo.CreateTag("aws-base-1-36-"+v, h, nil); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestDiff(t *testing.T) {
	bumped := copyStack(t, func(dir string) { bumpCNI(t, dir) })
	checkout := checkoutWithReleases(t)
	tests := []struct {
		name   string
		a, b   string
		opts   DiffOptions
		code   int
		stdout []string
		stderr string
	}{
		{name: "two directories: the chart version, the value, the ClusterRole first", a: referenceStack, b: bumped, code: DiffDifferent,
			stdout: []string{"  ~ cni            Helm       1.0.0 -> 1.1.0       Changed\n", "Cluster default/lint-cluster  1 added, 2 changed, 0 removed (1 cluster-scoped, 0 of them CRDs)\n" +
				"  Cluster-scoped objects and CRDs\n    + ClusterRole cni-nodes  (cni)\n", "    cni (Helm values)\n", "      +mtu: 9001\n"}},
		{name: "git revisions of a checkout, by tag", a: checkout + "@aws-base-1-36-v1", b: checkout + "@aws-base-1-36-v2", code: DiffDifferent,
			stdout: []string{"Upgrade aws-base-1-36-v1 -> aws-base-1-36-v2\n", "+ ClusterRole cni-nodes  (cni)\n"}},
		{name: "git revisions by stack version", a: checkout + "@v1", b: checkout + "@v2", code: DiffDifferent,
			stdout: []string{"Upgrade aws-base-1-36-v1 -> aws-base-1-36-v2\n", "+ ClusterRole cni-nodes  (cni)\n"}},
		{name: "a revision and the work tree: no differences", a: checkout + "@HEAD", b: checkout, code: DiffSame,
			stdout: []string{"Cluster default/lint-cluster  no differences in values or objects\n"}},
		{name: "Markdown for a pull request, bounded", a: referenceStack, b: bumped, opts: DiffOptions{Format: DiffMarkdown, Budget: 2048}, code: DiffDifferent,
			stdout: []string{"| `cni` | Helm | `1.0.0 → 1.1.0` | Changed |\n", "The full diff: `stackctl diff " + referenceStack + " " + bumped + "`.\n"}},
		{name: "a revision that does not exist", a: checkout + "@v7", b: checkout, code: DiffError,
			stderr: "stackctl diff: neither revision \"v7\" nor the release tag \"aws-base-1-36-v7\" exists: revision \"aws-base-1-36-v7\": reference not found\n"},
		{name: "a directory that is no stack", a: t.TempDir(), b: bumped, code: DiffError, stderr: "stackctl diff: the stack at "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut strings.Builder
			if tt.opts.Format == "" {
				tt.opts.Format = DiffText
			}
			code := Diff("stackctl", ParseStackRef(tt.a), ParseStackRef(tt.b), tt.opts, &out, &errOut)
			if code != tt.code {
				t.Errorf("exit code %d, want %d; stderr %s", code, tt.code, errOut.String())
			}
			for _, s := range tt.stdout {
				if !strings.Contains(out.String(), s) {
					t.Errorf("stdout lacks %q:\n%s", s, out.String())
				}
			}
			if !strings.HasPrefix(errOut.String(), tt.stderr) || (tt.stderr == "" && errOut.Len() > 0) {
				t.Errorf("stderr %q, want %q", errOut.String(), tt.stderr)
			}
			if tt.opts.Budget > 0 && out.Len() > tt.opts.Budget {
				t.Errorf("%d bytes of Markdown, over the budget of %d", out.Len(), tt.opts.Budget)
			}
		})
	}
}

func TestParseStackRef(t *testing.T) {
	at := filepath.Join(t.TempDir(), "dir@v1")
	if err := os.Mkdir(at, 0o755); err != nil {
		t.Fatal(err)
	}
	for arg, want := range map[string]StackRef{
		"stacks/aws/base/1-36@v2":               {Dir: "stacks/aws/base/1-36", Rev: "v2"},
		"stacks/aws/base/1-36@aws-base-1-36-v2": {Dir: "stacks/aws/base/1-36", Rev: "aws-base-1-36-v2"},
		"stacks/aws/base/1-36":                  {Dir: "stacks/aws/base/1-36"},
		"a@b/stack":                             {Dir: "a@b/stack"},
		at:                                      {Dir: at},
		"stacks@HEAD~1":                         {Dir: "stacks", Rev: "HEAD~1"},
	} {
		if got := ParseStackRef(arg); got != want {
			t.Errorf("ParseStackRef(%q) = %+v, want %+v", arg, got, want)
		}
	}
}
