package plugin

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

func TestBuildUpdates(t *testing.T) {
	found := metav1.NewTime(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	withUpdates := clusterStack("aws-base-1-36", func(cs *csv1.ClusterStack) {
		cs.Status.AvailableUpdates = []csv1.StackUpdate{{Release: "aws-base-1-36-v2", Version: "v2", DiscoveredAt: &found}}
		cs.Status.ConditionalUpdates = []csv1.ConditionalUpdate{{StackUpdate: csv1.StackUpdate{Release: "aws-base-1-36-v3", Version: "v3"},
			Risks: []csv1.UpdateRisk{{Type: csv1.RiskMinimumAgeNotReached, Message: "tag first seen 1m ago; an update from 2026-11-22T10:15:00Z"}}}}
		cs.Status.Rollout = &csv1.RolloutStatus{Target: "aws-base-1-36-v2", Waves: []csv1.WaveStatus{
			{Name: "canary", Phase: csv1.WaveDone, Clusters: []string{"one"}, Updated: 1, PullRequest: &csv1.PullRequestRef{Number: 1, URL: "http://forge/fleet/pulls/1", State: "merged"}},
			{Name: "second", Phase: csv1.WaveProposed, PullRequest: &csv1.PullRequestRef{Number: 2, URL: "http://forge/fleet/pulls/2", State: "open"},
				Message: "pull request #2 open: http://forge/fleet/pulls/2"},
			{Name: "remaining", Phase: csv1.WavePending, Clusters: []string{"two", "three"}, Message: "waiting for wave canary"},
		}}
		cs.Status.Conditions = with(cs.Status.Conditions, cond(csv1.UpdatesProposedCondition, "True", csv1.ReasonProposed, "pull request #1 open"))
	})
	other := clusterStack("other")
	other.Namespace = "team-b"
	addons := []csv1.ClusterAddon{
		addon("two", "aws-base-1-36-v1", func(a *csv1.ClusterAddon) { a.Status.AvailableUpgrades = []string{"aws-base-1-36-v2"} }),
		addon("one", "aws-base-1-36-v1"),
		addon("elsewhere", "aws-base-1-36-v1", func(a *csv1.ClusterAddon) { a.Namespace = "team-b" }),
	}
	got := BuildUpdates([]csv1.ClusterStack{withUpdates, other}, addons)
	want := Updates{Stacks: []StackUpdates{
		{
			Namespace: ns, Name: "aws-base-1-36", AvailableVersion: "v1",
			AvailableUpdates: withUpdates.Status.AvailableUpdates, ConditionalUpdates: withUpdates.Status.ConditionalUpdates, Rollout: withUpdates.Status.Rollout,
			UpdatesProposed: &Condition{Type: csv1.UpdatesProposedCondition, Status: "True", Reason: csv1.ReasonProposed, Message: "pull request #1 open"},
			Clusters: []ClusterUpgrades{
				{Name: "one", Release: "aws-base-1-36-v1", AvailableUpgrades: []string{}},
				{Name: "two", Release: "aws-base-1-36-v1", AvailableUpgrades: []string{"aws-base-1-36-v2"}},
			},
		},
		{Namespace: "team-b", Name: "other", AvailableVersion: "v1", AvailableUpdates: []csv1.StackUpdate{}, ConditionalUpdates: []csv1.ConditionalUpdate{}, Clusters: []ClusterUpgrades{}},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("BuildUpdates (-want +got):\n%s", diff)
	}

	var b strings.Builder
	if err := WriteUpdates(&b, got, Style{}); err != nil {
		t.Fatal(err)
	}
	wantText := `ClusterStack team-a/aws-base-1-36  available v1
  Available updates:
    aws-base-1-36-v2  v2  discovered 2026-11-22T10:00:00Z
  Conditional updates:
    aws-base-1-36-v3  v3
      MinimumAgeNotReached: tag first seen 1m ago; an update from 2026-11-22T10:15:00Z
  Rollout of aws-base-1-36-v2:
    canary     Done      1/1 updated  pull request #1 http://forge/fleet/pulls/1 (merged)
    second     Proposed  0/0 updated  pull request #2 open: http://forge/fleet/pulls/2
    remaining  Pending   0/2 updated  waiting for wave canary
  Clusters:
    one  at aws-base-1-36-v1  no upgrade available
    two  at aws-base-1-36-v1  may move to aws-base-1-36-v2

ClusterStack team-b/other  available v1
  Available updates: none
`
	if diff := cmp.Diff(wantText, b.String()); diff != "" {
		t.Errorf("WriteUpdates (-want +got):\n%s", diff)
	}
}
