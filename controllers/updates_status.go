package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// writeStatus records the updates, the rollout and the UpdatesProposed condition.
func (r *ClusterStackUpdatesReconciler) writeStatus(ctx context.Context, s *updatesScope) (ctrl.Result, error) {
	return ctrl.Result{}, updateStatusEmit(ctx, r.writer, r.Recorder, s.cs, func(cs *csv1.ClusterStack) (bool, []statusEvent) {
		var events []statusEvent
		cs.Status.AvailableUpdates = s.upd.Available
		cs.Status.ConditionalUpdates = s.upd.Conditional
		cs.Status.Hold = s.hold
		var prev *csv1.RolloutStatus
		if cs.Status.Rollout != nil {
			prev = cs.Status.Rollout.DeepCopy()
		}
		switch {
		case s.plan != nil:
			st := s.plan.Status
			cs.Status.Rollout = &st
			events = waveEvents(prev, &st)
		case proposals(cs) != nil && (s.forgeBusy || s.cond.Status == metav1.ConditionFalse):
			// Keep the last known rollout while the forge or the fleet cannot be read.
		default:
			cs.Status.Rollout = nil
		}
		if proposals(cs) == nil {
			apimeta.RemoveStatusCondition(&cs.Status.Conditions, csv1.UpdatesProposedCondition)
			return true, events
		}
		c := s.cond
		if !s.forgeBusy || c.ObservedGeneration == 0 {
			c.ObservedGeneration = cs.Generation
		}
		apimeta.SetStatusCondition(&cs.Status.Conditions, c)
		return true, events
	})
}

// waveEvents returns one Event per wave whose phase changed.
func waveEvents(prev, cur *csv1.RolloutStatus) []statusEvent {
	old := map[string]csv1.WavePhase{}
	if prev != nil && prev.Target == cur.Target {
		for _, w := range prev.Waves {
			old[w.Name] = w.Phase
		}
	}
	var out []statusEvent
	for _, w := range cur.Waves {
		if old[w.Name] == w.Phase || (prev == nil && w.Phase == csv1.WavePending) {
			continue
		}
		e := normalEvent("Wave"+string(w.Phase), fmt.Sprintf("wave %s of the rollout of %s is %s: %s", w.Name, cur.Target, w.Phase, w.Message))
		if w.Phase == csv1.WaveHalted {
			e.eventType = corev1.EventTypeWarning
		}
		out = append(out, e)
	}
	return out
}
