package framework

import (
	"fmt"
	"sort"
	"strings"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/onsi/gomega/types"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
)

// Conditioned is an object with status conditions: every kind of this operator and Flux's.
type Conditioned interface{ GetConditions() []metav1.Condition }

// Condition returns o's condition of type t, or nil.
func Condition(o Conditioned, t string) *metav1.Condition {
	return apimeta.FindStatusCondition(o.GetConditions(), t)
}

// ConditionMessage is "reason: message" of the condition of type t in conds, for failure
// messages; "no <t> condition" when there is none.
func ConditionMessage(conds []metav1.Condition, t string) string {
	if c := apimeta.FindStatusCondition(conds, t); c != nil {
		return c.Reason + ": " + c.Message
	}
	return "no " + t + " condition"
}

// HaveCondition matches an object (Conditioned) whose condition t has status s and a message
// containing every one of parts. Its failure message names the object's conditions (type, status,
// reason, message), so that a failure in CI says what the object reported instead.
func HaveCondition(t string, s metav1.ConditionStatus, parts ...string) types.GomegaMatcher {
	return &conditionMatcher{t: t, s: s, parts: parts}
}

type conditionMatcher struct {
	t     string
	s     metav1.ConditionStatus
	parts []string
}

func (m *conditionMatcher) Match(actual any) (bool, error) {
	o, ok := actual.(Conditioned)
	if !ok {
		return false, fmt.Errorf("HaveCondition expects an object with conditions, got %T", actual)
	}
	c := Condition(o, m.t)
	if c == nil || c.Status != m.s {
		return false, nil
	}
	for _, p := range m.parts {
		if !strings.Contains(c.Message, p) {
			return false, nil
		}
	}
	return true, nil
}

func (m *conditionMatcher) FailureMessage(actual any) string {
	return "Expected " + m.want() + ", got:\n" + describeConditions(actual)
}

func (m *conditionMatcher) NegatedFailureMessage(actual any) string {
	return "Expected no " + m.want() + ", got:\n" + describeConditions(actual)
}

func (m *conditionMatcher) want() string {
	w := fmt.Sprintf("condition %s=%s", m.t, m.s)
	if len(m.parts) > 0 {
		w += fmt.Sprintf(" with a message containing %q", m.parts)
	}
	return w
}

// describeConditions is a line per condition of actual (an object with conditions), with its
// name when it has one.
func describeConditions(actual any) string {
	o, ok := actual.(Conditioned)
	if !ok {
		return fmt.Sprintf("    %T without conditions", actual)
	}
	var b strings.Builder
	if n, ok := actual.(interface {
		GetNamespace() string
		GetName() string
	}); ok {
		fmt.Fprintf(&b, "    %T %s/%s\n", actual, n.GetNamespace(), n.GetName())
	}
	if len(o.GetConditions()) == 0 {
		b.WriteString("    no conditions\n")
	}
	for _, c := range o.GetConditions() {
		fmt.Fprintf(&b, "    %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	return b.String()
}

// HelmRevision is the Helm release revision helm-controller last recorded for hr (its
// history's latest snapshot), 0 before the first. A revision that did not move over something
// that changed nothing of the chart's is the proof that nothing was reinstalled.
func HelmRevision(hr *helmv2.HelmRelease) int {
	if latest := hr.Status.History.Latest(); latest != nil {
		return latest.Version
	}
	return 0
}

// LostUIDs compares the UIDs of delivered objects seen before with those seen now (both by a
// key naming the object) and names each that is gone or was removed and created again (a new
// UID), sorted. Objects new in now are not reported.
func LostUIDs(before, now map[string]k8stypes.UID) []string {
	var lost []string
	for k, uid := range before {
		switch got, ok := now[k]; {
		case !ok:
			lost = append(lost, k+" is gone")
		case got != uid:
			lost = append(lost, fmt.Sprintf("%s was removed and created again (UID %s, was %s)", k, got, uid))
		}
	}
	sort.Strings(lost)
	return lost
}
