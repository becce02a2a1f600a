// BenchmarkDashboardFleet, run by `make bench-dashboard` (not by make test): the fleet page of
// `kubectl clusterstack dashboard` for BENCH_DASHBOARD_CLUSTERS (10,000) Clusters, loaded in
// headless Chromium.

package bench

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/scheme"
	"github.com/clusterstack-io/clusterstack-operator/internal/testenv"
	"github.com/clusterstack-io/clusterstack-operator/internal/testenv/browser"
)

var flagDashboardClusters = flag.String("bench.dashboard-clusters", envOr("BENCH_DASHBOARD_CLUSTERS", "10000"), "number of Clusters of BenchmarkDashboardFleet")

// dashboardNamespaces spread the benchmark's Clusters, one ClusterStack each.
const dashboardNamespaces = 10

// BenchmarkDashboardFleet writes, into a real API server (envtest, no operator), what the
// operator and Flux keep for N Clusters: per namespace a ClusterStack with two releases, and per
// Cluster a ClusterAddon with its status (1% Degraded, 2% Progressing, the rest Ready; two
// components each), a HelmRelease and a Kustomization labelled as the operator labels them.
// Then it runs `kubectl clusterstack dashboard -A` (the plugin's binary) and loads the fleet page
// in headless Chromium. It prints the time to first paint and to first contentful paint
// (Performance API), the server's response time and page size, and the dashboard's memory: its
// resident set (current and peak) once the page is served. It asserts no timing; it runs once
// whatever b.N is.
func BenchmarkDashboardFleet(b *testing.B) {
	n, err := strconv.Atoi(*flagDashboardClusters)
	if err != nil || n < dashboardNamespaces {
		b.Fatalf("bench.dashboard-clusters %q: want a number of at least %d", *flagDashboardClusters, dashboardNamespaces)
	}
	ctx := b.Context()
	env, err := testenv.New(testenv.CRDs{Operator: true, Flux: true})
	if err != nil {
		b.Fatal(err)
	}
	cfg := testenv.StartEnv(b, env)
	cfg.QPS, cfg.Burst = 1000, 2000
	admin, err := env.AddUser(envtest.User{Name: "bench-admin", Groups: []string{"system:masters"}}, &rest.Config{QPS: 1000, Burst: 2000})
	must(b, err)
	c, err := client.New(admin.Config(), client.Options{Scheme: scheme.New()})
	must(b, err)

	start := time.Now()
	writeDashboardObjects(ctx, b, c, n)
	logf("wrote %d ClusterAddons (with status), %d HelmReleases and %d Kustomizations in %s", n, n, n, since(start))

	kubeconfig, err := admin.KubeConfig()
	must(b, err)
	dir := b.TempDir()
	kcPath := filepath.Join(dir, "kubeconfig")
	must(b, os.WriteFile(kcPath, kubeconfig, 0o600))
	root, err := testenv.Root()
	must(b, err)
	bin := filepath.Join(dir, "kubectl-clusterstack")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/kubectl-clusterstack")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build ./cmd/kubectl-clusterstack: %v: %s", err, out)
	}

	logFile, err := os.Create(filepath.Join(dir, "dashboard.log"))
	must(b, err)
	defer func() { _ = logFile.Close() }()
	cmd := exec.Command(bin, "dashboard", "--kubeconfig", kcPath, "-A")
	cmd.Stderr = logFile
	stdout, err := cmd.StdoutPipe()
	must(b, err)
	started := time.Now()
	must(b, cmd.Start())
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		_ = cmd.Wait()
	}()
	url := ""
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), "ClusterStack dashboard: "); ok {
			url = u
			break
		}
	}
	if url == "" {
		log, _ := os.ReadFile(logFile.Name())
		b.Fatalf("the dashboard printed no URL: %s", log)
	}
	synced := since(started)
	synced0, err := readProcStats(cmd.Process.Pid)
	must(b, err)

	tab := browser.Start(b, dir)
	if tab == nil {
		return
	}
	b.ResetTimer()
	loadStart := time.Now()
	must(b, chromedp.Do(tab, chromedp.Navigate(url)))
	loaded := since(loadStart)
	b.StopTimer()
	type timing struct {
		FirstPaint, FirstContentfulPaint, ResponseStart, RequestStart, ResponseEnd, DOMContentLoaded float64
		TransferSize, Rows                                                                           int
	}
	// Paint entries are recorded when the page is painted; a headless tab paints on its next
	// frames, so the script waits for them (an observer, buffered) before it reads.
	t, err := chromedp.Run(tab, chromedp.Evaluate[timing](`new Promise(resolve => {
		const paint = () => Object.fromEntries(performance.getEntriesByType("paint").map(e => [e.name, e.startTime]));
		const done = () => {
			const p = paint(), nav = performance.getEntriesByType("navigation")[0];
			resolve({
				FirstPaint: p["first-paint"] || 0, FirstContentfulPaint: p["first-contentful-paint"] || 0,
				RequestStart: nav.requestStart, ResponseStart: nav.responseStart, ResponseEnd: nav.responseEnd,
				DOMContentLoaded: nav.domContentLoadedEventEnd, TransferSize: nav.transferSize,
				Rows: document.querySelectorAll("tr[data-cluster]").length,
			});
		};
		if (paint()["first-contentful-paint"]) { done(); return; }
		new PerformanceObserver(() => { if (paint()["first-contentful-paint"]) { done(); } }).observe({type: "paint", buffered: true});
		requestAnimationFrame(() => requestAnimationFrame(() => {}));
		setTimeout(done, 10000);
	})`, chromedp.EvalAwaitPromise))
	must(b, err)
	totals, err := chromedp.Run(tab, chromedp.Text(chromedp.CSS("p.totals")))
	must(b, err)
	served, err := readProcStats(cmd.Process.Pid)
	must(b, err)

	logf("dashboard of %d Clusters in %d namespaces: watches synced and URL printed %s after start (RSS %s)", n, dashboardNamespaces, synced, mib(synced0.rss))
	logf("fleet page: %s", strings.Join(strings.Fields(totals), " "))
	logf("fleet page load (navigation, token exchange and redirect included): %s", round(loaded))
	logf("time to first paint %.0f ms, first contentful paint %.0f ms (Performance API, from the navigation's start)", t.FirstPaint, t.FirstContentfulPaint)
	logf("server response %.0f ms (request to first byte), document %d bytes, %d Cluster rows on the page, DOMContentLoaded %.0f ms",
		t.ResponseStart-t.RequestStart, t.TransferSize, t.Rows, t.DOMContentLoaded)
	logf("dashboard memory: RSS %s, peak RSS %s, CPU %s", mib(served.rss), mib(served.peakRSS), served.cpu)
	b.ReportMetric(t.FirstPaint, "first-paint-ms")
	b.ReportMetric(t.FirstContentfulPaint, "first-contentful-paint-ms")
	b.ReportMetric(float64(served.rss)/(1<<20), "rss-MiB")
	b.ReportMetric(float64(served.peakRSS)/(1<<20), "peak-rss-MiB")
	if t.FirstContentfulPaint == 0 {
		b.Error("the browser reported no first contentful paint")
	}
	if t.Rows == 0 || t.Rows > 50 {
		b.Errorf("the fleet page lists %d Clusters; want one page of failing ones (1 to 50)", t.Rows)
	}
}

// writeDashboardObjects writes the benchmark's objects with 32 concurrent writers.
func writeDashboardObjects(ctx context.Context, b *testing.B, c client.Client, n int) {
	b.Helper()
	now := metav1.Now()
	cond := func(t string, s metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, LastTransitionTime: now}
	}
	for i := range dashboardNamespaces {
		ns := fmt.Sprintf("team-%02d", i)
		must(b, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
		cs := &csv1.ClusterStack{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "aws-base-1-36"},
			Spec: csv1.ClusterStackSpec{Provider: "aws", Name: "base", KubernetesVersion: "1.36", Versions: []string{"v1", "v2"},
				Source: csv1.StackSource{URL: "https://git.example/stacks", Path: "providers/aws/base/1-36"}}}
		must(b, c.Create(ctx, cs))
		cs.Status = csv1.ClusterStackStatus{Conditions: []metav1.Condition{cond(csv1.ReadyCondition, "True", csv1.ReasonAsExpected, "ready"), cond(csv1.AvailableCondition, "True", csv1.ReasonAsExpected, "available")},
			Releases: []csv1.ReleaseSummary{
				{Name: "aws-base-1-36-v1", Version: "v1", Reasons: []string{"Pinned", "InUse"}, Available: true},
				{Name: "aws-base-1-36-v2", Version: "v2", Reasons: []string{"Pinned", "InUse"}, Available: true},
			}}
		must(b, c.Status().Update(ctx, cs))
	}
	work := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range 32 {
		wg.Go(func() {
			for i := range work {
				if err := writeDashboardCluster(ctx, c, i, cond); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	must(b, firstErr)
}

// writeDashboardCluster writes Cluster i's ClusterAddon (with status), HelmRelease and
// Kustomization.
func writeDashboardCluster(ctx context.Context, c client.Client, i int, cond func(string, metav1.ConditionStatus, string, string) metav1.Condition) error {
	ns, name := fmt.Sprintf("team-%02d", i%dashboardNamespaces), clusterName(i)
	release := "aws-base-1-36-v1"
	if i%2 == 1 {
		release = "aws-base-1-36-v2"
	}
	labels := map[string]string{csv1.ManagedByLabel: csv1.ManagedByValue, csv1.ClusterNameLabel: name}
	interval := metav1.Duration{Duration: 10 * time.Minute}
	hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-cni", Labels: labels},
		Spec: helmv2.HelmReleaseSpec{Interval: interval, ChartRef: &helmv2.CrossNamespaceSourceReference{Kind: "HelmChart", Name: release + "-cni"}}}
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-cluster-info", Labels: labels},
		Spec: kustomizev1.KustomizationSpec{Interval: interval, Prune: true, SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: release}}}
	addon := &csv1.ClusterAddon{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: csv1.ClusterAddonSpec{ClusterName: name}}
	for _, o := range []client.Object{hr, ks, addon} {
		if err := c.Create(ctx, o); err != nil {
			return fmt.Errorf("create %T %s/%s: %w", o, ns, o.GetName(), err)
		}
	}
	readyComps := true
	conds := []metav1.Condition{
		cond(csv1.AvailableCondition, "True", csv1.ReasonAsExpected, "available"),
		cond(csv1.ProgressingCondition, "False", csv1.ReasonAsExpected, "up to date"),
		cond(csv1.DegradedCondition, "False", csv1.ReasonAsExpected, "fine"),
		cond(csv1.ReadyCondition, "True", csv1.ReasonAsExpected, "ready"),
	}
	switch {
	case i%100 == 0:
		msg := "component cni: HelmRelease/" + name + "-cni failed: install retries exhausted: Deployment cni: image \"\" rejected"
		conds = []metav1.Condition{cond(csv1.AvailableCondition, "False", csv1.ReasonFluxNotReady, msg), cond(csv1.ProgressingCondition, "False", csv1.ReasonAsExpected, "not moving"),
			cond(csv1.DegradedCondition, "True", csv1.ReasonFluxNotReady, msg), cond(csv1.ReadyCondition, "False", csv1.ReasonFluxNotReady, msg)}
		readyComps = false
	case i%100 < 3:
		msg := "component cni: HelmRelease/" + name + "-cni is installing"
		conds = []metav1.Condition{cond(csv1.AvailableCondition, "False", csv1.ReasonReconciling, msg), cond(csv1.ProgressingCondition, "True", csv1.ReasonReconciling, msg),
			cond(csv1.DegradedCondition, "False", csv1.ReasonAsExpected, "fine"), cond(csv1.ReadyCondition, "False", csv1.ReasonReconciling, msg)}
		readyComps = false
	}
	progress := "2/2"
	if !readyComps {
		progress = "1/2"
	}
	addon.Status = csv1.ClusterAddonStatus{Conditions: conds, ClusterStack: "aws-base-1-36", DesiredRelease: release, LastAppliedRelease: release, Progress: progress,
		Components: []csv1.AddonComponentStatus{
			{Name: "cni", Kind: csv1.ComponentKindHelm, Release: release, Version: "1.0.0", FluxObject: "HelmRelease/" + hr.Name, Ready: readyComps},
			{Name: "cluster-info", Kind: csv1.ComponentKindKustomize, Release: release, FluxObject: "Kustomization/" + ks.Name, Ready: true},
		}}
	if err := c.Status().Update(ctx, addon); err != nil {
		return fmt.Errorf("status of ClusterAddon %s/%s: %w", ns, name, err)
	}
	return nil
}
