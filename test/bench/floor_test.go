package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
)

// The floors: how long a minimal concurrent writer takes to write exactly the objects the
// operator generates for N Clusters (modelled on what it generated for a template Cluster) into
// the same API server, with the verb the operator uses for each kind, no client-side rate limit,
// no reads, no rendering. Every claim made against a floor is against this writer: a faster
// writer would make a lower floor.
//
// The writer runs once per concurrency setting (BENCH_FLOOR_WORKERS), each time on fresh objects
// (the floor namespace is emptied between runs), and each floor is the fastest setting's:
//
//   - the floor: every object written;
//   - the floor with statuses: also the status writes no operator can avoid if its ClusterAddons
//     are to end Ready (Flux reporting each HelmRelease and Kustomization Ready, one ClusterAddon
//     status), both sequential (every object, then every status) and overlapped (each object's
//     status right after the object), the faster of the two;
//   - the floor with Flux (floorflux_test.go): the writer keeping the addon order while the
//     stand-in for Flux reports on what it writes.

// floorWriter is the floor writers' client and verbs.
type floorWriter struct {
	c client.Client
	// create are the kinds the operator creates with a POST (a create); it server-side-applies
	// the others.
	create map[string]bool
}

// newFloorWriter is a writer with no client-side rate limit that writes each kind of the
// templates with the verb the operator wrote it with (createdKinds).
func newFloorWriter(b testing.TB, e *benchEnv, templates []*unstructured.Unstructured) *floorWriter {
	b.Helper()
	cfg := rest.CopyConfig(e.cfg)
	cfg.QPS, cfg.Burst = -1, 0
	c, err := client.New(cfg, client.Options{Scheme: e.scheme})
	must(b, err)
	return &floorWriter{c: c, create: createdKinds(templates)}
}

// createdKinds returns the kinds of the templates the operator created rather than applied, as
// their managedFields record it: an object none of whose entries for the object itself (not a
// subresource) is an Apply was created with a POST (the ClusterAddon: ensureAddon creates it;
// the Applier server-side-applies the Flux objects and the values ConfigMap).
func createdKinds(templates []*unstructured.Unstructured) map[string]bool {
	out := map[string]bool{}
	for _, t := range templates {
		applied := false
		for _, f := range t.GetManagedFields() {
			applied = applied || (f.Subresource == "" && f.Operation == metav1.ManagedFieldsOperationApply)
		}
		if !applied {
			out[t.GetKind()] = true
		}
	}
	return out
}

// verbs says which kinds the writer creates and which it applies.
func (w *floorWriter) verbs(templates []*unstructured.Unstructured) string {
	var created, applied []string
	seen := map[string]bool{}
	for _, t := range templates {
		k := t.GetKind()
		if seen[k] {
			continue
		}
		seen[k] = true
		if w.create[k] {
			created = append(created, k)
		} else {
			applied = append(applied, k)
		}
	}
	sort.Strings(created)
	sort.Strings(applied)
	return fmt.Sprintf("created (POST): %s; server-side applied: %s", orNone(created), orNone(applied))
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// write is one write of the floor writer: with a status, a merge patch of obj's status (as
// Flux's patch helper writes it); otherwise obj created or server-side applied, as the operator
// writes its kind. It writes a copy: the client decodes the response into the object it sends.
func (w *floorWriter) write(ctx context.Context, obj *unstructured.Unstructured, status []byte) error {
	o := obj.DeepCopy()
	switch {
	case status != nil:
		if err := w.c.Status().Patch(ctx, o, client.RawPatch(types.MergePatchType, status), client.FieldOwner("floor")); err != nil {
			return fmt.Errorf("floor: status of %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	case w.create[obj.GetKind()]:
		if err := w.c.Create(ctx, o, client.FieldOwner("floor")); err != nil {
			return fmt.Errorf("floor: create %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	default:
		if err := w.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("floor"), client.ForceOwnership); err != nil {
			return fmt.Errorf("floor: apply %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	return nil
}

// floorObject is the template object t as the operator would generate it for cluster, in
// namespace ns: the template Cluster's name replaced everywhere (its values ConfigMap's name,
// which carries a hash of the Cluster's name, first), the object's name as fluxgen names it,
// without what the API server sets (uid, resourceVersion, status...).
func floorObject(t *unstructured.Unstructured, cluster, ns string) (*unstructured.Unstructured, error) {
	raw, err := json.Marshal(t.Object)
	if err != nil {
		return nil, err
	}
	rel := t.GetLabels()[csv1.ReleaseLabel]
	text := strings.ReplaceAll(string(raw), fluxgen.ValuesConfigMapName(templateCluster, rel), fluxgen.ValuesConfigMapName(cluster, rel))
	text = strings.ReplaceAll(text, templateCluster, cluster)
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(text), &u.Object); err != nil {
		return nil, err
	}
	switch u.GetKind() {
	case "ClusterAddon":
		u.SetName(cluster)
	case "ConfigMap":
		u.SetName(fluxgen.ValuesConfigMapName(cluster, rel))
	default:
		u.SetName(fluxgen.AddonObjectName(cluster, t.GetLabels()[csv1.ComponentLabel]))
	}
	u.SetNamespace(ns)
	for _, f := range [][]string{{"status"}, {"metadata", "uid"}, {"metadata", "resourceVersion"}, {"metadata", "generation"},
		{"metadata", "creationTimestamp"}, {"metadata", "managedFields"}, {"metadata", "finalizers"}} {
		unstructured.RemoveNestedField(u.Object, f...)
	}
	return u, nil
}

// floorStatus is the status the template object t ended with (what the stand-in for Flux wrote
// for a HelmRelease or Kustomization, what the operator wrote last for the ClusterAddon), as the
// body of a merge patch of cluster's copy; nil for objects without status (the ConfigMap).
func floorStatus(t *unstructured.Unstructured, cluster string) ([]byte, error) {
	status, ok := t.Object["status"]
	if !ok {
		return nil, nil
	}
	raw, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return nil, err
	}
	return []byte(strings.ReplaceAll(string(raw), templateCluster, cluster)), nil
}

// floorItem is one object of the floor and its status (nil for an object without one).
type floorItem struct {
	obj    *unstructured.Unstructured
	status []byte
}

// floorItems are the floor's objects for n Clusters, and how many have a status. The writer
// writes copies (floorWriter.write): every run writes the same bodies.
func floorItems(b testing.TB, templates []*unstructured.Unstructured, n int) (items []floorItem, statuses int) {
	b.Helper()
	for i := range n {
		for _, t := range templates {
			o, err := floorObject(t, clusterName(i), floorNS)
			must(b, err)
			st, err := floorStatus(t, clusterName(i))
			must(b, err)
			items = append(items, floorItem{obj: o, status: st})
			if st != nil {
				statuses++
			}
		}
	}
	return items, statuses
}

// floorSetting is what the floor writer measured at one concurrency.
type floorSetting struct {
	workers int
	// took is how long writing every object took, apiCPU the API server's CPU time meanwhile.
	took, apiCPU time.Duration
	// statusTook and statusCPU: then the status writes (the floor with statuses, sequential).
	statusTook, statusCPU time.Duration
	// overlapped and overlappedCPU: the floor with statuses in one pass, each object's status
	// written as soon as the object exists.
	overlapped, overlappedCPU time.Duration
	// flux is the floor with Flux.
	flux floorFluxResult
}

// sequential is the floor with statuses written after every object.
func (s floorSetting) sequential() (took, apiCPU time.Duration) {
	return s.took + s.statusTook, s.apiCPU + s.statusCPU
}

// withStatuses is the faster of the sequential and the overlapped floor with statuses.
func (s floorSetting) withStatuses() (took, apiCPU time.Duration, overlapped bool) {
	took, apiCPU = s.sequential()
	if s.overlapped > 0 && s.overlapped < took {
		return s.overlapped, s.overlappedCPU, true
	}
	return took, apiCPU, false
}

// floorResult is every setting the floor writer ran at.
type floorResult struct {
	objects, statusWrites int
	// verbs says which kinds the writer created and which it applied.
	verbs    string
	settings []floorSetting
}

// floorBest is the fastest setting for one floor.
type floorBest struct {
	took, apiCPU time.Duration
	workers      int
	// overlapped: the floor with statuses was fastest overlapped.
	overlapped bool
}

// fastest is the setting with the least of what figure measures of it.
func (f floorResult) fastest(figure func(floorSetting) (time.Duration, time.Duration, bool)) floorBest {
	var best floorBest
	for _, s := range f.settings {
		took, cpu, overlapped := figure(s)
		if best.workers == 0 || took < best.took {
			best = floorBest{took: took, apiCPU: cpu, workers: s.workers, overlapped: overlapped}
		}
	}
	return best
}

// floor is the fastest setting's time to write every object.
func (f floorResult) floor() floorBest {
	return f.fastest(func(s floorSetting) (time.Duration, time.Duration, bool) { return s.took, s.apiCPU, false })
}

// withStatuses is the fastest floor with statuses, sequential or overlapped.
func (f floorResult) withStatuses() floorBest {
	return f.fastest(floorSetting.withStatuses)
}

// withFluxFanout and withFluxReady are the fastest floor with Flux's every object written and
// every ClusterAddon status written (each a lower bound on its own, possibly of two settings).
func (f floorResult) withFluxFanout() floorBest {
	return f.fastest(func(s floorSetting) (time.Duration, time.Duration, bool) { return s.flux.fanout, s.flux.cpu.api, false })
}

func (f floorResult) withFluxReady() floorBest {
	return f.fastest(func(s floorSetting) (time.Duration, time.Duration, bool) { return s.flux.ready, s.flux.cpu.api, false })
}

// at is the setting of `workers` concurrent writes.
func (f floorResult) at(workers int) floorSetting {
	for _, s := range f.settings {
		if s.workers == workers {
			return s
		}
	}
	return floorSetting{}
}

// measureFloors runs the floor writer once per concurrency in workers, into the floor namespace,
// and removes its objects after each run: at each setting, every object written, then the
// status writes (the floor with statuses, sequential); every object with its status right after
// it (overlapped); and the floor with Flux (order: the release's addon order).
func measureFloors(ctx context.Context, b testing.TB, e *benchEnv, templates []*unstructured.Unstructured, order []csv1.ReleaseComponent, n int, workers []int) floorResult {
	b.Helper()
	must(b, e.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: floorNS}}))
	w := newFloorWriter(b, e, templates)
	items, statuses := floorItems(b, templates, n)
	var withStatus []floorItem
	for _, it := range items {
		if it.status != nil {
			withStatus = append(withStatus, it)
		}
	}
	res := floorResult{verbs: w.verbs(templates), objects: len(items), statusWrites: statuses}
	logf("floor writer (%s, no client-side rate limit), at %v concurrent writes", res.verbs, workers)
	for _, k := range workers {
		s := floorSetting{workers: k}
		collectAPIServerGarbage(ctx, b, e)
		s.took, s.apiCPU = concurrently(b, e, k, items, func(it floorItem) error { return w.write(ctx, it.obj, nil) })
		collectAPIServerGarbage(ctx, b, e)
		s.statusTook, s.statusCPU = concurrently(b, e, k, withStatus, func(it floorItem) error { return w.write(ctx, it.obj, it.status) })
		deleteFloor(ctx, b, w)

		collectAPIServerGarbage(ctx, b, e)
		s.overlapped, s.overlappedCPU = concurrently(b, e, k, items, func(it floorItem) error {
			if err := w.write(ctx, it.obj, nil); err != nil || it.status == nil {
				return err
			}
			return w.write(ctx, it.obj, it.status)
		})
		deleteFloor(ctx, b, w)

		s.flux = measureFloorWithFlux(ctx, b, e, w, templates, order, n, k)
		seq, _ := s.sequential()
		logf("floor writer at %d concurrent writes: every object %s; with statuses: sequential %s, overlapped %s; with Flux: every object %s, every ClusterAddon status %s",
			k, s.took.Round(time.Millisecond), seq.Round(time.Millisecond), s.overlapped.Round(time.Millisecond),
			s.flux.fanout.Round(time.Millisecond), s.flux.ready.Round(time.Millisecond))
		res.settings = append(res.settings, s)
	}
	return res
}

// deleteFloor deletes every generated object of the floor namespace.
func deleteFloor(ctx context.Context, b testing.TB, w *floorWriter) {
	b.Helper()
	for _, gvk := range generatedKinds {
		must(b, deleteAll(ctx, w.c, gvk, floorNS))
	}
}

// deleteAll deletes every object of kind gvk in namespace ns. A collection delete of 10,000
// objects can outlast the API server's request timeout: then it deleted what it could, and it
// is sent again until none is left.
func deleteAll(ctx context.Context, c client.Client, gvk schema.GroupVersionKind, ns string) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	var err error
	for range 10 {
		if err = c.DeleteAllOf(ctx, u, client.InNamespace(ns)); err == nil {
			return nil
		}
		logf("delete the floor's %ss again: %v", gvk.Kind, err)
	}
	return err
}

// concurrently calls write for every item with `workers` goroutines, and returns how long that
// took and the CPU time the API server spent meanwhile. The first error fails the benchmark.
func concurrently[T any](b testing.TB, e *benchEnv, workers int, items []T, write func(T) error) (time.Duration, time.Duration) {
	b.Helper()
	jobs := make(chan T)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	before, err := apiServerStats(e)
	must(b, err)
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for item := range jobs {
				if err := write(item); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for _, item := range items {
		jobs <- item
	}
	close(jobs)
	wg.Wait()
	took := time.Since(start)
	must(b, firstErr)
	after, err := apiServerStats(e)
	must(b, err)
	return took, after.cpu - before.cpu
}
