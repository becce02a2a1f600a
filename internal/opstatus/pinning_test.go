package opstatus

import (
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxstatus"
	"github.com/clusterstack-io/clusterstack-operator/internal/opgen"
)

// pinnedRepo are the operator's Flux objects for v1.10.3, the GitRepository pinned to pin and
// having fetched it, the Kustomization having applied it.
func pinnedRepo(op *csv1.ManagementOperator, pin string) Observed {
	obs := observed(op, "v1.10.3", "v1.10.3")
	gr := opgen.GitRepository(op, testNS, "v1.10.3", pin)
	gr.ObjectMeta, gr.Status = obs.GitRepository.ObjectMeta, obs.GitRepository.Status
	gr.Status.Artifact = &meta.Artifact{Revision: "sha1:" + pin}
	obs.GitRepository = gr
	obs.Kustomization.Status.LastAppliedRevision = "sha1:" + pin
	return obs
}

// A version is pinned to the commit Flux first fetched at its tag (status.history[].commit); a
// tag moved or deleted since is reported (TagVerified False, Degraded, reason TagMoved, both
// commits named) while the pinned commit keeps being delivered (Available); followMovedTags
// follows the tag instead; a move back to a version reuses its pinned commit.
func TestPinning(t *testing.T) {
	delivered := func(mut ...func(*csv1.ManagementOperator)) *csv1.ManagementOperator {
		return operator("v1.10.3", "v1.10.3", "v1.10.3", append([]func(*csv1.ManagementOperator){func(op *csv1.ManagementOperator) {
			op.Status.History = []csv1.OperatorHistoryEntry{completed("v1.10.3", -48*time.Hour, -47*time.Hour)}
			op.Status.History[0].Commit = commit("v1.10.3")
		}}, mut...)...)
	}
	moved := commit("elsewhere")
	tests := []struct {
		name       string
		op         *csv1.ManagementOperator
		obs        func(op *csv1.ManagementOperator) Observed
		tags       map[string]string
		tagsErr    *fluxstatus.Problem
		wantCommit string                   // status.history[0].commit
		wantTag    c                        // TagVerified
		wantDeg    string                   // Degraded's reason
		wantMsg    []string                 // in TagVerified's message
		check      func(*testing.T, Result) // more
	}{
		{
			name: "the first fetch of the tag is recorded, and pins the version",
			op:   delivered(func(op *csv1.ManagementOperator) { op.Status.History[0].Commit = "" }),
			obs:  func(op *csv1.ManagementOperator) Observed { return observed(op, "v1.10.3", "v1.10.3") },
			tags: tagCommits("v1.10.3"), wantCommit: commit("v1.10.3"),
			wantTag: c{"True", "AsExpected", ""}, wantDeg: "AsExpected", wantMsg: []string{"points at commit " + commit("v1.10.3")},
		},
		{
			name: "the tag moved: reported with both commits, Degraded, the pinned commit still delivered",
			op:   delivered(),
			obs:  func(op *csv1.ManagementOperator) Observed { return pinnedRepo(op, commit("v1.10.3")) },
			tags: map[string]string{"v1.10.3": moved}, wantCommit: commit("v1.10.3"),
			wantTag: c{"False", "TagMoved", ""}, wantDeg: "TagMoved",
			wantMsg: []string{"tag v1.10.3 moved from commit " + commit("v1.10.3"), "to " + moved, "spec.followMovedTags"},
			check: func(t *testing.T, r Result) {
				if c := apimeta.FindStatusCondition(r.Conditions, csv1.AvailableCondition); c.Status != metav1.ConditionTrue {
					t.Errorf("Available = %s: the pinned commit keeps serving", c.Status)
				}
			},
		},
		{
			name: "the tag was deleted",
			op:   delivered(),
			obs:  func(op *csv1.ManagementOperator) Observed { return pinnedRepo(op, commit("v1.10.3")) },
			tags: map[string]string{}, wantCommit: commit("v1.10.3"),
			wantTag: c{"False", "TagMoved", ""}, wantDeg: "TagMoved", wantMsg: []string{"no longer exists"},
		},
		{
			name: "a GitRepository that fetched a moved tag before the pin was applied does not change the pin",
			op:   delivered(),
			obs: func(op *csv1.ManagementOperator) Observed {
				obs := observed(op, "v1.10.3", "v1.10.3")
				obs.GitRepository.Status.Artifact.Revision = "v1.10.3@sha1:" + moved
				return obs
			},
			tags: map[string]string{"v1.10.3": moved}, wantCommit: commit("v1.10.3"),
			wantTag: c{"False", "TagMoved", ""}, wantDeg: "TagMoved",
		},
		{
			name: "followMovedTags: the commit follows what Flux fetched, nothing is reported",
			op:   delivered(func(op *csv1.ManagementOperator) { op.Spec.FollowMovedTags = true }),
			obs: func(op *csv1.ManagementOperator) Observed {
				obs := observed(op, "v1.10.3", "v1.10.3")
				obs.GitRepository.Status.Artifact.Revision = "v1.10.3@sha1:" + moved
				return obs
			},
			tags: map[string]string{"v1.10.3": moved}, wantCommit: moved,
			wantTag: c{"True", "AsExpected", ""}, wantMsg: []string{"follows its tag"},
		},
		{
			name: "a move back to a version delivered before is pinned to its commit from the start",
			op: delivered(func(op *csv1.ManagementOperator) {
				op.Spec.Version, op.Status.Versions[0].Version, op.Status.DesiredVersion = "v1.10.2", "v1.10.4", "v1.10.4"
				h := completed("v1.10.4", -2*time.Hour, -time.Hour)
				h.Commit = commit("v1.10.4")
				older := completed("v1.10.2", -72*time.Hour, -71*time.Hour)
				older.Commit = commit("v1.10.2")
				op.Status.History = []csv1.OperatorHistoryEntry{h, older}
			}),
			obs:  func(op *csv1.ManagementOperator) Observed { return observed(op, "v1.10.4", "v1.10.4") },
			tags: map[string]string{"v1.10.2": moved, "v1.10.4": commit("v1.10.4")}, wantCommit: commit("v1.10.2"),
			wantTag: c{"False", "TagMoved", ""}, wantDeg: "TagMoved",
		},
		{
			name:       "the tags cannot be listed: Unknown with the listing's reason, nothing Degraded by it",
			op:         delivered(),
			obs:        func(op *csv1.ManagementOperator) Observed { return pinnedRepo(op, commit("v1.10.3")) },
			tagsErr:    &fluxstatus.Problem{Reason: csv1.ReasonTagListTooLarge, Message: "https://git.example.com/operators.git advertises more than 16777216 bytes"},
			wantCommit: commit("v1.10.3"), wantTag: c{"Unknown", "TagListTooLarge", ""}, wantDeg: "AsExpected",
			wantMsg: []string{"cannot check where tag v1.10.3 points", "16777216 bytes"},
		},
		{
			name:       "tags with build metadata beyond the status' bound are counted, never listed",
			op:         delivered(),
			obs:        func(op *csv1.ManagementOperator) Observed { return pinnedRepo(op, commit("v1.10.3")) },
			tags:       tagCommits("v1.10.3", "v1.10.4", "v1.10.5+"+strings.Repeat("b", 200), "v1.11.0-"+strings.Repeat("r", 60), "latest"),
			wantCommit: commit("v1.10.3"), wantTag: c{"True", "AsExpected", ""}, wantDeg: "AsExpected",
			wantMsg: []string{`3 tag(s) with the tag prefix "" are not versions of at most 64 characters`},
			check: func(t *testing.T, r Result) {
				if len(r.AvailableUpdates) != 1 || r.AvailableUpdates[0] != "v1.10.4" {
					t.Errorf("availableUpdates = %v, want [v1.10.4]", r.AvailableUpdates)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(tt.op, nil)
			r := Compute(Input{Operator: tt.op, Namespace: testNS, Decision: d,
				Objects:     States(tt.op, d.Target, PinnedCommit(tt.op, d.Target), tt.obs(tt.op)),
				Deployments: []Deployment{dep("capi-manager", "v1.10.3")}, RequiredBy: required,
				Tags: tt.tags, TagsError: tt.tagsErr, Now: t0, Grace: grace})
			if len(r.History) == 0 || r.History[0].Commit != tt.wantCommit {
				t.Errorf("history = %+v, want the first entry's commit %s", r.History, tt.wantCommit)
			}
			tv := apimeta.FindStatusCondition(r.Conditions, csv1.TagVerifiedCondition)
			if tv == nil || string(tv.Status) != tt.wantTag.Status || tv.Reason != tt.wantTag.Reason {
				t.Fatalf("TagVerified = %+v, want %s/%s", tv, tt.wantTag.Status, tt.wantTag.Reason)
			}
			for _, m := range tt.wantMsg {
				if !strings.Contains(tv.Message, m) {
					t.Errorf("TagVerified message %q does not contain %q", tv.Message, m)
				}
			}
			if tt.wantDeg != "" {
				if deg := apimeta.FindStatusCondition(r.Conditions, csv1.DegradedCondition); deg.Reason != tt.wantDeg {
					t.Errorf("Degraded = %s/%s %q, want reason %s", deg.Status, deg.Reason, deg.Message, tt.wantDeg)
				}
			}
			if tt.check != nil {
				tt.check(t, r)
			}
			checkInvariants(t, r)
			for _, u := range r.AvailableUpdates {
				if len(u) > csv1.MaxVersionLength {
					t.Errorf("availableUpdates holds %q, longer than the API allows", u)
				}
			}
		})
	}
}

// A pinned version's objects are judged at the pinned commit: a pinned GitRepository's
// "sha1:<commit>" and the tag's revision at that commit are both at it; the tag at another
// commit is not.
func TestStatesOfAPinnedVersion(t *testing.T) {
	op := operator("v1.10.3", "v1.10.3", "v1.10.3")
	pin := commit("v1.10.3")
	for _, tt := range []struct {
		rev  string
		want bool
	}{
		{"sha1:" + pin, true},
		{"v1.10.3@sha1:" + pin, true},
		{"v1.10.3@sha1:" + commit("elsewhere"), false},
	} {
		obs := pinnedRepo(op, pin)
		obs.GitRepository.Status.Artifact.Revision = tt.rev
		obs.Kustomization.Status.LastAppliedRevision = tt.rev
		for _, s := range States(op, "v1.10.3", pin, obs) {
			if s.AtRevision() != tt.want {
				t.Errorf("%s at %s: AtRevision = %v, want %v (%s)", s.Ref(), tt.rev, s.AtRevision(), tt.want, s.Describe())
			}
		}
	}
}

// A source moved from Git to an OCI registry at the same version: the Git commit recorded for
// the version does not pin the OCIRepository (it is not a sha256 digest); the digest Flux
// fetches is recorded in its place, and pins from then on.
func TestPinAfterMovingToAnOCISource(t *testing.T) {
	gitPin := strings.Repeat("a", 40)
	digest := strings.Repeat("b", 64)
	op := operator("v1.10.3", "v1.10.3", "v1.10.3", func(op *csv1.ManagementOperator) {
		op.Spec.Source = csv1.OperatorSource{OCI: &csv1.OperatorOCISource{OCISource: csv1.OCISource{URL: "oci://registry.example.com/capi"}}}
		op.Status.History = []csv1.OperatorHistoryEntry{{Version: "v1.10.3", State: csv1.UpdateCompleted, Commit: gitPin}}
	})
	if got := PinnedCommit(op, "v1.10.3"); got != "" {
		t.Fatalf("PinnedCommit = %q; a Git commit does not pin an OCIRepository", got)
	}
	d := Decision{Target: "v1.10.3", Apply: true}
	if h := history(op, d, "", t0); h[0].Commit != gitPin {
		t.Errorf("before Flux fetched the tag the entry is left as it is, got %q", h[0].Commit)
	}
	h := history(op, d, digest, t0)
	if h[0].Commit != digest {
		t.Fatalf("history commit = %q, want the fetched digest %s", h[0].Commit, digest)
	}
	op.Status.History = h
	if got := PinnedCommit(op, "v1.10.3"); got != digest {
		t.Errorf("PinnedCommit = %q, want %s", got, digest)
	}
	// A Git source keeps its pin.
	op.Spec.Source = csv1.OperatorSource{Git: &csv1.OperatorGitSource{URL: "https://git.example.com/operators.git"}}
	op.Status.History[0].Commit = gitPin
	if got := PinnedCommit(op, "v1.10.3"); got != gitPin {
		t.Errorf("Git: PinnedCommit = %q, want %s", got, gitPin)
	}
}
