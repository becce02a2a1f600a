package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// The floor with Flux: what an operator that costs nothing itself could reach against the same
// API server while Flux is at work. The floor writer applies the same objects, but keeps the
// one order the operator cannot drop (Flux orders a Cluster's addons only within a kind, so a
// component after one of another kind in addon order is created only once that one is Ready),
// while the stand-in for Flux reports on what it writes as it does in the operator's run; once
// every Flux object of a Cluster is Ready it writes the ClusterAddon's final status. No reads
// but one watch, no rendering, no status in between: its fan-out and its Ready are lower bounds
// of the operator's.

// floorFluxResult is what the floor with Flux measured.
type floorFluxResult struct {
	// groups is how many steps a Cluster's Flux objects are written in (runs of one kind in addon
	// order).
	groups int
	// fanout is how long until every object was written, ready until every ClusterAddon status
	// was, and apiCPU the API server's CPU time until then.
	fanout, ready, apiCPU time.Duration
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

// floorFluxCluster is one Cluster's writes in the floor with Flux, and how far they are.
type floorFluxCluster struct {
	first  []*unstructured.Unstructured // the ClusterAddon, the values ConfigMap, the first group
	groups [][]*unstructured.Unstructured
	addon  *unstructured.Unstructured
	status []byte // the ClusterAddon's final status, a merge patch

	mu    sync.Mutex
	next  int             // the next group to write
	ready map[string]bool // the Flux objects Ready so far, by name
	flux  int             // how many Flux objects the Cluster has
}

// floorFluxJob is one write: an apply of obj, or a status merge patch of it.
type floorFluxJob struct {
	obj    *unstructured.Unstructured
	status []byte
}

// onReady records that the Cluster's Flux object name is Ready and returns the writes that
// follow: the next group when name is the last object of the group before it, the ClusterAddon's
// status when every Flux object is Ready.
func (c *floorFluxCluster) onReady(name string) []floorFluxJob {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ready[name] {
		return nil
	}
	c.ready[name] = true
	var jobs []floorFluxJob
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
		jobs = append(jobs, floorFluxJob{obj: c.addon, status: c.status})
	}
	return jobs
}

// floorFluxClusters are the floor with Flux's writes for n Clusters, by Cluster name, made of the
// templates, the Flux objects in the release's addon order; and how many objects they apply.
func floorFluxClusters(b *testing.B, templates []*unstructured.Unstructured, order []csv1.ReleaseComponent, n int) (map[string]*floorFluxCluster, int) {
	b.Helper()
	clusters := map[string]*floorFluxCluster{}
	objects := 0
	for i := range n {
		name := clusterName(i)
		c := &floorFluxCluster{ready: map[string]bool{}, next: 1}
		var configMaps []*unstructured.Unstructured
		byComponent := map[string]*unstructured.Unstructured{}
		for _, t := range templates {
			o, err := floorObject(t, name)
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
		if c.addon == nil || c.status == nil || len(c.groups) == 0 || countObjects(c.groups) != c.flux {
			b.Fatalf("floor with Flux: the template objects of %s are not a ClusterAddon with a status and Flux objects of the release's components %v", name, order)
		}
		c.first = append(append([]*unstructured.Unstructured{c.addon}, configMaps...), c.groups[0]...)
		clusters[name] = c
	}
	return clusters, objects
}

// measureFloorWithFlux runs the floor with Flux for n Clusters with `workers` concurrent writes,
// the stand-in for Flux reading the release from the bench namespace, and removes its objects
// again.
func measureFloorWithFlux(ctx context.Context, b *testing.B, e *benchEnv, templates []*unstructured.Unstructured, order []csv1.ReleaseComponent, n, workers int) floorFluxResult {
	b.Helper()
	clusters, objects := floorFluxClusters(b, templates, order, n)
	stopFlux, err := startFakeFlux(e.cfg, e.scheme, floorNS, benchNS)
	must(b, err)
	defer func() { must(b, stopFlux()) }()

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan floorFluxJob, objects+n) // every write there is: sending never blocks
	res := floorFluxResult{}
	for i := range n {
		c := clusters[clusterName(i)]
		res.groups = len(c.groups)
		for _, o := range c.first {
			jobs <- floorFluxJob{obj: o}
		}
	}
	watchReady(wctx, b, e, func(cluster, name string) {
		if c := clusters[cluster]; c != nil {
			for _, j := range c.onReady(name) {
				jobs <- j
			}
		}
	})

	cl := floorClient(b, e)
	before, err := apiServerStats(e)
	must(b, err)
	res.fanout, res.ready, err = runFloorFlux(wctx, cl, jobs, workers, objects, n)
	cancel()
	must(b, err)
	after, err := apiServerStats(e)
	must(b, err)
	res.apiCPU = after.cpu - before.cpu
	for _, gvk := range generatedKinds {
		must(b, deleteAll(ctx, cl, gvk, floorNS))
	}
	return res
}

// runFloorFlux writes the jobs with `workers` goroutines until `objects` applies and `statuses`
// status writes are done, and returns how long until the last apply and until the last status
// write. It stops at the first error, or after 30 minutes.
func runFloorFlux(ctx context.Context, c client.Client, jobs <-chan floorFluxJob, workers, objects, statuses int) (fanout, ready time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	var (
		mu               sync.Mutex
		applied, written int
		firstErr         error
		wg               sync.WaitGroup
	)
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for {
				var j floorFluxJob
				select {
				case j = <-jobs:
				case <-ctx.Done():
					return
				}
				err := floorWrite(ctx, c, j.obj, j.status)
				mu.Lock()
				switch {
				case err != nil:
					if firstErr == nil && ctx.Err() == nil {
						firstErr = fmt.Errorf("floor with Flux: %w", err)
					}
					cancel()
				case j.status != nil:
					if written++; written == statuses {
						ready = time.Since(start)
						cancel()
					}
				default:
					if applied++; applied == objects {
						fanout = time.Since(start)
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	switch {
	case firstErr != nil:
		return 0, 0, firstErr
	case ready == 0:
		return 0, 0, fmt.Errorf("floor with Flux: not done after 30m: %d of %d objects written, %d of %d ClusterAddon statuses", applied, objects, written, statuses)
	}
	return fanout, ready, nil
}

func countObjects(groups [][]*unstructured.Unstructured) int {
	n := 0
	for _, g := range groups {
		n += len(g)
	}
	return n
}

// watchReady calls ready(cluster, name) for every HelmRelease and Kustomization of the floor
// namespace that is Ready at its generation (once an informer of its own, synced before it
// returns, sees it so); the informers stop with ctx.
func watchReady(ctx context.Context, b *testing.B, e *benchEnv, ready func(cluster, name string)) {
	b.Helper()
	watchObjects(ctx, b, e, floorNS, []client.Object{&helmv2.HelmRelease{}, &kustomizev1.Kustomization{}}, func(_ string, o client.Object) {
		var conds []metav1.Condition
		switch obj := o.(type) {
		case *helmv2.HelmRelease:
			conds = obj.Status.Conditions
		case *kustomizev1.Kustomization:
			conds = obj.Status.Conditions
		}
		if r := apimeta.FindStatusCondition(conds, meta.ReadyCondition); r != nil && r.Status == metav1.ConditionTrue && r.ObservedGeneration == o.GetGeneration() {
			ready(o.GetLabels()[csv1.ClusterNameLabel], o.GetName())
		}
	})
}
