// Package rollout decides how the rollout of one release to a ClusterStack's Clusters advances
// through its waves, and which pull request should be open now. It has no client and no memory:
// every decision is made from the facts the controller gathers (the Clusters, their
// ClusterAddons' status timestamps, the pull requests listed from the forge), so a restart of
// the operator neither repeats nor skips a step, and a soak is neither reset nor cut short.
package rollout

import (
	"fmt"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/updates"
	"github.com/clusterstack-io/clusterstack-operator/internal/window"
)

// Remaining is the name of the implicit last wave: the Clusters no wave selects. When the
// ClusterStack defines no waves it is the only wave and holds every Cluster (the API's "without
// waves all Clusters form one wave"), so the pull request's branch and the status name the same
// wave whether or not waves are defined. spec.updates.waves[].name may not be "remaining".
const Remaining = "remaining"

// Pull request states (as the forge package reports them).
const (
	// StateOpen: the pull request is open.
	StateOpen = "open"
	// StateMerged: the pull request was merged.
	StateMerged = "merged"
	// StateClosed: the pull request was closed without merging.
	StateClosed = "closed"
)

// Cluster is what the decision needs of a Cluster and its ClusterAddon.
type Cluster struct {
	// Name of the Cluster.
	Name string
	// Labels of the Cluster, matched against the waves' selectors.
	Labels map[string]string
	// Release is the release the Cluster's topology uses now (its classRef).
	Release string
	// Applied is the ClusterAddon's status.lastAppliedRelease.
	Applied string
	// Available is whether the ClusterAddon's Available condition is True.
	Available bool
	// AvailableSince is when the Cluster became Available on Applied: the later of the
	// ClusterAddon's status.lastAppliedTime and its Available condition's lastTransitionTime;
	// nil when unknown.
	AvailableSince *time.Time
	// Degraded is whether the ClusterAddon's Degraded condition is True; DegradedMessage is its
	// message (it names the component and the Flux object).
	Degraded        bool
	DegradedMessage string
}

// Wave is one wave of the ClusterStack's spec.updates.waves.
type Wave struct {
	// Name of the wave.
	Name string
	// Selector selects the wave's Clusters; a nil Selector selects none.
	Selector labels.Selector
	// Soak is how long every Cluster of the wave must have been Available on the target before
	// the next wave starts.
	Soak time.Duration
	// MaxConcurrent is how many Clusters may be moving at once (one pull request moves at most
	// that many); 0 means all.
	MaxConcurrent int
	// Windows are the wave's maintenance windows (its own, or the stack's); none means the
	// wave may move at any time.
	Windows []window.Window
}

// PullRequest is a pull request the operator opened for a wave.
type PullRequest struct {
	// Number of the pull request on the forge.
	Number int64
	// URL of the pull request's web page.
	URL string
	// Title of the pull request.
	Title string
	// Branch the pull request is opened from.
	Branch string
	// State is StateOpen, StateMerged or StateClosed.
	State string
	// Target is the release the pull request proposes.
	Target string
	// Clusters the pull request moves.
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
	// PullRequests per wave name: those proposing Target, newest first. Pull requests for
	// another target are ignored.
	PullRequests map[string][]PullRequest
	// Now is the current time.
	Now time.Time
	// RemainingWindows are the maintenance windows of the Remaining wave (the stack's).
	RemainingWindows []window.Window
	// Hold, when not empty, says who holds the rollout and since when: no wave proposes or
	// moves Clusters (waves already rolling or soaking go on: their Clusters moved before).
	Hold string
}

// Proposal is the pull request that should exist now: open, or to be opened or updated.
type Proposal struct {
	// Wave the pull request is for.
	Wave string
	// Clusters to move, sorted.
	Clusters []string
}

// Halt says why the rollout stopped.
type Halt struct {
	// Wave that halted.
	Wave string
	// Cluster that is Degraded on the target; empty when the wave's pull request was closed
	// without merging.
	Cluster string
	// Message for people: the Cluster and what its ClusterAddon says, or the pull request.
	Message string
}

// Plan is the decision.
type Plan struct {
	// Status is the rollout status to report.
	Status csv1.RolloutStatus
	// Propose is the pull request that should exist now, nil when none should.
	Propose *Proposal
	// Halted is set when the rollout stopped; then Propose is nil.
	Halted *Halt
	// RequeueAfter is when the running soak ends or the awaited maintenance window opens (0:
	// neither).
	RequeueAfter time.Duration
}

func (p *Plan) requeue(d time.Duration) {
	if d > 0 && (p.RequeueAfter == 0 || d < p.RequeueAfter) {
		p.RequeueAfter = d
	}
}

// Decide computes the waves' phases and what to propose. Waves advance in order: a wave starts
// only when the one before it is Done, and the waves after the first that is not Done are
// Pending. Within a wave, in this order:
//   - a Cluster Degraded on the target halts the rollout. A Cluster Degraded while still on its
//     old release does not: the rollout did not cause it, and moving it may well fix it;
//   - when every Cluster is done (on the target, applied, Available, not Degraded), the wave
//     soaks from the latest time one of them became Available, for the wave's soak time, then
//     is Done (a wave without Clusters is Done at once);
//   - otherwise the wave is Rolling while Clusters on the target are not done yet and no more
//     may move (MaxConcurrent), or while its merged pull request has not been applied yet;
//     Halted when its newest pull request was closed without merging (the controller normally
//     treats such a target as declined before deciding); else Proposed, with the next batch of
//     Clusters not on the target (by name) to propose.
func Decide(f Facts) Plan {
	plan := Plan{Status: csv1.RolloutStatus{Target: f.Target}}
	waves, members := assign(f)
	blocking := "" // the first wave that is not Done
	for _, w := range waves {
		ms := members[w.Name]
		prs := newestFirst(f.PullRequests[w.Name], f.Target)
		st := csv1.WaveStatus{Name: w.Name, Phase: csv1.WavePending}
		for _, c := range ms {
			st.Clusters = append(st.Clusters, c.Name)
			if done(c, f.Target) {
				st.Updated++
			}
		}
		if len(prs) > 0 {
			p := prs[0]
			st.PullRequest = &csv1.PullRequestRef{Number: p.Number, URL: p.URL, Title: p.Title, Branch: p.Branch, State: p.State}
		}
		if blocking != "" {
			st.Message = "waits for wave " + blocking
		} else {
			decideWave(&plan, &st, w, ms, prs, f)
			if st.Phase != csv1.WaveDone {
				blocking = w.Name
			}
		}
		plan.Status.Waves = append(plan.Status.Waves, st)
	}
	plan.Status.OpenPullRequest = openPullRequest(plan.Status.Waves)
	return plan
}

// assign puts each Cluster in the first wave whose selector matches its labels; the rest form
// the Remaining wave, which is listed last when it has Clusters or when there are no waves.
// Members are sorted by name.
func assign(f Facts) ([]Wave, map[string][]Cluster) {
	waves := append([]Wave(nil), f.Waves...)
	members := map[string][]Cluster{}
	remaining := len(f.Waves) == 0
	for _, c := range f.Clusters {
		wave := WaveOf(f.Waves, c.Labels)
		if wave == Remaining {
			remaining = true
		}
		members[wave] = append(members[wave], c)
	}
	if remaining {
		waves = append(waves, Wave{Name: Remaining, Windows: f.RemainingWindows})
	}
	for _, cs := range members {
		sort.Slice(cs, func(i, j int) bool { return cs[i].Name < cs[j].Name })
	}
	return waves, members
}

// WaveOf is the wave a Cluster with these labels belongs to: the first wave whose selector
// matches them, else Remaining.
func WaveOf(waves []Wave, clusterLabels map[string]string) string {
	for _, w := range waves {
		if w.Selector != nil && w.Selector.Matches(labels.Set(clusterLabels)) {
			return w.Name
		}
	}
	return Remaining
}

// newestFirst keeps the pull requests for target (or naming none) and orders them newest first:
// by number, which the forge hands out in order.
func newestFirst(prs []PullRequest, target string) []PullRequest {
	var out []PullRequest
	for _, p := range prs {
		if p.Target == "" || p.Target == target {
			out = append(out, p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Number > out[j].Number })
	return out
}

// done reports whether c runs the target: on it, applied, Available and not Degraded.
func done(c Cluster, target string) bool {
	return c.Release == target && c.Applied == target && c.Available && !c.Degraded
}

// decideWave sets the phase of the first wave that is not known to be Done.
func decideWave(plan *Plan, st *csv1.WaveStatus, w Wave, ms []Cluster, prs []PullRequest, f Facts) {
	if c, ok := degradedOnTarget(ms, f.Target); ok {
		st.Phase = csv1.WaveHalted
		st.Message = fmt.Sprintf("Cluster %s is Degraded on %s: %s", c.Name, f.Target, updates.OrUnknown(c.DegradedMessage))
		plan.Halted = &Halt{Wave: w.Name, Cluster: c.Name, Message: st.Message}
		return
	}
	if int(st.Updated) == len(ms) {
		soak(plan, st, w, ms, f)
		return
	}
	progress(plan, st, w, ms, prs, f)
}

// degradedOnTarget is the first member that is Degraded on the target.
func degradedOnTarget(ms []Cluster, target string) (Cluster, bool) {
	for _, c := range ms {
		if c.Release == target && c.Degraded {
			return c, true
		}
	}
	return Cluster{}, false
}

// soak decides a wave whose members are all done: Soaking until the last of them has been
// Available for the soak time, then Done. Without members it is Done at once.
func soak(plan *Plan, st *csv1.WaveStatus, w Wave, ms []Cluster, f Facts) {
	n := len(ms)
	if n == 0 {
		st.Phase, st.Message = csv1.WaveDone, "no Clusters in this wave"
		return
	}
	var since *time.Time
	for _, c := range ms {
		if c.AvailableSince == nil {
			if w.Soak <= 0 {
				continue
			}
			// Never guess the start of a soak: wait until the ClusterAddon says (a change of
			// it triggers the next decision).
			st.Phase = csv1.WaveSoaking
			st.Message = fmt.Sprintf("every Cluster Available on %s; the soak of %s cannot start: when Cluster %s became Available is unknown",
				f.Target, updates.ShortDuration(w.Soak), c.Name)
			return
		}
		if since == nil || c.AvailableSince.After(*since) {
			since = c.AvailableSince
		}
	}
	if since != nil {
		t := metav1.NewTime(*since)
		st.SoakingSince = &t
	}
	if w.Soak <= 0 {
		st.Phase, st.Message = csv1.WaveDone, fmt.Sprintf("%d of %d Clusters Available on %s", n, n, f.Target)
		return
	}
	end := since.Add(w.Soak)
	if f.Now.Before(end) {
		st.Phase = csv1.WaveSoaking
		st.Message = fmt.Sprintf("%d of %d Clusters Available on %s; soaking %s until %s", n, n, f.Target, updates.ShortDuration(w.Soak), end.UTC().Format(time.RFC3339))
		plan.requeue(end.Sub(f.Now))
		return
	}
	st.Phase, st.Message = csv1.WaveDone, fmt.Sprintf("%d of %d Clusters Available on %s, soaked %s", n, n, f.Target, updates.ShortDuration(w.Soak))
}

// progress decides a wave with members not done yet: Rolling, Halted or Proposed.
func progress(plan *Plan, st *csv1.WaveStatus, w Wave, ms []Cluster, prs []PullRequest, f Facts) {
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
		sort.Strings(waiting)
		st.Message = fmt.Sprintf("%d of %d Clusters Available on %s; waiting for %s", st.Updated, len(ms), f.Target, updates.Names(waiting))
	}
	capacity := len(notMoved)
	if w.MaxConcurrent > 0 {
		capacity = min(capacity, w.MaxConcurrent-len(inFlight))
	}
	var newest *PullRequest
	if len(prs) > 0 {
		newest = &prs[0]
	}
	win := window.At(w.Windows, f.Now)
	switch {
	case len(notMoved) == 0 || capacity <= 0:
		rolling()
	case newest != nil && newest.State == StateMerged && overlaps(newest.Clusters, notMoved):
		// Merged, not applied by Flux yet: while the rollout is held or the wave's windows are
		// closed, the Cluster admission webhook refuses the move.
		held := fmt.Sprintf("pull request #%d is merged; %s", newest.Number, updates.Names(notMoved))
		switch {
		case f.Hold != "":
			st.Phase, st.Message = csv1.WaveHeld, fmt.Sprintf("%s do not move: the rollout is held by %s", held, f.Hold)
		case !win.Open:
			waitForWindow(plan, st, win, f.Now, fmt.Sprintf("%s move when the wave's %s; until then the Cluster admission webhook refuses their move", held, win.Describe(f.Now)))
		default:
			rolling()
		}
	case newest != nil && newest.State == StateClosed:
		st.Phase = csv1.WaveHalted
		st.Message = fmt.Sprintf("pull request %s was closed without merging: nothing more is proposed for %s in this wave", updates.OrUnknown(newest.URL), f.Target)
		plan.Halted = &Halt{Wave: w.Name, Message: st.Message}
	case f.Hold != "":
		st.Phase = csv1.WaveHeld
		st.Message = fmt.Sprintf("nothing is proposed to move %s: the rollout is held by %s", updates.Names(notMoved[:capacity]), f.Hold)
	default:
		batch := append([]string(nil), notMoved[:capacity]...)
		st.Phase = csv1.WaveProposed
		plan.Propose = &Proposal{Wave: w.Name, Clusters: batch}
		if newest != nil && newest.State == StateOpen {
			st.Message = fmt.Sprintf("pull request #%d open to move %s", newest.Number, updates.Names(batch))
		} else {
			st.Message = fmt.Sprintf("pull request to be opened to move %s", updates.Names(batch))
		}
		if !win.Open {
			// The pull request may be opened and merged at any time; the Clusters move in a window.
			waitForWindow(plan, st, win, f.Now, fmt.Sprintf("%s; they move when the wave's %s", st.Message, win.Describe(f.Now)))
		}
	}
}

// waitForWindow makes st WaitingForWindow with msg, and the plan come back when the window opens.
func waitForWindow(plan *Plan, st *csv1.WaveStatus, win window.State, now time.Time, msg string) {
	st.Phase, st.Message = csv1.WaveWaitingForWindow, msg
	if !win.Opens.IsZero() {
		t := metav1.NewTime(win.Opens)
		st.NextWindow = &t
		plan.requeue(win.Opens.Sub(now))
	}
}

// openPullRequest is the URL of the rollout's open pull request: the Proposed wave's if it is
// open, else the first open one of any wave.
func openPullRequest(waves []csv1.WaveStatus) string {
	first := ""
	for _, w := range waves {
		if w.PullRequest == nil || w.PullRequest.State != StateOpen {
			continue
		}
		if w.Phase == csv1.WaveProposed || w.Phase == csv1.WaveWaitingForWindow {
			return w.PullRequest.URL
		}
		if first == "" {
			first = w.PullRequest.URL
		}
	}
	return first
}

// overlaps reports whether a and b share a name.
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
