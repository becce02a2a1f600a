package controllers

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/overrides"
)

// +kubebuilder:rbac:groups=clusterstack.io,resources=clusteraddonoverrides,verbs=get;list;watch

// overrideTargetIndex indexes ClusterAddonOverrides by the Cluster they name, or
// overrideBySelector for those selecting Clusters by label.
const overrideTargetIndex = "clusterstack.io/override-target"

// overrideBySelector is the overrideTargetIndex value of an override with spec.clusterSelector
// (no Cluster can have this name: it is not a DNS name).
const overrideBySelector = "*selector"

func overrideTarget(o client.Object) []string {
	ov, ok := o.(*csv1.ClusterAddonOverride)
	if !ok {
		return nil
	}
	if ov.Spec.ClusterName != "" {
		return []string{ov.Spec.ClusterName}
	}
	return []string{overrideBySelector}
}

// setupOverrides registers the override index and the watch that re-renders the Clusters an
// override selects, before and after a change.
func (r *ClusterAddonReconciler) setupOverrides(mgr ctrl.Manager) error {
	return mgr.GetFieldIndexer().IndexField(context.Background(), &csv1.ClusterAddonOverride{}, overrideTargetIndex, overrideTarget)
}

// overridesFor returns the ClusterAddonOverrides that apply to the Cluster, in precedence order
// (internal/overrides), read from the cache through overrideTargetIndex.
func (r *ClusterAddonReconciler) overridesFor(ctx context.Context, c *clusterv1.Cluster) ([]*csv1.ClusterAddonOverride, error) {
	var all []*csv1.ClusterAddonOverride
	for _, key := range []string{c.Name, overrideBySelector} {
		var list csv1.ClusterAddonOverrideList
		if err := r.List(ctx, &list, client.InNamespace(c.Namespace), client.MatchingFields{overrideTargetIndex: key}); err != nil {
			return nil, err
		}
		for i := range list.Items {
			all = append(all, &list.Items[i])
		}
	}
	return overrides.ForCluster(all, c.Name, c.Labels), nil
}

// clustersOfOverride maps an override to the Clusters of its namespace it selects.
func (r *ClusterAddonReconciler) clustersOfOverride(ctx context.Context, o *csv1.ClusterAddonOverride) []reconcile.Request {
	if o.Spec.ClusterName != "" {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.Namespace, Name: o.Spec.ClusterName}}}
	}
	var list clusterv1.ClusterList
	if err := r.List(ctx, &list, client.InNamespace(o.Namespace)); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		c := &list.Items[i]
		if r.Shard.selects(c) && overrides.Selects(o, c.Name, c.Labels) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(c)})
		}
	}
	return reqs
}

// overrideHandler enqueues the Clusters an override selects; on an update, those the old and
// the new override select (a Cluster it no longer selects must drop its values).
func (r *ClusterAddonReconciler) overrideHandler() handler.TypedEventHandler[client.Object, reconcile.Request] {
	add := func(ctx context.Context, o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		if ov, ok := o.(*csv1.ClusterAddonOverride); ok {
			for _, req := range r.clustersOfOverride(ctx, ov) {
				q.Add(req)
			}
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.Object, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.ObjectOld, q)
			add(ctx, e.ObjectNew, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.Object, q)
		},
	}
}
