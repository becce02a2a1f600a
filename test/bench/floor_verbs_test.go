package bench

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
)

// TestCreatedKinds: the floor writer creates (POST) what the operator created and applies what
// it applied, as the templates' managedFields record it.
func TestCreatedKinds(t *testing.T) {
	withFields := func(kind string, fields ...metav1.ManagedFieldsEntry) *unstructured.Unstructured {
		u := namedObject(kind, "x")
		u.SetManagedFields(fields)
		return u
	}
	created := metav1.ManagedFieldsEntry{Manager: "manager", Operation: metav1.ManagedFieldsOperationUpdate}
	statusWrite := metav1.ManagedFieldsEntry{Manager: "manager", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status"}
	applied := metav1.ManagedFieldsEntry{Manager: "clusterstack-operator", Operation: metav1.ManagedFieldsOperationApply}
	statusApplied := metav1.ManagedFieldsEntry{Manager: "flux", Operation: metav1.ManagedFieldsOperationApply, Subresource: "status"}
	got := createdKinds([]*unstructured.Unstructured{
		withFields("ClusterAddon", created, statusWrite), // ensureAddon's create, then its status
		withFields("ConfigMap", applied),
		withFields("HelmRelease", applied, statusWrite),                  // Flux's status writes are no apply of the object
		withFields("Kustomization", created, applied),                    // applied at some point: applied
		withFields("GitRepository", created, statusApplied),              // an apply of the status subresource only: created
		withFields("Secret", metav1.ManagedFieldsEntry{Subresource: ""}), // no operation recorded: not an apply
	})
	want := map[string]bool{"ClusterAddon": true, "GitRepository": true, "Secret": true}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("createdKinds = %v, want %v", got, want)
	}
}

// TestFloorObject: a template object becomes the same object for another Cluster, with every
// reference to the template Cluster's objects pointing at the other Cluster's, the values
// ConfigMap's hashed name included (Flux alone's HelmReleases must find their values).
func TestFloorObject(t *testing.T) {
	rel := "aws-base-1-36-v1"
	labels := map[string]string{csv1.ReleaseLabel: rel, csv1.ComponentLabel: "cni", csv1.ClusterNameLabel: templateCluster}
	hr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
		"metadata": map[string]any{"name": fluxgen.AddonObjectName(templateCluster, "cni"), "namespace": benchNS, "uid": "u", "resourceVersion": "7",
			"generation": int64(2), "finalizers": []any{"finalizers.fluxcd.io"}, "managedFields": []any{map[string]any{"manager": "m"}}},
		"spec": map[string]any{
			"releaseName": templateCluster + "-cni",
			"kubeConfig":  map[string]any{"secretRef": map[string]any{"name": fluxgen.KubeconfigSecretName(templateCluster)}},
			"valuesFrom":  []any{map[string]any{"kind": "ConfigMap", "name": fluxgen.ValuesConfigMapName(templateCluster, rel)}},
		},
		"status": map[string]any{"observedGeneration": int64(2)},
	}}
	hr.SetLabels(labels)
	got, err := floorObject(hr, "c-0007", floorNS)
	if err != nil {
		t.Fatal(err)
	}
	if got.GetName() != fluxgen.AddonObjectName("c-0007", "cni") || got.GetNamespace() != floorNS || got.GetLabels()[csv1.ClusterNameLabel] != "c-0007" {
		t.Errorf("name, namespace, cluster label: %s/%s %v", got.GetNamespace(), got.GetName(), got.GetLabels())
	}
	values, _, _ := unstructured.NestedSlice(got.Object, "spec", "valuesFrom")
	if name := values[0].(map[string]any)["name"]; name != fluxgen.ValuesConfigMapName("c-0007", rel) {
		t.Errorf("valuesFrom names %v, want the Cluster's values ConfigMap %s", name, fluxgen.ValuesConfigMapName("c-0007", rel))
	}
	if s, _, _ := unstructured.NestedString(got.Object, "spec", "kubeConfig", "secretRef", "name"); s != "c-0007-kubeconfig" {
		t.Errorf("kubeConfig names %q", s)
	}
	if s, _, _ := unstructured.NestedString(got.Object, "spec", "releaseName"); s != "c-0007-cni" {
		t.Errorf("releaseName %q", s)
	}
	for _, f := range [][]string{{"status"}, {"metadata", "uid"}, {"metadata", "resourceVersion"}, {"metadata", "generation"}, {"metadata", "finalizers"}, {"metadata", "managedFields"}} {
		if _, found, _ := unstructured.NestedFieldNoCopy(got.Object, f...); found {
			t.Errorf("%v kept: the API server sets it", f)
		}
	}

	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": fluxgen.ValuesConfigMapName(templateCluster, rel)}, "data": map[string]any{"cluster_name": templateCluster}}}
	cm.SetLabels(labels)
	if got, err = floorObject(cm, "c-0007", floorNS); err != nil {
		t.Fatal(err)
	}
	if got.GetName() != fluxgen.ValuesConfigMapName("c-0007", rel) || got.Object["data"].(map[string]any)["cluster_name"] != "c-0007" {
		t.Errorf("values ConfigMap %s with data %v", got.GetName(), got.Object["data"])
	}
}
