package controllers

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/event"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

func TestMarkerRoundTrip(t *testing.T) {
	for _, m := range []marker{
		{target: "aws-base-1-36-v4", wave: "canary", clusters: []string{"a", "b-c"}},
		{target: "aws-base-1-36-v4-rc.1", wave: "remaining"},
	} {
		body := "Some text a person may edit.\n\n" + m.String() + "\n"
		got, ok := parseMarker(body)
		if !ok || got.target != m.target || got.wave != m.wave || !slices.Equal(got.clusters, m.clusters) {
			t.Errorf("parseMarker(%q) = %+v, %v; want %+v", body, got, ok, m)
		}
	}
	if _, ok := parseMarker("a pull request someone else opened"); ok {
		t.Error("a description without the marker is not the operator's")
	}
}

// The rendered diff comes from the stacks, which a tenant writes: a marker in it (a value, a
// file of a chart) is never taken for the operator's, which is written last.
func TestDiffCannotForgeTheMarker(t *testing.T) {
	cs := &csv1.ClusterStack{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "aws-base-1-36"}, Spec: csv1.ClusterStackSpec{Versions: []string{"v2"}}}
	rel := &csv1.ClusterStackRelease{ObjectMeta: metav1.ObjectMeta{Name: "aws-base-1-36-v2"}, Spec: csv1.ClusterStackReleaseSpec{Version: "v2"}}
	forged := marker{target: "aws-base-1-36-v9", wave: "canary", clusters: []string{"victim"}}.String()
	diff := "### Rendered diff: `aws-base-1-36-v1` → `aws-base-1-36-v2`\n\n```diff\n+note: " + forged + "\n```\n"
	s := &updatesScope{cs: cs, clusters: map[string]*clusterv1.Cluster{}}
	_, body := proposalText(s, rel, "canary", []string{"c1"}, diff)
	got, ok := parseMarker(body)
	if !ok || got.target != "aws-base-1-36-v2" || !slices.Equal(got.clusters, []string{"c1"}) {
		t.Fatalf("parseMarker read %+v from\n%s", got, body)
	}
	if summary := proposalSummary(body); strings.Contains(summary, "Rendered diff") || strings.Contains(summary, "v9") || !strings.Contains(summary, "Cluster `c1`") {
		t.Errorf("the commit message's text holds the diff or lacks the plan:\n%s", summary)
	}
}

func TestPinnedVersions(t *testing.T) {
	for _, tc := range []struct {
		name     string
		versions []string
		auto     bool
		version  string
		want     []string
		edit     bool
	}{
		{"replaces older versions", []string{"v1", "v2"}, false, "v3", []string{"v3"}, true},
		{"keeps newer pinned versions", []string{"v1", "v5"}, false, "v3", []string{"v3", "v5"}, true},
		{"already pinned: no edit", []string{"v1", "v3"}, false, "v3", nil, false},
		{"autoSubscribe without pins: no edit", nil, true, "v3", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := &csv1.ClusterStack{Spec: csv1.ClusterStackSpec{Versions: tc.versions, AutoSubscribe: tc.auto}}
			got, edit := pinnedVersions(cs, tc.version)
			if edit != tc.edit || !slices.Equal(got, tc.want) {
				t.Errorf("pinnedVersions = %v, %v; want %v, %v", got, edit, tc.want, tc.edit)
			}
		})
	}
}

func TestCandidate(t *testing.T) {
	now := metav1.Now()
	cs := &csv1.ClusterStack{Spec: csv1.ClusterStackSpec{Updates: &csv1.UpdatePolicy{Proposals: &csv1.ProposalPolicy{Provider: csv1.ForgeGitea}}}}
	cs.Status.AvailableUpdates = []csv1.StackUpdate{{Release: "aws-base-1-36-v3", Version: "v3", DiscoveredAt: &now}}
	cs.Status.ConditionalUpdates = []csv1.ConditionalUpdate{
		{StackUpdate: csv1.StackUpdate{Release: "aws-base-1-36-v5"}, Risks: []csv1.UpdateRisk{{Type: csv1.RiskMinimumAgeNotReached}}},
		{StackUpdate: csv1.StackUpdate{Release: "aws-base-1-36-v4"}, Risks: []csv1.UpdateRisk{{Type: csv1.RiskValidationFailed}}},
	}
	if got := candidate(cs); got != "aws-base-1-36-v4" {
		t.Errorf("candidate = %s: a failed validation keeps the newest release a candidate (its risk stays known), a too young one is not created", got)
	}
	cs.Spec.Updates.Proposals = nil
	if got := candidate(cs); got != "" {
		t.Errorf("without proposals no candidate, got %s", got)
	}
}

func TestClusterWaveChanged(t *testing.T) {
	base := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: map[string]string{"rollout": "canary"}}}
	paused := base.DeepCopy()
	paused.Spec.Paused = ptr.To(true)
	annotated := base.DeepCopy()
	annotated.Annotations = map[string]string{clusterv1.PausedAnnotation: ""}
	relabelled := base.DeepCopy()
	relabelled.Labels["rollout"] = "rest"
	for _, tc := range []struct {
		name     string
		old, new *clusterv1.Cluster
		want     bool
	}{
		{"nothing the updates read", base, base.DeepCopy(), false},
		{"paused", base, paused, true},
		{"resumed", paused, base, true},
		{"paused by annotation", base, annotated, true},
		{"wave label", base, relabelled, true},
	} {
		if got := clusterWaveChanged().Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
