package render

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const sharedFile = "cluster-addon-values.yaml"

// scsDockerShared is SCS providers/docker/scs/cluster-addon-values.yaml's template: its output
// is keyed as an umbrella chart's values, by the alias of the chart that
// cluster-addon/metrics-server/ wraps.
const scsDockerShared = `metrics-server:
  commonLabels:
    domain: "{{ .Cluster.spec.controlPlaneEndpoint.host }}"
`

func TestRenderShared(t *testing.T) {
	shared := func(c Component, text string) Component {
		c.Shared, c.SharedFile = text, sharedFile
		return c
	}
	tests := []struct {
		name       string
		components []Component
		want       map[string]string
	}{{
		name: "SCS docker/scs: the entry goes to the subchart of that alias, the others get none",
		components: []Component{
			shared(Component{Name: "cni", Helm: true, Subcharts: []string{"cilium"}}, scsDockerShared),
			shared(Component{Name: "metrics-server", Helm: true, Subcharts: []string{"metrics-server"}}, scsDockerShared),
		},
		want: with(baseVars(),
			"helm_values_cni", "{}\n",
			"helm_values_metrics_server", "metrics-server:\n  commonLabels:\n    domain: api.c1.example.com\n"),
	}, {
		name: "a component's own entry is its chart's values; a subchart's entry goes below the subchart's key",
		components: []Component{shared(Component{Name: "cni", Helm: true, Subcharts: []string{"cilium", "hubble"}},
			"cni:\n  tolerations: [a]\n  cilium: {ipam: {mode: cluster-pool}}\ncilium:\n  ipam: {mode: kubernetes}\n  k8sServiceHost: {{ .Cluster.spec.controlPlaneEndpoint.host }}\nmetrics-server:\n  replicas: 2\n")},
		want: with(baseVars(), "helm_values_cni",
			"cilium:\n  ipam:\n    mode: kubernetes\n  k8sServiceHost: api.c1.example.com\ntolerations:\n- a\n"),
	}, {
		name: "overwrite.yaml is deep-merged over a subchart's entry and wins",
		components: []Component{shared(Component{Name: "metrics-server", Helm: true, File: cniFile, Subcharts: []string{"metrics-server"},
			Template: "metrics-server:\n  commonLabels:\n    team: a\n    domain: own.example.com\n"}, scsDockerShared)},
		want: with(baseVars(), "helm_values_metrics_server",
			"metrics-server:\n  commonLabels:\n    domain: own.example.com\n    team: a\n"),
	}, {
		name:       "a chart without that subchart takes its entry as its own values",
		components: []Component{shared(Component{Name: "metrics-server", Helm: true}, scsDockerShared)},
		want:       with(baseVars(), "helm_values_metrics_server", "commonLabels:\n  domain: api.c1.example.com\n"),
	}, {
		name: "overwrite.yaml is deep-merged over the shared entry and wins",
		components: []Component{shared(Component{Name: "cni", Helm: true, File: cniFile,
			Template: "cilium:\n  ipam: {mode: kubernetes}\n  k8sServicePort: 443\ntolerations: [b]\n"},
			"cni:\n  cilium:\n    ipam: {operator: {replicas: 1}}\n    k8sServicePort: 6443\n    k8sServiceHost: {{ .Cluster.spec.controlPlaneEndpoint.host }}\n  tolerations: [a, c]\n")},
		want: with(baseVars(), "helm_values_cni",
			"cilium:\n  ipam:\n    mode: kubernetes\n    operator:\n      replicas: 1\n  k8sServiceHost: api.c1.example.com\n  k8sServicePort: 443\ntolerations:\n- b\n"),
	}, {
		name: "kustomize component: the entry is flattened into variables",
		components: []Component{shared(Component{Name: "cluster-info", File: infoFile, Template: "infra:\n  zone: a\n"},
			"cluster-info:\n  infra:\n    region: {{ .Variables.region }}\n")},
		want: with(baseVars(), "infra_region", "RegionOne", "infra_zone", "a"),
	}, {
		name:       "a null entry is no values",
		components: []Component{shared(Component{Name: "cni", Helm: true}, "cni:\n")},
		want:       with(baseVars(), "helm_values_cni", "{}\n"),
	}, {
		name:       "an empty shared template is no values",
		components: []Component{shared(Component{Name: "cni", Helm: true, File: cniFile, Template: "a: b\n"}, "  \n")},
		want:       with(baseVars(), "helm_values_cni", "a: b\n"),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Render(testInput(), tt.components)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Render() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRenderSharedErrors(t *testing.T) {
	tests := []struct {
		name     string
		shared   string
		own      string
		wantFile string
		wantMsg  string
	}{
		{name: "shared template prints a missing value", shared: "cni:\n  zone: {{ .Variables.zone }}\n", wantFile: sharedFile, wantMsg: "zone: <no value>"},
		{name: "another component's entry prints a missing value", shared: "csi:\n  zone: {{ .Variables.zone }}\n", wantFile: sharedFile, wantMsg: "zone: <no value>"},
		{name: "the entry is no mapping", shared: "cni: calico\n", wantFile: sharedFile, wantMsg: `the entry "cni" is a string, not a mapping`},
		{name: "the output is no mapping", shared: "- cni\n", wantFile: sharedFile, wantMsg: "not a YAML map"},
		{name: "own template fails", shared: "cni: {}\n", own: "a: {{ fail \"own\" }}\n", wantFile: cniFile, wantMsg: "own"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Component{Name: "cni", Helm: true, File: cniFile, Template: tt.own, Shared: tt.shared, SharedFile: sharedFile}
			got, err := Render(testInput(), []Component{c})
			var rerr *Error
			if !errors.As(err, &rerr) {
				t.Fatalf("Render() = %v, %v; want a *render.Error", got, err)
			}
			if rerr.Component != "cni" || rerr.File != tt.wantFile || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error = %q (component %q, file %q), want file %q and %q", err, rerr.Component, rerr.File, tt.wantFile, tt.wantMsg)
			}
		})
	}
}

func TestSharedEntry(t *testing.T) {
	shared := map[string]any{"cni": map[string]any{"a": map[string]any{"b": "c"}}, "csi": nil, "ccm": []any{"x"}}
	got, err := SharedEntry(shared, "cni")
	if err != nil || !cmp.Equal(got, map[string]any{"a": map[string]any{"b": "c"}}) {
		t.Fatalf("SharedEntry(cni) = %v, %v", got, err)
	}
	got["a"].(map[string]any)["b"] = "changed"
	if shared["cni"].(map[string]any)["a"].(map[string]any)["b"] != "c" {
		t.Error("SharedEntry returned the shared map itself, not a copy")
	}
	for _, name := range []string{"csi", "metrics-server"} {
		if got, err := SharedEntry(shared, name); err != nil || len(got) != 0 {
			t.Errorf("SharedEntry(%s) = %v, %v; want empty", name, got, err)
		}
	}
	if _, err := SharedEntry(shared, "ccm"); err == nil || !strings.Contains(err.Error(), "is a list") {
		t.Errorf("SharedEntry(ccm) error = %v", err)
	}
}
