// Package bench holds BenchmarkIdleWritesAndStatusLatency, run by `make bench`: the operator
// binary (bin/manager) against a real kube-apiserver with N CAPI Clusters. It measures, in one
// run on one API server:
//
//   - the floors (floor_test.go), each the fastest of a sweep of the writer's concurrency: the
//     floor, how long a minimal concurrent writer takes to write exactly the objects the operator
//     generates for the N Clusters (modelled on what it generated for a template Cluster), each
//     kind with the operator's verb (a create or a server-side apply), with no reads, rendering
//     or ordering; the floor with statuses: also the status writes of those objects that no
//     operator can avoid (Flux reporting the HelmRelease and the Kustomization Ready, one
//     ClusterAddon status), after every object or each right after its object, the faster; and
//     the floor with Flux: the same writer keeping the addon order while the stand-in for Flux
//     reports on what it writes, each ClusterAddon's status last (floorflux_test.go), the lower
//     bound of the operator's fan-out and Ready against this writer;
//   - the fan-out: from the operator's start (the N Clusters exist) until every generated object
//     is written, and until every ClusterAddon is Ready, as ratios to the three floors;
//   - the operator's API writes and reconciles per Cluster, the API server's writes and reads
//     by resource (which objects they went to), the CPU the operator, the API server and this
//     benchmark (the stand-in for Flux) spent until converged, the operator's peak RSS and the
//     API server's;
//   - what it pays when nothing happens (API writes while idle, expected 0) and how quickly a
//     Flux readiness change shows in a ClusterAddon's conditions (p50/p99).
//
// It reports figures and asserts no timing.
//
// Settings (flag after -args, or environment):
//
//	-bench.clusters     / BENCH_CLUSTERS       number of CAPI Clusters (300)
//	-bench.idle         / BENCH_IDLE           idle window (10m; e.g. 2m for a quick run)
//	-bench.samples      / BENCH_SAMPLES        Ready flips for the status latency (20)
//	-bench.floor-workers/ BENCH_FLOOR_WORKERS  the floor writer's concurrent writes, a comma-separated
//	                                           list run in turn, the fastest taken ("8,32,128")
//	-bench.manager-args / BENCH_MANAGER_ARGS   more operator flags, e.g. "--concurrent=4"
//	-bench.manager-env  / BENCH_MANAGER_ENV    more operator environment, e.g. "GOMEMLIMIT=255MiB"
//	-bench.log-level    / BENCH_LOG_LEVEL      the operator's --zap-log-level (info; debug to find churn)
//	-bench.keep         / BENCH_KEEP=1         keep the state directory with all logs
//	-bench.manager      / BENCH_MANAGER        the operator binary (bin/manager), e.g. to compare two builds
//	-bench.addon-order  / BENCH_ADDON_ORDER    "stack": the reference stack's clusteraddon.yaml (cni, then
//	                                           cluster-info: two steps); "none": without it (alphabetical: cluster-info,
//	                                           then cni: still two steps, as Flux orders only within a kind)
package bench

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/plane"
	"github.com/clusterstack-io/clusterstack-operator/internal/metrics"
	"github.com/clusterstack-io/clusterstack-operator/test/bench/benchresult"
	"github.com/clusterstack-io/clusterstack-operator/test/framework"
)

const (
	benchNS   = "bench"
	stackName = "aws-base-1-36"
	release   = framework.TagPrefix + "v1"
	repoName  = "stacks"
)

type benchConfig struct {
	clusters int
	// floorWorkers are the floor writer's concurrency settings, each run in turn.
	floorWorkers []int
	managerArgs  []string
	managerEnv   []string
	idle         time.Duration
	samples      int
	logLevel     string
	keep         bool
	manager      string
	// addonOrder is "stack" or "none" (the stack published without its clusteraddon.yaml: the
	// alphabetical order).
	addonOrder string
	// shipped runs the operator as config/manager and config/rbac ship it: leader election on,
	// the identity of its ServiceAccount with exactly its ClusterRole and Role; and the API
	// server records that identity's writes in an audit log (benchEnv.auditLog).
	shipped bool
}

var (
	flagClusters = flag.String("bench.clusters", envOr("BENCH_CLUSTERS", "300"), "number of CAPI Clusters")
	flagIdle     = flag.String("bench.idle", envOr("BENCH_IDLE", "10m"), "idle window in which API writes are counted")
	flagSamples  = flag.String("bench.samples", envOr("BENCH_SAMPLES", "20"), "number of HelmRelease Ready flips for the status latency")
	flagLogLevel = flag.String("bench.log-level", envOr("BENCH_LOG_LEVEL", "info"), "the operator's --zap-log-level")
	flagKeep     = flag.Bool("bench.keep", os.Getenv("BENCH_KEEP") != "", "keep the state directory and logs")
	flagManager  = flag.String("bench.manager", os.Getenv("BENCH_MANAGER"), "the operator binary; bin/manager when empty")
	flagArgs     = flag.String("bench.manager-args", os.Getenv("BENCH_MANAGER_ARGS"), "more flags for the operator, space-separated (e.g. --concurrent=4)")
	flagEnv      = flag.String("bench.manager-env", os.Getenv("BENCH_MANAGER_ENV"), "more environment for the operator, space-separated (e.g. GOMEMLIMIT=255MiB, what --memory-limit-ratio sets in a container with a 300 MiB memory limit)")
	flagFloor    = flag.String("bench.floor-workers", envOr("BENCH_FLOOR_WORKERS", "8,32,128"), "the floor writer's concurrent writes: a comma-separated list, each run in turn, the fastest taken")
	flagOrder    = flag.String("bench.addon-order", envOr("BENCH_ADDON_ORDER", "stack"), `"stack": the reference stack's addon order (clusteraddon.yaml); "none": without it (the alphabetical order)`)
)

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func loadConfig() (benchConfig, error) {
	cfg := benchConfig{logLevel: *flagLogLevel, keep: *flagKeep, manager: *flagManager, managerArgs: strings.Fields(*flagArgs), managerEnv: strings.Fields(*flagEnv), addonOrder: *flagOrder}
	var err error
	if cfg.addonOrder != "stack" && cfg.addonOrder != "none" {
		return cfg, fmt.Errorf(`BENCH_ADDON_ORDER / -bench.addon-order: want "stack" or "none", got %q`, cfg.addonOrder)
	}
	if cfg.floorWorkers, err = parseWorkers(*flagFloor); err != nil {
		return cfg, fmt.Errorf("BENCH_FLOOR_WORKERS / -bench.floor-workers: %w", err)
	}
	if cfg.clusters, err = strconv.Atoi(*flagClusters); err != nil || cfg.clusters < 1 {
		return cfg, fmt.Errorf("BENCH_CLUSTERS / -bench.clusters: want a positive number, got %q", *flagClusters)
	}
	if cfg.idle, err = time.ParseDuration(*flagIdle); err != nil || cfg.idle <= 0 {
		return cfg, fmt.Errorf("BENCH_IDLE / -bench.idle: want a positive duration such as 2m, got %q", *flagIdle)
	}
	if cfg.samples, err = strconv.Atoi(*flagSamples); err != nil || cfg.samples < 1 {
		return cfg, fmt.Errorf("BENCH_SAMPLES / -bench.samples: want a positive number, got %q", *flagSamples)
	}
	return cfg, nil
}

// parseWorkers parses a comma-separated list of positive numbers, such as "8,32,128".
func parseWorkers(list string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("want positive numbers separated by commas (e.g. 8,32,128), got %q", list)
		}
		out = append(out, n)
	}
	return out, nil
}

var started = time.Now()

func logf(format string, args ...any) {
	fmt.Printf("bench %7.1fs: %s\n", time.Since(started).Seconds(), fmt.Sprintf(format, args...))
}

// BenchmarkIdleWritesAndStatusLatency runs once whatever b.N is (make bench passes -benchtime 1x).
func BenchmarkIdleWritesAndStatusLatency(b *testing.B) {
	cfg, err := loadConfig()
	if err != nil {
		b.Fatal(err)
	}
	started = time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	wd, err := os.Getwd()
	if err != nil {
		b.Fatal(err)
	}
	root, err := plane.FindRepoRoot(wd)
	if err != nil {
		b.Fatal(err)
	}

	e := startEnv(ctx, b, root, cfg)
	benchLog, err := os.Create(filepath.Join(e.logDir, "bench-controllers.log"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = benchLog.Close() })
	ctrl.SetLogger(zap.New(zap.WriteTo(benchLog)))
	logf("API server, source-controller and operator up; logs in %s", e.logDir)

	// The stack, published to the Git server, and a ClusterStack delivering its v1.
	publishStack(ctx, b, e, root, cfg.addonOrder)
	for _, ns := range []string{benchNS, "flux-system"} {
		must(b, e.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	must(b, e.c.Create(ctx, &csv1.ClusterStack{
		ObjectMeta: metav1.ObjectMeta{Name: stackName, Namespace: benchNS},
		Spec: csv1.ClusterStackSpec{
			Provider: "aws", Name: "base", KubernetesVersion: "1.36",
			Source:   csv1.StackSource{URL: e.git.RepoURL(repoName), Path: "aws/base/1-36"},
			Versions: []string{"v1"},
			// Short, so that source-controller's periodic reconciles fall into the idle window.
			Interval: &metav1.Duration{Duration: time.Minute},
		},
	}))
	stopFlux, err := startFakeFlux(e.cfg, e.scheme, benchNS, "")
	if err != nil {
		b.Fatal(err)
	}
	fluxStopped := false
	b.Cleanup(func() {
		if !fluxStopped {
			_ = stopFlux()
		}
	})
	tRelease := time.Now()
	rel := &csv1.ClusterStackRelease{}
	waitFor(ctx, b, e, 3*time.Minute, "release "+release+" Available", func() (bool, string, error) {
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: benchNS, Name: release}, rel); err != nil {
			return false, err.Error(), client.IgnoreNotFound(err)
		}
		c := apimeta.FindStatusCondition(rel.Status.Conditions, csv1.ReadyCondition)
		if c == nil {
			return false, "no Ready condition yet", nil
		}
		return c.Status == metav1.ConditionTrue, c.Message, nil
	})
	logf("release %s Available after %s (revision %s)", release, since(tRelease), rel.Status.Revision)

	// One Cluster first: what the operator generates for it is the model of the floor's objects.
	must(b, createCluster(ctx, e.c, templateCluster, kubeconfig))
	waitFor(ctx, b, e, 2*time.Minute, "the template Cluster's ClusterAddon Ready", func() (bool, string, error) {
		a := &csv1.ClusterAddon{}
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: benchNS, Name: templateCluster}, a); err != nil {
			return false, err.Error(), client.IgnoreNotFound(err)
		}
		return apimeta.IsStatusConditionTrue(a.Status.Conditions, csv1.ReadyCondition), a.Status.Progress, nil
	})
	templates := templateObjects(ctx, b, e)
	perCluster := len(templates)

	// N Clusters as CAPI would leave them (an AWSCluster, the control plane initialized, the
	// kubeconfig Secret written), made while the operator is stopped: when it starts, they are all
	// there, as after an install or a restart of the operator on a full management cluster.
	must(b, e.stopManager())
	tCreate := time.Now()
	createClusters(ctx, b, e, cfg.clusters)
	created := time.Since(tCreate)
	logf("%d Clusters created in %s (operator stopped)", cfg.clusters, created.Round(time.Millisecond))

	// The floors, against this writer: the same objects, written by a minimal concurrent writer
	// with the operator's verbs, at each concurrency setting; with the status writes no operator
	// can avoid (Flux's Ready reports, one ClusterAddon status); and keeping the addon order with
	// the stand-in for Flux at work (the best an operator could do against this API server with
	// Flux at work). Each is the fastest setting's.
	floors := measureFloors(ctx, b, e, templates, rel.Status.Components, cfg.clusters, cfg.floorWorkers)
	floor, floorSt, floorFluxFanout, floorFluxReady := floors.floor(), floors.withStatuses(), floors.withFluxFanout(), floors.withFluxReady()
	floorFluxGroups := floors.settings[0].flux.groups
	floorFluxFanoutRatio, floorFluxReadyRatio := floorFluxFanout.took.Seconds()/floor.took.Seconds(), floorFluxReady.took.Seconds()/floor.took.Seconds()
	logf("floor (against this writer): %d objects (%d per Cluster) in %s at %d concurrent writes; API server CPU %s",
		floors.objects, perCluster, floor.took.Round(time.Millisecond), floor.workers, floor.apiCPU.Round(100*time.Millisecond))
	logf("floor with statuses: %d status writes more (%.0f per Cluster), in all %s at %d concurrent writes, %s; API server CPU %s",
		floors.statusWrites, float64(floors.statusWrites)/float64(cfg.clusters), floorSt.took.Round(time.Millisecond), floorSt.workers,
		overlappedText(floorSt.overlapped), floorSt.apiCPU.Round(100*time.Millisecond))
	logf("floor with Flux: every object written after %s (%.2fx the floor, at %d concurrent writes), every ClusterAddon status after %s (%.2fx the floor, at %d); %d write steps per Cluster; CPU until then: %s (the writer, the stand-in for Flux)",
		floorFluxFanout.took.Round(time.Millisecond), floorFluxFanoutRatio, floorFluxFanout.workers,
		floorFluxReady.took.Round(time.Millisecond), floorFluxReadyRatio, floorFluxReady.workers, floorFluxGroups,
		floors.at(floorFluxReady.workers).flux.cpu)

	// The operator starts; the clock runs from its start.
	tracker := startTracker(ctx, b, e, benchNS, cfg.clusters)
	collectAPIServerGarbage(ctx, b, e) // before the clock starts
	tracker.begin()
	apiWritesAtStart, apiReadsAtStart := scrapeAPIWrites(ctx, b, e), scrapeAPIReads(ctx, b, e)
	cpuAtStart := sampleCPU(b, e)
	probe := startSpeedProbe(fanoutProbeInterval)
	tStart := time.Now()
	if err := e.startManager(ctx); err != nil {
		b.Fatalf("start the operator again: %v", err)
	}
	startup := time.Since(tStart)
	var lastProgress time.Time
	var fanout, convergeAddons time.Duration
	waitFor(ctx, b, e, 60*time.Minute, fmt.Sprintf("%d Clusters' objects written and ClusterAddons Ready", cfg.clusters), func() (bool, string, error) {
		var msg string
		fanout, convergeAddons, msg = tracker.progress()
		if time.Since(lastProgress) > 15*time.Second {
			lastProgress = time.Now()
			logf("converging: %s", msg)
		}
		return fanout > 0 && convergeAddons > 0, msg, nil
	})
	tracker.stop()
	speed := probe.Stop()
	floorSpeed := floors.at(floorFluxReady.workers).flux.speed
	logf("operator, seconds to the first and each tenth of the Clusters: %s", tracker.timeline())
	logf("machine speed (speedProbe): floor with Flux at %d concurrent writes %s; operator %s (%.2fx: above 1, the machine was slower for the operator)",
		floorFluxReady.workers, floorSpeed, speed, speed.over(floorSpeed))
	opAtConverge, err := readProcStats(e.manager.Pid())
	must(b, err)
	cpuConverge := cpuAtStart.since(sampleCPU(b, e))
	writesAtCreate, reconcilesAtCreate := map[string]float64{}, map[string]float64{} // a new process: its counters start at 0
	total := cfg.clusters + 1
	cs := &csv1.ClusterStack{}
	want := fmt.Sprintf("%d/%d", total, total)
	waitFor(ctx, b, e, 5*time.Minute, "ClusterStack Ready with "+want, func() (bool, string, error) {
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: benchNS, Name: stackName}, cs); err != nil {
			return false, "", err
		}
		return cs.Status.ClustersSummary == want && apimeta.IsStatusConditionTrue(cs.Status.Conditions, csv1.ReadyCondition), cs.Status.ClustersSummary, nil
	})
	converge := time.Since(tStart)
	convergeWrites, convergeBreakdown := diffCounts(writesAtCreate, scrapeWrites(ctx, b, e))
	convergeReconciles, reconciles := diffCounts(reconcilesAtCreate, scrapeReconciles(ctx, b, e))
	_, apiWrites := diffCounts(apiWritesAtStart, scrapeAPIWrites(ctx, b, e))
	_, apiReads := diffCounts(apiReadsAtStart, scrapeAPIReads(ctx, b, e))
	logf("API server reads to converge, by resource (every client): %s", apiReads)
	logf("API server writes to converge, by resource (every writer: the stand-in for Flux writes helmreleases/status and kustomizations/status): %s", apiWrites)
	logf("operator API writes to converge: %d %s; reconciles: %d %s", convergeWrites, convergeBreakdown, convergeReconciles, reconciles)
	logf("converged: every ClusterAddon Ready after %s, ClusterStack %s Ready after %s", convergeAddons.Round(time.Millisecond), want, converge.Round(time.Millisecond))

	// Nothing changes from here on: Flux's part is done.
	fluxStopped = true
	if err := stopFlux(); err != nil {
		b.Fatal(err)
	}
	checkOperatorMetrics(ctx, b, e, total)

	// (i) Idle writes.
	settled, settleTook := settle(ctx, b, e)
	before := scrapeWrites(ctx, b, e)
	snapBefore := snapshot(ctx, b, e)
	logf("idle window of %s starts (settled: %v after %s)", cfg.idle, settled, settleTook.Round(time.Second))
	idleEnd := time.Now().Add(cfg.idle)
	for time.Now().Before(idleEnd) {
		select {
		case <-ctx.Done():
			b.Fatal(ctx.Err())
		case <-time.After(min(5*time.Second, time.Until(idleEnd))):
		}
		if err := e.alive(); err != nil {
			b.Fatal(err)
		}
	}
	after := scrapeWrites(ctx, b, e)
	snapAfter := snapshot(ctx, b, e)
	writes, breakdown := diffCounts(before, after)
	perMin := float64(writes) / cfg.idle.Minutes()
	logf("idle window over: %d operator API writes (%.2f/min) %s", writes, perMin, breakdown)
	changes := diffSnapshots(snapBefore, snapAfter)
	for _, c := range changes {
		logf("  changed during the idle window: %s", c)
	}

	// (ii) Status latency.
	var down, up []time.Duration
	for i := range cfg.samples {
		cluster := clusterName(i * cfg.clusters / cfg.samples)
		d, u := flipSample(ctx, b, e, cluster)
		down, up = append(down, d), append(up, u)
		time.Sleep(300 * time.Millisecond) // let the stack's status follow before the next flip
	}
	all := append(append([]time.Duration{}, down...), up...)
	p50, p99, pmax := percentile(all, 50), percentile(all, 99), percentile(all, 100)
	op, err := readProcStats(e.manager.Pid())
	must(b, err)
	api, err := apiServerStats(e)
	must(b, err)

	fanoutRatio := fanout.Seconds() / floor.took.Seconds()
	readyRatio := convergeAddons.Seconds() / floor.took.Seconds()
	fanoutStRatio := fanout.Seconds() / floorSt.took.Seconds()
	readyStRatio := convergeAddons.Seconds() / floorSt.took.Seconds()
	fanoutFluxRatio := fanout.Seconds() / floorFluxFanout.took.Seconds()
	readyFluxRatio := convergeAddons.Seconds() / floorFluxReady.took.Seconds()
	writesPer := float64(convergeWrites) / float64(cfg.clusters)
	b.ReportMetric(0, "ns/op") // setup dominates the wall time; it is not the figure
	b.ReportMetric(float64(cfg.clusters), "clusters")
	b.ReportMetric(floor.took.Seconds(), "floor-s")
	b.ReportMetric(float64(floor.workers), "floor-workers")
	b.ReportMetric(fanout.Seconds(), "fanout-s")
	b.ReportMetric(fanoutRatio, "fanout/floor")
	b.ReportMetric(floorSt.took.Seconds(), "floor-status-s")
	b.ReportMetric(readyStRatio, "ready/floor-status")
	b.ReportMetric(floorFluxFanout.took.Seconds(), "floor-flux-fanout-s")
	b.ReportMetric(floorFluxReady.took.Seconds(), "floor-flux-ready-s")
	b.ReportMetric(fanoutFluxRatio, "fanout/floor-flux")
	b.ReportMetric(readyFluxRatio, "ready/floor-flux")
	b.ReportMetric(convergeAddons.Seconds(), "ready-s")
	b.ReportMetric(readyRatio, "ready/floor")
	b.ReportMetric(writesPer, "converge-writes/cluster")
	b.ReportMetric(float64(convergeReconciles)/float64(cfg.clusters), "converge-reconciles/cluster")
	b.ReportMetric(float64(op.peakRSS)/(1<<20), "operator-peak-rss-MiB")
	b.ReportMetric(float64(writes), "writes/idle-window")
	b.ReportMetric(ms(p50), "p50-latency-ms")
	b.ReportMetric(ms(p99), "p99-latency-ms")
	var sweep []benchresult.FloorSetting
	for _, s := range floors.settings {
		seq, _ := s.sequential()
		sweep = append(sweep, benchresult.FloorSetting{Workers: s.workers, Floor: s.took.Seconds(),
			WithStatusesSequential: seq.Seconds(), WithStatusesOverlapped: s.overlapped.Seconds(),
			WithFluxFanout: s.flux.fanout.Seconds(), WithFluxReady: s.flux.ready.Seconds()})
	}
	must(b, benchresult.Write(os.Getenv("BENCH_RESULT"), benchresult.Result{Kind: benchresult.FanoutKind, Fanout: &benchresult.Fanout{
		Clusters: cfg.clusters, ObjectsPerCluster: perCluster, FloorVerbs: floors.verbs, FloorSweep: sweep,
		Floor: floor.took.Seconds(), FloorWorkers: floor.workers,
		FloorWithStatuses: floorSt.took.Seconds(), FloorWithStatusesWorkers: floorSt.workers, FloorWithStatusesOverlapped: floorSt.overlapped,
		FloorWithFluxFanout: floorFluxFanout.took.Seconds(), FloorWithFluxFanoutWorkers: floorFluxFanout.workers,
		FloorWithFluxReady: floorFluxReady.took.Seconds(), FloorWithFluxReadyWorkers: floorFluxReady.workers,
		Fanout: fanout.Seconds(), Ready: convergeAddons.Seconds(),
		WritesPerCluster: writesPer, ReconcilesPerCluster: float64(convergeReconciles) / float64(cfg.clusters),
		OperatorCPU: opAtConverge.cpu.Seconds(), APIServerCPU: cpuConverge.api.Seconds(),
		OperatorPeakRSS: op.peakRSS, APIServerPeakRSS: api.peakRSS,
		IdleWrites: writes, IdleWindow: cfg.idle.Seconds(), StatusP50: p50.Seconds(), StatusP99: p99.Seconds(),
		ManagerArgs: cfg.managerArgs, ManagerEnv: cfg.managerEnv, ManagerWrapper: cfg.manager,
		JobCPUms: ms(speed.JobCPU), FloorWithFluxJobCPUms: ms(floorSpeed.JobCPU),
		StealPercent: speed.StealPercent, FloorWithFluxStealPercent: floorSpeed.StealPercent,
	}}))

	var floorLines strings.Builder
	fmt.Fprintf(&floorLines, "    concurrent writes   floor        with statuses: sequential / overlapped   with Flux: every object written / every ClusterAddon status\n")
	for _, s := range floors.settings {
		seq, _ := s.sequential()
		fmt.Fprintf(&floorLines, "    %-19d %-12s %-40s %s / %s\n", s.workers, s.took.Round(time.Millisecond),
			seq.Round(time.Millisecond).String()+" / "+s.overlapped.Round(time.Millisecond).String(),
			s.flux.fanout.Round(time.Millisecond), s.flux.ready.Round(time.Millisecond))
	}
	fmt.Printf(`
ClusterStack operator benchmark: bin/manager against a real kube-apiserver, %d Clusters
  (each: Cluster + AWSCluster + kubeconfig Secret -> %d generated objects: ClusterAddon, values ConfigMap, HelmRelease, Kustomization)
  addon order                                 %s
  create the Clusters (operator stopped)        %s
  the floors, against this writer: %d objects (%s; no client-side rate limit, no reads),
  %d status writes (Flux's Ready reports, one ClusterAddon status), the addon order kept in %d steps with the stand-in for Flux at work
%s  floor                 %s at %d concurrent writes   (API server CPU %s)
  floor with statuses   %s at %d concurrent writes, %s   (API server CPU %s)
  floor with Flux       every object written %s at %d (%.2fx the floor), every ClusterAddon status written %s at %d (%.2fx the floor)
                        CPU until every status written: %s (the writer, the stand-in for Flux)
  operator settings                           flags %q, environment %q
  operator started (process start -> ready)     %s
  fan-out: operator start -> every generated object written   %s   (%.2fx the floor, %.2fx the floor with statuses, %.2fx the floor with Flux, against this writer)
  converge: operator start -> every ClusterAddon Ready         %s   (%.2fx the floor, %.2fx the floor with statuses, %.2fx the floor with Flux, against this writer)
  converge: operator start -> ClusterStack Ready %s            %s
  operator API writes to converge             %d (%.2f per Cluster; goal: at most generated objects + 1 = %d) %s
  API server writes to converge by resource   %s
  API server reads to converge by resource    %s
  operator reconciles to converge             %d (%.1f per Cluster) %s
  CPU from operator start to converged        operator %s, %s (the stand-in for Flux, trackers)
  operator memory                             peak RSS %s (now %s), CPU %s in all
  management kube-apiserver memory            peak RSS %s (now %s), CPU %s in all
  idle window                                 %s (after waiting %s for 15s without operator writes; reached: %v)
  operator API writes in the idle window      %d (%.2f/min) %s
  objects changed in the idle window          %d
  status latency, HelmRelease Ready flip -> ClusterAddon conditions (%d flips, watch):
    Ready False -> Progressing True, Ready False   p50 %s  p99 %s  max %s
    Ready True  -> Available True, Ready True      p50 %s  p99 %s  max %s
    both edges                                     p50 %s  p99 %s  max %s

| N | floor | fan-out | ratio | every ClusterAddon Ready | ratio | floor with statuses | Ready / it | floor with Flux: fan-out / Ready | fan-out / Ready over it | writes/Cluster | reconciles/Cluster | operator peak RSS | operator CPU | API server RSS | idle writes | status p50 / p99 |
|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|
| %d | %s | %s | %.2fx | %s | %.2fx | %s | %.2fx | %s / %s (%.2fx / %.2fx the floor) | %.2fx / %.2fx | %.2f | %.1f | %s | %s | %s | %d in %s | %s / %s |
`, cfg.clusters, perCluster, addonOrderText(cfg.addonOrder), created.Round(time.Millisecond),
		floors.objects, floors.verbs, floors.statusWrites, floorFluxGroups, floorLines.String(),
		floor.took.Round(time.Millisecond), floor.workers, floor.apiCPU.Round(100*time.Millisecond),
		floorSt.took.Round(time.Millisecond), floorSt.workers, overlappedText(floorSt.overlapped), floorSt.apiCPU.Round(100*time.Millisecond),
		floorFluxFanout.took.Round(time.Millisecond), floorFluxFanout.workers, floorFluxFanoutRatio,
		floorFluxReady.took.Round(time.Millisecond), floorFluxReady.workers, floorFluxReadyRatio,
		floors.at(floorFluxReady.workers).flux.cpu,
		strings.Join(cfg.managerArgs, " "), strings.Join(cfg.managerEnv, " "),
		startup.Round(time.Millisecond),
		fanout.Round(time.Millisecond), fanoutRatio, fanoutStRatio, fanoutFluxRatio,
		convergeAddons.Round(time.Millisecond), readyRatio, readyStRatio, readyFluxRatio,
		want, converge.Round(time.Millisecond),
		convergeWrites, writesPer, perCluster+1, convergeBreakdown, apiWrites, apiReads,
		convergeReconciles, float64(convergeReconciles)/float64(cfg.clusters), reconciles,
		opAtConverge.cpu.Round(100*time.Millisecond), cpuConverge,
		mib(op.peakRSS), mib(op.rss), op.cpu.Round(100*time.Millisecond),
		mib(api.peakRSS), mib(api.rss), api.cpu.Round(100*time.Millisecond),
		cfg.idle, settleTook.Round(time.Second), settled, writes, perMin, breakdown, len(changes), cfg.samples,
		round(percentile(down, 50)), round(percentile(down, 99)), round(percentile(down, 100)),
		round(percentile(up, 50)), round(percentile(up, 99)), round(percentile(up, 100)),
		round(p50), round(p99), round(pmax),
		cfg.clusters, floor.took.Round(100*time.Millisecond), fanout.Round(100*time.Millisecond), fanoutRatio,
		convergeAddons.Round(100*time.Millisecond), readyRatio, floorSt.took.Round(100*time.Millisecond), readyStRatio,
		floorFluxFanout.took.Round(100*time.Millisecond), floorFluxReady.took.Round(100*time.Millisecond),
		floorFluxFanoutRatio, floorFluxReadyRatio, fanoutFluxRatio, readyFluxRatio, writesPer, float64(convergeReconciles)/float64(cfg.clusters),
		mib(op.peakRSS), opAtConverge.cpu.Round(100*time.Millisecond), mib(api.peakRSS), writes, cfg.idle, round(p50), round(p99))
}

// overlappedText says how the fastest floor with statuses wrote its statuses.
func overlappedText(overlapped bool) string {
	if overlapped {
		return "overlapped (each status right after its object)"
	}
	return "sequential (every status after every object)"
}

// addonOrderText says how the stack orders its addons (BENCH_ADDON_ORDER).
func addonOrderText(order string) string {
	if order == "none" {
		return "none: the stack without its clusteraddon.yaml (BENCH_ADDON_ORDER=none): the alphabetical order, the Kustomization (cluster-info), then, once it is Ready, the HelmRelease (cni)"
	}
	return "the stack's clusteraddon.yaml: the HelmRelease (cni), then, once it is Ready, the Kustomization (cluster-info)"
}

func must(b testing.TB, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}

func since(t time.Time) time.Duration { return time.Since(t).Round(time.Millisecond) }
func round(d time.Duration) time.Duration {
	return d.Round(100 * time.Microsecond)
}
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// percentile is the nearest-rank percentile p (0 < p <= 100) of ds.
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration{}, ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := (p*len(s) + 99) / 100
	return s[max(rank, 1)-1]
}

// waitFor polls cond every 250ms until it holds, failing the benchmark after timeout or when a
// process died.
func waitFor(ctx context.Context, b testing.TB, e *benchEnv, timeout time.Duration, what string, cond func() (bool, string, error)) {
	b.Helper()
	pollUntil(ctx, b, e.alive, e.logDir, 250*time.Millisecond, timeout, what, cond)
}

// pollUntil polls cond every interval until it holds, failing the benchmark after timeout or
// when alive reports a dead process.
func pollUntil(ctx context.Context, b testing.TB, alive func() error, logDir string, interval, timeout time.Duration, what string, cond func() (bool, string, error)) {
	b.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, msg, err := cond()
		if err != nil {
			b.Fatalf("wait for %s: %v", what, err)
		}
		if ok {
			return
		}
		if err := alive(); err != nil {
			b.Fatalf("wait for %s: %v; logs in %s", what, err, logDir)
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s: not after %s (last: %s); logs in %s", what, timeout, msg, logDir)
		}
		select {
		case <-ctx.Done():
			b.Fatal(ctx.Err())
		case <-time.After(interval):
		}
	}
}

// publishStack publishes the reference stacks/ tree with the release tag, as the e2e does;
// without its clusteraddon.yaml when order is "none" (then the addon order is alphabetical; a
// component after one of another kind still waits for it, as Flux orders only within a kind).
func publishStack(ctx context.Context, b testing.TB, e *benchEnv, root, order string) {
	b.Helper()
	var withoutOrder func(dir string) error
	if order == "none" {
		withoutOrder = func(dir string) error {
			files, err := filepath.Glob(filepath.Join(dir, "*", "*", "*", "clusteraddon.yaml"))
			if err != nil {
				return err
			}
			if len(files) == 0 {
				return fmt.Errorf("no clusteraddon.yaml below %s to leave out", dir)
			}
			for _, f := range files {
				if err := os.Remove(f); err != nil {
					return err
				}
			}
			return nil
		}
	}
	if _, err := e.git.CreateRepo(repoName); err != nil {
		b.Fatal(err)
	}
	must(b, framework.PublishStacks(ctx, e.git, root, e.dir, repoName, release, withoutOrder))
}

// kubeconfig is what the Clusters' kubeconfig Secrets hold: no workload cluster is reached.
var kubeconfig = []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: nowhere\n  cluster:\n    server: https://127.0.0.1:1\ncontexts:\n- name: nowhere\n  context:\n    cluster: nowhere\n    user: nobody\ncurrent-context: nowhere\nusers:\n- name: nobody\n  user: {}\n")

func clusterName(i int) string { return fmt.Sprintf("c-%04d", i) }

var awsClusterGVK = schema.GroupVersionKind{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta2", Kind: "AWSCluster"}

// createClusters creates n Clusters, each with what CAPI and CAPA would have made of it by the
// time its control plane is up.
func createClusters(ctx context.Context, b testing.TB, e *benchEnv, n int) {
	b.Helper()
	jobs := make(chan int)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range jobs {
				if err := createCluster(ctx, e.c, clusterName(i), kubeconfig); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

func createCluster(ctx context.Context, c client.Client, name string, kubeconfig []byte) error {
	labels := map[string]string{csv1.ClusterNameLabel: name}
	infra := &unstructured.Unstructured{}
	infra.SetGroupVersionKind(awsClusterGVK)
	infra.SetNamespace(benchNS)
	infra.SetName(name)
	infra.SetLabels(labels)
	infra.Object["spec"] = map[string]any{"region": "eu-central-1"}
	if err := c.Create(ctx, infra); err != nil {
		return fmt.Errorf("create AWSCluster %s: %w", name, err)
	}
	cl := framework.Cluster(benchNS, name, release, "10.244.0.0/16")
	cl.Spec.Topology.Variables = nil // the stack's defaults
	cl.Spec.ControlPlaneEndpoint = clusterv1.APIEndpoint{Host: "127.0.0.1", Port: 6443}
	cl.Spec.InfrastructureRef = clusterv1.ContractVersionedObjectReference{APIGroup: awsClusterGVK.Group, Kind: awsClusterGVK.Kind, Name: name}
	cl.Spec.Topology.ControlPlane = clusterv1.ControlPlaneTopology{Replicas: ptrTo[int32](1)}
	if err := c.Create(ctx, cl); err != nil {
		return fmt.Errorf("create Cluster %s: %w", name, err)
	}
	cl.Status.Initialization.InfrastructureProvisioned = ptrTo(true)
	cl.Status.Initialization.ControlPlaneInitialized = ptrTo(true)
	if err := c.Status().Update(ctx, cl); err != nil {
		return fmt.Errorf("initialize Cluster %s: %w", name, err)
	}
	return createKubeconfigSecret(ctx, c, name, kubeconfig)
}

// createKubeconfigSecret creates the kubeconfig Secret CAPI writes for Cluster name.
func createKubeconfigSecret(ctx context.Context, c client.Client, name string, kubeconfig []byte) error {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-kubeconfig", Namespace: benchNS, Labels: map[string]string{csv1.ClusterNameLabel: name}},
		Type:       "cluster.x-k8s.io/secret",
		Data:       map[string][]byte{"value": kubeconfig},
	}
	if err := c.Create(ctx, secret); err != nil {
		return fmt.Errorf("create Secret %s: %w", secret.Name, err)
	}
	return nil
}

// ---------------------------------------------------------------------------------------------
// The operator's metrics endpoint.

func scrape(ctx context.Context, e *benchEnv) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+e.metricsAddr+"/metrics", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	return string(body), nil
}

var sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\} (\S+)$`)
var labelPair = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)

// sample is one sample of a metric.
type sample struct {
	labels map[string]string
	value  float64
}

// samples returns the samples of metric name in a text exposition.
func samples(text, name string) []sample {
	var out []sample
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := sampleLine.FindStringSubmatch(sc.Text())
		if m == nil || m[1] != name {
			continue
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			continue
		}
		l := map[string]string{}
		for _, p := range labelPair.FindAllStringSubmatch(m[2], -1) {
			l[p[1]] = p[2]
		}
		out = append(out, sample{l, v})
	}
	return out
}

var writeMethods = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "DELETE": true}

// scrapeWrites returns the operator's client-go write requests so far by "METHOD code".
func scrapeWrites(ctx context.Context, b testing.TB, e *benchEnv) map[string]float64 {
	b.Helper()
	text, err := scrape(ctx, e)
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]float64{}
	for _, s := range samples(text, "rest_client_requests_total") {
		if writeMethods[s.labels["method"]] {
			out[s.labels["method"]+" "+s.labels["code"]] += s.value
		}
	}
	return out
}

// apiWriteVerbs are the write verbs of the API server's apiserver_request_total.
var apiWriteVerbs = map[string]bool{"CREATE": true, "UPDATE": true, "PATCH": true, "APPLY": true, "DELETE": true, "DELETECOLLECTION": true, "POST": true, "PUT": true}

// scrapeAPIWrites returns the management API server's write requests so far, of every client,
// by "resource[/subresource] VERB": which objects the writes went to.
func scrapeAPIWrites(ctx context.Context, b testing.TB, e *benchEnv) map[string]float64 {
	return scrapeAPIRequests(ctx, b, e, func(verb string) bool { return apiWriteVerbs[verb] })
}

// scrapeAPIReads is scrapeAPIWrites for GETs and LISTs (watches are long-running: not counted).
func scrapeAPIReads(ctx context.Context, b testing.TB, e *benchEnv) map[string]float64 {
	return scrapeAPIRequests(ctx, b, e, func(verb string) bool { return verb == "GET" || verb == "LIST" })
}

// scrapeAPIRequests returns the management API server's requests so far whose verb keep accepts,
// by "resource[/subresource] VERB".
func scrapeAPIRequests(ctx context.Context, b testing.TB, e *benchEnv, keep func(verb string) bool) map[string]float64 {
	b.Helper()
	out := map[string]float64{}
	must(b, addAPIRequests(ctx, e.cfg, keep, "", out))
	return out
}

// addAPIRequests adds the requests so far of the API server cfg reaches whose verb keep
// accepts to out, by prefix + "resource[/subresource] VERB".
func addAPIRequests(ctx context.Context, cfg *rest.Config, keep func(verb string) bool, prefix string, out map[string]float64) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	text, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("GET %s's /metrics: %w", cfg.Host, err)
	}
	for _, s := range samples(string(text), "apiserver_request_total") {
		if !keep(s.labels["verb"]) {
			continue
		}
		res := s.labels["resource"]
		if sub := s.labels["subresource"]; sub != "" {
			res += "/" + sub
		}
		out[prefix+res+" "+s.labels["verb"]] += s.value
	}
	return nil
}

// scrapeReconciles returns the operator's reconciles so far by controller.
func scrapeReconciles(ctx context.Context, b testing.TB, e *benchEnv) map[string]float64 {
	b.Helper()
	text, err := scrape(ctx, e)
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]float64{}
	for _, s := range samples(text, "controller_runtime_reconcile_total") {
		out[s.labels["controller"]] += s.value
	}
	return out
}

func sum(m map[string]float64) float64 {
	t := 0.0
	for _, v := range m {
		t += v
	}
	return t
}

// diffCounts returns the total increase from before to after and its breakdown by key.
func diffCounts(before, after map[string]float64) (int, string) {
	var parts []string
	total := 0
	for k, v := range diffMap(before, after) {
		if d := int(v); d != 0 {
			parts = append(parts, fmt.Sprintf("%s: %d", k, d))
			total += d
		}
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return 0, ""
	}
	return total, "(" + strings.Join(parts, ", ") + ")"
}

// settle waits until the operator has made no API write for 15s (at most 3m), so that the
// idle window starts after the last reaction to the convergence.
func settle(ctx context.Context, b testing.TB, e *benchEnv) (bool, time.Duration) {
	b.Helper()
	start := time.Now()
	last, lastChange := sum(scrapeWrites(ctx, b, e)), time.Now()
	for time.Since(start) < 3*time.Minute {
		time.Sleep(time.Second)
		if cur := sum(scrapeWrites(ctx, b, e)); cur != last {
			last, lastChange = cur, time.Now()
		}
		if time.Since(lastChange) >= 15*time.Second {
			return true, time.Since(start)
		}
	}
	return false, time.Since(start)
}

// checkOperatorMetrics compares the operator's clusterstack_* gauges with what was built: it
// is the end-to-end check of internal/metrics.
func checkOperatorMetrics(ctx context.Context, b testing.TB, e *benchEnv, n int) {
	b.Helper()
	var text string
	waitFor(ctx, b, e, time.Minute, "clusterstack_clusters to count every Cluster available", func() (bool, string, error) {
		var err error
		if text, err = scrape(ctx, e); err != nil {
			return false, "", err
		}
		got := map[string]float64{}
		for _, s := range samples(text, metrics.ClustersMetric) {
			if s.labels["namespace"] == benchNS && s.labels["stack"] == stackName && s.labels["release"] == release {
				got[s.labels["state"]] = s.value
			}
		}
		return got[metrics.StateAvailable] == float64(n) && sum(got) == float64(n), fmt.Sprint(got), nil
	})
	for _, name := range []string{metrics.ClustersMetric, metrics.ReleasesMetric, metrics.RenderFailuresMetric, metrics.ValuesRendersMetric} {
		for _, s := range samples(text, name) {
			if s.value != 0 {
				logf("operator metric %s%s %g", name, formatLabels(s.labels), s.value)
			}
		}
	}
}

func formatLabels(l map[string]string) string {
	var parts []string
	for k, v := range l {
		parts = append(parts, k+"="+strconv.Quote(v))
	}
	sort.Strings(parts)
	return "{" + strings.Join(parts, ",") + "}"
}

// ---------------------------------------------------------------------------------------------
// Which objects changed.

var snapshotKinds = []schema.GroupVersionKind{
	csv1.GroupVersion.WithKind("ClusterStack"),
	csv1.GroupVersion.WithKind("ClusterStackRelease"),
	csv1.GroupVersion.WithKind("ClusterAddon"),
	corev1.SchemeGroupVersion.WithKind("ConfigMap"),
	corev1.SchemeGroupVersion.WithKind("Secret"),
	corev1.SchemeGroupVersion.WithKind("Event"),
	helmv2.GroupVersion.WithKind(helmv2.HelmReleaseKind),
	kustomizev1.GroupVersion.WithKind(kustomizev1.KustomizationKind),
	sourcev1.GroupVersion.WithKind(sourcev1.GitRepositoryKind),
	sourcev1.GroupVersion.WithKind(sourcev1.HelmChartKind),
	clusterv1.GroupVersion.WithKind("Cluster"),
	awsClusterGVK,
}

type objState struct {
	rv, writer string
}

// snapshot records every object's resourceVersion and last writer (from managedFields).
func snapshot(ctx context.Context, b testing.TB, e *benchEnv) map[string]objState {
	b.Helper()
	out := map[string]objState{}
	for _, gvk := range snapshotKinds {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		must(b, e.c.List(ctx, list, client.InNamespace(benchNS)))
		for _, o := range list.Items {
			writer, at := "", time.Time{}
			for _, f := range o.ManagedFields {
				if f.Time != nil && !f.Time.Time.Before(at) {
					writer, at = f.Manager+" "+string(f.Operation)+" "+f.Subresource, f.Time.Time
				}
			}
			out[gvk.Kind+" "+o.Name] = objState{rv: o.ResourceVersion, writer: strings.TrimSpace(writer)}
		}
	}
	return out
}

func diffSnapshots(before, after map[string]objState) []string {
	var out []string
	for k, a := range after {
		bf, ok := before[k]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s created (by %s)", k, a.writer))
		case bf.rv != a.rv:
			out = append(out, fmt.Sprintf("%s updated (last by %s)", k, a.writer))
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			out = append(out, k+" deleted")
		}
	}
	sort.Strings(out)
	return out
}

// ---------------------------------------------------------------------------------------------
// Status latency.

// flipSample sets the Ready condition of a cluster's cni HelmRelease to False, then back to
// True, and returns how long each took to show in the cluster's ClusterAddon (seen through a
// watch): Progressing True and Ready False, then Available True, Progressing False and Ready
// True. The clock starts just before the HelmRelease status write.
func flipSample(ctx context.Context, b testing.TB, e *benchEnv, cluster string) (down, up time.Duration) {
	b.Helper()
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	w, err := e.c.Watch(wctx, &csv1.ClusterAddonList{}, client.InNamespace(benchNS), client.MatchingFields{"metadata.name": cluster})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	healthy := func(a *csv1.ClusterAddon) bool {
		c := a.Status.Conditions
		return apimeta.IsStatusConditionTrue(c, csv1.AvailableCondition) && apimeta.IsStatusConditionFalse(c, csv1.ProgressingCondition) &&
			apimeta.IsStatusConditionFalse(c, csv1.DegradedCondition) && apimeta.IsStatusConditionTrue(c, csv1.ReadyCondition)
	}
	reflectsFailure := func(a *csv1.ClusterAddon) bool {
		c := a.Status.Conditions
		return apimeta.IsStatusConditionTrue(c, csv1.ProgressingCondition) && apimeta.IsStatusConditionFalse(c, csv1.ReadyCondition)
	}
	await := func(what string, pred func(*csv1.ClusterAddon) bool) time.Time {
		for {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					b.Fatalf("ClusterAddon %s: watch ended waiting for %s", cluster, what)
				}
				if ev.Type == watch.Error {
					b.Fatalf("ClusterAddon %s: watch error waiting for %s: %v", cluster, what, ev.Object)
				}
				if a, ok := ev.Object.(*csv1.ClusterAddon); ok && pred(a) {
					return time.Now()
				}
			case <-wctx.Done():
				b.Fatalf("ClusterAddon %s: %s not seen: %v", cluster, what, wctx.Err())
			}
		}
	}
	await("the current state (healthy)", healthy)

	flip := func(status metav1.ConditionStatus) time.Time {
		hr := &helmv2.HelmRelease{}
		must(b, e.c.Get(ctx, client.ObjectKey{Namespace: benchNS, Name: cluster + "-cni"}, hr))
		c := metav1.Condition{Type: meta.ReadyCondition, Status: status, Reason: "UpgradeFailed", Message: "benchmark: Ready flipped to False", ObservedGeneration: hr.Generation}
		if status == metav1.ConditionTrue {
			c.Reason, c.Message = "UpgradeSucceeded", "benchmark: Ready flipped back to True"
		}
		apimeta.SetStatusCondition(&hr.Status.Conditions, c)
		t := time.Now()
		must(b, e.c.Status().Update(ctx, hr))
		return t
	}
	t0 := flip(metav1.ConditionFalse)
	down = await("Progressing True and Ready False", reflectsFailure).Sub(t0)
	t1 := flip(metav1.ConditionTrue)
	up = await("Available True, Progressing False, Ready True", healthy).Sub(t1)
	return down, up
}
