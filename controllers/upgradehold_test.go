package controllers

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/stageplan"
)

// skipHint is how every message that holds the upgrade of Cluster a/c1 ends.
const skipHint = "to let the upgrade through without waiting, set annotation clusterstack.io/skip-before-upgrade-gate on the Cluster (kubectl annotate cluster -n a c1 clusterstack.io/skip-before-upgrade-gate=)"

// validated makes r a validated release of Kubernetes kube with components cni and ccm, cni
// applied before the upgrade when before.
func validated(r csv1.ClusterStackRelease, kube string, before bool) *csv1.ClusterStackRelease {
	r.Spec.KubernetesVersion = strings.Join(strings.Split(strings.TrimPrefix(kube, "v"), ".")[:2], ".")
	r.Status.KubernetesVersion = kube
	r.Status.Conditions = []metav1.Condition{{Type: csv1.StackValidCondition, Status: metav1.ConditionTrue, Reason: csv1.ReasonAsExpected}}
	r.Status.Components = []csv1.ReleaseComponent{{Name: "cni", Kind: csv1.ComponentKindHelm}, {Name: "ccm", Kind: csv1.ComponentKindHelm}}
	if before {
		r.Status.Stages = []csv1.ReleaseStage{{Name: csv1.StageBeforeClusterUpgrade, Steps: []csv1.ReleaseStageStep{{Component: "cni", Action: csv1.StageActionApply}}}}
	}
	return &r
}

// TestCycleGate: releases requiring an operator in disjoint ranges are a cycle, named with both
// releases, the operator and the ranges; overlapping ranges, or no release the addons are at,
// are none.
func TestCycleGate(t *testing.T) {
	from := validated(relWith("a", "aws-base-1-36-v1", csv1.StackRequirement{Operator: "cluster-api", Versions: "<1.11.0"}), "v1.36.3", false)
	to := validated(relWith("a", "aws-base-1-37-v1", csv1.StackRequirement{Operator: "cluster-api", Versions: ">=1.11.0"}), "v1.37.2", true)
	g := cycleGate(to, from)
	if g == nil || g.Status != metav1.ConditionFalse || g.Reason != csv1.ReasonRequirementsConflict || g.Type != csv1.ReleaseReadyCondition {
		t.Fatalf("disjoint ranges: %+v, want ReleaseReady False RequirementsConflict", g)
	}
	for _, want := range []string{"a requirements cycle", "release aws-base-1-36-v1 requires cluster-api <1.11.0 and release aws-base-1-37-v1 requires cluster-api >=1.11.0: no version of cluster-api satisfies both", "overrideStackRequirements"} {
		if !strings.Contains(g.Message, want) {
			t.Errorf("message %q lacks %q", g.Message, want)
		}
	}
	overlap := validated(relWith("a", "aws-base-1-37-v2", csv1.StackRequirement{Operator: "cluster-api", Versions: ">=1.10.0"}), "v1.37.2", true)
	if g := cycleGate(overlap, from); g != nil {
		t.Errorf("overlapping ranges: %+v", g)
	}
	if g := cycleGate(to, nil); g != nil {
		t.Errorf("no release the addons are at: %+v", g)
	}
}

// TestUpgradeHeldHint: a ClusterAddon waiting for a release names the skip annotation exactly
// when the hook holds the Cluster's Kubernetes upgrade meanwhile.
func TestUpgradeHeldHint(t *testing.T) {
	c := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "c1"}}
	from := validated(relWith("a", "aws-base-1-36-v1"), "v1.36.3", true)
	notValidated := relWith("a", "aws-base-1-37-v1")
	notValidated.Spec.KubernetesVersion = "1.37"
	for _, tc := range []struct {
		name     string
		rel      *csv1.ClusterStackRelease
		from     *csv1.ClusterStackRelease
		wantHint bool
	}{
		{"an upgrade to a release with BeforeClusterUpgrade steps", validated(relWith("a", "aws-base-1-37-v1"), "v1.37.2", true), from, true},
		{"an upgrade to a release without", validated(relWith("a", "aws-base-1-37-v1"), "v1.37.2", false), from, false},
		{"a release of the same Kubernetes version", validated(relWith("a", "aws-base-1-36-v2"), "v1.36.3", true), from, false},
		{"an upgrade to a release not validated yet", &notValidated, from, true},
		{"a new Cluster", validated(relWith("a", "aws-base-1-37-v1"), "v1.37.2", true), nil, false},
	} {
		got := upgradeHeldHint(tc.rel, tc.from, c)
		if tc.wantHint != (got == "; meanwhile the BeforeClusterUpgrade hook holds the Kubernetes upgrade of the Cluster to release "+tc.rel.Name+": "+skipHint) || (!tc.wantHint && got != "") {
			t.Errorf("%s: %q, want the hint: %v", tc.name, got, tc.wantHint)
		}
	}
}

// TestUpgradeHold: the hold the judge gets is the BeforeClusterUpgrade stage of the target that
// is not Ready while the control plane is behind and the gate not skipped, since the stage last
// changed, naming the components and ending with the skip hint.
func TestUpgradeHold(t *testing.T) {
	since := metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	s := &addonScope{cluster: &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "c1"}},
		plan: &stageplan.Plan{Target: "aws-base-1-37-v1", KubernetesVersion: "v1.37.2", ControlPlaneBehind: true}}
	stage := csv1.AddonStageStatus{Name: csv1.StageBeforeClusterUpgrade, Release: "aws-base-1-37-v1", Components: []string{"cni"}, Applied: true, LastTransitionTime: since}
	h := upgradeHold(s, []csv1.AddonStageStatus{stage})
	if h == nil || h.Reason != csv1.ReasonUpgradeHeld || !h.Since.Equal(since.Time) || h.Hint != skipHint ||
		h.Message != "the BeforeClusterUpgrade hook holds the upgrade of Cluster c1 to v1.37.2 (release aws-base-1-37-v1) until its BeforeClusterUpgrade components (cni) are Ready; it has held it" {
		t.Errorf("held: %+v", h)
	}
	ready := stage
	ready.Ready = true
	otherRelease := stage
	otherRelease.Release = "aws-base-1-37-v0"
	for name, tc := range map[string]struct {
		mut    func(*stageplan.Plan)
		stages []csv1.AddonStageStatus
	}{
		"the stage is Ready":                {nil, []csv1.AddonStageStatus{ready}},
		"a stage of another release":        {nil, []csv1.AddonStageStatus{otherRelease}},
		"the control plane runs it":         {func(p *stageplan.Plan) { p.ControlPlaneBehind = false }, []csv1.AddonStageStatus{stage}},
		"the gate is skipped":               {func(p *stageplan.Plan) { p.Skip = true }, []csv1.AddonStageStatus{stage}},
		"no BeforeClusterUpgrade stage yet": {nil, nil},
	} {
		s := *s
		p := *s.plan
		if tc.mut != nil {
			tc.mut(&p)
		}
		s.plan = &p
		if h := upgradeHold(&s, tc.stages); h != nil {
			t.Errorf("%s: held %+v", name, h)
		}
	}
}
