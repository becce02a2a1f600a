package upgradediff

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clusterstack-io/clusterstack-operator/internal/render"
	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
)

// files is a stack directory's content by path.
type files map[string]string

// baseStack is a small stack: a cluster-class chart, a Helm component cni whose values come
// from the Cluster, and a kustomize component info whose ConfigMap takes substitution variables.
var baseStack = files{
	"stack.yaml":                       "provider: test\nclusterStackName: demo\nkubernetesVersion: 1.36.3\n",
	"cluster-class/Chart.yaml":         "apiVersion: v2\nname: cluster-class\nversion: v1\n",
	"cluster-class/templates/cc.yaml":  "apiVersion: cluster.x-k8s.io/v1beta2\nkind: ClusterClass\nmetadata:\n  name: {{ .Release.Name }}-{{ .Chart.Version }}\nspec: {}\n",
	"cluster-addon/cni/Chart.yaml":     "apiVersion: v2\nname: cni\nversion: 1.0.0\n",
	"cluster-addon/cni/values.yaml":    "podCIDR: \"\"\nmtu: 1450\n",
	"cluster-addon/cni/overwrite.yaml": "values: |\n  podCIDR: \"{{ index .Cluster.spec.clusterNetwork.pods.cidrBlocks 0 }}\"\n",
	"cluster-addon/cni/templates/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cni-config\ndata:\n" +
		"  pod-cidr: {{ .Values.podCIDR | quote }}\n  mtu: {{ .Values.mtu | quote }}\n",
	"cluster-addon/info/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - configmap.yaml\n",
	"cluster-addon/info/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: info\n  namespace: kube-system\ndata:\n" +
		"  cluster: \"${cluster_name}\"\n  region: \"${infra_region}\"\n",
	"cluster-addon/info/overwrite.yaml": "values: |\n  infra:\n    region: \"{{ .InfraCluster.spec.region }}\"\n",
}

// with returns a copy of f with changes applied; a change to "" deletes the file.
func (f files) with(changes files) files {
	out := maps.Clone(f)
	for k, v := range changes {
		if v == "" {
			delete(out, k)
			continue
		}
		out[k] = v
	}
	return out
}

// without returns a copy of f without the files under dir.
func (f files) without(dir string) files {
	out := maps.Clone(f)
	for k := range out {
		if strings.HasPrefix(k, dir+"/") {
			delete(out, k)
		}
	}
	return out
}

func writeStack(t *testing.T, f files) *stack.Stack {
	t.Helper()
	s, err := stack.Load(writeStackDir(t, f))
	if err != nil {
		t.Fatalf("load the test stack: %v", err)
	}
	return s
}

// writeStackDir writes the files into a new stack directory and returns it.
func writeStackDir(t *testing.T, f files) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "stack")
	for p, content := range f {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func release(t *testing.T, version string, f files) Release {
	t.Helper()
	return Release{Release: render.Release{Name: "test-demo-1-36-" + version, Version: version, KubernetesVersion: "v1.36.3"}, Stack: writeStack(t, f)}
}

// alpha is a Cluster with what the stack's templates read.
var alpha = Cluster{Namespace: "team-a", Name: "alpha", Objects: render.Input{
	Cluster: map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
		"metadata": map[string]any{"name": "alpha", "namespace": "team-a"},
		"spec": map[string]any{
			"clusterNetwork":       map[string]any{"pods": map[string]any{"cidrBlocks": []any{"10.1.0.0/16"}}},
			"controlPlaneEndpoint": map[string]any{"host": "alpha.example.com", "port": int64(6443)},
			"topology":             map[string]any{"version": "v1.36.3"},
		},
	},
	InfraCluster: map[string]any{"kind": "AWSCluster", "metadata": map[string]any{"name": "alpha"}, "spec": map[string]any{"region": "eu-north-1"}},
}}

// Changes of the second release.
var (
	// cniWithRBAC bumps the cni chart and adds a ClusterRole, a CRD in templates/ and one in crds/.
	cniWithRBAC = files{
		"cluster-addon/cni/Chart.yaml": "apiVersion: v2\nname: cni\nversion: 1.1.0\n",
		"cluster-addon/cni/templates/clusterrole.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: cni\nrules:\n" +
			"  - apiGroups: [\"\"]\n    resources: [nodes]\n    verbs: [get, list, watch]\n",
		"cluster-addon/cni/templates/crd.yaml":     crdYAML("networks.cni.example.com", "cni.example.com", "Network", "Cluster"),
		"cluster-addon/cni/crds/policies.yaml":     crdYAML("policies.cni.example.com", "cni.example.com", "Policy", "Namespaced"),
		"cluster-addon/cni/templates/network.yaml": "apiVersion: cni.example.com/v1\nkind: Network\nmetadata:\n  name: default\nspec:\n  cidr: {{ .Values.podCIDR | quote }}\n",
	}
	// infraWithLabel changes the info ConfigMap.
	infraWithLabel = files{
		"cluster-addon/info/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: info\n  namespace: kube-system\ndata:\n" +
			"  cluster: \"${cluster_name}\"\n  region: \"${infra_region}\"\n  endpoint: \"${control_plane_endpoint_host}\"\n",
	}
)

func crdYAML(name, group, kind, scope string) string {
	return "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: " + name + "\nspec:\n  group: " + group +
		"\n  names:\n    kind: " + kind + "\n    plural: " + strings.ToLower(kind) + "s\n  scope: " + scope +
		"\n  versions:\n    - name: v1\n      served: true\n      storage: true\n      schema:\n        openAPIV3Schema:\n          type: object\n          x-kubernetes-preserve-unknown-fields: true\n"
}

// objectLine is an object change as the tests compare it: "<change> <Kind> <ns/name> (<component>) [cluster-scoped] [CRD] [note]".
func objectLine(o ObjectChange) string {
	s := o.Change + " " + o.Ref() + " (" + o.Component + ")"
	if o.ClusterScoped {
		s += " cluster-scoped"
	}
	if o.CRD {
		s += " CRD"
	}
	if o.Note != "" {
		s += " note"
	}
	return s
}

func componentLine(c Component) string {
	return c.Name + " " + c.Change + " " + kinds(c, "->") + " " + versions(c, "->")
}

func TestCompute(t *testing.T) {
	tests := []struct {
		name       string
		from, to   files
		components []string
		objects    []string
		// values: per values diff, "<component>" and lines its diff must contain.
		values      map[string][]string
		diffs       map[string][]string // object Ref -> lines its diff must contain
		errors      []string
		hasChanges  bool
		noValuesFor []string
	}{
		{
			name: "nothing changes but the release: the variables naming it",
			from: baseStack, to: baseStack.with(files{"cluster-class/Chart.yaml": "apiVersion: v2\nname: cluster-class\nversion: v2\n"}),
			components: []string{"cluster-class Changed Helm v1 -> v2", "cni Unchanged Helm 1.0.0", "info Unchanged Kustomize " + digestOf(t, baseStack, "info")},
			values:     map[string][]string{"": {"-stack_release: test-demo-1-36-v1", "+stack_release: test-demo-1-36-v2", "-stack_version: v1", "+stack_version: v2"}},
			hasChanges: true, noValuesFor: []string{"cni", "info"},
		},
		{
			name: "a chart whose version changes and adds a ClusterRole and CRDs: cluster-scoped objects and CRDs first",
			from: baseStack, to: baseStack.with(cniWithRBAC),
			components: []string{"cluster-class Unchanged Helm v1", "cni Changed Helm 1.0.0 -> 1.1.0", "info Unchanged Kustomize " + digestOf(t, baseStack, "info")},
			objects: []string{
				"Added CustomResourceDefinition networks.cni.example.com (cni) cluster-scoped CRD",
				"Added CustomResourceDefinition policies.cni.example.com (cni) cluster-scoped CRD note",
				"Added ClusterRole cni (cni) cluster-scoped",
				"Added Network default (cni) cluster-scoped",
			},
			diffs: map[string][]string{
				"ClusterRole cni": {"@@ -0,0 +1,13 @@", "+kind: ClusterRole", "+  - nodes"},
				"Network default": {`+  cidr: 10.1.0.0/16`},
			},
			hasChanges: true,
		},
		{
			name: "a kustomize directory whose ConfigMap changes: the substituted object's diff",
			from: baseStack, to: baseStack.with(infraWithLabel),
			components: []string{"cluster-class Unchanged Helm v1", "cni Unchanged Helm 1.0.0", "info Changed Kustomize " + digestOf(t, baseStack, "info") + " -> " + digestOf(t, baseStack.with(infraWithLabel), "info")},
			objects:    []string{"Changed ConfigMap kube-system/info (info)"},
			diffs:      map[string][]string{"ConfigMap kube-system/info": {"+  endpoint: alpha.example.com", "   region: eu-north-1"}},
			hasChanges: true,
		},
		{
			name: "a value of a Helm component changes: its values diff and the objects it renders",
			from: baseStack,
			to: baseStack.with(files{
				"cluster-addon/cni/Chart.yaml":     "apiVersion: v2\nname: cni\nversion: 1.0.1\n",
				"cluster-addon/cni/overwrite.yaml": "values: |\n  podCIDR: \"{{ index .Cluster.spec.clusterNetwork.pods.cidrBlocks 0 }}\"\n  mtu: 9000\n",
			}),
			components: []string{"cluster-class Unchanged Helm v1", "cni Changed Helm 1.0.0 -> 1.0.1", "info Unchanged Kustomize " + digestOf(t, baseStack, "info")},
			objects:    []string{"Changed ConfigMap kube-system/cni-config (cni)"},
			values:     map[string][]string{"cni": {"+mtu: 9000"}},
			diffs:      map[string][]string{"ConfigMap kube-system/cni-config": {`-  mtu: "1450"`, `+  mtu: "9000"`}},
			hasChanges: true,
		},
		{
			name: "a component added, one removed",
			from: baseStack,
			to: baseStack.without("cluster-addon/info").with(files{
				"cluster-addon/extra/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - sa.yaml\n",
				"cluster-addon/extra/sa.yaml":            "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: extra\n  namespace: kube-system\n",
			}),
			components: []string{"cluster-class Unchanged Helm v1", "cni Unchanged Helm 1.0.0", "extra Added Kustomize - -> " + digestOf(t, baseStack.with(files{
				"cluster-addon/extra/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - sa.yaml\n",
				"cluster-addon/extra/sa.yaml":            "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: extra\n  namespace: kube-system\n",
			}), "extra"), "info Removed Kustomize " + digestOf(t, baseStack, "info") + " -> -"},
			objects:    []string{"Added ServiceAccount kube-system/extra (extra)", "Removed ConfigMap kube-system/info (info)"},
			values:     map[string][]string{"info": {"-infra_region: eu-north-1"}},
			hasChanges: true,
		},
		{
			name: "a values template failing for the Cluster at the new release: an error, the component not diffed",
			from: baseStack,
			to:   baseStack.with(files{"cluster-addon/info/overwrite.yaml": "values: |\n  infra:\n    region: \"{{ .InfraCluster.spec.zone }}\"\n"}),
			components: []string{"cluster-class Unchanged Helm v1", "cni Unchanged Helm 1.0.0",
				"info Changed Kustomize " + digestOf(t, baseStack, "info") + " -> " + digestOf(t, baseStack.with(files{"cluster-addon/info/overwrite.yaml": "values: |\n  infra:\n    region: \"{{ .InfraCluster.spec.zone }}\"\n"}), "info")},
			errors: []string{
				"release test-demo-1-36-v2: the values do not render, so the operator waits instead of moving the Cluster: component info: cluster-addon/info/overwrite.yaml: output line 2: a value the template prints is missing from the data",
				"component info: its values do not render at test-demo-1-36-v2: not diffed",
			},
			hasChanges: true,
		},
		{
			name: "the same stack: no changes", from: baseStack, to: baseStack,
			components: []string{"cluster-class Unchanged Helm v1", "cni Unchanged Helm 1.0.0", "info Unchanged Kustomize " + digestOf(t, baseStack, "info")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			to := release(t, "v2", tt.to)
			from := release(t, "v1", tt.from)
			if tt.from.equal(tt.to) {
				to = release(t, "v1", tt.to)
			}
			d, err := Compute(Input{From: from, To: to, Clusters: []Cluster{alpha}})
			if err != nil {
				t.Fatal(err)
			}
			var comps []string
			for _, c := range d.Components {
				comps = append(comps, componentLine(c))
			}
			expectList(t, "components", comps, tt.components)
			c := d.Clusters[0]
			var objs []string
			for _, o := range c.Objects {
				objs = append(objs, objectLine(o))
			}
			expectList(t, "objects", objs, tt.objects)
			for ref, lines := range tt.diffs {
				found := false
				for _, o := range c.Objects {
					if o.Ref() == ref {
						found = true
						expectLines(t, "diff of "+ref, o.Diff, lines)
					}
				}
				if !found {
					t.Errorf("no object %s", ref)
				}
			}
			for comp, lines := range tt.values {
				found := false
				for _, v := range c.Values {
					if v.Component == comp {
						found = true
						expectLines(t, "values of "+comp, v.Diff, lines)
					}
				}
				if !found {
					t.Errorf("no values diff of %q; values: %+v", comp, c.Values)
				}
			}
			for _, comp := range tt.noValuesFor {
				for _, v := range c.Values {
					if v.Component == comp {
						t.Errorf("values of %s differ, want none:\n%s", comp, v.Diff)
					}
				}
			}
			if len(c.Errors) != len(tt.errors) {
				t.Errorf("errors %q, want %d like %q", c.Errors, len(tt.errors), tt.errors)
			}
			for i := range min(len(c.Errors), len(tt.errors)) {
				if !strings.HasPrefix(c.Errors[i], tt.errors[i]) {
					t.Errorf("error %d: %q, want it to start with %q", i, c.Errors[i], tt.errors[i])
				}
			}
			if d.HasChanges() != tt.hasChanges {
				t.Errorf("HasChanges() = %t, want %t", d.HasChanges(), tt.hasChanges)
			}
		})
	}
}

func (f files) equal(g files) bool { return maps.Equal(f, g) }

// digestOf is the kustomize version of a component of a stack.
func digestOf(t *testing.T, f files, component string) string {
	t.Helper()
	c, ok := writeStack(t, f).Component(component)
	if !ok {
		t.Fatalf("no component %s", component)
	}
	return c.Version
}

func expectList(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n%s\nwant:\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func expectLines(t *testing.T, what, text string, lines []string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains("\n"+text, "\n"+l+"\n") && !strings.HasPrefix(text, l+"\n") {
			t.Errorf("%s lacks the line %q:\n%s", what, l, text)
		}
	}
}

// secretStack's cni chart puts a value into a Secret, and has one under a key naming a password.
var secretStack = baseStack.with(files{
	"cluster-addon/cni/values.yaml": "podCIDR: \"\"\nmtu: 1450\nconnection: \"\"\ndb:\n  password: \"\"\n",
	"cluster-addon/cni/overwrite.yaml": "values: |\n  podCIDR: \"{{ index .Cluster.spec.clusterNetwork.pods.cidrBlocks 0 }}\"\n" +
		"  connection: \"{{ .Cluster.spec.topology.variables | first | dig \"value\" \"\" }}\"\n  db:\n    password: \"pw-{{ .Cluster.metadata.name }}-old\"\n",
	"cluster-addon/cni/templates/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: cni-credentials\nstringData:\n" +
		"  connection: {{ .Values.connection | quote }}\n  password: {{ .Values.db.password | quote }}\n  fixed: unchanged-value\n",
	"cluster-addon/cni/templates/deployment.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cni-env\ndata:\n  copied: {{ .Values.connection | quote }}\n",
})

func TestRedaction(t *testing.T) {
	cluster := alpha
	cluster.Objects.Cluster = cloneMap(alpha.Objects.Cluster)
	spec := cluster.Objects.Cluster["spec"].(map[string]any)
	spec["topology"] = map[string]any{"version": "v1.36.3", "variables": []any{map[string]any{"name": "connection", "value": "postgres://app:hunter2-secret@db.example.com/app"}}}

	from := release(t, "v1", secretStack)
	to := release(t, "v2", secretStack.with(files{
		"cluster-addon/cni/Chart.yaml": "apiVersion: v2\nname: cni\nversion: 1.1.0\n",
		"cluster-addon/cni/overwrite.yaml": "values: |\n  podCIDR: \"{{ index .Cluster.spec.clusterNetwork.pods.cidrBlocks 0 }}\"\n" +
			"  connection: \"{{ .Cluster.spec.topology.variables | first | dig \"value\" \"\" }}?sslmode=require\"\n  db:\n    password: \"pw-{{ .Cluster.metadata.name }}-new\"\n",
	}))
	d, err := Compute(Input{From: from, To: to, Clusters: []Cluster{cluster}})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	if err := WriteText(&text, d, Painter{}); err != nil {
		t.Fatal(err)
	}
	md, _ := Markdown(d, MarkdownOptions{})
	data, _ := json.Marshal(d)
	for what, out := range map[string]string{"text": text.String(), "markdown": md, "json": string(data)} {
		for _, secret := range []string{"hunter2-secret", "pw-alpha-old", "pw-alpha-new", "unchanged-value", "app:hunter2"} {
			if strings.Contains(out, secret) {
				t.Errorf("%s output shows %q:\n%s", what, secret, out)
			}
		}
	}
	c := d.Clusters[0]
	var secret, env ObjectChange
	for _, o := range c.Objects {
		switch o.Ref() {
		case "Secret kube-system/cni-credentials":
			secret = o
		case "ConfigMap kube-system/cni-env":
			env = o
		}
	}
	expectLines(t, "the Secret's diff", secret.Diff, []string{"-  connection: '*** (before)'", "+  connection: '*** (after)'", "   fixed: '***'", "-  password: '*** (before)'", "+  password: '*** (after)'"})
	expectLines(t, "the ConfigMap copying the Secret's value", env.Diff, []string{"-  copied: ***", "+  copied: ***"})
	var cni ValuesDiff
	for _, v := range c.Values {
		if v.Component == "cni" {
			cni = v
		}
	}
	expectLines(t, "cni's values", cni.Diff, []string{"-connection: ***", "+connection: ***", "-  password: '*** (before)'", "+  password: '*** (after)'"})
}

func cloneMap(m map[string]any) map[string]any {
	return render.DeepCopyValue(m).(map[string]any)
}
