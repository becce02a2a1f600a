package controllers

import (
	"context"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/stageplan"
)

// TestPruneStaleRemovesForStage: the Flux objects of the components the plan removes (delete
// steps) are deleted without being suspended, so that Flux uninstalls them, with one Normal
// Event each; one already being deleted is left to Flux, without a second Event; a wanted
// object and a held one stay.
func TestPruneStaleRemovesForStage(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{csv1.AddToScheme, helmv2.AddToScheme, kustomizev1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	addon := &csv1.ClusterAddon{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c1", UID: types.UID("uid-c1")}, Spec: csv1.ClusterAddonSpec{ClusterName: "c1"}}
	hr := func(comp, release string) *helmv2.HelmRelease {
		o := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c1-" + comp,
			Labels: map[string]string{csv1.ClusterNameLabel: "c1", csv1.ManagedByLabel: csv1.ManagedByValue, csv1.ComponentLabel: comp, csv1.ReleaseLabel: release},
			// Flux's finalizer: the object stays until helm-controller uninstalled it.
			Finalizers: []string{"finalizers.fluxcd.io"}}}
		o.OwnerReferences = []metav1.OwnerReference{ownerRef(csv1.GroupVersion.String(), "ClusterAddon", "c1", "uid-c1", true)}
		return o
	}
	terminating := hr("old", "r1")
	terminating.DeletionTimestamp = ptr.To(metav1.Now())
	c := fake.NewClientBuilder().WithScheme(scheme).
		WithIndex(&helmv2.HelmRelease{}, generatedClusterIndex, generatedCluster).
		WithIndex(&kustomizev1.Kustomization{}, generatedClusterIndex, generatedCluster).
		WithObjects(addon, hr("cni", "r2"), hr("ccm", "r1"), hr("csi", "r1"), terminating).Build()
	rec := record.NewFakeRecorder(10)
	r := &ClusterAddonReconciler{Client: c, writer: newStatusWriter(c, nil), Recorder: rec}
	rel := &csv1.ClusterStackRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r2"}}
	rel.Status.Components = []csv1.ReleaseComponent{{Name: "cni", Kind: csv1.ComponentKindHelm}, {Name: "ccm", Kind: csv1.ComponentKindHelm}, {Name: "csi", Kind: csv1.ComponentKindHelm}}
	cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c1"}}
	s := &addonScope{cluster: cluster, addon: addon, release: rel,
		plan: &stageplan.Plan{Target: "r2", KubernetesVersion: "v1.37.2", Gated: true, ControlPlaneBehind: true,
			Remove: []string{"ccm", "old"}, Hold: map[string]string{"csi": "r1"}, Wait: []string{"ccm"}}}
	want := map[string]bool{"HelmRelease/c1-cni": true, "HelmRelease/c1-csi": true}
	for range 2 { // a second reconcile deletes nothing more, and says nothing more
		if _, err := r.observeFluxObjects(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		if err := r.pruneStale(context.Background(), s, want); err != nil {
			t.Fatal(err)
		}
	}

	get := func(name string) *helmv2.HelmRelease {
		o := &helmv2.HelmRelease{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, o); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			t.Fatal(err)
		}
		return o
	}
	if o := get("c1-ccm"); o == nil || o.DeletionTimestamp.IsZero() || o.Spec.Suspend {
		t.Errorf("c1-ccm = %+v, want it being deleted, not suspended (Flux uninstalls it)", o)
	}
	for _, name := range []string{"c1-cni", "c1-csi"} {
		if o := get(name); o == nil || !o.DeletionTimestamp.IsZero() {
			t.Errorf("%s deleted, want it kept", name)
		}
	}
	close(rec.Events)
	var events []string
	for e := range rec.Events {
		events = append(events, e)
	}
	if diff := cmp.Diff([]string{
		"Normal ComponentRemovedForUpgrade HelmRelease/c1-ccm deleted: the BeforeClusterUpgrade stage of release r2 removes ccm from Cluster c1 before its upgrade to v1.37.2; it is installed again after the upgrade",
	}, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
