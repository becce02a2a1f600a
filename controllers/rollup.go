package controllers

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxstatus"
	"github.com/clusterstack-io/clusterstack-operator/internal/stackstatus"
)

// RollupDelay is how long a ClusterAddon change waits before it wakes the ClusterStack and
// ClusterStackRelease status roll-ups. The queue keeps one entry per object and the earliest
// time it is due, so every change within the delay is handled by one reconcile, and a roll-up
// trails its ClusterAddons by about RollupDelay (RollupInterval more while it is being written
// every second). A ClusterAddon's own conditions are not delayed.
const RollupDelay = 250 * time.Millisecond

// RollupInterval is the least time between two status writes of one ClusterStack or
// ClusterStackRelease by its roll-up reconciler (rollupPacer). RollupDelay merges the changes of
// one moment; the interval caps the rate at which a converging fleet rewrites the same object
// while every trigger (its ClusterAddons, its own status writes, its releases' writes) keeps
// coming: at ten thousand Clusters converging for minutes, one write a second per ClusterStack
// and release instead of one per handful of Clusters. An isolated change is written as soon as
// before.
const RollupInterval = time.Second

// rollupPacer remembers when a roll-up reconciler last wrote each object's status and how long a
// reconcile of it must still wait. Only a rate limit lives in memory: a restarted process
// writes at once, and the status itself is recomputed from the API every time.
type rollupPacer struct {
	mu   sync.Mutex
	last map[client.ObjectKey]time.Time
	// now is the clock (time.Now when nil).
	now clockFunc
	// countsEvery is the least time between two writes that change only counts (countsOnly):
	// --progress-status-interval, as for a ClusterAddon's progress; RollupInterval when shorter;
	// longer for a larger fleet (countsInterval). 0: counts are not paced.
	countsEvery time.Duration
}

// wait is how long a reconcile of key must wait before it may write again (0: now).
func (p *rollupPacer) wait(key client.ObjectKey) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	last, ok := p.last[key]
	if !ok {
		return 0
	}
	since := p.now.Now().Sub(last)
	if since >= max(RollupInterval, p.countsInterval(math.MaxInt32)) {
		delete(p.last, key) // no write of it is paced any more
	}
	return max(0, RollupInterval-since)
}

// countsPacedFrom is the number of Clusters from which a roll-up's counts alone are paced
// (countsOnly): a smaller fleet's roll-up is rewritten at every change, at most once per
// RollupInterval, so that it agrees with its ClusterAddons within a second; the writes that saves
// matter once hundreds of Clusters converge for minutes.
const countsPacedFrom = 100

// countsPerCluster and countsEveryMost scale the interval between a roll-up's count-only writes
// with its fleet (countsInterval): clusters × countsPerCluster (30 s for 1,000 Clusters), at
// most countsEveryMost, at least countsEvery. A fleet of thousands converging for many minutes
// then costs its roll-ups a write or two a minute, not six, while the counts a person reads in
// `kubectl get clusterstacks` lag by less than a minute; every change of a condition's status or
// reason is still written at once.
const (
	countsPerCluster = 30 * time.Millisecond
	countsEveryMost  = time.Minute
)

// countsInterval is the least time between two count-only writes of a roll-up of clusters
// Clusters; 0 when counts are not paced (countsEvery 0).
func (p *rollupPacer) countsInterval(clusters int32) time.Duration {
	if p.countsEvery <= 0 {
		return 0
	}
	return max(p.countsEvery, min(time.Duration(clusters)*countsPerCluster, countsEveryMost))
}

// countsOnly is how long a roll-up write of key, counting clusters Clusters, that changes only
// counts and messages must still wait (0: write it now): its conditions keep their status and
// reason (before, after), same says that nothing else of it changed, key was written less than
// countsInterval(clusters) ago, and the fleet is large: clusters, or namespaceAddons (every
// ClusterAddon of the namespace, with a status or not yet), is at least countsPacedFrom. While a
// fleet converges for minutes, the roll-up's counts are then written every countsInterval
// instead of every RollupInterval; a condition that changes is written as before. The counts are
// recomputed from the index at every reconcile, so the next write has the latest.
//
// namespaceAddons matters when the operator starts on a fleet: it creates the ClusterAddons at
// once, but a ClusterAddon counts for its stack and release only once its first status is
// written, up to --progress-status-interval later. Counted by clusters alone, the fleet would
// look small for that long and its roll-ups be rewritten every second.
func (p *rollupPacer) countsOnly(key client.ObjectKey, clusters, namespaceAddons int32, before, after []metav1.Condition, same bool) time.Duration {
	if max(clusters, namespaceAddons) < countsPacedFrom || !same || !sameConditionStates(before, after) {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	last, ok := p.last[key]
	if !ok {
		return 0
	}
	return max(0, p.countsInterval(clusters)-p.now.Now().Sub(last))
}

// sameConditionStates is true when a and b hold the same condition types with the same status,
// reason and observed generation (messages and times aside).
func sameConditionStates(a, b []metav1.Condition) bool {
	return fluxstatus.SameConditions(a, b, func(x, y *metav1.Condition) bool {
		return x.Status == y.Status && x.Reason == y.Reason && x.ObservedGeneration == y.ObservedGeneration
	})
}

// track returns a func that records a write of key if obj's resourceVersion has moved on by
// the time it runs (defer it after reading obj: a status write updates obj in place).
func (p *rollupPacer) track(key client.ObjectKey, obj client.Object) func() {
	seen := obj.GetResourceVersion()
	return func() {
		if obj.GetResourceVersion() != seen {
			p.wrote(key)
		}
	}
}

// wrote records a status write of key.
func (p *rollupPacer) wrote(key client.ObjectKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last == nil {
		p.last = map[client.ObjectKey]time.Time{}
	}
	p.last[key] = p.now.Now()
}

// AddonFleets keeps the roll-ups of the ClusterAddons (stackstatus.Index: a Fleet per
// ClusterStack, the Cluster counts per release) up to date from the manager's ClusterAddon
// informer, one event at a time, and wakes the roll-up reconcilers after RollupDelay once the
// index has the change, so they read counts in O(1) instead of listing every ClusterAddon.
type AddonFleets struct {
	index *stackstatus.Index
	// synced reports whether the index has seen the informer's initial list.
	synced func() bool

	mu sync.Mutex
	// subscribers are called, after the index has it, with each ClusterAddon that changed
	// (before and after the change).
	subscribers []func(addons ...*csv1.ClusterAddon)
}

// NewAddonFleets registers the index's event handler on the manager's ClusterAddon informer; call
// it before the manager starts.
func NewAddonFleets(ctx context.Context, mgr ctrl.Manager) (*AddonFleets, error) {
	inf, err := mgr.GetCache().GetInformer(ctx, &csv1.ClusterAddon{})
	if err != nil {
		return nil, fmt.Errorf("get the ClusterAddon informer: %w", err)
	}
	f := &AddonFleets{index: stackstatus.NewIndex()}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if a, ok := obj.(*csv1.ClusterAddon); ok {
				f.index.Set(a)
				f.notify(a)
			}
		},
		UpdateFunc: func(oldObj, obj any) {
			a, ok := obj.(*csv1.ClusterAddon)
			if !ok {
				return
			}
			f.index.Set(a)
			if old, ok := oldObj.(*csv1.ClusterAddon); ok {
				f.notify(old, a)
			} else {
				f.notify(a)
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				// The delete was missed while the watch was down: the key is sure, the object is
				// its last known state.
				if ns, name, err := toolscache.SplitMetaNamespaceKey(t.Key); err == nil {
					f.index.Delete(ns, name)
				}
				obj = t.Obj
			} else if a, ok := obj.(*csv1.ClusterAddon); ok {
				f.index.Delete(a.Namespace, a.Name)
			}
			if a, ok := obj.(*csv1.ClusterAddon); ok {
				f.notify(a)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("watch ClusterAddons for the stack roll-ups: %w", err)
	}
	f.synced = reg.HasSynced
	return f, nil
}

// Synced reports whether the index has seen every ClusterAddon of the informer's initial list: a
// roll-up computed before would count a fleet only partly.
func (f *AddonFleets) Synced() bool { return f.synced != nil && f.synced() }

// Fleet is the Fleet of the ClusterStack namespace/stack (its ClusterAddons by status.clusterStack).
func (f *AddonFleets) Fleet(namespace, stack string) stackstatus.Fleet {
	return f.index.Fleet(namespace, stack)
}

// NamespaceAddons counts every ClusterAddon of namespace, with a status or not yet.
func (f *AddonFleets) NamespaceAddons(namespace string) int32 {
	return f.index.NamespaceAddons(namespace)
}

// ReleaseClusters counts the ClusterAddons of namespace whose desired release is release.
func (f *AddonFleets) ReleaseClusters(namespace, release string) csv1.ClusterCounts {
	return f.index.ReleaseClusters(namespace, release)
}

func (f *AddonFleets) notify(addons ...*csv1.ClusterAddon) {
	f.mu.Lock()
	subs := f.subscribers
	f.mu.Unlock()
	for _, s := range subs {
		s(addons...)
	}
}

// Source is a watch source for a roll-up controller: each ClusterAddon change, once the index
// has it, enqueues the objects mapFn names (for the ClusterAddon before and after the change)
// after RollupDelay. Enqueued from the index's own event handler, a reconcile never reads a
// Fleet older than the change that woke it.
func (f *AddonFleets) Source(mapFn func(*csv1.ClusterAddon) []reconcile.Request) source.Source {
	return source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.subscribers = append(f.subscribers, func(addons ...*csv1.ClusterAddon) {
			for _, a := range addons {
				for _, r := range mapFn(a) {
					q.AddAfter(r, RollupDelay)
				}
			}
		})
		return nil
	})
}

// stackOfAddonRequest is the ClusterStack of a ClusterAddon (status.clusterStack), if any.
func stackOfAddonRequest(a *csv1.ClusterAddon) []reconcile.Request {
	if a.Status.ClusterStack == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: a.Namespace, Name: a.Status.ClusterStack}}}
}

// releasesOfAddonRequest are the releases a ClusterAddon wants and last applied.
func releasesOfAddonRequest(a *csv1.ClusterAddon) []reconcile.Request {
	var reqs []reconcile.Request
	for _, rel := range []string{a.Status.DesiredRelease, a.Status.LastAppliedRelease} {
		if rel != "" {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: a.Namespace, Name: rel}})
		}
	}
	return reqs
}

// StackReconcileDelay is RollupDelay for the ClusterStack, ClusterStackRelease and updates
// reconcilers woken by Cluster, ClusterAddon and generated Flux object changes: each of their
// reconciles reads which Clusters use a release or which Clusters a wave holds, and a converging
// fleet changes them once per Cluster, so at ten thousand Clusters they are merged over longer. A
// release is kept or removed, a wave moves on, at most this much later.
const StackReconcileDelay = 2 * time.Second

// coalesced delays every request h enqueues by StackReconcileDelay, so that a burst of events for
// the same object (one per Cluster of a converging fleet) ends in one reconcile.
func coalesced(h handler.EventHandler) handler.EventHandler {
	wrap := func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
		return delayedQueue{q}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Create(ctx, e, wrap(q))
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(ctx, e, wrap(q))
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Delete(ctx, e, wrap(q))
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Generic(ctx, e, wrap(q))
		},
	}
}

// delayedQueue turns Add into AddAfter(StackReconcileDelay). It is deliberately not a priority queue, so
// handlers use Add.
type delayedQueue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
}

// Add adds r after StackReconcileDelay.
func (q delayedQueue) Add(r reconcile.Request) { q.AddAfter(r, StackReconcileDelay) }
