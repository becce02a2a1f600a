package controllers

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// Shard is the share of the Clusters one instance of the operator delivers addons to
// (--watch-label-selector), as Flux's controllers shard the objects they reconcile. Its zero
// value, like a nil *Shard, is a single instance: every Cluster, and the ClusterAddons whose
// Cluster is gone.
//
// Only the per-Cluster controllers (the ClusterAddon reconciler and the ClusterAddon status
// reconciler) are sharded; the caches are not filtered, so each instance sees every Cluster and
// ClusterAddon and can tell a Cluster that moved to another shard (still there, with other
// labels) from one that is gone.
type Shard struct {
	// Selector selects the Clusters of this instance by their labels; nil selects every Cluster.
	Selector labels.Selector
	// LeaveOrphans: the ClusterAddons whose Cluster is gone (deleted, its labels with it) are left
	// to the instance that manages the stacks (--manage-stacks), so that exactly one instance
	// removes them. Set on the other instances (shards).
	LeaveOrphans bool
}

// ParseShardSelector parses the value of --watch-label-selector: a Kubernetes label selector
// ("clusterstack.io/shard=a", "!clusterstack.io/shard"); empty selects every Cluster (nil).
func ParseShardSelector(s string) (labels.Selector, error) {
	if s == "" {
		return nil, nil
	}
	sel, err := labels.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("parse the Cluster label selector %q: %w", s, err)
	}
	return sel, nil
}

// selects tells whether the Cluster is this instance's.
func (s *Shard) selects(c *clusterv1.Cluster) bool {
	return s == nil || s.Selector == nil || s.Selector.Matches(labels.Set(c.GetLabels()))
}

// owns tells whether this instance acts for the Cluster key: the Cluster (read from the cache)
// is selected, or it is gone and this instance handles orphans. Another shard's Cluster, and one
// that moved to another shard, are left alone: nothing is written, nothing deleted.
func (s *Shard) owns(ctx context.Context, c client.Reader, key client.ObjectKey) (bool, error) {
	if s == nil || (s.Selector == nil && !s.LeaveOrphans) {
		return true, nil
	}
	cluster := &clusterv1.Cluster{}
	if err := c.Get(ctx, key, cluster); err != nil {
		if apierrors.IsNotFound(err) {
			return !s.LeaveOrphans, nil
		}
		return false, fmt.Errorf("read Cluster %s to tell its shard: %w", key, err)
	}
	return s.selects(cluster), nil
}

// predicate passes the events of the Clusters this instance serves: creations and updates of
// selected Clusters (a Cluster relabelled into the shard arrives as an update), and every
// deletion (a gone Cluster's ClusterAddon may be an orphan to remove; Reconcile decides).
func (s *Shard) predicate() predicate.Predicate {
	sel := func(o client.Object) bool {
		c, ok := o.(*clusterv1.Cluster)
		return !ok || s.selects(c)
	}
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return sel(e.Object) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return sel(e.ObjectNew) },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		GenericFunc: func(e event.GenericEvent) bool { return sel(e.Object) },
	}
}
