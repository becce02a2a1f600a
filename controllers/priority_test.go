package controllers

import (
	"context"
	"fmt"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// enqueueAddonOwner is handler.EnqueueRequestForOwner of ClusterAddons, as the reconciler wraps
// it in fluxEventHandler.
func enqueueAddonOwner(t *testing.T) handler.EventHandler {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := csv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	mapper := apimeta.NewDefaultRESTMapper(nil)
	mapper.Add(csv1.GroupVersion.WithKind("ClusterAddon"), apimeta.RESTScopeNamespace)
	return handler.EnqueueRequestForOwner(scheme, mapper, &csv1.ClusterAddon{})
}

// TestFluxEventHandlerPriority: a Flux object's report of Ready for its spec (readyForSpec) is
// queued at reportPriority when its ClusterAddon is known to await nothing of it, and at
// nextStepPriority when a next component of it awaits it; a failure, any other status change and
// an object of a ClusterAddon this process does not know go at the default priority, to the
// ClusterAddon's request as handler.EnqueueRequestForOwner makes it.
func TestFluxEventHandlerPriority(t *testing.T) {
	owned := func(o client.Object, addon string) client.Object {
		o.SetNamespace("ns")
		o.SetResourceVersion("1")
		o.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: csv1.GroupVersion.String(), Kind: "ClusterAddon", Name: addon, UID: "u", Controller: new(true)}})
		return o
	}
	hr := func(name, addon string, ready metav1.ConditionStatus) client.Object {
		o := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if ready != "" {
			o.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: ready, Reason: "R"}}
		}
		return owned(o, addon)
	}
	ks := func(name, addon string, ready metav1.ConditionStatus) client.Object {
		o := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if ready != "" {
			o.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: ready, Reason: "R"}}
		}
		return owned(o, addon)
	}
	// at sets o's generation and the generation Flux observed.
	at := func(o client.Object, generation, observed int64) client.Object {
		o.SetGeneration(generation)
		switch t := o.(type) {
		case *helmv2.HelmRelease:
			t.Status.ObservedGeneration = observed
		case *kustomizev1.Kustomization:
			t.Status.ObservedGeneration = observed
		}
		return o
	}
	var awaited awaitedObjects
	awaited.put(types.NamespacedName{Namespace: "ns", Name: "c1"}, "HelmRelease/c1-cni") // its Kustomization waits
	awaited.put(types.NamespacedName{Namespace: "ns", Name: "c2"}, "")                   // every component written
	h := fluxEventHandler{EventHandler: enqueueAddonOwner(t), awaited: &awaited}

	for _, tc := range []struct {
		name     string
		old, new client.Object
		addon    string
		want     int
	}{
		{"an awaited HelmRelease Ready", hr("c1-cni", "c1", metav1.ConditionUnknown), hr("c1-cni", "c1", metav1.ConditionTrue), "c1", nextStepPriority},
		{"a HelmRelease Ready that nothing awaits", hr("c2-cni", "c2", metav1.ConditionUnknown), hr("c2-cni", "c2", metav1.ConditionTrue), "c2", reportPriority},
		{"a Kustomization Ready that nothing awaits", ks("c2-csi", "c2", ""), ks("c2-csi", "c2", metav1.ConditionTrue), "c2", reportPriority},
		{"another object of an addon that awaits one", ks("c1-csi", "c1", ""), ks("c1-csi", "c1", metav1.ConditionTrue), "c1", reportPriority},
		{"a failure", hr("c2-cni", "c2", metav1.ConditionTrue), hr("c2-cni", "c2", metav1.ConditionFalse), "c2", 0},
		{"progress, not Ready", hr("c2-cni", "c2", ""), hr("c2-cni", "c2", metav1.ConditionUnknown), "c2", 0},
		{"Ready, and Ready before", hr("c2-cni", "c2", metav1.ConditionTrue), hr("c2-cni", "c2", metav1.ConditionTrue), "c2", 0},
		{"Ready for an older spec, then for its own", at(hr("c2-cni", "c2", metav1.ConditionTrue), 2, 1), at(hr("c2-cni", "c2", metav1.ConditionTrue), 2, 2), "c2", reportPriority},
		{"Ready, but for an older spec", at(hr("c2-cni", "c2", metav1.ConditionUnknown), 2, 1), at(hr("c2-cni", "c2", metav1.ConditionTrue), 2, 1), "c2", 0},
		{"an awaited HelmRelease Ready for its own spec", at(hr("c1-cni", "c1", metav1.ConditionTrue), 2, 1), at(hr("c1-cni", "c1", metav1.ConditionTrue), 2, 2), "c1", nextStepPriority},
		{"a ClusterAddon this process does not know", hr("c3-cni", "c3", metav1.ConditionUnknown), hr("c3-cni", "c3", metav1.ConditionTrue), "c3", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := priorityqueue.New[reconcile.Request]("test")
			defer q.ShutDown()
			tc.new.SetResourceVersion("2")
			h.Update(context.Background(), event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}, q)
			if q.Len() != 1 {
				t.Fatalf("queued %d requests, want 1", q.Len())
			}
			req, prio, _ := q.GetWithPriority()
			if want := (reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: tc.addon}}); req != want || prio != tc.want {
				t.Errorf("queued %v at priority %d, want %v at %d", req, prio, want, tc.want)
			}
		})
	}

	// Once the ClusterAddon is deleted, nothing is known of it.
	awaited.forget(types.NamespacedName{Namespace: "ns", Name: "c2"})
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	readyNow := hr("c2-cni", "c2", metav1.ConditionTrue)
	readyNow.SetResourceVersion("2")
	h.Update(context.Background(), event.UpdateEvent{ObjectOld: hr("c2-cni", "c2", metav1.ConditionUnknown), ObjectNew: readyNow}, q)
	if _, prio, _ := q.GetWithPriority(); prio != 0 {
		t.Errorf("a forgotten ClusterAddon's object's Ready queued at priority %d, want the default", prio)
	}
}

// TestStatusRequeue: a requeue that only a held progress report asks for comes at
// reportPriority; one a grace period asks for too, no later, keeps the request's own (nil).
func TestStatusRequeue(t *testing.T) {
	for _, tc := range []struct {
		judgeAgain, held, want time.Duration
		report                 bool
	}{
		{0, 5 * time.Second, 5 * time.Second, true},
		{time.Minute, 5 * time.Second, 5 * time.Second, true},
		{3 * time.Second, 5 * time.Second, 3 * time.Second, false},
		{5 * time.Second, 5 * time.Second, 5 * time.Second, false},
		{3 * time.Second, 0, 3 * time.Second, false},
		{0, 0, 0, false},
	} {
		r := statusRequeue(tc.judgeAgain, tc.held)
		if r.RequeueAfter != tc.want || (r.Priority != nil) != tc.report || r.Priority != nil && *r.Priority != reportPriority {
			t.Errorf("judge again in %s, held for %s: %+v, want after %s (at reportPriority: %t)", tc.judgeAgain, tc.held, r, tc.want, tc.report)
		}
	}
}

// TestLowestRequeueKeepsPriority: the soonest requeue wins with its priority; of two equally
// soon, the request's own priority unless both ask for the same.
func TestLowestRequeueKeepsPriority(t *testing.T) {
	low := reportPriority
	held := reconcile.Result{RequeueAfter: 10 * time.Second, Priority: &low}
	for _, tc := range []struct {
		name string
		a, b reconcile.Result
		want reconcile.Result
	}{
		{"none", reconcile.Result{}, reconcile.Result{}, reconcile.Result{}},
		{"only the held write", reconcile.Result{}, held, held},
		{"a phase's sooner requeue", reconcile.Result{RequeueAfter: time.Second}, held, reconcile.Result{RequeueAfter: time.Second}},
		{"the held write sooner", reconcile.Result{RequeueAfter: time.Minute}, held, held},
		{"the same time: the request's own", reconcile.Result{RequeueAfter: 10 * time.Second}, held, reconcile.Result{RequeueAfter: 10 * time.Second}},
		{"the same time, the other way round", held, reconcile.Result{RequeueAfter: 10 * time.Second}, reconcile.Result{RequeueAfter: 10 * time.Second}},
		{"the same time, both held", held, held, held},
	} {
		got := lowestRequeue(tc.a, tc.b)
		if got.RequeueAfter != tc.want.RequeueAfter || (got.Priority == nil) != (tc.want.Priority == nil) || got.Priority != nil && *got.Priority != *tc.want.Priority {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestNextStepReadyTellsThePacer: the Ready a next component awaits tells the progress pacer
// (progressPacer.nextStepReady) of each ClusterAddon that awaits it; a report nothing awaits does
// not.
func TestNextStepReadyTellsThePacer(t *testing.T) {
	readyEvent := func(addon string) event.UpdateEvent {
		old := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: addon + "-cni", Namespace: "ns", ResourceVersion: "1",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: csv1.GroupVersion.String(), Kind: "ClusterAddon", Name: addon, UID: "u", Controller: new(true)}}}}
		ready := old.DeepCopy()
		ready.ResourceVersion = "2"
		ready.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "R"}}
		return event.UpdateEvent{ObjectOld: old, ObjectNew: ready}
	}
	now := time.Unix(1_700_000_000, 0)
	pace := &progressPacer{now: func() time.Time { return now }}
	awaits, reports := types.NamespacedName{Namespace: "ns", Name: "c1"}, types.NamespacedName{Namespace: "ns", Name: "c2"}
	var awaited awaitedObjects
	awaited.put(awaits, "HelmRelease/c1-cni")
	awaited.put(reports, "")
	pace.held = map[client.ObjectKey]heldWrite{awaits: {since: now}, reports: {since: now}}
	h := fluxEventHandler{EventHandler: enqueueAddonOwner(t), awaited: &awaited, pace: pace}
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	now = now.Add(time.Second)
	h.Update(context.Background(), readyEvent("c1"), q)
	h.Update(context.Background(), readyEvent("c2"), q)
	if got := pace.held[awaits].nextStepReady; !got.Equal(now) {
		t.Errorf("the awaited Ready: the pacer was told at %v, want %v", got, now)
	}
	if got := pace.held[reports].nextStepReady; !got.IsZero() {
		t.Errorf("a Ready nothing awaits: the pacer was told at %v", got)
	}
}

// TestDeferredRenderComesBackAhead: a reconcile whose render was put off comes back after
// renderRetry ahead of the Clusters found at start and the next steps queued meanwhile (low
// priority) and of the reports, and behind a Cluster created or changed meanwhile (the default).
func TestDeferredRenderComesBackAhead(t *testing.T) {
	res := deferredRender()
	if res.RequeueAfter != renderRetry || res.Priority == nil {
		t.Fatalf("deferred render: %+v, want a requeue after %s at a priority of its own", res, renderRetry)
	}
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	req := func(name string) reconcile.Request {
		return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}}
	}
	low, report := handler.LowPriority, reportPriority
	q.AddWithOpts(priorityqueue.AddOpts{Priority: &report}, req("report"))
	for _, name := range []string{"found-at-start-1", "found-at-start-2"} {
		q.AddWithOpts(priorityqueue.AddOpts{Priority: &low}, req(name))
	}
	q.AddWithOpts(priorityqueue.AddOpts{Priority: res.Priority}, req("deferred")) // after them, as after renderRetry
	q.Add(req("created"))
	var order []string
	for q.Len() > 0 {
		r, _, _ := q.GetWithPriority()
		order = append(order, r.Name)
		q.Done(r)
	}
	want := []string{"created", "deferred", "found-at-start-1", "found-at-start-2", "report"}
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Errorf("taken from the queue in the order %v, want %v", order, want)
	}
}

// TestProgressWaitsForTheHeldReport: a Flux object's report of progress, while every ClusterAddon
// of it has a progress report held, is queued for when the held report is due, at
// reportPriority; a failure, a stall, a change of spec or labels, a ClusterAddon with nothing held
// (or whose next step's Ready was seen) and an interval of 0 are queued now, at the default.
func TestProgressWaitsForTheHeldReport(t *testing.T) {
	const interval = 10 * time.Second
	hr := func(addon string, conds ...metav1.Condition) *helmv2.HelmRelease {
		o := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: addon + "-cni", Namespace: "ns", ResourceVersion: "1", Generation: 1,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: csv1.GroupVersion.String(), Kind: "ClusterAddon", Name: addon, UID: "u", Controller: new(true)}}}}
		o.Status.ObservedGeneration = 1
		o.Status.Conditions = conds
		return o
	}
	progress := func(msg string) metav1.Condition {
		return metav1.Condition{Type: "Ready", Status: metav1.ConditionUnknown, Reason: "Progressing", Message: msg}
	}
	stepped := func(addon string, change func(*helmv2.HelmRelease)) event.UpdateEvent {
		old := hr(addon, progress("Fulfilling prerequisites"))
		n := old.DeepCopy()
		n.ResourceVersion = "2"
		n.Status.Conditions = []metav1.Condition{progress("Running 'install' action with timeout of 5m0s")}
		if change != nil {
			change(n)
		}
		return event.UpdateEvent{ObjectOld: old, ObjectNew: n}
	}
	ks := func(addon string) event.UpdateEvent {
		old := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: addon + "-csi", Namespace: "ns", ResourceVersion: "1",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: csv1.GroupVersion.String(), Kind: "ClusterAddon", Name: addon, UID: "u", Controller: new(true)}}}}
		n := old.DeepCopy()
		n.ResourceVersion = "2"
		n.Status.Conditions = []metav1.Condition{progress("Reconciliation in progress")}
		return event.UpdateEvent{ObjectOld: old, ObjectNew: n}
	}
	held := types.NamespacedName{Namespace: "ns", Name: "c1"}
	free := types.NamespacedName{Namespace: "ns", Name: "c2"}
	nextStep := types.NamespacedName{Namespace: "ns", Name: "c3"}
	pace := &progressPacer{}
	var awaited awaitedObjects
	for _, k := range []types.NamespacedName{held, free, nextStep} {
		awaited.put(k, "")
	}
	h := fluxEventHandler{EventHandler: enqueueAddonOwner(t), awaited: &awaited, pace: pace, interval: interval}

	for _, tc := range []struct {
		name  string
		h     fluxEventHandler
		e     event.UpdateEvent
		addon types.NamespacedName
		later bool
	}{
		{"helm-controller's next step", h, stepped("c1", nil), held, true},
		{"kustomize-controller's progress", h, ks("c1"), held, true},
		{"a failure", h, stepped("c1", func(n *helmv2.HelmRelease) {
			n.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "InstallFailed", Message: "boom"}}
		}), held, false},
		{"stalled", h, stepped("c1", func(n *helmv2.HelmRelease) {
			n.Status.Conditions = append(n.Status.Conditions, metav1.Condition{Type: "Stalled", Status: metav1.ConditionTrue, Reason: "RetriesExceeded"})
		}), held, false},
		{"a new spec", h, stepped("c1", func(n *helmv2.HelmRelease) { n.Generation = 2 }), held, false},
		{"new labels", h, stepped("c1", func(n *helmv2.HelmRelease) { n.Labels = map[string]string{"sharding.fluxcd.io/key": "s1"} }), held, false},
		{"being deleted", h, stepped("c1", func(n *helmv2.HelmRelease) { n.DeletionTimestamp = &metav1.Time{Time: time.Now()} }), held, false},
		{"nothing held", h, stepped("c2", nil), free, false},
		{"its next step's Ready seen", h, stepped("c3", nil), nextStep, false},
		{"an interval of 0", fluxEventHandler{EventHandler: h.EventHandler, awaited: &awaited, pace: pace}, stepped("c1", nil), held, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// c1's report is due 300 ms from now; c3's next step was seen Ready.
			pace.held = map[client.ObjectKey]heldWrite{
				held:     {since: time.Now().Add(300*time.Millisecond - interval)},
				nextStep: {since: time.Now(), nextStepReady: time.Now()},
			}
			q := priorityqueue.New[reconcile.Request]("test")
			defer q.ShutDown()
			tc.h.Update(context.Background(), tc.e, q)
			if n, want := q.Len(), map[bool]int{true: 0, false: 1}[tc.later]; n != want {
				t.Fatalf("%d requests ready at once, want %d", n, want)
			}
			req, prio, _ := q.GetWithPriority() // waits for one put off
			wantPrio := 0
			if tc.later {
				wantPrio = reportPriority
			}
			if want := (reconcile.Request{NamespacedName: tc.addon}); req != want || prio != wantPrio {
				t.Errorf("queued %v at priority %d, want %v at %d", req, prio, want, wantPrio)
			}
		})
	}
}
