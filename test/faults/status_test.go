package faults

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// statusSample is the status of one object at one moment.
type statusSample struct {
	At                                time.Time
	Kind, Name                        string
	Available, Progressing, Degraded  metav1.ConditionStatus
	AvailableMsg, ProgressingMsg, Msg string
}

func (s statusSample) String() string {
	return fmt.Sprintf("%s %s/%s at %s: Available=%s Progressing=%s Degraded=%s %q",
		s.Kind, ns, s.Name, s.At.Format("15:04:05.000"), s.Available, s.Progressing, s.Degraded, s.Msg)
}

// statusSampler lists the fleet's ClusterAddons, ClusterStackReleases and ClusterStack every
// interval (straight from the API server, not through the operator's fault proxy) and keeps
// their conditions. A sample that fails (the API server is down) is skipped.
type statusSampler struct {
	mu      sync.Mutex
	samples []statusSample
	cancel  context.CancelFunc
	done    chan struct{}
}

func startSampler(ctx context.Context, interval time.Duration) *statusSampler {
	ctx, cancel := context.WithCancel(ctx)
	s := &statusSampler{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			s.take(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *statusSampler) take(ctx context.Context) {
	at := time.Now()
	var out []statusSample
	add := func(kind, name string, conds []metav1.Condition) {
		smp := statusSample{At: at, Kind: kind, Name: name}
		for t, dst := range map[string]*metav1.ConditionStatus{csv1.AvailableCondition: &smp.Available, csv1.ProgressingCondition: &smp.Progressing, csv1.DegradedCondition: &smp.Degraded} {
			*dst = metav1.ConditionUnknown
			if c := apimeta.FindStatusCondition(conds, t); c != nil {
				*dst = c.Status
				switch t {
				case csv1.DegradedCondition:
					smp.Msg = c.Message
				case csv1.AvailableCondition:
					smp.AvailableMsg = c.Message
				case csv1.ProgressingCondition:
					smp.ProgressingMsg = c.Message
				}
			}
		}
		out = append(out, smp)
	}
	addons := &csv1.ClusterAddonList{}
	rels := &csv1.ClusterStackReleaseList{}
	stacks := &csv1.ClusterStackList{}
	if k8s.List(ctx, addons, client.InNamespace(ns)) != nil || k8s.List(ctx, rels, client.InNamespace(ns)) != nil ||
		k8s.List(ctx, stacks, client.InNamespace(ns)) != nil {
		return
	}
	for _, a := range addons.Items {
		add("ClusterAddon", a.Name, a.Status.Conditions)
	}
	for _, r := range rels.Items {
		add("ClusterStackRelease", r.Name, r.Status.Conditions)
	}
	for _, cs := range stacks.Items {
		add("ClusterStack", cs.Name, cs.Status.Conditions)
	}
	s.mu.Lock()
	s.samples = append(s.samples, out...)
	s.mu.Unlock()
}

// Since returns the samples taken at or after t.
func (s *statusSampler) Since(t time.Time) []statusSample {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []statusSample
	for _, smp := range s.samples {
		if !smp.At.Before(t) {
			out = append(out, smp)
		}
	}
	return out
}

// Stop stops sampling.
func (s *statusSampler) Stop() {
	s.cancel()
	<-s.done
}

// honesty says what status is honest during one scenario.
type honesty struct {
	// start is when the scenario began (its first fault or rollout step).
	start time.Time
	// notBefore: a ClusterAddon may be Degraded only grace after the later of start and its
	// Cluster's last move (when it stopped being healthy); the fleet records the moves.
	movedAt map[string]time.Time
	// unavailable are the Clusters whose delivered state may really be unavailable (their
	// workload API server is down): no other ClusterAddon may be Available=False.
	unavailable map[string]bool
}

// expectHonest checks the samples of a scenario: no ClusterAddon or ClusterStack Available=False
// while the delivered version kept working (it always does here, except for the Clusters the
// scenario takes down), and nothing Degraded before the grace period ran out since it stopped
// being healthy. It returns how many samples it checked.
func expectHonest(samples []statusSample, h honesty) int {
	GinkgoHelper()
	var lies []string
	for _, s := range samples {
		// A ClusterStack is Available only when its version is available on every Cluster: with
		// a Cluster really unavailable, it is not.
		stackOfUnavailable := s.Kind == "ClusterStack" && len(h.unavailable) > 0
		if s.Available == metav1.ConditionFalse && s.Kind != "ClusterStackRelease" && !h.unavailable[s.Name] && !stackOfUnavailable {
			lies = append(lies, "Available=False while the delivered version works: "+s.String()+" ("+s.AvailableMsg+")")
		}
		if s.Degraded != metav1.ConditionTrue {
			continue
		}
		since := h.start
		if s.Kind == "ClusterAddon" && h.movedAt[s.Name].After(since) {
			since = h.movedAt[s.Name]
		}
		// Condition times have the API's resolution of one second, so the operator's clock of
		// the grace period can start up to a second before the moment measured here.
		if s.At.Sub(since) < grace-time.Second {
			lies = append(lies, fmt.Sprintf("Degraded %s after it stopped being healthy, before the grace period of %s: %s", s.At.Sub(since).Round(time.Millisecond), grace, s))
		}
	}
	if len(lies) > 10 {
		lies = append(lies[:10], fmt.Sprintf("and %d more", len(lies)-10))
	}
	Expect(lies).To(BeEmpty(), "status was not honest (%d samples)", len(samples))
	return len(samples)
}

// expectDegradedSeen checks that some sample of kind whose name satisfies match was Degraded,
// with a message containing every part, at least grace after start, and returns the first.
func expectDegradedSeen(samples []statusSample, start time.Time, kind string, match func(string) bool, parts ...string) statusSample {
	GinkgoHelper()
	var degraded []string
	for _, s := range samples {
		if s.Kind != kind || !match(s.Name) || s.Degraded != metav1.ConditionTrue {
			continue
		}
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(s.Msg, p)
		}
		if ok && s.At.Sub(start) >= grace {
			return s
		}
		degraded = append(degraded, s.String())
	}
	Fail(fmt.Sprintf("no %s was Degraded with a message containing %q after the grace period (%d samples); Degraded samples: %v", kind, parts, len(samples), degraded))
	return statusSample{}
}

// seenProgressing reports whether some ClusterAddon sample matching was Progressing=True.
func seenProgressing(samples []statusSample, match func(string) bool) bool {
	for _, s := range samples {
		if s.Kind == "ClusterAddon" && match(s.Name) && s.Progressing == metav1.ConditionTrue {
			return true
		}
	}
	return false
}

// scenarioRow is one line of the reliability table.
type scenarioRow struct {
	Scenario, Injected, Converge, Found string
	Runs                                int
	Objects, HelmRevisions, Samples     int
}

// add counts what a check looked at.
func (r *scenarioRow) add(c checked) {
	r.Objects, r.HelmRevisions = r.Objects+c.objects, r.HelmRevisions+c.helmRevisions
}

// scenarioReport is the reliability table (README "Reliability").
type scenarioReport struct {
	mu   sync.Mutex
	rows []scenarioRow
}

func (r *scenarioReport) Add(row scenarioRow) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rows = append(r.rows, row)
}

func (r *scenarioReport) Markdown() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "Seed %d; %d Clusters in scenario 1, %d in the others.\n\n", seed, envInt("FAULTS_CLUSTERS", 20), min(laterFleet, envInt("FAULTS_CLUSTERS", 20)))
	b.WriteString("| scenario | runs | injected | time to converge | objects checked | Helm revisions checked | status samples | failures found |\n|---|---|---|---|---|---|---|---|\n")
	for _, row := range r.rows {
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %d | %d | %d | %s |\n", row.Scenario, row.Runs, row.Injected, row.Converge, row.Objects, row.HelmRevisions, row.Samples, row.Found)
	}
	return b.String()
}

func (r *scenarioReport) Print(w io.Writer) {
	if fl == nil {
		return
	}
	fmt.Fprintf(w, "\nReliability (fault suite):\n%s\n", r.Markdown())
}
