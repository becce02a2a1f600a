package e2e

import (
	"context"
	"encoding/pem"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh/knownhosts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/plane"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxstatus"
	"github.com/clusterstack-io/clusterstack-operator/internal/gitauth/gittest"
	"github.com/clusterstack-io/clusterstack-operator/internal/opgen"
	"github.com/clusterstack-io/clusterstack-operator/test/framework"
)

// Attacks on what the operator reads from Git (docs/multi-tenancy.md, the attack table): a
// reference advertisement of 31 MiB (50,000 tags of 600 characters) served over https and ssh
// to ten ClusterStacks, a ManagementOperator version's tag moved to another commit, a version
// tag with 200 characters of build metadata, and a look-alike of a chart-delivered operator's
// Deployment in a tenant namespace.
var _ = Describe("Attacks on sources", Ordered, func() {
	const (
		hostileNS = "attack-refs"
		victimNS  = "attack-refs-victim"
		tenantNS  = "attack-lookalike"
		delivery  = "attack-delivery"
		hostile   = 10 // ClusterStacks pointing at the hostile Git servers
		// rssBudget is how far above its idle RSS the operator may go during the attack.
		rssBudget = 300 << 10 // KiB
		moved     = attackMoved
		chart     = "attack-chart"
	)
	BeforeAll(func(ctx SpecContext) { grantDelivery(ctx, delivery) })

	getOp := func(g Gomega, name string) *csv1.ManagementOperator {
		mo := &csv1.ManagementOperator{}
		g.Expect(k8s.Get(bg(), client.ObjectKey{Name: name}, mo)).To(Succeed())
		return mo
	}
	newOperator := func(name string, mutate func(*csv1.ManagementOperator)) *csv1.ManagementOperator {
		mo := &csv1.ManagementOperator{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: csv1.ManagementOperatorSpec{
				Component:          csv1.OperatorComponent{Type: csv1.OtherComponent, Name: name},
				Version:            "v1.0.0",
				Source:             csv1.OperatorSource{Git: &csv1.OperatorGitSource{URL: pl.Git().RepoURL("operators/" + name)}},
				ServiceAccountName: delivery,
				Interval:           &metav1.Duration{Duration: 10 * time.Second},
				Timeout:            &metav1.Duration{Duration: 30 * time.Second},
			},
		}
		mutate(mo)
		return mo
	}

	It("a Git server advertising 31 MiB of tags to ten ClusterStacks over https and ssh: each names the limit it hit, the operator stays within idle + 300 MiB, no restart, other tenants' Clusters still admitted", func(ctx SpecContext) {
		By("another tenant with a published release, whose Clusters the webhook admits (dry run: nothing is created)")
		createNamespace(ctx, victimNS)
		Expect(k8s.Create(ctx, newClusterStack(victimNS, "v1"))).To(Succeed())
		Eventually(ctx, func() error {
			return k8s.Get(ctx, client.ObjectKey{Namespace: victimNS, Name: tagPrefix + "v1"}, &clusterv1.ClusterClass{})
		}).WithTimeout(3 * time.Minute).Should(Succeed())
		admit := func() error {
			return k8s.Create(ctx, newCluster(victimNS, "admitted", "v1", "10.201.0.0/16"), client.DryRunAll)
		}
		Expect(admit()).To(Succeed())

		By("the hostile servers: smart HTTP over TLS (a self-signed CA in the stack's Secret, ca.crt) and git-upload-pack over ssh (identity and known_hosts)")
		adv := gittest.Advertisement{Tags: 50000, NameLength: 600}
		GinkgoWriter.Printf("hostile advertisement: %d MiB\n", adv.Size()>>20)
		srv := httptest.NewTLSServer(adv.Handler())
		DeferCleanup(srv.Close)
		_, hostKey := gittest.SSHKey(GinkgoTB(), "")
		identity, clientKey := gittest.SSHKey(GinkgoTB(), "")
		addr := adv.ServeSSH(GinkgoTB(), hostKey, clientKey.PublicKey())
		createNamespace(ctx, hostileNS)
		for name, data := range map[string]map[string][]byte{
			"https-ca": {"ca.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})},
			"ssh-key":  {"identity": identity, "known_hosts": []byte(knownhosts.Line([]string{addr}, hostKey.PublicKey()) + "\n")},
		} {
			Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: hostileNS, Name: name}, Data: data})).To(Succeed())
		}

		before := operatorProcess()
		idle := rss(before.Pid)
		peak := sampleEvery(ctx, 100*time.Millisecond, func() (int, bool) { return readRSS(before.Pid) })
		urls := map[string]string{}
		for i := range hostile {
			src := csv1.StackSource{URL: srv.URL + "/hostile.git", Path: stackPath, SecretRef: &meta.LocalObjectReference{Name: "https-ca"}}
			if i%2 == 1 {
				src = csv1.StackSource{URL: "ssh://git@" + addr + "/hostile.git", Path: stackPath, SecretRef: &meta.LocalObjectReference{Name: "ssh-key"}}
			}
			name := "hostile-" + strconv.Itoa(i)
			urls[name] = strings.TrimPrefix(src.URL, "ssh://git@")
			Expect(k8s.Create(ctx, &csv1.ClusterStack{
				ObjectMeta: metav1.ObjectMeta{Namespace: hostileNS, Name: name},
				Spec: csv1.ClusterStackSpec{Provider: "aws", Name: "h" + strconv.Itoa(i), KubernetesVersion: "1.36", Source: src,
					AutoSubscribe: true, Interval: &metav1.Duration{Duration: stackInterval}},
			})).To(Succeed())
		}

		By("for four listing intervals: the operator stays within idle + 300 MiB and the victim's Clusters are admitted by the webhook")
		top := idle
		Consistently(ctx, func(g Gomega) {
			g.Expect(admit()).To(Succeed(), "a Cluster of tenant %s is admitted during the attack", victimNS)
			kib, ok := readRSS(before.Pid)
			g.Expect(ok).To(BeTrue(), "the operator process %d is gone", before.Pid)
			top = max(top, kib)
			g.Expect(top-idle).To(BeNumerically("<", rssBudget), "peak RSS %d MiB, idle %d MiB", top>>10, idle>>10)
		}, 4*stackInterval, time.Second).Should(Succeed())

		By("every hostile stack says which limit its repository exceeds")
		Eventually(ctx, func(g Gomega) {
			for name, url := range urls {
				cs := &csv1.ClusterStack{}
				g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: hostileNS, Name: name}, cs)).To(Succeed())
				c := framework.Condition(cs, csv1.ReleasesResolvedCondition)
				g.Expect(c).NotTo(BeNil(), name)
				g.Expect(c.Reason).To(Equal(csv1.ReasonTagListTooLarge), "%s: %s", name, c.Message)
				g.Expect(c.Message).To(And(ContainSubstring(url), ContainSubstring("more than 16777216 bytes of reference advertisement"),
					ContainSubstring("publish from a repository of its own")))
			}
		}).WithTimeout(3 * time.Minute).Should(Succeed())
		for _, name := range []string{"hostile-0", "hostile-1"} {
			cs := &csv1.ClusterStack{}
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: hostileNS, Name: name}, cs)).To(Succeed())
			GinkgoWriter.Printf("ReleasesResolved of %s: %s\n", name, framework.Condition(cs, csv1.ReleasesResolvedCondition).Message)
		}
		after := operatorProcess()
		Expect(after.Pid).To(Equal(before.Pid), "the operator did not restart")
		Expect(after.Restarts).To(Equal(before.Restarts), "the operator did not crash")
		for _, kib := range peak() {
			top = max(top, kib)
		}
		GinkgoWriter.Printf("operator (pid %d) RSS: idle %d MiB, peak %d MiB during the attack (%d ClusterStacks, %d MiB advertisement each; budget idle + %d MiB)\n",
			after.Pid, idle>>10, top>>10, hostile, adv.Size()>>20, rssBudget>>10)
		Expect(top-idle).To(BeNumerically("<", rssBudget), "peak RSS %d MiB, idle %d MiB", top>>10, idle>>10)
	})

	It("a ManagementOperator version's tag moved to another commit: TagMoved naming both commits, nothing of the new commit applied", func(ctx SpecContext) {
		_, err := pl.Git().CreateRepo("operators/" + moved)
		Expect(err).NotTo(HaveOccurred())
		publishOperator(ctx, "v1.0.0", false)
		movedCommit, err := pl.Git().Head(ctx, "operators/"+moved, "refs/tags/v1.0.0")
		Expect(err).NotTo(HaveOccurred())
		Expect(k8s.Create(ctx, newOperator(moved, func(mo *csv1.ManagementOperator) { mo.Spec.Kustomize = &csv1.OperatorKustomize{} }))).To(Succeed())
		repoKey := client.ObjectKey{Namespace: plane.OperatorNamespace, Name: opgen.ObjectName(moved)}
		Eventually(ctx, func(g Gomega) {
			mo := getOp(g, moved)
			g.Expect(delivered(mo)).To(Equal("v1.0.0"))
			repo := &sourcev1.GitRepository{}
			g.Expect(k8s.Get(ctx, repoKey, repo)).To(Succeed())
			g.Expect(repo.Spec.Reference.Commit).To(Equal(movedCommit), "pinned to the commit first fetched")
			g.Expect(framework.Condition(mo, csv1.TagVerifiedCondition)).To(HaveField("Status", metav1.ConditionTrue))
		}).WithTimeout(3 * time.Minute).Should(Succeed())

		By("moving tag v1.0.0 to a commit that adds a ConfigMap")
		publishOperator(ctx, "v1.0.0", true)
		newCommit, err := pl.Git().Head(ctx, "operators/"+moved, "refs/tags/v1.0.0")
		Expect(err).NotTo(HaveOccurred())
		Expect(newCommit).NotTo(Equal(movedCommit))
		Eventually(ctx, func(g Gomega) {
			mo := getOp(g, moved)
			c := framework.Condition(mo, csv1.TagVerifiedCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(csv1.ReasonTagMoved), c.Message)
			g.Expect(c.Message).To(And(ContainSubstring(movedCommit), ContainSubstring(newCommit)))
			g.Expect(framework.Condition(mo, csv1.DegradedCondition)).To(HaveField("Reason", csv1.ReasonTagMoved))
			GinkgoWriter.Printf("TagVerified: %s\n", c.Message)
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		Consistently(ctx, func(g Gomega) {
			repo := &sourcev1.GitRepository{}
			g.Expect(k8s.Get(ctx, repoKey, repo)).To(Succeed())
			g.Expect(repo.Spec.Reference.Commit).To(Equal(movedCommit))
			g.Expect(repo.Status.Artifact).NotTo(BeNil())
			g.Expect(fluxstatus.CommitOf(repo.Status.Artifact.Revision)).To(Equal("sha1:" + movedCommit))
			ks := &kustomizev1.Kustomization{}
			g.Expect(k8s.Get(ctx, repoKey, ks)).To(Succeed())
			g.Expect(fluxstatus.CommitOf(ks.Status.LastAppliedRevision)).To(Equal("sha1:" + movedCommit))
			err := k8s.Get(ctx, client.ObjectKey{Namespace: moved + "-system", Name: "moved-in"}, &corev1.ConfigMap{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the moved tag's ConfigMap is not applied: %v", err)
		}, 25*time.Second, time.Second).Should(Succeed())
	})

	It("a version tag with 200 characters of build metadata: never listed, counted, and the status keeps updating", func(ctx SpecContext) {
		long := "v1.2.3+" + strings.Repeat("b", 200)
		publishOperator(ctx, long, true)
		publishOperator(ctx, "v1.3.0", true)
		patchOperator(ctx, moved, func(mo *csv1.ManagementOperator) { mo.Spec.Channel = ">=1.0.0" })
		Eventually(ctx, func(g Gomega) {
			mo := getOp(g, moved)
			g.Expect(mo.Status.ObservedGeneration).To(Equal(mo.Generation), "the status of the new spec is written")
			g.Expect(mo.Status.AvailableUpdates).To(ContainElement("v1.3.0"),
				"the status written holds a listing with both tags (the API server refuses a write listing the long one: availableUpdates items are at most 64 characters)")
			g.Expect(mo.Status.AvailableUpdates).NotTo(ContainElement(long))
			c := framework.Condition(mo, csv1.TagVerifiedCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.ObservedGeneration).To(Equal(mo.Generation))
			g.Expect(c.Message).To(ContainSubstring(`1 tag(s) with the tag prefix "" are not versions of at most 64 characters`))
		}).Should(Succeed())
	})

	It("a look-alike of a chart-delivered operator's Deployment in a tenant namespace, never available: the upgrade completes", func(ctx SpecContext) {
		repo := "operators/" + chart
		_, err := pl.Git().CreateRepo(repo)
		Expect(err).NotTo(HaveOccurred())
		for _, v := range []string{"v1.0.0", "v1.1.0"} {
			dir := GinkgoT().TempDir()
			Expect(os.MkdirAll(filepath.Join(dir, "chart/templates"), 0o755)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(dir, "chart/Chart.yaml"), []byte("apiVersion: v2\nname: "+chart+"\nversion: "+strings.TrimPrefix(v, "v")+"\nappVersion: "+v+"\n"), 0o644)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(dir, "chart/values.yaml"), []byte("replicas: 1\n"), 0o644)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(dir, "chart/templates/deployment.yaml"), []byte(chartDeployment), 0o644)).To(Succeed())
			Expect(pl.Git().Publish(ctx, repo, dir, ".", v)).To(Succeed())
		}
		Expect(k8s.Create(ctx, newOperator(chart, func(mo *csv1.ManagementOperator) {
			mo.Spec.Chart = &csv1.OperatorChart{Path: "chart", TargetNamespace: chart + "-system"}
		}))).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			g.Expect(delivered(getOp(g, chart))).To(Equal("v1.0.0"))
		}).WithTimeout(3 * time.Minute).Should(Succeed())

		By("a tenant's Deployment with the chart's Flux labels and the new version, whose Pods no Node takes")
		createNamespace(ctx, tenantNS)
		lookalike := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: chart, Labels: map[string]string{
				"helm.toolkit.fluxcd.io/name": opgen.ObjectName(chart), "helm.toolkit.fluxcd.io/namespace": plane.OperatorNamespace,
				"app.kubernetes.io/version": "v1.1.0",
			}},
			Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "lookalike"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "lookalike"}},
					Spec: corev1.PodSpec{NodeSelector: map[string]string{"no-such-node": "true"},
						Containers: []corev1.Container{{Name: "c", Image: "registry.example.com/lookalike:v1.1.0"}}},
				},
			},
		}
		Expect(k8s.Create(ctx, lookalike)).To(Succeed())
		patchOperator(ctx, chart, func(mo *csv1.ManagementOperator) { mo.Spec.Version = "v1.1.0" })
		Eventually(ctx, func(g Gomega) {
			mo := getOp(g, chart)
			g.Expect(delivered(mo)).To(Equal("v1.1.0"))
			g.Expect(mo).To(haveOperatorCondition(csv1.ProgressingCondition, metav1.ConditionFalse))
			for _, o := range mo.Status.RelatedObjects {
				g.Expect(o.Namespace).NotTo(Equal(tenantNS), "the look-alike is not the operator's")
			}
		}).WithTimeout(3 * time.Minute).Should(Succeed())
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(lookalike), lookalike)).To(Succeed())
		Expect(lookalike.Status.AvailableReplicas).To(BeZero(), "the look-alike never became available")
	})
})

// attackMoved names the ManagementOperator whose source is moved, and its repository
// "operators/attack-moved".
const attackMoved = "attack-moved"

// publishOperator publishes a small operator (a Namespace and a Deployment named after the
// moved ManagementOperator, in "<name>-system") to repository "operators/<name>" at tag;
// withConfigMap adds ConfigMap "moved-in".
func publishOperator(ctx context.Context, tag string, withConfigMap bool) {
	GinkgoHelper()
	name := attackMoved
	dir := GinkgoT().TempDir()
	files := map[string]string{
		"namespace.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + name + "-system\n",
		"deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ` + name + `
  namespace: ` + name + `-system
  labels: {app.kubernetes.io/name: ` + name + `, app.kubernetes.io/version: v1.0.0}
spec:
  replicas: 1
  selector:
    matchLabels: {app.kubernetes.io/name: ` + name + `}
  template:
    metadata:
      labels: {app.kubernetes.io/name: ` + name + `, app.kubernetes.io/version: v1.0.0}
    spec:
      containers:
        - name: manager
          image: registry.example.com/` + name + `:v1.0.0
          resources: {requests: {cpu: 10m, memory: 32Mi}}
`,
		"kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [namespace.yaml, deployment.yaml]\n",
	}
	if withConfigMap {
		files["moved.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: moved-in\n  namespace: " + name + "-system\ndata: {moved: \"yes\"}\n"
		files["kustomization.yaml"] = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [namespace.yaml, deployment.yaml, moved.yaml]\n"
	}
	for f, content := range files {
		Expect(os.WriteFile(filepath.Join(dir, f), []byte(content), 0o644)).To(Succeed())
	}
	Expect(pl.Git().Publish(ctx, "operators/"+name, dir, ".", tag)).To(Succeed())
}

// readRSS is the resident memory of process pid in KiB; false when it cannot be read (for a
// sampler, which must not fail the spec from its goroutine).
func readRSS(pid int) (int, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			n, err := strconv.Atoi(f[1])
			return n, err == nil
		}
	}
	return 0, false
}
