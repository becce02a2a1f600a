package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/gitea"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/plane"
	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
	"github.com/clusterstack-io/clusterstack-operator/test/framework"
)

// The GitOps loop (docs/gitops.md): the fleet lives in a repository on a real Gitea that real Flux
// applies; the operator proposes upgrades as pull requests, wave by wave; merging is done
// through the forge's API as a person would.
var _ = Describe("The GitOps loop", Ordered, SpecPriority(10), func() {
	const (
		ns         = "gitops"
		fleetRepo  = "fleet-gitops"
		stacksRepo = "stacks-gitops"
		soak       = 40 * time.Second
		// interval is the stack's spec.interval (the least the API allows): the operator
		// reconciles its updates (lists tags, looks at the forge, pushes and proposes) at least
		// this often. A Consistently that watches for a wrong push or proposal lasts two
		// intervals.
		interval = 10 * time.Second
		// minReleaseAge is the stack's spec.updates.minReleaseAge: a release is proposed only once
		// it was first seen at least this long ago.
		minReleaseAge = 15 * time.Second
		branchBase    = "clusterstack/" + ns + "/aws-base-1-36/"
	)
	var (
		f     *gitea.Forge
		owner string
		fleet string // work tree of the fleet repository, as a person keeps it
	)
	stackYAML := func() string {
		return `# The stack every cluster of the gitops namespace is built from.
# Versions are proposed by the operator as pull requests; merge them to roll out.
apiVersion: clusterstack.io/v1alpha1
kind: ClusterStack
metadata:
  name: aws-base-1-36
  namespace: gitops
spec:
  provider: aws
  name: base
  kubernetesVersion: "1.36"
  source:
    url: ` + pl.Git().RepoURL(stacksRepo) + `
    path: ` + stackPath + `
  versions:
    - v1   # the first release
  interval: ` + interval.String() + `
  updates:
    minReleaseAge: ` + minReleaseAge.String() + `
    proposals:
      provider: gitea
      secretRef:
        name: fleet-bot
    waves:
      - name: canary
        selector:
          matchLabels:
            rollout: canary
        soakTime: 40s
`
	}
	clusterYAML := func(name, wave string) string {
		return `apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata:
  name: ` + name + `
  namespace: gitops
  labels:
    rollout: ` + wave + `  # which wave upgrades it
spec:
  clusterNetwork:
    pods:
      cidrBlocks: ["10.244.0.0/16"]
    services:
      cidrBlocks: ["10.96.0.0/12"]
  topology:
    classRef:
      name: aws-base-1-36-v1
    version: v1.36.3
    variables:
      - name: region
        value: eu-north-1
`
	}
	publishStack := func(ctx context.Context, v string, mutate ...func(string)) {
		GinkgoHelper()
		publishTo(ctx, stacksRepo, tagPrefix+v, func(dir string) {
			sd := filepath.Join(dir, stackPath)
			Expect(stack.SetChartVersion(sd, v)).To(Succeed())
			for _, m := range mutate {
				m(sd)
			}
		})
	}
	prs := func(ctx context.Context, g Gomega) []gitea.PullRequest {
		list, err := f.PullRequests(ctx, owner, fleetRepo, "all")
		g.Expect(err).NotTo(HaveOccurred())
		return list
	}
	openPR := func(ctx context.Context, g Gomega, wave string) gitea.PullRequest {
		var open []gitea.PullRequest
		for _, p := range prs(ctx, g) {
			if p.State == "open" {
				open = append(open, p)
			}
		}
		g.Expect(open).To(HaveLen(1), "exactly one open pull request")
		g.Expect(open[0].Head).To(Equal(branchBase + wave))
		return open[0]
	}
	stackStatus := func(ctx context.Context, g Gomega) *csv1.ClusterStack { return getStack(ctx, g, ns) }
	wavePhase := func(cs *csv1.ClusterStack, wave string) csv1.WavePhase {
		if cs.Status.Rollout == nil {
			return ""
		}
		for _, w := range cs.Status.Rollout.Waves {
			if w.Name == wave {
				return w.Phase
			}
		}
		return ""
	}
	classOf := func(ctx context.Context, g Gomega, name string) string {
		c := &clusterv1.Cluster{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, c)).To(Succeed())
		return c.Spec.Topology.ClassRef.Name
	}

	BeforeAll(func(ctx SpecContext) {
		f = pl.Forge()
		Expect(f).NotTo(BeNil(), "the plane runs Gitea (plane.Options.WithForge)")
		owner = f.Owner()
		createNamespace(ctx, ns)
		_, err := pl.Git().CreateRepo(stacksRepo)
		Expect(err).NotTo(HaveOccurred())
		publishStack(ctx, "v1")

		// The fleet repository: a person's commit, protected main, the bot may propose.
		fleet = GinkgoT().TempDir()
		Expect(os.MkdirAll(filepath.Join(fleet, "clusters"), 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(fleet, "stack.yaml"), []byte(stackYAML()), 0o644)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(fleet, "clusters", "canary.yaml"), []byte(clusterYAML("canary-1", "canary")), 0o644)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(fleet, "clusters", "rest.yaml"), []byte(clusterYAML("rest-1", "rest")+"---\n"+clusterYAML("rest-2", "rest")), 0o644)).To(Succeed())
		_, err = f.Publish(ctx, owner, fleetRepo, fleet, "Fleet: the gitops namespace on v1")
		Expect(err).NotTo(HaveOccurred())
		Expect(f.ProtectBranch(ctx, owner, fleetRepo, gitea.DefaultBranch, []string{f.AdminUser()})).To(Succeed())
		Expect(f.AddCollaborator(ctx, owner, fleetRepo, f.BotUser(), "write")).To(Succeed())

		// The bot's write credential, apart from Flux's (anonymous) read access.
		Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "fleet-bot", Namespace: ns},
			StringData: map[string]string{"token": f.BotToken()}})).To(Succeed())

		// Flux applies the fleet repository, with a health check on the ClusterStack.
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "gitops-fleet", Namespace: plane.FluxNamespace}}
		Expect(k8s.Create(ctx, sa)).To(Succeed())
		Expect(k8s.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "gitops-fleet"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.Name, Namespace: sa.Namespace}}})).To(Succeed())
		Expect(k8s.Create(ctx, &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: "gitops-fleet", Namespace: plane.FluxNamespace},
			Spec: sourcev1.GitRepositorySpec{URL: f.RepoURL(owner, fleetRepo), Reference: &sourcev1.GitRepositoryRef{Branch: gitea.DefaultBranch},
				Interval: metav1.Duration{Duration: 5 * time.Second}}})).To(Succeed())
		Expect(k8s.Create(ctx, &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: "gitops-fleet", Namespace: plane.FluxNamespace},
			Spec: kustomizev1.KustomizationSpec{
				SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "gitops-fleet"},
				Path:      "./", Prune: false, ServiceAccountName: sa.Name,
				Interval: metav1.Duration{Duration: 30 * time.Second}, RetryInterval: &metav1.Duration{Duration: 5 * time.Second},
				Timeout:      &metav1.Duration{Duration: 4 * time.Minute},
				HealthChecks: []meta.NamespacedObjectKindReference{{APIVersion: csv1.GroupVersion.String(), Kind: "ClusterStack", Name: "aws-base-1-36", Namespace: ns}},
			}})).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			awaitGone(ctx, &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: "gitops-fleet", Namespace: plane.FluxNamespace}}, time.Minute)
		})

		By("Flux applies the fleet; every Cluster is Available on v1")
		Eventually(ctx, func(g Gomega) {
			ks := &kustomizev1.Kustomization{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: plane.FluxNamespace, Name: "gitops-fleet"}, ks)).To(Succeed())
			g.Expect(apimeta.IsStatusConditionTrue(ks.Status.Conditions, meta.ReadyCondition)).To(BeTrue(), "Kustomization gitops-fleet Ready: %v", ks.Status.Conditions)
			for _, c := range []string{"canary-1", "rest-1", "rest-2"} {
				a := getAddon(ctx, g, ns, c)
				g.Expect(a.Status.LastAppliedRelease).To(Equal(tagPrefix + "v1"))
				g.Expect(framework.Condition(a, csv1.AvailableCondition)).To(HaveField("Status", metav1.ConditionTrue))
			}
		}).WithTimeout(6 * time.Minute).Should(Succeed())
		Consistently(ctx, func(g Gomega) { g.Expect(prs(ctx, g)).To(BeEmpty()) }).WithTimeout(2*interval).Should(Succeed(), "nothing newer than v1: no pull request")
	}, NodeTimeout(10*time.Minute))

	It("proposes, rolls out wave by wave, and respects what people decide", func(ctx SpecContext) {
		phases := sampleWavePhases(ctx, ns)
		defer func() { printWavePhases(phases()) }()

		By("the bot cannot push to the default branch: the forge refuses it")
		err := f.CommitFile(ctx, owner, fleetRepo, gitea.DefaultBranch, "stack.yaml", "hijack: true\n", "bot pushes to main", true)
		Expect(err).To(HaveOccurred())
		GinkgoWriter.Printf("bot's commit to main: %v\n", err)

		By("a push the forge refuses is reported, and retried once per --push-retry-interval, not at every reconcile")
		Expect(f.ProtectBranch(ctx, owner, fleetRepo, "clusterstack/**", []string{f.AdminUser()})).To(Succeed())
		publishStack(ctx, "v2", withCNIClusterRole)
		Eventually(ctx, func(g Gomega) {
			cs := stackStatus(ctx, g)
			g.Expect(cs).To(framework.HaveCondition(csv1.UpdatesProposedCondition, metav1.ConditionFalse, "push of branch "+branchBase+"canary"))
			g.Expect(framework.Condition(cs, csv1.UpdatesProposedCondition).Reason).To(Equal(csv1.ReasonPushRefused))
		}).WithTimeout(3 * time.Minute).Should(Succeed())
		refusedAt := time.Now()
		// spec.updates.minReleaseAge: the first push of v2 came only once v2 was that old (both
		// times are whole seconds: discoveredAt is truncated, as is the Event's).
		available := stackStatus(ctx, Default).Status.AvailableUpdates
		v2 := slices.IndexFunc(available, func(u csv1.StackUpdate) bool { return u.Release == tagPrefix+"v2" })
		Expect(v2).To(BeNumerically(">=", 0), "v2 is an available update once it is pushed: %+v", available)
		discovered := available[v2].DiscoveredAt
		Expect(discovered).NotTo(BeNil())
		var refusals corev1.EventList
		Expect(k8s.List(ctx, &refusals, client.InNamespace(ns))).To(Succeed())
		firstPush := time.Time{}
		for _, e := range refusals.Items {
			if e.Reason == csv1.ReasonPushRefused && (firstPush.IsZero() || e.FirstTimestamp.Time.Before(firstPush)) {
				firstPush = e.FirstTimestamp.Time
			}
		}
		Expect(firstPush.Sub(discovered.Time)).To(BeNumerically(">=", minReleaseAge),
			"v2 (first seen %s) is not pushed before it is minReleaseAge (%s) old: first push %s", discovered.Format(time.TimeOnly), minReleaseAge, firstPush.Format(time.TimeOnly))
		// The stack is reconciled every interval, and more often on events: a push retried at
		// each reconcile would be refused again within the window; the operator retries once per
		// pushRetry (longer than the window), counted from the first refusal.
		Consistently(ctx, func(g Gomega) {
			var list corev1.EventList
			g.Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			var first time.Time
			for _, e := range list.Items {
				if e.Reason == csv1.ReasonPushRefused && (first.IsZero() || e.FirstTimestamp.Before(&metav1.Time{Time: first})) {
					first = e.FirstTimestamp.Time
				}
			}
			g.Expect(first).NotTo(BeZero(), "the refusal's Event")
			g.Expect(eventCount(ctx, g, ns, csv1.ReasonPushRefused)).To(BeNumerically("<=", 1+int32(time.Since(first)/pushRetry)),
				"no retry storm: one refused push per %s since the first at %s", pushRetry, first.Format(time.TimeOnly))
		}).WithTimeout(2 * interval).Should(Succeed())
		Expect(prs(ctx, Default)).To(BeEmpty())
		Expect(f.UnprotectBranch(ctx, owner, fleetRepo, "clusterstack/**")).To(Succeed())

		By("once the forge accepts the push: exactly one pull request, for the canary wave")
		var canaryPR gitea.PullRequest
		Eventually(ctx, func(g Gomega) { canaryPR = openPR(ctx, g, "canary") }).WithTimeout(2 * time.Minute).Should(Succeed())
		GinkgoWriter.Printf("push accepted %s after the refusal\n", time.Since(refusedAt).Round(time.Second))
		Expect(canaryPR.Title).To(ContainSubstring("roll out aws-base-1-36-v2 to wave canary"))
		diff, err := f.PullRequestDiff(ctx, owner, fleetRepo, canaryPR.Number)
		Expect(err).NotTo(HaveOccurred())
		GinkgoWriter.Printf("pull request #%d %q:\n%s\n", canaryPR.Number, canaryPR.Title, diff)
		Expect(changedLines(diff)).To(ConsistOf(
			"-    - v1   # the first release", "+    - v2   # the first release",
			"-      name: aws-base-1-36-v1", "+      name: aws-base-1-36-v2",
		), "only the stack's version and the canary Cluster's class change; comments kept")
		By("the description shows the rendered diff: the chart bumped, a value of the canary Cluster, the cluster-scoped object first")
		GinkgoWriter.Printf("description of #%d:\n%s\n", canaryPR.Number, canaryPR.Body)
		Expect(canaryPR.Body).To(ContainSubstring("| `cni` | Helm | `1.0.0 → 1.1.0` | Changed |"), "the changed chart")
		Expect(canaryPR.Body).To(ContainSubstring("#### Cluster `gitops/canary-1`: "), "the wave's Cluster, and only it")
		Expect(canaryPR.Body).NotTo(ContainSubstring("gitops/rest-1"))
		Expect(canaryPR.Body).To(MatchRegexp("(?s)<summary>gitops/canary-1: values of cni \\(Helm values\\)</summary>.*\n\\+mtu: 9001\n"), "the changed value of the canary Cluster")
		Expect(canaryPR.Body).To(MatchRegexp("(?s)\\*\\*Cluster-scoped objects and CRDs\\*\\*\n\n- Added ClusterRole `cni-nodes` \\(`cni`\\).*\\*\\*Namespaced objects\\*\\*"),
			"the cluster-scoped object, before the namespaced ones")
		Expect(canaryPR.Body).To(MatchRegexp(`<!-- clusterstack-operator [^\n]* -->\s*$`), "the operator's marker last, after the diff")
		Eventually(ctx, func(g Gomega) {
			cs := stackStatus(ctx, g)
			g.Expect(cs.Status.Rollout).NotTo(BeNil())
			g.Expect(cs.Status.Rollout.OpenPullRequest).To(Equal(canaryPR.HTMLURL))
			g.Expect(wavePhase(cs, "canary")).To(Equal(csv1.WaveProposed))
			g.Expect(wavePhase(cs, "remaining")).To(Equal(csv1.WavePending))
		}).Should(Succeed())
		out, err := kubectl(ctx, "get", "clusterstacks", "-n", ns)
		Expect(err).NotTo(HaveOccurred())
		GinkgoWriter.Printf("kubectl get clusterstacks -n %s\n%s\n", ns, out)
		Expect(out).To(ContainSubstring(canaryPR.HTMLURL))

		By("idempotent: nothing is pushed again while nothing changes")
		head := canaryPR.HeadSHA
		requestReconcile(ctx, ns, "aws-base-1-36", &csv1.ClusterStack{})
		Consistently(ctx, func(g Gomega) {
			p := openPR(ctx, g, "canary")
			g.Expect(p.Number).To(Equal(canaryPR.Number))
			g.Expect(p.HeadSHA).To(Equal(head))
		}).WithTimeout(2 * interval).Should(Succeed())

		By("a pull request closed without merging skips the version: it is not reopened")
		Expect(f.ClosePullRequest(ctx, owner, fleetRepo, canaryPR.Number)).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			cs := stackStatus(ctx, g)
			g.Expect(cs.Status.AvailableUpdates).To(BeEmpty())
			g.Expect(cs.Status.ConditionalUpdates).To(ContainElement(And(
				HaveField("StackUpdate.Release", tagPrefix+"v2"),
				HaveField("Risks", ContainElement(HaveField("Type", csv1.RiskDeclined))))))
		}).Should(Succeed())
		Consistently(ctx, func(g Gomega) { g.Expect(prs(ctx, g)).To(HaveLen(1)) }).WithTimeout(2*interval).Should(Succeed(), "no new pull request for v2")

		By("a new tag is proposed; a newer one supersedes the open pull request on the same branch")
		publishStack(ctx, "v3", withLargeConfigMap)
		Eventually(ctx, func(g Gomega) {
			canaryPR = openPR(ctx, g, "canary")
			g.Expect(canaryPR.Title).To(ContainSubstring(tagPrefix + "v3"))
		}).WithTimeout(5 * time.Minute).Should(Succeed()) // a bound: 2m21s were seen with the fault suite's fleet of 20 up
		By("a diff too large for the description: its start there, the whole of it a file of the branch")
		const diffFile = ".clusterstack/diffs/" + ns + "/aws-base-1-36/canary.md"
		Expect(len(canaryPR.Body)).To(BeNumerically("<", 65536), "within GitHub's cap of a description")
		Expect(canaryPR.Body).To(ContainSubstring("the file `"+diffFile+"` of this pull request's branch"), "where the whole diff is")
		Expect(canaryPR.Body).To(ContainSubstring("Added ConfigMap `kube-system/large`"), "the summary is never cut")
		Expect(canaryPR.Body).NotTo(ContainSubstring(largeConfigMapEnd), "the end of the large ConfigMap's diff is cut")
		diff, err = f.PullRequestDiff(ctx, owner, fleetRepo, canaryPR.Number)
		Expect(err).NotTo(HaveOccurred())
		Expect(diff).To(ContainSubstring("+++ b/"+diffFile), "the whole diff is in the branch")
		Expect(diff).To(ContainSubstring(largeConfigMapEnd), "all of it")
		publishStack(ctx, "v4")
		tagged := time.Now()
		Eventually(ctx, func(g Gomega) {
			canaryPR = openPR(ctx, g, "canary")
			g.Expect(canaryPR.Title).To(ContainSubstring(tagPrefix + "v4"))
			// Gitea edits a pull request's title and its description one after the other: a read
			// in between has the new title and the old description.
			g.Expect(canaryPR.Body).To(ContainSubstring("proposes release `" + tagPrefix + "v4`"))
		}).WithTimeout(5 * time.Minute).Should(Succeed())
		Expect(prs(ctx, Default)).To(HaveLen(2), "the closed v2 pull request and one open pull request, updated from v3 to v4")
		diff, err = f.PullRequestDiff(ctx, owner, fleetRepo, canaryPR.Number)
		Expect(err).NotTo(HaveOccurred())
		GinkgoWriter.Printf("pull request #%d %q:\n%s\n", canaryPR.Number, canaryPR.Title, diff)
		Expect(changedLines(diff)).To(ConsistOf(
			"-    - v1   # the first release", "+    - v4   # the first release",
			"-      name: aws-base-1-36-v1", "+      name: aws-base-1-36-v4",
		), "v4's diff fits its description: the file of v3's is gone from the branch")
		Expect(canaryPR.Body).NotTo(ContainSubstring(diffFile))

		By("merged through the forge as a person would: Flux applies it, only the canary moves")
		Expect(f.MergePullRequest(ctx, owner, fleetRepo, canaryPR.Number)).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			g.Expect(classOf(ctx, g, "canary-1")).To(Equal(tagPrefix + "v4"))
			g.Expect(getAddon(ctx, g, ns, "canary-1").Status.LastAppliedRelease).To(Equal(tagPrefix + "v4"))
			g.Expect(wavePhase(stackStatus(ctx, g), "canary")).To(Equal(csv1.WaveSoaking))
		}).WithTimeout(4 * time.Minute).Should(Succeed())
		for _, c := range []string{"rest-1", "rest-2"} {
			Expect(classOf(ctx, Default, c)).To(Equal(tagPrefix+"v1"), "%s is not in the canary wave", c)
			Expect(getAddon(ctx, Default, ns, c).Status.AvailableUpgrades).To(ContainElement(tagPrefix+"v4"), "%s may move to v4", c)
		}
		Expect(prs(ctx, Default)).To(HaveLen(2), "no pull request for the next wave while the canary soaks")

		By("a restart during the soak neither resets nor skips it")
		since := stackStatus(ctx, Default).Status.Rollout.Waves[0].SoakingSince
		Expect(since).NotTo(BeNil())
		Expect(pl.RestartOperator(ctx)).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			cs := stackStatus(ctx, g)
			g.Expect(cs.Status.Rollout.Waves[0].SoakingSince).To(Equal(since))
		}).Should(Succeed())
		var remainingPR gitea.PullRequest
		Eventually(ctx, func(g Gomega) { remainingPR = openPR(ctx, g, "remaining") }).WithTimeout(3 * time.Minute).Should(Succeed())
		opened := time.Now()
		Expect(opened.Sub(since.Time)).To(BeNumerically(">=", soak-time.Second), "the next wave waits for the soak time")
		Expect(opened.Sub(since.Time)).To(BeNumerically("<", soak+90*time.Second), "the restart did not reset the soak")
		// The pull request is opened before the status that reports it is written.
		Eventually(ctx, func(g Gomega) {
			cs := stackStatus(ctx, g)
			g.Expect(wavePhase(cs, "canary")).To(Equal(csv1.WaveDone))
			g.Expect(wavePhase(cs, "remaining")).To(Equal(csv1.WaveProposed))
			g.Expect(cs.Status.Rollout.OpenPullRequest).To(Equal(remainingPR.HTMLURL))
		}).Should(Succeed())
		diff, err = f.PullRequestDiff(ctx, owner, fleetRepo, remainingPR.Number)
		Expect(err).NotTo(HaveOccurred())
		GinkgoWriter.Printf("pull request #%d %q:\n%s\n", remainingPR.Number, remainingPR.Title, diff)
		Expect(changedLines(diff)).To(ConsistOf(
			"-      name: aws-base-1-36-v1", "+      name: aws-base-1-36-v4",
			"-      name: aws-base-1-36-v1", "+      name: aws-base-1-36-v4",
		))

		By("someone else's commit on the proposal branch stops the operator from force-pushing")
		Expect(f.CommitFile(ctx, owner, fleetRepo, remainingPR.Head, "NOTES.md", "reviewed by the platform team\n", "Review note", false)).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			cs := stackStatus(ctx, g)
			g.Expect(cs).To(framework.HaveCondition(csv1.UpdatesProposedCondition, metav1.ConditionFalse, "fleet-admin"))
			g.Expect(framework.Condition(cs, csv1.UpdatesProposedCondition).Reason).To(Equal(csv1.ReasonBranchModified))
		}).Should(Succeed())
		withNote := openPR(ctx, Default, "remaining").HeadSHA
		Consistently(ctx, func(g Gomega) { g.Expect(openPR(ctx, g, "remaining").HeadSHA).To(Equal(withNote)) }).
			WithTimeout(2 * interval).Should(Succeed())

		By("the last wave is merged: every Cluster moves")
		Expect(f.MergePullRequest(ctx, owner, fleetRepo, remainingPR.Number)).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			for _, c := range []string{"canary-1", "rest-1", "rest-2"} {
				a := getAddon(ctx, g, ns, c)
				g.Expect(a.Status.LastAppliedRelease).To(Equal(tagPrefix+"v4"), c)
				g.Expect(framework.Condition(a, csv1.AvailableCondition)).To(HaveField("Status", metav1.ConditionTrue), c)
			}
		}).WithTimeout(4 * time.Minute).Should(Succeed())
		GinkgoWriter.Printf("tag v4 to the last Cluster Available: %s\n", time.Since(tagged).Round(time.Second))
		Eventually(ctx, func(g Gomega) {
			cs := stackStatus(ctx, g)
			g.Expect(wavePhase(cs, "canary")).To(Equal(csv1.WaveDone))
			g.Expect(wavePhase(cs, "remaining")).To(Equal(csv1.WaveDone))
			g.Expect(cs.Status.Rollout.OpenPullRequest).To(BeEmpty())
			g.Expect(cs).To(framework.HaveCondition(csv1.UpdatesProposedCondition, metav1.ConditionTrue))
		}).Should(Succeed())
		Expect(prs(ctx, Default)).To(HaveLen(3))
		Expect(getAddon(ctx, Default, ns, "rest-1").Status.AvailableUpgrades).To(BeEmpty(), "v4 is the newest release")
		out, _ = kubectl(ctx, "get", "clusterstacks", "-n", ns)
		GinkgoWriter.Printf("kubectl get clusterstacks -n %s\n%s\n", ns, out)
		out, _ = kubectl(ctx, "get", "kustomizations", "-n", plane.FluxNamespace)
		GinkgoWriter.Printf("kubectl get kustomizations -n %s\n%s\n", plane.FluxNamespace, out)
	}, NodeTimeout(20*time.Minute))

	It("halts the rollout when a Cluster of a wave fails, and proposes nothing further", func(ctx SpecContext) {
		By("a release whose CNI chart cannot be installed is proposed to the canary wave and merged")
		publishStack(ctx, "v5", withUninstallableChart)
		var canaryPR gitea.PullRequest
		Eventually(ctx, func(g Gomega) {
			canaryPR = openPR(ctx, g, "canary")
			g.Expect(canaryPR.Title).To(ContainSubstring(tagPrefix + "v5"))
		}).WithTimeout(3 * time.Minute).Should(Succeed())
		Expect(f.MergePullRequest(ctx, owner, fleetRepo, canaryPR.Number)).To(Succeed())

		By("the canary is Degraded: the wave is Halted, naming the cluster and the component")
		Eventually(ctx, func(g Gomega) {
			cs := stackStatus(ctx, g)
			g.Expect(wavePhase(cs, "canary")).To(Equal(csv1.WaveHalted))
			g.Expect(cs).To(framework.HaveCondition(csv1.UpdatesProposedCondition, metav1.ConditionFalse, "canary-1", "cni"))
			g.Expect(framework.Condition(cs, csv1.UpdatesProposedCondition).Reason).To(Equal(csv1.ReasonRolloutHalted))
			g.Expect(cs).To(framework.HaveCondition(csv1.DegradedCondition, metav1.ConditionTrue))
		}).WithTimeout(4 * time.Minute).Should(Succeed())
		GinkgoWriter.Printf("halted: %s\n", framework.Condition(stackStatus(ctx, Default), csv1.UpdatesProposedCondition).Message)

		By("the dashboard's stack page, in Chromium, shows the halted wave first, with its reason")
		d := startDashboard(ctx, ns)
		d.open(d.url)
		d.open("/stacks/" + ns + "/aws-base-1-36")
		Eventually(ctx, func() string { return d.textNow(`[data-wave="canary"]`) }).WithTimeout(30 * time.Second).
			Should(And(ContainSubstring("Halted"), ContainSubstring("Cluster canary-1 is Degraded on "+tagPrefix+"v5"), ContainSubstring("cni")))
		Expect(d.text("section.problems")).To(ContainSubstring("Rollout of "+tagPrefix+"v5 halted in wave canary: Cluster canary-1 is Degraded"), "the halt is among the problems on top")
		d.shot("stack-halted-wave")
		Consistently(ctx, func(g Gomega) {
			for _, p := range prs(ctx, g) {
				g.Expect(p.State).NotTo(Equal("open"), "no pull request while the rollout is halted: %s", p.Title)
			}
			g.Expect(classOf(ctx, g, "rest-1")).To(Equal(tagPrefix + "v4"))
		}).WithTimeout(2 * interval).Should(Succeed())
	}, NodeTimeout(10*time.Minute))
})

// changedLines are the removed and added lines of a unified diff (without the file headers).
// largeConfigMapEnd is the last line of the large ConfigMap's diff (withLargeConfigMap).
const largeConfigMapEnd = "+  key-1499: the end of a diff too large for the description"

// withLargeConfigMap adds to the cni chart a ConfigMap whose diff alone is larger than a pull
// request's description may hold (upgradediff.DefaultBudget, 60 KiB).
func withLargeConfigMap(sd string) {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: large\n  namespace: kube-system\ndata:\n")
	for i := range 1499 {
		fmt.Fprintf(&b, "  key-%04d: %s\n", i, strings.Repeat("x", 48))
	}
	b.WriteString(strings.TrimPrefix(largeConfigMapEnd, "+") + "\n")
	Expect(os.WriteFile(filepath.Join(sd, "cluster-addon/cni/templates/large.yaml"), []byte(b.String()), 0o644)).To(Succeed())
}

func changedLines(diff string) []string {
	var out []string
	for _, l := range strings.Split(diff, "\n") {
		if (strings.HasPrefix(l, "+") || strings.HasPrefix(l, "-")) && !strings.HasPrefix(l, "+++") && !strings.HasPrefix(l, "---") {
			out = append(out, l)
		}
	}
	return out
}

// eventCount sums the counts of the Events with reason in ns.
func eventCount(ctx context.Context, g Gomega, ns, reason string) int32 {
	var list corev1.EventList
	g.Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	var n int32
	for _, e := range list.Items {
		if e.Reason == reason {
			n += max(e.Count, 1)
		}
	}
	return n
}

type wavePhaseSample struct {
	at     time.Time
	phases string
}

// sampleWavePhases records the ClusterStack's wave phases each time they change.
func sampleWavePhases(ctx context.Context, ns string) func() []wavePhaseSample {
	var (
		mu   sync.Mutex
		last string
	)
	return sampleEvery(ctx, 500*time.Millisecond, func() (wavePhaseSample, bool) {
		cs := &csv1.ClusterStack{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "aws-base-1-36"}, cs); err != nil || cs.Status.Rollout == nil {
			return wavePhaseSample{}, false
		}
		var parts []string
		for _, w := range cs.Status.Rollout.Waves {
			parts = append(parts, fmt.Sprintf("%s=%s", w.Name, w.Phase))
		}
		s := wavePhaseSample{at: time.Now(), phases: cs.Status.Rollout.Target + " " + strings.Join(parts, " ")}
		mu.Lock()
		defer mu.Unlock()
		if s.phases == last {
			return s, false
		}
		last = s.phases
		return s, true
	})
}

func printWavePhases(samples []wavePhaseSample) {
	if len(samples) == 0 {
		return
	}
	GinkgoWriter.Printf("wave phases over time:\n")
	for _, s := range samples {
		GinkgoWriter.Printf("  +%6s  %s\n", s.at.Sub(samples[0].at).Round(time.Second), s.phases)
	}
}
