package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/gitea"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/plane"
	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
	"github.com/clusterstack-io/clusterstack-operator/test/framework"
)

// Attacks on pull-request proposals (docs/multi-tenancy.md, the attack table), on the plane's
// Gitea with real Flux: a look-alike pull request from a fork, a fleet repository served over
// plain http, and a tarpit forge. Each fleet repository is applied by its own Flux
// Kustomization; the victim's stack has one Cluster, paused (nothing is provisioned: only its
// class in the fleet repository matters to the proposals).
var _ = Describe("Attacks on proposals", Ordered, SpecPriority(8), func() {
	const (
		victimNS    = "attack-proposals"
		httpNS      = "attack-http"
		tarpitNS    = "attack-tarpit"
		stacksRepo  = "stacks-attacks"
		victimFleet = "fleet-attack-proposals"
		httpFleet   = "fleet-attack-http"
		tarpitFleet = "fleet-attack-tarpit"
		interval    = 10 * time.Second
		// tarpitStacks outnumber the updates controller's workers (--concurrent, 10): without
		// deadlines and a budget per forge host they would hold every one of them.
		tarpitStacks = 12
		mallory      = "mallory"
	)
	var (
		f      *gitea.Forge
		owner  string
		branch = "clusterstack/" + victimNS + "/aws-base-1-36/remaining"
	)
	publishStack := func(ctx context.Context, v string) {
		GinkgoHelper()
		publishTo(ctx, stacksRepo, tagPrefix+v, func(dir string) {
			Expect(stack.SetChartVersion(filepath.Join(dir, stackPath), v)).To(Succeed())
		})
	}
	stackYAML := func(ns, name, specName, version string) string {
		return `apiVersion: clusterstack.io/v1alpha1
kind: ClusterStack
metadata:
  name: ` + name + `
  namespace: ` + ns + `
spec:
  provider: aws
  name: ` + specName + `
  kubernetesVersion: "1.36"
  source:
    url: ` + pl.Git().RepoURL(stacksRepo) + `
    path: ` + stackPath + `
  versions:
    - ` + version + `
  interval: ` + interval.String() + `
  updates:
    proposals:
      provider: gitea
      secretRef:
        name: fleet-bot
`
	}
	clusterYAML := func(class string) string {
		return `apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata:
  name: c1
  namespace: ` + victimNS + `
spec:
  paused: true
  clusterNetwork:
    pods:
      cidrBlocks: ["10.244.0.0/16"]
    services:
      cidrBlocks: ["10.96.0.0/12"]
  topology:
    classRef:
      name: ` + class + `
    version: v1.36.3
    variables:
      - name: region
        value: eu-north-1
`
	}
	// publishFleet publishes files to the fleet repository name on Gitea.
	publishFleet := func(ctx context.Context, name string, files map[string]string) {
		GinkgoHelper()
		dir := GinkgoT().TempDir()
		for p, content := range files {
			Expect(os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(dir, p), []byte(content), 0o644)).To(Succeed())
		}
		_, err := f.Publish(ctx, owner, name, dir, "Fleet of "+name)
		Expect(err).NotTo(HaveOccurred())
	}
	// applyFleet has Flux apply the repository at url to the cluster (as the tenant's fleet), and
	// gives ns the bot's token Secret.
	applyFleet := func(ctx context.Context, name, url, ns, token string, prune bool) {
		GinkgoHelper()
		Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "fleet-bot", Namespace: ns},
			StringData: map[string]string{"token": token}})).To(Succeed())
		Expect(k8s.Create(ctx, &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: plane.FluxNamespace},
			Spec: sourcev1.GitRepositorySpec{URL: url, Reference: &sourcev1.GitRepositoryRef{Branch: gitea.DefaultBranch},
				Interval: metav1.Duration{Duration: 5 * time.Second}}})).To(Succeed())
		Expect(k8s.Create(ctx, &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: plane.FluxNamespace},
			Spec: kustomizev1.KustomizationSpec{
				SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: name},
				Path:      "./", Prune: prune, ServiceAccountName: "attacks-fleet",
				Interval: metav1.Duration{Duration: 30 * time.Second}, RetryInterval: &metav1.Duration{Duration: 5 * time.Second},
				Timeout: &metav1.Duration{Duration: 2 * time.Minute},
			}})).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			_ = k8s.Delete(ctx, &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: plane.FluxNamespace}})
		})
	}
	stackIn := func(ctx context.Context, g Gomega, ns, name string) *csv1.ClusterStack {
		cs := &csv1.ClusterStack{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cs)).To(Succeed())
		return cs
	}
	prs := func(ctx context.Context, g Gomega) []gitea.PullRequest {
		list, err := f.PullRequests(ctx, owner, victimFleet, "all")
		g.Expect(err).NotTo(HaveOccurred())
		return list
	}
	// botPR is the one pull request the bot opened, open, from branch.
	botPR := func(ctx context.Context, g Gomega) gitea.PullRequest {
		var mine []gitea.PullRequest
		for _, p := range prs(ctx, g) {
			if p.Author == f.BotUser() && p.State == "open" {
				mine = append(mine, p)
			}
		}
		g.Expect(mine).To(HaveLen(1), "exactly one open pull request of the bot")
		g.Expect(mine[0].Head).To(Equal(branch))
		return mine[0]
	}
	available := func(cs *csv1.ClusterStack) []string {
		var out []string
		for _, u := range cs.Status.AvailableUpdates {
			out = append(out, u.Release)
		}
		return out
	}

	BeforeAll(func(ctx SpecContext) {
		f = pl.Forge()
		Expect(f).NotTo(BeNil(), "the plane runs Gitea (plane.Options.WithForge)")
		owner = f.Owner()
		for _, ns := range []string{victimNS, httpNS, tarpitNS} {
			createNamespace(ctx, ns)
		}
		_, err := pl.Git().CreateRepo(stacksRepo)
		Expect(err).NotTo(HaveOccurred())
		publishStack(ctx, "v1")

		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "attacks-fleet", Namespace: plane.FluxNamespace}}
		Expect(k8s.Create(ctx, sa)).To(Succeed())
		Expect(k8s.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "attacks-fleet"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.Name, Namespace: sa.Namespace}}})).To(Succeed())

		By("the victim's fleet: a stack on v1 and one Cluster, on Gitea, the bot may propose")
		publishFleet(ctx, victimFleet, map[string]string{
			"stack.yaml":       stackYAML(victimNS, "aws-base-1-36", "base", "v1"),
			"clusters/c1.yaml": clusterYAML(tagPrefix + "v1"),
		})
		Expect(f.ProtectBranch(ctx, owner, victimFleet, gitea.DefaultBranch, []string{f.AdminUser()})).To(Succeed())
		Expect(f.AddCollaborator(ctx, owner, victimFleet, f.BotUser(), "write")).To(Succeed())
		applyFleet(ctx, victimFleet, f.RepoURL(owner, victimFleet), victimNS, f.BotToken(), false)
		Eventually(ctx, func(g Gomega) {
			cs := stackIn(ctx, g, victimNS, "aws-base-1-36")
			g.Expect(cs).To(framework.HaveCondition(csv1.UpdatesProposedCondition, metav1.ConditionTrue))
			g.Expect(cs.Status.Rollout).NotTo(BeNil())
			g.Expect(cs.Status.Rollout.Target).To(Equal(tagPrefix + "v1"))
		}).WithTimeout(4*time.Minute).Should(Succeed(), "the victim's stack reads its forge and its rollout: nothing newer than v1")
	}, NodeTimeout(8*time.Minute))

	It("never takes a fork's look-alike pull request for its own, nor as a declined release", func(ctx SpecContext) {
		By("a second Gitea user forks the fleet repository and opens a pull request from the stack's branch name, with the operator's marker and a ConfigMap of their own")
		m, err := f.CreateUser(ctx, mallory)
		Expect(err).NotTo(HaveOccurred())
		Expect(m.Fork(ctx, owner, victimFleet)).To(Succeed())
		_, err = m.ChangeFiles(ctx, victimFleet, gitea.DefaultBranch, branch, "Roll out v2", map[string]string{
			"clusters/c1.yaml":   clusterYAML(tagPrefix + "v2"),
			"clusters/mine.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: mallory\n  namespace: " + victimNS + "\ndata:\n  owned: \"yes\"\n",
		})
		Expect(err).NotTo(HaveOccurred())
		title := victimNS + "/aws-base-1-36: roll out " + tagPrefix + "v2 to wave remaining (1 Cluster)"
		body := "Routine rollout.\n\n<!-- clusterstack-operator target=" + tagPrefix + "v2 wave=remaining clusters=c1 -->\n"
		lookalike, err := m.OpenPullRequest(ctx, owner, victimFleet, branch, gitea.DefaultBranch, title, body)
		Expect(err).NotTo(HaveOccurred())
		GinkgoWriter.Printf("look-alike pull request #%d %s from %s:%s\n", lookalike.Number, lookalike.HTMLURL, mallory, branch)

		By("the wave comes due: the operator opens its own pull request and names the look-alike as ignored")
		publishStack(ctx, "v2")
		var own gitea.PullRequest
		Eventually(ctx, func(g Gomega) {
			own = botPR(ctx, g)
			g.Expect(own.Number).NotTo(Equal(lookalike.Number))
			cs := stackIn(ctx, g, victimNS, "aws-base-1-36")
			g.Expect(cs.Status.Rollout).NotTo(BeNil())
			g.Expect(cs.Status.Rollout.OpenPullRequest).To(Equal(own.HTMLURL))
			g.Expect(framework.Condition(cs, csv1.UpdatesProposedCondition).Reason).To(Equal(csv1.ReasonProposed))
		}).WithTimeout(4 * time.Minute).Should(Succeed())
		var ignored string
		Eventually(ctx, func(g Gomega) {
			ignored = eventMessage(ctx, g, victimNS, "LookalikePullRequestIgnored")
			g.Expect(ignored).To(ContainSubstring(fmt.Sprintf("#%d", lookalike.Number)))
			g.Expect(ignored).To(ContainSubstring("its branch is in " + mallory + "/" + victimFleet))
		}).Should(Succeed())
		GinkgoWriter.Printf("operator's pull request #%d %s; Event: %s\n", own.Number, own.HTMLURL, ignored)
		diff, err := f.PullRequestDiff(ctx, owner, victimFleet, own.Number)
		Expect(err).NotTo(HaveOccurred())
		Expect(diff).NotTo(ContainSubstring("mallory"), "the operator's branch holds its own change only")
		Expect(changedLines(diff)).To(ConsistOf("-      name: "+tagPrefix+"v1", "+      name: "+tagPrefix+"v2", "-    - v1", "+    - v2"))

		By("the look-alike is never edited")
		Consistently(ctx, func(g Gomega) {
			p, err := f.PullRequest(ctx, owner, victimFleet, lookalike.Number)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Title).To(Equal(lookalike.Title))
			g.Expect(p.Body).To(Equal(lookalike.Body))
			g.Expect(p.Body).To(ContainSubstring("Routine rollout."))
		}).WithTimeout(2 * interval).Should(Succeed())

		By("its author closes it: the release is not declined, the operator's pull request stays the proposal")
		Expect(m.ClosePullRequest(ctx, owner, victimFleet, lookalike.Number)).To(Succeed())
		Consistently(ctx, func(g Gomega) {
			cs := stackIn(ctx, g, victimNS, "aws-base-1-36")
			g.Expect(available(cs)).To(ContainElement(tagPrefix+"v2"), "v2 stays available")
			for _, u := range cs.Status.ConditionalUpdates {
				for _, r := range u.Risks {
					g.Expect(r.Type).NotTo(Equal(csv1.RiskDeclined), "%s declined: %s", u.Release, r.Message)
				}
			}
			g.Expect(cs.Status.Rollout.OpenPullRequest).To(Equal(own.HTMLURL))
			g.Expect(framework.Condition(cs, csv1.UpdatesProposedCondition).Reason).To(Equal(csv1.ReasonProposed))
			g.Expect(botPR(ctx, g).Number).To(Equal(own.Number))
		}).WithTimeout(3 * interval).Should(Succeed())
	}, NodeTimeout(10*time.Minute))

	It("never sends the token over plain http", func(ctx SpecContext) {
		By("the tenant's fleet repository is served over plain http on a non-loopback address")
		addr := nonLoopbackAddr()
		giteaURL, err := url.Parse(f.URL())
		Expect(err).NotTo(HaveOccurred())
		p := startForgeProxy(addr, giteaURL, nil)
		DeferCleanup(p.Close)
		publishFleet(ctx, httpFleet, map[string]string{"stack.yaml": stackYAML(httpNS, "aws-base-1-36", "base", "v1")})
		fleetURL := p.URL() + "/" + owner + "/" + httpFleet + ".git"
		applyFleet(ctx, "attack-http-fleet", fleetURL, httpNS, f.BotToken(), true)

		By("the operator refuses, naming the GitRepository, the URL and the token's Secret")
		Eventually(ctx, func(g Gomega) {
			cs := stackIn(ctx, g, httpNS, "aws-base-1-36")
			g.Expect(cs).To(framework.HaveCondition(csv1.UpdatesProposedCondition, metav1.ConditionFalse,
				"GitRepository "+plane.FluxNamespace+"/attack-http-fleet",
				"refusing to send credentials (from Secret "+httpNS+"/fleet-bot) over plain http to "+fleetURL+": use an https URL"))
			g.Expect(framework.Condition(cs, csv1.UpdatesProposedCondition).Reason).To(Equal(csv1.ReasonInvalidProposalConfig))
		}).WithTimeout(3 * time.Minute).Should(Succeed())
		GinkgoWriter.Printf("UpdatesProposed: %s\n", framework.Condition(stackIn(ctx, Default, httpNS, "aws-base-1-36"), csv1.UpdatesProposedCondition).Message)
		Consistently(ctx, func(g Gomega) {
			g.Expect(p.Anonymous()).To(BeNumerically(">", 0), "Flux reads the repository through the proxy")
			g.Expect(p.WithCredentials()).To(BeEmpty(), "no request carried credentials")
		}).WithTimeout(2 * interval).Should(Succeed())
	}, NodeTimeout(6*time.Minute))

	It("keeps other tenants' updates and proposals fresh while a tarpit forge holds its tenant's", func(ctx SpecContext) {
		By(fmt.Sprintf("%d ClusterStacks of one tenant whose fleet repository's forge accepts the token's requests and then only trickles", tarpitStacks))
		giteaURL, err := url.Parse(f.URL())
		Expect(err).NotTo(HaveOccurred())
		tp := startForgeProxy("127.0.0.1:0", giteaURL, func(r *http.Request) bool { return r.Header.Get("Authorization") != "" })
		DeferCleanup(tp.Close)
		files := map[string]string{}
		for i := range tarpitStacks {
			name := fmt.Sprintf("tarpit-%02d", i)
			files[name+".yaml"] = stackYAML(tarpitNS, name, fmt.Sprintf("tp%02d", i), "v1")
		}
		publishFleet(ctx, tarpitFleet, files)
		tarpitURL := tp.URL() + "/" + owner + "/" + tarpitFleet + ".git"
		applyFleet(ctx, "attack-tarpit-fleet", tarpitURL, tarpitNS, "tarpit-token-"+mallory, true)
		Eventually(ctx, func(g Gomega) { g.Expect(tp.Held()).To(BeNumerically(">", 0)) }).WithTimeout(3*time.Minute).Should(Succeed(),
			"the operator reaches the tarpit")

		By("meanwhile another tenant publishes a release: its availableUpdates list it within two intervals, its pull request follows")
		publishStack(ctx, "v3")
		published := time.Now()
		Eventually(ctx, func(g Gomega) {
			g.Expect(available(stackIn(ctx, g, victimNS, "aws-base-1-36"))).To(ContainElement(tagPrefix + "v3"))
		}).WithTimeout(2*interval+5*time.Second).WithPolling(time.Second).Should(Succeed(), "the victim's availableUpdates are fresh")
		GinkgoWriter.Printf("v3 in the victim's availableUpdates %s after it was tagged\n", time.Since(published).Round(time.Second))
		Eventually(ctx, func(g Gomega) {
			g.Expect(botPR(ctx, g).Title).To(ContainSubstring(tagPrefix + "v3"))
		}).WithTimeout(4*interval).WithPolling(time.Second).Should(Succeed(), "the victim's pull request moves to v3")
		GinkgoWriter.Printf("the victim's pull request proposes v3 %s after it was tagged\n", time.Since(published).Round(time.Second))

		By("every tarpit stack says what is wrong: the repository and the deadline")
		Eventually(ctx, func(g Gomega) {
			for i := range tarpitStacks {
				cs := stackIn(ctx, g, tarpitNS, fmt.Sprintf("tarpit-%02d", i))
				g.Expect(cs).To(framework.HaveCondition(csv1.UpdatesProposedCondition, metav1.ConditionFalse,
					"GitRepository "+plane.FluxNamespace+"/attack-tarpit-fleet ("+tarpitURL+")",
					"no answer within "+forgeAPITimeout.String()+" (the forge API deadline, --forge-api-timeout)"), cs.Name)
				g.Expect(framework.Condition(cs, csv1.UpdatesProposedCondition).Reason).To(Equal(csv1.ReasonForgeError), cs.Name)
			}
		}).WithTimeout(4 * time.Minute).Should(Succeed())
		GinkgoWriter.Printf("tarpit-00: %s; requests held at most %d at once\n",
			framework.Condition(stackIn(ctx, Default, tarpitNS, "tarpit-00"), csv1.UpdatesProposedCondition).Message, tp.MaxHeld())
		// --forge-host-concurrency (2) stacks talk to the tarpit at once; one more request may be
		// seen for the moment between a stack giving up and the tarpit noticing it.
		Expect(tp.MaxHeld()).To(BeNumerically("<=", 3), "not every worker is held by the tarpit")
	}, NodeTimeout(10*time.Minute))
})

// eventMessage returns the message of the newest Event with reason in ns.
func eventMessage(ctx context.Context, g Gomega, ns, reason string) string {
	var list corev1.EventList
	g.Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	var newest *corev1.Event
	for i := range list.Items {
		e := &list.Items[i]
		if e.Reason == reason && (newest == nil || e.LastTimestamp.After(newest.LastTimestamp.Time)) {
			newest = e
		}
	}
	g.Expect(newest).NotTo(BeNil(), "an Event %s in %s", reason, ns)
	return newest.Message
}

// nonLoopbackAddr is "<ip>:0" for a non-loopback IPv4 address of this machine.
func nonLoopbackAddr() string {
	GinkgoHelper()
	addrs, err := net.InterfaceAddrs()
	Expect(err).NotTo(HaveOccurred())
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return net.JoinHostPort(n.IP.String(), "0")
		}
	}
	Fail("this machine has no non-loopback IPv4 address to serve plain http on")
	return ""
}

// forgeProxy forwards requests to the forge, except those hold selects: it answers them 200
// and then trickles a byte a second for as long as the client waits (a tarpit). It counts the
// requests, never their credentials.
type forgeProxy struct {
	srv     *http.Server
	ln      net.Listener
	mu      sync.Mutex
	anon    int
	creds   []string
	held    int
	maxHeld int
}

func startForgeProxy(addr string, target *url.URL, hold func(*http.Request) bool) *forgeProxy {
	GinkgoHelper()
	ln, err := net.Listen("tcp", addr)
	Expect(err).NotTo(HaveOccurred())
	p := &forgeProxy{ln: ln}
	rp := httputil.NewSingleHostReverseProxy(target)
	p.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		if r.Header.Get("Authorization") != "" {
			p.creds = append(p.creds, r.Method+" "+r.URL.Path)
		} else {
			p.anon++
		}
		p.mu.Unlock()
		if hold == nil || !hold(r) {
			rp.ServeHTTP(w, r)
			return
		}
		p.mu.Lock()
		p.held++
		p.maxHeld = max(p.maxHeld, p.held)
		p.mu.Unlock()
		defer func() {
			p.mu.Lock()
			p.held--
			p.mu.Unlock()
		}()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		for _, b := range []byte(`{"version":"1.26.1"` + strings.Repeat(" ", 1<<10)) {
			if _, err := w.Write([]byte{b}); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(time.Second):
			}
		}
	})}
	go func() { _ = p.srv.Serve(ln) }()
	return p
}

// URL is the proxy's base URL.
func (p *forgeProxy) URL() string { return "http://" + p.ln.Addr().String() }

// Anonymous counts the requests without credentials.
func (p *forgeProxy) Anonymous() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.anon
}

// WithCredentials lists the requests that carried credentials (method and path).
func (p *forgeProxy) WithCredentials() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.creds...)
}

// Held counts the requests with credentials since the start (the held ones, with a hold).
func (p *forgeProxy) Held() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.creds)
}

// MaxHeld is the most requests held at once.
func (p *forgeProxy) MaxHeld() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.maxHeld
}

// Close stops the proxy and lets go of every held request.
func (p *forgeProxy) Close() { _ = p.srv.Close() }
