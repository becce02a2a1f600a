package controllers

import (
	"context"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"

	"k8s.io/client-go/util/workqueue"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// deletingPredicate passes updates that mark an object for deletion.
func deletingPredicate() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero()
	}}
}

// artifactChanged passes updates of a source (GitRepository, OCIRepository) whose artifact
// revision or digest, or whose generation, changed.
func artifactChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(fluxgen.SourceObject)
		n, ok2 := e.ObjectNew.(fluxgen.SourceObject)
		if !ok1 || !ok2 {
			return true
		}
		oa, na := o.GetArtifact(), n.GetArtifact()
		if (oa == nil) != (na == nil) {
			return true
		}
		if na != nil && (oa.Digest != na.Digest || oa.Revision != na.Revision) {
			return true
		}
		return o.GetGeneration() != n.GetGeneration()
	}}
}

// clusterClassHandler calls fn with the namespace and ClusterClass of a Cluster, for the old and
// the new ClusterClass when a Cluster moves between them, and only then.
func clusterClassHandler(fn func(ctx context.Context, ns, class string) []reconcile.Request) handler.EventHandler {
	enqueue := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], ns, class string) {
		if class == "" {
			return
		}
		for _, r := range fn(ctx, ns, class) {
			q.Add(r)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if c, ok := e.Object.(*clusterv1.Cluster); ok {
				enqueue(ctx, q, c.Namespace, ClusterClassOf(c))
			}
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			o, ok1 := e.ObjectOld.(*clusterv1.Cluster)
			n, ok2 := e.ObjectNew.(*clusterv1.Cluster)
			if !ok1 || !ok2 || ClusterClassOf(o) == ClusterClassOf(n) {
				return
			}
			enqueue(ctx, q, o.Namespace, ClusterClassOf(o))
			enqueue(ctx, q, n.Namespace, ClusterClassOf(n))
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if c, ok := e.Object.(*clusterv1.Cluster); ok {
				enqueue(ctx, q, c.Namespace, ClusterClassOf(c))
			}
		},
	}
}

// clusterInputChanged passes Cluster events that can change the addons: spec (generation),
// labels and annotations, initialization status, deletion; and, before the control plane is
// initialized, what Cluster API says of a topology it cannot build (the ClusterAddon reports it).
func clusterInputChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*clusterv1.Cluster)
		n, ok2 := e.ObjectNew.(*clusterv1.Cluster)
		if !ok1 || !ok2 {
			return true
		}
		return o.Generation != n.Generation ||
			!equality.Semantic.DeepEqual(o.Labels, n.Labels) ||
			!equality.Semantic.DeepEqual(o.Annotations, n.Annotations) ||
			controlPlaneInitialized(o) != controlPlaneInitialized(n) ||
			!controlPlaneInitialized(n) && topologyProblem(o) != topologyProblem(n) ||
			o.DeletionTimestamp.IsZero() != n.DeletionTimestamp.IsZero()
	}}
}

// releaseFactsChanged passes release updates that change what clusters are built from.
func releaseFactsChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*csv1.ClusterStackRelease)
		n, ok2 := e.ObjectNew.(*csv1.ClusterStackRelease)
		if !ok1 || !ok2 {
			return true
		}
		return o.Status.Revision != n.Status.Revision ||
			!equality.Semantic.DeepEqual(o.Status.Components, n.Status.Components) ||
			!equality.Semantic.DeepEqual(o.Status.Stages, n.Status.Stages) ||
			conditionStatus(o.Status.Conditions, csv1.StackValidCondition) != conditionStatus(n.Status.Conditions, csv1.StackValidCondition) ||
			o.Generation != n.Generation
	}}
}

// fluxStatusChanged passes Flux object updates whose status changed what the operator reads of
// it: the object's state as the status judge reads it (fluxObjectState: the status, reason,
// message and time of its Ready condition, whether it is stalled or reconciling, whether Flux
// observed its current generation, the revision it applied). Those are what the ClusterAddon's
// judged status is computed from, and the moments a component may have become Ready at what was
// last written (ordering across kinds, addon stages). Changes of the spec or metadata alone (the
// operator's own applies) do not pass, nor the steps Flux reports within one attempt that change
// none of that: kustomize-controller's "Building manifests", "Detecting drift" and health check
// messages in its Reconciling and Healthy conditions, helm-controller's last attempted revision
// and digests. With real Flux those are six of the fifteen status updates that deliver a Cluster's
// HelmRelease and Kustomization; a reconcile for one would read and write nothing new.
//
// A creation passes only with a status (createdWithStatus).
func fluxStatusChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: createdWithStatus,
		UpdateFunc: func(e event.UpdateEvent) bool {
			if equality.Semantic.DeepEqual(fluxStatusOf(e.ObjectOld), fluxStatusOf(e.ObjectNew)) {
				return false
			}
			return fluxStateChanged(e.ObjectOld, e.ObjectNew)
		},
	}
}

// fluxStateChanged is true when a HelmRelease's or Kustomization's state (fluxObjectState) differs
// between old and new, and for any other kind.
func fluxStateChanged(old, new client.Object) bool {
	kind := kindOf(new)
	if kind != helmv2.HelmReleaseKind && kind != kustomizev1.KustomizationKind || kindOf(old) != kind {
		return true
	}
	return !fluxObjectState(kind, old.GetName(), old, nil, "").Same(fluxObjectState(kind, new.GetName(), new, nil, ""))
}

// createdWithStatus passes the creation of a HelmRelease, Kustomization or ClusterAddon only
// when it already has a status, and the creation of any other kind. One without a status was
// created by the reconcile that applied it a moment ago, which judged it as written: reconciling
// again for it reads what that reconcile read and writes nothing (one reconcile per generated
// object per Cluster, at the rate a fleet is created). One with a status is news: an object that
// changed while the watch was broken reaches the informer as a creation when it lists again, and
// when the operator starts, the Flux objects it finds are reconciled for (their Clusters are too).
//
// Flux's CRDs default a new object's status to observedGeneration -1 (nothing observed yet): the
// API server returns the operator's own creations so. That is no status either.
func createdWithStatus(e event.CreateEvent) bool {
	switch t := e.Object.(type) {
	case *helmv2.HelmRelease:
		st := t.Status
		st.ObservedGeneration = max(st.ObservedGeneration, 0)
		return !equality.Semantic.DeepEqual(st, helmv2.HelmReleaseStatus{})
	case *kustomizev1.Kustomization:
		st := t.Status
		st.ObservedGeneration = max(st.ObservedGeneration, 0)
		return !equality.Semantic.DeepEqual(st, kustomizev1.KustomizationStatus{})
	case *csv1.ClusterAddon:
		return !equality.Semantic.DeepEqual(t.Status, csv1.ClusterAddonStatus{})
	}
	return true
}

func fluxStatusOf(o client.Object) any {
	switch t := o.(type) {
	case *helmv2.HelmRelease:
		return t.Status
	case *kustomizev1.Kustomization:
		return t.Status
	}
	return o.GetResourceVersion() // another kind: any change
}

func conditionStatus(conds []metav1.Condition, t string) metav1.ConditionStatus {
	if c := apimeta.FindStatusCondition(conds, t); c != nil {
		return c.Status
	}
	return metav1.ConditionUnknown
}

// configMapEdited passes updates of a generated ConfigMap that change its data (the cached
// copy's digest of it, cachedDataHashAnnotation), labels or other annotations, and its deletion:
// what the Applier puts back. Creations pass nothing: the reconcile that applied it made it.
func configMapEdited() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return !equality.Semantic.DeepEqual(e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations()) ||
				!equality.Semantic.DeepEqual(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels())
		},
	}
}

// fluxShardLabelChanged passes updates of a generated Flux object whose sharding.fluxcd.io/key
// label changed: it picks the Flux controllers that apply the object, and only the operator sets
// it (the Applier puts it back as generated).
func fluxShardLabelChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return false },
		DeleteFunc: func(event.DeleteEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetLabels()[fluxgen.FluxShardLabel] != e.ObjectNew.GetLabels()[fluxgen.FluxShardLabel]
		},
	}
}
