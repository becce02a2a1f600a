package controllers

import (
	"context"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
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

// nextStepPriority is the queue priority of the Ready of a Flux object that a next component of
// its ClusterAddon waits for: controller-runtime's low priority, that of the objects found when
// the operator starts, and below the default of a Cluster created while it runs. While the queue
// is long (a fleet created or found at once), the Clusters' first components are written before
// their next ones, in the order they came (the queue keeps the order of each priority): what Flux
// works on first is every Cluster's first components. With a short queue it changes nothing. The
// time such a ClusterAddon waits in the queue does not count against its held progress report
// (progressPacer.nextStepReady): the next component shares the report's write.
const nextStepPriority = handler.LowPriority

// deferredRenderPriority is the queue priority of a reconcile that comes back because its
// values render was put off (RenderGate: the namespace had its share running): above
// controller-runtime's low priority, that of the Clusters found when the operator starts and of
// next steps (nextStepPriority), and below the default of a Cluster created or changed while it
// runs. Its Cluster was taken from the queue once already: at its own priority it would come back
// behind every reconcile queued meanwhile, when the operator starts on a fleet behind the rest of
// the fleet.
const deferredRenderPriority = handler.LowPriority / 2

// deferredRender is the result of a reconcile whose values render was put off.
func deferredRender() ctrl.Result {
	p := deferredRenderPriority
	return ctrl.Result{RequeueAfter: renderRetry, Priority: &p}
}

// fluxEventHandler enqueues a HelmRelease's or Kustomization's ClusterAddons as
// handler.EnqueueRequestForOwner does, but a report of Ready=True at reportPriority when no
// component awaits it, and at nextStepPriority when one does (see there).
//
// A report of progress (progressDue) of a Flux object whose ClusterAddons all have a progress
// report held (progressPacer) is queued for when the held report is due, at reportPriority: the
// reconcile that writes the held report then reads this one too, and Flux's steps within the
// interval (helm-controller's "Fulfilling prerequisites", "Running 'install' action",
// kustomize-controller's "Reconciliation in progress") cost that one reconcile, not one each.
type fluxEventHandler struct {
	handler.EventHandler
	awaited *awaitedObjects
	// pace is the ClusterAddon reconciler's progress pacer, told of the Ready a next component
	// awaits and asked when a held report is due; nil: neither.
	pace *progressPacer
	// interval is the pacer's (StatusOptions.ProgressInterval); 0: nothing is put off.
	interval time.Duration
}

func (h fluxEventHandler) Update(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request])
	if !ok {
		h.EventHandler.Update(ctx, e, q)
		return
	}
	switch report, addons := h.readyReport(e); report {
	case reportOnly:
		h.EventHandler.Update(ctx, e, queueAtPriority{PriorityQueue: pq, priority: reportPriority})
	case reportAwaited:
		if h.pace != nil {
			for _, addon := range addons {
				h.pace.nextStepReady(addon)
			}
		}
		h.EventHandler.Update(ctx, e, queueAtPriority{PriorityQueue: pq, priority: nextStepPriority})
	default:
		if due := h.progressDue(e); due > 0 {
			h.EventHandler.Update(ctx, e, queueAtPriority{PriorityQueue: pq, priority: reportPriority, after: due})
			return
		}
		h.EventHandler.Update(ctx, e, q)
	}
}

// progressDue is how long the reconcile for a Flux object's update may wait: until the soonest
// progress report held for one of its ClusterAddons is due, when the update only reports
// progress and every ClusterAddon of it has a report held (0 otherwise: queued now). An update
// only reports progress when Flux changed nothing but the object's status, and the object is on
// its way (Ready Unknown or not set, not stalled, not being deleted): a failure, a Ready, a change
// of its spec or labels and a ClusterAddon with nothing held are never put off.
func (h fluxEventHandler) progressDue(e event.UpdateEvent) time.Duration {
	if h.pace == nil || h.interval <= 0 || e.ObjectOld == nil || e.ObjectNew == nil {
		return 0
	}
	kind := kindOf(e.ObjectNew)
	if kind != helmv2.HelmReleaseKind && kind != kustomizev1.KustomizationKind || kindOf(e.ObjectOld) != kind ||
		e.ObjectNew.GetDeletionTimestamp() != nil || e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() ||
		!equality.Semantic.DeepEqual(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) {
		return 0
	}
	if st := fluxObjectState(kind, e.ObjectNew.GetName(), e.ObjectNew, nil, ""); st.Ready != metav1.ConditionUnknown || st.Stalled {
		return 0
	}
	var due time.Duration
	for _, addon := range addonOwners(e.ObjectNew) {
		d := h.pace.due(addon, h.interval)
		if d <= 0 {
			return 0
		}
		if due == 0 || d < due {
			due = d
		}
	}
	return due
}

// addonOwners is the ClusterAddons among o's owners, in o's namespace.
func addonOwners(o client.Object) []client.ObjectKey {
	var addons []client.ObjectKey
	for _, ref := range o.GetOwnerReferences() {
		if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || ref.Kind != "ClusterAddon" || gv.Group != csv1.GroupVersion.Group {
			continue
		}
		addons = append(addons, client.ObjectKey{Namespace: o.GetNamespace(), Name: ref.Name})
	}
	return addons
}

// A Flux object's update, as the queue orders it.
type readyReport int

const (
	notReadyReport readyReport = iota // anything else: a failure, progress, an unknown ClusterAddon
	reportOnly                        // Ready for its spec; no component of its ClusterAddons waits for it
	reportAwaited                     // Ready for its spec; a next component of its ClusterAddon waits for it
)

// readyReport says whether the update makes a Flux object Ready for its spec (readyForSpec, as
// applyFluxObjects judges the object a next component waits for), and if so whether a component of
// one of its ClusterAddons waits for it, and which. It is notReadyReport when a ClusterAddon of it
// is not known (a restarted process knows none).
func (h fluxEventHandler) readyReport(e event.UpdateEvent) (readyReport, []client.ObjectKey) {
	kind := kindOf(e.ObjectNew)
	if kind != helmv2.HelmReleaseKind && kind != kustomizev1.KustomizationKind || e.ObjectOld == nil ||
		!readyForSpec(e.ObjectNew) || readyForSpec(e.ObjectOld) {
		return notReadyReport, nil
	}
	owners := addonOwners(e.ObjectNew)
	var awaiting []client.ObjectKey
	for _, addon := range owners {
		waitsFor, known := h.awaited.get(addon)
		if !known {
			return notReadyReport, nil
		}
		if waitsFor == kind+"/"+e.ObjectNew.GetName() {
			awaiting = append(awaiting, addon)
		}
	}
	switch {
	case len(owners) == 0:
		return notReadyReport, nil
	case len(awaiting) > 0:
		return reportAwaited, awaiting
	default:
		return reportOnly, nil
	}
}

// queueAtPriority adds at priority what is added without one, and, when after is set, no sooner
// than after from now what is added without a time.
type queueAtPriority struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	priority int
	after    time.Duration
}

func (q queueAtPriority) Add(item reconcile.Request) {
	q.AddWithOpts(priorityqueue.AddOpts{}, item)
}

func (q queueAtPriority) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	if o.Priority == nil {
		p := q.priority
		o.Priority = &p
	}
	if o.After == 0 {
		o.After = q.after
	}
	q.PriorityQueue.AddWithOpts(o, items...)
}
