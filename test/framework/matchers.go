package framework

import (
	"fmt"
	"sort"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/onsi/gomega"
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
// containing every one of parts.
func HaveCondition(t string, s metav1.ConditionStatus, parts ...string) types.GomegaMatcher {
	ms := []types.GomegaMatcher{gomega.HaveField("Status", s)}
	for _, p := range parts {
		ms = append(ms, gomega.HaveField("Message", gomega.ContainSubstring(p)))
	}
	return gomega.WithTransform(func(o Conditioned) *metav1.Condition { return Condition(o, t) },
		gomega.And(gomega.Not(gomega.BeNil()), gomega.And(ms...)))
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
