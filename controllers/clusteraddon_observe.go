package controllers

import (
	"context"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxstatus"
)

// fluxObservation is what one ClusterAddon reconcile knows of its Cluster's HelmReleases and
// Kustomizations: those the ClusterAddon controls, listed once from the cache at the start
// (observeFluxObjects), and those the reconcile wrote since (with the generation each write
// gave them). Ordering, the addon stages, pruning and the status judge all read it; nothing in
// the reconcile reads one of the Cluster's Flux objects from the API again. An object another
// owner holds under a generated name is not in it: the apply of that name reports the conflict.
type fluxObservation struct {
	// listed are the controlled objects as listed, with their kinds set.
	listed []client.Object
	byRef  map[string]client.Object // listed, by kind/name
	// written are the objects this reconcile applied, by kind/name.
	written map[string]client.Object
}

// newFluxObservation observes listed, the HelmReleases and Kustomizations the ClusterAddon
// controls (with their kinds set).
func newFluxObservation(listed []client.Object) *fluxObservation {
	f := &fluxObservation{listed: listed, byRef: make(map[string]client.Object, len(listed)), written: map[string]client.Object{}}
	for _, o := range listed {
		f.byRef[fluxRef(kindOf(o), o.GetName())] = o
	}
	return f
}

// existing is the listed objects as fluxgen's decisions read them.
func (f *fluxObservation) existing() []fluxgen.ExistingObject {
	out := make([]fluxgen.ExistingObject, len(f.listed))
	for i, o := range f.listed {
		out[i] = fluxgen.ExistingObject{Kind: kindOf(o), Name: o.GetName(), Component: o.GetLabels()[csv1.ComponentLabel]}
	}
	return out
}

// fluxRef is a Flux object's reference as the ClusterAddon's status names it: Kind/name.
func fluxRef(kind, name string) string { return kind + "/" + name }

// wrote records an object this reconcile applied (its generation the one the write gave it).
func (f *fluxObservation) wrote(o client.Object) {
	f.written[fluxRef(kindOf(o), o.GetName())] = o
}

// listedAs returns the listed object of that kind and name, as the cache held it; nil when none.
func (f *fluxObservation) listedAs(kind, name string) client.Object {
	return f.byRef[fluxRef(kind, name)]
}

// current returns the object of that kind and name as this reconcile last knows it, or nil when
// it neither was listed nor written. A listed object this reconcile wrote is returned at the
// written generation, which Flux has not observed: its status (Ready, the chart version of the
// release before) is not the new spec's. A written object the cache did not have yet exists all
// the same, as written, without status (Flux has not seen it). The result is a copy.
func (f *fluxObservation) current(kind, name string) client.Object {
	ref := fluxRef(kind, name)
	written := f.written[ref]
	if o, ok := f.byRef[ref]; ok {
		cur := o.DeepCopyObject().(client.Object)
		if written != nil {
			atWrittenGeneration(cur, written)
		}
		return cur
	}
	if written == nil {
		return nil
	}
	cur := written.DeepCopyObject().(client.Object)
	cur.SetGeneration(max(cur.GetGeneration(), 1)) // the API server's generation of a new object
	return cur
}

// observeFluxObjects is the ClusterAddon's first phase: it lists the Flux objects the
// ClusterAddon controls, once, into the scope.
func (r *ClusterAddonReconciler) observeFluxObjects(ctx context.Context, s *addonScope) (ctrl.Result, error) {
	objs, err := r.ownedFluxObjects(ctx, s.addon)
	if err != nil {
		return ctrl.Result{}, err
	}
	s.flux = newFluxObservation(objs)
	return ctrl.Result{}, nil
}

// ownedFluxObjects lists the HelmReleases and Kustomizations the ClusterAddon controls, with
// their kinds set.
func (r *ClusterAddonReconciler) ownedFluxObjects(ctx context.Context, addon *csv1.ClusterAddon) ([]client.Object, error) {
	sel := byGeneratedCluster(addon.Spec.ClusterName)
	var hrs helmv2.HelmReleaseList
	if err := r.List(ctx, &hrs, client.InNamespace(addon.Namespace), sel); err != nil {
		return nil, err
	}
	var kss kustomizev1.KustomizationList
	if err := r.List(ctx, &kss, client.InNamespace(addon.Namespace), sel); err != nil {
		return nil, err
	}
	var out []client.Object
	for i := range hrs.Items {
		if o := &hrs.Items[i]; metav1.IsControlledBy(o, addon) {
			o.SetGroupVersionKind(helmv2.GroupVersion.WithKind(helmv2.HelmReleaseKind))
			out = append(out, o)
		}
	}
	for i := range kss.Items {
		if o := &kss.Items[i]; metav1.IsControlledBy(o, addon) {
			o.SetGroupVersionKind(kustomizev1.GroupVersion.WithKind(kustomizev1.KustomizationKind))
			out = append(out, o)
		}
	}
	return out, nil
}

// fluxObjectState is Flux's state of o (a HelmRelease or Kustomization) judged against the
// chart versions (Helm: the first expected, the others counting as it, fluxgen.ChartVersions) or
// source revision (Kustomize) expected; o nil: it does not exist.
func fluxObjectState(kind, name string, o client.Object, versions []string, revision string) fluxstatus.ObjectState {
	switch t := o.(type) {
	case *helmv2.HelmRelease:
		if len(versions) == 0 {
			return fluxstatus.FromHelmRelease(t, "")
		}
		return fluxstatus.FromHelmRelease(t, versions[0], versions[1:]...)
	case *kustomizev1.Kustomization:
		return fluxstatus.FromKustomization(t, revision)
	}
	return fluxstatus.Missing(kind, name, "")
}

// readyForSpec tells whether the Flux object o (a HelmRelease or Kustomization another kind is
// ordered after) is Ready for its current spec: Ready, at the generation Flux observed. nil
// (it does not exist yet) is not.
func readyForSpec(o client.Object) bool {
	if o == nil {
		return false
	}
	st := fluxObjectState(kindOf(o), o.GetName(), o, nil, "")
	return st.Ready == metav1.ConditionTrue && st.Current
}
