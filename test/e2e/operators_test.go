package e2e

import (
	"context"
	"os"
	"path/filepath"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/plane"
	"github.com/clusterstack-io/clusterstack-operator/internal/opgen"
)

// Issue 12 (delivery, status, downgrade, Disabled): a ManagementOperator delivers one of the
// plane's fixture operators into the management cluster through Flux (GitRepository at the
// version's tag, Kustomization with wait), where kube-controller-manager, the scheduler and kwok
// make its Deployment Available for real, and reports it with ClusterOperator semantics.
var _ = Describe("Management operators delivered by Flux", Ordered, func() {
	const (
		name     = "demo-infra-provider"
		delivery = "operator-delivery" // the identity Flux installs operators with
	)
	var (
		opNS string // the fixture operator's own namespace
		key  = client.ObjectKey{Name: name}
		mgmt = plane.OperatorNamespace
	)

	BeforeAll(func(ctx SpecContext) {
		var fx *plane.FixtureOperator
		for _, f := range pl.FixtureOperators() {
			if f.Name == name {
				fx = &f
			}
		}
		Expect(fx).NotTo(BeNil(), "the plane publishes fixture operator %s", name)
		opNS = fx.Namespace
		// Installing an operator creates Namespaces, CRDs and RBAC: the platform team grants
		// the identity Flux applies management operators with cluster-wide rights.
		Expect(k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: delivery, Namespace: mgmt}})).To(Succeed())
		Expect(k8s.Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "e2e-" + delivery},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: delivery, Namespace: mgmt}},
		})).To(Succeed())
		Expect(k8s.Create(ctx, &csv1.ManagementOperator{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: csv1.ManagementOperatorSpec{
				Component:          csv1.OperatorComponent{Type: csv1.InfrastructureProvider, Name: name},
				Version:            "v1.0.0",
				Source:             csv1.OperatorSource{Git: &csv1.OperatorGitSource{URL: fx.URL, Path: plane.FixtureOperatorPath}},
				Kustomize:          &csv1.OperatorKustomize{},
				ServiceAccountName: delivery,
				Interval:           &metav1.Duration{Duration: 10 * time.Second},
				Timeout:            &metav1.Duration{Duration: 30 * time.Second},
			},
		})).To(Succeed())
	})

	getOp := func(g Gomega) *csv1.ManagementOperator {
		mo := &csv1.ManagementOperator{}
		g.Expect(k8s.Get(bg(), key, mo)).To(Succeed())
		return mo
	}
	setVersion := func(ctx context.Context, v string) {
		GinkgoHelper()
		Eventually(ctx, func() error {
			mo := &csv1.ManagementOperator{}
			if err := k8s.Get(ctx, key, mo); err != nil {
				return err
			}
			patch := client.MergeFrom(mo.DeepCopy())
			mo.Spec.Version = v
			return k8s.Patch(ctx, mo, patch)
		}).Should(Succeed())
	}
	deployment := func(g Gomega) *appsv1.Deployment {
		d := &appsv1.Deployment{}
		g.Expect(k8s.Get(bg(), client.ObjectKey{Namespace: opNS, Name: name}, d)).To(Succeed())
		return d
	}
	gitTag := func(g Gomega) string {
		repo := &sourcev1.GitRepository{}
		g.Expect(k8s.Get(bg(), client.ObjectKey{Namespace: mgmt, Name: opgen.ObjectName(name)}, repo)).To(Succeed())
		g.Expect(repo.Spec.Reference).NotTo(BeNil())
		return repo.Spec.Reference.Tag
	}

	It("delivers a version and reports it once its Deployment is Available; Disabled while no stack needs it", func(ctx SpecContext) {
		Eventually(ctx, func(g Gomega) {
			mo := getOp(g)
			g.Expect(delivered(mo)).To(Equal("v1.0.0"))
			g.Expect(mo).To(haveOperatorCondition(csv1.AvailableCondition, metav1.ConditionTrue))
			g.Expect(mo).To(haveOperatorCondition(csv1.ProgressingCondition, metav1.ConditionFalse))
			g.Expect(mo).To(haveOperatorCondition(csv1.DegradedCondition, metav1.ConditionFalse))
			g.Expect(mo).To(haveOperatorCondition(csv1.DisabledCondition, metav1.ConditionTrue))
			g.Expect(mo.Status.History).NotTo(BeEmpty())
			g.Expect(mo.Status.History[0].Version).To(Equal("v1.0.0"))
			g.Expect(mo.Status.History[0].State).To(Equal(csv1.UpdateCompleted))
		}).WithTimeout(3 * time.Minute).Should(Succeed())

		mo := getOp(Default)
		d := deployment(Default)
		Expect(d.Labels).To(HaveKeyWithValue("app.kubernetes.io/version", "v1.0.0"))
		Expect(d.Status.AvailableReplicas).To(Equal(*d.Spec.Replicas))
		// Reported only after the Deployment became Available (seconds: the API's precision).
		avail := apimeta.FindStatusCondition(deploymentConditions(d), string(appsv1.DeploymentAvailable))
		Expect(avail).NotTo(BeNil())
		Expect(mo.Status.History[0].CompletionTime).NotTo(BeNil())
		Expect(mo.Status.History[0].CompletionTime.Time).NotTo(BeTemporally("<", avail.LastTransitionTime.Time))

		// Delivered by Flux: an ordinary, labelled Kustomization with wait, pinned to the tag.
		ks := &kustomizev1.Kustomization{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: mgmt, Name: opgen.ObjectName(name)}, ks)).To(Succeed())
		Expect(ks.Spec.Wait).To(BeTrue())
		Expect(ks.Labels).To(HaveKeyWithValue(csv1.ManagedByLabel, csv1.ManagedByValue))
		Expect(ks.Labels).To(HaveKeyWithValue(csv1.ManagementOperatorLabel, name))
		Expect(gitTag(Default)).To(Equal("v1.0.0"))
		Expect(mo.Status.RelatedObjects).NotTo(BeEmpty())
		Expect(mo.Status.AvailableUpdates).To(ContainElement("v1.1.0"))
	})

	It("holds a Cluster's addons while its release requires a version not delivered yet", func(ctx SpecContext) {
		// A stack release that requires demo-infra-provider >=1.1.0 (v1.0.0 is delivered).
		_, err := pl.Git().CreateRepo(reqRepo)
		Expect(err).NotTo(HaveOccurred())
		publishTo(ctx, reqRepo, tagPrefix+"v1", func(dir string) {
			meta := filepath.Join(dir, stackPath, "stack.yaml")
			b, err := os.ReadFile(meta)
			Expect(err).NotTo(HaveOccurred())
			Expect(os.WriteFile(meta, append(b, []byte("requires:\n  - operator: "+name+"\n    versions: \">=1.1.0\"\n")...), 0o644)).To(Succeed())
		})
		createNamespace(ctx, reqNS)
		cs := newClusterStack(reqNS, "v1")
		cs.Spec.Source.URL = pl.Git().RepoURL(reqRepo)
		Expect(k8s.Create(ctx, cs)).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			rel := &csv1.ClusterStackRelease{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: reqNS, Name: tagPrefix + "v1"}, rel)).To(Succeed())
			c := apimeta.FindStatusCondition(rel.Status.Conditions, csv1.RequirementsMetCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(csv1.ReasonRequirementsNotMet))
			g.Expect(c.Message).To(And(ContainSubstring(name), ContainSubstring(">=1.1.0"), ContainSubstring("v1.0.0")))
			GinkgoWriter.Printf("release: %s\n", c.Message)
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: reqNS, Name: tagPrefix + "v1"}, &clusterv1.ClusterClass{})).To(Succeed())
			st := &csv1.ClusterStack{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cs), st)).To(Succeed())
			u := apimeta.FindStatusCondition(st.Status.Conditions, csv1.UpgradeableCondition)
			g.Expect(u).NotTo(BeNil())
			g.Expect(u.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(u.Message).To(And(ContainSubstring(tagPrefix+"v1"), ContainSubstring(name)))
			// Now a release requires it: no longer Disabled.
			g.Expect(getOp(g)).To(haveOperatorCondition(csv1.DisabledCondition, metav1.ConditionFalse))
		}).WithTimeout(3 * time.Minute).Should(Succeed())

		Expect(k8s.Create(ctx, newCluster(reqNS, "needs-v11", "v1", "192.168.0.0/16"))).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			a := getAddon(ctx, g, reqNS, "needs-v11")
			c := apimeta.FindStatusCondition(a.Status.Conditions, csv1.ReleaseReadyCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(csv1.ReasonRequirementsNotMet))
			GinkgoWriter.Printf("ClusterAddon: %s\n", c.Message)
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		Consistently(ctx, func(g Gomega) {
			g.Expect(addonFluxObjects(ctx, g, reqNS, "needs-v11")).To(BeZero(), "no addon is moved to a release whose requirements are not met")
		}, 5*time.Second, time.Second).Should(Succeed())
	})

	It("upgrades: Progressing while it rolls out, Available kept, the version moved only when the new Deployment serves; an operator restart changes nothing", func(ctx SpecContext) {
		stop := sampleOperator(ctx, key)
		setVersion(ctx, "v1.1.0")
		Eventually(ctx, func(g Gomega) {
			g.Expect(gitTag(g)).To(Equal("v1.1.0"))
		}).Should(Succeed())
		By("killing the operator (SIGKILL) mid-rollout")
		Expect(pl.KillOperator(ctx)).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			mo := getOp(g)
			g.Expect(delivered(mo)).To(Equal("v1.1.0"))
			g.Expect(mo).To(haveOperatorCondition(csv1.ProgressingCondition, metav1.ConditionFalse))
			g.Expect(deployment(g).Labels).To(HaveKeyWithValue("app.kubernetes.io/version", "v1.1.0"))
		}).WithTimeout(3 * time.Minute).Should(Succeed())
		samples := stop()

		sawMoving := false
		for _, s := range samples {
			Expect(s.available).To(Equal(metav1.ConditionTrue), "Available stays True while the old version serves: %+v", s)
			if s.progressing == metav1.ConditionTrue && s.delivered == "v1.0.0" {
				Expect(s.progressingMsg).To(ContainSubstring("moving from v1.0.0 to v1.1.0"))
				sawMoving = true
			}
		}
		Expect(sawMoving).To(BeTrue(), "Progressing 'moving from v1.0.0 to v1.1.0' was seen in %d samples", len(samples))
		mo := getOp(Default)
		var versions []string
		for _, h := range mo.Status.History {
			Expect(h.State).To(Equal(csv1.UpdateCompleted))
			versions = append(versions, h.Version)
		}
		Expect(versions).To(Equal([]string{"v1.1.0", "v1.0.0"}), "one history entry per version, newest first, none repeated by the restart")

		By("the release that required v1.1.0 becomes usable by itself: the Cluster's addons are delivered")
		Eventually(ctx, func(g Gomega) {
			a := getAddon(ctx, g, reqNS, "needs-v11")
			g.Expect(a).To(haveCondition(csv1.AvailableCondition, metav1.ConditionTrue, tagPrefix+"v1"))
			g.Expect(addonFluxObjects(ctx, g, reqNS, "needs-v11")).To(BeNumerically(">", 0))
		}).WithTimeout(3 * time.Minute).Should(Succeed())
	})

	It("refuses a minor downgrade and applies nothing", func(ctx SpecContext) {
		setVersion(ctx, "v1.0.0")
		Eventually(ctx, func(g Gomega) {
			mo := getOp(g)
			c := apimeta.FindStatusCondition(mo.Status.Conditions, csv1.DegradedCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(csv1.ReasonDowngradeNotSupported))
			GinkgoWriter.Printf("downgrade refused: %s\n", c.Message)
		}).Should(Succeed())
		Consistently(ctx, func(g Gomega) {
			g.Expect(gitTag(g)).To(Equal("v1.1.0"))
			g.Expect(delivered(getOp(g))).To(Equal("v1.1.0"))
			g.Expect(deployment(g).Labels).To(HaveKeyWithValue("app.kubernetes.io/version", "v1.1.0"))
		}, 5*time.Second, 500*time.Millisecond).Should(Succeed())
		setVersion(ctx, "v1.1.0")
		Eventually(ctx, func(g Gomega) {
			g.Expect(getOp(g)).To(haveOperatorCondition(csv1.DegradedCondition, metav1.ConditionFalse))
		}).Should(Succeed())
	})

	It("does not apply an upgrade beyond what a release in use allows", func(ctx SpecContext) {
		// Cluster needs-v11 uses a release requiring ">=1.1.0", which a pre-release is not in.
		setVersion(ctx, "v1.2.0-broken")
		Eventually(ctx, func(g Gomega) {
			c := apimeta.FindStatusCondition(getOp(g).Status.Conditions, csv1.UpgradeableCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Message).To(ContainSubstring(tagPrefix + "v1"))
			GinkgoWriter.Printf("Upgradeable: %s\n", c.Message)
		}).Should(Succeed())
		Consistently(ctx, func(g Gomega) {
			g.Expect(gitTag(g)).To(Equal("v1.1.0"))
			g.Expect(delivered(getOp(g))).To(Equal("v1.1.0"))
		}, 5*time.Second, 500*time.Millisecond).Should(Succeed())
		By("once no Cluster uses that release, the upgrade is applied")
		Expect(k8s.Delete(ctx, &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: reqNS, Name: "needs-v11"}})).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			g.Expect(gitTag(g)).To(Equal("v1.2.0-broken"))
		}).WithTimeout(2 * time.Minute).Should(Succeed())
	})

	It("reports a version that never rolls out Degraded after the grace period, with the old version still serving", func(ctx SpecContext) {
		stop := sampleOperator(ctx, key)
		setVersion(ctx, "v1.2.0-broken")
		Eventually(ctx, func(g Gomega) {
			mo := getOp(g)
			g.Expect(mo).To(haveOperatorCondition(csv1.DegradedCondition, metav1.ConditionTrue))
			GinkgoWriter.Printf("Degraded: %s\n", apimeta.FindStatusCondition(mo.Status.Conditions, csv1.DegradedCondition).Message)
		}).WithTimeout(4 * time.Minute).Should(Succeed())
		samples := stop()
		for _, s := range samples {
			Expect(s.available).To(Equal(metav1.ConditionTrue), "v1.1.0 keeps serving: %+v", s)
			Expect(s.delivered).To(Equal("v1.1.0"), "the broken version is never reported: %+v", s)
		}
		mo := getOp(Default)
		Expect(mo.Status.History[0].Version).To(Equal("v1.2.0-broken"))
		Expect(mo.Status.History[0].State).To(Equal(csv1.UpdatePartial))

		By("moving back to the delivered version recovers")
		setVersion(ctx, "v1.1.0")
		Eventually(ctx, func(g Gomega) {
			mo := getOp(g)
			g.Expect(mo).To(haveOperatorCondition(csv1.DegradedCondition, metav1.ConditionFalse))
			g.Expect(mo).To(haveOperatorCondition(csv1.ProgressingCondition, metav1.ConditionFalse))
			g.Expect(deployment(g).Status.UnavailableReplicas).To(BeZero())
		}).WithTimeout(3 * time.Minute).Should(Succeed())
	})

	It("leaves the delivered operator running when the ManagementOperator is deleted", func(ctx SpecContext) {
		Expect(k8s.Delete(ctx, &csv1.ManagementOperator{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			err := k8s.Get(ctx, key, &csv1.ManagementOperator{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
			err = k8s.Get(ctx, client.ObjectKey{Namespace: mgmt, Name: opgen.ObjectName(name)}, &kustomizev1.Kustomization{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
		}).Should(Succeed())
		Consistently(ctx, func(g Gomega) {
			g.Expect(deployment(g).Status.AvailableReplicas).To(BeNumerically(">", 0))
		}, 5*time.Second, time.Second).Should(Succeed())
	})
})

// reqRepo and reqNS hold the stack release that requires a management operator version.
const (
	reqRepo = "requires-stacks"
	reqNS   = "requires"
)

// addonFluxObjects counts the HelmReleases and Kustomizations of Cluster ns/cluster.
func addonFluxObjects(ctx context.Context, g Gomega, ns, cluster string) int {
	sel := client.MatchingLabels{csv1.ClusterNameLabel: cluster}
	hrs := &helmv2.HelmReleaseList{}
	g.Expect(k8s.List(ctx, hrs, client.InNamespace(ns), sel)).To(Succeed())
	kss := &kustomizev1.KustomizationList{}
	g.Expect(k8s.List(ctx, kss, client.InNamespace(ns), sel)).To(Succeed())
	return len(hrs.Items) + len(kss.Items)
}

// bg is a background context for helpers used inside Eventually functions.
func bg() context.Context { return context.Background() }

// delivered is the ManagementOperator's reported operator version.
func delivered(mo *csv1.ManagementOperator) string {
	for _, v := range mo.Status.Versions {
		if v.Name == csv1.OperatorVersionName {
			return v.Version
		}
	}
	return ""
}

// haveOperatorCondition matches a ManagementOperator whose condition t has status s.
func haveOperatorCondition(t string, s metav1.ConditionStatus) OmegaMatcher {
	return WithTransform(func(mo *csv1.ManagementOperator) metav1.ConditionStatus {
		if c := apimeta.FindStatusCondition(mo.Status.Conditions, t); c != nil {
			return c.Status
		}
		return ""
	}, Equal(s))
}

// deploymentConditions converts a Deployment's conditions for apimeta.FindStatusCondition.
func deploymentConditions(d *appsv1.Deployment) []metav1.Condition {
	out := make([]metav1.Condition, 0, len(d.Status.Conditions))
	for _, c := range d.Status.Conditions {
		out = append(out, metav1.Condition{Type: string(c.Type), Status: metav1.ConditionStatus(c.Status), LastTransitionTime: c.LastTransitionTime, Reason: c.Reason})
	}
	return out
}

// operatorSample is one sample of a ManagementOperator's status.
type operatorSample struct {
	available, progressing metav1.ConditionStatus
	progressingMsg         string
	delivered              string
}

// sampleOperator samples a ManagementOperator's status every 100ms until stop is called.
func sampleOperator(ctx context.Context, key client.ObjectKey) (stop func() []operatorSample) {
	return sampleEvery(ctx, 100*time.Millisecond, func() (operatorSample, bool) {
		mo := &csv1.ManagementOperator{}
		if k8s.Get(ctx, key, mo) != nil {
			return operatorSample{}, false
		}
		s := operatorSample{delivered: delivered(mo)}
		if c := apimeta.FindStatusCondition(mo.Status.Conditions, csv1.AvailableCondition); c != nil {
			s.available = c.Status
		}
		if c := apimeta.FindStatusCondition(mo.Status.Conditions, csv1.ProgressingCondition); c != nil {
			s.progressing, s.progressingMsg = c.Status, c.Message
		}
		return s, true
	})
}
