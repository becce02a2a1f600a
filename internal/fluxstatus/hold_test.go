package fluxstatus

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestComputeUpgradeHold: an upgrade the BeforeClusterUpgrade hook holds is Progressing within
// the grace period and Degraded once it has lasted longer, with the hold's reason, the object that
// holds it and the hint, also when the object alone would not make the subject Degraded
// (retrying within its own grace) or would make it Degraded for another reason. Invalid input
// still wins; a hold that ended says nothing.
func TestComputeUpgradeHold(t *testing.T) {
	installing := obj(healthyHR("c1-cni", "cni"), func(o *ObjectState) {
		o.Ready, o.Reason, o.Message, o.ReadySince = metav1.ConditionUnknown, "Progressing", "Running 'upgrade' action with timeout of 5m0s", t0.Add(-time.Minute)
		o.Revision = "1.0.0"
	})
	hold := func(since time.Duration) *Problem {
		return &Problem{Reason: "UpgradeHeld", Message: "the upgrade of Cluster c1 to v1.37.2 waits for its BeforeClusterUpgrade components (cni)",
			Since: t0.Add(-since), Hint: "to let the upgrade through without waiting, set annotation a on the Cluster"}
	}
	base := func() Input {
		return Input{Subject: subject, Objects: []ObjectState{installing}, Delivered: v1, Desired: v2,
			Previous: progressingSince(time.Minute), Now: t0, Grace: grace}
	}

	in := base()
	in.UpgradeHold = hold(time.Minute)
	r := Compute(in)
	if r.Degraded.Status != metav1.ConditionFalse || r.RequeueAfter != grace-time.Minute {
		t.Errorf("within the grace period: Degraded %+v, requeue after %s; want not Degraded, a look when the hold's grace ends (%s)", r.Degraded, r.RequeueAfter, grace-time.Minute)
	}

	in.UpgradeHold = hold(grace + time.Second)
	r = Compute(in)
	want := subject + ": the upgrade of Cluster c1 to v1.37.2 waits for its BeforeClusterUpgrade components (cni) for more than 5m0s: component cni: " +
		installing.Describe() + "; to let the upgrade through without waiting, set annotation a on the Cluster"
	if r.Degraded.Status != metav1.ConditionTrue || r.Degraded.Reason != "UpgradeHeld" || r.Degraded.Message != want {
		t.Errorf("held too long: Degraded %+v\nwant message %q", r.Degraded, want)
	}
	if r.Ready.Reason != "UpgradeHeld" || r.Stalled.Status != metav1.ConditionTrue {
		t.Errorf("held too long: Ready %+v, Stalled %+v: the hold is the summary too", r.Ready, r.Stalled)
	}
	if r.Available.Status != metav1.ConditionTrue {
		t.Errorf("held too long: Available %+v; the delivered release still serves", r.Available)
	}

	// An object failing for longer than its grace: Degraded anyway, but the hold is named.
	in.Objects = []ObjectState{obj(installing, func(o *ObjectState) {
		o.Ready, o.Reason, o.Message, o.ReadySince = metav1.ConditionFalse, "UpgradeFailed", "context deadline exceeded", t0.Add(-time.Hour)
	})}
	if r = Compute(in); r.Degraded.Reason != "UpgradeHeld" {
		t.Errorf("an object failing and a hold: Degraded %+v, want the hold named", r.Degraded)
	}

	in.Invalid = &Problem{Reason: "RenderFailed", Message: "values do not render"}
	if r = Compute(in); r.Degraded.Reason != "RenderFailed" {
		t.Errorf("invalid input and a hold: Degraded %+v, want the invalid input", r.Degraded)
	}

	in = base()
	if r = Compute(in); r.Degraded.Status != metav1.ConditionFalse {
		t.Errorf("no hold: Degraded %+v", r.Degraded)
	}
}
