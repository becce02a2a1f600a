package plugin

import (
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// whyInput is the chain of a healthy Cluster "one" at aws-base-1-36-v1, changed by mutate.
func whyInput(mutate func(*WhyInput)) WhyInput {
	c := cluster("one", "aws-base-1-36-v1")
	cs := clusterStack("aws-base-1-36")
	rel := release("aws-base-1-36-v1", "v1", ready())
	a := addon("one", "aws-base-1-36-v1")
	hrs, kss := healthyFlux()
	in := WhyInput{Namespace: ns, Name: "one", Cluster: &c, Stack: &cs, Release: &rel, Addon: &a, Flux: NewFluxIndex(hrs, kss)}
	if mutate != nil {
		mutate(&in)
	}
	return in
}

// addonFalse sets the ClusterAddon's condition t False.
func addonFalse(t, reason, msg string) func(*WhyInput) {
	return func(in *WhyInput) {
		in.Addon.Status.Conditions = with(in.Addon.Status.Conditions, cond(t, metav1.ConditionFalse, reason, msg))
	}
}

// failingCNI makes cni's HelmRelease fail (or, with retrying, be retried by Flux after a
// failure the operator recorded).
func failingCNI(retrying bool) func(*WhyInput) {
	return func(in *WhyInput) {
		in.Addon.Status.Conditions = degraded("cluster team-a/one: component cni: HelmRelease/one-cni: " + installFail)
		in.Addon.Status.Components[0].Ready = false
		in.Addon.Status.Progress = "1/2"
		in.Addon.Status.Unhealthy = []csv1.UnhealthyObject{{Object: "HelmRelease/one-cni", Component: "cni", LastFailure: installFail}}
		conds := fluxFailed
		if retrying {
			conds = fluxRetry
		}
		hr := helmRelease("one-cni", conds, func(hr *helmv2.HelmRelease) {
			hr.Status.Failures, hr.Status.InstallFailures, hr.Status.LastAttemptedReleaseAction = 3, 3, helmv2.ReleaseActionInstall
			hr.Status.History = helmv2.Snapshots{{Version: 1, Status: "failed", ChartName: "cni", ChartVersion: "1.0.1-broken"}}
		})
		_, kss := healthyFlux()
		in.Flux = NewFluxIndex([]helmv2.HelmRelease{hr}, kss)
	}
}

func TestWhy(t *testing.T) {
	tests := []struct {
		name          string
		in            WhyInput
		blocker       string
		summary       []string
		component     string
		fluxObject    string
		evidenceState []string
	}{
		{
			name: "no Cluster", in: whyInput(func(in *WhyInput) { in.Cluster = nil }),
			blocker: BlockerClusterNotFound, summary: []string{"Cluster team-a/one does not exist"},
		},
		{
			name:    "a Cluster being deleted",
			in:      whyInput(func(in *WhyInput) { in.Cluster.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)} }),
			blocker: BlockerClusterDeleting, summary: []string{"being deleted"}, evidenceState: []string{"Deleting"},
		},
		{
			name: "a paused Cluster", in: whyInput(func(in *WhyInput) { in.Cluster.Spec.Paused = ptr.To(true) }),
			blocker: BlockerClusterPaused, summary: []string{"is paused", clusterv1.PausedAnnotation}, evidenceState: []string{StatePaused},
		},
		{
			name: "a Cluster without ClusterClass", in: whyInput(func(in *WhyInput) { in.Cluster.Spec.Topology.ClassRef.Name = "" }),
			blocker: BlockerNoClusterClass, summary: []string{"uses no ClusterClass"},
		},
		{
			name:    "a ClusterClass in another namespace is not followed",
			in:      whyInput(func(in *WhyInput) { in.Cluster.Spec.Topology.ClassRef.Namespace = "platform" }),
			blocker: BlockerNoClusterClass,
		},
		{
			name: "a ClusterClass that is no release", in: whyInput(func(in *WhyInput) { in.Cluster.Spec.Topology.ClassRef.Name = "my-class" }),
			blocker: BlockerNotAStackRelease, summary: []string{"my-class", "not named like a cluster stack release"},
		},
		{
			name: "no ClusterStack for the release", in: whyInput(func(in *WhyInput) { in.Stack, in.Release, in.Addon = nil, nil, nil }),
			blocker: BlockerStackNotFound, summary: []string{"No ClusterStack in namespace team-a has release aws-base-1-36-v1", "aws-base-1-36"},
		},
		{
			name: "an unpublished release: the stack's missingReleases entry",
			in: whyInput(func(in *WhyInput) {
				in.Release = nil
				in.Stack.Status.MissingReleases = []csv1.MissingRelease{{Name: "aws-base-1-36-v1", Reason: csv1.ReasonTagNotFound, Message: "tag aws-base-1-36-v1 is not published in https://git.example/stacks"}}
			}),
			blocker: BlockerReleaseNotFound, summary: []string{"cannot be created (TagNotFound)", "is not published"},
		},
		{
			name: "a release being created", in: whyInput(func(in *WhyInput) { in.Release = nil }),
			blocker: BlockerReleaseNotFound, summary: []string{"does not exist yet"}, evidenceState: []string{StateNotFound},
		},
		{
			name: "a release that is not Available: the failed fact condition first",
			in: whyInput(func(in *WhyInput) {
				in.Release.Status.Conditions = with(degraded("release aws-base-1-36-v1: invalid"),
					cond(csv1.StackValidCondition, "False", csv1.ReasonInvalidStack, "tag aws-base-1-36-v1: stack.yaml: provider missing"))
			}),
			blocker: BlockerReleaseNotAvailable, summary: []string{"Release aws-base-1-36-v1 is not Available", "StackValid=False (InvalidStack)", "provider missing"},
			evidenceState: []string{StateDegraded},
		},
		{
			name: "a release still progressing: its Progressing message",
			in: whyInput(func(in *WhyInput) {
				in.Release.Status.Conditions = progressing("waiting for the stack at tag aws-base-1-36-v1 to be fetched")
			}),
			blocker: BlockerReleaseNotAvailable, summary: []string{"to be fetched"},
		},
		{
			name: "no ClusterAddon", in: whyInput(func(in *WhyInput) { in.Addon = nil }),
			blocker: BlockerClusterAddonNotFound, summary: []string{"has no ClusterAddon", "is the operator running"},
		},
		{
			name:    "the ClusterAddon waits for the release",
			in:      whyInput(addonFalse(csv1.ReleaseReadyCondition, csv1.ReasonWaitingForRelease, "waiting for GitRepository aws-base-1-36-v1 to serve revision x")),
			blocker: BlockerWaitingForRelease, summary: []string{"waiting for GitRepository"}, evidenceState: []string{"ReleaseReady=False"},
		},
		{
			name:    "an ownership conflict",
			in:      whyInput(addonFalse(csv1.ObjectsOwnedCondition, csv1.ReasonOwnershipConflict, "HelmRelease one-cni is controlled by someone else")),
			blocker: BlockerOwnershipConflict, summary: []string{"controlled by someone else"},
		},
		{
			name:    "the control plane is not initialized",
			in:      whyInput(addonFalse(csv1.WorkloadClusterReadyCondition, csv1.ReasonWaitingForControlPlane, "waiting for the control plane of Cluster one to be initialized")),
			blocker: BlockerControlPlaneNotInitialized, summary: []string{"control plane of Cluster team-a/one is not initialized"},
		},
		{
			name:    "the kubeconfig Secret is missing",
			in:      whyInput(addonFalse(csv1.WorkloadClusterReadyCondition, csv1.ReasonWaitingForKubeconfig, "waiting for Secret one-kubeconfig")),
			blocker: BlockerKubeconfigMissing, summary: []string{"kubeconfig Secret", "one-kubeconfig"},
		},
		{
			name:    "the values do not render",
			in:      whyInput(addonFalse(csv1.ValuesRenderedCondition, csv1.ReasonRenderFailed, "release aws-base-1-36-v1: component cni: cluster-addon/cni/overwrite.yaml: missing value")),
			blocker: BlockerValuesNotRendered, summary: []string{"could not be rendered", "cluster-addon/cni/overwrite.yaml"},
		},
		{
			name:    "a failing component: its Flux object and what Flux said",
			in:      whyInput(failingCNI(false)),
			blocker: BlockerComponentFailing, component: "cni", fluxObject: "HelmRelease/one-cni",
			summary:       []string{"Component cni is failing: HelmRelease team-a/one-cni: " + installFail},
			evidenceState: []string{StateFailed, "failures", "history"},
		},
		{
			name:    "a component Flux retries: the failure the operator kept",
			in:      whyInput(failingCNI(true)),
			blocker: BlockerComponentFailing, component: "cni", fluxObject: "HelmRelease/one-cni",
			summary:       []string{"HelmRelease team-a/one-cni: " + installFail},
			evidenceState: []string{StateProgressing, "lastFailure"},
		},
		{
			name: "a stage waits for the control plane upgrade",
			in: whyInput(func(in *WhyInput) {
				in.Addon.Status.Conditions = progressing("upgrading")
				in.Addon.Status.Stages = []csv1.AddonStageStatus{{Name: csv1.StageAfterClusterUpgrade, Release: "aws-base-1-36-v1", WaitingFor: csv1.StageWaitControlPlane,
					Message: "waiting for the control plane of Cluster one to run v1.37.2 (it runs v1.36.3): csi stays at aws-base-1-36-v0"}}
			}),
			blocker: BlockerStageHeld, summary: []string{"Stage AfterClusterUpgrade waits for the Cluster's upgrade (ControlPlane)", "csi stays"},
		},
		{
			name: "a component not Ready yet, without failure",
			in: whyInput(func(in *WhyInput) {
				in.Addon.Status.Conditions = progressing("installing")
				in.Addon.Status.Components[1].Ready = false
				hrs, _ := healthyFlux()
				in.Flux = NewFluxIndex(hrs, []kustomizev1.Kustomization{kustomization("one-cluster-info", []metav1.Condition{cond("Ready", "Unknown", "Progressing", "Reconciliation in progress")})})
			}),
			blocker: BlockerComponentProgressing, component: "cluster-info", fluxObject: "Kustomization/one-cluster-info",
			summary: []string{"Component cluster-info is not Ready yet (Kustomization team-a/one-cluster-info, Progressing): Reconciliation in progress"},
		},
		{
			name: "a component without Flux object yet",
			in: whyInput(func(in *WhyInput) {
				in.Addon.Status.Conditions = progressing("installing")
				in.Addon.Status.Components[1].Ready, in.Addon.Status.Components[1].FluxObject = false, ""
			}),
			blocker: BlockerComponentProgressing, component: "cluster-info", summary: []string{"no Flux object yet"},
		},
		{
			name: "not Ready for no reason the components show",
			in: whyInput(func(in *WhyInput) {
				in.Addon.Status.Conditions = with(ready(), cond(csv1.ReadyCondition, "False", "Unknown", "not computed"))
			}),
			blocker: BlockerAddonNotReady,
		},
		{
			name: "healthy: nothing blocks", in: whyInput(nil),
			blocker: BlockerNone, summary: []string{"Nothing blocks Cluster team-a/one", "Ready at release aws-base-1-36-v1 (2/2 components)"},
			evidenceState: []string{"Exists", StateReady},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Why(tt.in)
			if v.Blocker != tt.blocker {
				t.Fatalf("blocker %s, want %s; summary: %s", v.Blocker, tt.blocker, v.Summary)
			}
			if v.Blocked != (tt.blocker != BlockerNone) {
				t.Errorf("blocked = %t for blocker %s", v.Blocked, v.Blocker)
			}
			for _, s := range tt.summary {
				if !strings.Contains(v.Summary, s) {
					t.Errorf("summary %q lacks %q", v.Summary, s)
				}
			}
			if v.Component != tt.component {
				t.Errorf("component %q, want %q", v.Component, tt.component)
			}
			gotRef := ""
			if v.FluxObject != nil && v.FluxObject.Name != "" {
				gotRef = v.FluxObject.Ref()
			}
			if gotRef != tt.fluxObject {
				t.Errorf("Flux object %q, want %q", gotRef, tt.fluxObject)
			}
			states := map[string]bool{}
			for _, e := range v.Evidence {
				states[e.State] = true
			}
			for _, s := range tt.evidenceState {
				if !states[s] {
					t.Errorf("no evidence in state %q: %+v", s, v.Evidence)
				}
			}
		})
	}
}

func TestWhyFailingEvidence(t *testing.T) {
	v := Why(whyInput(failingCNI(false)))
	want := []Evidence{
		{Object: "Cluster team-a/one", State: "Exists", Detail: "ClusterClass aws-base-1-36-v1, Kubernetes v1.36.3"},
		{Object: "ClusterStack team-a/aws-base-1-36", State: StateReady},
		{Object: "ClusterStackRelease team-a/aws-base-1-36-v1", State: StateReady, Detail: "validated with Kubernetes v1.36.3, revision aws-base-1-36-v1@sha1:abc"},
		{Object: "ClusterAddon team-a/one", State: StateDegraded, Detail: "1/2 components Ready (desired aws-base-1-36-v1); cluster team-a/one: component cni: HelmRelease/one-cni: " + installFail},
		{Object: "HelmRelease team-a/one-cni", State: StateFailed, Detail: "InstallFailed: " + installFail},
		{Object: "HelmRelease team-a/one-cni", State: "failures", Detail: "3 (install 3, upgrade 0), last action: install"},
		{Object: "HelmRelease team-a/one-cni", State: "history", Detail: "v1 failed cni@1.0.1-broken"},
	}
	if diff := cmp.Diff(want, v.Evidence); diff != "" {
		t.Errorf("evidence (-want +got):\n%s", diff)
	}
	if v.LastFailure != installFail {
		t.Errorf("lastFailure %q", v.LastFailure)
	}

	var b strings.Builder
	if err := WriteVerdict(&b, v, Style{}); err != nil {
		t.Fatal(err)
	}
	wantText := "BLOCKED ComponentFailing  Component cni is failing: HelmRelease team-a/one-cni: " + installFail + "\n\nEvidence:\n" +
		"  Cluster team-a/one                           Exists    ClusterClass aws-base-1-36-v1, Kubernetes v1.36.3\n"
	if !strings.HasPrefix(b.String(), wantText) {
		t.Errorf("text:\n%s\nwant prefix:\n%s", b.String(), wantText)
	}
	if strings.Contains(b.String(), "\x1b[") {
		t.Errorf("plain text has ANSI escapes:\n%q", b.String())
	}

	b.Reset()
	if err := WriteVerdict(&b, Why(whyInput(nil)), Style{Color: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), ansiGreen+"OK"+ansiReset+"  Nothing blocks") {
		t.Errorf("coloured verdict: %q", b.String())
	}
}
