package controllers

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxstatus"
	"github.com/clusterstack-io/clusterstack-operator/internal/stageplan"
)

// The addon stages of the ClusterAddon reconciler (stacks/README.md, "clusteraddon.yaml: addon order and
// stages"): planStages decides which components move to the desired release now and which are
// removed, applyFluxObjects writes those, leaves the others and deletes the removed ones
// (pruneStale), observeStages records the stages in status.stages, which the
// BeforeClusterUpgrade hook (internal/hooks) answers from. Every decision is a pure function of
// what is observed on this reconcile (internal/stageplan): nothing is remembered in memory or
// in a spec, so a restart resumes where the facts are.

// planStages decides, from the control plane's Kubernetes version, the rollout of the Cluster's
// MachineDeployments and MachinePools and the release each of the Cluster's Flux objects is
// at, which components move to the desired release now and which are removed.
func (r *ClusterAddonReconciler) planStages(ctx context.Context, s *addonScope) (ctrl.Result, error) {
	s.existing = existingByComponent(s.cluster.Name, s.flux.listed)
	in := stageplan.Input{
		Cluster:             s.cluster.Name,
		Target:              s.release,
		ControlPlaneVersion: controlPlaneVersion(s.controlPlane),
		LastApplied:         s.addon.Status.LastAppliedRelease,
		Existing:            map[string]string{},
	}
	for name, o := range s.existing {
		in.Existing[name] = o.GetLabels()[csv1.ReleaseLabel]
	}
	_, in.Skip = s.cluster.Annotations[csv1.SkipBeforeUpgradeGateAnnotation]
	if la := in.LastApplied; la != "" && la != s.release.Name {
		rel := &csv1.ClusterStackRelease{}
		if err := r.Get(ctx, client.ObjectKey{Namespace: s.cluster.Namespace, Name: la}, rel); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("read release %s last applied to Cluster %s: %w", la, s.cluster.Name, err)
		}
		in.LastAppliedKubernetesVersion = rel.Status.KubernetesVersion
	}
	// The workers matter only while the Cluster may be upgrading to a release with stages.
	if len(s.release.Status.Stages) > 0 && in.LastApplied != s.release.Name {
		var err error
		if in.Workers, err = r.workersOf(ctx, s.cluster); err != nil {
			return ctrl.Result{}, err
		}
	}
	p := stageplan.Compute(in)
	s.plan, s.stagesBase = &p, in.LastApplied
	return ctrl.Result{}, nil
}

// existingByComponent maps components to the Cluster's Flux objects by their component label;
// of two objects of one component (a naming scheme changed), the one with today's name wins.
func existingByComponent(cluster string, objs []client.Object) map[string]client.Object {
	out := map[string]client.Object{}
	for _, o := range objs {
		comp := o.GetLabels()[csv1.ComponentLabel]
		if comp == "" {
			continue
		}
		if _, seen := out[comp]; !seen || o.GetName() == fluxgen.AddonObjectName(cluster, comp) {
			out[comp] = o
		}
	}
	return out
}

// controlPlaneVersion is the Kubernetes version the control plane object reports it runs
// (status.version, per CAPI's control plane contract), else the one it is asked to run
// (spec.version); "" when it says neither.
func controlPlaneVersion(cp map[string]any) string {
	if cp == nil {
		return ""
	}
	if v, _, _ := unstructured.NestedString(cp, "status", "version"); v != "" {
		return v
	}
	v, _, _ := unstructured.NestedString(cp, "spec", "version")
	return v
}

// componentStatuses completes the components written now (written) with those the plan holds
// at another release, lets wait or removes, in addon order, the components the desired release
// no longer has last. Held objects are added to want, so that they are not pruned.
func (s *addonScope) componentStatuses(written map[string]csv1.AddonComponentStatus, want map[string]bool) []csv1.AddonComponentStatus {
	out := make([]csv1.AddonComponentStatus, 0, len(s.release.Status.Components))
	var hold map[string]string
	if s.plan != nil {
		hold = s.plan.Hold
	}
	inRelease := map[string]bool{}
	for _, c := range s.release.Status.Components {
		inRelease[c.Name] = true
		if st, ok := written[c.Name]; ok {
			out = append(out, st)
			continue
		}
		if rel, ok := hold[c.Name]; ok {
			out = append(out, s.heldStatus(c.Name, rel, want))
			continue
		}
		out = append(out, s.waitingStatus(c))
	}
	names := make([]string, 0, len(hold))
	for name := range hold {
		if !inRelease[name] {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		out = append(out, s.heldStatus(name, hold[name], want))
	}
	return out
}

// waitingStatus is the status of a component of the desired release the plan neither writes nor
// holds: it waits for the upgrade, or its old Flux object is being removed by a delete step.
func (s *addonScope) waitingStatus(c csv1.ReleaseComponent) csv1.AddonComponentStatus {
	st := csv1.AddonComponentStatus{
		Name: c.Name, Kind: c.Kind, Release: s.release.Name, Version: c.Version,
		FluxObject: fluxgen.FluxKind(c.Kind) + "/" + fluxgen.AddonObjectName(s.cluster.Name, c.Name),
	}
	p := s.plan
	if p == nil {
		return st
	}
	awaiting := p.Awaiting
	if awaiting == "" {
		awaiting = fmt.Sprintf("Cluster %s to run %s", s.cluster.Name, p.KubernetesVersion)
	}
	removed := fmt.Sprintf("removed for the upgrade to %s (a delete step of the %s stage of release %s)", p.KubernetesVersion, csv1.StageBeforeClusterUpgrade, s.release.Name)
	switch {
	case slices.Contains(p.Remove, c.Name) && !p.Gated:
		st.WaitingFor = removed + "; installed again once its old Flux object is gone"
	case slices.Contains(p.Remove, c.Name):
		st.WaitingFor = fmt.Sprintf("%s; installed again after the upgrade: waiting for %s (stage %s)", removed, awaiting, csv1.StageAfterClusterUpgrade)
	default:
		st.WaitingFor = fmt.Sprintf("waiting for %s: the component is installed then (stage %s)", awaiting, csv1.StageAfterClusterUpgrade)
	}
	return st
}

// removeForStage deletes the Flux object of a component a delete step of the desired release's
// BeforeClusterUpgrade stage names, without suspending it: Flux uninstalls the Helm release or
// prunes the Kustomization's objects from the workload cluster. An object being deleted
// already is left to Flux (no second delete, no second Event).
func (r *ClusterAddonReconciler) removeForStage(ctx context.Context, s *addonScope, o client.Object) error {
	if !o.GetDeletionTimestamp().IsZero() {
		return nil
	}
	kind, comp := o.GetObjectKind().GroupVersionKind().Kind, o.GetLabels()[csv1.ComponentLabel]
	if err := r.Delete(ctx, o); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("delete %s/%s of component %s (a delete step of release %s): %w", kind, o.GetName(), comp, s.release.Name, err))
	}
	again := ""
	for _, c := range s.release.Status.Components {
		if c.Name == comp {
			again = "; it is installed again after the upgrade"
		}
	}
	r.Recorder.Eventf(s.addon, corev1.EventTypeNormal, "ComponentRemovedForUpgrade",
		"%s/%s deleted: the %s stage of release %s removes %s from Cluster %s before its upgrade to %s%s",
		kind, o.GetName(), csv1.StageBeforeClusterUpgrade, s.release.Name, comp, s.cluster.Name, s.plan.KubernetesVersion, again)
	return nil
}

// heldStatus is the status of a component whose Flux object is left at release rel: what was
// recorded for it there, or its object. Nothing waits: the object exists.
func (s *addonScope) heldStatus(name, rel string, want map[string]bool) csv1.AddonComponentStatus {
	o := s.existing[name]
	kind := o.GetObjectKind().GroupVersionKind().Kind
	ref := kind + "/" + o.GetName()
	want[ref] = true
	for _, old := range s.addon.Status.Components {
		if old.Name == name && old.Release == rel && old.FluxObject == ref {
			// The delivery fields only: mergeComponents keeps the judged ones (ready, message).
			old.Ready, old.Message, old.WaitingFor = false, "", ""
			return old
		}
	}
	ck := csv1.ComponentKindHelm
	if kind == kustomizev1.KustomizationKind {
		ck = csv1.ComponentKindKustomize
	}
	return csv1.AddonComponentStatus{Name: name, Kind: ck, Release: rel, FluxObject: ref}
}

// observeStages records the stages of the plan: for each component of a stage whether its Flux
// object was written for the desired release on this reconcile and is Ready there.
func (r *ClusterAddonReconciler) observeStages(ctx context.Context, s *addonScope) (ctrl.Result, error) {
	s.stagesKnown = true
	if s.plan == nil || len(s.plan.Stages) == 0 {
		s.stages = nil
		return ctrl.Result{}, nil
	}
	comps := map[string]csv1.ReleaseComponent{}
	for _, c := range s.release.Status.Components {
		comps[c.Name] = c
	}
	states := map[string]stageplan.ComponentState{}
	for _, st := range s.plan.Stages {
		for _, name := range st.Components {
			obj, ok := s.applied[name]
			if !ok {
				continue
			}
			ready := readyAtRelease(s.flux, obj, s.appliedHashes[name], comps[name], s.release)
			states[name] = stageplan.ComponentState{Applied: true, Ready: ready}
		}
	}
	s.stages = stageplan.Status(*s.plan, states, s.addon.Status.Stages, metav1.Now())
	return ctrl.Result{}, nil
}

// readyAtRelease is true when the listed Flux object is the one just written (it carries hash,
// the hash desired was applied with) and Flux reports it Ready, at its current generation, at
// the release's chart version (Helm) or revision (Kustomize): the status aggregation's notion of
// healthy.
func readyAtRelease(flux *fluxObservation, desired client.Object, hash string, c csv1.ReleaseComponent, rel *csv1.ClusterStackRelease) bool {
	cur := flux.listedAs(kindOf(desired), desired.GetName())
	if cur == nil || hash == "" || cur.GetAnnotations()[appliedHashAnnotation] != hash {
		return false
	}
	return fluxObjectState(kindOf(cur), cur.GetName(), cur, fluxgen.ChartVersions(c), rel.Status.Revision).Healthy()
}

// stageSkipped returns the BeforeClusterUpgrade stage of now when it is skipped by annotation
// and was not (for its release) in before: the moment to record an Event.
func stageSkipped(before, now []csv1.AddonStageStatus) *csv1.AddonStageStatus {
	for i := range now {
		n := &now[i]
		if n.Name != csv1.StageBeforeClusterUpgrade || !n.Skipped {
			continue
		}
		for _, b := range before {
			if b.Name == n.Name && b.Release == n.Release && b.Skipped {
				return nil
			}
		}
		return n
	}
	return nil
}

// skipEvent is the Event, recorded after the status write, of a BeforeClusterUpgrade gate
// skipped by annotation.
func skipEvent(cluster *clusterv1.Cluster, st *csv1.AddonStageStatus) statusEvent {
	return warningEvent("UpgradeGateSkipped", fmt.Sprintf(
		"Cluster %s carries annotation %s: its upgrade to release %s is let through before the BeforeClusterUpgrade components (%s) are Ready",
		cluster.Name, csv1.SkipBeforeUpgradeGateAnnotation, st.Release, strings.Join(st.Components, ", ")))
}

// upgradeHold is the Kubernetes upgrade of the Cluster that the BeforeClusterUpgrade hook holds,
// on this reconcile's plan and the stages to be written: the control plane does not run the
// desired release's version yet, the gate is not skipped, and the release's BeforeClusterUpgrade
// stage is not Ready. It holds since the stage last changed. Once it has lasted longer than the
// degraded grace period the ClusterAddon is Degraded (fluxstatus.Input.UpgradeHold), naming
// the component that holds it and how to let the upgrade through. nil when nothing is held.
func upgradeHold(s *addonScope, stages []csv1.AddonStageStatus) *fluxstatus.Problem {
	p := s.plan
	if p == nil || !p.ControlPlaneBehind || p.Skip {
		return nil
	}
	for _, st := range stages {
		if st.Name != csv1.StageBeforeClusterUpgrade || st.Release != p.Target || st.Ready {
			continue
		}
		what := strings.Join(st.Components, ", ")
		if len(st.Removes) > 0 {
			what = strings.TrimPrefix(what+"; removes "+strings.Join(st.Removes, ", "), "; ")
		}
		return &fluxstatus.Problem{
			Reason: csv1.ReasonUpgradeHeld,
			Message: fmt.Sprintf("the BeforeClusterUpgrade hook holds the upgrade of Cluster %s to %s (release %s) until its BeforeClusterUpgrade components (%s) are Ready; it has held it",
				s.cluster.Name, p.KubernetesVersion, p.Target, what),
			Since: st.LastTransitionTime.Time,
			Hint:  stageplan.SkipHint(s.cluster.Namespace, s.cluster.Name),
		}
	}
	return nil
}
