// Package metrics holds the operator's own Prometheus metrics, registered in controller-runtime's
// registry next to its controller and client metrics (served on --metrics-bind-address):
//
//   - clusterstack_clusters{namespace,stack,release,state}: ClusterAddons (one per CAPI Cluster
//     using a stack) by the release they want and their state;
//   - clusterstack_releases{namespace,stack,state}: a stack's ClusterStackReleases by state;
//   - clusterstack_render_failures_total{namespace,stack,release}: value render failures
//     recorded on ClusterAddons;
//   - clusterstack_values_renders_total{namespace,outcome}: values renders of Clusters' ClusterAddons
//     that ran ("rendered"), those spared because nothing they depend on changed since the
//     last one and the ConfigMap is as applied then ("unchanged"), and those put off because the
//     namespace had its share of renders running ("deferred").
//
// The two gauges are set by the ClusterStack status aggregation, from the stack's releases and
// the same per-release counts of its ClusterAddons that its status shows (kept by an index as
// ClusterAddons change), so they always agree with the conditions the status shows, and the
// series of releases that vanished are deleted.
package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// Metric names.
const (
	ClustersMetric       = "clusterstack_clusters"
	ReleasesMetric       = "clusterstack_releases"
	RenderFailuresMetric = "clusterstack_render_failures_total"
	ValuesRendersMetric  = "clusterstack_values_renders_total"
)

// Outcomes of a values render (ValuesRendersMetric).
const (
	// RenderRan: the templates were rendered.
	RenderRan = "rendered"
	// RenderUnchanged: the render was spared, its inputs and ConfigMap unchanged since the last.
	RenderUnchanged = "unchanged"
	// RenderDeferred: the render did not run because the namespace had its share of renders
	// running (--max-concurrent-renders-per-namespace); the reconcile comes back.
	RenderDeferred = "deferred"
)

// States a ClusterAddon or a ClusterStackRelease is counted in. Every object is counted in
// exactly one.
const (
	// StateDegraded: Degraded is True.
	StateDegraded = "degraded"
	// StateAvailable: Available is True and Degraded is not. This includes an object rolling
	// out a new release while the delivered one still works (Progressing True too), so the
	// count matches status.clusters.available.
	StateAvailable = "available"
	// StateProgressing: Progressing is True, and neither Available nor Degraded is.
	StateProgressing = "progressing"
	// StateUnknown: none of the above, e.g. before the status aggregation has run.
	StateUnknown = "unknown"
)

// States lists every state, in the order above.
var States = []string{StateDegraded, StateAvailable, StateProgressing, StateUnknown}

// StateOf classifies an object by its Available, Progressing and Degraded conditions.
func StateOf(conds []metav1.Condition) string {
	switch {
	case apimeta.IsStatusConditionTrue(conds, csv1.DegradedCondition):
		return StateDegraded
	case apimeta.IsStatusConditionTrue(conds, csv1.AvailableCondition):
		return StateAvailable
	case apimeta.IsStatusConditionTrue(conds, csv1.ProgressingCondition):
		return StateProgressing
	default:
		return StateUnknown
	}
}

// Recorder owns the operator's metrics.
type Recorder struct {
	clusters       *prometheus.GaugeVec
	releases       *prometheus.GaugeVec
	renderFailures *prometheus.CounterVec
	valuesRenders  *prometheus.CounterVec

	mu sync.Mutex
	// seen holds, per stack, the releases that have clusterstack_clusters series, so that the
	// series of a release that is gone are deleted on the next recount.
	seen map[stackKey]map[string]bool
}

type stackKey struct{ namespace, stack string }

// New returns a Recorder whose metrics are registered in reg.
func New(reg prometheus.Registerer) *Recorder {
	r := &Recorder{
		clusters: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: ClustersMetric,
			Help: "CAPI Clusters using a cluster stack (one ClusterAddon each), by the release they want and their state (available, progressing, degraded, unknown).",
		}, []string{"namespace", "stack", "release", "state"}),
		releases: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: ReleasesMetric,
			Help: "ClusterStackReleases of a cluster stack by state (available, progressing, degraded, unknown).",
		}, []string{"namespace", "stack", "state"}),
		renderFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: RenderFailuresMetric,
			Help: "Value render failures recorded on ClusterAddons: ValuesRendered turned False, or stayed False with a different error. Retries of the same failure are not counted.",
		}, []string{"namespace", "stack", "release"}),
		valuesRenders: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: ValuesRendersMetric,
			Help: "Values renders of ClusterAddons by outcome: rendered (the templates ran), unchanged (spared: nothing the render depends on changed since the last one, and the ConfigMap is as applied then), deferred (the namespace had its share of renders running; the reconcile comes back).",
		}, []string{"namespace", "outcome"}),
		seen: map[stackKey]map[string]bool{},
	}
	reg.MustRegister(r.clusters, r.releases, r.renderFailures, r.valuesRenders)
	return r
}

// Default is registered in controller-runtime's registry, which the manager serves.
var Default = New(ctrlmetrics.Registry)

// SetStack sets the gauges of one ClusterStack from all its releases and the ClusterAddons of
// the Clusters using it, counted by the release they want and their state (StateOf): clusters
// maps a release name to a state to a count. Every release of the stack, and every release in
// clusters, gets a series per state (zero included); series of releases in neither are deleted.
// It costs O(releases), whatever the number of Clusters.
func (r *Recorder) SetStack(namespace, stack string, releases []csv1.ClusterStackRelease, clusters map[string]map[string]int) {
	relStates := map[string]int{}
	for i := range releases {
		relStates[StateOf(releases[i].Status.Conditions)]++
	}
	now := make(map[string]bool, len(clusters)+len(releases))
	for i := range releases {
		now[releases[i].Name] = true
	}
	for rel := range clusters {
		now[rel] = true
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	key := stackKey{namespace, stack}
	for rel := range now {
		for _, s := range States {
			r.clusters.WithLabelValues(namespace, stack, rel, s).Set(float64(clusters[rel][s]))
		}
	}
	for rel := range r.seen[key] {
		if !now[rel] {
			r.clusters.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "stack": stack, "release": rel})
		}
	}
	r.seen[key] = now
	for _, s := range States {
		r.releases.WithLabelValues(namespace, stack, s).Set(float64(relStates[s]))
	}
}

// DeleteStack deletes every series of a ClusterStack that no longer exists.
func (r *Recorder) DeleteStack(namespace, stack string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := prometheus.Labels{"namespace": namespace, "stack": stack}
	r.clusters.DeletePartialMatch(l)
	r.releases.DeletePartialMatch(l)
	r.renderFailures.DeletePartialMatch(l)
	delete(r.seen, stackKey{namespace, stack})
}

// RenderFailed counts a render failure recorded on a ClusterAddon of a Cluster in namespace
// using release of stack.
func (r *Recorder) RenderFailed(namespace, stack, release string) {
	r.renderFailures.WithLabelValues(namespace, stack, release).Inc()
}

// ValuesRender counts a values render of a ClusterAddon in namespace, by outcome (RenderRan,
// RenderUnchanged, RenderDeferred).
func (r *Recorder) ValuesRender(namespace, outcome string) {
	r.valuesRenders.WithLabelValues(namespace, outcome).Inc()
}

// ValuesRenders is the count of namespace's values renders with outcome so far.
func (r *Recorder) ValuesRenders(namespace, outcome string) float64 {
	m := &dto.Metric{}
	if err := r.valuesRenders.WithLabelValues(namespace, outcome).Write(m); err != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}
