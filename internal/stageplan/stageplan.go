// Package stageplan decides, level-triggered, which release each addon component of a Cluster
// is delivered at while the Cluster moves between releases, following the addon stages of the
// release's clusteraddon.yaml, and computes the ClusterAddon's status.stages. It has no client:
// everything is a pure function of facts the ClusterAddon controller observed (the desired
// release, the control plane's Kubernetes version, the release of each existing Flux object),
// so the decision is the same after any restart and on any replica.
//
// The rules (stacks/README.md, "clusteraddon.yaml: addon order and stages"):
//
//   - A release without stages (no clusteraddon.yaml): every component moves at once, as
//     always; status.stages stays empty.
//   - A Cluster moving to a release of the same Kubernetes version: every component moves at
//     once; no stage, no gate.
//   - A Cluster whose control plane does not run the desired release's Kubernetes version yet
//     (an upgrade): the components the release lists with action apply in BeforeClusterUpgrade
//     move to it now; every other component keeps the Flux object it has, at the release it is
//     at, and one that has none waits. Once the control plane runs the version, everything moves
//     (AfterClusterUpgrade). The stages are reported until the desired release is applied.
//   - A new Cluster (nothing applied yet): every component is installed, reported as the
//     AfterControlPlaneInitialized stage.
package stageplan

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// Input is what the plan is decided from.
type Input struct {
	// Cluster is the CAPI Cluster's name, for messages.
	Cluster string
	// Target is the release the Cluster's ClusterClass is (status.desiredRelease), validated:
	// its status names the Kubernetes version, the components in addon order and the stages.
	Target *csv1.ClusterStackRelease
	// ControlPlaneVersion is the Kubernetes version the control plane runs ("" when unknown:
	// then no upgrade is assumed).
	ControlPlaneVersion string
	// LastApplied is status.lastAppliedRelease and LastAppliedKubernetesVersion that release's
	// Kubernetes version ("" when unknown).
	LastApplied, LastAppliedKubernetesVersion string
	// Existing maps each component that has a Flux object of the Cluster to the release the
	// object is at (its release label).
	Existing map[string]string
	// Skip is true when the Cluster carries csv1.SkipBeforeUpgradeGateAnnotation.
	Skip bool
}

// Stage is a stage to report and the target components it moves.
type Stage struct {
	Name       csv1.AddonStage
	Components []string
}

// Plan says what to write for the Cluster now.
type Plan struct {
	// Target is the desired release's name, KubernetesVersion its Kubernetes version, and
	// ControlPlaneVersion the one the control plane runs (normalized, "" when unknown).
	Target, KubernetesVersion, ControlPlaneVersion string
	// Gated is true while the control plane does not run the target's Kubernetes version and
	// the target has stages: only the BeforeClusterUpgrade components move.
	Gated bool
	// Apply are the target's components whose Flux objects are written now, at the target, in
	// addon order.
	Apply []csv1.ReleaseComponent
	// Hold maps the components whose Flux objects are left as they are to the release they
	// are at; it includes components the target no longer has (removed after the upgrade).
	Hold map[string]string
	// Wait are the target's components that have no Flux object yet and get one only after
	// the control plane upgrade, in addon order.
	Wait []string
	// WaitMessage says why Hold and Wait components do not move (empty when none).
	WaitMessage string
	// Stages to report, in hook order (nil when none).
	Stages []Stage
	// Skip: the gate is skipped by annotation (only meaningful while Gated).
	Skip bool
}

// Compute decides the plan.
func Compute(in Input) Plan {
	t := in.Target
	want := NormalizeVersion(t.Status.KubernetesVersion)
	cp := NormalizeVersion(in.ControlPlaneVersion)
	p := Plan{Target: t.Name, KubernetesVersion: want, ControlPlaneVersion: cp, Skip: in.Skip}
	if len(t.Status.Stages) == 0 {
		p.Apply = t.Status.Components
		return p
	}
	cpBehind := cp != "" && want != "" && cp != want
	fromOtherVersion := in.LastApplied != "" && in.LastApplied != t.Name &&
		in.LastAppliedKubernetesVersion != "" && NormalizeVersion(in.LastAppliedKubernetesVersion) != want
	before := BeforeUpgradeComponents(t)
	isBefore := map[string]bool{}
	for _, c := range before {
		isBefore[c] = true
	}
	var all, after []string
	for _, c := range t.Status.Components {
		all = append(all, c.Name)
		if !isBefore[c.Name] {
			after = append(after, c.Name)
		}
	}
	switch {
	case cpBehind || fromOtherVersion:
		p.Stages = []Stage{{Name: csv1.StageBeforeClusterUpgrade, Components: before}, {Name: csv1.StageAfterClusterUpgrade, Components: after}}
		p.Gated = cpBehind
	case in.LastApplied == "":
		p.Stages = []Stage{{Name: csv1.StageAfterControlPlaneInitialized, Components: all}}
	}
	if !p.Gated {
		p.Apply = t.Status.Components
		return p
	}

	p.Hold = map[string]string{}
	inTarget := map[string]bool{}
	for _, c := range t.Status.Components {
		inTarget[c.Name] = true
		rel, exists := in.Existing[c.Name]
		switch {
		case isBefore[c.Name], exists && (rel == t.Name || rel == ""):
			// Before-upgrade components move now; one already at the target (or of unknown
			// release) is kept up to date there.
			p.Apply = append(p.Apply, c)
		case exists:
			p.Hold[c.Name] = rel
		default:
			p.Wait = append(p.Wait, c.Name)
		}
	}
	for _, name := range sortedKeys(in.Existing) {
		if rel := in.Existing[name]; !inTarget[name] && rel != "" {
			p.Hold[name] = rel
		}
	}
	if len(p.Hold) > 0 || len(p.Wait) > 0 {
		p.WaitMessage = fmt.Sprintf("waiting for the control plane of Cluster %s to run %s (it runs %s): %s",
			in.Cluster, want, cp, strings.Join(heldAndWaiting(p), ", "))
	}
	return p
}

// heldAndWaiting describes the components that do not move yet, held ones first, by name.
func heldAndWaiting(p Plan) []string {
	var out []string
	for _, name := range sortedKeys(p.Hold) {
		out = append(out, fmt.Sprintf("%s stays at %s", name, p.Hold[name]))
	}
	for _, name := range p.Wait {
		out = append(out, name+" is installed then")
	}
	return out
}

// BeforeUpgradeComponents are the target's components its BeforeClusterUpgrade stage applies,
// in addon order (the order of status.components).
func BeforeUpgradeComponents(rel *csv1.ClusterStackRelease) []string {
	listed := map[string]bool{}
	for _, st := range rel.Status.Stages {
		if st.Name != csv1.StageBeforeClusterUpgrade {
			continue
		}
		for _, step := range st.Steps {
			if step.Action == csv1.StageActionApply {
				listed[step.Component] = true
			}
		}
	}
	var out []string
	for _, c := range rel.Status.Components {
		if listed[c.Name] {
			out = append(out, c.Name)
		}
	}
	return out
}

// NormalizeVersion writes a Kubernetes version with its "v": "1.36.3" and "v1.36.3" are the
// same version. "" stays "".
func NormalizeVersion(v string) string {
	v = strings.TrimSpace(v)
	if v == "" || strings.HasPrefix(v, "v") {
		return v
	}
	return "v" + v
}

// ComponentState is what the controller observed of one component after writing.
type ComponentState struct {
	// Applied is true when the component's Flux object is written for the target release.
	Applied bool
	// Ready is true when that object is Ready at the target's version and revision.
	Ready bool
}

// Status computes status.stages from the plan and the observed components. An entry keeps its
// lastTransitionTime from previous while its release, applied and ready are unchanged.
func Status(p Plan, states map[string]ComponentState, previous []csv1.AddonStageStatus, now metav1.Time) []csv1.AddonStageStatus {
	if len(p.Stages) == 0 {
		return nil
	}
	out := make([]csv1.AddonStageStatus, 0, len(p.Stages))
	for _, st := range p.Stages {
		s := csv1.AddonStageStatus{Name: st.Name, Release: p.Target, Components: st.Components, Applied: true, Ready: true}
		var notApplied, notReady []string
		for _, c := range st.Components {
			switch cs := states[c]; {
			case !cs.Applied:
				notApplied = append(notApplied, c)
			case !cs.Ready:
				notReady = append(notReady, c)
			}
		}
		waitsForControlPlane := p.Gated && st.Name == csv1.StageAfterClusterUpgrade && len(st.Components) > 0
		s.Applied = len(notApplied) == 0 && !waitsForControlPlane
		s.Ready = s.Applied && len(notReady) == 0
		switch {
		case len(st.Components) == 0:
			s.Message = fmt.Sprintf("release %s lists no components for %s", p.Target, st.Name)
		case waitsForControlPlane:
			s.Message = p.WaitMessage
		case s.Ready:
			s.Message = fmt.Sprintf("Ready at release %s: %s", p.Target, listOf(st.Components))
		default:
			var parts []string
			if len(notApplied) > 0 {
				parts = append(parts, listOf(notApplied)+" not applied yet")
			}
			if len(notReady) > 0 {
				parts = append(parts, listOf(notReady)+" not Ready yet")
			}
			s.Message = fmt.Sprintf("waiting for the %s components at release %s: %s", st.Name, p.Target, strings.Join(parts, "; "))
		}
		s.Skipped = st.Name == csv1.StageBeforeClusterUpgrade && p.Gated && p.Skip && !s.Ready
		if s.Skipped {
			s.Message += fmt.Sprintf("; the upgrade is let through: the Cluster carries %s", csv1.SkipBeforeUpgradeGateAnnotation)
		}
		s.LastTransitionTime = now
		for _, old := range previous {
			if old.Name == s.Name && old.Release == s.Release && old.Applied == s.Applied && old.Ready == s.Ready {
				s.LastTransitionTime = old.LastTransitionTime
			}
		}
		out = append(out, s)
	}
	return out
}

// listOf names components: "cni", "cni and csi", "cni, csi and ccm".
func listOf(names []string) string {
	switch len(names) {
	case 0:
		return "no component"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
