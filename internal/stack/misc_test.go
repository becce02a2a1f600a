package stack

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clusterstack-io/clusterstack-operator/internal/testenv"
)

func TestSetChartVersion(t *testing.T) {
	dir := copyStack(t, "testdata/scs/openstack/scs/1-35")
	before, err := os.ReadFile(filepath.Join(dir, "cluster-class/Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := SetChartVersion(dir, "v2"); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, "cluster-class/Chart.yaml"))
	if want := strings.Replace(string(before), "version: v1", "version: v2", 1); string(after) != want {
		t.Errorf("Chart.yaml after SetChartVersion:\n%s\nwant:\n%s", after, want)
	}
	if ps := Lint(dir, "v2"); len(ps) != 0 {
		t.Errorf("Lint after SetChartVersion: %v", ps)
	}

	// A comment after the version stays; a nested "version:" is not touched.
	writeFile(t, dir, "cluster-class/Chart.yaml", "apiVersion: v2\nname: cc\ndependencies:\n  - name: x\n    version: 1.0.0\nversion: \"v1\"  # set by the release\n")
	if err := SetChartVersion(dir, "v0-sha.abc1234"); err != nil {
		t.Fatal(err)
	}
	after, _ = os.ReadFile(filepath.Join(dir, "cluster-class/Chart.yaml"))
	if want := "apiVersion: v2\nname: cc\ndependencies:\n  - name: x\n    version: 1.0.0\nversion: v0-sha.abc1234  # set by the release\n"; string(after) != want {
		t.Errorf("got:\n%s\nwant:\n%s", after, want)
	}
	// No version line: appended.
	writeFile(t, dir, "cluster-class/Chart.yaml", "apiVersion: v2\nname: cc")
	if err := SetChartVersion(dir, "v3"); err != nil {
		t.Fatal(err)
	}
	after, _ = os.ReadFile(filepath.Join(dir, "cluster-class/Chart.yaml"))
	if want := "apiVersion: v2\nname: cc\nversion: v3\n"; string(after) != want {
		t.Errorf("got %q, want %q", after, want)
	}
	if err := SetChartVersion(dir, "1.0.0"); err == nil {
		t.Error("SetChartVersion accepted 1.0.0")
	}
	removeFile(t, dir, "cluster-class/Chart.yaml")
	if err := SetChartVersion(dir, "v4"); err == nil || !strings.Contains(err.Error(), "cluster-class/Chart.yaml") {
		t.Errorf("SetChartVersion without Chart.yaml: %v", err)
	}
}

// TestKustomizeWithoutKustomizationFile: like Flux, a directory of plain manifests builds
// with a generated kustomization.yaml (subdirectories included).
func TestKustomizeWithoutKustomizationFile(t *testing.T) {
	dir := copyStack(t, "../../stacks/aws/base/1-36")
	removeFile(t, dir, "cluster-addon/cluster-info")
	writeFile(t, dir, "cluster-addon/plain/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: kube-system\ndata:\n  name: \"${cluster_name}\"\n")
	writeFile(t, dir, "cluster-addon/plain/sub/cm.yml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  namespace: kube-system\n")
	writeFile(t, dir, "cluster-addon/plain/README.md", "not a manifest\n")
	writeFile(t, dir, "clusteraddon.yaml", "addonStages:\n  AfterControlPlaneInitialized:\n    - name: cni\n      action: apply\n    - name: plain\n      action: apply\n")
	b, err := buildKustomize(dir, "cluster-addon/plain")
	if err != nil {
		t.Fatal(err)
	}
	if len(b.objects) != 2 || len(b.resources) != 2 {
		t.Errorf("built %d objects (%d resources), want 2", len(b.objects), len(b.resources))
	}
	if ps := Lint(dir, "v1"); len(ps) != 0 {
		t.Errorf("Lint: %v", ps)
	}
	if _, err := os.Stat(filepath.Join(dir, "cluster-addon/plain/kustomization.yaml")); err == nil {
		t.Error("the build wrote a kustomization.yaml into the stack directory")
	}
}

// TestKustomizeClusterClass: a kustomize cluster-class names its ClusterClass with the
// operator's ${cluster_class_name}.
func TestKustomizeClusterClass(t *testing.T) {
	dir := copyStack(t, "../../stacks/aws/base/1-36")
	removeFile(t, dir, "cluster-class")
	writeFile(t, dir, "cluster-class/kustomization.yaml", "resources:\n  - clusterclass.yaml\n")
	cc := `apiVersion: cluster.x-k8s.io/v1beta2
kind: ClusterClass
metadata:
  name: ${cluster_class_name}
spec:
  controlPlane:
    templateRef: {apiVersion: controlplane.cluster.x-k8s.io/v1beta2, kind: KubeadmControlPlaneTemplate, name: "${cluster_class_name}-cp"}
  infrastructure:
    templateRef: {apiVersion: infrastructure.cluster.x-k8s.io/v1beta2, kind: AWSClusterTemplate, name: "${release_name}-${release_version}-cluster"}
---
apiVersion: controlplane.cluster.x-k8s.io/v1beta2
kind: KubeadmControlPlaneTemplate
metadata:
  name: ${cluster_class_name}-cp
spec: {template: {spec: {}}}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: AWSClusterTemplate
metadata:
  name: ${cluster_class_name}-cluster
spec: {template: {spec: {region: eu-central-1}}}
`
	writeFile(t, dir, "cluster-class/clusterclass.yaml", cc)
	s, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.ClusterClass.Kind != KindKustomize || !strings.HasPrefix(s.ClusterClass.Version, "sha256-") {
		t.Errorf("cluster-class = %+v", s.ClusterClass)
	}
	if ps := Lint(dir, "v7"); len(ps) != 0 {
		t.Errorf("Lint: %v", ps)
	}
	writeFile(t, dir, "cluster-class/clusterclass.yaml", strings.Replace(cc, "name: ${cluster_class_name}\n", "name: fixed-name\n", 1))
	ps := Lint(dir, "v7")
	if len(ps) != 1 || ps[0].File != "cluster-class/" || !strings.Contains(ps[0].Message, `named "fixed-name", want the release name "aws-base-1-36-v7" (name it ${cluster_class_name})`) {
		t.Errorf("Lint = %v", ps)
	}
}

// TestKustomizeVersion guards the kustomize version: it must be the one Flux
// kustomize-controller v1.7.x builds with (kustomize v5.7.1 = api/kyaml v0.20.1), or lint
// and Flux may disagree. A dependency that needs a newer kustomize breaks this test.
func TestKustomizeVersion(t *testing.T) {
	for _, mod := range []string{"sigs.k8s.io/kustomize/api", "sigs.k8s.io/kustomize/kyaml"} {
		out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}{{with .Replace}} => {{.Version}}{{end}}", mod).CombinedOutput()
		if err != nil {
			testenv.SkipOrFail(t, "go list -m %s: %v: %s", mod, err, out)
		}
		got := strings.TrimSpace(string(out))
		if i := strings.LastIndex(got, "=> "); i >= 0 {
			got = got[i+3:]
		}
		if got != "v0.20.1" {
			t.Errorf("%s is %s, want v0.20.1 (what Flux kustomize-controller v1.7 uses)", mod, got)
		}
	}
}
