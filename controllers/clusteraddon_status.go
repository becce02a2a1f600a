package controllers

import (
	"context"
	"fmt"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxstatus"
	"github.com/clusterstack-io/clusterstack-operator/internal/metrics"
)

// addonJudge is the one place that computes a ClusterAddon's Available, Progressing, Degraded
// and Ready conditions, its components' readiness and its last applied release, from the Flux
// objects delivering its components. The ClusterAddon reconciler calls it in the same status
// write as its facts: one writer, one write per change, no conflicts between two writers.
type addonJudge struct {
	client.Reader
	Options StatusOptions
	// flux is the reconcile's observation of the Cluster's Flux objects, with what it wrote
	// (fluxObservation.current): one the cache did not have yet is judged as written, without
	// status, not as missing (which would be judged, and written, again once the cache has it);
	// one it wrote over is judged at the written generation, not by its status of the spec before.
	flux *fluxObservation
	// hold is the Kubernetes upgrade of the Cluster the BeforeClusterUpgrade hook holds on the
	// facts being written (upgradeHold), nil when none.
	hold *fluxstatus.Problem
}

// judge sets a's judged fields from its facts (already in a) and the Flux objects delivering
// its components: components' ready and message, progress, unhealthy, the last applied release,
// the aggregated conditions (docs/status-ownership.md). It returns the Events of the change and
// when to judge again (a grace period running out).
func (r addonJudge) judge(ctx context.Context, a *csv1.ClusterAddon) ([]statusEvent, time.Duration, error) {
	in, judged, err := r.input(ctx, a)
	if err != nil {
		return nil, 0, err
	}
	res := fluxstatus.Compute(in)
	a.Status.Unhealthy = res.Unhealthy
	for i := range a.Status.Components {
		c := &a.Status.Components[i]
		if j, ok := judged[c.Name]; ok && j.fluxObject == c.FluxObject && j.release == c.Release {
			c.Ready, c.Message = componentReadiness(*c, j.state)
		}
	}
	ready := 0
	for _, c := range a.Status.Components {
		if c.Ready {
			ready++
		}
	}
	a.Status.Progress = fmt.Sprintf("%d/%d", ready, len(a.Status.Components))
	firstDelivery := a.Status.LastAppliedRelease == ""
	if res.Healthy && a.Status.DesiredRelease != "" && allAtRelease(a.Status.Components, a.Status.DesiredRelease) &&
		a.Status.LastAppliedRelease != a.Status.DesiredRelease {
		a.Status.LastAppliedRelease = a.Status.DesiredRelease
		now := metav1.NewTime(r.Options.now())
		a.Status.LastAppliedTime = &now
	}
	events := transitionEvents(a.Status.Conditions, res)
	if firstDelivery {
		events = withoutQuietFirstDelivery(a.Status.Conditions, events)
	}
	fluxstatus.Apply(&a.Status.Conditions, a.Generation, res)
	a.Status.ObservedGeneration = a.Generation
	return events, res.RequeueAfter, nil
}

// withoutQuietFirstDelivery drops the AvailableTrue Event of a ClusterAddon's first delivery
// when nothing went wrong on the way (it was never Degraded): a new Cluster getting its addons is
// told by its conditions and lastAppliedTime, and an Event each would be one more API write per
// Cluster (ten thousand of them for a new fleet). A first delivery that recovers from Degraded,
// and every later change, still gets its Events.
func withoutQuietFirstDelivery(prev []metav1.Condition, events []statusEvent) []statusEvent {
	if apimeta.IsStatusConditionTrue(prev, csv1.DegradedCondition) {
		return events
	}
	var out []statusEvent
	for _, e := range events {
		if e.reason != csv1.AvailableCondition+string(metav1.ConditionTrue) {
			out = append(out, e)
		}
	}
	return out
}

// judgement is the state of a component's Flux object as addonJudge read it, and
// which object and release it judged.
type judgement struct {
	fluxObject, release string
	state               fluxstatus.ObjectState
}

// componentReadiness is a component's ready and message: whether its Flux object is healthy and
// what Flux said about it; while the object does not exist, why the ClusterAddon reconciler has
// not written it (waitingFor), when it says. A routine reconcile of a component that is ready
// (Flux's drift check at every interval) changes nothing of it: its message would otherwise turn
// "Reconciliation in progress" and back, two status writes per Flux object and interval of a
// fleet where nothing changes.
func componentReadiness(c csv1.AddonComponentStatus, o fluxstatus.ObjectState) (ready bool, message string) {
	if !o.Exists && c.WaitingFor != "" {
		return false, c.WaitingFor
	}
	if c.Ready && c.Message != "" && o.RoutineReconcile() {
		return true, c.Message
	}
	return o.Healthy(), o.Describe()
}

// input gathers what the ClusterAddon's conditions are computed from, and the state of each
// component's Flux object by component name.
func (r addonJudge) input(ctx context.Context, addon *csv1.ClusterAddon) (fluxstatus.Input, map[string]judgement, error) {
	in := fluxstatus.Input{
		Subject:     fmt.Sprintf("cluster %s/%s", addon.Namespace, addon.Spec.ClusterName),
		Delivered:   addon.Status.LastAppliedRelease,
		Desired:     addon.Status.DesiredRelease,
		Previous:    addon.Status.Conditions,
		Unhealthy:   addon.Status.Unhealthy,
		Now:         r.Options.now(),
		Grace:       r.Options.Grace,
		QueueGrace:  r.Options.QueueGrace,
		UpgradeHold: r.hold,
	}
	judged := map[string]judgement{}
	for _, t := range []string{csv1.ValuesRenderedCondition, csv1.ObjectsOwnedCondition} {
		if p := problemIfFalse(addon.Status.Conditions, t); p != nil {
			in.Invalid = p
		}
	}
	if p := problemIfFalse(addon.Status.Conditions, csv1.ReleaseReadyCondition); p != nil {
		switch p.Reason {
		case csv1.ReasonTagNotFound, csv1.ReasonStackNotFound:
			in.Invalid = p // no retry fixes it: the tag or the ClusterStack must be created
		default:
			in.Waiting = p
		}
		return in, judged, nil
	}
	if c := apimeta.FindStatusCondition(addon.Status.Conditions, csv1.WorkloadClusterReadyCondition); c == nil || c.Status != metav1.ConditionTrue {
		p := &fluxstatus.Problem{Reason: csv1.ReasonUnknown, Message: "the cluster's addons have not been reconciled yet", Since: addon.CreationTimestamp.Time}
		if c != nil {
			p = &fluxstatus.Problem{Reason: c.Reason, Message: c.Message, Since: c.LastTransitionTime.Time}
		}
		in.Waiting = p
	}
	if addon.Status.DesiredRelease == "" {
		return in, judged, nil
	}
	rel := &csv1.ClusterStackRelease{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: addon.Namespace, Name: addon.Status.DesiredRelease}, rel); err != nil {
		if apierrors.IsNotFound(err) {
			in.Waiting = &fluxstatus.Problem{Reason: csv1.ReasonReleaseNotFound, Message: "release " + addon.Status.DesiredRelease + " does not exist", Since: addon.CreationTimestamp.Time}
			return in, judged, nil
		}
		return in, nil, err
	}
	heldAndStepStarted(&in, addon)
	if t := addon.Status.DesiredReleaseTime; t != nil {
		in.DesiredSince = t.Time
	}
	// Components are judged at the release they are at: while an upgrade holds some at the
	// release they were at (addon stages), that release's versions and revision.
	releases := map[string]*csv1.ClusterStackRelease{rel.Name: rel}
	for _, c := range addon.Status.Components {
		at := c.Release
		if at == "" {
			at = rel.Name
		}
		cr, ok := releases[at]
		if !ok {
			cr = &csv1.ClusterStackRelease{}
			if err := r.Get(ctx, client.ObjectKey{Namespace: addon.Namespace, Name: at}, cr); err != nil {
				if !apierrors.IsNotFound(err) {
					return in, nil, err
				}
				cr = nil
			}
			releases[at] = cr
		}
		var versions []string
		revision := ""
		if cr != nil {
			revision = cr.Status.Revision
			for _, rc := range cr.Status.Components {
				if rc.Name == c.Name {
					versions = fluxgen.ChartVersions(rc)
				}
			}
		}
		kind := fluxgen.FluxKind(c.Kind)
		name := strings.TrimPrefix(strings.TrimPrefix(c.FluxObject, helmv2.HelmReleaseKind+"/"), kustomizev1.KustomizationKind+"/")
		st := fluxObjectState(kind, name, r.flux.current(kind, name), versions, revision)
		st.Component = c.Name
		in.Objects = append(in.Objects, st)
		judged[c.Name] = judgement{fluxObject: c.FluxObject, release: c.Release, state: st}
	}
	if len(addon.Status.Components) == 0 && len(rel.Status.Components) > 0 && in.Waiting == nil {
		// The reconcile stopped before it listed the components it delivers (its values render
		// deferred while the namespace has its share of renders running, an API error): nothing
		// is delivered yet. Judged from an empty list, the release would be "available", 0/0.
		since := addon.CreationTimestamp.Time
		if t := addon.Status.DesiredReleaseTime; t != nil && t.After(since) {
			since = t.Time
		}
		in.Waiting = &fluxstatus.Problem{Reason: csv1.ReasonReconciling, Since: since,
			Message: fmt.Sprintf("the components of release %s are not delivered yet", rel.Name)}
	}
	return in, judged, nil
}

// heldAndStepStarted reads the addon stages: while the AfterClusterUpgrade stage of the desired
// release waits for the Cluster's upgrade (its control plane, then its workers), the rollout is
// held (Progressing, never Degraded for the wait alone); once it is applied, the rollout's grace
// period counts from then.
func heldAndStepStarted(in *fluxstatus.Input, addon *csv1.ClusterAddon) {
	for _, st := range addon.Status.Stages {
		if st.Name != csv1.StageAfterClusterUpgrade || st.Release != addon.Status.DesiredRelease {
			continue
		}
		if st.Applied {
			in.StepStarted = st.LastTransitionTime.Time
		} else if len(st.Components) > 0 {
			reason := csv1.ReasonWaitingForControlPlaneUpgrade
			if st.WaitingFor == csv1.StageWaitWorkers {
				reason = csv1.ReasonWaitingForWorkersUpgrade
			}
			in.Held = &fluxstatus.Problem{Reason: reason, Message: st.Message, Since: st.LastTransitionTime.Time}
		}
	}
}

// allAtRelease is true when every component is delivered at release (none held at another).
func allAtRelease(comps []csv1.AddonComponentStatus, release string) bool {
	for _, c := range comps {
		if c.Release != release {
			return false
		}
	}
	return true
}

// writeStatus is the ClusterAddon's one status write at the end of the phases (recordFacts), and
// when the reconcile must come back for the status (again).
func (r *ClusterAddonReconciler) writeStatus(ctx context.Context, s *addonScope) (ctrl.Result, error) {
	err := r.recordFacts(ctx, s)
	return statusRequeue(s.judgeAgain, s.held), err
}

// statusRequeue is the requeue for the status (addonScope.again): when a grace period runs out
// (judgeAgain) or a held progress report is due (held), whichever is sooner, 0 meaning none.
// When only the held report brings the reconcile back, it comes at reportPriority: after the
// reconciles that write objects.
func statusRequeue(judgeAgain, held time.Duration) ctrl.Result {
	res := requeueIn(soonest(judgeAgain, held))
	if held > 0 && (judgeAgain == 0 || held < judgeAgain) {
		p := reportPriority
		res.Priority = &p
	}
	return res
}

// recordFacts writes the ClusterAddon's status in one write (docs/status-ownership.md): what this
// reconcile found (the stack and desired release, the ReleaseReady, WorkloadClusterReady,
// ValuesRendered, ObjectsOwned and Paused conditions, the values ConfigMap, the stages, which
// components are listed with what is delivered of each) and, judged from those facts and the
// Flux objects (addonJudge), the components' readiness, the last applied release and the
// aggregated conditions. It sets s.judgeAgain to when the judgement changes by itself (a grace
// period running out).
func (r *ClusterAddonReconciler) recordFacts(ctx context.Context, s *addonScope) error {
	renderFailed := false // a new render failure is recorded (counted once written)
	var judgeErr error
	if s.flux == nil { // the phases did not run: a Cluster whose release is missing
		objs, err := r.ownedFluxObjects(ctx, s.addon)
		if err != nil {
			return err
		}
		s.flux = newFluxObservation(objs)
	}
	judge := addonJudge{Reader: r.Client, Options: r.Status, flux: s.flux}
	key := client.ObjectKeyFromObject(s.addon)
	err := updateStatusEmit(ctx, r.writer, r.Recorder, s.addon, func(a *csv1.ClusterAddon) (bool, []statusEvent) {
		var events []statusEvent
		renderFailed, judgeErr, s.judgeAgain, s.held = false, nil, 0, 0
		stored := a.Status.DeepCopy()
		if s.stackName != "" {
			a.Status.ClusterStack = s.stackName
		}
		if a.Status.DesiredRelease != s.desired {
			a.Status.DesiredRelease = s.desired
			now := metav1.NewTime(r.Status.now())
			a.Status.DesiredReleaseTime = &now
		}
		if c := apimeta.FindStatusCondition(a.Status.Conditions, csv1.PausedCondition); c != nil && c.Status == metav1.ConditionTrue {
			fluxstatus.SetCondition(&a.Status.Conditions, metav1.Condition{Type: csv1.PausedCondition, Status: metav1.ConditionFalse,
				Reason: csv1.ReasonNotPaused, Message: "the Cluster is not paused", ObservedGeneration: a.Generation})
		}
		for _, c := range []*metav1.Condition{s.releaseReady, s.owned, s.waiting} {
			if c != nil {
				c.ObservedGeneration = a.Generation
				fluxstatus.SetCondition(&a.Status.Conditions, *c)
			}
		}
		if s.rendered != nil {
			s.rendered.ObservedGeneration = a.Generation
			if fluxstatus.SetCondition(&a.Status.Conditions, *s.rendered) && s.rendered.Status == metav1.ConditionFalse {
				renderFailed = true
				events = append(events, warningEvent(s.rendered.Reason, s.rendered.Message))
			}
		}
		if s.values != "" {
			a.Status.ValuesConfigMap = s.values
		}
		if s.components != nil {
			a.Status.Components = mergeComponents(a.Status.Components, s.components)
		}
		if stages, ok := s.stagesFor(a.Status); ok {
			if skipped := stageSkipped(a.Status.Stages, stages); skipped != nil {
				events = append(events, skipEvent(s.cluster, skipped))
			}
			a.Status.Stages = stages
		}
		judge.hold = upgradeHold(s, a.Status.Stages)
		appliedBefore := a.Status.LastAppliedRelease
		judged, again, err := judge.judge(ctx, a)
		if err != nil {
			judgeErr = err // the facts are written; the judgement is tried again
			return true, events
		}
		s.judgeAgain = again
		if a.Status.LastAppliedRelease != appliedBefore {
			// The release is delivered: its addon stages are over (stageplan plans none once the
			// applied release is the target), in this write rather than one more.
			a.Status.Stages = nil
		}
		if !equality.Semantic.DeepEqual(stored, &a.Status) {
			if s.held = r.pace.hold(key, r.Status.ProgressInterval, stored, &a.Status); s.held > 0 {
				a.Status = *stored // written when the interval is over, or with the next change that may not wait
				return true, nil
			}
		}
		return true, append(events, judged...)
	})
	if err == nil && s.held == 0 {
		r.pace.done(key)
	}
	if err == nil && renderFailed {
		metrics.Default.RenderFailed(s.cluster.Namespace, s.stackName, s.desired)
	}
	if err == nil && judgeErr != nil {
		err = fmt.Errorf("judge the status of ClusterAddon %s/%s: %w", s.addon.Namespace, s.addon.Name, judgeErr)
	}
	return err
}

// stagesFor returns the stages to write over cur, the API server's status: those observed this
// reconcile, unless they were planned from a last applied release cur no longer has. A delivery
// this process wrote (which ends the stages) that the cache had not seen yet would otherwise be
// followed by a write of the stages planned before it, and one more to end them again. ok is
// false when cur's stages stand.
func (s *addonScope) stagesFor(cur csv1.ClusterAddonStatus) (stages []csv1.AddonStageStatus, ok bool) {
	if !s.stagesKnown || cur.LastAppliedRelease != s.stagesBase {
		return nil, false
	}
	return s.stages, true
}

// mergeComponents is the components list as the ClusterAddon reconciler writes it: the
// components of want, in its order, with the delivery fields (name, kind, release, version,
// fluxObject, waitingFor) from want and the judged ones (ready, message) kept from the entry of
// the same name in cur. A component new to the list has no readiness
// yet; addonJudge, in the same write, judges it.
func mergeComponents(cur, want []csv1.AddonComponentStatus) []csv1.AddonComponentStatus {
	old := make(map[string]csv1.AddonComponentStatus, len(cur))
	for _, c := range cur {
		old[c.Name] = c
	}
	out := make([]csv1.AddonComponentStatus, len(want))
	for i, c := range want {
		o := old[c.Name]
		c.Ready, c.Message = o.Ready, o.Message
		c.WaitingFor = fluxstatus.Truncate(c.WaitingFor)
		out[i] = c
	}
	return out
}

// setPaused records whether the Cluster is paused; while it is, this is the only write made for it.
func (r *ClusterAddonReconciler) setPaused(ctx context.Context, addon *csv1.ClusterAddon, paused bool) error {
	if addon == nil {
		return nil // a Cluster never served: nothing to say, nothing to write
	}
	c := metav1.Condition{Type: csv1.PausedCondition, Status: metav1.ConditionFalse, Reason: csv1.ReasonNotPaused, Message: "the Cluster is not paused"}
	if paused {
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, csv1.ReasonClusterPaused,
			fmt.Sprintf("Cluster %s is paused (spec.paused or the %s annotation): the operator changes nothing for it until it is resumed", addon.Spec.ClusterName, clusterv1.PausedAnnotation)
	}
	return updateStatus(ctx, r.writer, addon, func(a *csv1.ClusterAddon) {
		c.ObservedGeneration = a.Generation
		if !paused && apimeta.FindStatusCondition(a.Status.Conditions, csv1.PausedCondition) == nil {
			return // never paused: no condition to clear
		}
		fluxstatus.SetCondition(&a.Status.Conditions, c)
	})
}
