package render

import (
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// varNameRE is the variable name pattern Flux's kustomize-controller accepts in substituteFrom.
var varNameRE = regexp.MustCompile(`^[_[:alpha:]][_[:alpha:][:digit:]]*$`)

const (
	cniFile  = "cluster-addon/cni/overwrite.yaml"
	infoFile = "cluster-addon/cluster-info/overwrite.yaml"
	oldFile  = "cluster-addon-values.yaml"
)

// testInput is a Cluster, its KubeadmControlPlane and OpenStackCluster as the controller passes
// them: JSON maps from runtime.DefaultUnstructuredConverter (integers are int64).
func testInput() Input {
	return Input{
		Cluster: map[string]any{
			"apiVersion": "cluster.x-k8s.io/v1beta2",
			"kind":       "Cluster",
			"metadata": map[string]any{
				"name": "c1", "namespace": "tenant",
				"labels": map[string]any{"env": "prod", "team": "a", "cost-center": "42"},
			},
			"spec": map[string]any{
				"clusterNetwork": map[string]any{
					"pods":          map[string]any{"cidrBlocks": []any{"10.244.0.0/16", "fd00::/56"}},
					"services":      map[string]any{"cidrBlocks": []any{"10.96.0.0/12"}},
					"serviceDomain": "cluster.local",
				},
				"controlPlaneEndpoint": map[string]any{"host": "api.c1.example.com", "port": int64(6443)},
				"topology": map[string]any{
					"classRef": map[string]any{"name": "openstack-scs-1-33-v2"},
					"version":  "v1.33.4",
					"variables": []any{
						map[string]any{"name": "region", "value": "RegionOne"},
						map[string]any{"name": "workload_loadbalancer", "value": "octavia-ovn"},
						map[string]any{"name": "restrict_kubeapi", "value": []any{"10.0.0.0/8", "192.168.0.0/16"}},
						map[string]any{"name": "oidc_config", "value": map[string]any{"issuer_url": "https://dex.example.com", "client_id": "kubectl"}},
						map[string]any{"name": "workers", "value": int64(3)},
					},
				},
			},
		},
		ControlPlane: map[string]any{
			"kind":     "KubeadmControlPlane",
			"metadata": map[string]any{"name": "c1-cp"},
			"spec":     map[string]any{"replicas": int64(3), "version": "v1.33.4"},
			"status":   map[string]any{"initialized": true, "readyReplicas": int64(3)},
		},
		InfraCluster: map[string]any{
			"kind":     "OpenStackCluster",
			"metadata": map[string]any{"name": "c1-x7k2p"},
			"spec":     map[string]any{"externalNetwork": map[string]any{"id": "ext-net"}},
			"status": map[string]any{
				"externalNetwork": map[string]any{"id": "ext-net"},
				"network":         map[string]any{"id": "net-1", "subnets": []any{map[string]any{"id": "subnet-1", "cidr": "10.8.0.0/20"}}},
			},
		},
		Release: Release{Name: "openstack-scs-1-33-v2", Version: "v2", KubernetesVersion: "v1.33.4"},
	}
}

func baseVars() map[string]string {
	return map[string]string{
		"cluster_name":                "c1",
		"cluster_namespace":           "tenant",
		"cluster_pod_cidr":            "10.244.0.0/16",
		"cluster_service_cidr":        "10.96.0.0/12",
		"cluster_service_domain":      "cluster.local",
		"control_plane_endpoint_host": "api.c1.example.com",
		"control_plane_endpoint_port": "6443",
		"kubernetes_version":          "v1.33.4",
		"stack_release":               "openstack-scs-1-33-v2",
		"stack_version":               "v2",
	}
}

func with(m map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

func TestBaseVariables(t *testing.T) {
	tests := []struct {
		name string
		in   Input
		want map[string]string
	}{
		{name: "full cluster", in: testInput(), want: baseVars()},
		{
			name: "port decoded from JSON as float64",
			in: func() Input {
				in := testInput()
				in.Cluster["spec"].(map[string]any)["controlPlaneEndpoint"] = map[string]any{"host": "10.0.0.1", "port": float64(443)}
				return in
			}(),
			want: with(baseVars(), "control_plane_endpoint_host", "10.0.0.1", "control_plane_endpoint_port", "443"),
		},
		{
			name: "new cluster: no endpoint, no topology, no network",
			in: Input{
				Cluster: map[string]any{"metadata": map[string]any{"name": "c2", "namespace": "ns"}, "spec": map[string]any{}},
				Release: Release{Name: "aws-base-1-36-v1", Version: "v1"},
			},
			want: map[string]string{
				"cluster_name": "c2", "cluster_namespace": "ns", "cluster_pod_cidr": "", "cluster_service_cidr": "", "cluster_service_domain": "",
				"control_plane_endpoint_host": "", "control_plane_endpoint_port": "", "kubernetes_version": "", "stack_release": "aws-base-1-36-v1", "stack_version": "v1",
			},
		},
		{
			name: "no cluster at all",
			in:   Input{},
			want: map[string]string{
				"cluster_name": "", "cluster_namespace": "", "cluster_pod_cidr": "", "cluster_service_cidr": "", "cluster_service_domain": "",
				"control_plane_endpoint_host": "", "control_plane_endpoint_port": "", "kubernetes_version": "", "stack_release": "", "stack_version": "",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, BaseVariables(tt.in)); diff != "" {
				t.Errorf("BaseVariables() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// The Sovereign Cloud Stack's overwrite.yaml (stacks/README.md).
const scsCilium = `cilium:
  k8sServiceHost: "{{ .Cluster.spec.controlPlaneEndpoint.host }}"
  ipv4NativeRoutingCIDR: "{{ index .Cluster.spec.clusterNetwork.pods.cidrBlocks 0 }}"
`

// The reference stack's cni overwrite.yaml (stacks/aws/base/1-36/cluster-addon/cni).
const referenceCNI = `podCIDR: "{{ index .Cluster.spec.clusterNetwork.pods.cidrBlocks 0 }}"
{{- with .Cluster.spec.clusterNetwork.services }}
serviceCIDR: "{{ index .cidrBlocks 0 }}"
{{- end }}
apiServer:
  host: "{{ .Cluster.spec.controlPlaneEndpoint.host }}"
  port: {{ .Cluster.spec.controlPlaneEndpoint.port }}
`

// The older SCS cluster-addon-values.yaml style: named templates, ranging over the topology
// variables and reaching the root data with $ inside range.
const scsOldStyle = `{{- define "lbProvider" -}}
{{- range .Cluster.spec.topology.variables -}}
{{- if eq .name "workload_loadbalancer" }}{{ .value }}{{ end -}}
{{- end -}}
{{- end -}}
openstack-cloud-controller-manager:
  cluster:
    name: {{ .Cluster.metadata.name }}
  cloudConfig:
    global:
      region: {{ .Variables.region | quote }}
    loadBalancer:
      provider: {{ template "lbProvider" . }}
      floating-network-id: {{ .InfraCluster.status.externalNetwork.id }}
      subnet-id: {{ (index .InfraCluster.status.network.subnets 0).id }}
{{- range .Cluster.spec.topology.variables }}
{{- if eq .name "restrict_kubeapi" }}
  restrictedCIDRs:
{{- range .value }}
    - {{ . }}
{{- end }}
  networkID: {{ $.InfraCluster.status.network.id }}
{{- end }}
{{- end }}
openstack-cinder-csi:
  storageClass:
    enabled: {{ .ControlPlane.status.initialized }}
  replicas: {{ .ControlPlane.spec.replicas }}
`

func TestRender(t *testing.T) {
	noServices := func() Input {
		in := testInput()
		net := in.Cluster["spec"].(map[string]any)["clusterNetwork"].(map[string]any)
		delete(net, "services")
		return in
	}
	tests := []struct {
		name       string
		in         *Input
		components []Component
		want       map[string]string
	}{
		{name: "no components: base variables only", want: baseVars()},
		{
			name:       "SCS cilium overwrite.yaml",
			components: []Component{{Name: "cni", Helm: true, Template: scsCilium, File: cniFile}},
			want:       with(baseVars(), "helm_values_cni", "cilium:\n  ipv4NativeRoutingCIDR: 10.244.0.0/16\n  k8sServiceHost: api.c1.example.com\n"),
		},
		{
			name:       "reference stack cni overwrite.yaml: port stays a number",
			components: []Component{{Name: "cni", Helm: true, Template: referenceCNI, File: cniFile}},
			want:       with(baseVars(), "helm_values_cni", "apiServer:\n  host: api.c1.example.com\n  port: 6443\npodCIDR: 10.244.0.0/16\nserviceCIDR: 10.96.0.0/12\n"),
		},
		{
			name:       "optional field tested with with: a Cluster without services renders",
			in:         ptr(noServices()),
			components: []Component{{Name: "cni", Helm: true, Template: referenceCNI, File: cniFile}},
			want: with(baseVars(), "cluster_service_cidr", "",
				"helm_values_cni", "apiServer:\n  host: api.c1.example.com\n  port: 6443\npodCIDR: 10.244.0.0/16\n"),
		},
		{
			name: "optional fields tested with if, default, hasKey and dig",
			in:   ptr(noServices()),
			components: []Component{{Name: "cni", Helm: true, File: cniFile, Template: `{{- if .Cluster.spec.clusterNetwork.services }}
services: set
{{- end }}
domain: {{ .Cluster.spec.clusterNetwork.dnsDomain | default "cluster.local" }}
hasServices: {{ hasKey .Cluster.spec.clusterNetwork "services" }}
class: {{ dig "spec" "topology" "classRef" "name" "none" .Cluster }}
`}},
			want: with(baseVars(), "cluster_service_cidr", "",
				"helm_values_cni", "class: openstack-scs-1-33-v2\ndomain: cluster.local\nhasServices: false\n"),
		},
		{
			name:       "older cluster-addon-values.yaml style with define, range and $",
			components: []Component{{Name: "cluster-addon", Helm: true, Template: scsOldStyle, File: oldFile}},
			want: with(baseVars(), "helm_values_cluster_addon", `openstack-cinder-csi:
  replicas: 3
  storageClass:
    enabled: true
openstack-cloud-controller-manager:
  cloudConfig:
    global:
      region: RegionOne
    loadBalancer:
      floating-network-id: ext-net
      provider: octavia-ovn
      subnet-id: subnet-1
  cluster:
    name: c1
  networkID: net-1
  restrictedCIDRs:
  - 10.0.0.0/8
  - 192.168.0.0/16
`),
		},
		{
			name: ".Variables by name and .Release",
			components: []Component{{Name: "oidc", Helm: true, File: "cluster-addon/oidc/overwrite.yaml", Template: `issuer: {{ .Variables.oidc_config.issuer_url }}
clientID: {{ .Variables.oidc_config.client_id }}
workers: {{ .Variables.workers }}
release: {{ .Release.Name }}/{{ .Release.Version }}/{{ .Release.KubernetesVersion }}
`}},
			want: with(baseVars(), "helm_values_oidc", "clientID: kubectl\nissuer: https://dex.example.com\nrelease: openstack-scs-1-33-v2/v2/v1.33.4\nworkers: 3\n"),
		},
		{
			name: "Helm's toYaml, fromYaml and required",
			components: []Component{{Name: "cni", Helm: true, File: cniFile, Template: `host: {{ required "the Cluster needs an endpoint" .Cluster.spec.controlPlaneEndpoint.host }}
oidc:
  {{- .Variables.oidc_config | toYaml | nindent 2 }}
parsed: {{ (fromYaml "a: 1").a }}
`}},
			want: with(baseVars(), "helm_values_cni", "host: api.c1.example.com\noidc:\n  client_id: kubectl\n  issuer_url: https://dex.example.com\nparsed: 1\n"),
		},
		{
			name: "kustomize values flattened",
			components: []Component{{Name: "cluster-info", File: infoFile, Template: `infra:
  region: "{{ .Variables.region }}"
  zones: [a, b]
metrics-server:
  replicas: 2
  ratio: 1.5
enabled: true
empty: null
apiPort: {{ .Cluster.spec.controlPlaneEndpoint.port }}
big: 10000000
nested:
  - name: x
    labels: {k: v}
`}},
			want: with(baseVars(),
				"infra_region", "RegionOne", "infra_zones_0", "a", "infra_zones_1", "b",
				"metrics_server_replicas", "2", "metrics_server_ratio", "1.5",
				"enabled", "true", "empty", "", "apiPort", "6443", "big", "10000000",
				"nested_0_name", "x", "nested_0_labels_k", "v"),
		},
		{
			name: "keys that are no variable names are made ones",
			components: []Component{{Name: "cluster-info", File: infoFile, Template: `0abc: a
"a.b/c": b
"": c
"äb": d
`}},
			want: with(baseVars(), "_0abc", "a", "a_b_c", "b", "_", "c", "_b", "d"),
		},
		{
			name:       "empty templates: empty Helm values, no variables",
			components: []Component{{Name: "cni", Helm: true, File: cniFile}, {Name: "cluster-info", File: infoFile, Template: "  \n"}, {Name: "csi", Helm: true, Template: "# only a comment\n"}},
			want:       with(baseVars(), "helm_values_cni", "{}\n", "helm_values_csi", "{}\n"),
		},
		{
			name: "Helm and kustomize components together",
			components: []Component{
				{Name: "cni", Helm: true, Template: scsCilium, File: cniFile},
				{Name: "cluster-info", File: infoFile, Template: "infra:\n  region: \"{{ .InfraCluster.spec.externalNetwork.id }}\"\n"},
				{Name: "metrics-server", Helm: true, File: "cluster-addon/metrics-server/overwrite.yaml", Template: "replicas: {{ .ControlPlane.spec.replicas }}\n"},
			},
			want: with(baseVars(),
				"helm_values_cni", "cilium:\n  ipv4NativeRoutingCIDR: 10.244.0.0/16\n  k8sServiceHost: api.c1.example.com\n",
				"infra_region", "ext-net",
				"helm_values_metrics_server", "replicas: 3\n"),
		},
		{
			name: "date formats a given time",
			components: []Component{{Name: "cluster-info", File: infoFile, Template: `epoch: {{ dateInZone "2006-01-02" 0 "UTC" | quote }}
day: {{ date "2006-01-02" (toDate "2006-01-02" "2024-05-06") | quote }}
`}},
			want: with(baseVars(), "epoch", "1970-01-01", "day", "2024-05-06"),
		},
		{
			name:       "keys and values in key order",
			components: []Component{{Name: "cluster-info", File: infoFile, Template: `labels: {{ keys .Cluster.metadata.labels | join "," | quote }}` + "\n" + `values: {{ values .Cluster.metadata.labels | join "," | quote }}` + "\n"}},
			want:       with(baseVars(), "labels", "cost-center,env,team", "values", "42,prod,a"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testInput()
			if tt.in != nil {
				in = *tt.in
			}
			got, err := Render(in, tt.components)
			if err != nil {
				t.Fatalf("Render() error: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Render() mismatch (-want +got):\n%s", diff)
			}
			for k := range got {
				if !varNameRE.MatchString(k) {
					t.Errorf("key %q is no valid Flux variable name", k)
				}
			}
		})
	}
}

func TestRenderErrors(t *testing.T) {
	tests := []struct {
		name          string
		components    []Component
		wantComponent string
		wantFile      string
		wantMsg       []string
	}{
		{
			name:          "printed value missing from the data",
			components:    []Component{{Name: "cni", Helm: true, File: cniFile, Template: "cilium:\n  k8sServiceHost: {{ .Cluster.spec.controlPlaneEndpoint.hostname }}\n"}},
			wantComponent: "cni", wantFile: cniFile,
			wantMsg: []string{"component cni: " + cniFile + ": ", "line 2", "k8sServiceHost: <no value>"},
		},
		{
			name:          "missing topology variable printed",
			components:    []Component{{Name: "cluster-info", File: infoFile, Template: "zone: {{ .Variables.zone }}\n"}},
			wantComponent: "cluster-info", wantFile: infoFile,
			wantMsg: []string{"component cluster-info: " + infoFile + ": ", "zone: <no value>"},
		},
		{
			name:          "missing map entry printed through index",
			components:    []Component{{Name: "cni", Helm: true, File: cniFile, Template: "owner: {{ index .Cluster.metadata.labels \"owner\" }}\n"}},
			wantComponent: "cni", wantFile: cniFile,
			wantMsg: []string{"owner: <no value>"},
		},
		{
			name:          "field of a missing object",
			components:    []Component{{Name: "cni", Helm: true, File: cniFile, Template: "x: {{ .Cluster.spec.notThere.host }}\n"}},
			wantComponent: "cni", wantFile: cniFile,
			wantMsg: []string{"line 1", "x: <no value>"},
		},
		{
			name:          "index out of range",
			components:    []Component{{Name: "cni", Helm: true, File: cniFile, Template: "x: {{ index .Cluster.spec.clusterNetwork.pods.cidrBlocks 5 }}\n"}},
			wantComponent: "cni", wantFile: cniFile,
			wantMsg: []string{"render template", "index out of range"},
		},
		{
			name:          "required value missing",
			components:    []Component{{Name: "cni", Helm: true, File: cniFile, Template: "x: {{ required \"set the zone variable\" .Variables.zone }}\n"}},
			wantComponent: "cni", wantFile: cniFile,
			wantMsg: []string{"set the zone variable"},
		},
		{
			name:          "parse error",
			components:    []Component{{Name: "cni", Helm: true, File: cniFile, Template: "x: {{ .Cluster.metadata.name \n"}},
			wantComponent: "cni", wantFile: cniFile,
			wantMsg: []string{"parse template"},
		},
		{
			name:          "unknown function",
			components:    []Component{{Name: "cni", Helm: true, File: cniFile, Template: "x: {{ include \"a\" . }}\n"}},
			wantComponent: "cni", wantFile: cniFile,
			wantMsg: []string{"parse template", `function "include" not defined`},
		},
		{
			name:          "output is a list",
			components:    []Component{{Name: "cni", Helm: true, File: cniFile, Template: "- a\n- b\n"}},
			wantComponent: "cni", wantFile: cniFile,
			wantMsg: []string{"not a YAML map"},
		},
		{
			name:          "output is a scalar",
			components:    []Component{{Name: "cluster-info", File: infoFile, Template: "{{ .Cluster.metadata.name }}"}},
			wantComponent: "cluster-info", wantFile: infoFile,
			wantMsg: []string{"not a YAML map"},
		},
		{
			name:          "output is not YAML",
			components:    []Component{{Name: "cni", Helm: true, File: cniFile, Template: "a: [b\n"}},
			wantComponent: "cni", wantFile: cniFile,
			wantMsg: []string{"not a YAML map"},
		},
		{
			name: "second component fails: first is not returned",
			components: []Component{
				{Name: "cni", Helm: true, File: cniFile, Template: scsCilium},
				{Name: "cluster-info", File: infoFile, Template: "a: {{ fail \"stop\" }}"},
			},
			wantComponent: "cluster-info", wantFile: infoFile,
			wantMsg: []string{"stop"},
		},
		{
			name:          "flattened key collides with a base variable",
			components:    []Component{{Name: "cluster-info", File: infoFile, Template: "cluster:\n  name: other\n"}},
			wantComponent: "cluster-info", wantFile: infoFile,
			wantMsg: []string{`"cluster_name"`, "overwrite"},
		},
		{
			name:          "two values of one component become the same variable",
			components:    []Component{{Name: "cluster-info", File: infoFile, Template: "metrics-server:\n  replicas: 1\nmetrics_server:\n  replicas: 2\n"}},
			wantComponent: "cluster-info", wantFile: infoFile,
			wantMsg: []string{`"metrics_server_replicas"`},
		},
		{
			name:          "a nested and a flat value become the same variable",
			components:    []Component{{Name: "cluster-info", File: infoFile, Template: "infra:\n  region: x\ninfra_region: y\n"}},
			wantComponent: "cluster-info", wantFile: infoFile,
			wantMsg: []string{`"infra_region"`},
		},
		{
			name: "flattened key collides with another component's",
			components: []Component{
				{Name: "a", File: "cluster-addon/a/overwrite.yaml", Template: "infra:\n  region: x\n"},
				{Name: "b", File: "cluster-addon/b/overwrite.yaml", Template: "infra_region: y\n"},
			},
			wantComponent: "b", wantFile: "cluster-addon/b/overwrite.yaml",
			wantMsg: []string{`"infra_region"`},
		},
		{
			name: "flattened key collides with a later Helm component's values key",
			components: []Component{
				{Name: "cluster-info", File: infoFile, Template: "helm_values:\n  cni: x\n"},
				{Name: "cni", Helm: true, File: cniFile, Template: scsCilium},
			},
			wantComponent: "cni", wantFile: cniFile,
			wantMsg: []string{`"helm_values_cni"`},
		},
		{
			name: "flattened key collides with an earlier Helm component's values key",
			components: []Component{
				{Name: "cni", Helm: true, File: cniFile, Template: scsCilium},
				{Name: "cluster-info", File: infoFile, Template: "helm_values:\n  cni: x\n"},
			},
			wantComponent: "cluster-info", wantFile: infoFile,
			wantMsg: []string{`"helm_values_cni"`},
		},
		{
			name:          "date of something that is no time",
			components:    []Component{{Name: "cluster-info", File: infoFile, Template: `d: {{ date "2006-01-02" .Cluster.metadata.name }}`}},
			wantComponent: "cluster-info", wantFile: infoFile,
			wantMsg: []string{"render template", "date"},
		},
		{
			name:          "htmlDate of something that is no time",
			components:    []Component{{Name: "cluster-info", File: infoFile, Template: `d: {{ htmlDate "" }}`}},
			wantComponent: "cluster-info", wantFile: infoFile,
			wantMsg: []string{"render template", "htmlDate"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Render(testInput(), tt.components)
			if err == nil {
				t.Fatalf("Render() = %v, want an error", got)
			}
			if got != nil {
				t.Errorf("Render() returned data %v with the error", got)
			}
			var rerr *Error
			if !errors.As(err, &rerr) {
				t.Fatalf("error %v (%T) is not a *render.Error", err, err)
			}
			if rerr.Component != tt.wantComponent || rerr.File != tt.wantFile {
				t.Errorf("error names component %q, file %q; want %q, %q", rerr.Component, rerr.File, tt.wantComponent, tt.wantFile)
			}
			if errors.Unwrap(err) == nil {
				t.Errorf("error %v does not wrap its cause", err)
			}
			for _, s := range tt.wantMsg {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err.Error(), s)
				}
			}
		})
	}
}

// TestRemovedFunctions: functions that read the environment or the network, or return
// something new on every call, are not available: templates using them do not parse.
func TestRemovedFunctions(t *testing.T) {
	tests := []string{
		"env", "expandenv", "getHostByName", "now", "ago", "randAlphaNum", "randAlpha", "randAscii", "randNumeric",
		"randBytes", "randInt", "uuidv4", "shuffle", "genPrivateKey", "genCA", "genSelfSignedCert", "derivePassword",
		"bcrypt", "htpasswd", "encryptAES", "date_modify", "dateModify", "mustDateModify", "must_date_modify",
	}
	for _, fn := range tests {
		t.Run(fn, func(t *testing.T) {
			if _, ok := FuncMap()[fn]; ok {
				t.Errorf("FuncMap() offers %q", fn)
			}
			_, err := Render(testInput(), []Component{{Name: "cni", Helm: true, File: cniFile, Template: "x: {{ " + fn + " }}\n"}})
			var rerr *Error
			if !errors.As(err, &rerr) || !strings.Contains(err.Error(), "parse template") || !strings.Contains(err.Error(), `function "`+fn+`" not defined`) {
				t.Errorf("Render() with %s: error %v, want a parse error naming the function", fn, err)
			}
		})
	}
}

// TestRenderDeterministic: rendering the same input twice gives the same ConfigMap data, or
// every reconcile would rewrite the ConfigMap and roll the addons.
func TestRenderDeterministic(t *testing.T) {
	labels := map[string]any{}
	for _, k := range strings.Split("a b c d e f g h i j k l m n o p q r s t", " ") {
		labels[k] = "v" + k
	}
	tests := []struct {
		name     string
		template string
	}{
		{name: "keys", template: `k: {{ keys .Cluster.metadata.labels | join "," | quote }}`},
		{name: "values", template: `v: {{ values .Cluster.metadata.labels | join "," | quote }}`},
		{name: "range over a map", template: `r: "{{ range $k, $v := .Cluster.metadata.labels }}{{ $k }}{{ end }}"`},
		{name: "toYaml of a map", template: `y: {{ .Cluster.metadata.labels | toYaml | quote }}`},
		{name: "toJson of a map", template: `j: {{ .Cluster.metadata.labels | toJson | quote }}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var first map[string]string
			for i := 0; i < 30; i++ {
				in := testInput()
				in.Cluster["metadata"].(map[string]any)["labels"] = labels
				got, err := Render(in, []Component{{Name: "cluster-info", File: infoFile, Template: tt.template}})
				if err != nil {
					t.Fatal(err)
				}
				if first == nil {
					first = got
				} else if diff := cmp.Diff(first, got); diff != "" {
					t.Fatalf("render %d differs from the first (-first +got):\n%s", i, diff)
				}
			}
		})
	}
}

// TestRenderDoesNotModifyInput: a template changing the data (sprig's set, unset, merge) changes
// neither the caller's objects nor what the next component sees.
func TestRenderDoesNotModifyInput(t *testing.T) {
	in := testInput()
	components := []Component{
		{Name: "a", File: "cluster-addon/a/overwrite.yaml", Template: `{{- $_ := set .Cluster.metadata "name" "changed" }}
{{- $_ := unset .InfraCluster "status" }}
{{- $_ := merge .Variables.oidc_config (dict "extra" "x") }}
{{- $_ := set .Release "Name" "other" }}
a: "1"
`},
		{Name: "b", File: "cluster-addon/b/overwrite.yaml", Template: `name: {{ .Cluster.metadata.name }}
net: {{ .InfraCluster.status.network.id }}
extra: {{ hasKey .Variables.oidc_config "extra" }}
release: {{ .Release.Name }}
`},
	}
	got, err := Render(in, components)
	if err != nil {
		t.Fatal(err)
	}
	want := with(baseVars(), "a", "1", "name", "c1", "net", "net-1", "extra", "false", "release", "openstack-scs-1-33-v2")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Render() mismatch (-want +got):\n%s", diff)
	}
	if !reflect.DeepEqual(in, testInput()) {
		t.Errorf("Render() modified its input")
	}
}

func TestHelmValuesKeyAndVarName(t *testing.T) {
	tests := []struct{ in, wantVar, wantKey string }{
		{in: "cni", wantVar: "cni", wantKey: "helm_values_cni"},
		{in: "metrics-server", wantVar: "metrics_server", wantKey: "helm_values_metrics_server"},
		{in: "cluster-addon", wantVar: "cluster_addon", wantKey: "helm_values_cluster_addon"},
		{in: "0day", wantVar: "_0day", wantKey: "helm_values__0day"},
		{in: "", wantVar: "_", wantKey: "helm_values__"},
		{in: "a.b/c d", wantVar: "a_b_c_d", wantKey: "helm_values_a_b_c_d"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := VarName(tt.in); got != tt.wantVar || !varNameRE.MatchString(got) {
				t.Errorf("VarName(%q) = %q, want %q", tt.in, got, tt.wantVar)
			}
			if got := HelmValuesKey(tt.in); got != tt.wantKey || !varNameRE.MatchString(got) {
				t.Errorf("HelmValuesKey(%q) = %q, want %q", tt.in, got, tt.wantKey)
			}
		})
	}
}

func TestFlatten(t *testing.T) {
	tests := []struct {
		name string
		in   map[string]any
		want map[string]string
	}{
		{name: "empty", in: map[string]any{}, want: map[string]string{}},
		{name: "nested map", in: map[string]any{"infra": map[string]any{"region": "x"}}, want: map[string]string{"infra_region": "x"}},
		{name: "list", in: map[string]any{"zones": []any{"a", "b"}}, want: map[string]string{"zones_0": "a", "zones_1": "b"}},
		{name: "scalars", in: map[string]any{"b": true, "f": 1.5, "i": float64(3), "n": nil, "i64": int64(7), "s": "x"},
			want: map[string]string{"b": "true", "f": "1.5", "i": "3", "n": "", "i64": "7", "s": "x"}},
		{name: "keys made variable names", in: map[string]any{"metrics-server": map[string]any{"a.b": "x"}}, want: map[string]string{"metrics_server_a_b": "x"}},
		{name: "empty map and list give nothing", in: map[string]any{"m": map[string]any{}, "l": []any{}}, want: map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Flatten(tt.in)); diff != "" {
				t.Errorf("Flatten() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
