package fluxstatus

import (
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// Problem is a fact recorded by the controller that writes Flux objects: invalid input (which
// makes the subject Degraded at once) or a prerequisite being waited for (Progressing, and
// Degraded only once it lasts longer than the grace period).
type Problem struct {
	Reason  string
	Message string
	// Since is when the problem started (the writer condition's transition time).
	Since time.Time
	// Hint, when set, says what a person can do about an UpgradeHold; it ends the Degraded
	// message.
	Hint string
}

// Input is everything the conditions of one subject (a ClusterAddon or a ClusterStackRelease)
// are computed from.
type Input struct {
	// Subject prefixes every message, e.g. "cluster default/c1" or "release aws-base-1-33-v2".
	Subject string
	// Objects are the Flux objects the subject needs, in order. Callers set Waiting while they
	// cannot tell yet which objects are needed.
	Objects []ObjectState
	// Invalid is an input problem no retry fixes (malformed stack, failed render).
	Invalid *Problem
	// Waiting is a prerequisite not met yet (control plane, kubeconfig Secret, release).
	Waiting *Problem
	// Held is a rollout step that waits for something expected to take long and outside the
	// operator's hands (the control plane's Kubernetes upgrade, which AfterClusterUpgrade
	// components wait for): Progressing is True with its message, and the wait alone never makes
	// the subject Degraded. Objects that are not healthy meanwhile still count.
	Held *Problem
	// StepStarted is when the current step of the rollout began (a hold ended); the grace
	// period of an unfinished rollout counts from the later of it and the start of Progressing.
	StepStarted time.Time
	// DesiredSince is when Desired became the desired version (zero when unknown): a new
	// rollout gets a whole grace period. The grace period of an unfinished rollout counts from
	// it when it is later than the start of Progressing, and records of unhealthy objects from
	// before it start again at it (a failure seen while another version was desired says
	// nothing of this one; an object that fails again is Degraded once the grace period passed).
	DesiredSince time.Time
	// Delivered is the version last fully applied ("" when none yet); while a different version
	// rolls out, Available stays True for it unless an object failed while applying to the
	// cluster (or Unavailable says it does not serve).
	Delivered string
	// Desired is the version being rolled out.
	Desired string
	// Previous are the subject's current conditions, so transition times and the start of
	// progress are kept.
	Previous []metav1.Condition
	// Now and Grace: an object not Ready, or a rollout not done, for longer than Grace is Degraded.
	Now   time.Time
	Grace time.Duration
	// QueueGrace is how long the object a rollout waits for may wait for its Flux controller to
	// pick up its current spec (queued) before the subject is Degraded: a controller that is not
	// running, or not keeping up. It counts from the later of the rollout's start and the
	// object's creation; a grace period shorter than Grace (zero included) is Grace. Once the
	// controller works on the object, Grace counts again, from when it began (Flux's Ready
	// transition), so time spent in the controller's queue is not taken for a failure to
	// converge.
	QueueGrace time.Duration
	// Unhealthy are the subject's records of unhealthy objects from its status: when each was
	// first seen unhealthy and what Flux last said about its failure. They keep the grace clock
	// running through Flux's retries (which mark Ready Unknown at every attempt) and across
	// operator restarts.
	Unhealthy []csv1.UnhealthyObject
	// Alert is a problem that makes the subject Degraded without making it unavailable (the
	// delivered state keeps working), such as a release tag moved after validation.
	Alert *Problem
	// Unchecked is a check of the delivered state that cannot be made right now (a release's
	// tag cannot be listed, so whether it still points at the validated commit is unknown),
	// failing since Unchecked.Since. The delivered state keeps working, so it never makes the
	// subject unavailable; once it has lasted longer than Grace it makes the subject Degraded,
	// as an Alert does (an Alert, or another cause of Degraded, is reported first).
	Unchecked *Problem
	// Unavailable says that the delivered state does not serve right now although it was
	// delivered (a Deployment of it has no available replicas): Available is False with its
	// reason and message instead of True for Delivered. It does not make the subject Degraded by
	// itself; the objects and the grace period decide that.
	Unavailable *Problem
	// AvailabilityObserved says that the caller observes whether the delivered state serves
	// (Unavailable is set exactly when it does not), rather than leaving it to be inferred from
	// Degraded: with Delivered set, Available then stays True while Unavailable is nil, also when
	// the subject is Degraded (an upgrade that failed while the old version keeps serving).
	AvailabilityObserved bool
	// MoveVerb describes the move from Delivered to Desired in Progressing's message
	// ("<verb> from <delivered> to <desired>: ..."); "upgrading" when empty.
	MoveVerb string
	// UpgradeHold is a Kubernetes upgrade of the subject's Cluster that the BeforeClusterUpgrade
	// hook holds until the subject's objects are Ready, held since UpgradeHold.Since. Once it has
	// lasted longer than Grace the subject is Degraded with its reason and message (naming the
	// first object that is not healthy, and ending with its Hint), whatever else makes it
	// Degraded, unless its input is invalid: a hold is never retried away by itself.
	UpgradeHold *Problem
}

// Result holds the computed conditions and when to look again.
type Result struct {
	Available, Progressing, Degraded, Ready metav1.Condition
	// Stalled and Reconciling are the kstatus conditions derived from the others.
	Stalled, Reconciling metav1.Condition
	// Unhealthy are the new records of unhealthy objects, to store in the subject's status.
	Unhealthy []csv1.UnhealthyObject
	// Healthy is true when every object is Ready at the expected revision and nothing is awaited.
	Healthy bool
	// RequeueAfter is when a grace period runs out and the result may change without any watch
	// event; zero when no timer is needed.
	RequeueAfter time.Duration
}

// Compute derives Available, Progressing, Degraded and Ready (and kstatus' Stalled and
// Reconciling from them). Each condition is set by its own function of the facts observe
// gathers: degradedCondition, progressingCondition, availableCondition, alertCondition.
func Compute(in Input) Result {
	f := observe(in)
	r := Result{Unhealthy: f.unhealthy, Healthy: f.healthy, RequeueAfter: f.requeueAfter}
	r.Degraded = degradedCondition(in, f)
	if held, ok := heldUpgradeCondition(in, f); ok {
		r.Degraded = held
	}
	r.Progressing = progressingCondition(in, f, r.Degraded)
	r.Available = availableCondition(in, f, r.Degraded, r.Progressing)
	if alert, ok := alertCondition(in, f, r.Degraded); ok {
		r.Degraded, r.Healthy = alert, false
	}
	r.Ready = ReadyFrom(r.Available, r.Progressing, r.Degraded)
	r.Stalled, r.Reconciling = KstatusFrom(r.Ready, r.Degraded)
	// A condition whose status changes transitions at in.Now (Apply keeps the time of an
	// unchanged status), so the grace periods run on the caller's clock, not the wall clock.
	if !in.Now.IsZero() {
		for _, c := range []*metav1.Condition{&r.Available, &r.Progressing, &r.Degraded, &r.Ready, &r.Stalled, &r.Reconciling} {
			c.LastTransitionTime = metav1.NewTime(in.Now)
		}
	}
	return r
}

// facts is what observe learns from the Flux objects and the grace clocks, before any
// condition is set.
type facts struct {
	// healthy: every object is healthy and nothing is invalid, awaited or held.
	healthy bool
	// unhealthy are the new records of the objects that are not healthy.
	unhealthy []csv1.UnhealthyObject
	// firstUnhealthy is the first object (in the subject's order) that is not healthy.
	firstUnhealthy *ObjectState
	// stalled are the objects Flux gave up on.
	stalled []ObjectState
	// notReadyTooLong is the first object not Ready (or failing through retries) for longer
	// than the grace period, with the failure Flux last reported for it.
	notReadyTooLong *ObjectState
	notReadyFailure string
	// deliveredAtRisk: an object failed (or last failed, through Flux's retries) while applying
	// to the cluster, so what was delivered before may not work as it did.
	deliveredAtRisk bool
	// onlyHeld: the subject waits for a held rollout step and for nothing else.
	onlyHeld bool
	// rolloutTooLong: the subject has been converging for longer than rolloutGrace.
	rolloutTooLong bool
	// rolloutGrace is the grace period the rollout was measured against: Grace, or QueueGrace
	// while the object it waits for is queued.
	rolloutGrace time.Duration
	// uncheckedTooLong: Unchecked has lasted longer than the grace period.
	uncheckedTooLong bool
	// holdTooLong: UpgradeHold has lasted longer than the grace period.
	holdTooLong bool
	// requeueAfter is when the next grace period runs out.
	requeueAfter time.Duration
}

// observe gathers the facts: which objects are unhealthy (their records keep the grace clock
// running through Flux's retries), which are stalled or not Ready for too long, and whether the
// rollout has been under way for too long.
func observe(in Input) facts {
	f := facts{healthy: in.Invalid == nil && in.Waiting == nil && in.Held == nil}
	prev := map[string]csv1.UnhealthyObject{}
	for _, u := range in.Unhealthy {
		prev[u.Object] = u
	}
	for i := range in.Objects {
		o := in.Objects[i]
		rec, wasUnhealthy := prev[o.Ref()]
		if wasUnhealthy && rec.Since.Time.Before(in.DesiredSince) {
			// Recorded while another version was desired: unhealthy still until Flux reports it
			// Ready, but its clock and its failure were that version's.
			rec = csv1.UnhealthyObject{Object: rec.Object, Component: rec.Component, Since: metav1.NewTime(in.DesiredSince)}
		}
		// A retry of a failed object looks like a routine reconcile (Ready Unknown at the
		// expected revision): it is still unhealthy until Flux reports it Ready again.
		if o.Healthy() && (!wasUnhealthy || !o.routineReconcile()) {
			continue
		}
		rec = unhealthyRecord(o, rec, wasUnhealthy, in.Now)
		if rec.Since.Time.Before(in.DesiredSince) {
			rec.Since = metav1.NewTime(in.DesiredSince) // failing since before: its grace starts again
		}
		f.unhealthy = append(f.unhealthy, rec)
		f.healthy = false
		if rec.LastFailure != "" && !LeavesDeliveredState(rec.LastFailureReason) {
			f.deliveredAtRisk = true
		}
		if f.firstUnhealthy == nil {
			f.firstUnhealthy = &in.Objects[i]
		}
		if o.Stalled {
			f.stalled = append(f.stalled, o)
			continue
		}
		if o.Exists && (o.Ready == metav1.ConditionFalse || rec.LastFailure != "") && f.notReadyTooLong == nil {
			if left := in.Grace - in.Now.Sub(rec.Since.Time); left <= 0 {
				f.notReadyTooLong = &in.Objects[i]
				f.notReadyFailure = rec.LastFailure
			} else {
				f.requeueAfter = minPositive(f.requeueAfter, left)
			}
		}
	}
	sort.Slice(f.unhealthy, func(i, j int) bool { return f.unhealthy[i].Object < f.unhealthy[j].Object })

	f.onlyHeld = in.Held != nil && in.Waiting == nil && f.firstUnhealthy == nil
	if !f.healthy && in.Invalid == nil && len(f.stalled) == 0 && !f.onlyHeld {
		start, grace := rolloutClock(in, f.firstUnhealthy)
		f.rolloutGrace = grace
		if left := grace - in.Now.Sub(start); left <= 0 {
			f.rolloutTooLong = true
		} else {
			f.requeueAfter = minPositive(f.requeueAfter, left)
		}
	}
	if in.Unchecked != nil {
		if left := in.Grace - in.Now.Sub(in.Unchecked.Since); left <= 0 {
			f.uncheckedTooLong = true
		} else {
			f.requeueAfter = minPositive(f.requeueAfter, left)
		}
	}
	if in.UpgradeHold != nil {
		if left := in.Grace - in.Now.Sub(in.UpgradeHold.Since); left <= 0 {
			f.holdTooLong = true
		} else {
			f.requeueAfter = minPositive(f.requeueAfter, left)
		}
	}
	return f
}

// heldUpgradeCondition is the Degraded condition of an upgrade held for longer than the grace
// period (ok false when there is none, or the input is invalid): what holds it, the first object
// that is not healthy, and what to do.
func heldUpgradeCondition(in Input, f facts) (metav1.Condition, bool) {
	h := in.UpgradeHold
	if h == nil || !f.holdTooLong || in.Invalid != nil {
		return metav1.Condition{}, false
	}
	msg := fmt.Sprintf("%s: %s for more than %s", in.Subject, h.Message, in.Grace)
	if o := f.firstUnhealthy; o != nil {
		msg += ": " + componentPrefix(*o) + o.Describe()
	}
	if h.Hint != "" {
		msg += "; " + h.Hint
	}
	return cond(csv1.DegradedCondition, metav1.ConditionTrue, h.Reason, msg), true
}

// rolloutStart is when the subject stopped being healthy: the start of Progressing, kept
// across reconciles, or of the prerequisite waited for if earlier; a rollout step that began
// later (a hold ended) restarts the clock.
func rolloutStart(in Input) time.Time {
	since := in.Now
	if prev := apimeta.FindStatusCondition(in.Previous, csv1.ProgressingCondition); prev != nil && prev.Status == metav1.ConditionTrue {
		since = prev.LastTransitionTime.Time
	}
	if in.Waiting != nil && !in.Waiting.Since.IsZero() && in.Waiting.Since.Before(since) {
		since = in.Waiting.Since
	}
	return later(later(since, in.StepStarted), in.DesiredSince)
}

// rolloutClock is when the grace period of an unfinished rollout started, and how long it is.
// It is Grace from rolloutStart, unless the rollout waits for an object (first, the first that is
// not healthy, with no prerequisite awaited) that its Flux controller has not picked up yet: then
// QueueGrace (at least Grace) from the later of rolloutStart and the object's creation; or one
// that its controller works on: then Grace from the later of rolloutStart and when the
// controller began (its Ready transition for the current spec); or one not created yet: then
// Grace from the later of rolloutStart and when the last object before it became Ready. A
// thousand Clusters' objects queued behind Flux's workers are not Degraded for the wait; a
// controller that does not run makes them Degraded after QueueGrace; an install or health check
// that hangs, after Grace.
func rolloutClock(in Input, first *ObjectState) (time.Time, time.Duration) {
	start := rolloutStart(in)
	if first == nil || in.Waiting != nil {
		return start, in.Grace
	}
	if first.queued() {
		return later(start, first.Created), max(in.Grace, in.QueueGrace)
	}
	if !first.Exists {
		// Not created yet: the operator creates it once the objects before it are Ready (Flux
		// orders only within a kind), so its clock starts with the last of those.
		for i := range in.Objects {
			o := &in.Objects[i]
			if o == first {
				break
			}
			if o.Healthy() {
				start = later(start, o.ReadySince)
			}
		}
		return start, in.Grace
	}
	return later(start, first.workingSince()), in.Grace
}

// later returns the later of two times.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// degradedCondition is True for invalid input, a stalled object, an object not Ready for longer
// than the grace period, or a rollout (or a prerequisite) that has not converged within it.
func degradedCondition(in Input, f facts) metav1.Condition {
	switch {
	case in.Invalid != nil:
		return cond(csv1.DegradedCondition, metav1.ConditionTrue, in.Invalid.Reason, in.Subject+": "+in.Invalid.Message)
	case len(f.stalled) > 0:
		return cond(csv1.DegradedCondition, metav1.ConditionTrue, csv1.ReasonFluxStalled, in.Subject+": "+describeAll(f.stalled))
	case f.notReadyTooLong != nil:
		o := f.notReadyTooLong
		what := o.Describe()
		if o.Ready != metav1.ConditionFalse && f.notReadyFailure != "" {
			what = fmt.Sprintf("%s: %s (Flux is retrying)", o.Ref(), f.notReadyFailure)
		}
		return cond(csv1.DegradedCondition, metav1.ConditionTrue, csv1.ReasonFluxNotReady,
			fmt.Sprintf("%s: %s (not Ready for more than %s)", in.Subject, componentPrefix(*o)+what, in.Grace))
	case f.rolloutTooLong && in.Waiting != nil:
		return cond(csv1.DegradedCondition, metav1.ConditionTrue, in.Waiting.Reason,
			fmt.Sprintf("%s: %s (for more than %s)", in.Subject, in.Waiting.Message, f.rolloutGrace))
	case f.rolloutTooLong:
		msg := "no Flux objects"
		if f.firstUnhealthy != nil {
			msg = componentPrefix(*f.firstUnhealthy) + f.firstUnhealthy.Describe()
		}
		return cond(csv1.DegradedCondition, metav1.ConditionTrue, csv1.ReasonFluxNotReady,
			fmt.Sprintf("%s: %s (not converged for more than %s)", in.Subject, msg, f.rolloutGrace))
	default:
		return cond(csv1.DegradedCondition, metav1.ConditionFalse, csv1.ReasonAsExpected, in.Subject+": desired state is met or converging")
	}
}

// progressingCondition is True while the subject moves towards the desired state and is able to
// (False once it is there, and while a problem needs a fix first).
func progressingCondition(in Input, f facts, degraded metav1.Condition) metav1.Condition {
	switch {
	case f.healthy:
		return cond(csv1.ProgressingCondition, metav1.ConditionFalse, csv1.ReasonAsExpected, fmt.Sprintf("%s: %s is applied", in.Subject, orDefault(in.Desired, "the desired state")))
	case in.Invalid != nil || len(f.stalled) > 0:
		return cond(csv1.ProgressingCondition, metav1.ConditionFalse, degraded.Reason, in.Subject+": not progressing until the problem is fixed")
	case in.Waiting != nil:
		return cond(csv1.ProgressingCondition, metav1.ConditionTrue, in.Waiting.Reason, in.Subject+": "+in.Waiting.Message)
	case f.onlyHeld:
		return cond(csv1.ProgressingCondition, metav1.ConditionTrue, in.Held.Reason, in.Subject+": "+in.Held.Message)
	}
	reason := csv1.ReasonReconciling
	if o := f.firstUnhealthy; o != nil && o.Exists && o.Current && o.Ready == metav1.ConditionTrue {
		reason = csv1.ReasonRevisionPending
	}
	if in.Delivered != "" && in.Desired != "" && in.Delivered != in.Desired {
		reason = csv1.ReasonUpgrading
	}
	msg := "reconciling"
	if f.firstUnhealthy != nil {
		msg = componentPrefix(*f.firstUnhealthy) + f.firstUnhealthy.Describe()
	}
	if reason == csv1.ReasonUpgrading {
		msg = fmt.Sprintf("%s from %s to %s: %s", orDefault(in.MoveVerb, "upgrading"), in.Delivered, in.Desired, msg)
	}
	return cond(csv1.ProgressingCondition, metav1.ConditionTrue, reason, in.Subject+": "+msg)
}

// availableCondition is True when the desired version works, or while the delivered one still
// does as another rolls out: also when the rollout is Degraded, as long as nothing failed while
// applying to the cluster (a rollout that Flux has not acted on, an artifact it could not fetch,
// a render or build that failed: the delivered state is untouched).
func availableCondition(in Input, f facts, degraded, progressing metav1.Condition) metav1.Condition {
	isDegraded := degraded.Status == metav1.ConditionTrue
	switch {
	case f.healthy:
		return cond(csv1.AvailableCondition, metav1.ConditionTrue, csv1.ReasonAsExpected, fmt.Sprintf("%s: %s is available", in.Subject, orDefault(in.Desired, "the desired state")))
	case in.Unavailable != nil:
		return cond(csv1.AvailableCondition, metav1.ConditionFalse, in.Unavailable.Reason, in.Subject+": "+in.Unavailable.Message)
	case in.Delivered != "" && (!isDegraded || in.AvailabilityObserved || !f.deliveredAtRisk):
		return cond(csv1.AvailableCondition, metav1.ConditionTrue, csv1.ReasonAsExpected, fmt.Sprintf("%s: %s is available", in.Subject, in.Delivered))
	case isDegraded:
		return cond(csv1.AvailableCondition, metav1.ConditionFalse, degraded.Reason, degraded.Message)
	default:
		return cond(csv1.AvailableCondition, metav1.ConditionFalse, progressing.Reason, progressing.Message)
	}
}

// alertCondition is the Degraded condition of an alert, or of a check that has not been made
// for longer than the grace period (problems that leave the delivered state working, so
// Available stays as computed), when nothing degrades the subject already.
func alertCondition(in Input, f facts, degraded metav1.Condition) (metav1.Condition, bool) {
	switch {
	case degraded.Status == metav1.ConditionTrue:
		return metav1.Condition{}, false
	case in.Alert != nil:
		return cond(csv1.DegradedCondition, metav1.ConditionTrue, in.Alert.Reason, in.Subject+": "+in.Alert.Message), true
	case f.uncheckedTooLong:
		return cond(csv1.DegradedCondition, metav1.ConditionTrue, in.Unchecked.Reason,
			fmt.Sprintf("%s: %s (for more than %s)", in.Subject, in.Unchecked.Message, in.Grace)), true
	}
	return metav1.Condition{}, false
}

// ReadyFrom is the kstatus summary: True when Available and neither Progressing nor Degraded.
func ReadyFrom(available, progressing, degraded metav1.Condition) metav1.Condition {
	switch {
	case degraded.Status == metav1.ConditionTrue:
		return cond(csv1.ReadyCondition, metav1.ConditionFalse, degraded.Reason, degraded.Message)
	case progressing.Status == metav1.ConditionTrue:
		return cond(csv1.ReadyCondition, metav1.ConditionFalse, progressing.Reason, progressing.Message)
	case available.Status == metav1.ConditionTrue:
		return cond(csv1.ReadyCondition, metav1.ConditionTrue, available.Reason, available.Message)
	default:
		return cond(csv1.ReadyCondition, metav1.ConditionFalse, available.Reason, available.Message)
	}
}

// KstatusFrom derives kstatus' Stalled and Reconciling conditions: Stalled mirrors Degraded
// (a failure that needs a change, or that outlasted the grace period), Reconciling is True while
// the subject is neither Ready nor Stalled. With them kstatus, `kubectl wait` and Flux health
// checks tell Failed from InProgress from Current.
func KstatusFrom(ready, degraded metav1.Condition) (stalled, reconciling metav1.Condition) {
	stalled = cond(csv1.StalledCondition, degraded.Status, degraded.Reason, degraded.Message)
	switch {
	case degraded.Status == metav1.ConditionTrue:
		reconciling = cond(csv1.ReconcilingCondition, metav1.ConditionFalse, degraded.Reason, degraded.Message)
	case ready.Status == metav1.ConditionTrue:
		reconciling = cond(csv1.ReconcilingCondition, metav1.ConditionFalse, ready.Reason, ready.Message)
	default:
		reconciling = cond(csv1.ReconcilingCondition, metav1.ConditionTrue, ready.Reason, ready.Message)
	}
	return stalled, reconciling
}

// unhealthyRecord updates the record of an unhealthy object: the clock starts when it was first
// seen unhealthy (or when Flux reported it not Ready, if earlier) and keeps running through
// retries; the last failure is what Flux said when it last reported Ready False or Stalled.
func unhealthyRecord(o ObjectState, rec csv1.UnhealthyObject, existed bool, now time.Time) csv1.UnhealthyObject {
	if !existed {
		rec = csv1.UnhealthyObject{Object: o.Ref(), Since: metav1.NewTime(now)}
		if o.Exists && o.Ready == metav1.ConditionFalse && !o.ReadyStale {
			since := o.ReadySince
			if since.IsZero() {
				since = o.Created
			}
			if !since.IsZero() && since.Before(now) {
				rec.Since = metav1.NewTime(since)
			}
		}
	}
	rec.Object, rec.Component = o.Ref(), o.Component
	if o.Exists && (o.Stalled || o.Ready == metav1.ConditionFalse && !o.ReadyStale) && o.Message != "" {
		rec.LastFailure, rec.LastFailureReason = truncate(o.Message, 1024), truncate(o.Reason, 128)
	}
	return rec
}

// untouchedReasons are the reasons of Flux failures that happen before anything is applied to
// the target cluster: fetching or building the artifact, resolving dependencies, values or the
// kubeconfig, validating the spec.
var untouchedReasons = map[string]bool{
	meta.ArtifactFailedReason: true, meta.BuildFailedReason: true, meta.DependencyNotReadyReason: true,
	// helm-controller's reasons for a failure before it runs a Helm action, which it does not
	// export: setting the action up (InitFailed, before v1), the chart's source not ready,
	// composing the values (a ConfigMap or Secret it cannot read), loading or mutating the chart,
	// the client and Helm configuration for the target cluster (kubeconfig).
	"InitFailed":                             true,
	"SourceNotReady":                         true,
	"ValuesError":                            true,
	"ChartMutateError":                       true,
	"RESTClientError":                        true,
	"FactoryError":                           true,
	meta.InvalidPathReason:                   true,
	meta.InvalidURLReason:                    true,
	meta.InvalidCELExpressionReason:          true,
	meta.FeatureGateDisabledReason:           true,
	meta.InsecureConnectionsDisallowedReason: true,
	meta.UnsupportedConnectionTypeReason:     true,
}

// LeavesDeliveredState reports whether a Flux failure with this reason leaves what was applied
// to the cluster before as it was (the failure came before applying anything). Unknown reasons,
// and failures of install, upgrade, health checks, tests, rollback or pruning, do not.
func LeavesDeliveredState(reason string) bool { return untouchedReasons[reason] }

// Apply sets the computed conditions on a condition list, keeping transition times of unchanged
// conditions, and reports whether anything changed.
func Apply(conds *[]metav1.Condition, generation int64, r Result) bool {
	changed := false
	for _, c := range []metav1.Condition{r.Available, r.Progressing, r.Degraded, r.Ready, r.Stalled, r.Reconciling} {
		if c.Type == "" {
			continue
		}
		c.ObservedGeneration = generation
		if SetCondition(conds, c) {
			changed = true
		}
	}
	return changed
}

// SetCondition sets one condition, keeping its transition time when the status is unchanged,
// and reports whether anything changed.
func SetCondition(conds *[]metav1.Condition, c metav1.Condition) bool {
	old := apimeta.FindStatusCondition(*conds, c.Type)
	if old != nil && old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message && old.ObservedGeneration == c.ObservedGeneration {
		return false
	}
	apimeta.SetStatusCondition(conds, c)
	return true
}

func cond(t string, s metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: t, Status: s, Reason: reason, Message: truncate(msg, 2048)}
}

func componentPrefix(o ObjectState) string {
	if o.Component == "" {
		return ""
	}
	return "component " + o.Component + ": "
}

func describeAll(objs []ObjectState) string {
	parts := make([]string, 0, len(objs))
	for _, o := range objs {
		parts = append(parts, componentPrefix(o)+o.Describe())
	}
	return strings.Join(parts, "; ")
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func minPositive(a, b time.Duration) time.Duration {
	if a <= 0 || b < a {
		return b
	}
	return a
}

// JoinLimited joins items with "; ", naming at most n of them and counting the rest ("a; b;
// and 3 more"), for condition messages that list what is failing or waiting.
func JoinLimited(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, "; ")
	}
	return fmt.Sprintf("%s; and %d more", strings.Join(items[:n], "; "), len(items)-n)
}

// Truncate shortens a condition message to the length conditions allow here, on a character boundary.
func Truncate(s string) string { return truncate(s, 2048) }

// truncate shortens s to at most n bytes, never splitting a UTF-8 sequence: a split one would
// be stored as U+FFFD by the API server, and the message would then differ on every reconcile.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
