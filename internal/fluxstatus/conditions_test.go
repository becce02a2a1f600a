package fluxstatus

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	grace   = 5 * time.Minute
	subject = "cluster default/c1"
	v1      = "aws-base-1-33-v1"
	v2      = "aws-base-1-33-v2"
)

// c is a condition without times and generation, as Compute returns them.
type c struct{ Status, Reason, Message string }

func project(cond metav1.Condition) c {
	return c{Status: string(cond.Status), Reason: cond.Reason, Message: cond.Message}
}

func healthyHR(name, component string) ObjectState {
	return ObjectState{
		Kind: "HelmRelease", Name: name, Component: component, Exists: true, Created: t0.Add(-time.Hour),
		Ready: metav1.ConditionTrue, ReadySince: t0.Add(-30 * time.Minute), Reason: "UpgradeSucceeded", Message: "Helm upgrade succeeded",
		Current: true, Revision: "1.1.0", ExpectedRevision: "1.1.0",
	}
}

func healthyKS(name, component string) ObjectState {
	return ObjectState{
		Kind: "Kustomization", Name: name, Component: component, Exists: true, Created: t0.Add(-time.Hour),
		Ready: metav1.ConditionTrue, ReadySince: t0.Add(-30 * time.Minute), Reason: "ReconciliationSucceeded",
		Current: true, Revision: v2 + "@sha1:abc", ExpectedRevision: v2 + "@sha1:abc",
	}
}

func obj(s ObjectState, mut func(*ObjectState)) ObjectState {
	mut(&s)
	return s
}

func progressingSince(d time.Duration) []metav1.Condition {
	return []metav1.Condition{
		{Type: "Available", Status: metav1.ConditionFalse, Reason: "Reconciling", LastTransitionTime: at(-time.Hour)},
		{Type: "Progressing", Status: metav1.ConditionTrue, Reason: "Reconciling", LastTransitionTime: at(-d)},
		{Type: "Degraded", Status: metav1.ConditionFalse, Reason: "AsExpected", LastTransitionTime: at(-time.Hour)},
	}
}

type want struct {
	Available, Progressing, Degraded, Ready c
	Healthy                                 bool
	RequeueAfter                            time.Duration
}

func TestCompute(t *testing.T) {
	const (
		fluxInstallFailed = "Helm install failed for release kube-system/cni with chart cni@1.1.0: context deadline exceeded"
		fluxStalled       = "values don't meet the specifications of the schema(s) in the following chart(s)"
	)
	// notConverged is the Degraded condition (or, with status False, Available/Ready) of a
	// rollout taking longer than the grace period.
	notConverged := func(status, msg string) c {
		return c{status, "FluxObjectNotReady", subject + ": " + msg + " (not converged for more than 5m0s)"}
	}
	tests := []struct {
		name string
		in   Input
		want want
	}{
		{
			name: "all healthy",
			in:   Input{Objects: []ObjectState{healthyHR("c1-cni", "cni"), healthyKS("c1-info", "info")}, Delivered: v2, Desired: v2},
			want: want{
				Available:   c{"True", "AsExpected", subject + ": " + v2 + " is available"},
				Progressing: c{"False", "AsExpected", subject + ": " + v2 + " is applied"},
				Degraded:    c{"False", "AsExpected", subject + ": desired state is met or converging"},
				Ready:       c{"True", "AsExpected", subject + ": " + v2 + " is available"},
				Healthy:     true,
			},
		},
		{
			name: "nothing needed, nothing desired",
			in:   Input{},
			want: want{
				Available:   c{"True", "AsExpected", subject + ": the desired state is available"},
				Progressing: c{"False", "AsExpected", subject + ": the desired state is applied"},
				Degraded:    c{"False", "AsExpected", subject + ": desired state is met or converging"},
				Ready:       c{"True", "AsExpected", subject + ": the desired state is available"},
				Healthy:     true,
			},
		},
		{
			name: "first install in progress: Reconciling, grace starts now",
			in: Input{Desired: v2, Objects: []ObjectState{
				obj(healthyHR("c1-cni", "cni"), func(s *ObjectState) {
					s.Ready, s.ReadySince, s.Reason, s.Message, s.Reconciling, s.Revision = metav1.ConditionUnknown, t0.Add(-time.Second), "Progressing", "Running 'install' action with timeout of 5m0s", true, ""
				}),
				Missing("HelmRelease", "c1-csi", "csi"),
			}},
			want: want{
				Available:    c{"False", "Reconciling", subject + ": component cni: HelmRelease/c1-cni: Running 'install' action with timeout of 5m0s"},
				Progressing:  c{"True", "Reconciling", subject + ": component cni: HelmRelease/c1-cni: Running 'install' action with timeout of 5m0s"},
				Degraded:     c{"False", "AsExpected", subject + ": desired state is met or converging"},
				Ready:        c{"False", "Reconciling", subject + ": component cni: HelmRelease/c1-cni: Running 'install' action with timeout of 5m0s"},
				RequeueAfter: grace,
			},
		},
		{
			name: "object missing",
			in:   Input{Desired: v2, Objects: []ObjectState{healthyHR("c1-cni", "cni"), Missing("HelmRelease", "c1-csi", "csi")}, Previous: progressingSince(time.Minute)},
			want: want{
				Available:    c{"False", "Reconciling", subject + ": component csi: HelmRelease/c1-csi does not exist yet"},
				Progressing:  c{"True", "Reconciling", subject + ": component csi: HelmRelease/c1-csi does not exist yet"},
				Degraded:     c{"False", "AsExpected", subject + ": desired state is met or converging"},
				Ready:        c{"False", "Reconciling", subject + ": component csi: HelmRelease/c1-csi does not exist yet"},
				RequeueAfter: 4 * time.Minute,
			},
		},
		{
			name: "latest generation not observed: Reconciling, grace from Progressing's transition",
			in: Input{Desired: v2, Previous: progressingSince(2 * time.Minute), Objects: []ObjectState{
				obj(healthyHR("c1-cni", "cni"), func(s *ObjectState) { s.Current = false }),
			}},
			want: want{
				Available:    c{"False", "Reconciling", subject + ": component cni: HelmRelease/c1-cni has not observed its latest generation yet (waiting for helm-controller)"},
				Progressing:  c{"True", "Reconciling", subject + ": component cni: HelmRelease/c1-cni has not observed its latest generation yet (waiting for helm-controller)"},
				Degraded:     c{"False", "AsExpected", subject + ": desired state is met or converging"},
				Ready:        c{"False", "Reconciling", subject + ": component cni: HelmRelease/c1-cni has not observed its latest generation yet (waiting for helm-controller)"},
				RequeueAfter: 3 * time.Minute,
			},
		},
		{
			name: "Ready at the wrong revision: RevisionPending",
			in: Input{Desired: v2, Objects: []ObjectState{
				healthyKS("c1-info", "info"),
				obj(healthyHR("c1-cni", "cni"), func(s *ObjectState) { s.Revision = "1.0.0" }),
			}},
			want: want{
				Available:    c{"False", "RevisionPending", subject + `: component cni: HelmRelease/c1-cni is at revision "1.0.0", expected "1.1.0"`},
				Progressing:  c{"True", "RevisionPending", subject + `: component cni: HelmRelease/c1-cni is at revision "1.0.0", expected "1.1.0"`},
				Degraded:     c{"False", "AsExpected", subject + ": desired state is met or converging"},
				Ready:        c{"False", "RevisionPending", subject + `: component cni: HelmRelease/c1-cni is at revision "1.0.0", expected "1.1.0"`},
				RequeueAfter: grace,
			},
		},
		{
			name: "stalled: Degraded at once, naming component, object and Flux's message",
			in: Input{Desired: v2, Objects: []ObjectState{
				healthyHR("c1-cni", "cni"),
				obj(healthyHR("c1-csi", "csi"), func(s *ObjectState) {
					s.Ready, s.ReadySince, s.Stalled, s.Reason, s.Message = metav1.ConditionFalse, t0.Add(-time.Second), true, "InstallFailed", fluxStalled
				}),
			}},
			want: want{
				Available:   c{"False", "FluxObjectStalled", subject + ": component csi: HelmRelease/c1-csi stalled: " + fluxStalled},
				Progressing: c{"False", "FluxObjectStalled", subject + ": not progressing until the problem is fixed"},
				Degraded:    c{"True", "FluxObjectStalled", subject + ": component csi: HelmRelease/c1-csi stalled: " + fluxStalled},
				Ready:       c{"False", "FluxObjectStalled", subject + ": component csi: HelmRelease/c1-csi stalled: " + fluxStalled},
			},
		},
		{
			name: "two stalled objects are both named",
			in: Input{Desired: v2, Objects: []ObjectState{
				obj(healthyHR("c1-cni", "cni"), func(s *ObjectState) { s.Stalled, s.Message = true, "a" }),
				obj(healthyKS("c1-info", "info"), func(s *ObjectState) { s.Stalled, s.Message = true, "b" }),
			}},
			want: want{
				Available:   c{"False", "FluxObjectStalled", subject + ": component cni: HelmRelease/c1-cni stalled: a; component info: Kustomization/c1-info stalled: b"},
				Progressing: c{"False", "FluxObjectStalled", subject + ": not progressing until the problem is fixed"},
				Degraded:    c{"True", "FluxObjectStalled", subject + ": component cni: HelmRelease/c1-cni stalled: a; component info: Kustomization/c1-info stalled: b"},
				Ready:       c{"False", "FluxObjectStalled", subject + ": component cni: HelmRelease/c1-cni stalled: a; component info: Kustomization/c1-info stalled: b"},
			},
		},
		{
			name: "Ready=False within grace: Progressing, requeue when its grace runs out",
			in: Input{Desired: v2, Objects: []ObjectState{
				obj(healthyHR("c1-cni", "cni"), func(s *ObjectState) {
					s.Ready, s.ReadySince, s.Reason, s.Message, s.Revision = metav1.ConditionFalse, t0.Add(-2*time.Minute), "InstallFailed", fluxInstallFailed, ""
				}),
			}},
			want: want{
				Available:    c{"False", "Reconciling", subject + ": component cni: HelmRelease/c1-cni: " + fluxInstallFailed},
				Progressing:  c{"True", "Reconciling", subject + ": component cni: HelmRelease/c1-cni: " + fluxInstallFailed},
				Degraded:     c{"False", "AsExpected", subject + ": desired state is met or converging"},
				Ready:        c{"False", "Reconciling", subject + ": component cni: HelmRelease/c1-cni: " + fluxInstallFailed},
				RequeueAfter: 3 * time.Minute,
			},
		},
		{
			name: "Ready=False beyond grace: Degraded FluxObjectNotReady",
			in: Input{Desired: v2, Previous: progressingSince(6 * time.Minute), Objects: []ObjectState{
				obj(healthyHR("c1-cni", "cni"), func(s *ObjectState) {
					s.Ready, s.ReadySince, s.Reason, s.Message, s.Revision = metav1.ConditionFalse, t0.Add(-6*time.Minute), "InstallFailed", fluxInstallFailed, ""
				}),
			}},
			want: want{
				Available:   c{"False", "FluxObjectNotReady", subject + ": component cni: HelmRelease/c1-cni: " + fluxInstallFailed + " (not Ready for more than 5m0s)"},
				Progressing: c{"True", "Reconciling", subject + ": component cni: HelmRelease/c1-cni: " + fluxInstallFailed},
				Degraded:    c{"True", "FluxObjectNotReady", subject + ": component cni: HelmRelease/c1-cni: " + fluxInstallFailed + " (not Ready for more than 5m0s)"},
				Ready:       c{"False", "FluxObjectNotReady", subject + ": component cni: HelmRelease/c1-cni: " + fluxInstallFailed + " (not Ready for more than 5m0s)"},
			},
		},
		{
			name: "Ready=False without transition time: measured from creation",
			in: Input{Desired: v2, Previous: progressingSince(time.Minute), Objects: []ObjectState{
				obj(healthyHR("c1-cni", "cni"), func(s *ObjectState) {
					s.Ready, s.ReadySince, s.Created, s.Message = metav1.ConditionFalse, time.Time{}, t0.Add(-10*time.Minute), "failed"
				}),
			}},
			want: want{
				Available:    c{"False", "FluxObjectNotReady", subject + ": component cni: HelmRelease/c1-cni: failed (not Ready for more than 5m0s)"},
				Progressing:  c{"True", "Reconciling", subject + ": component cni: HelmRelease/c1-cni: failed"},
				Degraded:     c{"True", "FluxObjectNotReady", subject + ": component cni: HelmRelease/c1-cni: failed (not Ready for more than 5m0s)"},
				Ready:        c{"False", "FluxObjectNotReady", subject + ": component cni: HelmRelease/c1-cni: failed (not Ready for more than 5m0s)"},
				RequeueAfter: 4 * time.Minute,
			},
		},
		{
			name: "not converged beyond grace (object only reconciling): Degraded",
			in: Input{Desired: v2, Previous: progressingSince(5 * time.Minute), Objects: []ObjectState{
				obj(healthyHR("c1-cni", "cni"), func(s *ObjectState) {
					s.Ready, s.Reconciling, s.Message = metav1.ConditionUnknown, true, "Running 'install' action"
				}),
			}},
			want: want{
				Available:   notConverged("False", "component cni: HelmRelease/c1-cni: Running 'install' action"),
				Progressing: c{"True", "Reconciling", subject + ": component cni: HelmRelease/c1-cni: Running 'install' action"},
				Degraded:    notConverged("True", "component cni: HelmRelease/c1-cni: Running 'install' action"),
				Ready:       notConverged("False", "component cni: HelmRelease/c1-cni: Running 'install' action"),
			},
		},
		{
			name: "upgrade in progress keeps Available True for the delivered version",
			in: Input{Delivered: v1, Desired: v2, Previous: progressingSince(time.Minute), Objects: []ObjectState{
				obj(healthyHR("c1-cni", "cni"), func(s *ObjectState) { s.Revision = "1.0.0" }),
				healthyKS("c1-info", "info"),
			}},
			want: want{
				Available:    c{"True", "AsExpected", subject + ": " + v1 + " is available"},
				Progressing:  c{"True", "Upgrading", subject + ": upgrading from " + v1 + " to " + v2 + `: component cni: HelmRelease/c1-cni is at revision "1.0.0", expected "1.1.0"`},
				Degraded:     c{"False", "AsExpected", subject + ": desired state is met or converging"},
				Ready:        c{"False", "Upgrading", subject + ": upgrading from " + v1 + " to " + v2 + `: component cni: HelmRelease/c1-cni is at revision "1.0.0", expected "1.1.0"`},
				RequeueAfter: 4 * time.Minute,
			},
		},
		{
			name: "a move described with another verb (MoveVerb)",
			in: Input{Delivered: v1, Desired: v2, MoveVerb: "moving", Previous: progressingSince(time.Minute), Objects: []ObjectState{
				obj(healthyHR("c1-cni", "cni"), func(s *ObjectState) { s.Revision = "1.0.0" }),
			}},
			want: want{
				Available:    c{"True", "AsExpected", subject + ": " + v1 + " is available"},
				Progressing:  c{"True", "Upgrading", subject + ": moving from " + v1 + " to " + v2 + `: component cni: HelmRelease/c1-cni is at revision "1.0.0", expected "1.1.0"`},
				Degraded:     c{"False", "AsExpected", subject + ": desired state is met or converging"},
				Ready:        c{"False", "Upgrading", subject + ": moving from " + v1 + " to " + v2 + `: component cni: HelmRelease/c1-cni is at revision "1.0.0", expected "1.1.0"`},
				RequeueAfter: 4 * time.Minute,
			},
		},
		{
			name: "upgrade while the delivered state does not serve (Unavailable): Available False, not Degraded within grace",
			in: Input{Delivered: v1, Desired: v2, Previous: progressingSince(time.Minute),
				Unavailable: &Problem{Reason: "DeploymentUnavailable", Message: "Deployment capi-system/capi has no available replicas"},
				Objects:     []ObjectState{obj(healthyHR("c1-cni", "cni"), func(s *ObjectState) { s.Revision = "1.0.0" })}},
			want: want{
				Available:    c{"False", "DeploymentUnavailable", subject + ": Deployment capi-system/capi has no available replicas"},
				Progressing:  c{"True", "Upgrading", subject + ": upgrading from " + v1 + " to " + v2 + `: component cni: HelmRelease/c1-cni is at revision "1.0.0", expected "1.1.0"`},
				Degraded:     c{"False", "AsExpected", subject + ": desired state is met or converging"},
				Ready:        c{"False", "Upgrading", subject + ": upgrading from " + v1 + " to " + v2 + `: component cni: HelmRelease/c1-cni is at revision "1.0.0", expected "1.1.0"`},
				RequeueAfter: 4 * time.Minute,
			},
		},
		{
			name: "upgrade failing beyond grace while the old version is observed to serve: Degraded, Available stays True",
			in: Input{Delivered: v1, Desired: v2, AvailabilityObserved: true, Previous: progressingSince(6 * time.Minute), Objects: []ObjectState{
				obj(healthyHR("c1-cni", "cni"), func(s *ObjectState) {
					s.Ready, s.ReadySince, s.Message = metav1.ConditionFalse, t0.Add(-6*time.Minute), "upgrade failed"
				}),
			}},
			want: want{
				Available:   c{"True", "AsExpected", subject + ": " + v1 + " is available"},
				Progressing: c{"True", "Upgrading", subject + ": upgrading from " + v1 + " to " + v2 + ": component cni: HelmRelease/c1-cni: upgrade failed"},
				Degraded:    c{"True", "FluxObjectNotReady", subject + ": component cni: HelmRelease/c1-cni: upgrade failed (not Ready for more than 5m0s)"},
				Ready:       c{"False", "FluxObjectNotReady", subject + ": component cni: HelmRelease/c1-cni: upgrade failed (not Ready for more than 5m0s)"},
			},
		},
		{
			name: "upgrade failing beyond grace while the old version is observed not to serve: Degraded, Available False",
			in: Input{Delivered: v1, Desired: v2, AvailabilityObserved: true, Previous: progressingSince(6 * time.Minute),
				Unavailable: &Problem{Reason: "DeploymentUnavailable", Message: "Deployment capi-system/capi is not available"},
				Objects: []ObjectState{obj(healthyHR("c1-cni", "cni"), func(s *ObjectState) {
					s.Ready, s.ReadySince, s.Message = metav1.ConditionFalse, t0.Add(-6*time.Minute), "upgrade failed"
				})}},
			want: want{
				Available:   c{"False", "DeploymentUnavailable", subject + ": Deployment capi-system/capi is not available"},
				Progressing: c{"True", "Upgrading", subject + ": upgrading from " + v1 + " to " + v2 + ": component cni: HelmRelease/c1-cni: upgrade failed"},
				Degraded:    c{"True", "FluxObjectNotReady", subject + ": component cni: HelmRelease/c1-cni: upgrade failed (not Ready for more than 5m0s)"},
				Ready:       c{"False", "FluxObjectNotReady", subject + ": component cni: HelmRelease/c1-cni: upgrade failed (not Ready for more than 5m0s)"},
			},
		},
		{
			name: "Unavailable does not hide a healthy state",
			in: Input{Delivered: v2, Desired: v2, Objects: []ObjectState{healthyHR("c1-cni", "cni")},
				Unavailable: &Problem{Reason: "DeploymentUnavailable", Message: "stale"}},
			want: want{
				Available:   c{"True", "AsExpected", subject + ": " + v2 + " is available"},
				Progressing: c{"False", "AsExpected", subject + ": " + v2 + " is applied"},
				Degraded:    c{"False", "AsExpected", subject + ": desired state is met or converging"},
				Ready:       c{"True", "AsExpected", subject + ": " + v2 + " is available"},
				Healthy:     true,
			},
		},
		{
			name: "upgrade with an object Ready=False within grace: still Available",
			in: Input{Delivered: v1, Desired: v2, Previous: progressingSince(time.Minute), Objects: []ObjectState{
				obj(healthyHR("c1-cni", "cni"), func(s *ObjectState) {
					s.Ready, s.ReadySince, s.Message = metav1.ConditionFalse, t0.Add(-30*time.Second), "upgrade failed"
				}),
			}},
			want: want{
				Available:   c{"True", "AsExpected", subject + ": " + v1 + " is available"},
				Progressing: c{"True", "Upgrading", subject + ": upgrading from " + v1 + " to " + v2 + ": component cni: HelmRelease/c1-cni: upgrade failed"},
				Degraded:    c{"False", "AsExpected", subject + ": desired state is met or converging"},
				Ready:       c{"False", "Upgrading", subject + ": upgrading from " + v1 + " to " + v2 + ": component cni: HelmRelease/c1-cni: upgrade failed"},
				// Both clocks run from Flux's failure 30 s ago: the object's record, and the
				// rollout's, which counts from when Flux began work on the current spec.
				RequeueAfter: 4*time.Minute + 30*time.Second,
			},
		},
		{
			name: "upgrade failing beyond grace: Degraded, Available False",
			in: Input{Delivered: v1, Desired: v2, Previous: progressingSince(6 * time.Minute), Objects: []ObjectState{
				obj(healthyHR("c1-cni", "cni"), func(s *ObjectState) {
					s.Ready, s.ReadySince, s.Message = metav1.ConditionFalse, t0.Add(-6*time.Minute), "upgrade failed"
				}),
			}},
			want: want{
				Available:   c{"False", "FluxObjectNotReady", subject + ": component cni: HelmRelease/c1-cni: upgrade failed (not Ready for more than 5m0s)"},
				Progressing: c{"True", "Upgrading", subject + ": upgrading from " + v1 + " to " + v2 + ": component cni: HelmRelease/c1-cni: upgrade failed"},
				Degraded:    c{"True", "FluxObjectNotReady", subject + ": component cni: HelmRelease/c1-cni: upgrade failed (not Ready for more than 5m0s)"},
				Ready:       c{"False", "FluxObjectNotReady", subject + ": component cni: HelmRelease/c1-cni: upgrade failed (not Ready for more than 5m0s)"},
			},
		},
		{
			name: "upgrade not converged beyond grace: Degraded, the delivered version still Available (nothing failed applying)",
			in: Input{Delivered: v1, Desired: v2, Previous: progressingSince(10 * time.Minute), Objects: []ObjectState{
				obj(healthyHR("c1-cni", "cni"), func(s *ObjectState) { s.Revision = "1.0.0" }),
			}},
			want: want{
				Available:   c{"True", "AsExpected", subject + ": " + v1 + " is available"},
				Progressing: c{"True", "Upgrading", subject + ": upgrading from " + v1 + " to " + v2 + `: component cni: HelmRelease/c1-cni is at revision "1.0.0", expected "1.1.0"`},
				Degraded:    notConverged("True", `component cni: HelmRelease/c1-cni is at revision "1.0.0", expected "1.1.0"`),
				Ready:       notConverged("False", `component cni: HelmRelease/c1-cni is at revision "1.0.0", expected "1.1.0"`),
			},
		},
		{
			name: "upgrade stalled: Degraded, Available False",
			in: Input{Delivered: v1, Desired: v2, Objects: []ObjectState{
				obj(healthyHR("c1-cni", "cni"), func(s *ObjectState) { s.Stalled, s.Ready, s.Message = true, metav1.ConditionFalse, fluxStalled }),
			}},
			want: want{
				Available:   c{"False", "FluxObjectStalled", subject + ": component cni: HelmRelease/c1-cni stalled: " + fluxStalled},
				Progressing: c{"False", "FluxObjectStalled", subject + ": not progressing until the problem is fixed"},
				Degraded:    c{"True", "FluxObjectStalled", subject + ": component cni: HelmRelease/c1-cni stalled: " + fluxStalled},
				Ready:       c{"False", "FluxObjectStalled", subject + ": component cni: HelmRelease/c1-cni stalled: " + fluxStalled},
			},
		},
		{
			name: "invalid input: Degraded at once, not Progressing, even with healthy objects; the delivered version still Available",
			in: Input{Delivered: v1, Desired: v2, Objects: []ObjectState{healthyHR("c1-cni", "cni")},
				Invalid: &Problem{Reason: "RenderFailed", Message: "release " + v2 + ": component cni: cluster-addon/cni/overwrite.yaml: map has no entry for key \"host\"", Since: t0}},
			want: want{
				Available:   c{"True", "AsExpected", subject + ": " + v1 + " is available"},
				Progressing: c{"False", "RenderFailed", subject + ": not progressing until the problem is fixed"},
				Degraded:    c{"True", "RenderFailed", subject + ": release " + v2 + ": component cni: cluster-addon/cni/overwrite.yaml: map has no entry for key \"host\""},
				Ready:       c{"False", "RenderFailed", subject + ": release " + v2 + ": component cni: cluster-addon/cni/overwrite.yaml: map has no entry for key \"host\""},
			},
		},
		{
			name: "invalid input wins over waiting",
			in: Input{Desired: v2,
				Invalid: &Problem{Reason: "InvalidStack", Message: "bad stack", Since: t0},
				Waiting: &Problem{Reason: "WaitingForKubeconfig", Message: "waiting for Secret c1-kubeconfig", Since: t0.Add(-time.Hour)}},
			want: want{
				Available:   c{"False", "InvalidStack", subject + ": bad stack"},
				Progressing: c{"False", "InvalidStack", subject + ": not progressing until the problem is fixed"},
				Degraded:    c{"True", "InvalidStack", subject + ": bad stack"},
				Ready:       c{"False", "InvalidStack", subject + ": bad stack"},
			},
		},
		{
			name: "waiting within grace",
			in:   Input{Desired: v2, Waiting: &Problem{Reason: "WaitingForControlPlane", Message: "waiting for the control plane", Since: t0.Add(-time.Minute)}},
			want: want{
				Available:    c{"False", "WaitingForControlPlane", subject + ": waiting for the control plane"},
				Progressing:  c{"True", "WaitingForControlPlane", subject + ": waiting for the control plane"},
				Degraded:     c{"False", "AsExpected", subject + ": desired state is met or converging"},
				Ready:        c{"False", "WaitingForControlPlane", subject + ": waiting for the control plane"},
				RequeueAfter: 4 * time.Minute,
			},
		},
		{
			name: "waiting since before Progressing started: grace from the earlier",
			in:   Input{Desired: v2, Previous: progressingSince(time.Minute), Waiting: &Problem{Reason: "WaitingForKubeconfig", Message: "waiting for Secret c1-kubeconfig", Since: t0.Add(-3 * time.Minute)}},
			want: want{
				Available:    c{"False", "WaitingForKubeconfig", subject + ": waiting for Secret c1-kubeconfig"},
				Progressing:  c{"True", "WaitingForKubeconfig", subject + ": waiting for Secret c1-kubeconfig"},
				Degraded:     c{"False", "AsExpected", subject + ": desired state is met or converging"},
				Ready:        c{"False", "WaitingForKubeconfig", subject + ": waiting for Secret c1-kubeconfig"},
				RequeueAfter: 2 * time.Minute,
			},
		},
		{
			name: "waiting beyond grace: Degraded with the waiting reason",
			in:   Input{Desired: v2, Waiting: &Problem{Reason: "WaitingForControlPlane", Message: "waiting for the control plane", Since: t0.Add(-6 * time.Minute)}},
			want: want{
				Available:   c{"False", "WaitingForControlPlane", subject + ": waiting for the control plane (for more than 5m0s)"},
				Progressing: c{"True", "WaitingForControlPlane", subject + ": waiting for the control plane"},
				Degraded:    c{"True", "WaitingForControlPlane", subject + ": waiting for the control plane (for more than 5m0s)"},
				Ready:       c{"False", "WaitingForControlPlane", subject + ": waiting for the control plane (for more than 5m0s)"},
			},
		},
		{
			name: "upgrade waiting for the new release within grace: delivered version stays Available",
			in: Input{Delivered: v1, Desired: v2, Objects: []ObjectState{healthyHR("c1-cni", "cni")},
				Waiting: &Problem{Reason: "WaitingForRelease", Message: "release " + v2 + " does not exist", Since: t0.Add(-time.Minute)}},
			want: want{
				Available:    c{"True", "AsExpected", subject + ": " + v1 + " is available"},
				Progressing:  c{"True", "WaitingForRelease", subject + ": release " + v2 + " does not exist"},
				Degraded:     c{"False", "AsExpected", subject + ": desired state is met or converging"},
				Ready:        c{"False", "WaitingForRelease", subject + ": release " + v2 + " does not exist"},
				RequeueAfter: 4 * time.Minute,
			},
		},
		{
			name: "nearest grace wins: object grace before rollout grace",
			in: Input{Desired: v2, Previous: progressingSince(time.Minute), Objects: []ObjectState{
				obj(healthyHR("c1-cni", "cni"), func(s *ObjectState) {
					s.Ready, s.ReadySince, s.Message = metav1.ConditionFalse, t0.Add(-4*time.Minute), "x"
				}),
				obj(healthyHR("c1-csi", "csi"), func(s *ObjectState) {
					s.Ready, s.ReadySince, s.Message = metav1.ConditionFalse, t0.Add(-3*time.Minute), "y"
				}),
			}},
			want: want{
				Available:    c{"False", "Reconciling", subject + ": component cni: HelmRelease/c1-cni: x"},
				Progressing:  c{"True", "Reconciling", subject + ": component cni: HelmRelease/c1-cni: x"},
				Degraded:     c{"False", "AsExpected", subject + ": desired state is met or converging"},
				Ready:        c{"False", "Reconciling", subject + ": component cni: HelmRelease/c1-cni: x"},
				RequeueAfter: time.Minute,
			},
		},
		{
			name: "held for longer than the grace period with every object healthy: Progressing, never Degraded",
			in: Input{Desired: v2, Delivered: v1, Previous: progressingSince(time.Hour), Objects: []ObjectState{healthyHR("c1-cni", "cni")},
				Held: &Problem{Reason: "WaitingForControlPlaneUpgrade", Message: "waiting for the control plane to run v1.34.1"}},
			want: want{
				Available:   c{"True", "AsExpected", subject + ": " + v1 + " is available"},
				Progressing: c{"True", "WaitingForControlPlaneUpgrade", subject + ": waiting for the control plane to run v1.34.1"},
				Degraded:    c{"False", "AsExpected", subject + ": desired state is met or converging"},
				Ready:       c{"False", "WaitingForControlPlaneUpgrade", subject + ": waiting for the control plane to run v1.34.1"},
			},
		},
		{
			name: "held while a before-upgrade object does not converge within the grace period: Degraded",
			in: Input{Desired: v2, Delivered: v1, Previous: progressingSince(6 * time.Minute), Objects: []ObjectState{obj(healthyHR("c1-cni", "cni"), func(s *ObjectState) { s.Current = false })},
				Held: &Problem{Reason: "WaitingForControlPlaneUpgrade", Message: "waiting for the control plane to run v1.34.1"}},
			want: want{
				Available:   c{"True", "AsExpected", subject + ": " + v1 + " is available"},
				Progressing: c{"True", "Upgrading", subject + ": upgrading from " + v1 + " to " + v2 + ": component cni: HelmRelease/c1-cni has not observed its latest generation yet (waiting for helm-controller)"},
				Degraded:    notConverged("True", "component cni: HelmRelease/c1-cni has not observed its latest generation yet (waiting for helm-controller)"),
				Ready:       notConverged("False", "component cni: HelmRelease/c1-cni has not observed its latest generation yet (waiting for helm-controller)"),
			},
		},
		{
			name: "a step started after the hold: the rollout's grace counts from it, not from Progressing's start",
			in: Input{Desired: v2, Delivered: v1, Previous: progressingSince(time.Hour), StepStarted: t0.Add(-time.Minute),
				Objects: []ObjectState{obj(healthyHR("c1-csi", "csi"), func(s *ObjectState) { s.Current = false })}},
			want: want{
				Available:    c{"True", "AsExpected", subject + ": " + v1 + " is available"},
				Progressing:  c{"True", "Upgrading", subject + ": upgrading from " + v1 + " to " + v2 + ": component csi: HelmRelease/c1-csi has not observed its latest generation yet (waiting for helm-controller)"},
				Degraded:     c{"False", "AsExpected", subject + ": desired state is met or converging"},
				Ready:        c{"False", "Upgrading", subject + ": upgrading from " + v1 + " to " + v2 + ": component csi: HelmRelease/c1-csi has not observed its latest generation yet (waiting for helm-controller)"},
				RequeueAfter: 4 * time.Minute,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			in.Subject, in.Now, in.Grace = subject, t0, grace
			r := Compute(in)
			got := want{
				Available: project(r.Available), Progressing: project(r.Progressing), Degraded: project(r.Degraded), Ready: project(r.Ready),
				Healthy: r.Healthy, RequeueAfter: r.RequeueAfter,
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Compute() mismatch (-want +got):\n%s", diff)
			}
			for _, cond := range []struct {
				typ string
				got metav1.Condition
			}{{"Available", r.Available}, {"Progressing", r.Progressing}, {"Degraded", r.Degraded}, {"Ready", r.Ready}} {
				if cond.got.Type != cond.typ {
					t.Errorf("condition type = %q, want %q", cond.got.Type, cond.typ)
				}
			}
			// kstatus: Ready is True exactly when Available and neither Progressing nor Degraded.
			wantReady := r.Available.Status == "True" && r.Progressing.Status != "True" && r.Degraded.Status != "True"
			if (r.Ready.Status == "True") != wantReady {
				t.Errorf("Ready = %s, inconsistent with Available=%s Progressing=%s Degraded=%s", r.Ready.Status, r.Available.Status, r.Progressing.Status, r.Degraded.Status)
			}
		})
	}
}

// TestComputeTransitionTimes: the computed conditions carry the input's clock, so a test
// clock (StatusOptions.Now) governs Progressing's start and with it the grace period.
func TestComputeTransitionTimes(t *testing.T) {
	r := Compute(Input{Subject: subject, Desired: v2, Objects: []ObjectState{Missing("HelmRelease", "c1-cni", "cni")}, Now: t0, Grace: grace})
	var conds []metav1.Condition
	Apply(&conds, 1, r)
	for _, cond := range conds {
		if !cond.LastTransitionTime.Time.Equal(t0) {
			t.Errorf("%s.lastTransitionTime = %v, want the input's Now %v", cond.Type, cond.LastTransitionTime.Time, t0)
		}
	}
	// Four minutes later, still not there: one minute of grace left.
	r = Compute(Input{Subject: subject, Desired: v2, Objects: []ObjectState{Missing("HelmRelease", "c1-cni", "cni")}, Previous: conds, Now: t0.Add(4 * time.Minute), Grace: grace})
	if r.RequeueAfter != time.Minute || r.Degraded.Status != metav1.ConditionFalse {
		t.Errorf("after 4m: RequeueAfter = %v, Degraded = %s; want 1m0s, False", r.RequeueAfter, r.Degraded.Status)
	}
	// Six minutes later: Degraded.
	r = Compute(Input{Subject: subject, Desired: v2, Objects: []ObjectState{Missing("HelmRelease", "c1-cni", "cni")}, Previous: conds, Now: t0.Add(6 * time.Minute), Grace: grace})
	if r.Degraded.Status != metav1.ConditionTrue || r.Degraded.Reason != "FluxObjectNotReady" {
		t.Errorf("after 6m: Degraded = %s/%s, want True/FluxObjectNotReady", r.Degraded.Status, r.Degraded.Reason)
	}
}

// TestComputeApplyIdempotent: recomputing an unchanged situation a little later and applying
// it changes nothing, also after the conditions went through the API server (JSON).
func TestComputeApplyIdempotent(t *testing.T) {
	long := strings.Repeat("ä", 1500) // Flux messages can be long and non-ASCII
	inputs := map[string]Input{
		"healthy":     {Objects: []ObjectState{healthyHR("c1-cni", "cni")}, Desired: v2, Delivered: v2},
		"progressing": {Objects: []ObjectState{Missing("HelmRelease", "c1-cni", "cni")}, Desired: v2},
		"upgrading":   {Objects: []ObjectState{obj(healthyHR("c1-cni", "cni"), func(s *ObjectState) { s.Revision = "1.0.0" })}, Desired: v2, Delivered: v1},
		"stalled":     {Objects: []ObjectState{obj(healthyHR("c1-cni", "cni"), func(s *ObjectState) { s.Stalled, s.Message = true, "x"+long })}, Desired: v2},
		"invalid":     {Invalid: &Problem{Reason: "RenderFailed", Message: "y" + long}, Desired: v2},
		"waiting":     {Waiting: &Problem{Reason: "WaitingForControlPlane", Message: "waiting", Since: time.Now()}, Desired: v2},
	}
	for name, in := range inputs {
		t.Run(name, func(t *testing.T) {
			in.Subject, in.Grace = subject, time.Hour
			in.Now = time.Now()
			var conds []metav1.Condition
			if !Apply(&conds, 3, Compute(in)) {
				t.Fatalf("first Apply reported no change")
			}
			for _, cond := range conds {
				if !utf8.ValidString(cond.Message) || len(cond.Message) > 2048 {
					t.Errorf("%s message is not valid UTF-8 of at most 2048 bytes (%d bytes)", cond.Type, len(cond.Message))
				}
			}
			// Through the API server and back.
			b, err := json.Marshal(conds)
			if err != nil {
				t.Fatal(err)
			}
			var stored []metav1.Condition
			if err := json.Unmarshal(b, &stored); err != nil {
				t.Fatal(err)
			}
			before := append([]metav1.Condition(nil), stored...)
			in.Previous = stored
			in.Now = in.Now.Add(time.Second)
			if Apply(&stored, 3, Compute(in)) {
				t.Errorf("second Apply of an unchanged situation reported a change:\nbefore %+v\nafter  %+v", before, stored)
			}
			if diff := cmp.Diff(before, stored); diff != "" {
				t.Errorf("second Apply changed the conditions (-before +after):\n%s", diff)
			}
		})
	}
}

func TestSetCondition(t *testing.T) {
	old := metav1.Time{Time: t0.Add(-time.Hour)}
	existing := []metav1.Condition{
		{Type: "StackValid", Status: metav1.ConditionTrue, Reason: "AsExpected", Message: "valid", ObservedGeneration: 2, LastTransitionTime: old},
		{Type: "Progressing", Status: metav1.ConditionTrue, Reason: "Reconciling", Message: "m", ObservedGeneration: 2, LastTransitionTime: old},
	}
	tests := []struct {
		name        string
		set         metav1.Condition
		wantChanged bool
		wantLTTKept bool
	}{
		{name: "identical", set: metav1.Condition{Type: "Progressing", Status: metav1.ConditionTrue, Reason: "Reconciling", Message: "m", ObservedGeneration: 2}, wantChanged: false, wantLTTKept: true},
		{name: "identical but another transition time given", set: metav1.Condition{Type: "Progressing", Status: metav1.ConditionTrue, Reason: "Reconciling", Message: "m", ObservedGeneration: 2, LastTransitionTime: metav1.NewTime(t0)}, wantChanged: false, wantLTTKept: true},
		{name: "reason changed, status same", set: metav1.Condition{Type: "Progressing", Status: metav1.ConditionTrue, Reason: "Upgrading", Message: "m", ObservedGeneration: 2}, wantChanged: true, wantLTTKept: true},
		{name: "message changed, status same", set: metav1.Condition{Type: "Progressing", Status: metav1.ConditionTrue, Reason: "Reconciling", Message: "m2", ObservedGeneration: 2}, wantChanged: true, wantLTTKept: true},
		{name: "generation changed", set: metav1.Condition{Type: "Progressing", Status: metav1.ConditionTrue, Reason: "Reconciling", Message: "m", ObservedGeneration: 3}, wantChanged: true, wantLTTKept: true},
		{name: "status changed", set: metav1.Condition{Type: "Progressing", Status: metav1.ConditionFalse, Reason: "AsExpected", Message: "m", ObservedGeneration: 2, LastTransitionTime: metav1.NewTime(t0)}, wantChanged: true, wantLTTKept: false},
		{name: "new condition", set: metav1.Condition{Type: "Degraded", Status: metav1.ConditionFalse, Reason: "AsExpected", Message: "m", ObservedGeneration: 2, LastTransitionTime: metav1.NewTime(t0)}, wantChanged: true, wantLTTKept: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conds := append([]metav1.Condition(nil), existing...)
			if got := SetCondition(&conds, tt.set); got != tt.wantChanged {
				t.Errorf("SetCondition() = %v, want %v", got, tt.wantChanged)
			}
			var got *metav1.Condition
			for i := range conds {
				if conds[i].Type == tt.set.Type {
					got = &conds[i]
				}
			}
			if got == nil {
				t.Fatalf("condition %s not set", tt.set.Type)
			}
			if got.Status != tt.set.Status || got.Reason != tt.set.Reason || got.Message != tt.set.Message || got.ObservedGeneration != tt.set.ObservedGeneration {
				t.Errorf("condition = %+v, want the values of %+v", *got, tt.set)
			}
			if kept := got.LastTransitionTime.Equal(&old); kept != tt.wantLTTKept {
				t.Errorf("lastTransitionTime = %v, kept = %v, want kept = %v", got.LastTransitionTime, kept, tt.wantLTTKept)
			}
			if !tt.wantLTTKept && !got.LastTransitionTime.Time.Equal(t0) {
				t.Errorf("lastTransitionTime = %v, want the given %v", got.LastTransitionTime, t0)
			}
			if conds[0] != existing[0] {
				t.Errorf("another condition was changed: %+v", conds[0])
			}
		})
	}
}

func TestApply(t *testing.T) {
	res := Compute(Input{Subject: subject, Desired: v2, Objects: []ObjectState{healthyHR("c1-cni", "cni")}, Now: t0, Grace: grace})
	var conds []metav1.Condition
	if !Apply(&conds, 7, res) {
		t.Fatal("Apply on empty conditions reported no change")
	}
	if len(conds) != 6 {
		t.Fatalf("Apply set %d conditions, want 6 (Available, Progressing, Degraded, Ready, Stalled, Reconciling)", len(conds))
	}
	for _, cond := range conds {
		if cond.ObservedGeneration != 7 {
			t.Errorf("%s.observedGeneration = %d, want 7", cond.Type, cond.ObservedGeneration)
		}
		if cond.LastTransitionTime.IsZero() {
			t.Errorf("%s.lastTransitionTime not set", cond.Type)
		}
	}
	snapshot := append([]metav1.Condition(nil), conds...)
	if Apply(&conds, 7, res) {
		t.Error("Apply of the same result reported a change")
	}
	if diff := cmp.Diff(snapshot, conds); diff != "" {
		t.Errorf("Apply of the same result changed conditions:\n%s", diff)
	}
	if !Apply(&conds, 8, res) {
		t.Error("Apply with a new generation reported no change")
	}
	for i, cond := range conds {
		if !cond.LastTransitionTime.Equal(&snapshot[i].LastTransitionTime) {
			t.Errorf("%s.lastTransitionTime changed on a generation bump", cond.Type)
		}
	}
}

func TestTruncate(t *testing.T) {
	tests := []struct {
		name string
		in   string
		n    int
		want string
	}{
		{name: "short", in: "abc", n: 10, want: "abc"},
		{name: "exact", in: "abcdefghij", n: 10, want: "abcdefghij"},
		{name: "ascii", in: "abcdefghijk", n: 10, want: "abcdefg..."},
		{name: "does not split a rune", in: "aäääää", n: 8, want: "aää..."},
		{name: "multi-byte at the cut", in: "€€€€", n: 8, want: "€..."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := truncate(tt.in, tt.n)
			if got != tt.want {
				t.Errorf("truncate(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
			}
			if len(got) > tt.n || !utf8.ValidString(got) {
				t.Errorf("truncate(%q, %d) = %q: longer than %d or invalid UTF-8", tt.in, tt.n, got, tt.n)
			}
		})
	}
}
