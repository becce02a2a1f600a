package fluxstatus

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// One table per condition function: each is a pure function of the Input and the facts observe
// gathers, tested here with literal facts (TestCompute tests them together, from objects).

var (
	notReadyHR = obj(healthyHR("c1-cni", "cni"), func(s *ObjectState) {
		s.Ready, s.Reason, s.Message = metav1.ConditionFalse, "InstallFailed", "install failed"
	})
	stalledHR = obj(healthyHR("c1-cni", "cni"), func(s *ObjectState) {
		s.Ready, s.Stalled, s.Message = metav1.ConditionFalse, true, "invalid values"
	})
	missingKS   = Missing("Kustomization", "c1-info", "info")
	notDegraded = c{"False", "AsExpected", subject + ": desired state is met or converging"}
)

func TestObserve(t *testing.T) {
	type got struct {
		Healthy, OnlyHeld, RolloutTooLong bool
		Unhealthy                         []string
		FirstUnhealthy, NotReadyTooLong   string
		NotReadyFailure                   string
		Stalled                           []string
		RequeueAfter                      time.Duration
	}
	ref := func(o *ObjectState) string {
		if o == nil {
			return ""
		}
		return o.Ref()
	}
	tests := []struct {
		name string
		in   Input
		want got
	}{
		{
			name: "healthy objects, nothing awaited: healthy, no timer",
			in:   Input{Objects: []ObjectState{healthyHR("c1-cni", "cni")}, Now: t0, Grace: grace},
			want: got{Healthy: true},
		},
		{
			name: "a held step and nothing else: only held, no rollout clock",
			in:   Input{Held: &Problem{Reason: "WaitingForControlPlaneUpgrade"}, Objects: []ObjectState{healthyHR("c1-cni", "cni")}, Now: t0, Grace: grace},
			want: got{OnlyHeld: true},
		},
		{
			name: "a missing object: the rollout clock runs from Progressing's start",
			in:   Input{Objects: []ObjectState{healthyHR("c1-cni", "cni"), missingKS}, Previous: progressingSince(time.Minute), Now: t0, Grace: grace},
			want: got{Unhealthy: []string{"Kustomization/c1-info"}, FirstUnhealthy: "Kustomization/c1-info", RequeueAfter: 4 * time.Minute},
		},
		{
			name: "not Ready since before the grace period: too long, with Flux's failure",
			in: Input{Objects: []ObjectState{obj(notReadyHR, func(s *ObjectState) { s.ReadySince = t0.Add(-10 * time.Minute) })},
				Previous: progressingSince(time.Minute), Now: t0, Grace: grace},
			want: got{Unhealthy: []string{"HelmRelease/c1-cni"}, FirstUnhealthy: "HelmRelease/c1-cni", NotReadyTooLong: "HelmRelease/c1-cni",
				NotReadyFailure: "install failed", RequeueAfter: 4 * time.Minute},
		},
		{
			name: "Ready False of an older generation: not backdated to it, nor its failure taken",
			in: Input{Objects: []ObjectState{obj(notReadyHR, func(s *ObjectState) { s.ReadySince, s.Current, s.ReadyStale = t0.Add(-10*time.Minute), false, true })},
				Previous: progressingSince(time.Minute), Now: t0, Grace: grace},
			want: got{Unhealthy: []string{"HelmRelease/c1-cni"}, FirstUnhealthy: "HelmRelease/c1-cni", RequeueAfter: 4 * time.Minute},
		},
		{
			name: "stalled: no grace clock at all",
			in:   Input{Objects: []ObjectState{stalledHR, missingKS}, Now: t0, Grace: grace},
			want: got{Unhealthy: []string{"HelmRelease/c1-cni", "Kustomization/c1-info"}, FirstUnhealthy: "HelmRelease/c1-cni", Stalled: []string{"HelmRelease/c1-cni"}},
		},
		{
			name: "waiting since before the grace period: the rollout took too long",
			in:   Input{Waiting: &Problem{Reason: "WaitingForKubeconfig", Since: t0.Add(-6 * time.Minute)}, Now: t0, Grace: grace},
			want: got{RolloutTooLong: true},
		},
		{
			name: "a step started after a hold restarts the rollout clock",
			in: Input{Objects: []ObjectState{missingKS}, Previous: progressingSince(time.Hour), StepStarted: t0.Add(-time.Minute),
				Now: t0, Grace: grace},
			want: got{Unhealthy: []string{"Kustomization/c1-info"}, FirstUnhealthy: "Kustomization/c1-info", RequeueAfter: 4 * time.Minute},
		},
		{
			name: "invalid input: unhealthy, but no rollout clock",
			in:   Input{Invalid: &Problem{Reason: "InvalidStack"}, Previous: progressingSince(time.Hour), Now: t0, Grace: grace},
			want: got{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := observe(tt.in)
			g := got{Healthy: f.healthy, OnlyHeld: f.onlyHeld, RolloutTooLong: f.rolloutTooLong, FirstUnhealthy: ref(f.firstUnhealthy),
				NotReadyTooLong: ref(f.notReadyTooLong), NotReadyFailure: f.notReadyFailure, RequeueAfter: f.requeueAfter}
			for _, u := range f.unhealthy {
				g.Unhealthy = append(g.Unhealthy, u.Object)
			}
			for _, s := range f.stalled {
				g.Stalled = append(g.Stalled, s.Ref())
			}
			if diff := cmp.Diff(tt.want, g); diff != "" {
				t.Errorf("observe (-want +got):\n%s", diff)
			}
		})
	}
}

// TestObserveDesiredSince: a new desired version gets a whole grace period. Records of
// unhealthy objects from before it start again at it, the rollout's clock counts from it, and an
// object that still fails (or failed again) is too long only once the grace period passed since.
func TestObserveDesiredSince(t *testing.T) {
	failedAt := t0.Add(-20 * time.Minute)
	oldRecord := csv1.UnhealthyObject{Object: "HelmRelease/c1-cni", Component: "cni", Since: metav1.NewTime(failedAt),
		LastFailure: "upgrade failed", LastFailureReason: "UpgradeFailed"}
	// The HelmRelease as Flux left it after the failed upgrade, its spec just rewritten for the
	// new desired version: Flux has not acted on it yet, its Ready is of the old generation.
	rewritten := obj(healthyHR("c1-cni", "cni"), func(s *ObjectState) {
		s.Ready, s.ReadySince, s.Reason, s.Message, s.Current, s.ReadyStale = metav1.ConditionFalse, failedAt, "UpgradeFailed", "upgrade failed", false, true
	})
	// Flux tried the new spec and failed again.
	failedAgain := obj(rewritten, func(s *ObjectState) {
		s.ReadySince, s.Message, s.ReadyStale = t0.Add(-10*time.Second), "upgrade failed again", false
	})
	retrying := obj(healthyHR("c1-cni", "cni"), func(s *ObjectState) {
		s.Ready, s.ReadySince, s.Reason, s.Message, s.Reconciling = metav1.ConditionUnknown, t0.Add(-time.Second), "Progressing", "Running 'upgrade' action", true
	})
	type record struct {
		Since       time.Time
		LastFailure string
	}
	type got struct {
		Records         []record
		NotReadyTooLong bool
		RolloutTooLong  bool
		RequeueAfter    time.Duration
	}
	tests := []struct {
		name         string
		desiredSince time.Duration // before t0
		object       ObjectState
		want         got
	}{
		{"desired a minute ago: the old failure is forgotten (Flux's Ready is of the old spec), both clocks run from the change",
			time.Minute, rewritten,
			got{Records: []record{{t0.Add(-time.Minute), ""}}, RequeueAfter: 4 * time.Minute}},
		{"desired a minute ago, Flux retrying: still unhealthy, no failure recorded for the new version; the rollout's clock runs from Flux's new attempt",
			time.Minute, retrying,
			got{Records: []record{{t0.Add(-time.Minute), ""}}, RequeueAfter: 4*time.Minute + 59*time.Second}},
		{"desired a minute ago and failed again: the new failure, within the grace period counted from the change",
			time.Minute, failedAgain,
			got{Records: []record{{t0.Add(-time.Minute), "upgrade failed again"}}, RequeueAfter: 4 * time.Minute}},
		{"desired six minutes ago and failing for the current spec since before: too long, counted from the change",
			6 * time.Minute, obj(rewritten, func(s *ObjectState) { s.Current, s.ReadyStale = true, false }),
			got{Records: []record{{t0.Add(-6 * time.Minute), "upgrade failed"}}, NotReadyTooLong: true, RolloutTooLong: true}},
		{"desired before the failure: the record and its failure are kept through Flux's retry, which does not restart the object's clock",
			30 * time.Minute, retrying,
			got{Records: []record{{failedAt, "upgrade failed"}}, NotReadyTooLong: true, RequeueAfter: 4*time.Minute + 59*time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := observe(Input{Objects: []ObjectState{tt.object}, Unhealthy: []csv1.UnhealthyObject{oldRecord},
				Previous: progressingSince(time.Hour), DesiredSince: t0.Add(-tt.desiredSince), Now: t0, Grace: grace})
			g := got{NotReadyTooLong: f.notReadyTooLong != nil, RolloutTooLong: f.rolloutTooLong, RequeueAfter: f.requeueAfter}
			for _, u := range f.unhealthy {
				g.Records = append(g.Records, record{u.Since.Time, u.LastFailure})
			}
			if diff := cmp.Diff(tt.want, g); diff != "" {
				t.Errorf("observe (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDegradedCondition(t *testing.T) {
	tooLong := obj(notReadyHR, func(s *ObjectState) {})
	retrying := obj(healthyHR("c1-cni", "cni"), func(s *ObjectState) { s.Ready = metav1.ConditionUnknown })
	tests := []struct {
		name string
		in   Input
		f    facts
		want c
	}{
		{"nothing wrong", Input{Subject: subject}, facts{healthy: true}, notDegraded},
		{"invalid input first", Input{Subject: subject, Invalid: &Problem{Reason: "InvalidStack", Message: "bad stack"}},
			facts{stalled: []ObjectState{stalledHR}}, c{"True", "InvalidStack", subject + ": bad stack"}},
		{"stalled objects, each named", Input{Subject: subject}, facts{stalled: []ObjectState{stalledHR, obj(stalledHR, func(s *ObjectState) { s.Name, s.Component = "c1-csi", "csi" })}},
			c{"True", "FluxObjectStalled", subject + ": component cni: HelmRelease/c1-cni stalled: invalid values; component csi: HelmRelease/c1-csi stalled: invalid values"}},
		{"not Ready too long", Input{Subject: subject, Grace: grace}, facts{notReadyTooLong: &tooLong},
			c{"True", "FluxObjectNotReady", subject + ": component cni: HelmRelease/c1-cni: install failed (not Ready for more than 5m0s)"}},
		{"failing through retries: the last failure, and that Flux retries", Input{Subject: subject, Grace: grace},
			facts{notReadyTooLong: &retrying, notReadyFailure: "install failed"},
			c{"True", "FluxObjectNotReady", subject + ": component cni: HelmRelease/c1-cni: install failed (Flux is retrying) (not Ready for more than 5m0s)"}},
		{"a prerequisite awaited too long: its reason", Input{Subject: subject, Grace: grace, Waiting: &Problem{Reason: "WaitingForKubeconfig", Message: "waiting for Secret c1-kubeconfig"}},
			facts{rolloutTooLong: true, rolloutGrace: grace}, c{"True", "WaitingForKubeconfig", subject + ": waiting for Secret c1-kubeconfig (for more than 5m0s)"}},
		{"a rollout too long: the first unhealthy object", Input{Subject: subject, Grace: grace}, facts{rolloutTooLong: true, rolloutGrace: grace, firstUnhealthy: &missingKS},
			c{"True", "FluxObjectNotReady", subject + ": component info: Kustomization/c1-info does not exist yet (not converged for more than 5m0s)"}},
		{"a rollout too long without objects", Input{Subject: subject, Grace: grace}, facts{rolloutTooLong: true, rolloutGrace: grace},
			c{"True", "FluxObjectNotReady", subject + ": no Flux objects (not converged for more than 5m0s)"}},
		{"converging within the grace period", Input{Subject: subject, Grace: grace}, facts{firstUnhealthy: &missingKS}, notDegraded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := degradedCondition(tt.in, tt.f)
			if got.Type != csv1.DegradedCondition {
				t.Errorf("type %q", got.Type)
			}
			if diff := cmp.Diff(tt.want, project(got)); diff != "" {
				t.Errorf("degradedCondition (-want +got):\n%s", diff)
			}
		})
	}
}

func TestProgressingCondition(t *testing.T) {
	revisionPending := obj(healthyHR("c1-cni", "cni"), func(s *ObjectState) { s.Revision = "1.0.0" })
	degraded := metav1.Condition{Type: csv1.DegradedCondition, Status: metav1.ConditionTrue, Reason: "InvalidStack"}
	tests := []struct {
		name string
		in   Input
		f    facts
		want c
	}{
		{"healthy: the desired version is applied", Input{Subject: subject, Desired: v2}, facts{healthy: true}, c{"False", "AsExpected", subject + ": " + v2 + " is applied"}},
		{"invalid: not progressing, with Degraded's reason", Input{Subject: subject, Invalid: &Problem{}}, facts{},
			c{"False", "InvalidStack", subject + ": not progressing until the problem is fixed"}},
		{"stalled: not progressing", Input{Subject: subject}, facts{stalled: []ObjectState{stalledHR}},
			c{"False", "InvalidStack", subject + ": not progressing until the problem is fixed"}},
		{"waiting for a prerequisite: its reason and message", Input{Subject: subject, Waiting: &Problem{Reason: "WaitingForControlPlane", Message: "waiting for the control plane"}},
			facts{firstUnhealthy: &missingKS}, c{"True", "WaitingForControlPlane", subject + ": waiting for the control plane"}},
		{"only held: the hold's reason and message", Input{Subject: subject, Held: &Problem{Reason: "WaitingForWorkersUpgrade", Message: "waiting for the workers"}},
			facts{onlyHeld: true}, c{"True", "WaitingForWorkersUpgrade", subject + ": waiting for the workers"}},
		{"an object not there yet: Reconciling, naming it", Input{Subject: subject}, facts{firstUnhealthy: &missingKS},
			c{"True", "Reconciling", subject + ": component info: Kustomization/c1-info does not exist yet"}},
		{"Ready at another revision: RevisionPending", Input{Subject: subject}, facts{firstUnhealthy: &revisionPending},
			c{"True", "RevisionPending", subject + `: component cni: HelmRelease/c1-cni is at revision "1.0.0", expected "1.1.0"`}},
		{"moving between releases: Upgrading, from and to", Input{Subject: subject, Delivered: v1, Desired: v2, MoveVerb: "rolling back"}, facts{firstUnhealthy: &missingKS},
			c{"True", "Upgrading", subject + ": rolling back from " + v1 + " to " + v2 + ": component info: Kustomization/c1-info does not exist yet"}},
		{"nothing named", Input{Subject: subject}, facts{}, c{"True", "Reconciling", subject + ": reconciling"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := progressingCondition(tt.in, tt.f, degraded)
			if got.Type != csv1.ProgressingCondition {
				t.Errorf("type %q", got.Type)
			}
			if diff := cmp.Diff(tt.want, project(got)); diff != "" {
				t.Errorf("progressingCondition (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAvailableCondition(t *testing.T) {
	degraded := metav1.Condition{Type: csv1.DegradedCondition, Status: metav1.ConditionTrue, Reason: "FluxObjectNotReady", Message: subject + ": broken"}
	notDeg := metav1.Condition{Type: csv1.DegradedCondition, Status: metav1.ConditionFalse, Reason: "AsExpected"}
	progressing := metav1.Condition{Type: csv1.ProgressingCondition, Status: metav1.ConditionTrue, Reason: "Reconciling", Message: subject + ": reconciling"}
	tests := []struct {
		name     string
		in       Input
		f        facts
		degraded metav1.Condition
		want     c
	}{
		{"healthy: the desired version", Input{Subject: subject, Desired: v2}, facts{healthy: true}, notDeg, c{"True", "AsExpected", subject + ": " + v2 + " is available"}},
		{"observed unavailable: its reason", Input{Subject: subject, Delivered: v1, Unavailable: &Problem{Reason: "DeploymentUnavailable", Message: "no replicas"}}, facts{}, notDeg,
			c{"False", "DeploymentUnavailable", subject + ": no replicas"}},
		{"the delivered version keeps working while another rolls out", Input{Subject: subject, Delivered: v1, Desired: v2}, facts{}, notDeg,
			c{"True", "AsExpected", subject + ": " + v1 + " is available"}},
		{"degraded after a failure applying to the cluster: the delivered version is not taken for working", Input{Subject: subject, Delivered: v1, Desired: v2}, facts{deliveredAtRisk: true}, degraded,
			c{"False", "FluxObjectNotReady", subject + ": broken"}},
		{"degraded, but nothing was applied (Flux did not act, an artifact failed): the delivered version keeps working", Input{Subject: subject, Delivered: v1, Desired: v2}, facts{}, degraded,
			c{"True", "AsExpected", subject + ": " + v1 + " is available"}},
		{"degraded, but availability is observed: the delivered version works", Input{Subject: subject, Delivered: v1, AvailabilityObserved: true}, facts{}, degraded,
			c{"True", "AsExpected", subject + ": " + v1 + " is available"}},
		{"nothing delivered yet: Progressing's reason and message", Input{Subject: subject, Desired: v2}, facts{}, notDeg,
			c{"False", "Reconciling", subject + ": reconciling"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := availableCondition(tt.in, tt.f, tt.degraded, progressing)
			if got.Type != csv1.AvailableCondition {
				t.Errorf("type %q", got.Type)
			}
			if diff := cmp.Diff(tt.want, project(got)); diff != "" {
				t.Errorf("availableCondition (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAlertCondition(t *testing.T) {
	alert := &Problem{Reason: "TagMoved", Message: "tag moved"}
	unchecked := &Problem{Reason: "TagListFailed", Message: "cannot check where tag v1 points: connection refused"}
	degraded := metav1.Condition{Type: csv1.DegradedCondition, Status: metav1.ConditionTrue, Reason: "FluxObjectStalled"}
	notDeg := metav1.Condition{Type: csv1.DegradedCondition, Status: metav1.ConditionFalse, Reason: "AsExpected"}
	tests := []struct {
		name      string
		alert     *Problem
		unchecked *Problem
		tooLong   bool
		degraded  metav1.Condition
		want      *c
	}{
		{"no alert", nil, nil, false, notDeg, nil},
		{"an alert degrades a subject that is not degraded", alert, nil, false, notDeg, &c{"True", "TagMoved", subject + ": tag moved"}},
		{"a degraded subject keeps its own reason", alert, nil, false, degraded, nil},
		{"a check not made within the grace period does not degrade", nil, unchecked, false, notDeg, nil},
		{"a check not made for longer than the grace period degrades", nil, unchecked, true, notDeg,
			&c{"True", "TagListFailed", subject + ": cannot check where tag v1 points: connection refused (for more than 5m0s)"}},
		{"an alert is reported before a check not made", alert, unchecked, true, notDeg, &c{"True", "TagMoved", subject + ": tag moved"}},
		{"a degraded subject keeps its own reason over a check not made", nil, unchecked, true, degraded, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := Input{Subject: subject, Alert: tt.alert, Unchecked: tt.unchecked, Grace: 5 * time.Minute}
			got, ok := alertCondition(in, facts{uncheckedTooLong: tt.tooLong}, tt.degraded)
			if ok != (tt.want != nil) {
				t.Fatalf("alert set = %v, want %v", ok, tt.want != nil)
			}
			if ok {
				if got.Type != csv1.DegradedCondition {
					t.Errorf("type %q", got.Type)
				}
				if diff := cmp.Diff(*tt.want, project(got)); diff != "" {
					t.Errorf("alertCondition (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestJoinLimited(t *testing.T) {
	tests := []struct {
		items []string
		n     int
		want  string
	}{
		{nil, 3, ""},
		{[]string{"a"}, 3, "a"},
		{[]string{"a", "b", "c"}, 3, "a; b; c"},
		{[]string{"a", "b", "c", "d"}, 3, "a; b; c; and 1 more"},
		{[]string{"a", "b", "c", "d", "e", "f", "g"}, 5, "a; b; c; d; e; and 2 more"},
	}
	for _, tt := range tests {
		if got := JoinLimited(tt.items, tt.n); got != tt.want {
			t.Errorf("JoinLimited(%q, %d) = %q, want %q", tt.items, tt.n, got, tt.want)
		}
	}
}

// TestRolloutClockQueueAndWork: time an object waits for its Flux controller to pick it up is
// measured against QueueGrace, and time the controller works on it against Grace from when it
// began, so a fleet queued behind Flux's workers is not Degraded for the wait, while a controller
// that does not run, or an install that hangs, still is.
func TestRolloutClockQueueAndWork(t *testing.T) {
	const queueGrace = 15 * time.Minute
	// A HelmRelease the operator created created ago that helm-controller has not picked up.
	queued := func(created time.Duration) ObjectState {
		return obj(healthyHR("c1-cni", "cni"), func(s *ObjectState) {
			s.Created, s.Current, s.Ready, s.ReadySince, s.Reason, s.Message, s.Revision = t0.Add(-created), false, metav1.ConditionUnknown, time.Time{}, "", "", ""
		})
	}
	// helm-controller at work on it since since: Ready Unknown, "Running 'install' action".
	working := func(created, since time.Duration) ObjectState {
		return obj(queued(created), func(s *ObjectState) {
			s.ReadySince, s.Reason, s.Message, s.Reconciling = t0.Add(-since), "Progressing", "Running 'install' action with timeout of 5m0s", true
		})
	}
	waitingHR := "component cni: HelmRelease/c1-cni has not observed its latest generation yet (waiting for helm-controller)"
	installing := "component cni: HelmRelease/c1-cni: Running 'install' action with timeout of 5m0s"
	type got struct {
		Degraded     c
		RequeueAfter time.Duration
	}
	notDegraded := c{"False", "AsExpected", subject + ": desired state is met or converging"}
	tests := []struct {
		name       string
		progressed time.Duration // Progressing True since, before t0
		queueGrace time.Duration
		waiting    *Problem
		objects    []ObjectState
		want       got
	}{
		{"queued for 6 minutes behind helm-controller's workers: not Degraded, QueueGrace runs", 6 * time.Minute, queueGrace, nil,
			[]ObjectState{queued(6 * time.Minute)}, got{notDegraded, 9 * time.Minute}},
		{"queued longer than QueueGrace: Degraded, naming the controller and QueueGrace", 16 * time.Minute, queueGrace, nil,
			[]ObjectState{queued(16 * time.Minute)}, got{c{"True", "FluxObjectNotReady", subject + ": " + waitingHR + " (not converged for more than 15m0s)"}, 0}},
		{"no QueueGrace: the grace period, as before", 6 * time.Minute, 0, nil,
			[]ObjectState{queued(6 * time.Minute)}, got{c{"True", "FluxObjectNotReady", subject + ": " + waitingHR + " (not converged for more than 5m0s)"}, 0}},
		{"a QueueGrace shorter than the grace period is the grace period", 4 * time.Minute, time.Minute, nil,
			[]ObjectState{queued(4 * time.Minute)}, got{notDegraded, time.Minute}},
		{"picked up after 6 minutes in the queue, at work for 30 s: the grace period from Flux's start", 6*time.Minute + 30*time.Second, queueGrace, nil,
			[]ObjectState{working(6*time.Minute+30*time.Second, 30*time.Second)}, got{notDegraded, 4*time.Minute + 30*time.Second}},
		{"installed after 11 minutes in the queue, Ready reported a moment before the generation is recorded: not Degraded", 11 * time.Minute, queueGrace, nil,
			[]ObjectState{obj(working(11*time.Minute, time.Second), func(s *ObjectState) {
				s.Ready, s.Reason, s.Message, s.Reconciling = metav1.ConditionTrue, "InstallSucceeded", "Helm install succeeded", false
			})}, got{notDegraded, 5*time.Minute - time.Second}},
		{"an install at work for 6 minutes: Degraded after the grace period", 7 * time.Minute, queueGrace, nil,
			[]ObjectState{working(7*time.Minute, 6*time.Minute)}, got{c{"True", "FluxObjectNotReady", subject + ": " + installing + " (not converged for more than 5m0s)"}, 0}},
		{"the next object created a minute ago, 20 minutes into the rollout: QueueGrace from its creation", 20 * time.Minute, queueGrace, nil,
			[]ObjectState{healthyHR("c1-ccm", "ccm"), queued(time.Minute)}, got{notDegraded, 14 * time.Minute}},
		{"not created yet, 11 minutes into the rollout, the object before it Ready a minute ago: the grace period from then", 11 * time.Minute, queueGrace, nil,
			[]ObjectState{obj(healthyHR("c1-cni", "cni"), func(s *ObjectState) { s.ReadySince = t0.Add(-time.Minute) }), Missing("Kustomization", "c1-info", "info")},
			got{notDegraded, 4 * time.Minute}},
		{"not created yet, the object before it Ready 6 minutes ago: Degraded", 11 * time.Minute, queueGrace, nil,
			[]ObjectState{obj(healthyHR("c1-cni", "cni"), func(s *ObjectState) { s.ReadySince = t0.Add(-6 * time.Minute) }), Missing("Kustomization", "c1-info", "info")},
			got{c{"True", "FluxObjectNotReady", subject + ": component info: Kustomization/c1-info does not exist yet (not converged for more than 5m0s)"}, 0}},
		{"a prerequisite awaited: the grace period from the rollout's start, whatever the objects", 6 * time.Minute, queueGrace,
			&Problem{Reason: "WaitingForKubeconfig", Message: "waiting for Secret c1-kubeconfig"}, []ObjectState{queued(6 * time.Minute)},
			got{c{"True", "WaitingForKubeconfig", subject + ": waiting for Secret c1-kubeconfig (for more than 5m0s)"}, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Compute(Input{Subject: subject, Desired: v1, Objects: tt.objects, Waiting: tt.waiting,
				Previous: progressingSince(tt.progressed), Now: t0, Grace: grace, QueueGrace: tt.queueGrace})
			g := got{c{string(r.Degraded.Status), r.Degraded.Reason, r.Degraded.Message}, r.RequeueAfter}
			if diff := cmp.Diff(tt.want, g); diff != "" {
				t.Errorf("Compute (-want +got):\n%s", diff)
			}
		})
	}
}
