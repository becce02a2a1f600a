package rollout

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/window"
)

const (
	old    = "aws-base-1-36-v1"
	target = "aws-base-1-36-v2"
)

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) *time.Time { t := t0.Add(d); return &t }

// onOld is a Cluster of wave w (label rollout=w) running the old release.
func onOld(name, w string) Cluster {
	return Cluster{Name: name, Labels: map[string]string{"rollout": w}, Release: old, Applied: old, Available: true, AvailableSince: at(-24 * time.Hour)}
}

// onTarget is a Cluster of wave w Available on the target since t0+since.
func onTarget(name, w string, since time.Duration) Cluster {
	c := onOld(name, w)
	c.Release, c.Applied, c.AvailableSince = target, target, at(since)
	return c
}

// moving is a Cluster of the canary wave whose topology uses the target while its addons are
// still the old release's.
func moving(name string) Cluster {
	c := onOld(name, "canary")
	c.Release = target
	return c
}

func wave(name string, soak time.Duration, maxConcurrent int) Wave {
	return Wave{Name: name, Selector: labels.SelectorFromSet(labels.Set{"rollout": name}), Soak: soak, MaxConcurrent: maxConcurrent}
}

func pr(number int64, state string, clusters ...string) PullRequest {
	return PullRequest{Number: number, URL: fmt.Sprintf("https://forge/pulls/%d", number), Title: "Update to " + target,
		Branch: "clusterstack/ns/stack/w", State: state, Target: target, Clusters: clusters}
}

// outcome is a Plan in short.
type outcome struct {
	phases   string            // "canary=Proposed remaining=Pending"
	propose  string            // "canary:c1,c2"
	requeue  time.Duration     //
	halt     *Halt             //
	messages map[string]string // wave -> message, for the waves named
	open     string            // OpenPullRequest
}

func summarize(p Plan) (phases, propose string) {
	var out []string
	for _, w := range p.Status.Waves {
		out = append(out, w.Name+"="+string(w.Phase))
	}
	if p.Propose != nil {
		propose = p.Propose.Wave + ":" + strings.Join(p.Propose.Clusters, ",")
	}
	return strings.Join(out, " "), propose
}

func check(t *testing.T, p Plan, want outcome) {
	t.Helper()
	phases, propose := summarize(p)
	if phases != want.phases {
		t.Errorf("phases %q, want %q", phases, want.phases)
	}
	if propose != want.propose {
		t.Errorf("propose %q, want %q", propose, want.propose)
	}
	if p.RequeueAfter != want.requeue {
		t.Errorf("requeue %s, want %s", p.RequeueAfter, want.requeue)
	}
	if !reflect.DeepEqual(p.Halted, want.halt) {
		t.Errorf("halted %+v, want %+v", p.Halted, want.halt)
	}
	if p.Halted != nil && p.Propose != nil {
		t.Errorf("halted and proposing %+v", p.Propose)
	}
	for _, w := range p.Status.Waves {
		if m, ok := want.messages[w.Name]; ok && w.Message != m {
			t.Errorf("wave %s message %q, want %q", w.Name, w.Message, m)
		}
	}
	if p.Status.OpenPullRequest != want.open {
		t.Errorf("openPullRequest %q, want %q", p.Status.OpenPullRequest, want.open)
	}
	if p.Status.Target != target {
		t.Errorf("target %q", p.Status.Target)
	}
}

func TestDecide(t *testing.T) {
	canary := wave("canary", time.Minute, 0)
	for _, tc := range []struct {
		name  string
		facts Facts
		want  outcome
	}{
		{name: "start: the canary wave is proposed, the rest waits",
			facts: Facts{Waves: []Wave{canary}, Clusters: []Cluster{onOld("r1", "rest"), onOld("c1", "canary")}},
			want: outcome{phases: "canary=Proposed remaining=Pending", propose: "canary:c1",
				messages: map[string]string{"canary": "pull request to be opened to move c1", "remaining": "waits for wave canary"}}},
		{name: "the canary's pull request is open",
			facts: Facts{Waves: []Wave{canary}, Clusters: []Cluster{onOld("c1", "canary"), onOld("r1", "rest")},
				PullRequests: map[string][]PullRequest{"canary": {pr(1, StateOpen, "c1")}}},
			want: outcome{phases: "canary=Proposed remaining=Pending", propose: "canary:c1", open: "https://forge/pulls/1",
				messages: map[string]string{"canary": "pull request #1 open to move c1"}}},
		{name: "merged but not applied yet: rolling, nothing proposed",
			facts: Facts{Waves: []Wave{canary}, Clusters: []Cluster{onOld("c1", "canary"), onOld("r1", "rest")},
				PullRequests: map[string][]PullRequest{"canary": {pr(1, StateMerged, "c1")}}},
			want: outcome{phases: "canary=Rolling remaining=Pending",
				messages: map[string]string{"canary": "0 of 1 Clusters Available on " + target + "; waiting for c1"}}},
		{name: "moved but its addons not applied yet: rolling",
			facts: Facts{Waves: []Wave{canary}, Clusters: []Cluster{moving("c1"), onOld("r1", "rest")},
				PullRequests: map[string][]PullRequest{"canary": {pr(1, StateMerged, "c1")}}},
			want: outcome{phases: "canary=Rolling remaining=Pending"}},
		{name: "applied but not Available yet: rolling",
			facts: Facts{Waves: []Wave{canary}, Clusters: []Cluster{
				{Name: "c1", Labels: map[string]string{"rollout": "canary"}, Release: target, Applied: target}, onOld("r1", "rest")}},
			want: outcome{phases: "canary=Rolling remaining=Pending"}},
		{name: "soaking from the last Cluster to become Available; requeued when the soak ends",
			facts: Facts{Waves: []Wave{canary}, Clusters: []Cluster{onTarget("c1", "canary", -50*time.Second), onTarget("c2", "canary", -20*time.Second), onOld("r1", "rest")}},
			want: outcome{phases: "canary=Soaking remaining=Pending", requeue: 40 * time.Second,
				messages: map[string]string{"canary": "2 of 2 Clusters Available on " + target + "; soaking 1m until 2026-11-23T12:00:40Z"}}},
		{name: "soak over: the next wave is proposed",
			facts: Facts{Waves: []Wave{canary}, Clusters: []Cluster{onTarget("c1", "canary", -61*time.Second), onOld("r2", ""), onOld("r1", "rest")}},
			want: outcome{phases: "canary=Done remaining=Proposed", propose: "remaining:r1,r2",
				messages: map[string]string{"canary": "1 of 1 Clusters Available on " + target + ", soaked 1m"}}},
		{name: "soak of 0: Done as soon as every Cluster is Available",
			facts: Facts{Waves: []Wave{wave("canary", 0, 0)}, Clusters: []Cluster{onTarget("c1", "canary", 0), onOld("r1", "rest")}},
			want:  outcome{phases: "canary=Done remaining=Proposed", propose: "remaining:r1"}},
		{name: "the soak never starts from a guess: unknown Available time, no requeue",
			facts: Facts{Waves: []Wave{canary}, Clusters: []Cluster{
				{Name: "c1", Labels: map[string]string{"rollout": "canary"}, Release: target, Applied: target, Available: true}, onOld("r1", "rest")}},
			want: outcome{phases: "canary=Soaking remaining=Pending", messages: map[string]string{
				"canary": "every Cluster Available on " + target + "; the soak of 1m cannot start: when Cluster c1 became Available is unknown"}}},
		{name: "maxConcurrent: the next batch once the first is Available",
			facts: Facts{Waves: []Wave{wave("canary", 0, 2)}, Clusters: []Cluster{onTarget("c1", "canary", 0), onOld("c4", "canary"), onOld("c3", "canary"), onOld("c2", "canary")},
				PullRequests: map[string][]PullRequest{"canary": {pr(1, StateMerged, "c1")}}},
			want: outcome{phases: "canary=Proposed", propose: "canary:c2,c3"}},
		{name: "maxConcurrent: only the capacity left beside Clusters in flight",
			facts: Facts{Waves: []Wave{wave("canary", 0, 3)}, Clusters: []Cluster{moving("c1"), onOld("c2", "canary"), onOld("c3", "canary"), onOld("c4", "canary")}},
			want:  outcome{phases: "canary=Proposed", propose: "canary:c2,c3"}},
		{name: "maxConcurrent: no capacity while Clusters are in flight",
			facts: Facts{Waves: []Wave{wave("canary", 0, 1)}, Clusters: []Cluster{moving("c1"), onOld("c2", "canary")}},
			want:  outcome{phases: "canary=Rolling", messages: map[string]string{"canary": "0 of 2 Clusters Available on " + target + "; waiting for c1, c2"}}},
		{name: "maxConcurrent: the merged batch not applied yet is not proposed again",
			facts: Facts{Waves: []Wave{wave("canary", 0, 2)}, Clusters: []Cluster{onTarget("c1", "canary", 0), onOld("c2", "canary"), onOld("c3", "canary")},
				PullRequests: map[string][]PullRequest{"canary": {pr(1, StateMerged, "c1"), pr(2, StateMerged, "c2", "c3")}}},
			want: outcome{phases: "canary=Rolling"}},
		{name: "waiting names at most three Clusters",
			facts: Facts{Waves: []Wave{wave("canary", 0, 0)}, Clusters: []Cluster{onOld("c5", "canary"), onOld("c4", "canary"), moving("c3"), onOld("c2", "canary"), onOld("c1", "canary")},
				PullRequests: map[string][]PullRequest{"canary": {pr(1, StateMerged, "c1", "c2", "c4", "c5")}}},
			want: outcome{phases: "canary=Rolling",
				messages: map[string]string{"canary": "0 of 5 Clusters Available on " + target + "; waiting for c1, c2, c3 and 2 more"}}},
		{name: "a Degraded Cluster on the target halts the rollout",
			facts: Facts{Waves: []Wave{wave("canary", 0, 0)}, Clusters: []Cluster{
				onTarget("c0", "canary", 0),
				{Name: "c1", Labels: map[string]string{"rollout": "canary"}, Release: target, Applied: target, Degraded: true, DegradedMessage: "component cni: HelmRelease c1-cni: install failed"},
				onOld("c2", "canary"), onOld("r1", "rest")}},
			want: outcome{phases: "canary=Halted remaining=Pending",
				halt:     &Halt{Wave: "canary", Cluster: "c1", Message: "Cluster c1 is Degraded on " + target + ": component cni: HelmRelease c1-cni: install failed"},
				messages: map[string]string{"remaining": "waits for wave canary"}}},
		{name: "a Cluster of a Done wave Degraded later halts the rollout",
			facts: Facts{Waves: []Wave{wave("canary", 0, 0)}, Clusters: []Cluster{
				{Name: "c1", Labels: map[string]string{"rollout": "canary"}, Release: target, Applied: target, Available: true, Degraded: true}, onTarget("r1", "rest", 0)}},
			want: outcome{phases: "canary=Halted remaining=Pending",
				halt: &Halt{Wave: "canary", Cluster: "c1", Message: "Cluster c1 is Degraded on " + target + ": (no message)"}}},
		{name: "a Cluster Degraded before moving does not halt",
			facts: Facts{Waves: []Wave{wave("canary", 0, 0)}, Clusters: []Cluster{
				{Name: "c1", Labels: map[string]string{"rollout": "canary"}, Release: old, Applied: old, Degraded: true}}},
			want: outcome{phases: "canary=Proposed", propose: "canary:c1"}},
		{name: "a closed pull request halts the wave, nothing reopened",
			facts: Facts{Waves: []Wave{wave("canary", 0, 0)}, Clusters: []Cluster{onOld("c1", "canary")},
				PullRequests: map[string][]PullRequest{"canary": {pr(3, StateClosed, "c1"), pr(2, StateMerged)}}},
			want: outcome{phases: "canary=Halted", halt: &Halt{Wave: "canary",
				Message: "pull request https://forge/pulls/3 was closed without merging: nothing more is proposed for " + target + " in this wave"}}},
		{name: "a closed pull request does not matter once every Cluster moved",
			facts: Facts{Waves: []Wave{wave("canary", 0, 0)}, Clusters: []Cluster{moving("c1")},
				PullRequests: map[string][]PullRequest{"canary": {pr(3, StateClosed, "c1")}}},
			want: outcome{phases: "canary=Rolling"}},
		{name: "pull requests are ordered by number; those for another target are ignored",
			facts: Facts{Waves: []Wave{wave("canary", 0, 0)}, Clusters: []Cluster{onOld("c1", "canary")},
				PullRequests: map[string][]PullRequest{"canary": {pr(1, StateClosed, "c1"), {Number: 9, State: StateOpen, Target: "aws-base-1-36-v3"}, pr(2, StateOpen, "c1")}}},
			want: outcome{phases: "canary=Proposed", propose: "canary:c1", open: "https://forge/pulls/2"}},
		{name: "no waves: one wave, remaining, of every Cluster",
			facts: Facts{Clusters: []Cluster{onOld("b", "x"), onOld("a", "")}},
			want:  outcome{phases: "remaining=Proposed", propose: "remaining:a,b"}},
		{name: "no waves and no Clusters: nothing to do",
			facts: Facts{},
			want:  outcome{phases: "remaining=Done", messages: map[string]string{"remaining": "no Clusters in this wave"}}},
		{name: "an empty wave is Done at once, without soaking; no remaining wave without Clusters",
			facts: Facts{Waves: []Wave{wave("canary", time.Hour, 0), wave("prod", 0, 0)}, Clusters: []Cluster{onOld("p1", "prod")}},
			want:  outcome{phases: "canary=Done prod=Proposed", propose: "prod:p1"}},
		{name: "a Cluster belongs to the first wave that selects it",
			facts: Facts{Waves: []Wave{{Name: "first", Selector: labels.SelectorFromSet(labels.Set{"rollout": "canary"})}, wave("canary", 0, 0)},
				Clusters: []Cluster{onOld("c1", "canary")}},
			want: outcome{phases: "first=Proposed canary=Pending", propose: "first:c1", messages: map[string]string{"canary": "waits for wave first"}}},
		{name: "every Cluster already on the target and soaked: all Done",
			facts: Facts{Waves: []Wave{canary}, Clusters: []Cluster{onTarget("c1", "canary", -time.Hour), onTarget("r1", "rest", -time.Hour)}},
			want:  outcome{phases: "canary=Done remaining=Done"}},
		{name: "some Clusters already on the target: only the others are proposed",
			facts: Facts{Waves: []Wave{wave("canary", 0, 0)}, Clusters: []Cluster{onTarget("c1", "canary", -time.Hour), onOld("c2", "canary")}},
			want:  outcome{phases: "canary=Proposed", propose: "canary:c2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.facts.Target, tc.facts.Now = target, t0
			check(t, Decide(tc.facts), tc.want)
		})
	}
}

// TestWaveStatus checks the fields beside the phase: sorted Clusters, updated, the newest pull
// request and the soak start.
func TestWaveStatus(t *testing.T) {
	p := Decide(Facts{Target: target, Now: t0, Waves: []Wave{wave("canary", time.Hour, 0)},
		Clusters: []Cluster{onTarget("c2", "canary", -10*time.Minute), onTarget("c1", "canary", -5*time.Minute), onOld("r1", "rest")},
		PullRequests: map[string][]PullRequest{"canary": {pr(1, StateMerged, "c1", "c2")},
			Remaining: {{Number: 4, URL: "u4", State: StateOpen, Target: target}}}})
	if len(p.Status.Waves) != 2 {
		t.Fatalf("waves %+v", p.Status.Waves)
	}
	c := p.Status.Waves[0]
	if !reflect.DeepEqual(c.Clusters, []string{"c1", "c2"}) || c.Updated != 2 {
		t.Errorf("canary clusters %v updated %d", c.Clusters, c.Updated)
	}
	if c.PullRequest == nil || *c.PullRequest != (csv1.PullRequestRef{Number: 1, URL: "https://forge/pulls/1", Title: "Update to " + target, Branch: "clusterstack/ns/stack/w", State: StateMerged}) {
		t.Errorf("canary pull request %+v", c.PullRequest)
	}
	if c.SoakingSince == nil || !c.SoakingSince.Time.Equal(t0.Add(-5*time.Minute)) {
		t.Errorf("soakingSince %v, want %v", c.SoakingSince, t0.Add(-5*time.Minute))
	}
	if p.RequeueAfter != 55*time.Minute {
		t.Errorf("requeue %s", p.RequeueAfter)
	}
	r := p.Status.Waves[1]
	if r.Phase != csv1.WavePending || r.Updated != 0 || r.SoakingSince != nil || r.PullRequest == nil || r.PullRequest.Number != 4 {
		t.Errorf("remaining %+v", r)
	}
	if p.Status.OpenPullRequest != "u4" {
		t.Errorf("openPullRequest %q: an open pull request is reported whatever its wave's phase", p.Status.OpenPullRequest)
	}
}

// TestRollout walks a rollout from the first proposal to the end: canary, soak, next wave.
func TestRollout(t *testing.T) {
	waves := []Wave{wave("canary", 10*time.Minute, 0)}
	canaryPR, restPR := pr(1, StateOpen, "c1"), pr(2, StateOpen, "r1", "r2")
	canaryPR.URL, restPR.URL = "pr-canary", "pr-rest"
	for _, step := range []struct {
		name     string
		now      time.Duration
		clusters []Cluster
		prs      map[string][]PullRequest
		want     outcome
	}{
		{"nothing proposed yet", 0, []Cluster{onOld("c1", "canary"), onOld("r1", "rest"), onOld("r2", "rest")}, nil,
			outcome{phases: "canary=Proposed remaining=Pending", propose: "canary:c1"}},
		{"the canary's pull request is open", time.Minute, []Cluster{onOld("c1", "canary"), onOld("r1", "rest"), onOld("r2", "rest")},
			map[string][]PullRequest{"canary": {canaryPR}},
			outcome{phases: "canary=Proposed remaining=Pending", propose: "canary:c1", open: "pr-canary"}},
		{"merged; Flux has not applied it", 2 * time.Minute, []Cluster{onOld("c1", "canary"), onOld("r1", "rest"), onOld("r2", "rest")},
			map[string][]PullRequest{"canary": {merged(canaryPR)}},
			outcome{phases: "canary=Rolling remaining=Pending"}},
		{"applied: the canary moves", 3 * time.Minute, []Cluster{moving("c1"), onOld("r1", "rest"), onOld("r2", "rest")},
			map[string][]PullRequest{"canary": {merged(canaryPR)}},
			outcome{phases: "canary=Rolling remaining=Pending"}},
		{"the canary is Available: soaking", 5 * time.Minute, []Cluster{onTarget("c1", "canary", 4*time.Minute), onOld("r1", "rest"), onOld("r2", "rest")},
			map[string][]PullRequest{"canary": {merged(canaryPR)}},
			outcome{phases: "canary=Soaking remaining=Pending", requeue: 9 * time.Minute}},
		{"soaked: the remaining wave is proposed", 14 * time.Minute, []Cluster{onTarget("c1", "canary", 4*time.Minute), onOld("r1", "rest"), onOld("r2", "rest")},
			map[string][]PullRequest{"canary": {merged(canaryPR)}},
			outcome{phases: "canary=Done remaining=Proposed", propose: "remaining:r1,r2"}},
		{"its pull request is open", 15 * time.Minute, []Cluster{onTarget("c1", "canary", 4*time.Minute), onOld("r1", "rest"), onOld("r2", "rest")},
			map[string][]PullRequest{"canary": {merged(canaryPR)}, Remaining: {restPR}},
			outcome{phases: "canary=Done remaining=Proposed", propose: "remaining:r1,r2", open: "pr-rest"}},
		{"merged and applied: done (the remaining wave does not soak)", 20 * time.Minute,
			[]Cluster{onTarget("c1", "canary", 4*time.Minute), onTarget("r1", "rest", 19*time.Minute), onTarget("r2", "rest", 20*time.Minute)},
			map[string][]PullRequest{"canary": {merged(canaryPR)}, Remaining: {merged(restPR)}},
			outcome{phases: "canary=Done remaining=Done"}},
	} {
		t.Run(step.name, func(t *testing.T) {
			check(t, Decide(Facts{Target: target, Waves: waves, Clusters: step.clusters, PullRequests: step.prs, Now: t0.Add(step.now)}), step.want)
		})
	}
}

func merged(p PullRequest) PullRequest {
	p.State = StateMerged
	return p
}

// A restart during the soak: the same facts later give the same status (no churn), the soak is
// not reset, and it ends when it should, not earlier.
func TestSoakSurvivesRestart(t *testing.T) {
	f := Facts{Target: target, Waves: []Wave{wave("canary", time.Minute, 0)}, Clusters: []Cluster{onTarget("c1", "canary", -10*time.Second), onOld("r1", "rest")}, Now: t0}
	first := Decide(f)
	f.Now = t0.Add(30 * time.Second)
	second := Decide(f)
	if !reflect.DeepEqual(first.Status, second.Status) {
		t.Errorf("status changed with time alone:\n%+v\n%+v", first.Status, second.Status)
	}
	if second.RequeueAfter != 20*time.Second {
		t.Errorf("requeue %s, want 20s", second.RequeueAfter)
	}
	f.Now = t0.Add(49 * time.Second)
	if p := Decide(f); p.Propose != nil || p.Status.Waves[0].Phase != csv1.WaveSoaking || p.RequeueAfter != time.Second {
		t.Errorf("a second before the soak ends: %+v", p)
	}
	f.Now = t0.Add(50 * time.Second)
	if p := Decide(f); p.Propose == nil || p.Propose.Wave != Remaining || p.RequeueAfter != 0 {
		t.Errorf("once the soak ends the next wave is proposed: %+v", p.Propose)
	}
}

// windowed is wave name with one maintenance window opening daily at 13:00 UTC (an hour after
// t0) for 30 minutes.
func windowed(t *testing.T, name string) Wave {
	t.Helper()
	w := wave(name, 0, 0)
	ws, err := window.ParseAll([]csv1.MaintenanceWindow{{Schedule: "0 13 * * *", Duration: metav1.Duration{Duration: 30 * time.Minute}}})
	if err != nil {
		t.Fatal(err)
	}
	w.Windows = ws
	return w
}

func TestDecideWindowsAndHolds(t *testing.T) {
	canary := windowed(t, "canary")
	opens := "maintenance window \"0 13 * * *\" for 30m (UTC) opens at 2026-11-23T13:00:00Z (in 1h)"
	for _, tc := range []struct {
		name  string
		facts Facts
		want  outcome
	}{
		{name: "outside its window the pull request is still proposed, the wave WaitingForWindow",
			facts: Facts{Waves: []Wave{canary}, Clusters: []Cluster{onOld("c1", "canary"), onOld("r1", "rest")},
				PullRequests: map[string][]PullRequest{"canary": {pr(1, StateOpen, "c1")}}},
			want: outcome{phases: "canary=WaitingForWindow remaining=Pending", propose: "canary:c1", open: "https://forge/pulls/1", requeue: time.Hour,
				messages: map[string]string{"canary": "pull request #1 open to move c1; they move when the wave's " + opens}}},
		{name: "merged outside its window: held, not Rolling, until the window opens",
			facts: Facts{Waves: []Wave{canary}, Clusters: []Cluster{onOld("c1", "canary"), onOld("r1", "rest")},
				PullRequests: map[string][]PullRequest{"canary": {pr(1, StateMerged, "c1")}}},
			want: outcome{phases: "canary=WaitingForWindow remaining=Pending", requeue: time.Hour,
				messages: map[string]string{"canary": "pull request #1 is merged; c1 move when the wave's " + opens + "; until then the Cluster admission webhook refuses their move"}}},
		{name: "inside its window: merged means Rolling",
			facts: Facts{Waves: []Wave{canary}, Clusters: []Cluster{onOld("c1", "canary"), onOld("r1", "rest")},
				PullRequests: map[string][]PullRequest{"canary": {pr(1, StateMerged, "c1")}}, Now: t0.Add(70 * time.Minute)},
			want: outcome{phases: "canary=Rolling remaining=Pending"}},
		{name: "a Cluster that moved goes on when the window closes",
			facts: Facts{Waves: []Wave{canary}, Clusters: []Cluster{moving("c1"), onOld("r1", "rest")},
				PullRequests: map[string][]PullRequest{"canary": {pr(1, StateMerged, "c1")}}},
			want: outcome{phases: "canary=Rolling remaining=Pending"}},
		{name: "the remaining wave without windows is not held by the canary's",
			facts: Facts{Waves: []Wave{canary}, Clusters: []Cluster{onTarget("c1", "canary", -time.Hour), onOld("r1", "rest")}},
			want:  outcome{phases: "canary=Done remaining=Proposed", propose: "remaining:r1"}},
		{name: "held: nothing proposed, the wave says by whom",
			facts: Facts{Waves: []Wave{wave("canary", 0, 0)}, Clusters: []Cluster{onOld("c1", "canary")}, Hold: "alice since 2026-11-23T11:00:00Z: CVE review",
				PullRequests: map[string][]PullRequest{"canary": {pr(1, StateOpen, "c1")}}},
			want: outcome{phases: "canary=Held", open: "https://forge/pulls/1",
				messages: map[string]string{"canary": "nothing is proposed to move c1: the rollout is held by alice since 2026-11-23T11:00:00Z: CVE review"}}},
		{name: "held after the merge: the Clusters do not move",
			facts: Facts{Waves: []Wave{wave("canary", 0, 0)}, Clusters: []Cluster{onOld("c1", "canary")}, Hold: "alice",
				PullRequests: map[string][]PullRequest{"canary": {pr(1, StateMerged, "c1")}}},
			want: outcome{phases: "canary=Held", messages: map[string]string{"canary": "pull request #1 is merged; c1 do not move: the rollout is held by alice"}}},
		{name: "held while soaking: the soak goes on",
			facts: Facts{Waves: []Wave{wave("canary", time.Hour, 0)}, Clusters: []Cluster{onTarget("c1", "canary", -time.Minute), onOld("r1", "rest")}, Hold: "alice"},
			want:  outcome{phases: "canary=Soaking remaining=Pending", requeue: 59 * time.Minute}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.facts
			f.Target = target
			if f.Now.IsZero() {
				f.Now = t0
			}
			check(t, Decide(f), tc.want)
		})
	}
}

func TestParseHold(t *testing.T) {
	for _, tc := range []struct{ in, by, reason string }{
		{"alice: waiting for the CVE fix", "alice", "waiting for the CVE fix"},
		{"alice@example.org:no space", "alice@example.org", "no space"},
		{"waiting for the CVE fix", "", "waiting for the CVE fix"},
		{"the reason: has a colon", "", "the reason: has a colon"},
		{"", "", ""},
		{"bob:\x1b[31mred\n", "bob", "[31mred"},
	} {
		by, reason := ParseHold(tc.in)
		if by != tc.by || reason != tc.reason {
			t.Errorf("ParseHold(%q) = %q, %q; want %q, %q", tc.in, by, reason, tc.by, tc.reason)
		}
	}
	long := strings.Repeat("x", 300) + ": " + strings.Repeat("y", 2000)
	if by, reason := ParseHold(long); len(by) != 256 || len(reason) != 1024 {
		t.Errorf("bounds: %d %d", len(by), len(reason))
	}
}

func TestAnnotationWriter(t *testing.T) {
	entry := func(manager string, at time.Time, fields string) metav1.ManagedFieldsEntry {
		tm := metav1.NewTime(at)
		return metav1.ManagedFieldsEntry{Manager: manager, Time: &tm, FieldsV1: metav1.NewFieldsV1(fields)}
	}
	hold := `{"f:metadata":{"f:annotations":{"f:clusterstack.io/hold":{}}}}`
	got := AnnotationWriter([]metav1.ManagedFieldsEntry{
		entry("kustomize-controller", t0, `{"f:spec":{}}`),
		entry("kubectl-annotate", t0.Add(-time.Hour), hold),
		entry("kubectl-edit", t0, hold),
	}, csv1.HoldAnnotation)
	if got != "kubectl-edit" {
		t.Fatalf("AnnotationWriter = %q, want the last writer kubectl-edit", got)
	}
	if got := AnnotationWriter(nil, csv1.HoldAnnotation); got != "" {
		t.Fatalf("no managed fields: %q", got)
	}
}

func TestWaveWindows(t *testing.T) {
	daily := []csv1.MaintenanceWindow{{Schedule: "@daily", Duration: metav1.Duration{Duration: time.Hour}}}
	weekly := []csv1.MaintenanceWindow{{Schedule: "@weekly", Duration: metav1.Duration{Duration: time.Hour}}}
	u := &csv1.UpdatePolicy{Windows: daily, Waves: []csv1.RolloutWave{
		{Name: "canary", Selector: metav1.LabelSelector{MatchLabels: map[string]string{"rollout": "canary"}}, Windows: weekly},
		{Name: "prod", Selector: metav1.LabelSelector{MatchLabels: map[string]string{"rollout": "prod"}}},
	}}
	for _, tc := range []struct {
		labels map[string]string
		wave   string
		ws     []csv1.MaintenanceWindow
	}{
		{map[string]string{"rollout": "canary"}, "canary", weekly},
		{map[string]string{"rollout": "prod"}, "prod", daily},
		{nil, Remaining, daily},
	} {
		name, ws, err := WaveWindows(u, tc.labels)
		if err != nil || name != tc.wave || !reflect.DeepEqual(ws, tc.ws) {
			t.Errorf("WaveWindows(%v) = %s %v %v", tc.labels, name, ws, err)
		}
	}
}
