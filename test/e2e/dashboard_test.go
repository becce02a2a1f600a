package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/testenv/browser"
	"github.com/clusterstack-io/clusterstack-operator/test/framework"
)

// `kubectl clusterstack dashboard`, run as a user runs it (the plugin's binary, the suite's
// kubeconfig), driven in headless Chromium (Debian's chromium, which .ci/run installs): the
// fleet page, left open, shows a Cluster Degraded once its chart fails, without a reload; the
// Cluster page names the failing Flux object and what Flux said. One browser for all checks;
// screenshots of each page go to <plane logs>/dashboard (or $DASHBOARD_SCREENSHOTS). The stack
// page of a rollout halted in a wave is checked where the suite halts one: the GitOps loop.
var _ = Describe("The dashboard", Ordered, func() {
	const ns = "dashboard"
	var (
		d   *dashboardSession
		url string
	)
	text := func(sel string) string { GinkgoHelper(); return d.text(sel) }
	textNow := func(sel string) string { GinkgoHelper(); return d.textNow(sel) }
	open := func(path string) { GinkgoHelper(); d.open(path) }
	shot := func(name string) { GinkgoHelper(); d.shot(name) }

	BeforeAll(func(ctx SpecContext) {
		createNamespace(ctx, ns)
		Expect(k8s.Create(ctx, newClusterStack(ns, "v6"))).To(Succeed())
		d = startDashboard(ctx, ns)
		url = d.url
	}, NodeTimeout(5*time.Minute))

	It("shows a Cluster Degraded on the open fleet page within seconds of the failure, without a reload", func(ctx SpecContext) {
		open(url)
		Expect(chromedp.Run(d.tab, chromedp.Location())).NotTo(ContainSubstring("token"), "the token is exchanged for a cookie and dropped from the address")
		Expect(text("h1")).To(Equal("Fleet"))
		_, err := chromedp.Run(d.tab, chromedp.Evaluate[bool](`(window.notReloaded = true)`))
		Expect(err).NotTo(HaveOccurred())
		Eventually(ctx, func() string { return textNow("#live-status") }).WithTimeout(time.Minute).Should(ContainSubstring("connected"), "the page's event stream")

		By("a Cluster whose cni chart never installs (v6)")
		Expect(k8s.Create(ctx, newCluster(ns, "broken", "v6", "10.43.0.0/16"))).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			g.Expect(getAddon(ctx, g, ns, "broken")).To(framework.HaveCondition(csv1.DegradedCondition, metav1.ConditionTrue, "HelmRelease/broken-cni"))
		}).Should(Succeed())
		// A bound on the live path (watch, event stream, refresh), not a speed: a page that
		// does not follow its events stays as it was and fails here.
		Eventually(ctx, func() string { return textNow(`[data-cluster="dashboard/broken"]`) }).WithTimeout(20*time.Second).
			Should(ContainSubstring("Degraded"), "the open fleet page shows the failed Cluster")
		Expect(chromedp.Run(d.tab, chromedp.Evaluate[bool](`window.notReloaded === true`))).To(BeTrue(), "the page was not reloaded")
		Expect(text(`[data-stack="dashboard/aws-base-1-36"]`)).To(ContainSubstring("1 Degraded"))
		shot("fleet")
	})

	It("names the failing Flux object and what Flux said on the Cluster page", func(ctx SpecContext) {
		// What Flux said: its Ready message as the ClusterAddon mirrors it, or the failure the
		// operator kept while Flux retries. A busy helm-controller may not have got that far yet
		// (the ClusterAddon then says that it waits for it).
		said := ""
		Eventually(ctx, func(g Gomega) {
			addon := getAddon(ctx, g, ns, "broken")
			said = ""
			for _, u := range addon.Status.Unhealthy {
				if u.Object == "HelmRelease/broken-cni" {
					said = u.LastFailure
				}
			}
			if said == "" {
				c := apimeta.FindStatusCondition(addon.Status.Conditions, csv1.DegradedCondition)
				g.Expect(c).NotTo(BeNil())
				said = c.Message
			}
			g.Expect(said).To(ContainSubstring("image"))
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		// The first words suffice: Flux may retry meanwhile and say it again in other words later on.
		words := strings.Fields(said)
		firstWords := strings.Join(words[:min(8, len(words))], " ")

		base, _, _ := strings.Cut(url, "?")
		open(strings.TrimSuffix(base, "/") + "/clusters/" + ns + "/broken")
		Expect(text("#why-h")).To(ContainSubstring("Blocked: ComponentFailing"))
		Expect(text(".verdict-summary")).To(ContainSubstring("Component cni is failing: HelmRelease " + ns + "/broken-cni"))
		row := text(`tr[data-component="cni"]`)
		Expect(row).To(ContainSubstring("HelmRelease/broken-cni"))
		Expect(row).To(ContainSubstring("kubectl get helmrelease -n " + ns + " broken-cni"))
		Expect(row).To(ContainSubstring(firstWords), "what Flux said")
		Expect(text(`section[aria-labelledby="values-h"]`)).To(MatchRegexp(`podCIDR 10\.43\.0\.0/16 Cluster/broken \.spec\.clusterNetwork\.pods\.cidrBlocks\[0\]`),
			"the values with their provenance (`values`)")
		shot("cluster")
	})

	It("shows the stack and the ManagementOperators", func(ctx SpecContext) {
		base, _, _ := strings.Cut(url, "?")
		base = strings.TrimSuffix(base, "/")
		open(base + "/stacks/" + ns + "/aws-base-1-36")
		Expect(text("table.releases")).To(ContainSubstring(tagPrefix + "v6"))
		Expect(text("section.problems")).To(ContainSubstring("1 of 1 Clusters are Degraded"))
		shot("stack")
		open(base + "/operators")
		Expect(text("h1")).To(Equal("ManagementOperators"))
		shot("operators")
		var ops csv1.ManagementOperatorList
		Expect(k8s.List(ctx, &ops)).To(Succeed())
		if len(ops.Items) > 0 {
			name := ops.Items[0].Name
			open(base + "/operators/" + name)
			Expect(text("h1")).To(Equal("ManagementOperator " + name))
			Expect(text("dl.versions")).To(ContainSubstring("Desired (spec.version) " + ops.Items[0].Spec.Version))
			shot("operator")
		}
	})
})

func errString(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// dashboardSession is `kubectl clusterstack dashboard -n <namespace>` started as a user starts
// it, and a headless Chromium tab (one browser per session) to read its pages.
type dashboardSession struct {
	url   string // as printed: with the one-time token
	base  string // the URL without the token
	shots string
	tab   context.Context
}

// startDashboard builds the kubectl plugin, starts its dashboard on namespace ns with the suite's
// kubeconfig and a browser, and stops both when the container ends. Screenshots go to
// $DASHBOARD_SCREENSHOTS or <plane logs>/dashboard.
func startDashboard(ctx context.Context, ns string) *dashboardSession {
	GinkgoHelper()
	d := &dashboardSession{shots: os.Getenv("DASHBOARD_SCREENSHOTS")}
	if d.shots == "" {
		d.shots = filepath.Join(pl.LogDir(), "dashboard")
	}
	Expect(os.MkdirAll(d.shots, 0o755)).To(Succeed())
	d.tab = browser.Start(GinkgoT(), d.shots)

	bin := filepath.Join(GinkgoT().TempDir(), "kubectl-clusterstack")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/kubectl-clusterstack")
	build.Dir = repoRoot
	build.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
	out, err := build.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "go build ./cmd/kubectl-clusterstack: %s", out)

	// The dashboard, as `kubectl clusterstack dashboard -n <ns>`: it prints its URL.
	logFile, err := os.Create(filepath.Join(d.shots, "dashboard-"+ns+".log"))
	Expect(err).NotTo(HaveOccurred())
	cmd := exec.Command(bin, "dashboard", "--kubeconfig", pl.Kubeconfig(), "-n", ns)
	cmd.Stderr = logFile
	stdout, err := cmd.StdoutPipe()
	Expect(err).NotTo(HaveOccurred())
	Expect(cmd.Start()).To(Succeed())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	DeferCleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case err := <-exited:
			GinkgoWriter.Printf("kubectl clusterstack dashboard stopped: %v\n", err)
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
		}
		_ = logFile.Close()
	})
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "ClusterStack dashboard: "); ok {
				urls <- u
			}
		}
	}()
	select {
	case d.url = <-urls:
	case err := <-exited:
		Fail("kubectl clusterstack dashboard exited: " + errString(err) + "; its log: " + logFile.Name())
	case <-time.After(2 * time.Minute):
		Fail("kubectl clusterstack dashboard printed no URL within 2 minutes; its log: " + logFile.Name())
	}
	Expect(d.url).To(MatchRegexp(`^http://127\.0\.0\.1:[0-9]+/\?token=[0-9a-f]{64}$`), "a loopback URL with a one-time token")
	base, _, _ := strings.Cut(d.url, "?")
	d.base = strings.TrimSuffix(base, "/")
	return d
}

// text is the text of the first element sel selects, whitespace folded; it waits for one.
func (d *dashboardSession) text(sel string) string {
	GinkgoHelper()
	tctx, cancel := context.WithTimeout(d.tab, time.Minute)
	defer cancel()
	s, err := chromedp.Run(tctx, chromedp.Text(chromedp.CSS(sel)))
	Expect(err).NotTo(HaveOccurred(), "text of %s", sel)
	return strings.Join(strings.Fields(s), " ")
}

// textNow is the text of the first element sel selects, "" when there is none: it does not
// wait for the element, for Eventually to poll.
func (d *dashboardSession) textNow(sel string) string {
	GinkgoHelper()
	js, err := json.Marshal(sel)
	Expect(err).NotTo(HaveOccurred())
	s, err := chromedp.Run(d.tab, chromedp.Evaluate[string](`(document.querySelector(`+string(js)+`) || {innerText: ""}).innerText`))
	Expect(err).NotTo(HaveOccurred(), "text of %s", sel)
	return strings.Join(strings.Fields(s), " ")
}

// open navigates to url, absolute or a path of the dashboard ("/stacks/ns/name").
func (d *dashboardSession) open(url string) {
	GinkgoHelper()
	if strings.HasPrefix(url, "/") {
		url = d.base + url
	}
	tctx, cancel := context.WithTimeout(d.tab, time.Minute)
	defer cancel()
	Expect(chromedp.Do(tctx, chromedp.Navigate(url))).To(Succeed(), "open %s", url)
}

// shot saves a screenshot of the page as <shots>/<name>.png.
func (d *dashboardSession) shot(name string) {
	GinkgoHelper()
	path := filepath.Join(d.shots, name+".png")
	Expect(browser.Screenshot(d.tab, path)).To(Succeed())
	GinkgoWriter.Printf("screenshot %s\n", path)
}
