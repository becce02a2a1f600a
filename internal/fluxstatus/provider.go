package fluxstatus

import (
	"fmt"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// Condition types of controllers that report ClusterOperator-style conditions rather than
// kstatus' (the OpenStack Resource Controller among them).
const (
	availableType   = "Available"
	progressingType = "Progressing"
)

// FromProviderObject reads an object a release's cluster-class created besides its ClusterClass
// and templates (a provider's object: the machine image of an OpenStack stack, say) by its own
// status: kstatus (sigs.k8s.io/cli-utils), which reads Ready, Reconciling and Stalled and the
// status.observedGeneration, and the Available and Progressing conditions of controllers that
// report those (the OpenStack Resource Controller does): Available True and not Progressing is
// ready, Available False and no longer Progressing has failed. An object whose status says
// nothing is ready, as kstatus has it.
func FromProviderObject(u *unstructured.Unstructured) ObjectState {
	s := ObjectState{
		Kind:    u.GetKind(),
		Name:    u.GetName(),
		Exists:  true,
		Created: u.GetCreationTimestamp().Time,
		Ready:   metav1.ConditionUnknown,
		Current: true,
		// No revision to compare: the object is healthy when it is ready at its generation.
		Revision: fmt.Sprintf("generation %d", u.GetGeneration()),
	}
	conds := ConditionsOf(u)
	res, err := kstatus.Compute(u)
	if err != nil {
		s.Message = fmt.Sprintf("cannot read its status: %v", err)
		return s
	}
	available := apimeta.FindStatusCondition(conds, availableType)
	progressing := apimeta.FindStatusCondition(conds, progressingType)
	since := func(cs ...*metav1.Condition) time.Time {
		for _, c := range cs {
			if c != nil && !c.LastTransitionTime.IsZero() {
				return c.LastTransitionTime.Time
			}
		}
		return s.Created
	}
	ready := apimeta.FindStatusCondition(conds, "Ready")
	switch {
	case res.Status == kstatus.FailedStatus:
		s.Ready, s.Stalled, s.Reason, s.Message = metav1.ConditionFalse, true, "Failed", res.Message
		s.ReadySince = since(apimeta.FindStatusCondition(conds, "Stalled"), ready, available)
	case available != nil && available.Status == metav1.ConditionFalse && progressing != nil && progressing.Status == metav1.ConditionFalse:
		// Not available and no longer working on it: a terminal failure.
		s.Ready, s.Stalled, s.Reason, s.Message = metav1.ConditionFalse, true, available.Reason, available.Message
		s.ReadySince = since(available)
	case res.Status == kstatus.CurrentStatus && (available == nil || available.Status == metav1.ConditionTrue) &&
		(progressing == nil || progressing.Status != metav1.ConditionTrue):
		s.Ready, s.Reason, s.Message = metav1.ConditionTrue, "Ready", res.Message
		s.ReadySince = since(ready, available)
	default:
		s.Ready, s.Reason, s.Message = metav1.ConditionFalse, "InProgress", res.Message
		if progressing != nil && progressing.Message != "" {
			s.Message = progressing.Message
		}
		s.Reconciling = true
		s.ReadySince = since(ready, available, progressing)
	}
	s.Message = elideObjects(s.Message)
	return s
}

// ConditionsOf reads an unstructured object's status.conditions as metav1.Conditions; entries
// that do not convert are left out.
func ConditionsOf(u *unstructured.Unstructured) []metav1.Condition {
	raw, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	out := make([]metav1.Condition, 0, len(raw))
	for _, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		var c metav1.Condition
		if runtime.DefaultUnstructuredConverter.FromUnstructured(m, &c) == nil {
			out = append(out, c)
		}
	}
	return out
}
