package controllers

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxstatus"
)

// StatusOptions configure the status aggregation.
type StatusOptions struct {
	// Grace is how long a Flux object may be not Ready, or a rollout unfinished, before the
	// subject is Degraded.
	Grace time.Duration
	// QueueGrace is how long an object a rollout waits for may wait for its Flux controller to
	// pick up its current spec before the subject is Degraded (at least Grace; see
	// fluxstatus.Input.QueueGrace).
	QueueGrace time.Duration
	// ProgressInterval is how long a ClusterAddon status write that only reports progress may
	// be held, so that the states passed through within it cost one write (progressPacer), and
	// how often a roll-up's counts alone are rewritten (rollupPacer.countsOnly); 0 writes every
	// change at once.
	ProgressInterval time.Duration
	// Now returns the current time (a clock for tests).
	Now func() time.Time
}

func (o StatusOptions) now() time.Time { return clockFunc(o.Now).Now() }

// atWrittenGeneration makes cached, the cache's copy of an object this reconcile wrote, no
// older than that write: when the cache has not seen it yet, cached is at the generation the
// write made (written's, see Applier.Apply), which its status (Flux's) has not observed.
func atWrittenGeneration(cached, written client.Object) {
	if cached.GetGeneration() < written.GetGeneration() {
		cached.SetGeneration(written.GetGeneration())
	}
}

// problemIfFalse turns a fact condition that is False into a Problem for the status aggregation;
// nil when the condition is absent or not False.
func problemIfFalse(conds []metav1.Condition, t string) *fluxstatus.Problem {
	c := apimeta.FindStatusCondition(conds, t)
	if c == nil || c.Status != metav1.ConditionFalse {
		return nil
	}
	return &fluxstatus.Problem{Reason: c.Reason, Message: c.Message, Since: c.LastTransitionTime.Time}
}

// transitionEvents are the Events of a subject whose Available or Degraded condition changes
// status from prev to res: on transitions only, never on every reconcile. Degraded True and a
// lost Available are Warnings.
func transitionEvents(prev []metav1.Condition, res fluxstatus.Result) []statusEvent {
	var out []statusEvent
	for _, c := range []metav1.Condition{res.Available, res.Degraded} {
		old := apimeta.FindStatusCondition(prev, c.Type)
		if old != nil && old.Status == c.Status {
			continue
		}
		if old == nil && c.Status == metav1.ConditionFalse {
			// "Not degraded" at birth is no news, nor "not available yet" while the first delivery
			// runs: an Event per new Cluster would be one more API write each for a fleet of thousands.
			continue
		}
		e := normalEvent(c.Type+string(c.Status), c.Message)
		if (c.Type == csv1.DegradedCondition && c.Status == metav1.ConditionTrue) || (c.Type == csv1.AvailableCondition && c.Status == metav1.ConditionFalse && old != nil) {
			e.eventType = corev1.EventTypeWarning
		}
		out = append(out, e)
	}
	return out
}
