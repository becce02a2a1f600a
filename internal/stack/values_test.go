package stack

import (
	"github.com/clusterstack-io/clusterstack-operator/internal/render"
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

func sampleTemplateData() render.Input {
	return render.Input{
		Cluster:      sampleCluster(),
		ControlPlane: map[string]any{"kind": "KubeadmControlPlane", "spec": map[string]any{"version": "v1.36.3"}},
		InfraCluster: map[string]any{
			"kind":   "AWSCluster",
			"spec":   map[string]any{"region": "eu-west-1"},
			"status": map[string]any{"externalNetwork": map[string]any{"id": "net-1"}},
		},
		Release: render.Release{Name: "aws-base-1-36-v1", Version: "v1", KubernetesVersion: "v1.36.3"},
	}
}

// renderValues renders a values template the way the operator does.
func renderValues(file, text string, in render.Input) (map[string]any, error) {
	return render.RenderComponent(in, render.Component{Name: "test", Helm: true, Template: text, File: file})
}
