package stack

import (
	"reflect"
	"strings"
	"testing"
)

func sampleCluster() map[string]any {
	return map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta2",
		"kind":       "Cluster",
		"metadata":   map[string]any{"name": "c1", "namespace": "team-a"},
		"spec": map[string]any{
			"clusterNetwork": map[string]any{
				"pods":     map[string]any{"cidrBlocks": []any{"10.244.0.0/16", "fd00::/56"}},
				"services": map[string]any{"cidrBlocks": []any{"10.96.0.0/12"}},
			},
			"controlPlaneEndpoint": map[string]any{"host": "api.c1.example.com", "port": int64(6443)},
			"topology": map[string]any{
				"classRef": map[string]any{"name": "aws-base-1-36-v1"},
				"version":  "v1.36.3",
				"variables": []any{
					map[string]any{"name": "region", "value": "eu-west-1"},
					map[string]any{"name": "workload_loadbalancer", "value": "yawol"},
				},
			},
		},
	}
}

func sampleTemplateData() TemplateData {
	c := sampleCluster()
	return TemplateData{
		Cluster:      c,
		ControlPlane: map[string]any{"kind": "KubeadmControlPlane", "spec": map[string]any{"version": "v1.36.3"}},
		InfraCluster: map[string]any{
			"kind":   "AWSCluster",
			"spec":   map[string]any{"region": "eu-west-1"},
			"status": map[string]any{"externalNetwork": map[string]any{"id": "net-1"}},
		},
		Variables: TopologyVariables(c),
		Release:   ReleaseData{Name: "aws-base-1-36-v1", Version: "v1", KubernetesVersion: "v1.36.3"},
	}
}

func TestRenderValues(t *testing.T) {
	tests := []struct {
		name    string
		tmpl    string
		want    map[string]any
		wantErr string
	}{{
		name: "SCS cilium overwrite",
		tmpl: "cilium:\n  k8sServiceHost: \"{{ .Cluster.spec.controlPlaneEndpoint.host }}\"\n  k8sServicePort: \"{{ .Cluster.spec.controlPlaneEndpoint.port }}\"\n  ipv4NativeRoutingCIDR: \"{{ index .Cluster.spec.clusterNetwork.pods.cidrBlocks 0 }}\"\n",
		want: map[string]any{"cilium": map[string]any{"k8sServiceHost": "api.c1.example.com", "k8sServicePort": "6443", "ipv4NativeRoutingCIDR": "10.244.0.0/16"}},
	}, {
		name: "variables, release, sprig",
		tmpl: "region: {{ .Variables.region | upper }}\nrelease: {{ .Release.Name }}\nversion: {{ .Release.KubernetesVersion | trimPrefix \"v\" }}\ncp: {{ .ControlPlane.spec.version }}\n",
		want: map[string]any{"region": "EU-WEST-1", "release": "aws-base-1-36-v1", "version": "1.36.3", "cp": "v1.36.3"},
	}, {
		name: "SCS range over topology variables with $",
		tmpl: "{{- range .Cluster.spec.topology.variables }}{{ if eq .name \"workload_loadbalancer\" }}lb: {{ .value }}\nfloating: {{ $.InfraCluster.status.externalNetwork.id }}{{ end }}{{ end }}\n",
		want: map[string]any{"lb": "yawol", "floating": "net-1"},
	}, {
		name: "optional field tested with if is fine",
		tmpl: "{{ if .Cluster.spec.paused }}paused: true{{ else }}paused: false{{ end }}\n",
		want: map[string]any{"paused": false},
	}, {
		name: "empty output",
		tmpl: "{{/* nothing */}}\n",
		want: map[string]any{},
	}, {
		name:    "missing printed key",
		tmpl:    "host: \"{{ .Cluster.spec.controlPlaneEndpoint.hots }}\"\n",
		wantErr: "missing from the data",
	}, {
		name:    "env is not available",
		tmpl:    "home: {{ env \"HOME\" }}\n",
		wantErr: `function "env" not defined`,
	}, {
		name:    "getHostByName is not available",
		tmpl:    "ip: {{ getHostByName \"example.com\" }}\n",
		wantErr: `function "getHostByName" not defined`,
	}, {
		name:    "not a mapping",
		tmpl:    "- a\n- b\n",
		wantErr: "not a YAML mapping",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RenderValues("overwrite.yaml", tt.tmpl, sampleTemplateData())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestFlattenValues(t *testing.T) {
	got := FlattenValues(map[string]any{
		"infra":          map[string]any{"region": "x", "zones": []any{"a", "b"}},
		"metrics-server": map[string]any{"enabled": true, "replicas": float64(2), "ratio": 0.5},
		"empty":          nil,
	})
	want := map[string]string{
		"infra_region": "x", "infra_zones_0": "a", "infra_zones_1": "b",
		"metrics_server_enabled": "true", "metrics_server_replicas": "2", "metrics_server_ratio": "0.5",
		"empty": "",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("FlattenValues = %v, want %v", got, want)
	}
}

func TestTopologyVariables(t *testing.T) {
	got := TopologyVariables(sampleCluster())
	if got["region"] != "eu-west-1" || len(got) != 2 {
		t.Errorf("TopologyVariables = %v", got)
	}
	if len(TopologyVariables(map[string]any{})) != 0 {
		t.Error("TopologyVariables of an empty cluster is not empty")
	}
}
