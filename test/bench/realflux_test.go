package bench

// BenchmarkRealFlux, run by `make bench-flux`: the real Flux helm-controller and
// kustomize-controller (bin/), N Clusters whose addons are spread over several workload API
// servers, measured in one run in three phases, each until every object is Ready:
//
//   - Flux alone: the floor writer (floor_test.go) writes exactly the HelmReleases,
//     Kustomizations and values ConfigMaps the operator generated for a template Cluster, for N
//     Clusters of their own, in the order Flux needs (a Cluster's Kustomization once its
//     HelmRelease is Ready), until Flux reports every one Ready; they are then removed
//     (suspended and deleted: Flux drops them without uninstalling, and the next phase's
//     Clusters have other names, so Flux installs new Helm releases into new namespaces, as it
//     did for Flux alone);
//   - the operator driving Flux: N Clusters created with the operator stopped, then the operator
//     started, until every ClusterAddon is Ready; and where each Cluster's time went: the
//     operator's part (every generated HelmRelease and Kustomization written, the ClusterAddon's
//     status) and Flux's (every one of them Ready). The operator is then stopped and its
//     HelmReleases and Kustomizations removed as Flux alone's were;
//   - Flux alone again, for N more Clusters of their own. The operator's phase is compared with
//     the mean of the two: a machine whose speed drifts over the run (these machines' does, by a
//     fifth within minutes) moves both Flux-alone phases, one before and one after, and a
//     drift that is linear in time cancels out of their mean.
//
// It prints the three times to every object Ready and the ratios, the operator's writes per Cluster,
// the peak RSS of the operator, helm- and kustomize-controller and the workload API servers. It
// reports figures and asserts no timing; it fails only when a process dies or the objects are
// not Ready within a generous timeout.
//
// Settings (flag after -args, or environment), besides -bench.log-level, -bench.keep,
// -bench.manager, -bench.manager-args and -bench.manager-env of the main benchmark:
//
//	-bench.flux-clusters   / BENCH_FLUX_CLUSTERS    number of Clusters (200)
//	-bench.flux-workloads  / BENCH_FLUX_WORKLOADS   workload API servers (kube-apiserver and etcd each) the Clusters
//	                                                are spread over, round robin (10)
//	-bench.flux-concurrent / BENCH_FLUX_CONCURRENT  --concurrent of helm- and kustomize-controller
//	                                                (empty: Flux's default, as the local plane runs them)
//	-bench.flux-alone      / BENCH_FLUX_ALONE=0     measure only the operator's phase
//	-bench.flux-alone-after / BENCH_FLUX_ALONE_AFTER=0   no second Flux-alone phase after the
//	                                                operator's (the ratio is then to the one before)
//
// The stack is written by the benchmark (benchStack): the reference cluster-class, a Helm addon
// (a ConfigMap and a ServiceAccount) installed into "cfg-${cluster_name}" (stack.yaml's
// per-cluster namespace, see stacks/README.md) and a kustomize addon creating namespace
// "obj-${cluster_name}" with a ConfigMap and a ServiceAccount (post-build substitution from
// the values ConfigMap). No addon has Pods, so no kubelet is needed: the figure is about the
// operator and Flux.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/plane"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/proc"
	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
	"github.com/clusterstack-io/clusterstack-operator/test/bench/benchresult"
)

var (
	flagFluxClusters   = flag.String("bench.flux-clusters", envOr("BENCH_FLUX_CLUSTERS", "200"), "number of Clusters of BenchmarkRealFlux")
	flagFluxWorkloads  = flag.String("bench.flux-workloads", envOr("BENCH_FLUX_WORKLOADS", "10"), "workload API servers the Clusters of BenchmarkRealFlux are spread over")
	flagFluxConcurrent = flag.String("bench.flux-concurrent", os.Getenv("BENCH_FLUX_CONCURRENT"), "--concurrent of helm- and kustomize-controller; Flux's default when empty")
	flagFluxAlone      = flag.Bool("bench.flux-alone", os.Getenv("BENCH_FLUX_ALONE") != "0", "measure Flux alone before the operator drives Flux; BENCH_FLUX_ALONE=0 measures only the operator's phase (no ratios, no result for make bench-report)")
	flagFluxAloneAfter = flag.Bool("bench.flux-alone-after", os.Getenv("BENCH_FLUX_ALONE_AFTER") != "0", "measure Flux alone again after the operator's phase and compare the operator with the mean of both; BENCH_FLUX_ALONE_AFTER=0 compares it with the phase before alone")
)

// Flux's published figure (github.com/fluxcd/flux-benchmark, RESULTS.md, Flux v2.6.0 and v2.5.0):
// 1000 HelmReleases installed by helm-controller in 8m12s, with helm-controller at 2 CPU, 1 GiB
// and --concurrent=10 (kustomize-controller 2 CPU, --concurrent=20: 1000 Kustomizations in 4m16s)
// on a 16-core GitHub runner with a kind cluster; the charts were podinfo from an OCI registry.
const (
	fluxPublishedHelmReleases = 1000
	fluxPublishedDuration     = 8*time.Minute + 12*time.Second
	fluxPublishedFlags        = "helm-controller --concurrent=10 (2 CPU, 1 GiB), 16-core runner"
)

// fluxProcs are the Flux controllers the benchmark runs besides source-controller.
type fluxProcs struct {
	helm, kustomize *proc.Process
	flags           []string
}

// procUsage is a process's peak RSS and CPU seconds over one phase.
type procUsage struct {
	name    string
	peakRSS int64
	cpu     float64
	err     error
}

// BenchmarkRealFlux runs once whatever b.N is (make bench-flux passes -benchtime 1x).
func BenchmarkRealFlux(b *testing.B) {
	n, err := strconv.Atoi(*flagFluxClusters)
	if err != nil || n < 1 {
		b.Fatalf("BENCH_FLUX_CLUSTERS / -bench.flux-clusters: want a positive number, got %q", *flagFluxClusters)
	}
	workloads, err := strconv.Atoi(*flagFluxWorkloads)
	if err != nil || workloads < 1 {
		b.Fatalf("BENCH_FLUX_WORKLOADS / -bench.flux-workloads: want a positive number, got %q", *flagFluxWorkloads)
	}
	workloads = min(workloads, n) // a server without a Cluster would measure nothing
	if !*flagFluxAlone && os.Getenv("BENCH_RESULT") != "" {
		b.Fatal("BENCH_FLUX_ALONE=0 measures no Flux alone: no result for make bench-report")
	}
	var fluxFlags []string
	if c := *flagFluxConcurrent; c != "" {
		if v, err := strconv.Atoi(c); err != nil || v < 1 {
			b.Fatalf("BENCH_FLUX_CONCURRENT / -bench.flux-concurrent: want a positive number, got %q", c)
		}
		fluxFlags = append(fluxFlags, "--concurrent="+c)
	}
	cfg := benchConfig{clusters: n, logLevel: *flagLogLevel, keep: *flagKeep, manager: *flagManager,
		managerArgs: strings.Fields(*flagArgs), managerEnv: strings.Fields(*flagEnv)}
	// Each phase: about 30 minutes for 1,000 Clusters on 2 busy cores with Flux's defaults.
	phaseTimeout := max(40*time.Minute, time.Duration(n)*3*time.Second)
	started = time.Now()
	load0 := loadAvg()
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
	for _, f := range []string{"helm-controller", "kustomize-controller"} {
		if _, err := os.Stat(filepath.Join(root, "bin", f)); err != nil {
			b.Fatalf("bin/%s missing: run `make tools`", f)
		}
	}

	e := startEnv(ctx, b, root, cfg)
	benchLog, err := os.Create(filepath.Join(e.logDir, "bench-controllers.log"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = benchLog.Close() })
	ctrl.SetLogger(zap.New(zap.WriteTo(benchLog)))
	// The reference cluster-class's templates, which helm-controller installs for real.
	bin := filepath.Join(root, "bin")
	if _, err := envtest.InstallCRDs(e.cfg, envtest.CRDInstallOptions{Paths: []string{
		filepath.Join(bin, "crds", "capa", "bases", "infrastructure.cluster.x-k8s.io_awsclustertemplates.yaml"),
		filepath.Join(bin, "crds", "capa", "bases", "infrastructure.cluster.x-k8s.io_awsmachinetemplates.yaml"),
		filepath.Join(bin, "crds", "capi-kubeadm-bootstrap", "bases", "bootstrap.cluster.x-k8s.io_kubeadmconfigtemplates.yaml"),
	}, ErrorIfPathMissing: true}); err != nil {
		b.Fatal(err)
	}
	works := startWorkloadServers(b, e, bin, workloads)
	flux := startRealFlux(ctx, b, e, bin, fluxFlags)
	fluxAlive := func() error {
		for _, p := range []*proc.Process{e.source, flux.helm, flux.kustomize} {
			if err := p.Exited(); err != nil {
				return err
			}
		}
		return nil
	}
	alive := func() error {
		if err := fluxAlive(); err != nil {
			return err
		}
		return e.manager.Exited()
	}
	logf("API servers (%d workload), source-, helm- and kustomize-controller and operator up; logs in %s", len(works), e.logDir)

	// Flux applies as --default-service-account (the plane's lockdown): that account may do
	// anything in every API server, as the plane's tenancy setup grants it.
	fluxUser := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: plane.DefaultFluxServiceAccount, Namespace: benchNS}
	must(b, bindClusterAdmin(ctx, e.c, fluxUser))
	for _, w := range works {
		must(b, bindClusterAdmin(ctx, w.c, fluxUser))
	}

	// The stack, published to the Git server, and a ClusterStack delivering its v1.
	src := filepath.Join(e.dir, "flux-stack-src")
	stackDir := filepath.Join(src, "aws", "base", "1-36")
	must(b, writeBenchStack(stackDir, filepath.Join(root, "stacks", "aws", "base", "1-36", "cluster-class")))
	if ps := stack.Lint(stackDir, "v1"); len(ps) > 0 {
		b.Fatalf("the benchmark's stack does not lint:\n%s", stack.FormatProblems(stackDir, ps))
	}
	if _, err := e.git.CreateRepo(repoName); err != nil {
		b.Fatal(err)
	}
	must(b, e.git.Publish(ctx, repoName, src, ".", release))
	for _, ns := range []string{benchNS, "flux-system"} {
		must(b, e.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	must(b, e.c.Create(ctx, &csv1.ClusterStack{
		ObjectMeta: metav1.ObjectMeta{Name: stackName, Namespace: benchNS},
		Spec: csv1.ClusterStackSpec{
			Provider: "aws", Name: "base", KubernetesVersion: "1.36",
			Source:   csv1.StackSource{URL: e.git.RepoURL(repoName), Path: "aws/base/1-36"},
			Versions: []string{"v1"},
		},
	}))
	tRelease := time.Now()
	rel := &csv1.ClusterStackRelease{}
	pollUntil(ctx, b, alive, e.logDir, 500*time.Millisecond, 5*time.Minute, "release "+release+" Ready (its cluster-class installed by helm-controller)", func() (bool, string, error) {
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: benchNS, Name: release}, rel); err != nil {
			return false, err.Error(), client.IgnoreNotFound(err)
		}
		c := apimeta.FindStatusCondition(rel.Status.Conditions, csv1.ReadyCondition)
		if c == nil {
			return false, "no Ready condition yet", nil
		}
		return c.Status == metav1.ConditionTrue, c.Message, nil
	})
	logf("release %s Ready after %s", release, since(tRelease))

	// One Cluster first: what the operator generates for it is what Flux alone writes.
	must(b, createCluster(ctx, e.c, templateCluster, works[0].kubeconfig))
	pollUntil(ctx, b, alive, e.logDir, 500*time.Millisecond, 5*time.Minute, "the template Cluster's ClusterAddon Ready", func() (bool, string, error) {
		a := &csv1.ClusterAddon{}
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: benchNS, Name: templateCluster}, a); err != nil {
			return false, err.Error(), client.IgnoreNotFound(err)
		}
		return apimeta.IsStatusConditionTrue(a.Status.Conditions, csv1.ReadyCondition), a.Status.Progress, nil
	})
	templates := templateObjects(ctx, b, e)
	must(b, e.stopManager())
	// What the plane costs at rest, before any phase: the workload API servers share this
	// machine's cores with the management plane, which they would not in production.
	rest := measureAtRest(b, e, works, flux, realFluxRestWindow)
	logf("at rest: %s", rest)

	// (a) Flux alone.
	var alone fluxAloneResult
	if *flagFluxAlone {
		alone = measureFluxAlone(ctx, b, e, flux, works, templates, rel.Status.Components, n, fluxAloneName, "Flux alone", fluxAlive, phaseTimeout)
	} else {
		logf("Flux alone not measured (BENCH_FLUX_ALONE=0)")
	}

	// (b) The operator driving Flux: N Clusters, as CAPI leaves them, made while the operator is
	// stopped; the clock runs from its start.
	names := clusterNames(n, clusterName)
	tCreate := time.Now()
	must(b, createClustersOn(ctx, e.c, names, func(i int) []byte { return works[i%len(works)].kubeconfig }))
	created := time.Since(tCreate)
	logf("%d Clusters created in %s (operator stopped)", n, created.Round(time.Millisecond))
	tr := newReadyTracker(names)
	// The tracker's watches end once every ClusterAddon is Ready: the API server's shutdown waits
	// for watches in flight.
	trackCtx, stopTracking := context.WithCancel(ctx)
	defer stopTracking()
	watchObjects(trackCtx, b, e, benchNS, []client.Object{&helmv2.HelmRelease{}, &kustomizev1.Kustomization{}, &csv1.ClusterAddon{}}, tr.observe)
	cpu0 := map[string]float64{}
	for name, p := range map[string]*proc.Process{"helm-controller": flux.helm, "kustomize-controller": flux.kustomize} {
		cpu0[name], _ = procCPUSeconds(p.Pid())
	}
	collectAPIServerGarbage(ctx, b, e)
	probe := startSpeedProbe(realFluxProbeInterval)
	meter := startPlaneMeter(ctx, b, e, works)
	tr.begin()
	if err := e.startManager(ctx); err != nil {
		b.Fatalf("start the operator again: %v", err)
	}
	var lastProgress time.Time
	pollUntil(ctx, b, alive, e.logDir, 250*time.Millisecond, phaseTimeout, fmt.Sprintf("%d ClusterAddons Ready", n), func() (bool, string, error) {
		done, msg := tr.progress()
		if time.Since(lastProgress) > 15*time.Second {
			lastProgress = time.Now()
			logf("converging: %s", msg)
		}
		return done, msg, nil
	})
	stopTracking()
	servers, requests := meter.stop(ctx, b)
	speed := probe.Stop()
	writes, breakdown := diffCounts(map[string]float64{}, scrapeWrites(ctx, b, e)) // a new process: its counters start at 0
	reconciles, reconcileBreakdown := diffCounts(map[string]float64{}, scrapeReconciles(ctx, b, e))
	events := operatorEvents(ctx, b, e)
	must(b, checkWorkloads(ctx, works, names))

	var usages []procUsage
	for _, p := range []struct {
		name string
		pid  int
	}{{"operator", e.manager.Pid()}, {"helm-controller", flux.helm.Pid()}, {"kustomize-controller", flux.kustomize.Pid()}} {
		st, err := readProcStats(p.pid)
		usages = append(usages, procUsage{name: p.name, peakRSS: st.peakRSS, cpu: st.cpu.Seconds() - cpu0[p.name], err: err})
	}
	peak := map[string]int64{}
	for _, u := range usages {
		peak[u.name] = u.peakRSS
	}
	account := newPhaseAccount(servers, usages, requests)

	// (c) Flux alone again: the operator stopped and what it generated removed as Flux alone's
	// was (its ClusterAddons and values ConfigMaps stay, read by nothing).
	var after fluxAloneResult
	if *flagFluxAlone && *flagFluxAloneAfter {
		must(b, e.stopManager())
		tRemove := time.Now()
		removeFluxObjects(ctx, b, e, e.c, names, fluxAlive)
		logf("the operator stopped, its HelmReleases and Kustomizations removed in %s", since(tRemove))
		for _, p := range []*proc.Process{flux.helm, flux.kustomize} {
			if err := resetPeakRSS(p.Pid()); err != nil {
				logf("the peak RSS of Flux alone again includes the operator's phase: %v", err)
			}
		}
		after = measureFluxAlone(ctx, b, e, flux, works, templates, rel.Status.Components, n, fluxAgainName, "Flux alone again", fluxAlive, phaseTimeout)
	}
	load1 := loadAvg()
	// base is what the operator's phase is compared with: Flux alone's time to every object
	// Ready, the mean of the phases before and after it when both ran.
	base := alone.ready
	if after.ready > 0 {
		base = (alone.ready + after.ready) / 2
	}
	var workloadPeaks []int64
	var workloadCPU time.Duration
	for _, w := range works {
		rss, cpu, err := w.stats(bin)
		must(b, err)
		workloadPeaks = append(workloadPeaks, rss)
		workloadCPU += cpu
	}
	slices.Sort(workloadPeaks)
	var workloadSum int64
	for _, r := range workloadPeaks {
		workloadSum += r
	}

	hrSpan := tr.hrLastReady - tr.hrFirstSeen
	hrPerMin := float64(n) / hrSpan.Minutes()
	aloneHRPerMin := float64(n) / base.Minutes()
	published := float64(fluxPublishedHelmReleases) / fluxPublishedDuration.Minutes()
	flags := "none: Flux's defaults (--concurrent=4, --requeue-dependency=30s), as bootstrap/plane runs them"
	if len(fluxFlags) > 0 {
		flags = strings.Join(fluxFlags, " ") + " (the plane runs Flux's defaults)"
	}
	fluxRatio, addonsRatio := tr.fluxReady.Seconds()/base.Seconds(), tr.addonsReady.Seconds()/base.Seconds()
	writesPer := float64(writes) / float64(n)
	operatorShare := 100 * sumDur(tr.operatorPart).Seconds() / sumDur(tr.total).Seconds()

	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(n), "clusters")
	b.ReportMetric(float64(len(works)), "workload-servers")
	b.ReportMetric(alone.ready.Seconds(), "flux-alone-ready-s")
	if after.ready > 0 {
		b.ReportMetric(after.ready.Seconds(), "flux-alone-after-ready-s")
	}
	b.ReportMetric(tr.allWritten.Seconds(), "all-written-s")
	b.ReportMetric(percentile(tr.operatorPart, 50).Seconds(), "p50-operator-s")
	b.ReportMetric(percentile(tr.fluxPart, 50).Seconds(), "p50-flux-s")
	b.ReportMetric(tr.fluxReady.Seconds(), "flux-ready-s")
	b.ReportMetric(tr.addonsReady.Seconds(), "addons-ready-s")
	if *flagFluxAlone {
		b.ReportMetric(addonsRatio, "addons-ready/flux-alone")
		b.ReportMetric(account.total().Seconds()/meanAccount(fluxAloneAccounts(alone, after)...).total().Seconds(), "plane-cpu/flux-alone")
	}
	b.ReportMetric(hrPerMin, "helmreleases/min")
	b.ReportMetric(writesPer, "operator-writes/cluster")
	must(b, benchresult.Write(os.Getenv("BENCH_RESULT"), benchresult.Result{Kind: benchresult.RealFluxKind, RealFlux: &benchresult.RealFlux{
		Clusters: n, FluxFlags: flags, Workloads: len(works), GeneratedObjects: len(templates),
		FluxAloneWritten: alone.written.Seconds(), FluxAloneReady: alone.ready.Seconds(),
		FluxAloneAfterWritten: after.written.Seconds(), FluxAloneAfterReady: after.ready.Seconds(),
		AllWritten: tr.allWritten.Seconds(), FluxReady: tr.fluxReady.Seconds(), AddonsReady: tr.addonsReady.Seconds(),
		OperatorShareP50: tr.pct(tr.operatorPart, 50).Seconds(), FluxShareP50: tr.pct(tr.fluxPart, 50).Seconds(),
		OperatorSharePercent: operatorShare,
		HelmReleaseReadyP50:  tr.pct(tr.hrWait, 50).Seconds(), KustomizationP50: tr.pct(tr.ksWait, 50).Seconds(),
		HelmReleasesPerMin: hrPerMin, WritesPerCluster: writesPer, PeakRSS: peak, FluxAlonePeakRSS: alone.peakRSS,
		WorkloadServerPeakRSS: workloadPeaks[len(workloadPeaks)-1],
		JobCPUms:              ms(speed.JobCPU), FluxAloneJobCPUms: ms(alone.speed.JobCPU),
		StealPercent: speed.StealPercent, FluxAloneStealPercent: alone.speed.StealPercent,
		FluxAloneAfterJobCPUms: ms(after.speed.JobCPU), FluxAloneAfterStealPercent: after.speed.StealPercent,
		PlaneCPU: account.total().Seconds(), FluxAlonePlaneCPU: alone.account.total().Seconds(), FluxAloneAfterPlaneCPU: after.account.total().Seconds(),
		OperatorCPU: account.cpu["operator"].Seconds(),
	}}))

	var out strings.Builder
	fmt.Fprintf(&out, "\nReal Flux: helm-controller and kustomize-controller, %d Clusters spread over %d workload API servers (kube-apiserver and etcd each), alone and driven by the operator\n", n, len(works))
	fmt.Fprintf(&out, "  (each: Cluster + AWSCluster + kubeconfig Secret -> ClusterAddon, values ConfigMap, HelmRelease (ConfigMap + ServiceAccount\n")
	fmt.Fprintf(&out, "   into cfg-<cluster>, release <cluster>-config), Kustomization (Namespace obj-<cluster>, ConfigMap, ServiceAccount))\n")
	fmt.Fprintf(&out, "  Flux flags                                       %s; plus --no-cross-namespace-refs=true --default-service-account=%s\n", flags, plane.DefaultFluxServiceAccount)
	fmt.Fprintf(&out, "  load average (1/5/15 min) at start / at the end   %s / %s  (%d cores)\n", load0, load1, goruntime.NumCPU())
	fmt.Fprintf(&out, "  the plane at rest (%s before the first phase, the operator stopped), in cores   %s\n", realFluxRestWindow, rest)
	ratio := func(r float64) string { return fmt.Sprintf("%.2fx Flux alone", r) }
	if *flagFluxAlone {
		fmt.Fprintf(&out, "  Flux alone: the floor writer (%d concurrent writes) writes the %d HelmReleases, Kustomizations and values ConfigMaps the operator\n", fluxAloneWorkers, alone.objects)
		fmt.Fprintf(&out, "  generated for a template Cluster, for %d Clusters of their own, each Kustomization once its Cluster's HelmRelease is Ready\n", n)
		printFluxAlone(&out, alone, n)
		if after.ready > 0 {
			fmt.Fprintf(&out, "  Flux alone again, after the operator's phase (the operator stopped, its HelmReleases and Kustomizations removed as above), for %d more Clusters\n", n)
			printFluxAlone(&out, after, n)
			fmt.Fprintf(&out, "  Flux alone, the mean of before and after: every HelmRelease+Kustomization Ready   %s   (%.1f HelmReleases per minute); after / before %.2f\n",
				base.Round(time.Second), aloneHRPerMin, after.ready.Seconds()/alone.ready.Seconds())
			ratio = func(r float64) string {
				return fmt.Sprintf("%.2fx Flux alone: the mean of %.2fx before and %.2fx after", r, r*base.Seconds()/alone.ready.Seconds(), r*base.Seconds()/after.ready.Seconds())
			}
		}
	} else {
		fmt.Fprintf(&out, "  Flux alone: not measured (BENCH_FLUX_ALONE=0)\n")
		ratio = func(float64) string { return "Flux alone not measured" }
	}
	fmt.Fprintf(&out, "  the operator driving Flux: %d Clusters created with the operator stopped (%s), then the operator started; from its start:\n", n, created.Round(time.Millisecond))
	fmt.Fprintf(&out, "    -> first HelmRelease written                    %s\n", tr.hrFirstSeen.Round(100*time.Millisecond))
	fmt.Fprintf(&out, "    -> last HelmRelease+Kustomization written       %s   (each Kustomization waits for its Cluster's HelmRelease Ready)\n", tr.allWritten.Round(time.Second))
	fmt.Fprintf(&out, "    -> every HelmRelease+Kustomization Ready        %s   (%s)\n", tr.fluxReady.Round(time.Second), ratio(fluxRatio))
	fmt.Fprintf(&out, "    -> every ClusterAddon Ready                     %s   (%s; goal: at most 1.10x)\n", tr.addonsReady.Round(time.Second), ratio(addonsRatio))
	fmt.Fprintf(&out, "    per Cluster, operator start -> ClusterAddon Ready   p50 %s  p90 %s  max %s, of which\n", tr.pct(tr.total, 50), tr.pct(tr.total, 90), tr.pct(tr.total, 100))
	fmt.Fprintf(&out, "      operator (start -> HR written, HR Ready -> KS written, Flux Ready -> addon Ready)  p50 %s  p90 %s  max %s  (%.0f%% of the sum)\n",
		tr.pct(tr.operatorPart, 50), tr.pct(tr.operatorPart, 90), tr.pct(tr.operatorPart, 100), operatorShare)
	fmt.Fprintf(&out, "      Flux (HR written -> Ready, KS written -> Ready)                                  p50 %s  p90 %s  max %s  (%.0f%% of the sum)\n",
		tr.pct(tr.fluxPart, 50), tr.pct(tr.fluxPart, 90), tr.pct(tr.fluxPart, 100), 100*sumDur(tr.fluxPart).Seconds()/sumDur(tr.total).Seconds())
	fmt.Fprintf(&out, "    per object, written -> Ready                    HelmRelease p50 %s  p90 %s  max %s;  Kustomization p50 %s  p90 %s  max %s\n",
		tr.pct(tr.hrWait, 50), tr.pct(tr.hrWait, 90), tr.pct(tr.hrWait, 100), tr.pct(tr.ksWait, 50), tr.pct(tr.ksWait, 90), tr.pct(tr.ksWait, 100))
	speedRatio := ""
	if *flagFluxAlone && alone.speed.JobCPU > 0 {
		speedRatio = fmt.Sprintf("; %.2fx Flux alone's", speed.over(alone.speed))
		if after.speed.JobCPU > 0 {
			speedRatio += fmt.Sprintf(" before, %.2fx after", speed.over(after.speed))
		}
		speedRatio += ": above 1, the machine was slower in this phase"
	}
	fmt.Fprintf(&out, "    machine speed (speedProbe)                      %s%s\n", speed, speedRatio)
	fmt.Fprintf(&out, "    CPU of the servers and the benchmark            %s\n", servers)
	fmt.Fprintf(&out, "    HelmReleases per minute                        %.1f (%d from the first written to the last Ready, %s)\n", hrPerMin, n, hrSpan.Round(time.Second))
	fmt.Fprintf(&out, "    operator API writes                            %d (%.2f per Cluster; goal: generated objects + 2 = %d) %s\n", writes, writesPer, len(templates)+2, breakdown)
	tr.mu.Lock()
	fmt.Fprintf(&out, "      of which ClusterAddon updates (seen through a watch)   %d (%.2f per Cluster: status writes, spec and metadata)\n", tr.addonWrites, float64(tr.addonWrites)/float64(n))
	tr.mu.Unlock()
	fmt.Fprintf(&out, "      Events about the operator's objects in the whole run (objects / occurrences, by reason)   %s\n", events)
	fmt.Fprintf(&out, "    operator reconciles                            %d (%.2f per Cluster) %s\n", reconciles, float64(reconciles)/float64(n), reconcileBreakdown)
	if *flagFluxAlone {
		which := "Flux alone's"
		if after.ready > 0 {
			which = "the mean of Flux alone's before and after"
		}
		mean := meanAccount(fluxAloneAccounts(alone, after)...)
		fmt.Fprintf(&out, "    the plane's CPU in this phase (every process above and the operator) against %s\n", which)
		fmt.Fprintf(&out, "      %s\n", cpuBeyond(account, mean))
		fmt.Fprintf(&out, "    the API servers' requests (watches left out; \"workload\": all workload API servers') beyond %s\n", which)
		fmt.Fprintf(&out, "      %s\n", requestsBeyond(account, mean, n, float64(n)/20))
		fmt.Fprintf(&out, "    the management API server's writes per Cluster, all writers (by kind, 0.05 or more)\n")
		fmt.Fprintf(&out, "      with the operator %s\n      %s %s\n", writesPerCluster(account, n), which, writesPerCluster(mean, n))
	}
	for _, u := range usages {
		if u.err != nil {
			fmt.Fprintf(&out, "    %-46s %v\n", u.name, u.err)
			continue
		}
		fmt.Fprintf(&out, "    %-46s peak RSS %s, CPU %.1fs from the operator's start to converged\n", u.name, mib(u.peakRSS), u.cpu)
	}
	fmt.Fprintf(&out, "  workload API servers, peak RSS of each (kube-apiserver + etcd)   min %s  mean %s  max %s;  CPU of all since their start %s\n",
		mib(workloadPeaks[0]), mib(workloadSum/int64(len(workloadPeaks))), mib(workloadPeaks[len(workloadPeaks)-1]), workloadCPU.Round(time.Second))
	fmt.Fprintf(&out, "  Flux's published figure                          %d HelmReleases in %s = %.1f/min (%s;\n", fluxPublishedHelmReleases, fluxPublishedDuration, published, fluxPublishedFlags)
	aloneRate := "Flux alone not measured"
	if *flagFluxAlone {
		aloneRate = fmt.Sprintf("%.1f/min alone", aloneHRPerMin)
	}
	fmt.Fprintf(&out, "                                                   github.com/fluxcd/flux-benchmark RESULTS.md, Flux v2.6.0); here %.1f/min = %.0f%% of it with the operator, %s\n", hrPerMin, 100*hrPerMin/published, aloneRate)
	fmt.Print(out.String())
}

// fluxAloneAccounts is the accounts of the Flux-alone phases that ran: before the operator's and,
// when measured, after it.
func fluxAloneAccounts(before, after fluxAloneResult) []phaseAccount {
	if after.ready > 0 {
		return []phaseAccount{before.account, after.account}
	}
	return []phaseAccount{before.account}
}

// realFluxRestWindow is how long measureAtRest samples the plane.
const realFluxRestWindow = 20 * time.Second

// atRest is the CPU the plane's processes spend per second while nothing is delivered.
type atRest struct {
	phaseCPU
	flux      time.Duration
	window    time.Duration
	workloadN int
}

func (r atRest) String() string {
	c := func(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()/r.window.Seconds()) }
	return fmt.Sprintf("management API server %s, etcd %s, this benchmark %s, the %d workload API servers (kube-apiserver and etcd) %s, helm- and kustomize-controller %s",
		c(r.api), c(r.etcd), c(r.self), r.workloadN, c(r.workloads), c(r.flux))
}

// measureAtRest samples the CPU of the plane's processes over window while nothing is
// delivered: what they cost by the second, whatever the phase.
func measureAtRest(b testing.TB, e *benchEnv, works []*workloadServer, flux *fluxProcs, window time.Duration) atRest {
	b.Helper()
	fluxCPU := func() time.Duration {
		var d time.Duration
		for _, p := range []*proc.Process{flux.helm, flux.kustomize} {
			s, err := procCPUSeconds(p.Pid())
			must(b, err)
			d += time.Duration(s * float64(time.Second))
		}
		return d
	}
	s0, f0 := samplePhaseCPU(b, e, works), fluxCPU()
	time.Sleep(window)
	return atRest{phaseCPU: s0.until(samplePhaseCPU(b, e, works)), flux: fluxCPU() - f0, window: window, workloadN: len(works)}
}

// printFluxAlone prints what a Flux-alone phase of n Clusters measured.
func printFluxAlone(out *strings.Builder, r fluxAloneResult, n int) {
	fmt.Fprintf(out, "    writer start -> every object written           %s\n", r.written.Round(time.Second))
	fmt.Fprintf(out, "    writer start -> every HelmRelease+Kustomization Ready   %s   (%.1f HelmReleases per minute)\n", r.ready.Round(time.Second), float64(n)/r.ready.Minutes())
	for _, u := range r.usage {
		fmt.Fprintf(out, "    %-46s peak RSS %s, CPU %.1fs\n", u.name, mib(u.peakRSS), u.cpu)
	}
	fmt.Fprintf(out, "    machine speed (speedProbe)                      %s\n", r.speed)
	fmt.Fprintf(out, "    CPU of the servers and the benchmark            %s\n", r.servers)
	fmt.Fprintf(out, "    the plane's CPU in the phase (all of the above) %s\n", r.account.total().Round(time.Second))
	fmt.Fprintf(out, "    removed again (suspended, then deleted: Flux drops them without uninstalling)   %s\n", r.removed.Round(time.Second))
}

// workloadServer is a workload API server that Clusters' kubeconfigs point to.
type workloadServer struct {
	dir        string
	cfg        *rest.Config
	c          client.Client
	kubeconfig []byte
}

// startWorkloadServers starts n kube-apiservers with etcd (envtest), as the local plane's
// workload clusters have, without controller-manager, scheduler or kwok: no addon has Pods.
func startWorkloadServers(b testing.TB, e *benchEnv, bin string, n int) []*workloadServer {
	b.Helper()
	scheme := runtime.NewScheme()
	must(b, clientgoscheme.AddToScheme(scheme))
	var out []*workloadServer
	for i := range n {
		name := fmt.Sprintf("workload-%d", i)
		w := &workloadServer{dir: filepath.Join(e.dir, name)}
		cfg := startAPIServer(b, bin, w.dir, filepath.Join(e.logDir, name+"-kube-apiserver.log"), name, nil, nil)
		w.cfg = cfg
		var err error
		if w.c, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
			b.Fatal(err)
		}
		if w.kubeconfig, err = clientcmd.Write(kubeconfigFor(cfg, name)); err != nil {
			b.Fatal(err)
		}
		out = append(out, w)
	}
	return out
}

// phaseCPU is the CPU time of the processes that serve both phases of BenchmarkRealFlux: the
// management API server, its etcd, this benchmark (the floor writer or the trackers) and all the
// workload API servers with their etcd.
type phaseCPU struct {
	cpuSample
	workloads time.Duration
}

func samplePhaseCPU(b testing.TB, e *benchEnv, works []*workloadServer) phaseCPU {
	b.Helper()
	s := phaseCPU{cpuSample: sampleCPU(b, e)}
	bin := filepath.Dir(e.apiServerBinary)
	for _, w := range works {
		_, cpu, err := w.stats(bin)
		must(b, err)
		s.workloads += cpu
	}
	return s
}

// until is the CPU each spent from s to later.
func (s phaseCPU) until(later phaseCPU) phaseCPU {
	return phaseCPU{cpuSample: s.since(later.cpuSample), workloads: later.workloads - s.workloads}
}

func (s phaseCPU) String() string {
	return fmt.Sprintf("%s, workload API servers %s", s.cpuSample, s.workloads.Round(100*time.Millisecond))
}

// planeMeter measures what one phase costs the plane: its processes' CPU and the API servers'
// requests. The requests are read before the CPU is sampled at the start, and after it at the
// end, so that rendering the API servers' /metrics is not counted as the phase's work.
type planeMeter struct {
	e        *benchEnv
	works    []*workloadServer
	servers  phaseCPU
	requests map[string]float64
}

// startPlaneMeter starts measuring a phase.
func startPlaneMeter(ctx context.Context, b testing.TB, e *benchEnv, works []*workloadServer) planeMeter {
	b.Helper()
	requests := scrapePlaneRequests(ctx, b, e, works)
	return planeMeter{e: e, works: works, requests: requests, servers: samplePhaseCPU(b, e, works)}
}

// stop is what the phase cost since startPlaneMeter: the CPU and the requests served.
func (m planeMeter) stop(ctx context.Context, b testing.TB) (phaseCPU, map[string]float64) {
	b.Helper()
	servers := m.servers.until(samplePhaseCPU(b, m.e, m.works))
	return servers, diffMap(m.requests, scrapePlaneRequests(ctx, b, m.e, m.works))
}

// workloadRequests is put before the key of a workload API server's requests
// (scrapePlaneRequests), which tells them from the management API server's.
const workloadRequests = "workload "

// scrapePlaneRequests is the requests so far, watches left out, of the management API server,
// by "resource[/subresource] VERB", and of all workload API servers together, by the same with
// workloadRequests before it.
func scrapePlaneRequests(ctx context.Context, b testing.TB, e *benchEnv, works []*workloadServer) map[string]float64 {
	b.Helper()
	out := scrapeAPIRequests(ctx, b, e, notWatch)
	for _, w := range works {
		must(b, addAPIRequests(ctx, w.cfg, notWatch, workloadRequests, out))
	}
	return out
}

// stats are the peak RSS of the server's kube-apiserver and its etcd, together, and the CPU
// time they spent so far.
func (w *workloadServer) stats(bin string) (peakRSS int64, cpu time.Duration, err error) {
	api, err := serverStats(filepath.Join(bin, "kube-apiserver"), "--cert-dir="+filepath.Join(w.dir, "kube-apiserver"))
	if err != nil {
		return 0, 0, err
	}
	etcd, err := serverStats(filepath.Join(bin, "etcd"), "--data-dir="+filepath.Join(w.dir, "etcd"))
	if err != nil {
		return 0, 0, err
	}
	return api.peakRSS + etcd.peakRSS, api.cpu + etcd.cpu, nil
}

// startRealFlux starts helm-controller and kustomize-controller as bootstrap/plane does
// (startFlux): one process each against the management API server, fetching artifacts from
// the benchmark's source-controller, with Flux's multi-tenancy lockdown, plus extra flags.
func startRealFlux(ctx context.Context, b testing.TB, e *benchEnv, bin string, extra []string) *fluxProcs {
	b.Helper()
	ports, err := proc.FreePorts(4)
	if err != nil {
		b.Fatal(err)
	}
	addr := func(i int) string { return "127.0.0.1:" + strconv.Itoa(ports[i]) }
	f := &fluxProcs{flags: extra}
	start := func(name string, metrics, health string) *proc.Process {
		home := filepath.Join(e.dir, "home", name)
		must(b, os.MkdirAll(home, 0o755))
		args := append([]string{
			"--metrics-addr=" + metrics, "--health-addr=" + health,
			"--enable-leader-election=false", "--watch-all-namespaces=true", "--log-encoding=console",
			"--no-cross-namespace-refs=true", "--default-service-account=" + plane.DefaultFluxServiceAccount,
		}, extra...)
		p, err := proc.Start(proc.Spec{Name: name, Path: filepath.Join(bin, name), Args: args, Env: []string{
			"KUBECONFIG=" + e.kubeconfig, "RUNTIME_NAMESPACE=flux-system", "HOME=" + home, "SOURCE_CONTROLLER_LOCALHOST=" + e.storageAddr,
		}, LogFile: filepath.Join(e.logDir, name+".log")})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = p.Stop(0) })
		return p
	}
	f.helm = start("helm-controller", addr(0), addr(1))
	f.kustomize = start("kustomize-controller", addr(2), addr(3))
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	must(b, proc.WaitHTTP(wctx, "http://"+addr(1)+"/readyz", f.helm))
	must(b, proc.WaitHTTP(wctx, "http://"+addr(3)+"/readyz", f.kustomize))
	return f
}

// bindClusterAdmin grants subject cluster-admin.
func bindClusterAdmin(ctx context.Context, c client.Client, subject rbacv1.Subject) error {
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "bench-flux-admin"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{subject},
	}
	if err := c.Create(ctx, crb); err != nil {
		return fmt.Errorf("bind %s to cluster-admin: %w", subject.Name, err)
	}
	return nil
}

// createClustersOn creates the Clusters named (see createCluster), the i-th with kubeconfig(i).
func createClustersOn(ctx context.Context, c client.Client, names []string, kubeconfig func(i int) []byte) error {
	jobs := make(chan int)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range jobs {
				if err := createCluster(ctx, c, names[i], kubeconfig(i)); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	for i := range names {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return errors.Join(errs...)
}

// readyTracker follows each Cluster's HelmRelease, Kustomization and ClusterAddon through an
// informer of the benchmark's own (no polling of the API server): when each was first seen
// written and first seen Ready, as durations since begin.
type readyTracker struct {
	mu                                 sync.Mutex
	start                              time.Time
	want                               map[string]bool // the Clusters followed
	n                                  int
	hrSeen, hrReady, ksSeen, ksReady   map[string]time.Duration // by cluster
	addonReady                         map[string]time.Duration
	allWritten, fluxReady, addonsReady time.Duration
	hrFirstSeen, hrLastReady           time.Duration

	// Per Cluster, along its critical path start -> HelmRelease written (operator) -> Ready
	// (Flux) -> Kustomization written (operator; it waits for the HelmRelease, see
	// fluxgen.AddonObjects) -> Ready (Flux) -> ClusterAddon Ready (operator).
	operatorPart, fluxPart, total []time.Duration
	// Per object: written -> Ready.
	hrWait, ksWait []time.Duration

	// addonRV is each followed ClusterAddon's last resourceVersion seen; addonWrites counts the
	// versions after its first (every update: the operator is its only writer in this phase).
	addonRV     map[string]string
	addonWrites int
}

func newReadyTracker(names []string) *readyTracker {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	return &readyTracker{want: want, n: len(names), hrSeen: map[string]time.Duration{}, hrReady: map[string]time.Duration{},
		ksSeen: map[string]time.Duration{}, ksReady: map[string]time.Duration{}, addonReady: map[string]time.Duration{}, addonRV: map[string]string{}}
}

func fluxReady(conds []metav1.Condition, gen, observed int64) bool {
	return observed == gen && apimeta.IsStatusConditionTrue(conds, meta.ReadyCondition)
}

// note records now as the first time of cluster in m.
func note(m map[string]time.Duration, cluster string, now time.Duration) {
	if _, ok := m[cluster]; !ok {
		m[cluster] = now
	}
}

// begin starts the clock.
func (t *readyTracker) begin() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.start = time.Now()
}

// observe records what the informer saw of an object of a Cluster followed, once begun.
func (t *readyTracker) observe(_ string, o client.Object) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.start.IsZero() {
		return
	}
	now := time.Since(t.start)
	switch obj := o.(type) {
	case *helmv2.HelmRelease:
		if cl := obj.Labels[csv1.ClusterNameLabel]; t.want[cl] {
			note(t.hrSeen, cl, now)
			if fluxReady(obj.Status.Conditions, obj.Generation, obj.Status.ObservedGeneration) {
				note(t.hrReady, cl, now)
			}
		}
	case *kustomizev1.Kustomization:
		if cl := obj.Labels[csv1.ClusterNameLabel]; t.want[cl] {
			note(t.ksSeen, cl, now)
			if fluxReady(obj.Status.Conditions, obj.Generation, obj.Status.ObservedGeneration) {
				note(t.ksReady, cl, now)
			}
		}
	case *csv1.ClusterAddon:
		if prev, ok := t.addonRV[obj.Name]; t.want[obj.Name] && ok && prev != obj.ResourceVersion {
			t.addonWrites++
		}
		if t.want[obj.Name] {
			t.addonRV[obj.Name] = obj.ResourceVersion
		}
		if t.want[obj.Name] && apimeta.IsStatusConditionTrue(obj.Status.Conditions, csv1.ReadyCondition) && obj.Status.LastAppliedRelease == release {
			note(t.addonReady, obj.Name, now)
		}
	}
	if t.allWritten == 0 && len(t.hrSeen) >= t.n && len(t.ksSeen) >= t.n {
		t.allWritten = now
	}
	if t.fluxReady == 0 && len(t.hrReady) >= t.n && len(t.ksReady) >= t.n {
		t.fluxReady = now
	}
	if t.addonsReady == 0 && t.fluxReady > 0 && len(t.addonReady) >= t.n {
		t.addonsReady = now
	}
}

// progress reports whether every ClusterAddon is Ready with the release, and how far it is;
// once done, the per-Cluster parts are computed.
func (t *readyTracker) progress() (bool, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	msg := fmt.Sprintf("HelmReleases %d written, %d Ready; Kustomizations %d written, %d Ready; ClusterAddons %d Ready",
		len(t.hrSeen), len(t.hrReady), len(t.ksSeen), len(t.ksReady), len(t.addonReady))
	if t.addonsReady == 0 {
		return false, msg
	}
	if t.total != nil {
		return true, msg
	}
	t.hrFirstSeen = -1
	for cl, done := range t.addonReady {
		hrSeen, hrReady, ksSeen, ksReady := t.hrSeen[cl], t.hrReady[cl], t.ksSeen[cl], t.ksReady[cl]
		op := hrSeen + max(0, ksSeen-hrReady) + max(0, done-max(hrReady, ksReady))
		t.operatorPart = append(t.operatorPart, op)
		t.fluxPart = append(t.fluxPart, done-op)
		t.total = append(t.total, done)
		t.hrWait = append(t.hrWait, hrReady-hrSeen)
		t.ksWait = append(t.ksWait, ksReady-ksSeen)
		if t.hrFirstSeen < 0 || hrSeen < t.hrFirstSeen {
			t.hrFirstSeen = hrSeen
		}
		t.hrLastReady = max(t.hrLastReady, hrReady)
	}
	return true, msg
}

// pct is the p-th percentile of ds, rounded to 0.1 s.
func (t *readyTracker) pct(ds []time.Duration, p int) time.Duration {
	return percentile(ds, p).Round(100 * time.Millisecond)
}

// sumDur is the sum of ds.
func sumDur(ds []time.Duration) time.Duration {
	var s time.Duration
	for _, d := range ds {
		s += d
	}
	return s
}

// checkWorkloads checks that the addons of every Cluster named are in its workload API server
// (the i-th Cluster's in works[i % len(works)]), each in its own namespace: the Helm chart's
// ConfigMap <cluster>-config in cfg-<cluster> (a release of its own) and the kustomize ConfigMap
// in obj-<cluster>, both with the Cluster's name, which the values ConfigMap carried.
func checkWorkloads(ctx context.Context, works []*workloadServer, names []string) error {
	var errs []error
	for i, cl := range names {
		w := works[i%len(works)]
		for _, key := range []client.ObjectKey{{Namespace: "cfg-" + cl, Name: cl + "-config"}, {Namespace: "obj-" + cl, Name: "cluster-info"}} {
			cm := &corev1.ConfigMap{}
			if err := w.c.Get(ctx, key, cm); err != nil {
				errs = append(errs, fmt.Errorf("workload API server %s: ConfigMap %s: %w", filepath.Base(w.dir), key, err))
			} else if cm.Data["cluster-name"] != cl {
				errs = append(errs, fmt.Errorf("workload API server %s: ConfigMap %s has cluster-name %q, want %q", filepath.Base(w.dir), key, cm.Data["cluster-name"], cl))
			}
		}
		if len(errs) > 5 {
			break
		}
	}
	return errors.Join(errs...)
}

// writeBenchStack writes the benchmark's stack into dir: the reference cluster-class (copied
// from classDir), a Helm addon "config" installed into the per-cluster namespace
// cfg-${cluster_name}, and a kustomize addon "objects" that creates namespace
// obj-${cluster_name} with its objects (Flux substitutes ${cluster_name} from the values
// ConfigMap).
func writeBenchStack(dir, classDir string) error {
	if err := os.CopyFS(filepath.Join(dir, "cluster-class"), os.DirFS(classDir)); err != nil {
		return fmt.Errorf("copy the cluster-class: %w", err)
	}
	files := map[string]string{
		"stack.yaml": `# Written by BenchmarkRealFlux (test/bench/realflux_test.go).
provider: aws
clusterStackName: base
kubernetesVersion: 1.36.3
namespaces:
  config: cfg-${cluster_name}
`,
		"clusteraddon.yaml": `apiVersion: clusteraddonconfig.x-k8s.io/v1alpha1
clusterAddonVersion: clusteraddons.clusterstack.x-k8s.io/v1alpha1
addonStages:
  AfterControlPlaneInitialized:
    - name: config
      action: apply
    - name: objects
      action: apply
`,
		"cluster-addon/config/Chart.yaml":  "apiVersion: v2\nname: config\nversion: 1.0.0\n",
		"cluster-addon/config/values.yaml": "clusterName: \"\"\npodCIDR: \"\"\n",
		"cluster-addon/config/overwrite.yaml": `values: |
  clusterName: "{{ .Cluster.metadata.name }}"
  podCIDR: "{{ index .Cluster.spec.clusterNetwork.pods.cidrBlocks 0 }}"
`,
		"cluster-addon/config/templates/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
  namespace: {{ .Release.Namespace }}
data:
  cluster-name: {{ .Values.clusterName | quote }}
  pod-cidr: {{ .Values.podCIDR | quote }}
`,
		"cluster-addon/config/templates/serviceaccount.yaml": `apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ .Release.Name }}
  namespace: {{ .Release.Namespace }}
`,
		"cluster-addon/objects/kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - objects.yaml
`,
		"cluster-addon/objects/objects.yaml": `apiVersion: v1
kind: Namespace
metadata:
  name: obj-${cluster_name}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cluster-info
  namespace: obj-${cluster_name}
data:
  cluster-name: "${cluster_name}"
  pod-cidr: "${cluster_pod_cidr}"
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: objects
  namespace: obj-${cluster_name}
`,
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// ---------------------------------------------------------------------------------------------
// /proc readings.

// procCPUSeconds is the user and system CPU time of a process, in seconds.
func procCPUSeconds(pid int) (float64, error) {
	st, err := readProcStats(pid)
	return st.cpu.Seconds(), err
}

// loadAvg is the first three fields of /proc/loadavg.
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// operatorEvents lists the Events about the operator's kinds in the benchmark's namespace: per
// reason, the Event objects (one create each) and their occurrences (each repeat is a patch of
// the Event's count).
func operatorEvents(ctx context.Context, b testing.TB, e *benchEnv) string {
	b.Helper()
	var list corev1.EventList
	must(b, e.c.List(ctx, &list, client.InNamespace(benchNS)))
	objects, occurrences := map[string]int{}, map[string]int32{}
	for _, ev := range list.Items {
		if ev.InvolvedObject.APIVersion != csv1.GroupVersion.String() {
			continue
		}
		objects[ev.Reason]++
		occurrences[ev.Reason] += max(ev.Count, 1)
	}
	if len(objects) == 0 {
		return "none"
	}
	reasons := make([]string, 0, len(objects))
	for r := range objects {
		reasons = append(reasons, r)
	}
	slices.Sort(reasons)
	parts := make([]string, 0, len(reasons))
	for _, r := range reasons {
		parts = append(parts, fmt.Sprintf("%s %d / %d", r, objects[r], occurrences[r]))
	}
	return strings.Join(parts, ", ")
}
