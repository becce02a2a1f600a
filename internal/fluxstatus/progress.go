package fluxstatus

import (
	"reflect"
	"slices"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// ProgressOnly is true when a ClusterAddon's status going from cur (as stored) to next only
// reports progress within a rollout: next is Progressing and not Degraded, and what differs
// from cur is detail a person reads while waiting: the conditions' reasons and messages, which
// components are Ready and what they wait for, the progress summary, objects no longer
// unhealthy, objects not Ready yet without a failure, and addon stages still under way. Such a
// write may wait a moment and be merged with the ones after it. Every other change may not: a
// condition's status, a delivered release, a new generation, another desired release or set of
// components, a stage done or skipped (the upgrade hooks answer from it), a failure Flux reported
// (its message is what Degraded names later), anything Degraded or no longer Progressing.
//
// A ClusterAddon whose status was never written (no conditions) counts as progressing already:
// its first status may wait too, as long as it delivers nothing yet.
func ProgressOnly(cur, next *csv1.ClusterAddonStatus) bool {
	if !isTrue(next.Conditions, csv1.ProgressingCondition) || isTrue(next.Conditions, csv1.DegradedCondition) {
		return false
	}
	if !stagesUnderWay(cur.Stages, next.Stages) || !failuresKnown(cur.Unhealthy, next.Unhealthy) {
		return false
	}
	if len(cur.Conditions) == 0 {
		return next.LastAppliedRelease == "" && !isTrue(next.Conditions, csv1.AvailableCondition)
	}
	return sameConditionStatuses(cur.Conditions, next.Conditions) &&
		reflect.DeepEqual(withoutProgressDetail(cur), withoutProgressDetail(next))
}

func isTrue(conds []metav1.Condition, t string) bool {
	return apimeta.IsStatusConditionTrue(conds, t)
}

// sameConditionStatuses is true when a and b hold the same condition types with the same status.
func sameConditionStatuses(a, b []metav1.Condition) bool {
	return SameConditions(a, b, func(x, y *metav1.Condition) bool { return x.Status == y.Status })
}

// SameConditions is true when a and b hold the same condition types and same holds for the two
// conditions of each type.
func SameConditions(a, b []metav1.Condition, same func(x, y *metav1.Condition) bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		o := apimeta.FindStatusCondition(b, a[i].Type)
		if o == nil || !same(&a[i], o) {
			return false
		}
	}
	return true
}

// stagesUnderWay is true when no stage of next is done (Ready) or skipped that was not already
// in cur.
func stagesUnderWay(cur, next []csv1.AddonStageStatus) bool {
	for _, n := range next {
		if !n.Ready && !n.Skipped {
			continue
		}
		i := slices.IndexFunc(cur, func(c csv1.AddonStageStatus) bool { return c.Name == n.Name && c.Release == n.Release })
		if i < 0 || cur[i].Ready != n.Ready || cur[i].Skipped != n.Skipped {
			return false
		}
	}
	return true
}

// failuresKnown is true when every unhealthy object of next is recorded as in cur, or is new and
// not failed (not Ready yet): a new failure, or a record whose grace clock or failure changed,
// is no mere progress.
func failuresKnown(cur, next []csv1.UnhealthyObject) bool {
	for _, n := range next {
		i := slices.IndexFunc(cur, func(c csv1.UnhealthyObject) bool { return c.Object == n.Object })
		if i < 0 {
			if n.LastFailure != "" || n.LastFailureReason != "" {
				return false
			}
			continue
		}
		if !reflect.DeepEqual(cur[i], n) {
			return false
		}
	}
	return true
}

// withoutProgressDetail is s without what ProgressOnly lets change or checks apart: the
// conditions (compared by status), the components' readiness, messages and waits, the progress
// summary, the stages and the unhealthy objects.
func withoutProgressDetail(s *csv1.ClusterAddonStatus) csv1.ClusterAddonStatus {
	out := *s
	out.Conditions, out.Progress, out.Stages, out.Unhealthy = nil, "", nil, nil
	out.Components = make([]csv1.AddonComponentStatus, len(s.Components))
	for i, c := range s.Components {
		c.Ready, c.Message, c.WaitingFor = false, "", ""
		out.Components[i] = c
	}
	return out
}
