// Package stageplan decides, level-triggered, which release each addon component of a Cluster
// is delivered at while the Cluster moves between releases, following the addon stages of the
// release's clusteraddon.yaml, and computes the ClusterAddon's status.stages. It has no client:
// everything is a pure function of facts the ClusterAddon controller observed (the desired
// release, the control plane's Kubernetes version, the version and rollout of each
// MachineDeployment and MachinePool, the release of each existing Flux object), so the decision
// is the same after any restart and on any replica.
//
// The rules (stacks/README.md, "clusteraddon.yaml: addon order and stages"):
//
//   - A release without stages (no clusteraddon.yaml): every component moves at once, as
//     always; status.stages stays empty.
//   - A Cluster moving to a release of the same Kubernetes version: every component moves at
//     once; no stage, no gate, and delete steps do nothing.
//   - A Cluster whose control plane does not run the desired release's Kubernetes version yet
//     (an upgrade): the components the release lists with action apply in BeforeClusterUpgrade
//     move to it now, and the Flux objects of those it lists there with action delete are
//     deleted (Flux uninstalls them); the BeforeClusterUpgrade stage is Applied once the former
//     are written and the latter gone. Every other component keeps the Flux object it has, at
//     the release it is at, and one that has none (or whose object a delete step removed)
//     waits.
//   - Once the control plane runs the version, the waiting components still wait until every
//     MachineDeployment and MachinePool of the Cluster is rolled out at it too (CAPI calls its
//     AfterClusterUpgrade hook only then); then everything moves (AfterClusterUpgrade),
//     including a removed component the release still has, installed again. Once every
//     component has moved, workers rolling out again (a scale-up, a remediation) hold nothing.
//     A Flux object a delete step names is deleted throughout the upgrade unless it is at the
//     desired release (installed again): one the control plane upgrade overtook (the gate was
//     skipped, or Runtime SDK is off) is removed late rather than upgraded in place. The stages
//     are reported until the desired release is applied.
//   - A new Cluster (nothing applied yet): every component is installed, reported as the
//     AfterControlPlaneInitialized stage.
package stageplan

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxstatus"
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
	// Workers are the Cluster's MachineDeployments and MachinePools (not those being deleted).
	Workers []Worker
}

// Worker kinds.
const (
	KindMachineDeployment = "MachineDeployment"
	KindMachinePool       = "MachinePool"
)

// Worker is one MachineDeployment or MachinePool of the Cluster, as observed.
type Worker struct {
	// Kind is KindMachineDeployment or KindMachinePool.
	Kind string
	// Name of the object.
	Name string
	// Version is the Kubernetes version its machines are to run (spec.template.spec.version);
	// a worker that names none is not waited for.
	Version string
	// RolledOut is true when its controller observed its current generation and every replica
	// is up to date with it.
	RolledOut bool
}

// Stage is a stage to report, the target components it moves and those it removes.
type Stage struct {
	Name       csv1.AddonStage
	Components []string
	// Removes are the components whose Flux objects the stage deletes (delete steps).
	Removes []string
}

// Plan says what to write for the Cluster now.
type Plan struct {
	// Target is the desired release's name, KubernetesVersion its Kubernetes version, and
	// ControlPlaneVersion the one the control plane runs (normalized, "" when unknown).
	Target, KubernetesVersion, ControlPlaneVersion string
	// Gated is true, during an upgrade to a target with stages, while the components of the
	// AfterClusterUpgrade stage wait: the control plane does not run the target's Kubernetes
	// version (ControlPlaneBehind), or it does but some worker is not rolled out at it
	// (WorkersBehind) and some component has not moved yet. Only the BeforeClusterUpgrade
	// components move.
	Gated bool
	// ControlPlaneBehind is true while the control plane does not run the target's Kubernetes
	// version (the BeforeClusterUpgrade hook's moment).
	ControlPlaneBehind bool
	// WorkersBehind are the workers the plan is Gated on, by kind and name (nil when it is not,
	// or when the control plane is behind).
	WorkersBehind []Worker
	// Apply are the target's components whose Flux objects are written now, at the target, in
	// addon order.
	Apply []csv1.ReleaseComponent
	// Hold maps the components whose Flux objects are left as they are to the release they
	// are at; it includes components the target no longer has (removed after the upgrade).
	Hold map[string]string
	// Wait are the target's components that have no Flux object at the target yet and get one
	// only after the upgrade, in addon order.
	Wait []string
	// Remove are the components whose Flux objects are deleted now, sorted: those a delete
	// step of the target's BeforeClusterUpgrade stage names, during an upgrade, unless at the
	// target. A component of the target among them is not in Apply.
	Remove []string
	// Awaiting names, while Gated, what Hold and Wait components wait for: "the control plane
	// of Cluster c1 to run v1.37.2" or "the workers of Cluster c1 to run v1.37.2".
	Awaiting string
	// WaitMessage says, while Gated, why Hold and Wait components do not move, naming them,
	// and the workers behind (empty when not Gated).
	WaitMessage string
	// Stages to report, in hook order (nil when none).
	Stages []Stage
	// Skip: the gate is skipped by annotation (only meaningful while ControlPlaneBehind).
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
	removes := BeforeUpgradeRemovals(t)
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
	upgrade := cpBehind || fromOtherVersion
	switch {
	case upgrade:
		p.Stages = []Stage{
			{Name: csv1.StageBeforeClusterUpgrade, Components: before, Removes: removes},
			{Name: csv1.StageAfterClusterUpgrade, Components: after},
		}
	case in.LastApplied == "":
		p.Stages = []Stage{{Name: csv1.StageAfterControlPlaneInitialized, Components: all}}
	}
	if !upgrade {
		p.Apply = t.Status.Components
		return p
	}

	g := gatedPlan(in, isBefore, removes)
	workers := WorkersBehind(in.Workers, want)
	switch {
	case cpBehind:
		p.Gated, p.ControlPlaneBehind = true, true
		p.Awaiting = fmt.Sprintf("the control plane of Cluster %s to run %s", in.Cluster, want)
	case len(workers) > 0 && (len(g.Hold) > 0 || len(g.Wait) > 0):
		// Workers count only while something has yet to move: once every component is at the
		// target, a worker rolling out again (scale-up, remediation) holds nothing back.
		p.Gated, p.WorkersBehind = true, workers
		p.Awaiting = fmt.Sprintf("the workers of Cluster %s to run %s", in.Cluster, want)
	}
	p.Remove = g.Remove
	if !p.Gated {
		// The whole Cluster runs the version: everything moves, except a component whose old
		// Flux object a delete step removes: it is installed again once that object is gone.
		removing := setOf(g.Remove)
		for _, c := range t.Status.Components {
			if !removing[c.Name] {
				p.Apply = append(p.Apply, c)
			}
		}
		return p
	}
	p.Apply, p.Hold, p.Wait = g.Apply, g.Hold, g.Wait
	if cpBehind {
		p.WaitMessage = fmt.Sprintf("waiting for the control plane of Cluster %s to run %s (it runs %s)", in.Cluster, want, cp)
	} else {
		p.WaitMessage = fmt.Sprintf("waiting for the workers of Cluster %s to run %s (%s)", in.Cluster, want, describeWorkers(workers, want))
	}
	if rest := heldAndWaiting(p); len(rest) > 0 {
		p.WaitMessage += ": " + strings.Join(rest, ", ")
	}
	return p
}

// gatedPlan is the plan while the AfterClusterUpgrade stage waits: before-upgrade components
// move, a component's Flux object a delete step names is removed unless it is at the target,
// and every other component stays at the release it is at or waits.
func gatedPlan(in Input, isBefore map[string]bool, removes []string) Plan {
	t := in.Target
	var g Plan
	g.Hold = map[string]string{}
	isRemoved := setOf(removes)
	inTarget := map[string]bool{}
	for _, c := range t.Status.Components {
		inTarget[c.Name] = true
		rel, exists := in.Existing[c.Name]
		atTarget := exists && (rel == t.Name || rel == "")
		switch {
		case isBefore[c.Name], atTarget:
			// Before-upgrade components move now; one already at the target (or of unknown
			// release) is kept up to date there, also one a delete step removed before.
			g.Apply = append(g.Apply, c)
		case exists && isRemoved[c.Name]:
			g.Remove = append(g.Remove, c.Name)
			g.Wait = append(g.Wait, c.Name)
		case exists:
			g.Hold[c.Name] = rel
		default:
			g.Wait = append(g.Wait, c.Name)
		}
	}
	for _, name := range sortedKeys(in.Existing) {
		switch rel := in.Existing[name]; {
		case inTarget[name]:
		case isRemoved[name]:
			g.Remove = append(g.Remove, name)
		case rel != "":
			g.Hold[name] = rel
		}
	}
	sort.Strings(g.Remove)
	return g
}

// WorkersBehind returns the workers that do not run version want (normalized) yet, by kind and
// name: those asked for another version and those still rolling out. A worker that names no
// version is not waited for: nothing says which version it runs.
func WorkersBehind(workers []Worker, want string) []Worker {
	var out []Worker
	for _, w := range workers {
		v := NormalizeVersion(w.Version)
		if v != "" && (v != want || !w.RolledOut) {
			out = append(out, w)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// maxWorkersNamed bounds the workers a message names.
const maxWorkersNamed = 5

// describeWorkers says, for people, where the workers behind are: "MachineDeployment md-0 runs
// v1.36.3, MachinePool mp-0 is rolling out v1.37.2", naming at most maxWorkersNamed.
func describeWorkers(workers []Worker, want string) string {
	var parts []string
	for i, w := range workers {
		if i == maxWorkersNamed {
			parts = append(parts, fmt.Sprintf("and %d more", len(workers)-i))
			break
		}
		if v := NormalizeVersion(w.Version); v != want {
			parts = append(parts, fmt.Sprintf("%s %s runs %s", w.Kind, w.Name, v))
		} else {
			parts = append(parts, fmt.Sprintf("%s %s is rolling out %s", w.Kind, w.Name, want))
		}
	}
	return strings.Join(parts, ", ")
}

// heldAndWaiting describes the components that do not move yet, held ones first, by name.
func heldAndWaiting(p Plan) []string {
	var out []string
	for _, name := range sortedKeys(p.Hold) {
		out = append(out, fmt.Sprintf("%s stays at %s", name, p.Hold[name]))
	}
	removing := setOf(p.Remove)
	for _, name := range p.Wait {
		if removing[name] {
			out = append(out, name+" is removed now and installed again then")
		} else {
			out = append(out, name+" is installed then")
		}
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

// BeforeUpgradeRemovals are the components the target's BeforeClusterUpgrade stage removes
// (its delete steps), in file order, without those the stage also applies (stack lint refuses
// both for one component).
func BeforeUpgradeRemovals(rel *csv1.ClusterStackRelease) []string {
	applied := setOf(BeforeUpgradeComponents(rel))
	seen := map[string]bool{}
	var out []string
	for _, st := range rel.Status.Stages {
		if st.Name != csv1.StageBeforeClusterUpgrade {
			continue
		}
		for _, step := range st.Steps {
			if step.Action == csv1.StageActionDelete && !applied[step.Component] && !seen[step.Component] {
				seen[step.Component] = true
				out = append(out, step.Component)
			}
		}
	}
	return out
}

// SkipHint says how to let the upgrade of Cluster ns/name through without waiting for its
// BeforeClusterUpgrade components: the hook's answers that hold the upgrade, and the
// ClusterAddon's conditions about such a hold, end with it.
func SkipHint(ns, name string) string {
	return fmt.Sprintf("to let the upgrade through without waiting, set annotation %s on the Cluster (kubectl annotate cluster -n %s %s %s=)",
		csv1.SkipBeforeUpgradeGateAnnotation, ns, name, csv1.SkipBeforeUpgradeGateAnnotation)
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
	removing := setOf(p.Remove)
	out := make([]csv1.AddonStageStatus, 0, len(p.Stages))
	for _, st := range p.Stages {
		s := csv1.AddonStageStatus{Name: st.Name, Release: p.Target, Components: st.Components, Removes: st.Removes}
		var notApplied, notReady, notRemoved []string
		for _, c := range st.Components {
			switch cs := states[c]; {
			case !cs.Applied:
				notApplied = append(notApplied, c)
			case !cs.Ready:
				notReady = append(notReady, c)
			}
		}
		for _, c := range st.Removes {
			if removing[c] {
				notRemoved = append(notRemoved, c)
			}
		}
		waits := p.Gated && st.Name == csv1.StageAfterClusterUpgrade && len(st.Components) > 0
		s.Applied = len(notApplied) == 0 && len(notRemoved) == 0 && !waits
		s.Ready = s.Applied && len(notReady) == 0
		switch {
		case waits && p.ControlPlaneBehind:
			s.WaitingFor = csv1.StageWaitControlPlane
		case waits:
			s.WaitingFor = csv1.StageWaitWorkers
		}
		switch {
		case len(st.Components) == 0 && len(st.Removes) == 0:
			s.Message = fmt.Sprintf("release %s lists no components for %s", p.Target, st.Name)
		case waits:
			s.Message = p.WaitMessage
		case s.Ready && len(st.Components) == 0:
			s.Message = fmt.Sprintf("release %s: %s removed", p.Target, listOf(st.Removes))
		case s.Ready:
			s.Message = fmt.Sprintf("Ready at release %s: %s", p.Target, listOf(st.Components))
			if len(st.Removes) > 0 {
				s.Message += "; " + listOf(st.Removes) + " removed"
			}
		default:
			var parts []string
			if len(notApplied) > 0 {
				parts = append(parts, listOf(notApplied)+" not applied yet")
			}
			if len(notReady) > 0 {
				parts = append(parts, listOf(notReady)+" not Ready yet")
			}
			if len(notRemoved) > 0 {
				parts = append(parts, listOf(notRemoved)+" not removed yet")
			}
			s.Message = fmt.Sprintf("waiting for the %s components at release %s: %s", st.Name, p.Target, strings.Join(parts, "; "))
		}
		s.Skipped = st.Name == csv1.StageBeforeClusterUpgrade && p.ControlPlaneBehind && p.Skip && !s.Ready
		if s.Skipped {
			s.Message += fmt.Sprintf("; the upgrade is let through: the Cluster carries %s", csv1.SkipBeforeUpgradeGateAnnotation)
		}
		s.Message = fluxstatus.Truncate(s.Message) // status.stages' CRD bound is the conditions' 2048
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

func setOf(names []string) map[string]bool {
	out := make(map[string]bool, len(names))
	for _, n := range names {
		out[n] = true
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
