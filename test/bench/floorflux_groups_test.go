package bench

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

func TestWriteGroups(t *testing.T) {
	hr, ks := "HelmRelease", "Kustomization"
	objs := map[string]*unstructured.Unstructured{
		"cni": namedObject(hr, "c-cni"), "csi": namedObject(hr, "c-csi"), "dns": namedObject(ks, "c-dns"), "info": namedObject(ks, "c-info"), "ccm": namedObject(hr, "c-ccm"),
	}
	order := func(names ...string) []csv1.ReleaseComponent {
		var out []csv1.ReleaseComponent
		for _, n := range names {
			out = append(out, csv1.ReleaseComponent{Name: n})
		}
		return out
	}
	names := func(groups [][]*unstructured.Unstructured) [][]string {
		var out [][]string
		for _, g := range groups {
			var ns []string
			for _, o := range g {
				ns = append(ns, o.GetName())
			}
			out = append(out, ns)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		order []csv1.ReleaseComponent
		want  [][]string
	}{
		{"one kind: one step", order("cni", "csi", "ccm"), [][]string{{"c-cni", "c-csi", "c-ccm"}}},
		{"the reference stack: HelmRelease, then Kustomization", order("cni", "info"), [][]string{{"c-cni"}, {"c-info"}}},
		{"alphabetical without clusteraddon.yaml: Kustomization first", order("info", "cni"), [][]string{{"c-info"}, {"c-cni"}}},
		{"runs of one kind", order("cni", "csi", "dns", "info", "ccm"), [][]string{{"c-cni", "c-csi"}, {"c-dns", "c-info"}, {"c-ccm"}}},
		{"a component without an object is skipped and joins its neighbours' runs", order("dns", "gone", "info", "cni"), [][]string{{"c-dns", "c-info"}, {"c-cni"}}},
		{"no components", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := names(writeGroups(tc.order, objs)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("writeGroups = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFloorFluxClusterOnReady(t *testing.T) {
	addon := namedObject("ClusterAddon", "c")
	a, b, k := namedObject("HelmRelease", "c-a"), namedObject("HelmRelease", "c-b"), namedObject("Kustomization", "c-k")
	c := &floorFluxCluster{groups: [][]*unstructured.Unstructured{{a, b}, {k}}, addon: addon, status: []byte(`{}`), ready: map[string]bool{}, next: 1, flux: 3}
	written := func(jobs []floorFluxJob, allReady bool) []string {
		var out []string
		if allReady {
			out = append(out, "all Ready")
		}
		for _, j := range jobs {
			w := j.obj.GetName()
			if j.status != nil {
				w += "/status"
			}
			out = append(out, w)
		}
		return out
	}
	for i, step := range []struct {
		ready string
		want  []string
	}{
		{"c-a", nil},             // not the last of its group: the Kustomization waits
		{"c-b", []string{"c-k"}}, // the group's last one is Ready: the next group
		{"c-b", nil},             // seen again: nothing more
		{"c-k", []string{"all Ready", "c/status"}}, // every Flux object Ready: the ClusterAddon's status
		{"c-k", nil}, // once
	} {
		if got := written(c.onReady(step.ready)); !reflect.DeepEqual(got, step.want) {
			t.Fatalf("step %d, %s Ready: writes %v, want %v", i, step.ready, got, step.want)
		}
	}

	// Without a ClusterAddon (Flux alone): the same order, and the Cluster is done once its last
	// Flux object is Ready, with nothing more to write.
	alone := &floorFluxCluster{groups: [][]*unstructured.Unstructured{{a}, {k}}, ready: map[string]bool{}, next: 1, flux: 2}
	for i, step := range []struct {
		ready string
		want  []string
	}{
		{"c-a", []string{"c-k"}},
		{"c-k", []string{"all Ready"}},
		{"c-k", nil},
	} {
		if got := written(alone.onReady(step.ready)); !reflect.DeepEqual(got, step.want) {
			t.Fatalf("Flux alone, step %d, %s Ready: writes %v, want %v", i, step.ready, got, step.want)
		}
	}
}

// namedObject is an object of kind with name, and nothing else.
func namedObject(kind, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetKind(kind)
	u.SetName(name)
	return u
}
