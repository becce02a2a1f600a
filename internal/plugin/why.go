package plugin

import (
	"fmt"
	"io"
	"strings"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// Blockers: what `why` found to stop a Cluster's addons, in the order the chain is walked.
const (
	// BlockerNone: nothing blocks; the Cluster's addons are Ready at its release.
	BlockerNone = "None"
	// BlockerClusterNotFound: no Cluster of that name in the namespace.
	BlockerClusterNotFound = "ClusterNotFound"
	// BlockerClusterDeleting: the Cluster is being deleted.
	BlockerClusterDeleting = "ClusterDeleting"
	// BlockerClusterPaused: the Cluster is paused; the operator writes nothing for it.
	BlockerClusterPaused = "ClusterPaused"
	// BlockerNoClusterClass: the Cluster's topology names no ClusterClass in its namespace.
	BlockerNoClusterClass = "NoClusterClass"
	// BlockerNotAStackRelease: the Cluster's ClusterClass is not named like a stack release.
	BlockerNotAStackRelease = "NotAStackRelease"
	// BlockerStackNotFound: no ClusterStack in the namespace has the release.
	BlockerStackNotFound = "StackNotFound"
	// BlockerReleaseNotFound: the release does not exist (its tag is not published, or it is
	// being created).
	BlockerReleaseNotFound = "ReleaseNotFound"
	// BlockerReleaseNotAvailable: the release exists but is not Available.
	BlockerReleaseNotAvailable = "ReleaseNotAvailable"
	// BlockerClusterAddonNotFound: the operator has not created the Cluster's ClusterAddon.
	BlockerClusterAddonNotFound = "ClusterAddonNotFound"
	// BlockerWaitingForRelease: the ClusterAddon waits for the release (ReleaseReady=False).
	BlockerWaitingForRelease = "WaitingForRelease"
	// BlockerOwnershipConflict: an object the operator would generate is controlled by someone else.
	BlockerOwnershipConflict = "OwnershipConflict"
	// BlockerControlPlaneNotInitialized: the Cluster's control plane is not initialized.
	BlockerControlPlaneNotInitialized = "ControlPlaneNotInitialized"
	// BlockerKubeconfigMissing: the Cluster's kubeconfig Secret does not exist yet.
	BlockerKubeconfigMissing = "KubeconfigMissing"
	// BlockerWorkloadClusterNotReady: WorkloadClusterReady is False for another reason.
	BlockerWorkloadClusterNotReady = "WorkloadClusterNotReady"
	// BlockerValuesNotRendered: the stack's value templates failed for the Cluster.
	BlockerValuesNotRendered = "ValuesNotRendered"
	// BlockerComponentFailing: a component's Flux object failed.
	BlockerComponentFailing = "ComponentFailing"
	// BlockerStageHeld: an addon stage waits for the Cluster's upgrade (control plane or workers).
	BlockerStageHeld = "StageHeld"
	// BlockerComponentProgressing: a component's Flux object is not Ready yet, without a failure.
	BlockerComponentProgressing = "ComponentProgressing"
	// BlockerAddonNotReady: the ClusterAddon is not Ready and no finer cause was found.
	BlockerAddonNotReady = "AddonNotReady"
)

// Verdict is the result of `why CLUSTER`.
type Verdict struct {
	// Cluster is "<namespace>/<name>".
	Cluster string `json:"cluster"`
	// Blocked is false when nothing blocks the Cluster's addons.
	Blocked bool `json:"blocked"`
	// Blocker names the first unmet thing (the Blocker constants), None when nothing blocks.
	Blocker string `json:"blocker"`
	// Summary is the verdict in one sentence.
	Summary string `json:"summary"`
	// Release is the release the Cluster uses, when known.
	Release string `json:"release,omitempty"`
	// Component is the blocking component, if a component blocks.
	Component string `json:"component,omitempty"`
	// FluxObject is the blocking component's Flux object, as Flux reports it.
	FluxObject *FluxObject `json:"fluxObject,omitempty"`
	// LastFailure is what Flux last said when the object failed, kept by the operator while Flux
	// retries (status.unhealthy[].lastFailure of the ClusterAddon).
	LastFailure string `json:"lastFailure,omitempty"`
	// Evidence are the facts read along the chain, in order.
	Evidence []Evidence `json:"evidence"`
}

// Evidence is one object looked at, its state and what it says.
type Evidence struct {
	// Object is "<Kind> <namespace>/<name>".
	Object string `json:"object"`
	// State is the object's state (Ready, Degraded, NotFound, ...), or a condition "Type=Status".
	State string `json:"state"`
	// Detail is what the object says (a condition message, the version, ...).
	Detail string `json:"detail,omitempty"`
}

// WhyInput is what `why` reads for one Cluster. Nil pointers are objects that do not exist.
type WhyInput struct {
	// Namespace and Name of the Cluster asked about.
	Namespace, Name string
	Cluster         *clusterv1.Cluster
	// Stack is the ClusterStack of the namespace whose releases the Cluster's ClusterClass
	// belongs to.
	Stack *csv1.ClusterStack
	// Release is the ClusterStackRelease the Cluster uses.
	Release *csv1.ClusterStackRelease
	// Addon is the Cluster's ClusterAddon.
	Addon *csv1.ClusterAddon
	// Flux holds the Flux objects of the Cluster's namespace.
	Flux FluxIndex
}

// Why walks the chain from the Cluster to its components and stops at the first unmet thing:
// the Cluster (exists, not deleted, not paused, uses a stack release), the ClusterStack and the
// release (exists, Available), the ClusterAddon (exists; the release ready for it, its objects
// owned, the workload cluster reachable, the values rendered), a stage waiting for the Cluster's
// upgrade, a failing component (its Flux object and what Flux said, with the HelmRelease's
// failures and history), a component still in progress. Evidence lists what was read.
func Why(in WhyInput) Verdict {
	v := Verdict{Cluster: in.Namespace + "/" + in.Name, Blocked: true, Evidence: []Evidence{}}
	key := in.Namespace + "/" + in.Name
	c := in.Cluster
	if c == nil {
		return v.block(BlockerClusterNotFound, fmt.Sprintf("Cluster %s does not exist.", key))
	}
	class := ClassOf(c)
	v.add("Cluster "+key, clusterState(c), clusterDetail(c, class))
	switch {
	case !c.DeletionTimestamp.IsZero():
		return v.block(BlockerClusterDeleting, fmt.Sprintf("Cluster %s is being deleted: its addons are being removed.", key))
	case IsPaused(c):
		return v.block(BlockerClusterPaused, fmt.Sprintf("Cluster %s is paused (spec.paused or the %s annotation): the operator leaves it alone until it resumes.", key, clusterv1.PausedAnnotation))
	case class == "":
		return v.block(BlockerNoClusterClass, fmt.Sprintf("Cluster %s uses no ClusterClass in its namespace, so no cluster stack delivers its addons.", key))
	case ReleaseStackKey(class) == "":
		return v.block(BlockerNotAStackRelease, fmt.Sprintf("Cluster %s uses ClusterClass %s, which is not named like a cluster stack release (<provider>-<stack>-<major>-<minor>-<version>): no cluster stack delivers its addons.", key, class))
	}
	v.Release = class
	if in.Stack == nil {
		return v.block(BlockerStackNotFound, fmt.Sprintf("No ClusterStack in namespace %s has release %s: create a ClusterStack for %s in %s.", in.Namespace, class, ReleaseStackKey(class), in.Namespace))
	}
	cs := in.Stack
	st, msg := ObjectState(cs.Status.Conditions)
	v.add("ClusterStack "+cs.Namespace+"/"+cs.Name, st, msg)

	if in.Release == nil {
		for _, m := range cs.Status.MissingReleases {
			if m.Name == class {
				v.add("ClusterStack "+cs.Namespace+"/"+cs.Name, "missingReleases", m.Reason+": "+m.Message)
				return v.block(BlockerReleaseNotFound, fmt.Sprintf("Release %s of ClusterStack %s does not exist and cannot be created (%s): %s", class, cs.Name, m.Reason, m.Message))
			}
		}
		v.add("ClusterStackRelease "+in.Namespace+"/"+class, StateNotFound, "")
		return v.block(BlockerReleaseNotFound, fmt.Sprintf("Release %s does not exist yet: ClusterStack %s creates it for the Cluster once its tag is listed (status.missingReleases tells when it cannot).", class, cs.Name))
	}
	rel := in.Release
	st, msg = ObjectState(rel.Status.Conditions)
	v.add("ClusterStackRelease "+rel.Namespace+"/"+rel.Name, st, releaseDetail(rel, msg))
	if !isTrue(rel.Status.Conditions, csv1.AvailableCondition) {
		why := firstFalse(rel.Status.Conditions, csv1.StackValidCondition, csv1.TagVerifiedCondition, csv1.RequirementsMetCondition)
		if why == "" {
			why = msg
		}
		if why == "" {
			why = "its status does not say why yet"
		}
		return v.block(BlockerReleaseNotAvailable, fmt.Sprintf("Release %s is not Available: %s", rel.Name, why))
	}

	a := in.Addon
	if a == nil {
		v.add("ClusterAddon "+key, StateNotFound, "")
		return v.block(BlockerClusterAddonNotFound, fmt.Sprintf("Cluster %s has no ClusterAddon: the operator has not reconciled it (is the operator running?).", key))
	}
	st, msg = ObjectState(a.Status.Conditions)
	detail := msg
	if a.Status.Progress != "" {
		// Progress counts Ready components; it says nothing of their release, so both
		// releases are named: a Cluster whose move failed to render still runs the old one.
		at := "desired " + a.Status.DesiredRelease
		if a.Status.LastAppliedRelease != a.Status.DesiredRelease {
			at += ", last applied " + orNone(a.Status.LastAppliedRelease)
		}
		detail = strings.TrimSpace(a.Status.Progress + " components Ready (" + at + "); " + msg)
		detail = strings.TrimSuffix(detail, ";")
	}
	v.add("ClusterAddon "+key, st, detail)
	if a.Status.DesiredRelease != "" {
		v.Release = a.Status.DesiredRelease
	}

	if cond := falseCondition(a.Status.Conditions, csv1.ReleaseReadyCondition); cond != nil {
		v.addCondition(a, cond)
		return v.block(BlockerWaitingForRelease, "The ClusterAddon waits for its release: "+cond.Message)
	}
	if cond := falseCondition(a.Status.Conditions, csv1.ObjectsOwnedCondition); cond != nil {
		v.addCondition(a, cond)
		return v.block(BlockerOwnershipConflict, "An object the operator would generate belongs to someone else: "+cond.Message)
	}
	if cond := falseCondition(a.Status.Conditions, csv1.WorkloadClusterReadyCondition); cond != nil {
		v.addCondition(a, cond)
		switch cond.Reason {
		case csv1.ReasonWaitingForControlPlane:
			return v.block(BlockerControlPlaneNotInitialized, fmt.Sprintf("The control plane of Cluster %s is not initialized: %s", key, cond.Message))
		case csv1.ReasonWaitingForKubeconfig:
			return v.block(BlockerKubeconfigMissing, fmt.Sprintf("The kubeconfig Secret of Cluster %s does not exist yet: %s", key, cond.Message))
		}
		return v.block(BlockerWorkloadClusterNotReady, "The workload cluster is not ready: "+cond.Message)
	}
	if cond := falseCondition(a.Status.Conditions, csv1.ValuesRenderedCondition); cond != nil {
		v.addCondition(a, cond)
		return v.block(BlockerValuesNotRendered, "The stack's values could not be rendered for the Cluster: "+cond.Message)
	}

	// A failing component comes first: it is what a stage, or the ClusterAddon, waits for.
	var progressing *csv1.AddonComponentStatus
	for i := range a.Status.Components {
		comp := &a.Status.Components[i]
		f := in.Flux.Get(a.Namespace, comp.FluxObject)
		if comp.FluxObject == "" {
			f = FluxObject{State: StateNotFound}
		}
		last := lastFailure(a, comp.FluxObject)
		failing := f.State == StateFailed || f.State == StateSuspended || (!comp.Ready && last != "")
		if failing {
			v.Component, v.FluxObject, v.LastFailure = comp.Name, &f, last
			v.addFlux(f, last)
			said := f.Message()
			if f.State != StateFailed && last != "" {
				said = last
			}
			if f.State == StateSuspended {
				said = "it is suspended"
			}
			return v.block(BlockerComponentFailing, fmt.Sprintf("Component %s is failing: %s %s/%s: %s", comp.Name, f.Kind, a.Namespace, f.Name, oneLine(said, 0)))
		}
		if !comp.Ready && progressing == nil {
			progressing = comp
		}
	}
	for _, s := range a.Status.Stages {
		if s.WaitingFor == "" {
			continue
		}
		v.add("ClusterAddon "+key, "stage "+string(s.Name), s.Message)
		return v.block(BlockerStageHeld, fmt.Sprintf("Stage %s waits for the Cluster's upgrade (%s): %s", s.Name, s.WaitingFor, s.Message))
	}
	if progressing != nil {
		f := in.Flux.Get(a.Namespace, progressing.FluxObject)
		if progressing.FluxObject == "" {
			f = FluxObject{State: StateNotFound}
		}
		v.Component, v.FluxObject = progressing.Name, &f
		v.addFlux(f, "")
		said := f.Message()
		if said == "" {
			said = progressing.Message
		}
		if said == "" {
			said = "no word from Flux yet"
		}
		ref := f.Kind + " " + a.Namespace + "/" + f.Name
		if f.Name == "" {
			ref = "no Flux object yet"
		}
		return v.block(BlockerComponentProgressing, fmt.Sprintf("Component %s is not Ready yet (%s, %s): %s", progressing.Name, ref, f.State, oneLine(said, 0)))
	}
	if !isTrue(a.Status.Conditions, csv1.ReadyCondition) {
		return v.block(BlockerAddonNotReady, fmt.Sprintf("ClusterAddon %s is %s: %s", key, st, orUnknown(msg)))
	}
	v.Blocked, v.Blocker = false, BlockerNone
	v.Summary = fmt.Sprintf("Nothing blocks Cluster %s: its addons are Ready at release %s (%s components).", key, a.Status.DesiredRelease, orUnknown(a.Status.Progress))
	return v
}

func (v Verdict) block(blocker, summary string) Verdict {
	v.Blocked, v.Blocker, v.Summary = blocker != BlockerNone, blocker, summary
	return v
}

func (v *Verdict) add(object, state, detail string) {
	v.Evidence = append(v.Evidence, Evidence{Object: object, State: state, Detail: detail})
}

func (v *Verdict) addCondition(a *csv1.ClusterAddon, c *metav1.Condition) {
	v.add("ClusterAddon "+a.Namespace+"/"+a.Name, c.Type+"="+string(c.Status), c.Reason+": "+c.Message)
}

// addFlux records a Flux object: its Ready condition, the operator's record of its last
// failure, and for a HelmRelease its failure counts and history.
func (v *Verdict) addFlux(f FluxObject, last string) {
	obj := f.Kind + " " + f.Namespace + "/" + f.Name
	if f.Name == "" {
		v.add("Flux object", StateNotFound, "the component has no Flux object yet")
		return
	}
	detail := ""
	if f.Ready != nil {
		detail = f.Ready.Reason + ": " + f.Ready.Message
	}
	if f.Stalled != nil {
		detail = "Stalled " + f.Stalled.Reason + ": " + f.Stalled.Message
	}
	v.add(obj, f.State, detail)
	if last != "" && last != f.Message() {
		v.add(obj, "lastFailure", last)
	}
	if f.Kind == "HelmRelease" {
		if f.Failures > 0 || f.InstallFailures > 0 || f.UpgradeFailures > 0 {
			v.add(obj, "failures", fmt.Sprintf("%d (install %d, upgrade %d), last action: %s", f.Failures, f.InstallFailures, f.UpgradeFailures, orUnknown(f.LastAction)))
		}
		if len(f.History) > 0 {
			var hs []string
			for _, h := range f.History {
				hs = append(hs, fmt.Sprintf("v%d %s %s", h.Version, h.Status, h.Chart))
			}
			v.add(obj, "history", strings.Join(hs, "; "))
		}
	}
}

func lastFailure(a *csv1.ClusterAddon, ref string) string {
	for _, u := range a.Status.Unhealthy {
		if u.Object == ref {
			return u.LastFailure
		}
	}
	return ""
}

func falseCondition(conds []metav1.Condition, t string) *metav1.Condition {
	c := apimeta.FindStatusCondition(conds, t)
	if c == nil || c.Status != metav1.ConditionFalse {
		return nil
	}
	return c
}

// firstFalse is "<Type> (<Reason>): <message>" of the first of types that is False, "" if none.
func firstFalse(conds []metav1.Condition, types ...string) string {
	for _, t := range types {
		if c := falseCondition(conds, t); c != nil {
			return fmt.Sprintf("%s=False (%s): %s", c.Type, c.Reason, c.Message)
		}
	}
	return ""
}

func clusterState(c *clusterv1.Cluster) string {
	switch {
	case !c.DeletionTimestamp.IsZero():
		return "Deleting"
	case IsPaused(c):
		return StatePaused
	}
	return "Exists"
}

func clusterDetail(c *clusterv1.Cluster, class string) string {
	var parts []string
	if class != "" {
		parts = append(parts, "ClusterClass "+class)
	}
	if c.Spec.Topology.Version != "" {
		parts = append(parts, "Kubernetes "+c.Spec.Topology.Version)
	}
	if c.Status.Initialization.ControlPlaneInitialized != nil {
		parts = append(parts, fmt.Sprintf("control plane initialized: %t", *c.Status.Initialization.ControlPlaneInitialized))
	}
	return strings.Join(parts, ", ")
}

func releaseDetail(rel *csv1.ClusterStackRelease, msg string) string {
	var parts []string
	if rel.Status.KubernetesVersion != "" {
		parts = append(parts, "validated with Kubernetes "+rel.Status.KubernetesVersion)
	}
	if rel.Status.Revision != "" {
		parts = append(parts, "revision "+rel.Status.Revision)
	}
	if msg != "" {
		parts = append(parts, msg)
	}
	return strings.Join(parts, ", ")
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// WriteVerdict prints the verdict and its evidence as text.
func WriteVerdict(w io.Writer, v Verdict, st Style) error {
	v = ForTerminal(v) // what the objects say is printed, never acted on by the terminal
	var b strings.Builder
	head := st.Good("OK")
	if v.Blocked {
		head = st.Bad("BLOCKED") + " " + st.Bold(v.Blocker)
	}
	fmt.Fprintf(&b, "%s  %s\n", head, v.Summary)
	if len(v.Evidence) > 0 {
		b.WriteString("\nEvidence:\n")
		objW, stateW := 0, 0
		for _, e := range v.Evidence {
			objW, stateW = max(objW, len(e.Object)), max(stateW, len(e.State))
		}
		for _, e := range v.Evidence {
			line := fmt.Sprintf("  %-*s  %s%s", objW, e.Object, st.State(e.State), strings.Repeat(" ", stateW-len(e.State)))
			if e.Detail != "" {
				line += "  " + oneLine(e.Detail, 0)
			}
			fmt.Fprintln(&b, strings.TrimRight(line, " "))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// orNone is s, or "none" when it is empty.
func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
