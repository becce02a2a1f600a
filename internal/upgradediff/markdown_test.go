package upgradediff

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/")

// golden compares got with testdata/<name>, or writes it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	file := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run the test with -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (run with -update after checking):\n--- got\n%s\n--- want\n%s", file, got, want)
	}
}

// upgradeWithRBAC is the cluster-class, the cni chart (a ClusterRole and CRDs added) and the
// info ConfigMap changing for Cluster alpha.
func upgradeWithRBAC(t *testing.T) *Diff {
	t.Helper()
	from := release(t, "v1", baseStack)
	to := release(t, "v2", baseStack.with(cniWithRBAC).with(infraWithLabel).with(files{"cluster-class/Chart.yaml": "apiVersion: v2\nname: cluster-class\nversion: v2\n"}))
	d, err := Compute(Input{From: from, To: to, Clusters: []Cluster{alpha}})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestOutputsGolden(t *testing.T) {
	d := upgradeWithRBAC(t)
	var text strings.Builder
	if err := WriteText(&text, d, Painter{}); err != nil {
		t.Fatal(err)
	}
	golden(t, "rbac.txt", text.String())
	md, truncated := Markdown(d, MarkdownOptions{})
	if truncated {
		t.Error("a small diff was cut")
	}
	golden(t, "rbac.md", md)
}

func TestMarkdownBudget(t *testing.T) {
	// A kustomize component with a ConfigMap of 3,000 changed lines and 40 ClusterRoles added.
	big := func(value string, roles int) files {
		var cm strings.Builder
		cm.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\n  namespace: kube-system\ndata:\n")
		for i := range 3000 {
			fmt.Fprintf(&cm, "  key-%04d: %s-%d\n", i, value, i)
		}
		f := files{
			"cluster-addon/big/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - configmap.yaml\n  - roles.yaml\n",
			"cluster-addon/big/configmap.yaml":     cm.String(),
		}
		var rs strings.Builder
		for i := range roles {
			fmt.Fprintf(&rs, "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: role-%02d\nrules: []\n", i)
		}
		if roles == 0 {
			rs.WriteString("apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: big\n  namespace: kube-system\n")
		}
		f["cluster-addon/big/roles.yaml"] = rs.String()
		return baseStack.with(f)
	}
	from, to := release(t, "v1", big("old", 0)), release(t, "v2", big("new", 40))
	d, err := Compute(Input{From: from, To: to, Clusters: []Cluster{alpha}})
	if err != nil {
		t.Fatal(err)
	}
	full, truncated := Markdown(d, MarkdownOptions{Budget: -1})
	if truncated || len(full) < 120<<10 {
		t.Fatalf("the full diff has %d bytes (truncated %t), want it over 120 KiB", len(full), truncated)
	}
	for _, budget := range []int{1 << 10, 4 << 10, 16 << 10, DefaultBudget} {
		t.Run(fmt.Sprint(budget), func(t *testing.T) {
			md, truncated := Markdown(d, MarkdownOptions{Budget: budget, FullDiff: "the file `.clusterstack/diff.md` of this branch"})
			if !truncated {
				t.Error("not reported as cut")
			}
			if len(md) > budget {
				t.Errorf("%d bytes, over the budget of %d", len(md), budget)
			}
			if !strings.Contains(md, "The full diff: the file `.clusterstack/diff.md` of this branch.") {
				t.Errorf("no note saying where the full diff is:\n%s", tail(md))
			}
			if strings.Count(md, "\n```")%2 != 0 {
				t.Errorf("a code block is left open:\n%s", tail(md))
			}
			if budget >= 4<<10 {
				for _, want := range []string{"| `big` | Kustomize |", "#### Cluster `team-a/alpha`: 40 added, 1 changed", "- Added ClusterRole `role-00` (`big`)", "The diff is cut"} {
					if !strings.Contains(md, want) {
						t.Errorf("lacks %q:\n%s", want, tail(md))
					}
				}
			}
			if budget >= 16<<10 && !strings.Contains(md, "... (cut)\n") {
				t.Errorf("the section that does not fit is not shown in part:\n%s", tail(md))
			}
		})
	}
	small := upgradeWithRBAC(t)
	if md, truncated := Markdown(small, MarkdownOptions{}); truncated || strings.Contains(md, "The diff is cut") {
		t.Errorf("a small diff was cut:\n%s", md)
	}
}

func tail(s string) string {
	if len(s) > 1500 {
		return "..." + s[len(s)-1500:]
	}
	return s
}

func TestMarkdownEscapes(t *testing.T) {
	d := &Diff{From: "a", To: "b", Components: []Component{{Name: "x|y", Change: Changed, FromKind: "Helm", ToKind: "Helm", FromVersion: "1`0", ToVersion: "2", Target: TargetWorkload}},
		Clusters: []ClusterDiff{{Cluster: "ns/c", Added: 1, Objects: []ObjectChange{{Change: Added, Component: "x|y", Kind: "ConfigMap", Name: "<b>n</b>", Namespace: "ns",
			Diff: "+data: ```\n"}}}}}
	md, _ := Markdown(d, MarkdownOptions{})
	for _, want := range []string{"| `x\\|y` |", "| ``1`0 → 2`` |", "- Added ConfigMap `ns/<b>n</b>`", "<summary>ns/c: Added ConfigMap ns/&lt;b&gt;n&lt;/b&gt; (x|y)</summary>", "````diff\n+data: ```\n````\n"} {
		if !strings.Contains(md, want) {
			t.Errorf("lacks %q:\n%s", want, md)
		}
	}
}
