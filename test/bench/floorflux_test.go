package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// The floor with Flux: what an operator that costs nothing itself could reach against the same
// API server while Flux is at work. The floor writer writes the same objects, but keeps the
// one order the operator cannot drop (Flux orders a Cluster's addons only within a kind, so a
// component after one of another kind in addon order is created only once that one is Ready),
// while the stand-in for Flux reports on what it writes as it does in the operator's run; once
// every Flux object of a Cluster is Ready it writes the ClusterAddon's final status. No reads
// but one watch, no rendering, no status in between: its fan-out and its Ready are lower bounds
// of the operator's, against this writer.
//
// The same ordered writer, without ClusterAddons, is Flux alone in BenchmarkRealFlux: the
// HelmReleases, Kustomizations and values ConfigMaps the operator would write, written directly,
// in the order Flux needs, until the real helm- and kustomize-controller report every one Ready.

// floorFluxResult is what the floor with Flux measured.
type floorFluxResult struct {
	// groups is how many steps a Cluster's Flux objects are written in (runs of one kind in addon
	// order).
	groups int
	// fanout is how long until every object was written, ready until every ClusterAddon status
	// was.
	fanout, ready time.Duration
	// cpu is every process's CPU time until then (the API server's, etcd's, the writer's and the
	// stand-in for Flux's).
	cpu cpuSample
	// speed is the machine's speed until then.
	speed speedReading
}

// writeGroups splits a Cluster's Flux objects, in the release's addon order (status.components),
// into the runs of one kind the operator writes at once: each run once the last object of the run
// before it is Ready. A component the templates have no object for is skipped.
func writeGroups(order []csv1.ReleaseComponent, byComponent map[string]*unstructured.Unstructured) [][]*unstructured.Unstructured {
	var groups [][]*unstructured.Unstructured
	last := ""
	for _, c := range order {
		o, ok := byComponent[c.Name]
		if !ok {
			continue
		}
		if len(groups) == 0 || o.GetKind() != last {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], o)
		last = o.GetKind()
	}
	return groups
}

// floorFluxCluster is one Cluster's writes in an ordered run, and how far they are.
type floorFluxCluster struct {
	first  []*unstructured.Unstructured // the ClusterAddon (if any), the values ConfigMaps, the first group
	groups [][]*unstructured.Unstructured
	// addon is the ClusterAddon and status its final status, a merge patch; nil without one
	// (Flux alone).
	addon  *unstructured.Unstructured
	status []byte

	mu    sync.Mutex
	next  int             // the next group to write
	ready map[string]bool // the Flux objects Ready so far, by name
	flux  int             // how many Flux objects the Cluster has
}

// floorFluxJob is one write: obj created or applied, or, with a status, a status merge patch of it.
type floorFluxJob struct {
	obj    *unstructured.Unstructured
	status []byte
}

// onReady records that the Cluster's Flux object name is Ready and returns the writes that
// follow: the next group when name is the last object of the group before it, the ClusterAddon's
// status when every Flux object is Ready. allReady is true once, when the last Flux object of the
// Cluster turns Ready.
func (c *floorFluxCluster) onReady(name string) (jobs []floorFluxJob, allReady bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ready[name] {
		return nil, false
	}
	c.ready[name] = true
	if c.next < len(c.groups) {
		prev := c.groups[c.next-1]
		if prev[len(prev)-1].GetName() == name {
			for _, o := range c.groups[c.next] {
				jobs = append(jobs, floorFluxJob{obj: o})
			}
			c.next++
		}
	}
	if len(c.ready) == c.flux { // once: c.ready only grows, by one name at a time
		allReady = true
		if c.addon != nil {
			jobs = append(jobs, floorFluxJob{obj: c.addon, status: c.status})
		}
	}
	return jobs, allReady
}

// floorFluxClusters are an ordered run's writes for the Clusters named, in namespace ns, made of
// the templates, the Flux objects in the release's addon order; and how many objects they write.
// A ClusterAddon among the templates (with its final status) is written first and its status
// last; without one, a Cluster is done once its Flux objects are Ready.
func floorFluxClusters(b testing.TB, templates []*unstructured.Unstructured, order []csv1.ReleaseComponent, names []string, ns string) (map[string]*floorFluxCluster, int) {
	b.Helper()
	withAddon := false
	for _, t := range templates {
		withAddon = withAddon || t.GetKind() == "ClusterAddon"
	}
	clusters := map[string]*floorFluxCluster{}
	objects := 0
	for _, name := range names {
		c := &floorFluxCluster{ready: map[string]bool{}, next: 1}
		var configMaps []*unstructured.Unstructured
		byComponent := map[string]*unstructured.Unstructured{}
		for _, t := range templates {
			o, err := floorObject(t, name, ns)
			must(b, err)
			objects++
			switch o.GetKind() {
			case "ClusterAddon":
				c.addon = o
				c.status, err = floorStatus(t, name)
				must(b, err)
			case "ConfigMap":
				configMaps = append(configMaps, o)
			default:
				byComponent[o.GetLabels()[csv1.ComponentLabel]] = o
				c.flux++
			}
		}
		c.groups = writeGroups(order, byComponent)
		if (withAddon && c.status == nil) || len(c.groups) == 0 || countObjects(c.groups) != c.flux {
			b.Fatalf("ordered writes: the template objects of %s are not Flux objects of the release's components %v (and a ClusterAddon with a status)", name, order)
		}
		if c.addon != nil {
			c.first = append(c.first, c.addon)
		}
		c.first = append(append(c.first, configMaps...), c.groups[0]...)
		clusters[name] = c
	}
	return clusters, objects
}

// clusterNames are the names of n Clusters made by name.
func clusterNames(n int, name func(int) string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = name(i)
	}
	return out
}

// measureFloorWithFlux runs the floor with Flux for n Clusters with `workers` concurrent writes,
// the stand-in for Flux reading the release from the bench namespace, and removes its objects
// again.
func measureFloorWithFlux(ctx context.Context, b testing.TB, e *benchEnv, w *floorWriter, templates []*unstructured.Unstructured, order []csv1.ReleaseComponent, n, workers int) floorFluxResult {
	b.Helper()
	clusters, objects := floorFluxClusters(b, templates, order, clusterNames(n, clusterName), floorNS)
	stopFlux, err := startFakeFlux(e.cfg, e.scheme, floorNS, benchNS)
	must(b, err)
	defer func() { must(b, stopFlux()) }()

	res := floorFluxResult{groups: len(clusters[clusterName(0)].groups)}
	// The same watches of the namespace as the operator's fan-out has (its tracker's): both
	// phases pay the API server for one observer alike. The times are still the writer's own.
	tracker := startTracker(ctx, b, e, floorNS, n)
	collectAPIServerGarbage(ctx, b, e)
	tracker.begin()
	before := sampleCPU(b, e)
	probe := startSpeedProbe(fanoutProbeInterval)
	run, err := runOrdered(ctx, b, e, w, clusters, objects, floorNS, workers, 30*time.Minute, nil)
	res.speed = probe.Stop()
	must(b, err)
	res.fanout, res.ready = run.fanout, run.ready
	res.cpu = before.since(sampleCPU(b, e))
	tracker.stop()
	logf("floor with Flux at %d concurrent writes, seconds to the first and each tenth of the Clusters (this observer): %s", workers, tracker.timeline())
	deleteFloor(ctx, b, w)
	return res
}

// orderedRun is how far an ordered run is: it is over once every object is written and every
// Cluster is done (its ClusterAddon status written; without a ClusterAddon, its Flux objects
// Ready).
type orderedRun struct {
	mu               sync.Mutex
	start            time.Time
	objects, written int
	clusters, done   int
	fanout, ready    time.Duration
	finished         chan struct{}
	finishedAlready  bool
}

func newOrderedRun(objects, clusters int) *orderedRun {
	return &orderedRun{objects: objects, clusters: clusters, finished: make(chan struct{})}
}

func (r *orderedRun) begin() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.start = time.Now()
}

// objectWritten counts one object written.
func (r *orderedRun) objectWritten() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.written++; r.written == r.objects {
		r.fanout = time.Since(r.start)
	}
	r.finish()
}

// clusterDone counts one Cluster done.
func (r *orderedRun) clusterDone() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done++; r.done == r.clusters {
		r.ready = time.Since(r.start)
	}
	r.finish()
}

func (r *orderedRun) finish() {
	if !r.finishedAlready && r.written == r.objects && r.done == r.clusters {
		r.finishedAlready = true
		close(r.finished)
	}
}

func (r *orderedRun) progress() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprintf("%d of %d objects written, %d of %d Clusters done", r.written, r.objects, r.done, r.clusters)
}

// runOrdered writes the clusters' writes in order with `workers` goroutines: each Cluster's
// first writes at once, the rest as a watch of namespace ns sees Flux report the objects before
// them Ready. It returns when every object is written and every Cluster is done, and fails
// after timeout, at the first write error, or when alive (if not nil, asked every 5s) reports a
// dead process.
func runOrdered(ctx context.Context, b testing.TB, e *benchEnv, w *floorWriter, clusters map[string]*floorFluxCluster, objects int, ns string, workers int, timeout time.Duration, alive func() error) (*orderedRun, error) {
	b.Helper()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	run := newOrderedRun(objects, len(clusters))
	jobs := make(chan floorFluxJob, objects+len(clusters)) // every write there is: sending never blocks
	for _, c := range clusters {
		for _, o := range c.first {
			jobs <- floorFluxJob{obj: o}
		}
	}
	watchReady(ctx, b, e, ns, func(cluster, name string) {
		c := clusters[cluster]
		if c == nil {
			return
		}
		next, allReady := c.onReady(name)
		for _, j := range next {
			jobs <- j
		}
		if allReady && c.addon == nil {
			run.clusterDone()
		}
	})

	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	run.begin()
	for range workers {
		wg.Go(func() {
			for {
				var j floorFluxJob
				select {
				case j = <-jobs:
				case <-ctx.Done():
					return
				}
				if err := w.write(ctx, j.obj, j.status); err != nil {
					mu.Lock()
					if firstErr == nil && ctx.Err() == nil {
						firstErr = err
					}
					mu.Unlock()
					cancel()
					continue
				}
				if j.status != nil {
					run.clusterDone()
				} else {
					run.objectWritten()
				}
			}
		})
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	lastLog := time.Now()
	stop := func(err error) (*orderedRun, error) {
		cancel()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		if firstErr != nil {
			return nil, firstErr
		}
		return run, err
	}
	for {
		select {
		case <-run.finished:
			return stop(nil)
		case <-ctx.Done():
			return stop(ctx.Err())
		case <-deadline.C:
			return stop(fmt.Errorf("ordered writes in namespace %s not done after %s: %s", ns, timeout, run.progress()))
		case <-tick.C:
			if alive != nil {
				if err := alive(); err != nil {
					return stop(err)
				}
			}
			if time.Since(lastLog) >= 15*time.Second {
				lastLog = time.Now()
				logf("ordered writes in namespace %s: %s", ns, run.progress())
			}
		}
	}
}

func countObjects(groups [][]*unstructured.Unstructured) int {
	n := 0
	for _, g := range groups {
		n += len(g)
	}
	return n
}

// watchReady calls ready(cluster, name) for every HelmRelease and Kustomization of namespace ns
// that is Ready at its generation (once an informer of its own, synced before it returns, sees
// it so); the informers stop with ctx.
func watchReady(ctx context.Context, b testing.TB, e *benchEnv, ns string, ready func(cluster, name string)) {
	b.Helper()
	watchObjects(ctx, b, e, ns, []client.Object{&helmv2.HelmRelease{}, &kustomizev1.Kustomization{}}, func(_ string, o client.Object) {
		var conds []metav1.Condition
		var observed int64
		switch obj := o.(type) {
		case *helmv2.HelmRelease:
			conds, observed = obj.Status.Conditions, obj.Status.ObservedGeneration
		case *kustomizev1.Kustomization:
			conds, observed = obj.Status.Conditions, obj.Status.ObservedGeneration
		}
		if fluxReady(conds, o.GetGeneration(), observed) {
			ready(o.GetLabels()[csv1.ClusterNameLabel], o.GetName())
		}
	})
}
