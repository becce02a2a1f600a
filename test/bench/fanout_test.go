package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/proc"
)

// The fan-out part of the benchmark: what the operator writes for N Clusters, and when (the
// floors it is compared with are in floor_test.go).

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
func templateObjects(ctx context.Context, b testing.TB, e *benchEnv) []*unstructured.Unstructured {
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
	tenths    map[string][]time.Duration // kind (and "Ready") -> when each tenth of n was reached
	first     map[string]time.Duration   // kind (and "Ready") -> when the first was
	stop      context.CancelFunc
}

// newFanoutTracker returns a tracker of n Clusters, its clock not started (begin).
func newFanoutTracker(n int) *fanoutTracker {
	return &fanoutTracker{n: n, seen: map[string]map[string]bool{}, allSeen: map[string]time.Duration{}, ready: map[string]bool{},
		tenths: map[string][]time.Duration{}, first: map[string]time.Duration{}}
}

// startTracker starts the tracker's informers (metadata only, but for ClusterAddons) of namespace
// ns and waits until they are synced.
func startTracker(ctx context.Context, b testing.TB, e *benchEnv, ns string, n int) *fanoutTracker {
	b.Helper()
	t := newFanoutTracker(n)
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
	watchObjects(tctx, b, e, ns, objs, t.observe)
	return t
}

// watchObjects calls handle with its kind and every object of the kinds of objs in namespace ns
// as an informer of the benchmark's own (without managed fields) sees it added or updated; it
// returns once the informers are synced, and they stop with ctx.
func watchObjects(ctx context.Context, b testing.TB, e *benchEnv, ns string, objs []client.Object, handle func(kind string, o client.Object)) {
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
		t.tenth(kind, len(t.seen[kind]))
		if len(t.seen[kind]) == t.n {
			t.allSeen[kind] = time.Since(t.start)
		}
	}
	if a, ok := obj.(*csv1.ClusterAddon); ok && !t.ready[a.Name] &&
		apimeta.IsStatusConditionTrue(a.Status.Conditions, csv1.ReadyCondition) && a.Status.LastAppliedRelease == release {
		t.ready[a.Name] = true
		t.tenth("Ready", len(t.ready))
		if len(t.ready) == t.n {
			t.readyTook = time.Since(t.start)
		}
	}
}

// tenth notes the time of the first of kind and when count, of kind, reaches the next tenth of n.
func (t *fanoutTracker) tenth(kind string, count int) {
	if count == 1 {
		t.first[kind] = time.Since(t.start)
	}
	if next := len(t.tenths[kind]) + 1; count*10 >= next*t.n {
		t.tenths[kind] = append(t.tenths[kind], time.Since(t.start))
	}
}

// timeline says when the first and each tenth of the Clusters had each generated kind, and its
// ClusterAddon Ready, as this tracker saw them: where in the run one phase fell behind another
// (the first: how long a start took).
func (t *fanoutTracker) timeline() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var lines []string
	kinds := []string{}
	for _, gvk := range generatedKinds {
		kinds = append(kinds, gvk.Kind)
	}
	for _, kind := range append(kinds, "Ready") {
		var ts []string
		if d, ok := t.first[kind]; ok {
			ts = append(ts, fmt.Sprintf("(first %.2f)", d.Seconds()))
		}
		for _, d := range t.tenths[kind] {
			ts = append(ts, fmt.Sprintf("%.1f", d.Seconds()))
		}
		lines = append(lines, fmt.Sprintf("%s %s", kind, strings.Join(ts, " ")))
	}
	return strings.Join(lines, "; ")
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

// collectAPIServerGarbage has the management API server run a garbage collection now (its heap
// profile with gc=1), and waits for it: each timed phase then starts with the API server's heap
// collected, not near the end of a cycle whose collection of the phase before's garbage the
// phase would pay for. A collection of the API server's heap of several GiB costs seconds of CPU
// on two cores, and which phase it fell in is one source of noise between runs. Call it before a
// phase's clock and CPU figures start.
func collectAPIServerGarbage(ctx context.Context, b testing.TB, e *benchEnv) {
	b.Helper()
	cs, err := kubernetes.NewForConfig(e.cfg)
	must(b, err)
	start := time.Now()
	_, err = cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/heap").Param("gc", "1").DoRaw(ctx)
	must(b, err)
	logf("the API server's heap collected in %s (untimed)", time.Since(start).Round(time.Millisecond))
}

// apiServerStats are the management kube-apiserver's process figures.
func apiServerStats(e *benchEnv) (procStats, error) {
	return serverStats(e.apiServerBinary, "--cert-dir="+filepath.Join(e.dir, "kube-apiserver"))
}

// etcdStats are the figures of the management API server's etcd.
func etcdStats(e *benchEnv) (procStats, error) {
	return serverStats(filepath.Join(filepath.Dir(e.apiServerBinary), "etcd"), "--data-dir="+filepath.Join(e.dir, "etcd"))
}

// cpuSample is the CPU time so far of the processes a fan-out costs: the API server, its etcd
// and this benchmark (the floor writer or the stand-in for Flux and the trackers).
type cpuSample struct{ api, etcd, self time.Duration }

func sampleCPU(b testing.TB, e *benchEnv) cpuSample {
	b.Helper()
	api, err := apiServerStats(e)
	must(b, err)
	etcd, err := etcdStats(e)
	must(b, err)
	self, err := readProcStats(os.Getpid())
	must(b, err)
	return cpuSample{api: api.cpu, etcd: etcd.cpu, self: self.cpu}
}

// since is the CPU each process spent from s to later.
func (s cpuSample) since(later cpuSample) cpuSample {
	return cpuSample{api: later.api - s.api, etcd: later.etcd - s.etcd, self: later.self - s.self}
}

func (s cpuSample) String() string {
	r := func(d time.Duration) time.Duration { return d.Round(100 * time.Millisecond) }
	return fmt.Sprintf("API server %s, etcd %s, this benchmark %s", r(s.api), r(s.etcd), r(s.self))
}

// serverStats are the figures of the child process running binary with arg on its command line
// (startAPIServer's kube-apiserver and etcd are told apart by their --cert-dir and --data-dir).
func serverStats(binary, arg string) (procStats, error) {
	pid, err := proc.ChildPid(binary, arg)
	if err != nil {
		return procStats{}, fmt.Errorf("find the %s process: %w", filepath.Base(binary), err)
	}
	if pid == 0 {
		return procStats{}, fmt.Errorf("no child process runs %s with %s", binary, arg)
	}
	return readProcStats(pid)
}

// resetPeakRSS starts pid's peak RSS (VmHWM) again from its current RSS (clear_refs 5).
func resetPeakRSS(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

func mib(n int64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }
