package stack

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/clusterstack-io/clusterstack-operator/internal/render"
)

func componentNames(cs []Component) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

func TestLoadSCSLayout(t *testing.T) {
	s, err := Load("testdata/scs/openstack/scs/1-35")
	if err != nil {
		t.Fatal(err)
	}
	if s.Provider != "openstack" || s.Name != "scs" || s.KubernetesVersion != "v1.35.3" || s.KubernetesMinor != "1.35" || s.MetadataFile != StackFile {
		t.Errorf("metadata = %s/%s %s (%s) from %s", s.Provider, s.Name, s.KubernetesVersion, s.KubernetesMinor, s.MetadataFile)
	}
	if s.HelmReleaseName() != "openstack-scs-1-35" || s.ReleaseName("v1") != "openstack-scs-1-35-v1" {
		t.Errorf("names = %s, %s", s.HelmReleaseName(), s.ReleaseName("v1"))
	}
	if cc := s.ClusterClass; cc.Kind != KindHelm || cc.Version != "v1" || cc.Path != "cluster-class" || cc.ChartName != "openstack-scs-1-35-cluster-class" {
		t.Errorf("cluster-class = %+v", cc)
	}
	// clusteraddon.yaml: AfterControlPlaneInitialized [cni ccm], BeforeClusterUpgrade
	// [metrics-server cni], AfterClusterUpgrade [ccm]; csi is not listed.
	if got, want := componentNames(s.Components), []string{"cni", "ccm", "metrics-server", "csi"}; !reflect.DeepEqual(got, want) {
		t.Errorf("addon order = %v, want %v", got, want)
	}
	cni := component(t, s, "cni")
	if cni.Path != "cluster-addon/cni" || cni.Kind != KindHelm || cni.Version != "v1" || cni.Namespace != DefaultNamespace ||
		cni.ValuesFile != "cluster-addon/cni/overwrite.yaml" || !strings.Contains(cni.ValuesTemplate, "k8sServiceHost") ||
		!strings.HasPrefix(cni.Digest, "sha256:") || len(cni.Digest) != len("sha256:")+64 {
		t.Errorf("cni = %+v", cni)
	}
	if s.Addons["ccm"] != "2.35.x" {
		t.Errorf("addons = %v", s.Addons)
	}
	values, err := renderValues("overwrite.yaml", cni.ValuesTemplate, sampleTemplateData())
	if err != nil {
		t.Fatal(err)
	}
	if got := values["cilium"].(map[string]any)["ipv4NativeRoutingCIDR"]; got != "10.244.0.0/16" {
		t.Errorf("cilium values = %v", values)
	}
}

func TestLoadOldSCSLayout(t *testing.T) {
	s, err := Load("testdata/scs/docker/ferrol/1-28")
	if err != nil {
		t.Fatal(err)
	}
	if s.Provider != "docker" || s.Name != "ferrol" || s.KubernetesVersion != "v1.28.11" || s.MetadataFile != CsctlFile {
		t.Errorf("metadata = %+v", s)
	}
	if len(s.Components) != 1 {
		t.Fatalf("components = %v", componentNames(s.Components))
	}
	c := s.Components[0]
	if c.Name != UmbrellaComponent || c.Path != "cluster-addon" || c.Kind != KindHelm || c.Version != "v2" ||
		c.ValuesFile != ClusterAddonValuesFile || !strings.Contains(c.ValuesTemplate, "workload_loadbalancer") {
		t.Errorf("umbrella = %+v", c)
	}
	values, err := renderValues(ClusterAddonValuesFile, c.ValuesTemplate, sampleTemplateData())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"metrics-server":       map[string]any{"k8sServiceHost": "api.c1.example.com", "commonLabels": map[string]any{"domain": "api.c1.example.com"}},
		"workloadLoadBalancer": "yawol",
		"yawolFloatingID":      "net-1",
	}
	if !reflect.DeepEqual(values, want) {
		t.Errorf("values = %#v\nwant %#v", values, want)
	}
}

func TestLoadReferenceStack(t *testing.T) {
	s, err := Load("../../stacks/aws/base/1-36")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := componentNames(s.Components), []string{"cni", "cluster-info"}; !reflect.DeepEqual(got, want) {
		t.Errorf("addon order = %v, want %v", got, want)
	}
	info := component(t, s, "cluster-info")
	if info.Kind != KindKustomize || !strings.HasPrefix(info.Version, "sha256-") || len(info.Version) != len("sha256-")+12 ||
		!strings.HasPrefix(info.Digest, "sha256:"+strings.TrimPrefix(info.Version, "sha256-")) {
		t.Errorf("cluster-info = %+v", info)
	}
	data := sampleTemplateData()
	cni := component(t, s, "cni")
	values, err := renderValues("overwrite.yaml", cni.ValuesTemplate, data)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"podCIDR": "10.244.0.0/16", "serviceCIDR": "10.96.0.0/12",
		"apiServer": map[string]any{"host": "api.c1.example.com", "port": float64(6443)},
	}
	if !reflect.DeepEqual(values, want) {
		t.Errorf("cni values = %#v, want %#v", values, want)
	}
	values, err = renderValues("overwrite.yaml", info.ValuesTemplate, data)
	if err != nil {
		t.Fatal(err)
	}
	if vars := render.Flatten(values); vars["infra_region"] != "eu-west-1" {
		t.Errorf("cluster-info variables = %v", vars)
	}
	// A Cluster without an endpoint yet: the operator must wait rather than install "".
	noEndpoint := sampleTemplateData()
	delete(noEndpoint.Cluster["spec"].(map[string]any), "controlPlaneEndpoint")
	if _, err := renderValues("overwrite.yaml", cni.ValuesTemplate, noEndpoint); err == nil {
		t.Error("cni values rendered for a Cluster without controlPlaneEndpoint")
	}
}

func TestDigest(t *testing.T) {
	dir := copyStack(t, "../../stacks/aws/base/1-36")
	s1, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s1.Components, s2.Components) || !reflect.DeepEqual(s1.ClusterClass, s2.ClusterClass) {
		t.Fatal("two loads of the same directory differ")
	}
	writeFile(t, dir, "cluster-addon/cluster-info/overwrite.yaml", "values: |\n  infra:\n    region: \"{{ .InfraCluster.spec.region }}\"\n    zone: a\n")
	s3, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	before := component(t, s1, "cluster-info")
	after := component(t, s3, "cluster-info")
	if before.Digest == after.Digest || before.Version == after.Version {
		t.Error("changing overwrite.yaml did not change the kustomize component's digest and version")
	}
	cniBefore := component(t, s1, "cni")
	cniAfter := component(t, s3, "cni")
	if cniBefore.Digest != cniAfter.Digest || s1.ClusterClass.Digest != s3.ClusterClass.Digest {
		t.Error("digests of unchanged components changed")
	}
}

func TestLoadReturnsProblems(t *testing.T) {
	dir := copyStack(t, "../../stacks/aws/base/1-36")
	removeFile(t, dir, "stack.yaml")
	_, err := Load(dir)
	var ps Problems
	if !errors.As(err, &ps) || len(ps) != 1 || ps[0].File != "" || !strings.Contains(ps[0].Message, "no stack metadata") {
		t.Fatalf("Load error = %#v", err)
	}
	var p Problem
	if !errors.As(error(ps[0]), &p) || p.Error() != ps[0].Message {
		t.Errorf("Problem.Error = %q", p.Error())
	}
}

func TestNamespaces(t *testing.T) {
	dir := copyStack(t, "../../stacks/aws/base/1-36")
	appendFile(t, dir, "stack.yaml", "namespaces:\n  cluster-info: cluster-info-system\n")
	s, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	info := component(t, s, "cluster-info")
	cni := component(t, s, "cni")
	if info.Namespace != "cluster-info-system" || cni.Namespace != DefaultNamespace {
		t.Errorf("namespaces = %s, %s", info.Namespace, cni.Namespace)
	}
}

func TestCheckNamespace(t *testing.T) {
	tests := []struct {
		ns      string
		wantMsg string // "" for valid
	}{
		{ns: "kube-system"},
		{ns: "cni-${cluster_name}"},
		{ns: "${cluster_name}"},
		{ns: "${cluster_name}-addons"},
		{ns: strings.Repeat("a", 63)},
		{ns: strings.Repeat("a", 64), wantMsg: "is not a valid namespace name (a DNS label"},
		{ns: "Kube_System", wantMsg: `"Kube_System" is not a valid namespace name`},
		{ns: "", wantMsg: `"" is not a valid namespace name`},
		// 34 + 29 characters of the sample cluster name = 63: fits.
		{ns: strings.Repeat("n", 33) + "-${cluster_name}"},
		{ns: strings.Repeat("n", 34) + "-${cluster_name}", wantMsg: `for a Cluster named "prod-eu-central-1-payments-01": "` + strings.Repeat("n", 34) + `-prod-eu-central-1-payments-01" is not a DNS label of at most 63 characters`},
		{ns: "cni-${CLUSTER_NAME}", wantMsg: "${cluster_name} is replaced by the Cluster's name"},
		{ns: "cni-${cluster_namespace}", wantMsg: `"cni-${cluster_namespace}" is not a valid namespace name (a DNS label`},
		{ns: "CNI-${cluster_name}", wantMsg: `"CNI-prod-eu-central-1-payments-01" is not a DNS label`},
		{ns: "${cluster_name}-", wantMsg: "is not a DNS label"},
	}
	for _, tt := range tests {
		t.Run(tt.ns, func(t *testing.T) {
			got := checkNamespace(tt.ns)
			if tt.wantMsg == "" && got != "" {
				t.Errorf("checkNamespace(%q) = %q, want valid", tt.ns, got)
			}
			if tt.wantMsg != "" && !strings.Contains(got, tt.wantMsg) {
				t.Errorf("checkNamespace(%q) = %q, want it to contain %q", tt.ns, got, tt.wantMsg)
			}
		})
	}
}

func TestNamespacePerCluster(t *testing.T) {
	dir := copyStack(t, "../../stacks/aws/base/1-36")
	appendFile(t, dir, "stack.yaml", "namespaces:\n  cni: cni-${cluster_name}\n")
	s, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if cni := component(t, s, "cni"); cni.Namespace != "cni-${cluster_name}" {
		t.Errorf("cni namespace = %q, want the placeholder kept for the operator", cni.Namespace)
	}
	if ps := Lint(dir, ""); len(ps) != 0 {
		t.Errorf("Lint: %v", ps)
	}
}

// --- helpers -------------------------------------------------------------------------------

// component returns the component name of s, failing the test when s has none.
func component(t *testing.T, s *Stack, name string) Component {
	t.Helper()
	c, found := s.Component(name)
	if !found {
		t.Fatalf("the stack has no component %q (it has %v)", name, componentNames(s.Components))
	}
	return c
}

// copyStack copies a stack directory into a temporary directory of the same base name.
func copyStack(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func writeFile(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func appendFile(t *testing.T, dir, rel, content string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, rel, string(data)+content)
}

func replaceInFile(t *testing.T, dir, rel, old, new string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("%s does not contain %q", rel, old)
	}
	writeFile(t, dir, rel, strings.Replace(string(data), old, new, 1))
}

func removeFile(t *testing.T, dir, rel string) {
	t.Helper()
	if err := os.RemoveAll(filepath.Join(dir, filepath.FromSlash(rel))); err != nil {
		t.Fatal(err)
	}
}

func TestLoadRequirements(t *testing.T) {
	dir := copyStack(t, "../../stacks/aws/base/1-36")
	s, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.Requirements != nil {
		t.Errorf("a stack without requires: has requirements %v", s.Requirements)
	}
	appendFile(t, dir, "stack.yaml", `requires:
  - operator: cluster-api
    versions: ">=1.10.0 <1.12.0"
  - operator: capa
  - capiContract: v1beta2
`)
	s, err = Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []Requirement{{Operator: "cluster-api", Versions: ">=1.10.0 <1.12.0"}, {Operator: "capa"}, {CAPIContract: "v1beta2"}}
	if !reflect.DeepEqual(s.Requirements, want) {
		t.Errorf("requirements = %+v, want %+v", s.Requirements, want)
	}
}
