package controllers

import (
	"context"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// reportPriority is the queue priority of what would only report: a Flux object's Ready that
// no component of its ClusterAddon waits for, and the requeue for a held progress report
// (progressPacer). It is below controller-runtime's low priority of the objects found when the
// operator starts, so that while the queue is long (a fleet created or found at once) the
// reconciles that write objects, which Flux then works on, go first, and the status writes that
// follow them after. A failure is never queued so: only a Flux object's report of Ready=True is,
// and failures are not held.
const reportPriority = 2 * handler.LowPriority

// awaitedObjects are, by ClusterAddon, the Flux object ("<Kind>/<name>") whose Ready its next
// component waits for, "" for none, as its last pass over the Flux objects found
// (applyFluxObjects). It only orders the queue (fluxEventHandler): a ClusterAddon it does not
// know (a restarted process knows none) is reconciled at the default priority.
type awaitedObjects struct {
	byAddon[string]
}

// onlyReport is true when addon is known to have no component waiting for object.
func (a *awaitedObjects) onlyReport(addon client.ObjectKey, object string) bool {
	awaited, known := a.get(addon)
	return known && awaited != object
}

// fluxEventHandler enqueues a HelmRelease's or Kustomization's ClusterAddons as
// handler.EnqueueRequestForOwner does, but a report of Ready=True that no component awaits at
// reportPriority (see there).
type fluxEventHandler struct {
	handler.EventHandler
	awaited *awaitedObjects
}

func (h fluxEventHandler) Update(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request])
	if !ok || !h.onlyReport(e) {
		h.EventHandler.Update(ctx, e, q)
		return
	}
	h.EventHandler.Update(ctx, e, queueAtPriority{PriorityQueue: pq, priority: reportPriority})
}

// onlyReport is true when the update makes a Flux object Ready for its spec (readyForSpec, as
// applyFluxObjects judges the object a next component waits for) and each of its ClusterAddons
// is known to have no component waiting for it.
func (h fluxEventHandler) onlyReport(e event.UpdateEvent) bool {
	kind := kindOf(e.ObjectNew)
	if kind != helmv2.HelmReleaseKind && kind != kustomizev1.KustomizationKind || e.ObjectOld == nil ||
		!readyForSpec(e.ObjectNew) || readyForSpec(e.ObjectOld) {
		return false
	}
	owners := 0
	for _, ref := range e.ObjectNew.GetOwnerReferences() {
		if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || ref.Kind != "ClusterAddon" || gv.Group != csv1.GroupVersion.Group {
			continue
		}
		owners++
		if !h.awaited.onlyReport(client.ObjectKey{Namespace: e.ObjectNew.GetNamespace(), Name: ref.Name}, kind+"/"+e.ObjectNew.GetName()) {
			return false
		}
	}
	return owners > 0
}

// queueAtPriority adds at priority what is added without one.
type queueAtPriority struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	priority int
}

func (q queueAtPriority) Add(item reconcile.Request) {
	q.AddWithOpts(priorityqueue.AddOpts{}, item)
}

func (q queueAtPriority) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	if o.Priority == nil {
		p := q.priority
		o.Priority = &p
	}
	q.PriorityQueue.AddWithOpts(o, items...)
}
