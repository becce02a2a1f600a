package controllers

import (
	"context"
	"errors"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxstatus"
	"github.com/clusterstack-io/clusterstack-operator/internal/opstatus"
)

// rolloutStarted is when the rollout of version began (the start of its newest history entry,
// plus a second: a Condition's time keeps whole seconds), zero when it has none.
func rolloutStarted(op *csv1.ManagementOperator, version string) time.Time {
	for _, h := range op.Status.History {
		if h.Version == version {
			return h.StartedTime.Add(time.Second)
		}
	}
	return time.Time{}
}

// writeStatus computes the status and writes it when it changed; Events follow a successful write.
func (r *ManagementOperatorReconciler) writeStatus(ctx context.Context, s *opScope) (ctrl.Result, error) {
	var res opstatus.Result
	repin := false
	generation, now := s.op.Generation, r.Options.now()
	err := updateStatusEmit(ctx, r.writer, r.Recorder, s.op, func(op *csv1.ManagementOperator) (bool, []statusEvent) {
		// The status is computed from the object as re-read here, not as read at the start of
		// the reconcile: the cache may not have had this process's last status write yet, and a
		// status computed from the one before would take back what that write recorded (a
		// delivered version, a completed history entry). A changed spec is the next reconcile's.
		d := opstatus.Decide(op, s.inUse)
		if op.Generation != generation || d.Target != s.decision.Target || d.Apply != s.decision.Apply {
			return false, nil
		}
		res = opstatus.Compute(opstatus.Input{
			Operator:    op,
			Namespace:   r.Namespace,
			Decision:    d,
			Objects:     s.objects,
			Deployments: s.deployments,
			RequiredBy:  s.requiredBy,
			Tags:        s.tags,
			IgnoredTags: s.ignoredTags,
			TagsError:   s.tagsErr,
			Now:         now,
			Grace:       r.Options.Grace,
			QueueGrace:  r.Options.QueueGrace,
		})
		events := transitionEvents(op.Status.Conditions, fluxstatus.Result{
			Available: findCondition(res.Conditions, csv1.AvailableCondition),
			Degraded:  findCondition(res.Conditions, csv1.DegradedCondition),
		})
		res.ApplyTo(&op.Status, op.Generation)
		// The first fetch of the tag was recorded: pin the GitRepository to it now.
		repin = d.Apply && opstatus.PinnedCommit(op, d.Target) != s.pinned
		return true, events
	})
	if errors.Is(err, errStaleStatus) {
		return ctrl.Result{RequeueAfter: time.Second}, nil // the watch brings the newer object too
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	after := res.RequeueAfter
	if (s.op.Spec.Source.Git != nil || s.op.Spec.Source.OCI != nil) && r.Tags != nil {
		after = minNonZero(after, tagInterval(s.op))
	}
	if repin {
		after = minNonZero(after, time.Second)
	}
	return ctrl.Result{RequeueAfter: after}, nil
}

func findCondition(conds []metav1.Condition, t string) metav1.Condition {
	if c := apimeta.FindStatusCondition(conds, t); c != nil {
		return *c
	}
	return metav1.Condition{Type: t, Status: metav1.ConditionUnknown}
}

func minNonZero(a, b time.Duration) time.Duration {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}
