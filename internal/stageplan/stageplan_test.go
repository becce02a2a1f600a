package stageplan

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// release builds a release validated with Kubernetes v1.37.2, with the components in addon
// order and the BeforeClusterUpgrade apply steps before (nil stages when withStages is false).
func release(name string, comps []string, withStages bool, before ...string) *csv1.ClusterStackRelease {
	r := &csv1.ClusterStackRelease{}
	r.Name = name
	r.Status.KubernetesVersion = "v1.37.2"
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

// withDeletes adds delete steps for comps to the BeforeClusterUpgrade stage of r.
func withDeletes(r *csv1.ClusterStackRelease, comps ...string) *csv1.ClusterStackRelease {
	for i := range r.Status.Stages {
		if st := &r.Status.Stages[i]; st.Name == csv1.StageBeforeClusterUpgrade {
			for _, c := range comps {
				st.Steps = append(st.Steps, csv1.ReleaseStageStep{Component: c, Action: csv1.StageActionDelete})
			}
		}
	}
	return r
}

func md(name, version string, rolledOut bool) Worker {
	return Worker{Kind: KindMachineDeployment, Name: name, Version: version, RolledOut: rolledOut}
}

func mp(name, version string, rolledOut bool) Worker {
	return Worker{Kind: KindMachinePool, Name: name, Version: version, RolledOut: rolledOut}
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
	target := release("p-s-1-37-v1", comps, true, "ccm", "cni")
	tests := []struct {
		name  string
		in    Input
		apply []string
		hold  map[string]string
		wait  []string
		// remove: components whose Flux objects are deleted now.
		remove   []string
		gated    bool
		cpBehind bool
		// workers: names of the workers the plan is gated on.
		workers []string
		// stages: names and components of the stages to report.
		stages  []Stage
		message string
	}{{
		name:  "no stages in the release: everything moves at once, nothing reported",
		in:    Input{Cluster: "c1", Target: release("p-s-1-37-v1", comps, false), ControlPlaneVersion: "v1.36.3", LastApplied: "p-s-1-36-v2", LastAppliedKubernetesVersion: "v1.36.3", Existing: map[string]string{"cni": "p-s-1-36-v2"}},
		apply: comps,
	}, {
		name:   "a new Cluster: everything installed, reported as AfterControlPlaneInitialized",
		in:     Input{Cluster: "c1", Target: target, ControlPlaneVersion: "v1.37.2"},
		apply:  comps,
		stages: []Stage{{Name: csv1.StageAfterControlPlaneInitialized, Components: comps}},
	}, {
		name:  "a move that keeps the Kubernetes version: everything moves, no stage",
		in:    Input{Cluster: "c1", Target: target, ControlPlaneVersion: "1.37.2", LastApplied: "p-s-1-37-v0", LastAppliedKubernetesVersion: "v1.37.2", Existing: map[string]string{"cni": "p-s-1-37-v0", "ccm": "p-s-1-37-v0"}},
		apply: comps,
	}, {
		name: "the control plane reached the version, a MachineDeployment did not: the after-upgrade components wait for the workers",
		in: Input{Cluster: "c1", Target: target, ControlPlaneVersion: "v1.37.2", LastApplied: "p-s-1-36-v2", LastAppliedKubernetesVersion: "v1.36.3",
			Existing: map[string]string{"cni": "p-s-1-37-v1", "ccm": "p-s-1-37-v1", "csi": "p-s-1-36-v2"},
			Workers:  []Worker{md("md-0", "v1.36.3", true), md("md-1", "v1.37.2", true)}},
		apply:   []string{"cni", "ccm"},
		hold:    map[string]string{"csi": "p-s-1-36-v2"},
		gated:   true,
		workers: []string{"md-0"},
		stages:  []Stage{{Name: csv1.StageBeforeClusterUpgrade, Components: []string{"cni", "ccm"}}, {Name: csv1.StageAfterClusterUpgrade, Components: []string{"csi"}}},
		message: "waiting for the workers of Cluster c1 to run v1.37.2 (MachineDeployment md-0 runs v1.36.3): csi stays at p-s-1-36-v2",
	}, {
		name: "workers asked for the version but not rolled out, and a MachinePool behind: named by kind, then name",
		in: Input{Cluster: "c1", Target: target, ControlPlaneVersion: "v1.37.2", LastApplied: "p-s-1-36-v2", LastAppliedKubernetesVersion: "v1.36.3",
			Existing: map[string]string{"cni": "p-s-1-37-v1", "ccm": "p-s-1-37-v1"},
			Workers:  []Worker{mp("mp-0", "1.36.3", true), md("md-b", "v1.37.2", false), md("md-a", "v1.37.2", true), md("md-0", "", false)}},
		apply:   []string{"cni", "ccm"},
		wait:    []string{"csi"},
		gated:   true,
		workers: []string{"md-b", "mp-0"},
		stages:  []Stage{{Name: csv1.StageBeforeClusterUpgrade, Components: []string{"cni", "ccm"}}, {Name: csv1.StageAfterClusterUpgrade, Components: []string{"csi"}}},
		message: "waiting for the workers of Cluster c1 to run v1.37.2 (MachineDeployment md-b is rolling out v1.37.2, MachinePool mp-0 runs v1.36.3): csi is installed then",
	}, {
		name: "many workers behind: five named",
		in: Input{Cluster: "c1", Target: target, ControlPlaneVersion: "v1.37.2", LastApplied: "p-s-1-36-v2", LastAppliedKubernetesVersion: "v1.36.3",
			Existing: map[string]string{"cni": "p-s-1-37-v1", "ccm": "p-s-1-37-v1", "csi": "p-s-1-36-v2"},
			Workers: []Worker{md("md-6", "v1.36.3", true), md("md-5", "v1.36.3", true), md("md-4", "v1.36.3", true), md("md-3", "v1.36.3", true),
				md("md-2", "v1.36.3", true), md("md-1", "v1.36.3", true), md("md-0", "v1.36.3", true)}},
		apply:   []string{"cni", "ccm"},
		hold:    map[string]string{"csi": "p-s-1-36-v2"},
		gated:   true,
		workers: []string{"md-0", "md-1", "md-2", "md-3", "md-4", "md-5", "md-6"},
		stages:  []Stage{{Name: csv1.StageBeforeClusterUpgrade, Components: []string{"cni", "ccm"}}, {Name: csv1.StageAfterClusterUpgrade, Components: []string{"csi"}}},
		message: "waiting for the workers of Cluster c1 to run v1.37.2 (MachineDeployment md-0 runs v1.36.3, MachineDeployment md-1 runs v1.36.3, MachineDeployment md-2 runs v1.36.3, MachineDeployment md-3 runs v1.36.3, MachineDeployment md-4 runs v1.36.3, and 2 more): csi stays at p-s-1-36-v2",
	}, {
		name: "the control plane and the workers behind: the control plane is named",
		in: Input{Cluster: "c1", Target: target, ControlPlaneVersion: "v1.36.3", LastApplied: "p-s-1-36-v2", LastAppliedKubernetesVersion: "v1.36.3",
			Existing: map[string]string{"cni": "p-s-1-36-v2", "ccm": "p-s-1-36-v2", "csi": "p-s-1-36-v2"},
			Workers:  []Worker{md("md-0", "v1.36.3", true)}},
		apply:    []string{"cni", "ccm"},
		hold:     map[string]string{"csi": "p-s-1-36-v2"},
		gated:    true,
		cpBehind: true,
		stages:   []Stage{{Name: csv1.StageBeforeClusterUpgrade, Components: []string{"cni", "ccm"}}, {Name: csv1.StageAfterClusterUpgrade, Components: []string{"csi"}}},
		message:  "waiting for the control plane of Cluster c1 to run v1.37.2 (it runs v1.36.3): csi stays at p-s-1-36-v2",
	}, {
		name: "every component moved: a worker rolling out again holds nothing",
		in: Input{Cluster: "c1", Target: target, ControlPlaneVersion: "v1.37.2", LastApplied: "p-s-1-36-v2", LastAppliedKubernetesVersion: "v1.36.3",
			Existing: map[string]string{"cni": "p-s-1-37-v1", "ccm": "p-s-1-37-v1", "csi": "p-s-1-37-v1"},
			Workers:  []Worker{md("md-0", "v1.37.2", false)}},
		apply:  comps,
		stages: []Stage{{Name: csv1.StageBeforeClusterUpgrade, Components: []string{"cni", "ccm"}}, {Name: csv1.StageAfterClusterUpgrade, Components: []string{"csi"}}},
	}, {
		name:   "a new Cluster whose workers are not rolled out yet: everything installed",
		in:     Input{Cluster: "c1", Target: target, ControlPlaneVersion: "v1.37.2", Workers: []Worker{md("md-0", "v1.37.2", false)}},
		apply:  comps,
		stages: []Stage{{Name: csv1.StageAfterControlPlaneInitialized, Components: comps}},
	}, {
		name: "a move that keeps the Kubernetes version: workers rolling out hold nothing, delete steps do nothing",
		in: Input{Cluster: "c1", Target: withDeletes(release("p-s-1-37-v1", comps, true, "cni"), "ccm", "old"), ControlPlaneVersion: "v1.37.2",
			LastApplied: "p-s-1-37-v0", LastAppliedKubernetesVersion: "v1.37.2",
			Existing: map[string]string{"cni": "p-s-1-37-v0", "ccm": "p-s-1-37-v0", "old": "p-s-1-37-v0"},
			Workers:  []Worker{md("md-0", "v1.37.2", false)}},
		apply: comps,
	}, {
		name: "an upgrade with delete steps: the objects they name are removed before the control plane moves, a removed component of the release waits",
		in: Input{Cluster: "c1", Target: withDeletes(release("p-s-1-37-v1", comps, true, "cni"), "ccm", "old", "gone"), ControlPlaneVersion: "v1.36.3",
			LastApplied: "p-s-1-36-v2", LastAppliedKubernetesVersion: "v1.36.3",
			Existing: map[string]string{"cni": "p-s-1-36-v2", "ccm": "p-s-1-36-v2", "csi": "p-s-1-36-v2", "old": "p-s-1-36-v2", "other": "p-s-1-36-v2"}},
		apply:    []string{"cni"},
		hold:     map[string]string{"csi": "p-s-1-36-v2", "other": "p-s-1-36-v2"},
		wait:     []string{"ccm"},
		remove:   []string{"ccm", "old"},
		gated:    true,
		cpBehind: true,
		stages: []Stage{{Name: csv1.StageBeforeClusterUpgrade, Components: []string{"cni"}, Removes: []string{"ccm", "old", "gone"}},
			{Name: csv1.StageAfterClusterUpgrade, Components: []string{"ccm", "csi"}}},
		message: "waiting for the control plane of Cluster c1 to run v1.37.2 (it runs v1.36.3): csi stays at p-s-1-36-v2, other stays at p-s-1-36-v2, ccm is removed now and installed again then",
	}, {
		name: "an upgrade with delete steps, the objects gone: nothing to remove, the component of the release waits for the workers",
		in: Input{Cluster: "c1", Target: withDeletes(release("p-s-1-37-v1", comps, true, "cni"), "ccm", "old"), ControlPlaneVersion: "v1.37.2",
			LastApplied: "p-s-1-36-v2", LastAppliedKubernetesVersion: "v1.36.3",
			Existing: map[string]string{"cni": "p-s-1-37-v1", "csi": "p-s-1-36-v2"},
			Workers:  []Worker{md("md-0", "v1.36.3", true)}},
		apply:   []string{"cni"},
		hold:    map[string]string{"csi": "p-s-1-36-v2"},
		wait:    []string{"ccm"},
		gated:   true,
		workers: []string{"md-0"},
		stages: []Stage{{Name: csv1.StageBeforeClusterUpgrade, Components: []string{"cni"}, Removes: []string{"ccm", "old"}},
			{Name: csv1.StageAfterClusterUpgrade, Components: []string{"ccm", "csi"}}},
		message: "waiting for the workers of Cluster c1 to run v1.37.2 (MachineDeployment md-0 runs v1.36.3): csi stays at p-s-1-36-v2, ccm is installed then",
	}, {
		name: "the Cluster runs the version, a removed component is installed again",
		in: Input{Cluster: "c1", Target: withDeletes(release("p-s-1-37-v1", comps, true, "cni"), "ccm", "old"), ControlPlaneVersion: "v1.37.2",
			LastApplied: "p-s-1-36-v2", LastAppliedKubernetesVersion: "v1.36.3",
			Existing: map[string]string{"cni": "p-s-1-37-v1", "csi": "p-s-1-36-v2"},
			Workers:  []Worker{md("md-0", "v1.37.2", true)}},
		apply: comps,
		stages: []Stage{{Name: csv1.StageBeforeClusterUpgrade, Components: []string{"cni"}, Removes: []string{"ccm", "old"}},
			{Name: csv1.StageAfterClusterUpgrade, Components: []string{"ccm", "csi"}}},
	}, {
		name: "the control plane upgrade overtook a delete step (gate skipped): the old object is removed late, not upgraded in place",
		in: Input{Cluster: "c1", Target: withDeletes(release("p-s-1-37-v1", comps, true, "cni"), "ccm", "old"), ControlPlaneVersion: "v1.37.2",
			LastApplied: "p-s-1-36-v2", LastAppliedKubernetesVersion: "v1.36.3",
			Existing: map[string]string{"cni": "p-s-1-37-v1", "ccm": "p-s-1-36-v2", "csi": "p-s-1-37-v1", "old": "p-s-1-36-v2"}},
		apply:  []string{"cni", "csi"},
		remove: []string{"ccm", "old"},
		stages: []Stage{{Name: csv1.StageBeforeClusterUpgrade, Components: []string{"cni"}, Removes: []string{"ccm", "old"}},
			{Name: csv1.StageAfterClusterUpgrade, Components: []string{"ccm", "csi"}}},
	}, {
		name: "a removed component installed again at the release is kept, also while the control plane is behind",
		in: Input{Cluster: "c1", Target: withDeletes(release("p-s-1-37-v1", comps, true, "cni"), "ccm"), ControlPlaneVersion: "v1.36.3",
			LastApplied: "p-s-1-36-v2", LastAppliedKubernetesVersion: "v1.36.3",
			Existing: map[string]string{"cni": "p-s-1-37-v1", "ccm": "p-s-1-37-v1", "csi": "p-s-1-36-v2"}},
		apply:    []string{"cni", "ccm"},
		hold:     map[string]string{"csi": "p-s-1-36-v2"},
		gated:    true,
		cpBehind: true,
		stages: []Stage{{Name: csv1.StageBeforeClusterUpgrade, Components: []string{"cni"}, Removes: []string{"ccm"}},
			{Name: csv1.StageAfterClusterUpgrade, Components: []string{"ccm", "csi"}}},
		message: "waiting for the control plane of Cluster c1 to run v1.37.2 (it runs v1.36.3): csi stays at p-s-1-36-v2",
	}, {
		name: "workers behind while only an old component is removed: nothing else to hold",
		in: Input{Cluster: "c1", Target: withDeletes(release("p-s-1-37-v1", comps, true, "cni"), "old"), ControlPlaneVersion: "v1.37.2",
			LastApplied: "p-s-1-36-v2", LastAppliedKubernetesVersion: "v1.36.3",
			Existing: map[string]string{"cni": "p-s-1-37-v1", "ccm": "p-s-1-37-v1", "csi": "p-s-1-37-v1", "old": "p-s-1-36-v2"},
			Workers:  []Worker{md("md-0", "v1.36.3", true)}},
		apply:  comps,
		remove: []string{"old"},
		stages: []Stage{{Name: csv1.StageBeforeClusterUpgrade, Components: []string{"cni"}, Removes: []string{"old"}},
			{Name: csv1.StageAfterClusterUpgrade, Components: []string{"ccm", "csi"}}},
	}, {
		name: "an upgrade while the control plane runs the old version: before-upgrade components move, the others stay or wait",
		in: Input{Cluster: "c1", Target: target, ControlPlaneVersion: "v1.36.3", LastApplied: "p-s-1-36-v2", LastAppliedKubernetesVersion: "v1.36.3",
			Existing: map[string]string{"cni": "p-s-1-36-v2", "ccm": "p-s-1-36-v2", "old": "p-s-1-36-v2"}},
		apply: []string{"cni", "ccm"},
		hold:  map[string]string{"old": "p-s-1-36-v2"},
		wait:  []string{"csi"},
		gated: true, cpBehind: true,
		stages:  []Stage{{Name: csv1.StageBeforeClusterUpgrade, Components: []string{"cni", "ccm"}}, {Name: csv1.StageAfterClusterUpgrade, Components: []string{"csi"}}},
		message: "waiting for the control plane of Cluster c1 to run v1.37.2 (it runs v1.36.3): old stays at p-s-1-36-v2, csi is installed then",
	}, {
		name: "an upgrade: an after-upgrade component with an object at the old release is held there",
		in: Input{Cluster: "c1", Target: release("p-s-1-37-v1", comps, true, "cni"), ControlPlaneVersion: "v1.36.3", LastApplied: "p-s-1-36-v2", LastAppliedKubernetesVersion: "v1.36.3",
			Existing: map[string]string{"cni": "p-s-1-36-v2", "ccm": "p-s-1-36-v2", "csi": "p-s-1-37-v1"}},
		apply: []string{"cni", "csi"},
		hold:  map[string]string{"ccm": "p-s-1-36-v2"},
		gated: true, cpBehind: true,
		stages:  []Stage{{Name: csv1.StageBeforeClusterUpgrade, Components: []string{"cni"}}, {Name: csv1.StageAfterClusterUpgrade, Components: []string{"ccm", "csi"}}},
		message: "waiting for the control plane of Cluster c1 to run v1.37.2 (it runs v1.36.3): ccm stays at p-s-1-36-v2",
	}, {
		name: "the control plane and the workers reached the version: everything moves, the stages are reported until applied",
		in: Input{Cluster: "c1", Target: target, ControlPlaneVersion: "v1.37.2", LastApplied: "p-s-1-36-v2", LastAppliedKubernetesVersion: "v1.36.3",
			Existing: map[string]string{"cni": "p-s-1-37-v1", "ccm": "p-s-1-37-v1", "csi": "p-s-1-36-v2"},
			Workers:  []Worker{md("md-0", "v1.37.2", true), mp("mp-0", "1.37.2", true)}},
		apply:  comps,
		stages: []Stage{{Name: csv1.StageBeforeClusterUpgrade, Components: []string{"cni", "ccm"}}, {Name: csv1.StageAfterClusterUpgrade, Components: []string{"csi"}}},
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
		in: Input{Cluster: "c1", Target: release("p-s-1-37-v1", comps, true), ControlPlaneVersion: "v1.36.3", LastApplied: "p-s-1-36-v2", LastAppliedKubernetesVersion: "v1.36.3",
			Existing: map[string]string{"cni": "p-s-1-36-v2", "ccm": "p-s-1-36-v2", "csi": "p-s-1-36-v2"}},
		hold:  map[string]string{"cni": "p-s-1-36-v2", "ccm": "p-s-1-36-v2", "csi": "p-s-1-36-v2"},
		gated: true, cpBehind: true,
		stages:  []Stage{{Name: csv1.StageBeforeClusterUpgrade, Components: nil}, {Name: csv1.StageAfterClusterUpgrade, Components: comps}},
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
			if diff := cmp.Diff(tt.remove, p.Remove); diff != "" {
				t.Errorf("remove (-want +got):\n%s", diff)
			}
			if p.Gated != tt.gated || p.ControlPlaneBehind != tt.cpBehind {
				t.Errorf("gated, control plane behind = %v, %v; want %v, %v", p.Gated, p.ControlPlaneBehind, tt.gated, tt.cpBehind)
			}
			var workers []string
			for _, w := range p.WorkersBehind {
				workers = append(workers, w.Name)
			}
			if diff := cmp.Diff(tt.workers, workers); diff != "" {
				t.Errorf("workers behind (-want +got):\n%s", diff)
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
		Target: "r2", Gated: true, ControlPlaneBehind: true,
		Stages:      []Stage{{Name: csv1.StageBeforeClusterUpgrade, Components: []string{"cni", "ccm"}}, {Name: csv1.StageAfterClusterUpgrade, Components: []string{"csi"}}},
		WaitMessage: "waiting for the control plane of Cluster c1 to run v1.37.2 (it runs v1.36.3): csi stays at r1",
	}
	waitingAfter := csv1.AddonStageStatus{Name: csv1.StageAfterClusterUpgrade, Release: "r2", Components: []string{"csi"},
		WaitingFor: csv1.StageWaitControlPlane, Message: gated.WaitMessage, LastTransitionTime: now}
	// removing is gated with delete steps: ccm (of the release) and old are removed, ccm's
	// object is not gone yet.
	removing := Plan{
		Target: "r2", Gated: true, ControlPlaneBehind: true, Remove: []string{"ccm"}, Wait: []string{"ccm"},
		Stages: []Stage{{Name: csv1.StageBeforeClusterUpgrade, Components: []string{"cni"}, Removes: []string{"ccm", "old"}},
			{Name: csv1.StageAfterClusterUpgrade, Components: []string{"ccm", "csi"}}},
		WaitMessage: "waiting for the control plane of Cluster c1 to run v1.37.2 (it runs v1.36.3): csi stays at r1, ccm is removed now and installed again then",
	}
	workersGated := Plan{
		Target: "r2", Gated: true, Skip: true,
		Stages:      gated.Stages,
		WaitMessage: "waiting for the workers of Cluster c1 to run v1.37.2 (MachineDeployment md-0 runs v1.36.3): csi stays at r1",
	}
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
			{Name: csv1.StageAfterClusterUpgrade, Release: "r2", Components: []string{"csi"}, WaitingFor: csv1.StageWaitControlPlane, Message: gated.WaitMessage, LastTransitionTime: then},
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
		name:   "a delete step's Flux object not gone yet: the before-upgrade stage is not applied",
		plan:   removing,
		states: map[string]ComponentState{"cni": {Applied: true, Ready: true}},
		want: []csv1.AddonStageStatus{
			{Name: csv1.StageBeforeClusterUpgrade, Release: "r2", Components: []string{"cni"}, Removes: []string{"ccm", "old"},
				Message: "waiting for the BeforeClusterUpgrade components at release r2: ccm not removed yet", LastTransitionTime: now},
			{Name: csv1.StageAfterClusterUpgrade, Release: "r2", Components: []string{"ccm", "csi"}, WaitingFor: csv1.StageWaitControlPlane,
				Message: removing.WaitMessage, LastTransitionTime: now},
		},
	}, {
		name:   "the delete steps' objects gone, the before-upgrade components Ready: Ready, naming what was removed",
		plan:   func() Plan { p := removing; p.Remove = nil; return p }(),
		states: map[string]ComponentState{"cni": {Applied: true, Ready: true}},
		want: []csv1.AddonStageStatus{
			{Name: csv1.StageBeforeClusterUpgrade, Release: "r2", Components: []string{"cni"}, Removes: []string{"ccm", "old"}, Applied: true, Ready: true,
				Message: "Ready at release r2: cni; ccm and old removed", LastTransitionTime: now},
			{Name: csv1.StageAfterClusterUpgrade, Release: "r2", Components: []string{"ccm", "csi"}, WaitingFor: csv1.StageWaitControlPlane,
				Message: removing.WaitMessage, LastTransitionTime: now},
		},
	}, {
		name: "a before-upgrade stage that only removes, done",
		plan: Plan{Target: "r2", Gated: true, ControlPlaneBehind: true, Stages: []Stage{{Name: csv1.StageBeforeClusterUpgrade, Removes: []string{"old"}}}},
		want: []csv1.AddonStageStatus{
			{Name: csv1.StageBeforeClusterUpgrade, Release: "r2", Removes: []string{"old"}, Applied: true, Ready: true,
				Message: "release r2: old removed", LastTransitionTime: now},
		},
	}, {
		name: "a before-upgrade stage that only removes, not done, skipped by annotation",
		plan: Plan{Target: "r2", Gated: true, ControlPlaneBehind: true, Skip: true, Remove: []string{"old"},
			Stages: []Stage{{Name: csv1.StageBeforeClusterUpgrade, Removes: []string{"old"}}}},
		want: []csv1.AddonStageStatus{
			{Name: csv1.StageBeforeClusterUpgrade, Release: "r2", Removes: []string{"old"}, Skipped: true,
				Message:            "waiting for the BeforeClusterUpgrade components at release r2: old not removed yet; the upgrade is let through: the Cluster carries clusterstack.io/skip-before-upgrade-gate",
				LastTransitionTime: now},
		},
	}, {
		name:   "waiting for the workers: the after-upgrade stage says so; the skip annotation skips nothing once the control plane moved",
		plan:   workersGated,
		states: map[string]ComponentState{"ccm": {Applied: true}},
		want: []csv1.AddonStageStatus{
			{Name: csv1.StageBeforeClusterUpgrade, Release: "r2", Components: []string{"cni", "ccm"},
				Message: "waiting for the BeforeClusterUpgrade components at release r2: cni not applied yet; ccm not Ready yet", LastTransitionTime: now},
			{Name: csv1.StageAfterClusterUpgrade, Release: "r2", Components: []string{"csi"}, WaitingFor: csv1.StageWaitWorkers,
				Message: workersGated.WaitMessage, LastTransitionTime: now},
		},
	}, {
		name: "a message longer than the status takes is cut",
		plan: Plan{Target: "r2", Gated: true, WaitMessage: strings.Repeat("x", 3000),
			Stages: []Stage{{Name: csv1.StageAfterClusterUpgrade, Components: []string{"csi"}}}},
		want: []csv1.AddonStageStatus{
			{Name: csv1.StageAfterClusterUpgrade, Release: "r2", Components: []string{"csi"}, WaitingFor: csv1.StageWaitWorkers,
				Message: strings.Repeat("x", 2045) + "...", LastTransitionTime: now},
		},
	}, {
		name:   "after the control plane upgrade: the after-upgrade stage is applied, a previous entry of another release does not keep its time",
		plan:   Plan{Target: "r2", Stages: []Stage{{Name: csv1.StageBeforeClusterUpgrade, Components: nil}, {Name: csv1.StageAfterClusterUpgrade, Components: []string{"csi"}}}},
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

func TestBeforeUpgradeRemovals(t *testing.T) {
	r := release("r2", []string{"cni", "ccm"}, true, "cni")
	withDeletes(r, "old", "ccm", "old", "cni")
	r.Status.Stages = append(r.Status.Stages, csv1.ReleaseStage{Name: csv1.StageAfterClusterUpgrade,
		Steps: []csv1.ReleaseStageStep{{Component: "csi", Action: csv1.StageActionDelete}}})
	// In file order, once each; cni is also applied (lint refuses that): apply wins; delete
	// steps of other stages are not removals.
	if diff := cmp.Diff([]string{"old", "ccm"}, BeforeUpgradeRemovals(r)); diff != "" {
		t.Errorf("removals (-want +got):\n%s", diff)
	}
	if got := BeforeUpgradeRemovals(release("r2", []string{"cni"}, false)); got != nil {
		t.Errorf("removals without stages = %v, want none", got)
	}
}

func TestWorkersBehind(t *testing.T) {
	tests := []struct {
		name    string
		workers []Worker
		want    []string
	}{
		{"none", nil, nil},
		{"rolled out at the version, with or without its v", []Worker{md("a", "v1.37.2", true), mp("b", "1.37.2", true)}, nil},
		{"another version, rolled out or not", []Worker{md("a", "v1.36.3", true), md("b", "v1.38.0", false)}, []string{"MachineDeployment/a", "MachineDeployment/b"}},
		{"the version, not rolled out", []Worker{mp("a", "v1.37.2", false)}, []string{"MachinePool/a"}},
		{"no version: not waited for", []Worker{md("a", "", false)}, nil},
		{"by kind, then name", []Worker{mp("a", "v1.36.3", true), md("z", "v1.36.3", true), md("b", "v1.36.3", true)},
			[]string{"MachineDeployment/b", "MachineDeployment/z", "MachinePool/a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, w := range WorkersBehind(tt.workers, "v1.37.2") {
				got = append(got, w.Kind+"/"+w.Name)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("behind (-want +got):\n%s", diff)
			}
		})
	}
}
