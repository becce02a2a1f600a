package controllers

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxstatus"
)

// TestMergeComponents: the ClusterAddon reconciler's write of status.components sets its own
// fields from what it applied and keeps the status reconciler's (ready, message) by name, so
// the two writers never undo each other's work.
func TestMergeComponents(t *testing.T) {
	cur := []csv1.AddonComponentStatus{
		{Name: "cni", Kind: csv1.ComponentKindHelm, Release: "r1", Version: "1.0.0", FluxObject: "HelmRelease/c1-cni", Ready: true, Message: "HelmRelease/c1-cni is Ready"},
		{Name: "info", Kind: csv1.ComponentKindKustomize, Release: "r1", FluxObject: "Kustomization/c1-info",
			WaitingFor: "waiting for HelmRelease/c1-cni to be Ready before creating it", Message: "waiting for HelmRelease/c1-cni to be Ready before creating it"},
		{Name: "dropped", Kind: csv1.ComponentKindHelm, Release: "r1", FluxObject: "HelmRelease/c1-dropped", Ready: true, Message: "Ready"},
	}
	want := []csv1.AddonComponentStatus{
		// moved to r2: its readiness stays until the status reconciler judges it at r2
		{Name: "cni", Kind: csv1.ComponentKindHelm, Release: "r2", Version: "2.0.0", FluxObject: "HelmRelease/c1-cni", Ready: false, Message: "ignored"},
		// written now: no longer waiting
		{Name: "info", Kind: csv1.ComponentKindKustomize, Release: "r2", FluxObject: "Kustomization/c1-info"},
		// new: waiting, no readiness yet
		{Name: "csi", Kind: csv1.ComponentKindHelm, Release: "r2", FluxObject: "HelmRelease/c1-csi", WaitingFor: "waiting for Kustomization/c1-info to be Ready before creating it"},
	}
	got := mergeComponents(cur, want)
	expected := []csv1.AddonComponentStatus{
		{Name: "cni", Kind: csv1.ComponentKindHelm, Release: "r2", Version: "2.0.0", FluxObject: "HelmRelease/c1-cni", Ready: true, Message: "HelmRelease/c1-cni is Ready"},
		{Name: "info", Kind: csv1.ComponentKindKustomize, Release: "r2", FluxObject: "Kustomization/c1-info",
			Message: "waiting for HelmRelease/c1-cni to be Ready before creating it"},
		{Name: "csi", Kind: csv1.ComponentKindHelm, Release: "r2", FluxObject: "HelmRelease/c1-csi", WaitingFor: "waiting for Kustomization/c1-info to be Ready before creating it"},
	}
	if diff := cmp.Diff(expected, got); diff != "" {
		t.Errorf("merged components (-want +got):\n%s", diff)
	}
	// Merging what is already there changes nothing: no write, no ping-pong.
	if diff := cmp.Diff(got, mergeComponents(got, want)); diff != "" {
		t.Errorf("merge is not idempotent (-first +second):\n%s", diff)
	}
	long := make([]byte, 3000)
	for i := range long {
		long[i] = 'x'
	}
	if w := mergeComponents(nil, []csv1.AddonComponentStatus{{Name: "x", WaitingFor: string(long)}})[0].WaitingFor; len(w) > 2048 {
		t.Errorf("waitingFor of %d bytes: the API allows 2048", len(w))
	}
}

// TestComponentReadiness: the status reconciler's fields of a component, from its Flux object,
// and from waitingFor while the object does not exist.
func TestComponentReadiness(t *testing.T) {
	ready := fluxstatus.ObjectState{Kind: "HelmRelease", Name: "c1-cni", Exists: true, Current: true, Ready: metav1.ConditionTrue, Revision: "1.0.0", ExpectedRevision: "1.0.0"}
	failing := fluxstatus.ObjectState{Kind: "HelmRelease", Name: "c1-cni", Exists: true, Current: true, Ready: metav1.ConditionFalse, Message: "install failed"}
	missing := fluxstatus.Missing("Kustomization", "c1-info", "info")
	// kustomize-controller's start of every reconcile, interval ones included, of an object
	// that already applied the expected revision.
	routine := fluxstatus.ObjectState{Kind: "Kustomization", Name: "c1-info", Exists: true, Current: true, Ready: metav1.ConditionUnknown,
		Reason: "Progressing", Message: "Reconciliation in progress", Revision: "v1@sha1:abc", ExpectedRevision: "v1@sha1:abc"}
	readyInfo := csv1.AddonComponentStatus{Name: "info", Ready: true, Message: "Kustomization/c1-info is Ready"}
	failedInfo := csv1.AddonComponentStatus{Name: "info", Message: "Kustomization/c1-info: health check failed"}
	upgrading := routine
	upgrading.ExpectedRevision = "v2@sha1:def"
	waiting := csv1.AddonComponentStatus{Name: "info", WaitingFor: "waiting for HelmRelease/c1-cni to be Ready before creating it"}
	tests := []struct {
		name      string
		c         csv1.AddonComponentStatus
		o         fluxstatus.ObjectState
		wantReady bool
		wantMsg   string
	}{
		{"Ready at the revision", csv1.AddonComponentStatus{Name: "cni"}, ready, true, "HelmRelease/c1-cni is Ready"},
		{"not Ready: what Flux said", csv1.AddonComponentStatus{Name: "cni"}, failing, false, "HelmRelease/c1-cni: install failed"},
		{"missing and waiting: why", waiting, missing, false, "waiting for HelmRelease/c1-cni to be Ready before creating it"},
		{"missing, nothing said: missing", csv1.AddonComponentStatus{Name: "info"}, missing, false, "Kustomization/c1-info does not exist yet"},
		{"exists although waitingFor is stale: Flux's word wins", csv1.AddonComponentStatus{Name: "cni", WaitingFor: "waiting"}, failing, false, "HelmRelease/c1-cni: install failed"},
		{"ready, Flux's routine reconcile: nothing changes", readyInfo, routine, true, "Kustomization/c1-info is Ready"},
		{"not ready before, Flux reconciles again: what Flux says", failedInfo, routine, true, "Kustomization/c1-info: Reconciliation in progress"},
		{"ready, Flux reconciles toward another revision: what Flux says", readyInfo, upgrading, false, "Kustomization/c1-info: Reconciliation in progress"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, m := componentReadiness(tt.c, tt.o)
			if r != tt.wantReady || m != tt.wantMsg {
				t.Errorf("componentReadiness = %v, %q; want %v, %q", r, m, tt.wantReady, tt.wantMsg)
			}
		})
	}
}

func TestTransitionEvents(t *testing.T) {
	cond := func(typ string, s metav1.ConditionStatus, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: s, Reason: "R", Message: msg}
	}
	res := func(avail, degr metav1.ConditionStatus) fluxstatus.Result {
		return fluxstatus.Result{Available: cond(csv1.AvailableCondition, avail, "a"), Degraded: cond(csv1.DegradedCondition, degr, "d")}
	}
	tr, fa := metav1.ConditionTrue, metav1.ConditionFalse
	tests := []struct {
		name string
		prev []metav1.Condition
		res  fluxstatus.Result
		want []statusEvent
	}{
		{"born available, not degraded: Available only", nil, res(tr, fa), []statusEvent{{corev1.EventTypeNormal, "AvailableTrue", "a"}}},
		{"born unavailable: nothing (the first delivery runs)", nil, res(fa, fa), nil},
		{"unchanged: nothing", []metav1.Condition{cond(csv1.AvailableCondition, tr, "x"), cond(csv1.DegradedCondition, fa, "y")}, res(tr, fa), nil},
		{"lost Available and degraded: two Warnings", []metav1.Condition{cond(csv1.AvailableCondition, tr, "x"), cond(csv1.DegradedCondition, fa, "y")}, res(fa, tr),
			[]statusEvent{{corev1.EventTypeWarning, "AvailableFalse", "a"}, {corev1.EventTypeWarning, "DegradedTrue", "d"}}},
		{"recovered: two Normal", []metav1.Condition{cond(csv1.AvailableCondition, fa, "x"), cond(csv1.DegradedCondition, tr, "y")}, res(tr, fa),
			[]statusEvent{{corev1.EventTypeNormal, "AvailableTrue", "a"}, {corev1.EventTypeNormal, "DegradedFalse", "d"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, transitionEvents(tt.prev, tt.res), cmp.AllowUnexported(statusEvent{})); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWithoutQuietFirstDelivery(t *testing.T) {
	tr, fa := metav1.ConditionTrue, metav1.ConditionFalse
	cond := func(typ string, st metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: typ, Status: st, Reason: "R"}
	}
	available := statusEvent{corev1.EventTypeNormal, "AvailableTrue", "a"}
	recovered := statusEvent{corev1.EventTypeNormal, "DegradedFalse", "d"}
	tests := []struct {
		name   string
		prev   []metav1.Condition
		events []statusEvent
		want   []statusEvent
	}{
		{"first delivery on a quiet path: no Event", []metav1.Condition{cond(csv1.AvailableCondition, fa), cond(csv1.DegradedCondition, fa)}, []statusEvent{available}, nil},
		{"first delivery of a new object: no Event", nil, []statusEvent{available}, nil},
		{"first delivery after Degraded: both Events", []metav1.Condition{cond(csv1.AvailableCondition, fa), cond(csv1.DegradedCondition, tr)},
			[]statusEvent{available, recovered}, []statusEvent{available, recovered}},
		{"other Events stay", nil, []statusEvent{{corev1.EventTypeWarning, "DegradedTrue", "d"}}, []statusEvent{{corev1.EventTypeWarning, "DegradedTrue", "d"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, withoutQuietFirstDelivery(tt.prev, tt.events), cmp.AllowUnexported(statusEvent{})); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWaveEvents(t *testing.T) {
	prev := &csv1.RolloutStatus{Target: "v2", Waves: []csv1.WaveStatus{{Name: "canary", Phase: csv1.WaveProposed}, {Name: "rest", Phase: csv1.WavePending}}}
	cur := &csv1.RolloutStatus{Target: "v2", Waves: []csv1.WaveStatus{{Name: "canary", Phase: csv1.WaveHalted, Message: "a cluster is degraded"}, {Name: "rest", Phase: csv1.WavePending}}}
	want := []statusEvent{{corev1.EventTypeWarning, "WaveHalted", "wave canary of the rollout of v2 is Halted: a cluster is degraded"}}
	if diff := cmp.Diff(want, waveEvents(prev, cur), cmp.AllowUnexported(statusEvent{})); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if got := waveEvents(nil, &csv1.RolloutStatus{Target: "v2", Waves: []csv1.WaveStatus{{Name: "rest", Phase: csv1.WavePending}}}); len(got) != 0 {
		t.Errorf("a new rollout's pending waves are no news: %v", got)
	}
}
