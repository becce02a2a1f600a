package rollout

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

const (
	old    = "aws-base-1-36-v1"
	target = "aws-base-1-36-v2"
)

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) *time.Time { t := t0.Add(d); return &t }

// cl is a Cluster in wave w (label rollout=w): on old, or on target and Available since at.
func cl(name, w string, onTarget bool, since time.Duration) Cluster {
	c := Cluster{Name: name, Labels: map[string]string{"rollout": w}, Release: old, Applied: old, Available: true, AvailableSince: at(-time.Hour)}
	if onTarget {
		c.Release, c.Applied, c.AvailableSince = target, target, at(since)
	}
	return c
}

func canary(soak time.Duration, max int) Wave {
	return Wave{Name: "canary", Selector: labels.SelectorFromSet(labels.Set{"rollout": "canary"}), Soak: soak, MaxConcurrent: max}
}

func phases(p Plan) string {
	var out []string
	for _, w := range p.Status.Waves {
		out = append(out, w.Name+"="+string(w.Phase))
	}
	return strings.Join(out, " ")
}

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name    string
		facts   Facts
		phases  string
		propose string // "wave:c1,c2"
		requeue time.Duration
		halted  string
	}{
		{name: "start: the canary wave is proposed, the rest waits",
			facts:  Facts{Waves: []Wave{canary(time.Minute, 0)}, Clusters: []Cluster{cl("c1", "canary", false, 0), cl("r1", "rest", false, 0)}},
			phases: "canary=Proposed remaining=Pending", propose: "canary:c1"},
		{name: "merged but not applied yet: rolling, nothing proposed",
			facts: Facts{Waves: []Wave{canary(time.Minute, 0)}, Clusters: []Cluster{cl("c1", "canary", false, 0), cl("r1", "rest", false, 0)},
				PullRequests: map[string][]PullRequest{"canary": {{Number: 1, State: StateMerged, Clusters: []string{"c1"}}}}},
			phases: "canary=Rolling remaining=Pending"},
		{name: "moved but not Available yet: rolling",
			facts: Facts{Waves: []Wave{canary(time.Minute, 0)}, Clusters: []Cluster{
				{Name: "c1", Labels: map[string]string{"rollout": "canary"}, Release: target, Applied: old, Available: true}, cl("r1", "rest", false, 0)}},
			phases: "canary=Rolling remaining=Pending"},
		{name: "soaking: requeued when the soak ends",
			facts:  Facts{Waves: []Wave{canary(time.Minute, 0)}, Clusters: []Cluster{cl("c1", "canary", true, -20*time.Second), cl("r1", "rest", false, 0)}},
			phases: "canary=Soaking remaining=Pending", requeue: 40 * time.Second},
		{name: "soak over: the next wave is proposed",
			facts:  Facts{Waves: []Wave{canary(time.Minute, 0)}, Clusters: []Cluster{cl("c1", "canary", true, -61*time.Second), cl("r1", "rest", false, 0), cl("r2", "", false, 0)}},
			phases: "canary=Done remaining=Proposed", propose: "remaining:r1,r2"},
		{name: "maxConcurrent: batches, the next once the first is Available",
			facts:  Facts{Waves: []Wave{canary(0, 2)}, Clusters: []Cluster{cl("c1", "canary", true, 0), cl("c2", "canary", false, 0), cl("c3", "canary", false, 0), cl("c4", "canary", false, 0)}},
			phases: "canary=Proposed", propose: "canary:c2,c3"},
		{name: "maxConcurrent: no capacity while Clusters are in flight",
			facts: Facts{Waves: []Wave{canary(0, 1)}, Clusters: []Cluster{
				{Name: "c1", Labels: map[string]string{"rollout": "canary"}, Release: target, Applied: old}, cl("c2", "canary", false, 0)}},
			phases: "canary=Rolling"},
		{name: "a Degraded Cluster on the target halts the rollout",
			facts: Facts{Waves: []Wave{canary(0, 0)}, Clusters: []Cluster{
				{Name: "c1", Labels: map[string]string{"rollout": "canary"}, Release: target, Applied: old, Degraded: true, DegradedMessage: "component cni: HelmRelease/c1-cni: install failed"},
				cl("r1", "rest", false, 0)}},
			phases: "canary=Halted remaining=Pending", halted: "c1"},
		{name: "a Cluster Degraded before moving does not halt",
			facts: Facts{Waves: []Wave{canary(0, 0)}, Clusters: []Cluster{
				{Name: "c1", Labels: map[string]string{"rollout": "canary"}, Release: old, Applied: old, Degraded: true}}},
			phases: "canary=Proposed", propose: "canary:c1"},
		{name: "a closed pull request halts the wave, nothing reopened",
			facts: Facts{Waves: []Wave{canary(0, 0)}, Clusters: []Cluster{cl("c1", "canary", false, 0)},
				PullRequests: map[string][]PullRequest{"canary": {{Number: 3, URL: "u3", State: StateClosed}}}},
			phases: "canary=Halted", halted: "-"},
		{name: "no waves: one wave of every Cluster",
			facts:  Facts{Clusters: []Cluster{cl("a", "", false, 0), cl("b", "x", false, 0)}},
			phases: "remaining=Proposed", propose: "remaining:a,b"},
		{name: "an empty wave is Done at once; no remaining wave without Clusters",
			facts:  Facts{Waves: []Wave{canary(time.Hour, 0)}, Clusters: nil},
			phases: "canary=Done"},
		{name: "every Cluster on the target and soaked: all Done",
			facts:  Facts{Waves: []Wave{canary(time.Minute, 0)}, Clusters: []Cluster{cl("c1", "canary", true, -time.Hour), cl("r1", "rest", true, -time.Hour)}},
			phases: "canary=Done remaining=Done"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.facts.Target, tc.facts.Now = target, t0
			p := Decide(tc.facts)
			if got := phases(p); got != tc.phases {
				t.Errorf("phases %q, want %q", got, tc.phases)
			}
			got := ""
			if p.Propose != nil {
				got = p.Propose.Wave + ":" + strings.Join(p.Propose.Clusters, ",")
			}
			if got != tc.propose {
				t.Errorf("propose %q, want %q", got, tc.propose)
			}
			if p.RequeueAfter != tc.requeue {
				t.Errorf("requeue %s, want %s", p.RequeueAfter, tc.requeue)
			}
			switch {
			case tc.halted == "" && p.Halted != nil:
				t.Errorf("halted: %+v", p.Halted)
			case tc.halted != "" && p.Halted == nil:
				t.Errorf("not halted")
			case tc.halted != "" && tc.halted != "-" && p.Halted.Cluster != tc.halted:
				t.Errorf("halted on %q, want %q", p.Halted.Cluster, tc.halted)
			}
			for _, w := range p.Status.Waves {
				if w.Phase == csv1.WaveHalted && !strings.Contains(w.Message, "c1") && !strings.Contains(w.Message, "closed") {
					t.Errorf("halt message %q names neither the cluster nor the pull request", w.Message)
				}
			}
		})
	}
}

// A restart during the soak: the same facts later give the same soak start, and the soak ends
// when it should, neither reset nor skipped.
func TestSoakSurvivesRestart(t *testing.T) {
	f := Facts{Target: target, Waves: []Wave{canary(time.Minute, 0)}, Clusters: []Cluster{cl("c1", "canary", true, -10*time.Second), cl("r1", "rest", false, 0)}, Now: t0}
	first := Decide(f)
	f.Now = t0.Add(30 * time.Second)
	second := Decide(f)
	if !first.Status.Waves[0].SoakingSince.Equal(second.Status.Waves[0].SoakingSince) {
		t.Fatalf("soak start moved: %v -> %v", first.Status.Waves[0].SoakingSince, second.Status.Waves[0].SoakingSince)
	}
	if second.RequeueAfter != 20*time.Second {
		t.Errorf("requeue %s, want 20s", second.RequeueAfter)
	}
	f.Now = t0.Add(50 * time.Second)
	if p := Decide(f); p.Propose == nil || p.Propose.Wave != Remaining {
		t.Errorf("after the soak the next wave is proposed: %+v", p.Propose)
	}
}
