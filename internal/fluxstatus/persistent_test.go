package fluxstatus

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// A Kustomization whose health check fails at the revision it already applied: Flux reports
// Ready False, then Ready Unknown (Progressing) at every retry. The grace clock and the failure
// message are kept in the records, so Degraded holds through the retries.
func TestPersistentFailureThroughRetries(t *testing.T) {
	const failure = "health check failed after 40s: timeout waiting for: [Deployment/kube-system/pinned status: 'InProgress']"
	failed := obj(healthyKS("c1-pinned", "pinned"), func(s *ObjectState) {
		s.Ready, s.Reason, s.Message, s.ReadySince = metav1.ConditionFalse, "HealthCheckFailed", failure, t0.Add(-time.Minute)
	})
	retrying := obj(healthyKS("c1-pinned", "pinned"), func(s *ObjectState) {
		s.Ready, s.Reason, s.Message, s.ReadySince, s.Reconciling = metav1.ConditionUnknown, "Progressing", "Reconciliation in progress", t0, true
	})
	if !retrying.Healthy() {
		t.Fatal("precondition: without a record, a retry at the applied revision looks like a routine reconcile")
	}

	// 1. First seen failed: the record starts at Flux's transition time; not Degraded yet.
	r := Compute(Input{Subject: subject, Desired: v2, Delivered: v2, Objects: []ObjectState{failed}, Now: t0, Grace: grace})
	if len(r.Unhealthy) != 1 || !r.Unhealthy[0].Since.Time.Equal(t0.Add(-time.Minute)) || r.Unhealthy[0].LastFailure != failure || r.Unhealthy[0].Component != "pinned" {
		t.Fatalf("records = %+v, want one since t0-1m with the failure", r.Unhealthy)
	}
	if r.Degraded.Status != metav1.ConditionFalse || r.Available.Status != metav1.ConditionTrue {
		t.Fatalf("within grace: Degraded %s, Available %s; want False, True", r.Degraded.Status, r.Available.Status)
	}
	if r.RequeueAfter != 4*time.Minute {
		t.Errorf("RequeueAfter = %s, want 4m (grace left)", r.RequeueAfter)
	}
	// 2. Flux retries (Ready Unknown) past the grace period: still unhealthy, Degraded names the last failure.
	r2 := Compute(Input{Subject: subject, Desired: v2, Delivered: v2, Objects: []ObjectState{retrying}, Unhealthy: r.Unhealthy, Now: t0.Add(6 * time.Minute), Grace: grace})
	wantMsg := subject + ": component pinned: Kustomization/c1-pinned: " + failure + " (Flux is retrying) (not Ready for more than 5m0s)"
	if r2.Degraded.Status != metav1.ConditionTrue || r2.Degraded.Reason != csv1.ReasonFluxNotReady || r2.Degraded.Message != wantMsg {
		t.Fatalf("Degraded = %+v, want True FluxObjectNotReady %q", r2.Degraded, wantMsg)
	}
	if r2.Stalled.Status != metav1.ConditionTrue || r2.Stalled.Message != wantMsg || r2.Reconciling.Status != metav1.ConditionFalse {
		t.Errorf("Stalled = %+v, Reconciling = %+v; want Stalled True with Degraded's message, Reconciling False", r2.Stalled, r2.Reconciling)
	}
	if r2.Available.Status != metav1.ConditionFalse || r2.Healthy {
		t.Errorf("Available = %s, Healthy = %v; want False, false", r2.Available.Status, r2.Healthy)
	}
	if !r2.Unhealthy[0].Since.Time.Equal(t0.Add(-time.Minute)) || r2.Unhealthy[0].LastFailure != failure {
		t.Errorf("record = %+v: the clock and the last failure must be kept through the retry", r2.Unhealthy[0])
	}
	// 3. Failed again (a later retry): same record, same message, Degraded holds.
	r3 := Compute(Input{Subject: subject, Desired: v2, Delivered: v2, Objects: []ObjectState{failed}, Unhealthy: r2.Unhealthy, Now: t0.Add(7 * time.Minute), Grace: grace})
	if r3.Degraded.Status != metav1.ConditionTrue || !r3.Unhealthy[0].Since.Time.Equal(t0.Add(-time.Minute)) {
		t.Fatalf("Degraded = %+v, records = %+v", r3.Degraded, r3.Unhealthy)
	}
	// 4. Ready again: the record goes, everything is healthy.
	r4 := Compute(Input{Subject: subject, Desired: v2, Delivered: v2, Objects: []ObjectState{healthyKS("c1-pinned", "pinned")}, Unhealthy: r3.Unhealthy, Now: t0.Add(8 * time.Minute), Grace: grace})
	if !r4.Healthy || len(r4.Unhealthy) != 0 || r4.Degraded.Status != metav1.ConditionFalse || r4.Reconciling.Status != metav1.ConditionFalse || r4.Stalled.Status != metav1.ConditionFalse {
		t.Fatalf("after recovery: healthy %v, records %+v, Degraded %s, Reconciling %s, Stalled %s", r4.Healthy, r4.Unhealthy, r4.Degraded.Status, r4.Reconciling.Status, r4.Stalled.Status)
	}
	// 5. A routine reconcile after recovery is healthy again (no record).
	r5 := Compute(Input{Subject: subject, Desired: v2, Delivered: v2, Objects: []ObjectState{retrying}, Unhealthy: r4.Unhealthy, Now: t0.Add(9 * time.Minute), Grace: grace})
	if !r5.Healthy {
		t.Fatalf("a routine reconcile of a healthy object must stay healthy: %+v", r5.Degraded)
	}
}

// A first install whose HelmRelease never becomes Ready (a Deployment that cannot schedule):
// Flux says what it is doing; once it fails, the failure is kept through the next attempt.
func TestFirstInstallNeverReady(t *testing.T) {
	installing := obj(healthyHR("c1-never", "never"), func(s *ObjectState) {
		s.Ready, s.Reason, s.Message, s.Current, s.Revision = metav1.ConditionUnknown, "Progressing", "Running 'install' action with timeout of 40s", false, ""
	})
	r := Compute(Input{Subject: subject, Desired: v2, Objects: []ObjectState{installing}, Now: t0, Grace: grace})
	if want := subject + ": component never: HelmRelease/c1-never: Running 'install' action with timeout of 40s"; r.Progressing.Message != want {
		t.Errorf("Progressing = %q, want %q (what Flux says, not only 'has not observed its latest generation')", r.Progressing.Message, want)
	}
	if r.Reconciling.Status != metav1.ConditionTrue || r.Stalled.Status != metav1.ConditionFalse {
		t.Errorf("Reconciling %s, Stalled %s; want True, False", r.Reconciling.Status, r.Stalled.Status)
	}
	const failure = "Helm install failed for release kube-system/never with chart never@1.0.0: context deadline exceeded"
	failed := obj(installing, func(s *ObjectState) {
		s.Ready, s.Reason, s.Message, s.ReadySince, s.Current = metav1.ConditionFalse, "InstallFailed", failure, t0.Add(time.Minute), true
	})
	r = Compute(Input{Subject: subject, Desired: v2, Objects: []ObjectState{failed}, Unhealthy: r.Unhealthy, Previous: nil, Now: t0.Add(time.Minute), Grace: grace})
	if !r.Unhealthy[0].Since.Time.Equal(t0) || r.Unhealthy[0].LastFailure != failure {
		t.Fatalf("record = %+v: the clock runs from the first sighting", r.Unhealthy[0])
	}
	retry := obj(installing, func(s *ObjectState) { s.ReadySince = t0.Add(5 * time.Minute) })
	r = Compute(Input{Subject: subject, Desired: v2, Objects: []ObjectState{retry}, Unhealthy: r.Unhealthy, Now: t0.Add(5*time.Minute + time.Second), Grace: grace})
	if r.Degraded.Status != metav1.ConditionTrue || r.Degraded.Message != subject+": component never: HelmRelease/c1-never: "+failure+" (Flux is retrying) (not Ready for more than 5m0s)" {
		t.Fatalf("Degraded = %+v", r.Degraded)
	}
}

// An alert (a moved tag) degrades the subject without making it unavailable.
func TestAlertKeepsAvailable(t *testing.T) {
	r := Compute(Input{Subject: "release " + v2, Desired: "v2", Objects: []ObjectState{healthyKS("x", "cluster-class")}, Now: t0, Grace: grace,
		Alert: &Problem{Reason: csv1.ReasonTagMoved, Message: "tag moved"}})
	if r.Available.Status != metav1.ConditionTrue || r.Degraded.Status != metav1.ConditionTrue || r.Degraded.Reason != csv1.ReasonTagMoved ||
		r.Ready.Status != metav1.ConditionFalse || r.Stalled.Status != metav1.ConditionTrue || r.Healthy {
		t.Fatalf("Available %s, Degraded %+v, Ready %s, Stalled %s, Healthy %v", r.Available.Status, r.Degraded, r.Ready.Status, r.Stalled.Status, r.Healthy)
	}
}

// A check that cannot be made (the release's tag cannot be listed) leaves the subject as it was
// for the grace period, says when to look again, and then degrades it without making it
// unavailable.
func TestUncheckedDegradesAfterGrace(t *testing.T) {
	since := t0.Add(-2 * time.Minute)
	in := Input{Subject: "release " + v2, Desired: "v2", Objects: []ObjectState{healthyKS("x", "cluster-class")}, Now: t0, Grace: grace,
		Unchecked: &Problem{Reason: csv1.ReasonTagListFailed, Message: "cannot check where tag v2 points: connection refused", Since: since}}
	r := Compute(in)
	if r.Degraded.Status != metav1.ConditionFalse || r.Available.Status != metav1.ConditionTrue || !r.Healthy || r.RequeueAfter != 3*time.Minute {
		t.Fatalf("within the grace period: Degraded %+v, Available %s, Healthy %v, RequeueAfter %s", r.Degraded, r.Available.Status, r.Healthy, r.RequeueAfter)
	}
	in.Now = since.Add(grace + time.Second)
	r = Compute(in)
	want := "release " + v2 + ": cannot check where tag v2 points: connection refused (for more than 5m0s)"
	if r.Degraded.Status != metav1.ConditionTrue || r.Degraded.Reason != csv1.ReasonTagListFailed || r.Degraded.Message != want ||
		r.Available.Status != metav1.ConditionTrue || r.Ready.Status != metav1.ConditionFalse || r.Healthy {
		t.Fatalf("past the grace period: Degraded %+v, Available %s, Ready %s, Healthy %v", r.Degraded, r.Available.Status, r.Ready.Status, r.Healthy)
	}
}

func TestRevisionsComparedByCommit(t *testing.T) {
	tests := []struct {
		got, want string
		at        bool
	}{
		{"aws-base-1-36-v1@sha1:abc", "aws-base-1-36-v1", true},
		{"sha1:abc", "aws-base-1-36-v1@sha1:abc", true},
		{"aws-base-1-36-v1@sha1:abc", "sha1:abc", true},
		{"sha1:def", "aws-base-1-36-v1@sha1:abc", false},
		{"aws-base-1-36-v1@sha1:def", "sha1:abc", false},
		{"1.0.0", "1.0.0", true},
		{"1.0.1", "1.0.0", false},
	}
	for _, tt := range tests {
		s := ObjectState{Revision: tt.got, ExpectedRevision: tt.want}
		if s.AtRevision() != tt.at {
			t.Errorf("AtRevision(%q, expected %q) = %v, want %v", tt.got, tt.want, !tt.at, tt.at)
		}
	}
}

// An upgrade that fails: whether the delivered version is still taken for working depends on
// whether Flux failed before applying anything (the artifact could not be fetched: the cluster
// runs what it ran) or while applying (the upgrade failed: it may not). The reason is kept in the
// record through Flux's retries, so Available does not flip at every retry.
func TestAvailableThroughFailedUpgrade(t *testing.T) {
	for _, tt := range []struct {
		reason        string
		wantAvailable metav1.ConditionStatus
	}{
		{"ArtifactFailed", metav1.ConditionTrue},
		{"DependencyNotReady", metav1.ConditionTrue},
		{"InitFailed", metav1.ConditionTrue},
		{"ValuesError", metav1.ConditionTrue},
		{"SourceNotReady", metav1.ConditionTrue},
		{"RESTClientError", metav1.ConditionTrue},
		{"UpgradeFailed", metav1.ConditionFalse},
		{"HealthCheckFailed", metav1.ConditionFalse},
		{"SomethingNew", metav1.ConditionFalse},
	} {
		t.Run(tt.reason, func(t *testing.T) {
			failed := obj(healthyHR("c1-cni", "cni"), func(s *ObjectState) {
				s.Ready, s.Reason, s.Message, s.ReadySince = metav1.ConditionFalse, tt.reason, "it failed", t0
			})
			retrying := obj(healthyHR("c1-cni", "cni"), func(s *ObjectState) {
				s.Ready, s.Reason, s.Message, s.Reconciling, s.Revision = metav1.ConditionUnknown, "Progressing", "Reconciliation in progress", true, "1.0.0"
			})
			r := Compute(Input{Subject: subject, Desired: v2, Delivered: v1, Objects: []ObjectState{failed}, Now: t0.Add(6 * time.Minute), Grace: grace})
			if r.Degraded.Status != metav1.ConditionTrue {
				t.Fatalf("Degraded = %+v, want True after the grace period", r.Degraded)
			}
			if r.Available.Status != tt.wantAvailable || r.Unhealthy[0].LastFailureReason != tt.reason {
				t.Fatalf("Available = %+v, record %+v; want Available %s and the reason recorded", r.Available, r.Unhealthy[0], tt.wantAvailable)
			}
			r2 := Compute(Input{Subject: subject, Desired: v2, Delivered: v1, Objects: []ObjectState{retrying}, Unhealthy: r.Unhealthy, Now: t0.Add(7 * time.Minute), Grace: grace})
			if r2.Available.Status != tt.wantAvailable {
				t.Errorf("during Flux's retry: Available = %+v, want %s (unchanged)", r2.Available, tt.wantAvailable)
			}
		})
	}
}
