// Package rollout decides how the rollout of one release to a ClusterStack's Clusters advances
// through its waves, and which pull request should be open now. It has no client and no memory:
// every decision is made from the facts the controller gathers (the Clusters, their
// ClusterAddons' status timestamps, the pull requests listed from the forge), so a restart of
// the operator neither repeats nor skips a step.
package rollout

import (
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// Remaining is the name of the last wave: the Clusters no wave selects, or every Cluster when
// the ClusterStack defines no waves.
const Remaining = "remaining"

// Pull request states (as the forge package reports them).
const (
	StateOpen   = "open"
	StateMerged = "merged"
	StateClosed = "closed"
)

// Cluster is what the decision needs of a Cluster and its ClusterAddon.
type Cluster struct {
	Name   string
	Labels map[string]string
	// Release is the release the Cluster's topology uses now.
	Release string
	// Applied is the ClusterAddon's lastAppliedRelease.
	Applied string
	// Available is the ClusterAddon's Available condition.
	Available bool
	// AvailableSince is when the Cluster became Available on Applied: the later of the
	// ClusterAddon's lastAppliedTime and its Available condition's lastTransitionTime.
	AvailableSince *time.Time
	// Degraded and DegradedMessage: the ClusterAddon's Degraded condition (its message names the
	// component and the Flux object).
	Degraded        bool
	DegradedMessage string
}

// Wave is one wave of the ClusterStack's spec.updates.waves.
type Wave struct {
	Name     string
	Selector labels.Selector
	// Soak is how long every Cluster of the wave must have been Available on the target.
	Soak time.Duration
	// MaxConcurrent is how many Clusters one pull request moves; 0 means all.
	MaxConcurrent int
}

// PullRequest is a pull request the operator opened for the target.
type PullRequest struct {
	Number   int64
	URL      string
	Title    string
	Branch   string
	State    string
	Target   string
	Clusters []string
}

// Facts are what the decision is made from.
type Facts struct {
	// Target is the release being rolled out.
	Target string
	// Waves in spec order (without the implicit Remaining wave).
	Waves []Wave
	// Clusters of the stack.
	Clusters []Cluster
	// PullRequests per wave name: those proposing Target, newest first.
	PullRequests map[string][]PullRequest
	// Now is the current time.
	Now time.Time
}

// Proposal is the pull request that should exist now.
type Proposal struct {
	Wave string
	// Clusters to move, sorted.
	Clusters []string
}

// Halt says why the rollout stopped.
type Halt struct {
	Wave, Cluster, Message string
}

// Plan is the decision.
type Plan struct {
	// Status is the rollout status to report.
	Status csv1.RolloutStatus
	// Propose is the pull request that should be open, nil when none should.
	Propose *Proposal
	// Halted is set when the rollout stopped.
	Halted *Halt
	// RequeueAfter is when a soak ends (0: no soak running).
	RequeueAfter time.Duration
}

// members assigns each Cluster to the first wave whose selector matches it; the rest form the
// Remaining wave, which is listed when it has Clusters or when there are no waves.
func members(f Facts) ([]Wave, map[string][]Cluster) {
	waves := append([]Wave(nil), f.Waves...)
	by := map[string][]Cluster{}
	hasRemaining := len(f.Waves) == 0
	for _, c := range f.Clusters {
		wave := Remaining
		for _, w := range f.Waves {
			if w.Selector != nil && w.Selector.Matches(labels.Set(c.Labels)) {
				wave = w.Name
				break
			}
		}
		if wave == Remaining {
			hasRemaining = true
		}
		by[wave] = append(by[wave], c)
	}
	if hasRemaining {
		waves = append(waves, Wave{Name: Remaining})
	}
	for _, cs := range by {
		sort.Slice(cs, func(i, j int) bool { return cs[i].Name < cs[j].Name })
	}
	return waves, by
}

// Decide computes the waves' phases and what to propose. Waves advance in order: a wave starts
// only when the one before it is Done. A wave is Done when every Cluster of it is Available on
// the target (or it has none) and the last of them has been so for the soak time. A Degraded
// Cluster that is on the target halts the rollout (a Cluster that was Degraded before it moved
// does not: the rollout is not its cause). A wave whose newest pull request was closed without
// merging is Halted: that version is skipped, and nothing more is proposed for it.
func Decide(f Facts) Plan {
	plan := Plan{Status: csv1.RolloutStatus{Target: f.Target}}
	waves, by := members(f)
	blocked := "" // the wave later waves wait for
	for _, w := range waves {
		ms := by[w.Name]
		st := csv1.WaveStatus{Name: w.Name, Phase: csv1.WavePending}
		for _, c := range ms {
			st.Clusters = append(st.Clusters, c.Name)
			if done(c, f.Target) {
				st.Updated++
			}
		}
		prs := f.PullRequests[w.Name]
		if len(prs) > 0 {
			p := prs[0]
			st.PullRequest = &csv1.PullRequestRef{Number: p.Number, URL: p.URL, Title: p.Title, Branch: p.Branch, State: p.State}
		}
		if blocked != "" {
			st.Message = "waits for wave " + blocked
			plan.Status.Waves = append(plan.Status.Waves, st)
			continue
		}
		decideWave(&plan, &st, w, ms, prs, f)
		if st.Phase != csv1.WaveDone {
			blocked = w.Name
		}
		if st.Phase == csv1.WaveProposed && st.PullRequest != nil && st.PullRequest.State == StateOpen {
			plan.Status.OpenPullRequest = st.PullRequest.URL
		}
		plan.Status.Waves = append(plan.Status.Waves, st)
	}
	return plan
}

func done(c Cluster, target string) bool {
	return c.Release == target && c.Applied == target && c.Available && !c.Degraded
}

// decideWave sets the phase of the first wave that is not Done yet (or finds it Done).
func decideWave(plan *Plan, st *csv1.WaveStatus, w Wave, ms []Cluster, prs []PullRequest, f Facts) {
	for _, c := range ms {
		if c.Release == f.Target && c.Degraded {
			st.Phase = csv1.WaveHalted
			st.Message = fmt.Sprintf("Cluster %s is Degraded on %s: %s", c.Name, f.Target, c.DegradedMessage)
			plan.Halted = &Halt{Wave: w.Name, Cluster: c.Name, Message: st.Message}
			return
		}
	}
	if int(st.Updated) == len(ms) {
		var since *time.Time
		for _, c := range ms {
			if c.AvailableSince != nil && (since == nil || c.AvailableSince.After(*since)) {
				since = c.AvailableSince
			}
		}
		if since == nil || w.Soak <= 0 {
			st.Phase, st.Message = csv1.WaveDone, fmt.Sprintf("%d of %d Clusters Available on %s", len(ms), len(ms), f.Target)
			if since != nil {
				t := metav1.NewTime(*since)
				st.SoakingSince = &t
			}
			return
		}
		t := metav1.NewTime(*since)
		st.SoakingSince = &t
		if end := since.Add(w.Soak); f.Now.Before(end) {
			st.Phase = csv1.WaveSoaking
			st.Message = fmt.Sprintf("every Cluster Available on %s; soaking until %s", f.Target, end.UTC().Format(time.RFC3339))
			plan.RequeueAfter = end.Sub(f.Now)
			return
		}
		st.Phase, st.Message = csv1.WaveDone, fmt.Sprintf("%d of %d Clusters Available on %s, soaked %s", len(ms), len(ms), f.Target, w.Soak)
		return
	}
	var inFlight, notMoved []string
	for _, c := range ms {
		switch {
		case c.Release != f.Target:
			notMoved = append(notMoved, c.Name)
		case !done(c, f.Target):
			inFlight = append(inFlight, c.Name)
		}
	}
	rolling := func() {
		st.Phase = csv1.WaveRolling
		waiting := append(append([]string(nil), inFlight...), notMoved...)
		st.Message = fmt.Sprintf("%d of %d Clusters Available on %s; waiting for %s", st.Updated, len(ms), f.Target, list(waiting))
	}
	if len(prs) > 0 && prs[0].State == StateClosed {
		st.Phase = csv1.WaveHalted
		st.Message = fmt.Sprintf("pull request %s was closed without merging: %s is skipped for this wave", prs[0].URL, f.Target)
		plan.Halted = &Halt{Wave: w.Name, Message: st.Message}
		return
	}
	if len(notMoved) == 0 {
		rolling()
		return
	}
	if len(prs) > 0 && prs[0].State == StateMerged && overlaps(prs[0].Clusters, notMoved) {
		rolling() // merged, not applied by Flux yet
		return
	}
	batch := notMoved
	if w.MaxConcurrent > 0 {
		capacity := w.MaxConcurrent - len(inFlight)
		if capacity <= 0 {
			rolling()
			return
		}
		if capacity < len(batch) {
			batch = batch[:capacity]
		}
	}
	st.Phase = csv1.WaveProposed
	plan.Propose = &Proposal{Wave: w.Name, Clusters: batch}
	if len(prs) > 0 && prs[0].State == StateOpen {
		st.Message = fmt.Sprintf("pull request #%d open: %s", prs[0].Number, prs[0].URL)
	} else {
		st.Message = fmt.Sprintf("pull request to be opened for %s", list(batch))
	}
}

func overlaps(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
		}
	}
	return false
}

// list names at most three Clusters and counts the rest.
func list(names []string) string {
	if len(names) <= 3 {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:3], ", "), len(names)-3)
}
