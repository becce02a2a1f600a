package stageplan

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// release builds a validated release for Kubernetes k8s with the components in addon order and
// the BeforeClusterUpgrade apply steps before (nil stages when withStages is false).
func release(name, k8s string, comps []string, withStages bool, before ...string) *csv1.ClusterStackRelease {
	r := &csv1.ClusterStackRelease{}
	r.Name = name
	r.Status.KubernetesVersion = k8s
	for _, c := range comps {
		r.Status.Components = append(r.Status.Components, csv1.ReleaseComponent{Name: c, Kind: csv1.ComponentKindHelm, Version: "1.0.0"})
	}
	if withStages {
		var steps []csv1.ReleaseStageStep
		for _, c := range before {
			steps = append(steps, csv1.ReleaseStageStep{Component: c, Action: csv1.StageActionApply})
		}
		r.Status.Stages = []csv1.ReleaseStage{
			{Name: csv1.StageAfterControlPlaneInitialized, Steps: []csv1.ReleaseStageStep{{Component: comps[0], Action: csv1.StageActionApply}}},
			{Name: csv1.StageBeforeClusterUpgrade, Steps: steps},
		}
	}
	return r
}

func names(cs []csv1.ReleaseComponent) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

func TestCompute(t *testing.T) {
	comps := []string{"cni", "ccm", "csi"}
	target := release("p-s-1-37-v1", "v1.37.2", comps, true, "ccm", "cni")
	tests := []struct {
		name  string
		in    Input
		apply []string
		hold  map[string]string
		wait  []string
		gated bool
		// stages: names and components of the stages to report.
		stages  []Stage
		message string
	}{{
		name:  "no stages in the release: everything moves at once, nothing reported",
		in:    Input{Cluster: "c1", Target: release("p-s-1-37-v1", "v1.37.2", comps, false), ControlPlaneVersion: "v1.36.3", LastApplied: "p-s-1-36-v2", LastAppliedKubernetesVersion: "v1.36.3", Existing: map[string]string{"cni": "p-s-1-36-v2"}},
		apply: comps,
	}, {
		name:   "a new Cluster: everything installed, reported as AfterControlPlaneInitialized",
		in:     Input{Cluster: "c1", Target: target, ControlPlaneVersion: "v1.37.2"},
		apply:  comps,
		stages: []Stage{{csv1.StageAfterControlPlaneInitialized, comps}},
	}, {
		name:  "a move that keeps the Kubernetes version: everything moves, no stage",
		in:    Input{Cluster: "c1", Target: target, ControlPlaneVersion: "1.37.2", LastApplied: "p-s-1-37-v0", LastAppliedKubernetesVersion: "v1.37.2", Existing: map[string]string{"cni": "p-s-1-37-v0", "ccm": "p-s-1-37-v0"}},
		apply: comps,
	}, {
		name: "an upgrade while the control plane runs the old version: before-upgrade components move, the others stay or wait",
		in: Input{Cluster: "c1", Target: target, ControlPlaneVersion: "v1.36.3", LastApplied: "p-s-1-36-v2", LastAppliedKubernetesVersion: "v1.36.3",
			Existing: map[string]string{"cni": "p-s-1-36-v2", "ccm": "p-s-1-36-v2", "old": "p-s-1-36-v2"}},
		apply:   []string{"cni", "ccm"},
		hold:    map[string]string{"old": "p-s-1-36-v2"},
		wait:    []string{"csi"},
		gated:   true,
		stages:  []Stage{{csv1.StageBeforeClusterUpgrade, []string{"cni", "ccm"}}, {csv1.StageAfterClusterUpgrade, []string{"csi"}}},
		message: "waiting for the control plane of Cluster c1 to run v1.37.2 (it runs v1.36.3): old stays at p-s-1-36-v2, csi is installed then",
	}, {
		name: "an upgrade: an after-upgrade component with an object at the old release is held there",
		in: Input{Cluster: "c1", Target: release("p-s-1-37-v1", "v1.37.2", comps, true, "cni"), ControlPlaneVersion: "v1.36.3", LastApplied: "p-s-1-36-v2", LastAppliedKubernetesVersion: "v1.36.3",
			Existing: map[string]string{"cni": "p-s-1-36-v2", "ccm": "p-s-1-36-v2", "csi": "p-s-1-37-v1"}},
		apply:   []string{"cni", "csi"},
		hold:    map[string]string{"ccm": "p-s-1-36-v2"},
		gated:   true,
		stages:  []Stage{{csv1.StageBeforeClusterUpgrade, []string{"cni"}}, {csv1.StageAfterClusterUpgrade, []string{"ccm", "csi"}}},
		message: "waiting for the control plane of Cluster c1 to run v1.37.2 (it runs v1.36.3): ccm stays at p-s-1-36-v2",
	}, {
		name: "the control plane reached the version: everything moves, the stages are reported until applied",
		in: Input{Cluster: "c1", Target: target, ControlPlaneVersion: "v1.37.2", LastApplied: "p-s-1-36-v2", LastAppliedKubernetesVersion: "v1.36.3",
			Existing: map[string]string{"cni": "p-s-1-37-v1", "ccm": "p-s-1-37-v1", "csi": "p-s-1-36-v2"}},
		apply:  comps,
		stages: []Stage{{csv1.StageBeforeClusterUpgrade, []string{"cni", "ccm"}}, {csv1.StageAfterClusterUpgrade, []string{"csi"}}},
	}, {
		name:  "the desired release is applied: nothing to report",
		in:    Input{Cluster: "c1", Target: target, ControlPlaneVersion: "v1.37.2", LastApplied: "p-s-1-37-v1", LastAppliedKubernetesVersion: "v1.37.2", Existing: map[string]string{"cni": "p-s-1-37-v1"}},
		apply: comps,
	}, {
		name:  "the control plane version is unknown: no upgrade assumed",
		in:    Input{Cluster: "c1", Target: target, LastApplied: "p-s-1-37-v0", LastAppliedKubernetesVersion: "v1.37.2", Existing: map[string]string{"cni": "p-s-1-37-v0"}},
		apply: comps,
	}, {
		name: "an upgrade without before-upgrade components: nothing moves until the control plane runs the version",
		in: Input{Cluster: "c1", Target: release("p-s-1-37-v1", "v1.37.2", comps, true), ControlPlaneVersion: "v1.36.3", LastApplied: "p-s-1-36-v2", LastAppliedKubernetesVersion: "v1.36.3",
			Existing: map[string]string{"cni": "p-s-1-36-v2", "ccm": "p-s-1-36-v2", "csi": "p-s-1-36-v2"}},
		hold:    map[string]string{"cni": "p-s-1-36-v2", "ccm": "p-s-1-36-v2", "csi": "p-s-1-36-v2"},
		gated:   true,
		stages:  []Stage{{csv1.StageBeforeClusterUpgrade, nil}, {csv1.StageAfterClusterUpgrade, comps}},
		message: "waiting for the control plane of Cluster c1 to run v1.37.2 (it runs v1.36.3): ccm stays at p-s-1-36-v2, cni stays at p-s-1-36-v2, csi stays at p-s-1-36-v2",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Compute(tt.in)
			if diff := cmp.Diff(tt.apply, names(p.Apply)); diff != "" {
				t.Errorf("apply (-want +got):\n%s", diff)
			}
			if len(tt.hold) == 0 && len(p.Hold) == 0 {
				p.Hold = nil
			}
			if diff := cmp.Diff(tt.hold, p.Hold); diff != "" {
				t.Errorf("hold (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wait, p.Wait); diff != "" {
				t.Errorf("wait (-want +got):\n%s", diff)
			}
			if p.Gated != tt.gated {
				t.Errorf("gated = %v, want %v", p.Gated, tt.gated)
			}
			if diff := cmp.Diff(tt.stages, p.Stages); diff != "" {
				t.Errorf("stages (-want +got):\n%s", diff)
			}
			if want := NormalizeVersion(tt.in.ControlPlaneVersion); p.ControlPlaneVersion != want || p.KubernetesVersion != "v1.37.2" {
				t.Errorf("versions = %q, %q; want %q, v1.37.2", p.KubernetesVersion, p.ControlPlaneVersion, want)
			}
			if p.WaitMessage != tt.message {
				t.Errorf("message = %q, want %q", p.WaitMessage, tt.message)
			}
		})
	}
}

func TestStatus(t *testing.T) {
	then := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	now := metav1.NewTime(then.Add(time.Hour))
	gated := Plan{
		Target: "r2", Gated: true,
		Stages:      []Stage{{csv1.StageBeforeClusterUpgrade, []string{"cni", "ccm"}}, {csv1.StageAfterClusterUpgrade, []string{"csi"}}},
		WaitMessage: "waiting for the control plane of Cluster c1 to run v1.37.2 (it runs v1.36.3): csi stays at r1",
	}
	waitingAfter := csv1.AddonStageStatus{Name: csv1.StageAfterClusterUpgrade, Release: "r2", Components: []string{"csi"},
		Message: gated.WaitMessage, LastTransitionTime: now}
	tests := []struct {
		name     string
		plan     Plan
		states   map[string]ComponentState
		previous []csv1.AddonStageStatus
		want     []csv1.AddonStageStatus
	}{{
		name: "no stages: none reported",
		plan: Plan{Target: "r2"},
	}, {
		name:   "gated, before-upgrade components applied, one not Ready",
		plan:   gated,
		states: map[string]ComponentState{"cni": {Applied: true, Ready: true}, "ccm": {Applied: true}},
		want: []csv1.AddonStageStatus{
			{Name: csv1.StageBeforeClusterUpgrade, Release: "r2", Components: []string{"cni", "ccm"}, Applied: true,
				Message: "waiting for the BeforeClusterUpgrade components at release r2: ccm not Ready yet", LastTransitionTime: now},
			waitingAfter,
		},
	}, {
		name:   "gated, one before-upgrade component not applied, one not Ready",
		plan:   gated,
		states: map[string]ComponentState{"ccm": {Applied: true}},
		want: []csv1.AddonStageStatus{
			{Name: csv1.StageBeforeClusterUpgrade, Release: "r2", Components: []string{"cni", "ccm"},
				Message: "waiting for the BeforeClusterUpgrade components at release r2: cni not applied yet; ccm not Ready yet", LastTransitionTime: now},
			waitingAfter,
		},
	}, {
		name:   "gated, before-upgrade components Ready; the transition time of an unchanged stage is kept",
		plan:   gated,
		states: map[string]ComponentState{"cni": {Applied: true, Ready: true}, "ccm": {Applied: true, Ready: true}, "csi": {Applied: true, Ready: true}},
		previous: []csv1.AddonStageStatus{
			{Name: csv1.StageBeforeClusterUpgrade, Release: "r2", Applied: true, LastTransitionTime: then},
			{Name: csv1.StageAfterClusterUpgrade, Release: "r2", LastTransitionTime: then},
		},
		want: []csv1.AddonStageStatus{
			{Name: csv1.StageBeforeClusterUpgrade, Release: "r2", Components: []string{"cni", "ccm"}, Applied: true, Ready: true,
				Message: "Ready at release r2: cni and ccm", LastTransitionTime: now},
			{Name: csv1.StageAfterClusterUpgrade, Release: "r2", Components: []string{"csi"}, Message: gated.WaitMessage, LastTransitionTime: then},
		},
	}, {
		name: "gated and skipped by annotation while not Ready",
		plan: func() Plan { p := gated; p.Skip = true; return p }(),
		want: []csv1.AddonStageStatus{
			{Name: csv1.StageBeforeClusterUpgrade, Release: "r2", Components: []string{"cni", "ccm"}, Skipped: true,
				Message:            "waiting for the BeforeClusterUpgrade components at release r2: cni and ccm not applied yet; the upgrade is let through: the Cluster carries clusterstack.io/skip-before-upgrade-gate",
				LastTransitionTime: now},
			waitingAfter,
		},
	}, {
		name:   "the skip annotation on a Ready stage skips nothing",
		plan:   func() Plan { p := gated; p.Skip = true; return p }(),
		states: map[string]ComponentState{"cni": {Applied: true, Ready: true}, "ccm": {Applied: true, Ready: true}},
		want: []csv1.AddonStageStatus{
			{Name: csv1.StageBeforeClusterUpgrade, Release: "r2", Components: []string{"cni", "ccm"}, Applied: true, Ready: true,
				Message: "Ready at release r2: cni and ccm", LastTransitionTime: now},
			waitingAfter,
		},
	}, {
		name:   "after the control plane upgrade: the after-upgrade stage is applied, a previous entry of another release does not keep its time",
		plan:   Plan{Target: "r2", Stages: []Stage{{csv1.StageBeforeClusterUpgrade, nil}, {csv1.StageAfterClusterUpgrade, []string{"csi"}}}},
		states: map[string]ComponentState{"csi": {Applied: true}},
		previous: []csv1.AddonStageStatus{
			{Name: csv1.StageAfterClusterUpgrade, Release: "r1", Applied: true, LastTransitionTime: then},
		},
		want: []csv1.AddonStageStatus{
			{Name: csv1.StageBeforeClusterUpgrade, Release: "r2", Applied: true, Ready: true, Message: "release r2 lists no components for BeforeClusterUpgrade", LastTransitionTime: now},
			{Name: csv1.StageAfterClusterUpgrade, Release: "r2", Components: []string{"csi"}, Applied: true,
				Message: "waiting for the AfterClusterUpgrade components at release r2: csi not Ready yet", LastTransitionTime: now},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Status(tt.plan, tt.states, tt.previous, now)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("stages (-want +got):\n%s", diff)
			}
		})
	}
}
