package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/proc"
)

// The fan-out part of the benchmark: what the operator writes for N Clusters, compared with the
// floor, the time a minimal concurrent server-side-apply writer takes to write exactly the same
// objects into the same API server.

const (
	// templateCluster is the Cluster whose generated objects, once the operator made them, are
	// the model of the floor's objects.
	templateCluster = "template-cluster"
	floorNS         = "floor"
)

// generatedKinds are the kinds of the objects the operator generates per Cluster.
var generatedKinds = []schema.GroupVersionKind{
	csv1.GroupVersion.WithKind("ClusterAddon"),
	corev1.SchemeGroupVersion.WithKind("ConfigMap"),
	helmv2.GroupVersion.WithKind(helmv2.HelmReleaseKind),
	kustomizev1.GroupVersion.WithKind(kustomizev1.KustomizationKind),
}

// templateObjects reads the objects the operator generated for the template Cluster, as the
// models of the floor's objects.
func templateObjects(ctx context.Context, b *testing.B, e *benchEnv) []*unstructured.Unstructured {
	b.Helper()
	var out []*unstructured.Unstructured
	for _, gvk := range generatedKinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		must(b, e.c.List(ctx, list, client.InNamespace(benchNS), client.MatchingLabels{csv1.ClusterNameLabel: templateCluster}))
		for i := range list.Items {
			if gvk.Kind == "ClusterAddon" || metav1.GetControllerOfNoCopy(&list.Items[i]) != nil {
				out = append(out, &list.Items[i])
			}
		}
	}
	return out
}

// floorObject is the template object t as the operator would generate it for cluster, in the
// floor's namespace: the template Cluster's name replaced everywhere, the object's name as
// fluxgen names it, without what the API server sets (uid, resourceVersion, status...).
func floorObject(t *unstructured.Unstructured, cluster string) (*unstructured.Unstructured, error) {
	raw, err := json.Marshal(t.Object)
	if err != nil {
		return nil, err
	}
	raw = []byte(strings.ReplaceAll(string(raw), templateCluster, cluster))
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(raw, &u.Object); err != nil {
		return nil, err
	}
	switch u.GetKind() {
	case "ClusterAddon":
		u.SetName(cluster)
	case "ConfigMap":
		u.SetName(fluxgen.ValuesConfigMapName(cluster, t.GetLabels()[csv1.ReleaseLabel]))
	default:
		u.SetName(fluxgen.AddonObjectName(cluster, t.GetLabels()[csv1.ComponentLabel]))
	}
	u.SetNamespace(floorNS)
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

// floorResult is what the floor writer measured.
type floorResult struct {
	objects, workers int
	// took is how long the applies took, and apiCPU the CPU time the API server spent meanwhile.
	took   time.Duration
	apiCPU time.Duration
	// statusWrites is how many status writes followed the applies, statusTook how long they
	// took and statusCPU the API server's CPU time meanwhile.
	statusWrites int
	statusTook   time.Duration
	statusCPU    time.Duration
}

// withStatuses is the floor with statuses: the applies and the status writes after them.
func (f floorResult) withStatuses() (time.Duration, time.Duration) {
	return f.took + f.statusTook, f.apiCPU + f.statusCPU
}

// measureFloor writes, for each of n Clusters, the objects the operator generated for the
// template Cluster, with `workers` concurrent server-side applies (no client-side rate limit),
// into the floor namespace: the floor, no reads, no rendering, no ordering, just the writes.
// Then, timed on their own, the same workers write the statuses no operator can avoid if its
// ClusterAddons are to end Ready, of each object the template has a status for: Flux's report
// that the HelmRelease and the Kustomization are Ready, and the ClusterAddon's final status
// (merge patches of the template's statuses, as Flux's patch helper writes them). The two
// phases together are the floor with statuses. The objects are removed again.
func measureFloor(ctx context.Context, b *testing.B, e *benchEnv, templates []*unstructured.Unstructured, n, workers int) floorResult {
	b.Helper()
	must(b, e.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: floorNS}}))
	var objs []*unstructured.Unstructured
	type statusWrite struct {
		obj   *unstructured.Unstructured
		patch []byte
	}
	var statuses []statusWrite
	for i := range n {
		for _, t := range templates {
			o, err := floorObject(t, clusterName(i))
			must(b, err)
			objs = append(objs, o)
			st, err := floorStatus(t, clusterName(i))
			must(b, err)
			if st != nil {
				statuses = append(statuses, statusWrite{obj: o, patch: st})
			}
		}
	}
	c := floorClient(b, e)
	applies, applyCPU := concurrently(b, e, workers, objs, func(o *unstructured.Unstructured) error {
		return floorWrite(ctx, c, o, nil)
	})
	statusTook, statusCPU := concurrently(b, e, workers, statuses, func(w statusWrite) error {
		return floorWrite(ctx, c, w.obj, w.patch)
	})

	for _, gvk := range generatedKinds {
		must(b, deleteAll(ctx, c, gvk, floorNS))
	}
	return floorResult{objects: len(objs), workers: workers, took: applies, apiCPU: applyCPU,
		statusWrites: len(statuses), statusTook: statusTook, statusCPU: statusCPU}
}

// floorClient is the floor writer's client: no client-side rate limit.
func floorClient(b *testing.B, e *benchEnv) client.Client {
	b.Helper()
	cfg := rest.CopyConfig(e.cfg)
	cfg.QPS, cfg.Burst = -1, 0
	c, err := client.New(cfg, client.Options{Scheme: e.scheme})
	must(b, err)
	return c
}

// floorWrite is one write of the floor writer: a server-side apply of obj, or, with a status, a
// merge patch of obj's status.
func floorWrite(ctx context.Context, c client.Client, obj *unstructured.Unstructured, status []byte) error {
	if status != nil {
		if err := c.Status().Patch(ctx, obj, client.RawPatch(types.MergePatchType, status), client.FieldOwner("floor")); err != nil {
			return fmt.Errorf("floor: status of %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
		return nil
	}
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("floor"), client.ForceOwnership); err != nil {
		return fmt.Errorf("floor: apply %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	return nil
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
func concurrently[T any](b *testing.B, e *benchEnv, workers int, items []T, write func(T) error) (time.Duration, time.Duration) {
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

// fanoutTracker watches the bench namespace and records when the generated objects of the N
// Clusters exist (per kind), and when their ClusterAddons are Ready at the release.
type fanoutTracker struct {
	n     int
	start time.Time

	mu        sync.Mutex
	seen      map[string]map[string]bool // kind -> names
	allSeen   map[string]time.Duration   // kind -> when the n-th appeared
	ready     map[string]bool
	readyTook time.Duration
	stop      context.CancelFunc
}

// startTracker starts the tracker's informers (metadata only, but for ClusterAddons) and waits
// until they are synced.
func startTracker(ctx context.Context, b *testing.B, e *benchEnv, n int) *fanoutTracker {
	b.Helper()
	t := &fanoutTracker{n: n, seen: map[string]map[string]bool{}, allSeen: map[string]time.Duration{}, ready: map[string]bool{}}
	tctx, cancel := context.WithCancel(ctx)
	t.stop = cancel
	b.Cleanup(cancel)
	var objs []client.Object
	for _, gvk := range generatedKinds {
		if gvk.Kind == "ClusterAddon" {
			objs = append(objs, &csv1.ClusterAddon{})
			continue
		}
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(gvk)
		objs = append(objs, m)
	}
	watchObjects(tctx, b, e, benchNS, objs, t.observe)
	return t
}

// watchObjects calls handle with its kind and every object of the kinds of objs in namespace ns
// as an informer of the benchmark's own (without managed fields) sees it added or updated; it
// returns once the informers are synced, and they stop with ctx.
func watchObjects(ctx context.Context, b *testing.B, e *benchEnv, ns string, objs []client.Object, handle func(kind string, o client.Object)) {
	b.Helper()
	c, err := cache.New(e.cfg, cache.Options{Scheme: e.scheme, DefaultNamespaces: map[string]cache.Config{ns: {}},
		DefaultTransform: cache.TransformStripManagedFields()})
	must(b, err)
	for _, obj := range objs {
		inf, err := c.GetInformer(ctx, obj)
		must(b, err)
		gvk, err := apiutil.GVKForObject(obj, e.scheme)
		must(b, err)
		on := func(o any) {
			if obj, ok := o.(client.Object); ok {
				handle(gvk.Kind, obj)
			}
		}
		_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    on,
			UpdateFunc: func(_, o any) { on(o) },
		})
		must(b, err)
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		b.Fatalf("the benchmark's own informers of namespace %s did not sync", ns)
	}
}

// begin starts the clock (the operator starts).
func (t *fanoutTracker) begin() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.start = time.Now()
}

func (t *fanoutTracker) observe(kind string, obj client.Object) {
	if obj.GetLabels()[csv1.ClusterNameLabel] == templateCluster {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.start.IsZero() {
		return
	}
	if t.seen[kind] == nil {
		t.seen[kind] = map[string]bool{}
	}
	if !t.seen[kind][obj.GetName()] {
		t.seen[kind][obj.GetName()] = true
		if len(t.seen[kind]) == t.n {
			t.allSeen[kind] = time.Since(t.start)
		}
	}
	if a, ok := obj.(*csv1.ClusterAddon); ok && !t.ready[a.Name] &&
		apimeta.IsStatusConditionTrue(a.Status.Conditions, csv1.ReadyCondition) && a.Status.LastAppliedRelease == release {
		t.ready[a.Name] = true
		if len(t.ready) == t.n {
			t.readyTook = time.Since(t.start)
		}
	}
}

// progress says how far the fan-out is.
func (t *fanoutTracker) progress() (fanout, ready time.Duration, msg string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var parts []string
	done := len(t.allSeen) == len(generatedKinds)
	for _, gvk := range generatedKinds {
		parts = append(parts, fmt.Sprintf("%d %ss", len(t.seen[gvk.Kind]), gvk.Kind))
		fanout = max(fanout, t.allSeen[gvk.Kind])
	}
	if !done {
		fanout = 0
	}
	return fanout, t.readyTook, fmt.Sprintf("%s; %d ClusterAddons Ready", strings.Join(parts, ", "), len(t.ready))
}

// procStats are a process's peak and current resident memory and its CPU time so far.
type procStats struct {
	peakRSS, rss int64 // bytes
	cpu          time.Duration
}

// readProcStats reads /proc/<pid>/status (VmHWM, VmRSS) and /proc/<pid>/stat (utime + stime).
func readProcStats(pid int) (procStats, error) {
	var s procStats
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, fmt.Errorf("read the status of pid %d: %w", pid, err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		name, v, ok := strings.Cut(line, ":")
		if !ok || (name != "VmHWM" && name != "VmRSS") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return s, fmt.Errorf("pid %d: %s %q: %w", pid, name, v, err)
		}
		if name == "VmHWM" {
			s.peakRSS = kb * 1024
		} else {
			s.rss = kb * 1024
		}
	}
	if s.peakRSS == 0 {
		return s, fmt.Errorf("pid %d: no VmHWM", pid)
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, fmt.Errorf("read the stat of pid %d: %w", pid, err)
	}
	// The command name (field 2) may contain spaces: fields are counted after its ')'; rest[0]
	// is field 3 (state), utime and stime are fields 14 and 15.
	text := string(stat)
	rest := strings.Fields(text[strings.LastIndexByte(text, ')')+1:])
	if len(rest) < 13 {
		return s, fmt.Errorf("pid %d: short stat %q", pid, text)
	}
	ut, err1 := strconv.ParseInt(rest[11], 10, 64)
	st, err2 := strconv.ParseInt(rest[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return s, fmt.Errorf("pid %d: stat: %w", pid, err)
	}
	s.cpu = time.Duration(ut+st) * time.Second / 100 // USER_HZ is 100 on Linux
	return s, nil
}

// apiServerStats are the management kube-apiserver's process figures.
func apiServerStats(e *benchEnv) (procStats, error) {
	pid, err := proc.ChildPid(e.apiServerBinary)
	if err != nil {
		return procStats{}, fmt.Errorf("find the kube-apiserver process: %w", err)
	}
	if pid == 0 {
		return procStats{}, fmt.Errorf("no kube-apiserver child process runs %s", e.apiServerBinary)
	}
	return readProcStats(pid)
}

func mib(n int64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }
