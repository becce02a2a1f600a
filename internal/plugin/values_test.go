package plugin

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clusterstack-io/clusterstack-operator/internal/render"
	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
)

// renderInput is a Cluster "one" with its control plane and infrastructure cluster, as the
// operator renders them (JSON maps; numbers as int64, as the unstructured converter gives them).
func renderInput() render.Input {
	return render.Input{
		Cluster: map[string]any{
			"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
			"metadata": map[string]any{"name": "one", "namespace": ns, "labels": map[string]any{"rollout": "canary"}},
			"spec": map[string]any{
				"clusterNetwork": map[string]any{
					"pods":          map[string]any{"cidrBlocks": []any{"10.1.0.0/16"}},
					"services":      map[string]any{"cidrBlocks": []any{"10.96.0.0/12"}},
					"serviceDomain": "cluster.local",
				},
				"controlPlaneEndpoint": map[string]any{"host": "10.0.0.1", "port": int64(6443)},
				"topology": map[string]any{
					"classRef": map[string]any{"name": "aws-base-1-36-v1"}, "version": "v1.36.3",
					"variables": []any{
						map[string]any{"name": "region", "value": "eu-north-1"},
						map[string]any{"name": "dns", "value": map[string]any{"zone": "example.org", "ttl": int64(60)}},
					},
				},
			},
			"status": map[string]any{"initialization": map[string]any{"controlPlaneInitialized": true}},
		},
		ControlPlane: map[string]any{
			"apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": "KubeadmControlPlane",
			"metadata": map[string]any{"name": "one-cp", "namespace": ns},
			"spec":     map[string]any{"replicas": int64(3), "version": "v1.36.3"},
		},
		InfraCluster: map[string]any{
			"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AWSCluster",
			"metadata": map[string]any{"name": "one-infra", "namespace": ns},
			"spec":     map[string]any{"region": "eu-north-1"},
		},
		Release: render.Release{Name: "aws-base-1-36-v1", Version: "v1", KubernetesVersion: "v1.36.3"},
	}
}

var (
	clusterOne = "Cluster/one"
	fromStack  = func(file string) []Origin { return []Origin{{Source: SourceStack, File: file}} }
	fromField  = func(src, obj, field string) Origin { return Origin{Source: src, Object: obj, Field: field} }
)

// referenceCNI is the reference stack's cni values template (stacks/aws/base/1-36).
func referenceCNI(t *testing.T) string {
	t.Helper()
	s, err := stack.Load(filepath.Join("..", "..", "stacks", "aws", "base", "1-36"))
	if err != nil {
		t.Fatal(err)
	}
	c, ok := s.Component("cni")
	if !ok || c.ValuesTemplate == "" {
		t.Fatal("the reference stack's cni has no values template")
	}
	return c.ValuesTemplate
}

func TestTraceComponent(t *testing.T) {
	tests := []struct {
		name  string
		stack stack.Stack
		comp  string
		want  map[string][]Origin
	}{
		{
			name:  "the reference stack's cni: each value from the Cluster field it prints",
			stack: stack.Stack{Components: []stack.Component{{Name: "cni", Kind: stack.KindHelm, ValuesTemplate: referenceCNI(t), ValuesFile: "cluster-addon/cni/overwrite.yaml"}}},
			comp:  "cni",
			want: map[string][]Origin{
				"podCIDR":        {fromField(SourceCluster, clusterOne, ".spec.clusterNetwork.pods.cidrBlocks[0]")},
				"serviceCIDR":    {fromField(SourceCluster, clusterOne, ".spec.clusterNetwork.services.cidrBlocks[0]")},
				"apiServer.host": {fromField(SourceCluster, clusterOne, ".spec.controlPlaneEndpoint.host")},
				"apiServer.port": {fromField(SourceCluster, clusterOne, ".spec.controlPlaneEndpoint.port")},
			},
		},
		{
			name: "every source: variables (with their path), control plane, infrastructure cluster, release, literals, and values of two fields",
			stack: stack.Stack{Components: []stack.Component{{Name: "ccm", Kind: stack.KindHelm, ValuesFile: "cluster-addon/ccm/overwrite.yaml", ValuesTemplate: `
region: {{ .Variables.region }}
zone: {{ .Variables.dns.zone }}
replicas: {{ .ControlPlane.spec.replicas }}
infraRegion: {{ .InfraCluster.spec.region }}
image: registry.example/ccm:{{ .Release.KubernetesVersion }}
stack: {{ .Release.Name }}
literal: fixed
list: [a, b]
endpoint: "{{ .Cluster.spec.controlPlaneEndpoint.host }}:{{ .Cluster.spec.controlPlaneEndpoint.port }}"
{{- with .ControlPlane }}
managed: true
{{- end }}
`}}},
			comp: "ccm",
			want: map[string][]Origin{
				"region":      {fromField(SourceVariable, clusterOne, "region")},
				"zone":        {fromField(SourceVariable, clusterOne, "dns.zone")},
				"replicas":    {fromField(SourceControlPlane, "KubeadmControlPlane/one-cp", ".spec.replicas")},
				"infraRegion": {fromField(SourceInfraCluster, "AWSCluster/one-infra", ".spec.region")},
				"image":       {fromField(SourceRelease, "ClusterStackRelease/aws-base-1-36-v1", ".status.kubernetesVersion")},
				"stack":       {fromField(SourceRelease, "ClusterStackRelease/aws-base-1-36-v1", ".metadata.name")},
				"literal":     fromStack("cluster-addon/ccm/overwrite.yaml"),
				"list[0]":     fromStack("cluster-addon/ccm/overwrite.yaml"),
				"list[1]":     fromStack("cluster-addon/ccm/overwrite.yaml"),
				"endpoint": {
					fromField(SourceCluster, clusterOne, ".spec.controlPlaneEndpoint.host"),
					fromField(SourceCluster, clusterOne, ".spec.controlPlaneEndpoint.port"),
				},
				"managed": {{Source: SourceControlPlane, Object: "KubeadmControlPlane/one-cp"}},
			},
		},
		{
			name: "a kustomize component: flattened variable names",
			stack: stack.Stack{Components: []stack.Component{{Name: "cluster-info", Kind: stack.KindKustomize, ValuesFile: "cluster-addon/cluster-info/overwrite.yaml",
				ValuesTemplate: "infra:\n  region: \"{{ .InfraCluster.spec.region }}\"\n  tier: gold\n"}}},
			comp: "cluster-info",
			want: map[string][]Origin{
				"infra_region": {fromField(SourceInfraCluster, "AWSCluster/one-infra", ".spec.region")},
				"infra_tier":   fromStack("cluster-addon/cluster-info/overwrite.yaml"),
			},
		},
		{
			name: "a shared cluster-addon-values.yaml: its entry as base, the component's own values win",
			stack: stack.Stack{
				AddonValuesFile: "cluster-addon-values.yaml",
				AddonValuesTemplate: "metrics:\n  domain: \"{{ .Cluster.spec.controlPlaneEndpoint.host }}\"\n  replicas: 1\n" +
					"other:\n  x: 1\n",
				Components: []stack.Component{{Name: "metrics", Kind: stack.KindHelm, ValuesFile: "cluster-addon/metrics/overwrite.yaml", ValuesTemplate: "replicas: 2\nname: {{ .Cluster.metadata.name }}\n"}},
			},
			comp: "metrics",
			want: map[string][]Origin{
				"domain":   {fromField(SourceCluster, clusterOne, ".spec.controlPlaneEndpoint.host")},
				"replicas": fromStack("cluster-addon/metrics/overwrite.yaml"),
				"name":     {fromField(SourceCluster, clusterOne, ".metadata.name")},
			},
		},
		{
			name: "only a shared file: its literals are the shared file's",
			stack: stack.Stack{
				AddonValuesFile: "cluster-addon-values.yaml", AddonValuesTemplate: "metrics:\n  replicas: 1\n",
				Components: []stack.Component{{Name: "metrics", Kind: stack.KindHelm}},
			},
			comp: "metrics",
			want: map[string][]Origin{"replicas": fromStack("cluster-addon-values.yaml")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, found := tt.stack.Component(tt.comp)
			if !found {
				t.Fatalf("the stack has no component %q", tt.comp)
			}
			tr := traceComponent(renderInput(), &tt.stack, c)
			if tr.err != nil {
				t.Fatal(tr.err)
			}
			got := map[string][]Origin{}
			for k, v := range tr.values {
				got[k] = tr.origins(k, v)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("origins (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBaseVariableFields checks the fields named for empty base variables against tracing a
// Cluster with every field set: they must agree, or render.BaseVariables changed.
func TestBaseVariableFields(t *testing.T) {
	in := renderInput()
	tr := traceLeaves(in, "", func(i render.Input, _ bool) (map[string]string, error) { return render.BaseVariables(i), nil })
	if got, want := slices.Sorted(maps.Keys(tr.values)), slices.Sorted(maps.Keys(baseVariableFields)); !slices.Equal(got, want) {
		t.Fatalf("base variables %v, the plugin knows %v", got, want)
	}
	for k, v := range tr.values {
		want, _ := baseVariableOrigin(k, in)
		if diff := cmp.Diff([]Origin{want}, tr.origins(k, v)); diff != "" {
			t.Errorf("%s (-fields +traced):\n%s", k, diff)
		}
	}
}

func valuesConfigMap(data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "one-aws-base-1-36-v1-values-0123456789ab"}, Data: data}
}

func TestClusterValuesOf(t *testing.T) {
	in := renderInput()
	refStack := stack.Stack{Components: []stack.Component{
		{Name: "cni", Kind: stack.KindHelm, ValuesTemplate: referenceCNI(t), ValuesFile: "cluster-addon/cni/overwrite.yaml"},
		{Name: "cluster-info", Kind: stack.KindKustomize, ValuesTemplate: "infra:\n  region: \"{{ .InfraCluster.spec.region }}\"\n", ValuesFile: "cluster-addon/cluster-info/overwrite.yaml"},
	}}
	data := render.BaseVariables(in)
	data["cluster_service_domain"] = ""
	data["helm_values_cni"] = "apiServer:\n  host: 10.0.0.1\n  port: 6443\npodCIDR: 10.1.0.0/16\nserviceCIDR: 10.96.0.0/12\n"
	data["infra_region"] = "eu-north-1"
	a := addon("one", "aws-base-1-36-v1")
	base := ValuesInput{Namespace: ns, Cluster: "one", Addon: &a, Objects: render.Input{Cluster: in.Cluster, ControlPlane: in.ControlPlane, InfraCluster: in.InfraCluster},
		Releases: map[string]ReleaseValues{"aws-base-1-36-v1": {Release: in.Release, ConfigMap: valuesConfigMap(data), Stack: &refStack}}}

	got := ClusterValuesOf(base)
	if got.Cluster != "team-a/one" || got.Release != "aws-base-1-36-v1" || !slices.Equal(got.ConfigMaps, []string{"one-aws-base-1-36-v1-values-0123456789ab"}) || len(got.Notes) != 0 {
		t.Errorf("header: %+v", got)
	}
	vars := map[string]Value{}
	for _, v := range got.Variables {
		vars[v.Key] = v
	}
	if len(vars) != len(baseVariableFields) {
		t.Errorf("variables: %+v", got.Variables)
	}
	wantVars := map[string]Value{
		"cluster_pod_cidr":       {Key: "cluster_pod_cidr", Value: "10.1.0.0/16", From: []Origin{fromField(SourceCluster, clusterOne, ".spec.clusterNetwork.pods.cidrBlocks[0]")}},
		"cluster_service_domain": {Key: "cluster_service_domain", Value: "", From: []Origin{fromField(SourceCluster, clusterOne, ".spec.clusterNetwork.serviceDomain")}},
		"stack_version":          {Key: "stack_version", Value: "v1", From: []Origin{fromField(SourceRelease, "ClusterStackRelease/aws-base-1-36-v1", ".spec.version")}},
	}
	for k, want := range wantVars {
		if diff := cmp.Diff(want, vars[k]); diff != "" {
			t.Errorf("variable %s (-want +got):\n%s", k, diff)
		}
	}
	wantComps := []ComponentValues{
		{Name: "cni", Kind: "Helm", Release: "aws-base-1-36-v1", FluxObject: "HelmRelease/one-cni", ConfigMap: "one-aws-base-1-36-v1-values-0123456789ab", Key: "helm_values_cni", Values: []Value{
			{Key: "apiServer.host", Value: "10.0.0.1", From: []Origin{fromField(SourceCluster, clusterOne, ".spec.controlPlaneEndpoint.host")}},
			{Key: "apiServer.port", Value: "6443", From: []Origin{fromField(SourceCluster, clusterOne, ".spec.controlPlaneEndpoint.port")}},
			{Key: "podCIDR", Value: "10.1.0.0/16", From: []Origin{fromField(SourceCluster, clusterOne, ".spec.clusterNetwork.pods.cidrBlocks[0]")}},
			{Key: "serviceCIDR", Value: "10.96.0.0/12", From: []Origin{fromField(SourceCluster, clusterOne, ".spec.clusterNetwork.services.cidrBlocks[0]")}},
		}},
		{Name: "cluster-info", Kind: "Kustomize", Release: "aws-base-1-36-v1", FluxObject: "Kustomization/one-cluster-info", ConfigMap: "one-aws-base-1-36-v1-values-0123456789ab", Values: []Value{
			{Key: "infra_region", Value: "eu-north-1", From: []Origin{fromField(SourceInfraCluster, "AWSCluster/one-infra", ".spec.region")}},
		}},
	}
	if diff := cmp.Diff(wantComps, got.Components); diff != "" {
		t.Errorf("components (-want +got):\n%s", diff)
	}

	t.Run("a ConfigMap rendered before the Cluster changed: its values, the changed one Unknown, and a note", func(t *testing.T) {
		in := base
		old := maps.Clone(data)
		old["helm_values_cni"] = "apiServer:\n  host: 10.0.0.1\n  port: 6443\npodCIDR: 10.9.0.0/16\nserviceCIDR: 10.96.0.0/12\n"
		in.Releases = map[string]ReleaseValues{"aws-base-1-36-v1": {Release: base.Releases["aws-base-1-36-v1"].Release, ConfigMap: valuesConfigMap(old), Stack: &refStack}}
		cni := ClusterValuesOf(in).Components[0]
		if cni.Values[2].Value != "10.9.0.0/16" || cni.Values[2].From[0].Source != SourceUnknown {
			t.Errorf("podCIDR: %+v", cni.Values[2])
		}
		if !strings.Contains(cni.Note, "differs from a render") {
			t.Errorf("note: %q", cni.Note)
		}
	})
	t.Run("no stack: the ConfigMap's values, origins Unknown, kustomize variables not attributed", func(t *testing.T) {
		in := base
		in.Releases = map[string]ReleaseValues{"aws-base-1-36-v1": {Release: base.Releases["aws-base-1-36-v1"].Release, ConfigMap: valuesConfigMap(data), StackError: "GitRepository team-a/aws-base-1-36-v1 has no artifact yet"}}
		got := ClusterValuesOf(in)
		if len(got.Notes) != 1 || !strings.Contains(got.Notes[0], "origins unknown, the stack could not be read: GitRepository team-a/aws-base-1-36-v1 has no artifact yet") {
			t.Errorf("notes: %q", got.Notes)
		}
		if v := got.Components[0].Values[0]; v.Value != "10.0.0.1" || v.From[0].Source != SourceUnknown {
			t.Errorf("cni without stack: %+v", v)
		}
		if c := got.Components[1]; len(c.Values) != 0 || !strings.Contains(c.Note, "cannot be told apart") {
			t.Errorf("cluster-info without stack: %+v", c)
		}
		if v := got.Variables[0]; len(v.From) != 1 || v.From[0].Source == SourceUnknown {
			t.Errorf("base variables are traced without the stack: %+v", v)
		}
	})
	t.Run("no ConfigMap yet, no ClusterAddon", func(t *testing.T) {
		in := base
		in.Releases = map[string]ReleaseValues{"aws-base-1-36-v1": {Release: base.Releases["aws-base-1-36-v1"].Release, Stack: &refStack}}
		got := ClusterValuesOf(in)
		if len(got.ConfigMaps) != 0 || len(got.Variables) != 0 || len(got.Notes) != 1 || got.Components[0].Note != "no values ConfigMap for release aws-base-1-36-v1" {
			t.Errorf("without ConfigMap: %+v", got)
		}
		in.Addon = nil
		if got := ClusterValuesOf(in); len(got.Components) != 0 || len(got.Notes) != 1 {
			t.Errorf("without ClusterAddon: %+v", got)
		}
	})
	t.Run("overrides: the keys they set name the override that won, the others keep their origins", func(t *testing.T) {
		in := base
		ovs := []render.Override{
			{Name: "ClusterAddonOverride/prod", Components: map[string]map[string]any{"cni": {"mtu": float64(8000), "podCIDR": "10.50.0.0/16"}}},
			{Name: "ClusterAddonOverride/one", Components: map[string]map[string]any{"cni": {"mtu": float64(9000)}, "cluster-info": {"infra": map[string]any{"region": "eu-west-1"}}}},
		}
		withOv := maps.Clone(data)
		withOv["helm_values_cni"] = "apiServer:\n  host: 10.0.0.1\n  port: 6443\nmtu: 9000\npodCIDR: 10.50.0.0/16\nserviceCIDR: 10.96.0.0/12\n"
		withOv["infra_region"] = "eu-west-1"
		in.Releases = map[string]ReleaseValues{"aws-base-1-36-v1": {Release: base.Releases["aws-base-1-36-v1"].Release, ConfigMap: valuesConfigMap(withOv), Stack: &refStack, Overrides: ovs}}
		got := ClusterValuesOf(in)
		if len(got.Notes) != 1 || !strings.Contains(got.Notes[0], "values include ClusterAddonOverride/prod, ClusterAddonOverride/one") {
			t.Errorf("notes: %q", got.Notes)
		}
		want := []Value{
			{Key: "apiServer.host", Value: "10.0.0.1", From: []Origin{fromField(SourceCluster, clusterOne, ".spec.controlPlaneEndpoint.host")}},
			{Key: "apiServer.port", Value: "6443", From: []Origin{fromField(SourceCluster, clusterOne, ".spec.controlPlaneEndpoint.port")}},
			{Key: "mtu", Value: "9000", From: []Origin{fromField(SourceOverride, "ClusterAddonOverride/one", ".spec.components[cni].values.mtu")}},
			{Key: "podCIDR", Value: "10.50.0.0/16", From: []Origin{fromField(SourceOverride, "ClusterAddonOverride/prod", ".spec.components[cni].values.podCIDR")}},
			{Key: "serviceCIDR", Value: "10.96.0.0/12", From: []Origin{fromField(SourceCluster, clusterOne, ".spec.clusterNetwork.services.cidrBlocks[0]")}},
		}
		if diff := cmp.Diff(want, got.Components[0].Values); diff != "" || got.Components[0].Note != "" {
			t.Errorf("cni (-want +got):\n%s\nnote: %q", diff, got.Components[0].Note)
		}
		info := got.Components[1]
		if len(info.Values) != 1 || info.Values[0].Value != "eu-west-1" || info.Values[0].From[0].Source != SourceOverride || info.Note != "" {
			t.Errorf("cluster-info: %+v", info)
		}
		var b strings.Builder
		if err := WriteValues(&b, got, Style{}); err != nil || !strings.Contains(b.String(), "<- override one .spec.components[cni].values.mtu") {
			t.Errorf("printed: %v\n%s", err, b.String())
		}
	})
	t.Run("a template that no longer renders: origins Unknown, with the error", func(t *testing.T) {
		broken := stack.Stack{Components: []stack.Component{{Name: "cni", Kind: stack.KindHelm, ValuesTemplate: "x: {{ .InfraCluster.spec.noSuchField }}\n", ValuesFile: "cluster-addon/cni/overwrite.yaml"}}}
		in := base
		in.Releases = map[string]ReleaseValues{"aws-base-1-36-v1": {Release: base.Releases["aws-base-1-36-v1"].Release, ConfigMap: valuesConfigMap(data), Stack: &broken}}
		cni := ClusterValuesOf(in).Components[0]
		if !strings.Contains(cni.Note, "the template does not render now") || cni.Values[0].From[0].Source != SourceUnknown {
			t.Errorf("broken template: %+v", cni)
		}
	})
}

func TestWriteValues(t *testing.T) {
	v := ClusterValues{
		Cluster: "team-a/one", Release: "aws-base-1-36-v1", ConfigMaps: []string{"one-values"},
		Variables: []Value{{Key: "cluster_name", Value: "one", From: []Origin{fromField(SourceCluster, clusterOne, ".metadata.name")}}},
		Components: []ComponentValues{
			{Name: "cni", Kind: "Helm", Release: "aws-base-1-36-v1", FluxObject: "HelmRelease/one-cni", Key: "helm_values_cni", Values: []Value{
				{Key: "endpoint", Value: "10.0.0.1:6443", From: []Origin{fromField(SourceCluster, clusterOne, ".spec.controlPlaneEndpoint.host"), fromField(SourceCluster, clusterOne, ".spec.controlPlaneEndpoint.port")}},
				{Key: "region", Value: "eu-north-1", From: []Origin{fromField(SourceVariable, clusterOne, "region")}},
				{Key: "tier", Value: "", From: fromStack("cluster-addon/cni/overwrite.yaml")},
			}},
			{Name: "old", Kind: "Kustomize", Release: "aws-base-1-36-v0", Note: "no values ConfigMap for release aws-base-1-36-v0", Values: []Value{}},
		},
	}
	want := `Cluster team-a/one  release aws-base-1-36-v1  ConfigMap one-values

Variables (every component)
  cluster_name  one  <- Cluster/one .metadata.name

Component cni (Helm, HelmRelease/one-cni, ConfigMap key helm_values_cni)
  endpoint  10.0.0.1:6443  <- Cluster/one .spec.controlPlaneEndpoint.host, Cluster/one .spec.controlPlaneEndpoint.port
  region    eu-north-1     <- variable region
  tier      ""             <- stack cluster-addon/cni/overwrite.yaml

Component old (Kustomize, release aws-base-1-36-v0)
  note: no values ConfigMap for release aws-base-1-36-v0
  (no values)
`
	var b strings.Builder
	if err := WriteValues(&b, v, Style{}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("WriteValues (-want +got):\n%s", diff)
	}
}
