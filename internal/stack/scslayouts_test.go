package stack

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/clusterstack-io/clusterstack-operator/internal/render"
)

// Stacks laid out like the three stacks of the Sovereign Cloud Stack cluster-stacks repository:
// providers/openstack/scs (vendored subcharts, overwrite.yaml), providers/docker/scs
// (SCS's own cluster-addon-values.yaml, keyed by the alias of the chart each per-component
// wrapper chart vendors) and
// providers/openstack/scs2 (dependencies Flux fetches, not vendored).
const (
	scsVendored = "testdata/scs/providers/openstack/scs"
	scsShared   = "testdata/scs/providers/docker/scs"
	scsFetched  = "testdata/scs/providers/openstack/scs2"
	// greeterChart is the chart the SCS-like addons depend on.
	greeterChart = "testdata/charts/greeter"
)

// vendor packages the greeter chart into <component>/charts/ of a stack copy, as
// `helm dependency build` does (greeter-0.1.0.tgz).
func vendor(t *testing.T, dir string, components ...string) {
	t.Helper()
	ch, err := loader.LoadDir(greeterChart)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range components {
		if _, err := chartutil.Save(ch, filepath.Join(dir, "cluster-addon", c, "charts")); err != nil {
			t.Fatal(err)
		}
	}
}

// vendoredCopy is a copy of the openstack/scs-like stack with its subcharts vendored.
func vendoredCopy(t *testing.T) string {
	dir := copyStack(t, scsVendored)
	vendor(t, dir, "ccm", "metrics-server")
	return dir
}

func TestLoadSCSLayouts(t *testing.T) {
	tests := []struct {
		dir        string
		provider   string
		name       string
		version    string
		components []string
		valuesFile map[string]string
		addonFile  string
	}{{
		dir: scsVendored, provider: "openstack", name: "scs", version: "v1.32.5",
		components: []string{"metrics-server", "ccm"},
		valuesFile: map[string]string{"ccm": "cluster-addon/ccm/overwrite.yaml", "metrics-server": "cluster-addon/metrics-server/overwrite.yaml"},
	}, {
		dir: scsShared, provider: "docker", name: "scs", version: "v1.30.10",
		components: []string{"cni", "metrics-server"},
		valuesFile: map[string]string{"cni": "", "metrics-server": ""},
		addonFile:  ClusterAddonValuesFile,
	}, {
		dir: scsFetched, provider: "openstack", name: "scs2", version: "v1.34.7",
		components: []string{"cni", "ccm"},
		valuesFile: map[string]string{"ccm": "cluster-addon/ccm/overwrite.yaml", "cni": ""},
	}}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			s, err := Load(tt.dir)
			if err != nil {
				t.Fatal(err)
			}
			if s.Provider != tt.provider || s.Name != tt.name || s.KubernetesVersion != tt.version || s.MetadataFile != CsctlFile {
				t.Errorf("metadata = %s/%s %s from %s", s.Provider, s.Name, s.KubernetesVersion, s.MetadataFile)
			}
			if got := componentNames(s.Components); !reflect.DeepEqual(got, tt.components) {
				t.Errorf("components = %v, want %v", got, tt.components)
			}
			for _, c := range s.Components {
				if c.Kind != KindHelm || c.ValuesFile != tt.valuesFile[c.Name] {
					t.Errorf("%s: kind %s, values file %q; want Helm, %q", c.Name, c.Kind, c.ValuesFile, tt.valuesFile[c.Name])
				}
			}
			if s.AddonValuesFile != tt.addonFile || (tt.addonFile != "") != strings.Contains(s.AddonValuesTemplate, "commonLabels") {
				t.Errorf("addon values = %q from %q, want from %q", s.AddonValuesTemplate, s.AddonValuesFile, tt.addonFile)
			}
		})
	}
}

func TestLintSCSLayouts(t *testing.T) {
	for _, dir := range []string{scsVendored, scsShared, scsFetched} {
		t.Run(dir, func(t *testing.T) {
			for _, p := range Lint(dir, "v1") {
				t.Errorf("%s", p)
			}
		})
	}
	t.Run("openstack/scs with its subcharts vendored", func(t *testing.T) {
		for _, p := range Lint(vendoredCopy(t), "v1") {
			t.Errorf("%s", p)
		}
	})
}

func TestLintSCSLayoutProblems(t *testing.T) {
	tests := []struct {
		name   string
		dir    func(t *testing.T) string
		mutate func(t *testing.T, dir string)
		want   []wantProblem
	}{{
		// The subchart is rendered with the values of overwrite.yaml: without them its
		// required name is missing.
		name:   "vendored: subchart rendered with overwrite.yaml's values",
		dir:    vendoredCopy,
		mutate: func(t *testing.T, dir string) { removeFile(t, dir, "cluster-addon/ccm/overwrite.yaml") },
		want:   []wantProblem{{"cluster-addon/ccm/charts/openstack-cloud-controller-manager/templates/configmap.yaml", "name is required"}},
	}, {
		name: "vendored subchart of another version",
		dir:  vendoredCopy,
		mutate: func(t *testing.T, dir string) {
			replaceInFile(t, dir, "cluster-addon/metrics-server/Chart.yaml", "version: 0.1.x", "version: 0.2.x")
		},
		want: []wantProblem{
			{"cluster-addon/metrics-server/Chart.yaml", `dependency "greeter" 0.2.x from https://charts.example.com/greeter: the vendored chart does not match`},
			// Helm applies no alias to a subchart of another version: the values miss it.
			{"cluster-addon/metrics-server/charts/greeter/templates/configmap.yaml", "name is required"},
		},
	}, {
		name: "not vendored: Chart.lock pins another version",
		dir:  func(t *testing.T) string { return copyStack(t, scsVendored) },
		mutate: func(t *testing.T, dir string) {
			replaceInFile(t, dir, "cluster-addon/ccm/Chart.lock", "version: 0.1.0", "version: 0.0.9")
		},
		want: []wantProblem{{"cluster-addon/ccm/Chart.lock", `dependency "greeter" is locked to 0.0.9 from https://charts.example.com/greeter, but Chart.yaml asks for 0.1.0`}},
	}, {
		name: "not vendored: Chart.lock without the dependency",
		dir:  func(t *testing.T) string { return copyStack(t, scsVendored) },
		mutate: func(t *testing.T, dir string) {
			replaceInFile(t, dir, "cluster-addon/ccm/Chart.lock", "- name: greeter", "- name: other")
		},
		want: []wantProblem{{"cluster-addon/ccm/Chart.lock", `dependency "greeter" is missing: Flux fetches the dependencies the lock file lists`}},
	}, {
		name: "not vendored, but as many charts under charts/ as dependencies",
		dir:  func(t *testing.T) string { return copyStack(t, scsVendored) },
		mutate: func(t *testing.T, dir string) {
			writeFile(t, dir, "cluster-addon/ccm/charts/old/Chart.yaml", "apiVersion: v2\nname: old\nversion: 1.0.0\n")
		},
		want: []wantProblem{{"cluster-addon/ccm/Chart.yaml", "cluster-addon/ccm/charts/ holds 1 charts (cluster-addon/ccm/charts/old) for 1 dependencies, so Flux assumes none is missing and does not fetch greeter"}},
	}, {
		name: "shared values: as SCS wrote them",
		dir:  func(t *testing.T) string { return copyStack(t, scsShared) },
	}, {
		name: "shared values: a key that is neither a component nor a subchart",
		dir:  func(t *testing.T) string { return copyStack(t, scsShared) },
		mutate: func(t *testing.T, dir string) {
			appendFile(t, dir, ClusterAddonValuesFile, "  metrics_server:\n    replicas: 2\n")
		},
		want: []wantProblem{{ClusterAddonValuesFile, `key "metrics_server" is neither a component of this stack (components: cni, metrics-server) nor a subchart of one`}},
	}, {
		name: "an apiVersion v1 chart whose requirements.yaml does not parse",
		dir:  func(t *testing.T) string { return copyStack(t, scsShared) },
		mutate: func(t *testing.T, dir string) {
			writeFile(t, dir, "cluster-addon/metrics-server/Chart.yaml", "apiVersion: v1\nname: yorizonpoc-metrics-server\nversion: v1\n")
			writeFile(t, dir, "cluster-addon/metrics-server/requirements.yaml", "dependencies: [\n")
		},
		want: []wantProblem{
			{"cluster-addon/metrics-server/requirements.yaml", "not valid YAML"},
			{"cluster-addon/metrics-server/", "helm cannot load the chart: cannot load requirements.yaml"},
		},
	}, {
		name: "shared values: a subchart's key is no problem",
		dir:  func(t *testing.T) string { return copyStack(t, scsShared) },
		mutate: func(t *testing.T, dir string) {
			appendFile(t, dir, "cluster-addon/cni/Chart.yaml", "dependencies:\n  - name: cilium\n    version: 1.16.6\n    repository: https://helm.cilium.io/\n")
			writeFile(t, dir, "cluster-addon/cni/charts/cilium/Chart.yaml", "apiVersion: v2\nname: cilium\nversion: 1.16.6\n")
			appendFile(t, dir, ClusterAddonValuesFile, "  cilium:\n    ipam: {mode: kubernetes}\n")
		},
	}, {
		name:   "shared values: an entry that is no mapping",
		dir:    func(t *testing.T) string { return copyStack(t, scsShared) },
		mutate: func(t *testing.T, dir string) { appendFile(t, dir, ClusterAddonValuesFile, "  cni: calico\n") },
		want:   []wantProblem{{ClusterAddonValuesFile, `the entry "cni" is a string, not a mapping of the component's values: write the component's (or subchart's) values below its name`}},
	}, {
		name:   "shared values: output that is no mapping",
		dir:    func(t *testing.T) string { return copyStack(t, scsShared) },
		mutate: func(t *testing.T, dir string) { writeFile(t, dir, ClusterAddonValuesFile, "values: |\n  - cni\n") },
		want:   []wantProblem{{ClusterAddonValuesFile, "does not produce a YAML mapping of component names to values"}},
	}, {
		name: "shared values: a kustomize component's variables",
		dir:  func(t *testing.T) string { return copyStack(t, scsShared) },
		mutate: func(t *testing.T, dir string) {
			appendFile(t, dir, ClusterAddonValuesFile, "  cluster-info:\n    info:\n      domain: example.com\n")
			writeFile(t, dir, "cluster-addon/cluster-info/configmap.yaml",
				"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cluster-info\ndata:\n  domain: ${info_domain}\n  zone: ${info_zone}\n")
		},
		want: []wantProblem{{"cluster-addon/cluster-info/", "${info_zone} is neither an operator variable nor a flattened key of the overwrite.yaml or cluster-addon-values.yaml values"}},
	}, {
		name: "fetched: no repository",
		dir:  func(t *testing.T) string { return copyStack(t, scsFetched) },
		mutate: func(t *testing.T, dir string) {
			replaceInFile(t, dir, "cluster-addon/ccm/Chart.yaml", "    repository: http://127.0.0.1:1/charts\n", "")
		},
		want: []wantProblem{{"cluster-addon/ccm/Chart.yaml", `dependency "greeter" 0.1.0 has no repository and is not vendored under cluster-addon/ccm/charts/`}},
	}, {
		name: "fetched: a repository alias",
		dir:  func(t *testing.T) string { return copyStack(t, scsFetched) },
		mutate: func(t *testing.T, dir string) {
			replaceInFile(t, dir, "cluster-addon/ccm/Chart.yaml", "http://127.0.0.1:1/charts", "alias:greeter")
		},
		want: []wantProblem{{"cluster-addon/ccm/Chart.yaml", `repository "alias:greeter" names a repository of a local helm configuration`}},
	}, {
		name: "fetched: a file:// chart that is not there",
		dir:  func(t *testing.T) string { return copyStack(t, scsFetched) },
		mutate: func(t *testing.T, dir string) {
			replaceInFile(t, dir, "cluster-addon/ccm/Chart.yaml", "http://127.0.0.1:1/charts", "file://../greeter")
		},
		want: []wantProblem{{"cluster-addon/ccm/Chart.yaml", `dependency "greeter": file://../greeter is no chart (no Chart.yaml at cluster-addon/greeter)`}},
	}, {
		name: "fetched: from an OCI registry",
		dir:  func(t *testing.T) string { return copyStack(t, scsFetched) },
		mutate: func(t *testing.T, dir string) {
			replaceInFile(t, dir, "cluster-addon/ccm/Chart.yaml", "http://127.0.0.1:1/charts", "oci://127.0.0.1:1/charts")
		},
	}, {
		// Lint cannot tell what the missing subchart would define: no false problem.
		name: "fetched: a template using the missing subchart",
		dir:  func(t *testing.T) string { return copyStack(t, scsFetched) },
		mutate: func(t *testing.T, dir string) {
			writeFile(t, dir, "cluster-addon/ccm/templates/name.yaml", "{{ include \"greeter.name\" . }}\n")
		},
	}, {
		name: "fetched: templates are still parsed",
		dir:  func(t *testing.T) string { return copyStack(t, scsFetched) },
		mutate: func(t *testing.T, dir string) {
			writeFile(t, dir, "cluster-addon/ccm/templates/name.yaml", "{{ include \"greeter.name\" . \n")
		},
		want: []wantProblem{{"cluster-addon/ccm/templates/name.yaml", "Helm template does not parse"}},
	}, {
		name: "fetched: rendered objects are still checked",
		dir:  func(t *testing.T) string { return copyStack(t, scsFetched) },
		mutate: func(t *testing.T, dir string) {
			writeFile(t, dir, "cluster-addon/cni/templates/broken.yaml", "apiVersion: v1\ndata:\n  a: b\n")
		},
		want: []wantProblem{{"cluster-addon/cni/templates/broken.yaml", "rendered document 1 is not a Kubernetes object"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tt.dir(t)
			if tt.mutate != nil {
				tt.mutate(t, dir)
			}
			checkProblems(t, Lint(dir, "v1"), tt.want)
		})
	}
}

// checkProblems fails unless got has exactly one problem matching each of want.
func checkProblems(t *testing.T, got []Problem, want []wantProblem) {
	t.Helper()
	matched := make([]bool, len(got))
	for _, w := range want {
		found := false
		for i, p := range got {
			if p.File == w.file && strings.Contains(p.Message, w.msg) {
				found, matched[i] = true, true
			}
		}
		if !found {
			t.Errorf("missing problem %s: %s", w.file, w.msg)
		}
	}
	for i, p := range got {
		if !matched[i] {
			t.Errorf("unexpected problem %s", p)
		}
	}
}

// TestRenderComponentsRouting renders the stacks' value templates as the operator does per
// cluster (render.Render over Stack.RenderComponents).
func TestRenderComponentsRouting(t *testing.T) {
	tests := []struct {
		name   string
		dir    string
		mutate func(t *testing.T, dir string)
		want   map[string]string // ConfigMap keys to values
	}{{
		name: "docker/scs: the shared file's entry goes to the subchart of its alias only",
		dir:  scsShared,
		want: map[string]string{
			"helm_values_metrics_server": "metrics-server:\n  commonLabels:\n    domain: api.c1.example.com\n",
			"helm_values_cni":            "{}\n",
		},
	}, {
		name: "overwrite.yaml is deep-merged over the shared entry and wins",
		dir:  scsShared,
		mutate: func(t *testing.T, dir string) {
			writeFile(t, dir, "cluster-addon/metrics-server/overwrite.yaml", "values: |\n  metrics-server:\n    commonLabels:\n      team: a\n      domain: own.example.com\n")
		},
		want: map[string]string{"helm_values_metrics_server": "metrics-server:\n  commonLabels:\n    domain: own.example.com\n    team: a\n"},
	}, {
		name: "an apiVersion v1 chart's subchart, from requirements.yaml",
		dir:  scsShared,
		mutate: func(t *testing.T, dir string) {
			writeFile(t, dir, "cluster-addon/metrics-server/Chart.yaml", "apiVersion: v1\nname: yorizonpoc-metrics-server\nversion: v1\n")
			writeFile(t, dir, "cluster-addon/metrics-server/requirements.yaml",
				"dependencies:\n  - name: metrics-server\n    version: 3.12.2\n    repository: https://kubernetes-sigs.github.io/metrics-server/\n    alias: metrics-server\n")
		},
		want: map[string]string{"helm_values_metrics_server": "metrics-server:\n  commonLabels:\n    domain: api.c1.example.com\n"},
	}, {
		name: "a component's own key is its chart's own values",
		dir:  scsShared,
		mutate: func(t *testing.T, dir string) {
			appendFile(t, dir, ClusterAddonValuesFile, "  cni:\n    ipam: kubernetes\n")
		},
		want: map[string]string{"helm_values_cni": "ipam: kubernetes\n"},
	}, {
		name: "a kustomize component's entry becomes substitution variables",
		dir:  scsShared,
		mutate: func(t *testing.T, dir string) {
			appendFile(t, dir, ClusterAddonValuesFile, "  cluster-info:\n    info:\n      domain: \"{{ .Cluster.metadata.name }}.example.com\"\n")
			writeFile(t, dir, "cluster-addon/cluster-info/configmap.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cluster-info\n")
		},
		want: map[string]string{"info_domain": "c1.example.com"},
	}, {
		name: "openstack/scs: overwrite.yaml only",
		dir:  scsVendored,
		want: map[string]string{"helm_values_ccm": "openstack-cloud-controller-manager:\n  name: c1\n"},
	}, {
		name: "old umbrella stack: cluster-addon-values.yaml is the umbrella's template",
		dir:  "testdata/scs/docker/ferrol/1-28",
		want: map[string]string{"helm_values_cluster_addon": "metrics-server:\n  commonLabels:\n    domain: api.c1.example.com\n  k8sServiceHost: api.c1.example.com\nworkloadLoadBalancer: yawol\nyawolFloatingID: net-1\n"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyStack(t, tt.dir)
			if tt.mutate != nil {
				tt.mutate(t, dir)
			}
			s, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			data, err := render.Render(sampleTemplateData(), s.RenderComponents())
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.want {
				if data[k] != v {
					t.Errorf("%s = %q, want %q", k, data[k], v)
				}
			}
		})
	}
}

// TestRenderComponents: every component carries the shared template, the umbrella does not.
func TestRenderComponents(t *testing.T) {
	s, err := Load(scsShared)
	if err != nil {
		t.Fatal(err)
	}
	got := s.RenderComponents()
	if len(got) != 2 {
		t.Fatalf("RenderComponents() = %+v", got)
	}
	for _, c := range got {
		if !c.Helm || c.SharedFile != ClusterAddonValuesFile || c.Shared != s.AddonValuesTemplate || c.Template != "" {
			t.Errorf("%s = %+v", c.Name, c)
		}
	}
	old, err := Load("testdata/scs/docker/ferrol/1-28")
	if err != nil {
		t.Fatal(err)
	}
	if got := old.RenderComponents(); len(got) != 1 || got[0].Shared != "" || got[0].File != ClusterAddonValuesFile || got[0].Template == "" {
		t.Errorf("umbrella RenderComponents() = %+v", got)
	}
}

// TestDigestCoversAddonValues: a change of the shared values file changes the addons' digests.
func TestDigestCoversAddonValues(t *testing.T) {
	dir := copyStack(t, scsShared)
	before, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	appendFile(t, dir, ClusterAddonValuesFile, "  cni:\n    mtu: 1400\n")
	after, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range before.Components {
		if c.Digest == after.Components[i].Digest {
			t.Errorf("digest of %s did not change", c.Name)
		}
	}
	if before.ClusterClass.Digest != after.ClusterClass.Digest {
		t.Error("digest of the cluster-class changed")
	}
}

// TestSCSDockerValuesReachTheDeployment renders docker/scs's metrics-server component as Flux
// delivers it into a Cluster, with the values the operator renders for that Cluster: SCS's
// cluster-addon-values.yaml label reaches the Deployment of the wrapped chart, beside the
// wrapper's own values.
func TestSCSDockerValuesReachTheDeployment(t *testing.T) {
	s, err := Load(copyStack(t, scsShared))
	if err != nil {
		t.Fatal(err)
	}
	data, err := render.Render(sampleTemplateData(), s.RenderComponents())
	if err != nil {
		t.Fatal(err)
	}
	c, ok := s.Component("metrics-server")
	if !ok {
		t.Fatal("no component metrics-server")
	}
	objs, err := s.NewAddonRenderer().Render(c, AddonRender{ReleaseName: "c1-metrics-server", Namespace: "kube-system",
		Values: data, ValuesKey: render.HelmValuesKey(c.Name)})
	if err != nil {
		t.Fatal(err)
	}
	var deployments []map[string]any
	for _, o := range objs {
		if o.Object["kind"] == "Deployment" {
			deployments = append(deployments, o.Object)
		}
	}
	if len(deployments) != 1 {
		t.Fatalf("rendered %d Deployments, want 1: %v", len(deployments), objs)
	}
	md := deployments[0]["metadata"].(map[string]any)
	if md["name"] != "metrics-server" {
		t.Errorf("Deployment name %v, want metrics-server (the wrapper's values.yaml)", md["name"])
	}
	if labels, _ := md["labels"].(map[string]any); labels["domain"] != "api.c1.example.com" {
		t.Errorf("Deployment labels %v, want domain: api.c1.example.com (cluster-addon-values.yaml)", md["labels"])
	}
}

func TestSCSNotes(t *testing.T) {
	tests := []struct {
		name   string
		dir    string
		mutate func(t *testing.T, dir string)
		want   []wantProblem
	}{{
		name: "docker/scs: the file csctl leaves out, and the subchart its entry reaches",
		dir:  scsShared,
		want: []wantProblem{
			{ClusterAddonValuesFile, "SCS's csctl leaves this file out of a release when the stack has a clusteraddon.yaml"},
			{ClusterAddonValuesFile, `entry "metrics-server" is values for the subchart "metrics-server" of component metrics-server (cluster-addon/metrics-server/Chart.yaml)`},
		},
	}, {
		name: "an entry nested twice",
		dir:  scsShared,
		mutate: func(t *testing.T, dir string) {
			writeFile(t, dir, ClusterAddonValuesFile, "values: |\n  metrics-server:\n    metrics-server:\n      replicas: 2\n")
		},
		want: []wantProblem{
			{ClusterAddonValuesFile, "SCS's csctl leaves this file out"},
			{ClusterAddonValuesFile, `entry "metrics-server" is values for the subchart`},
			{ClusterAddonValuesFile, `entry "metrics-server" holds only "metrics-server", so the subchart gets its values nested twice`},
		},
	}, {
		name: "without clusteraddon.yaml the file ships, keyed by component: nothing to say",
		dir:  scsShared,
		mutate: func(t *testing.T, dir string) {
			removeFile(t, dir, "clusteraddon.yaml")
			writeFile(t, dir, ClusterAddonValuesFile, "values: |\n  cni:\n    ipam: kubernetes\n")
		},
	}, {
		name: "openstack/scs: no shared file, nothing to say",
		dir:  scsVendored,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyStack(t, tt.dir)
			if tt.mutate != nil {
				tt.mutate(t, dir)
			}
			if _, err := Load(dir); err != nil {
				t.Fatal(err) // a stack that does not load has no notes
			}
			checkProblems(t, SCSNotes(dir), tt.want)
		})
	}
}
