package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/plane"
	"github.com/clusterstack-io/clusterstack-operator/internal/opgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
	"github.com/clusterstack-io/clusterstack-operator/test/framework"
)

// Delivery, status, downgrade, Disabled: a ManagementOperator delivers one of the
// plane's fixture operators into the management cluster through Flux (GitRepository at the
// version's tag, Kustomization with wait), where kube-controller-manager, the scheduler and kwok
// make its Deployment Available for real, and reports it with ClusterOperator semantics.
var _ = Describe("Management operators delivered by Flux", Ordered, SpecPriority(5), func() {
	const (
		name     = "demo-infra-provider"
		delivery = "operator-delivery" // the identity Flux installs operators with
		// interval is the ManagementOperator's spec.interval (the least the API allows): the
		// operator reconciles it (lists its tags, decides what to apply) at least this often. A
		// Consistently that watches for a version applied against a decision lasts two intervals.
		interval = 10 * time.Second
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
		grantDelivery(ctx, delivery)
		Expect(k8s.Create(ctx, &csv1.ManagementOperator{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: csv1.ManagementOperatorSpec{
				Component:          csv1.OperatorComponent{Type: csv1.InfrastructureProvider, Name: name},
				Version:            "v1.0.0",
				Source:             csv1.OperatorSource{Git: &csv1.OperatorGitSource{URL: fx.URL, Path: plane.FixtureOperatorPath}},
				Kustomize:          &csv1.OperatorKustomize{},
				ServiceAccountName: delivery,
				Interval:           &metav1.Duration{Duration: interval},
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
		patchOperator(ctx, name, func(mo *csv1.ManagementOperator) { mo.Spec.Version = v })
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

	It("holds a Cluster's addons at their release while the release it moves to requires a version not delivered yet", func(ctx SpecContext) {
		// v1 of a stack requires nothing; v2 requires demo-infra-provider >=1.1.0 (v1.0.0 is
		// delivered).
		_, err := pl.Git().CreateRepo(reqRepo)
		Expect(err).NotTo(HaveOccurred())
		publishTo(ctx, reqRepo, tagPrefix+"v1", func(dir string) {
			Expect(stack.SetChartVersion(filepath.Join(dir, stackPath), "v1")).To(Succeed())
		})
		publishTo(ctx, reqRepo, reqRelease, func(dir string) {
			Expect(stack.SetChartVersion(filepath.Join(dir, stackPath), "v2")).To(Succeed())
			meta := filepath.Join(dir, stackPath, "stack.yaml")
			b, err := os.ReadFile(meta)
			Expect(err).NotTo(HaveOccurred())
			Expect(os.WriteFile(meta, append(b, []byte("requires:\n  - operator: "+name+"\n    versions: \">=1.1.0\"\n  - capiContract: v1beta2\n")...), 0o644)).To(Succeed())
		})
		createNamespace(ctx, reqNS)
		cs := newClusterStack(reqNS, "v1", "v2")
		cs.Spec.Source.URL = pl.Git().RepoURL(reqRepo)
		Expect(k8s.Create(ctx, cs)).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			rel := &csv1.ClusterStackRelease{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: reqNS, Name: reqRelease}, rel)).To(Succeed())
			c := apimeta.FindStatusCondition(rel.Status.Conditions, csv1.RequirementsMetCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(csv1.ReasonRequirementsNotMet))
			g.Expect(c.Message).To(And(ContainSubstring(name), ContainSubstring(">=1.1.0"), ContainSubstring("v1.0.0")))
			GinkgoWriter.Printf("release: %s\n", c.Message)
			for _, v := range []string{"v1", "v2"} {
				g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: reqNS, Name: tagPrefix + v}, &clusterv1.ClusterClass{})).To(Succeed())
			}
			st := &csv1.ClusterStack{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cs), st)).To(Succeed())
			u := apimeta.FindStatusCondition(st.Status.Conditions, csv1.UpgradeableCondition)
			g.Expect(u).NotTo(BeNil())
			g.Expect(u.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(u.Message).To(And(ContainSubstring(reqRelease), ContainSubstring(name)))
			GinkgoWriter.Printf("ClusterStack Upgradeable: %s\n", u.Message)
			// Now a release requires it: no longer Disabled.
			g.Expect(getOp(g)).To(haveOperatorCondition(csv1.DisabledCondition, metav1.ConditionFalse))
		}).WithTimeout(3 * time.Minute).Should(Succeed())

		Expect(k8s.Create(ctx, newCluster(reqNS, "needs-v11", "v1", "192.168.0.0/16"))).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			g.Expect(getAddon(ctx, g, reqNS, "needs-v11")).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue, tagPrefix+"v1"))
		}).WithTimeout(3 * time.Minute).Should(Succeed())
		before := addonFluxSpecs(ctx, Default, reqNS, "needs-v11")
		Expect(before).NotTo(BeEmpty())

		moveCluster(ctx, reqNS, "needs-v11", "v2")
		Eventually(ctx, func(g Gomega) {
			a := getAddon(ctx, g, reqNS, "needs-v11")
			c := apimeta.FindStatusCondition(a.Status.Conditions, csv1.ReleaseReadyCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(csv1.ReasonRequirementsNotMet))
			GinkgoWriter.Printf("ClusterAddon: %s\n", c.Message)
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		// The release checks its requirements at every reconcile (the stack's interval, and on
		// events): two of them.
		Consistently(ctx, func(g Gomega) {
			g.Expect(addonFluxSpecs(ctx, g, reqNS, "needs-v11")).To(Equal(before), "the Flux objects stay byte-identical while the release's requirements are not met")
			g.Expect(getAddon(ctx, g, reqNS, "needs-v11").Status.LastAppliedRelease).To(Equal(tagPrefix + "v1"))
		}, 2*stackInterval, time.Second).Should(Succeed())
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
		// The settled state, which the sampler may have stopped just before.
		if now, ok := takeOperatorSample(ctx, key); ok {
			samples = append(samples, now)
		}
		printTransitions(samples)
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

		By("the release that required v1.1.0 becomes usable by itself: the Cluster's addons move to it")
		Eventually(ctx, func(g Gomega) {
			a := getAddon(ctx, g, reqNS, "needs-v11")
			g.Expect(a).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue, reqRelease))
			g.Expect(a.Status.LastAppliedRelease).To(Equal(reqRelease))
			// The contract is read from the versions the installed Cluster CRD serves.
			rel := &csv1.ClusterStackRelease{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: reqNS, Name: reqRelease}, rel)).To(Succeed())
			c := apimeta.FindStatusCondition(rel.Status.Conditions, csv1.RequirementsMetCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Message).To(And(ContainSubstring("Cluster API contract v1beta2"), ContainSubstring("v1.1.0")))
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
		}, 2*interval, 500*time.Millisecond).Should(Succeed())
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
			g.Expect(c.Message).To(ContainSubstring(reqRelease))
			GinkgoWriter.Printf("Upgradeable: %s\n", c.Message)
		}).Should(Succeed())
		Consistently(ctx, func(g Gomega) {
			g.Expect(gitTag(g)).To(Equal("v1.1.0"))
			g.Expect(delivered(getOp(g))).To(Equal("v1.1.0"))
		}, 2*interval, 500*time.Millisecond).Should(Succeed())
	})

	It("applies it when forced, recording the risk, and reports a version that never rolls out Degraded after the grace period, with the old version still serving", func(ctx SpecContext) {
		// The rollout of the broken version starts when the override lets it through: the fault.
		gw := watchGrace(ctx, "ManagementOperator "+name, func(ctx context.Context) (*metav1.Condition, bool, error) {
			mo := &csv1.ManagementOperator{}
			if err := k8s.Get(ctx, key, mo); err != nil {
				return nil, false, err
			}
			return apimeta.FindStatusCondition(mo.Status.Conditions, csv1.DegradedCondition), mo.Status.DesiredVersion == "v1.2.0-broken", nil
		})
		stop := sampleOperator(ctx, key)
		By("forcing it with spec.overrideStackRequirements: applied, the risk recorded")
		forced := time.Now()
		patchOperator(ctx, name, func(mo *csv1.ManagementOperator) { mo.Spec.OverrideStackRequirements = true })
		Eventually(ctx, func(g Gomega) {
			g.Expect(gitTag(g)).To(Equal("v1.2.0-broken"))
			mo := getOp(g)
			c := apimeta.FindStatusCondition(mo.Status.Conditions, csv1.UpgradeableCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(csv1.ReasonRequirementsOverridden))
			g.Expect(mo.Status.History[0].Version).To(Equal("v1.2.0-broken"))
			g.Expect(mo.Status.History[0].AcceptedRisks).NotTo(BeEmpty())
		}).WithTimeout(2 * time.Minute).Should(Succeed())

		By("the broken version never rolls out: Degraded once the grace period passed")
		Eventually(ctx, func(g Gomega) {
			mo := getOp(g)
			g.Expect(mo).To(haveOperatorCondition(csv1.DegradedCondition, metav1.ConditionTrue))
			GinkgoWriter.Printf("Degraded: %s\n", apimeta.FindStatusCondition(mo.Status.Conditions, csv1.DegradedCondition).Message)
		}).WithTimeout(4 * time.Minute).Should(Succeed())
		gw.Check(forced)
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
	reqRepo    = "requires-stacks"
	reqNS      = "requires"
	reqRelease = tagPrefix + "v2" // the release that requires demo-infra-provider >=1.1.0
)

// addonFluxSpecs maps the HelmReleases and Kustomizations of Cluster ns/cluster to what the
// operator writes of them: labels, annotations and spec, as JSON.
func addonFluxSpecs(ctx context.Context, g Gomega, ns, cluster string) map[string]string {
	sel := client.MatchingLabels{csv1.ClusterNameLabel: cluster}
	out := map[string]string{}
	written := func(kind string, m metav1.ObjectMeta, spec any) {
		b, err := json.Marshal(map[string]any{"labels": m.Labels, "annotations": m.Annotations, "spec": spec})
		g.Expect(err).NotTo(HaveOccurred())
		out[kind+"/"+m.Name] = string(b)
	}
	hrs := &helmv2.HelmReleaseList{}
	g.Expect(k8s.List(ctx, hrs, client.InNamespace(ns), sel)).To(Succeed())
	for _, o := range hrs.Items {
		written("HelmRelease", o.ObjectMeta, o.Spec)
	}
	kss := &kustomizev1.KustomizationList{}
	g.Expect(k8s.List(ctx, kss, client.InNamespace(ns), sel)).To(Succeed())
	for _, o := range kss.Items {
		written("Kustomization", o.ObjectMeta, o.Spec)
	}
	return out
}

// grantDelivery creates ServiceAccount sa in the management namespace, bound to cluster-admin:
// installing an operator creates Namespaces, CRDs and RBAC, so the platform team grants the
// identity Flux applies management operators with cluster-wide rights.
func grantDelivery(ctx context.Context, sa string) {
	GinkgoHelper()
	mgmt := plane.OperatorNamespace
	Expect(k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: mgmt}})).To(Succeed())
	Expect(k8s.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-" + sa},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: mgmt}},
	})).To(Succeed())
}

// patchOperator changes ManagementOperator name with mutate, retrying until the API accepts it.
func patchOperator(ctx context.Context, name string, mutate func(*csv1.ManagementOperator)) {
	GinkgoHelper()
	Eventually(ctx, func() error {
		mo := &csv1.ManagementOperator{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: name}, mo); err != nil {
			return err
		}
		patch := client.MergeFrom(mo.DeepCopy())
		mutate(mo)
		return k8s.Patch(ctx, mo, patch)
	}).Should(Succeed())
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
	at                     time.Time
	available, progressing metav1.ConditionStatus
	progressingMsg         string
	delivered              string
}

// printTransitions prints the samples at which the status changed, for the record of a rollout.
func printTransitions(samples []operatorSample) {
	var last operatorSample
	for i, s := range samples {
		at := s.at
		s.at, last.at = time.Time{}, time.Time{}
		if i == 0 || s != last {
			GinkgoWriter.Printf("%s versions[operator]=%s Available=%s Progressing=%s %q\n", at.Format("15:04:05.0"), s.delivered, s.available, s.progressing, s.progressingMsg)
		}
		last = s
	}
}

// sampleOperator samples a ManagementOperator's status every 100ms until stop is called.
func sampleOperator(ctx context.Context, key client.ObjectKey) (stop func() []operatorSample) {
	return sampleEvery(ctx, 100*time.Millisecond, func() (operatorSample, bool) { return takeOperatorSample(ctx, key) })
}

// takeOperatorSample reads a ManagementOperator's status once.
func takeOperatorSample(ctx context.Context, key client.ObjectKey) (operatorSample, bool) {
	mo := &csv1.ManagementOperator{}
	if k8s.Get(ctx, key, mo) != nil {
		return operatorSample{}, false
	}
	s := operatorSample{at: time.Now(), delivered: delivered(mo)}
	if c := apimeta.FindStatusCondition(mo.Status.Conditions, csv1.AvailableCondition); c != nil {
		s.available = c.Status
	}
	if c := apimeta.FindStatusCondition(mo.Status.Conditions, csv1.ProgressingCondition); c != nil {
		s.progressing, s.progressingMsg = c.Status, c.Message
	}
	return s, true
}

// The same intent for an operator shipped as a Helm chart (spec.chart): a HelmChart from the
// GitRepository at the version's tag and a HelmRelease with the values, into its own namespace.
var _ = Describe("Management operators delivered as Helm charts", Ordered, func() {
	const (
		name     = "demo-chart-operator"
		repo     = "operators/" + name
		targetNS = "demo-chart-system"
		delivery = "chart-delivery"
	)
	var (
		key  = client.ObjectKey{Name: name}
		mgmt = plane.OperatorNamespace
	)
	deployment := func(g Gomega) *appsv1.Deployment {
		d := &appsv1.Deployment{}
		g.Expect(k8s.Get(bg(), client.ObjectKey{Namespace: targetNS, Name: name}, d)).To(Succeed())
		return d
	}

	BeforeAll(func(ctx SpecContext) {
		_, err := pl.Git().CreateRepo(repo)
		Expect(err).NotTo(HaveOccurred())
		for _, v := range []string{"v1.0.0", "v1.1.0"} {
			dir := GinkgoT().TempDir()
			Expect(os.MkdirAll(filepath.Join(dir, "chart/templates"), 0o755)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(dir, "chart/Chart.yaml"), []byte("apiVersion: v2\nname: "+name+"\nversion: "+strings.TrimPrefix(v, "v")+"\nappVersion: "+v+"\n"), 0o644)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(dir, "chart/values.yaml"), []byte("replicas: 1\n"), 0o644)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(dir, "chart/templates/deployment.yaml"), []byte(chartDeployment), 0o644)).To(Succeed())
			Expect(pl.Git().Publish(ctx, repo, dir, ".", v)).To(Succeed())
		}
		grantDelivery(ctx, delivery)
		Expect(k8s.Create(ctx, &csv1.ManagementOperator{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: csv1.ManagementOperatorSpec{
				Component:          csv1.OperatorComponent{Type: csv1.AddonProvider, Name: name},
				Version:            "v1.0.0",
				Source:             csv1.OperatorSource{Git: &csv1.OperatorGitSource{URL: pl.Git().RepoURL(repo)}},
				Chart:              &csv1.OperatorChart{Path: "chart", TargetNamespace: targetNS, Values: &apiextensionsv1.JSON{Raw: []byte(`{"replicas":2}`)}},
				ServiceAccountName: delivery,
				Interval:           &metav1.Duration{Duration: 10 * time.Second},
				Timeout:            &metav1.Duration{Duration: 30 * time.Second},
			},
		})).To(Succeed())
	})

	It("installs the chart with its values and reports the version once the Deployment is Available", func(ctx SpecContext) {
		Eventually(ctx, func(g Gomega) {
			mo := &csv1.ManagementOperator{}
			g.Expect(k8s.Get(ctx, key, mo)).To(Succeed())
			g.Expect(delivered(mo)).To(Equal("v1.0.0"))
			g.Expect(mo).To(haveOperatorCondition(csv1.AvailableCondition, metav1.ConditionTrue))
			g.Expect(mo).To(haveOperatorCondition(csv1.ProgressingCondition, metav1.ConditionFalse))
			d := deployment(g)
			g.Expect(*d.Spec.Replicas).To(Equal(int32(2)), "spec.chart.values reach the chart")
			g.Expect(d.Status.AvailableReplicas).To(Equal(int32(2)))
		}).WithTimeout(3 * time.Minute).Should(Succeed())
		hr := &helmv2.HelmRelease{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: mgmt, Name: opgen.ObjectName(name)}, hr)).To(Succeed())
		Expect(hr.Labels).To(HaveKeyWithValue(csv1.ManagementOperatorLabel, name))
	})

	It("upgrades to the next tag", func(ctx SpecContext) {
		patchOperator(ctx, name, func(mo *csv1.ManagementOperator) { mo.Spec.Version = "v1.1.0" })
		Eventually(ctx, func(g Gomega) {
			mo := &csv1.ManagementOperator{}
			g.Expect(k8s.Get(ctx, key, mo)).To(Succeed())
			g.Expect(delivered(mo)).To(Equal("v1.1.0"))
			g.Expect(mo).To(haveOperatorCondition(csv1.ProgressingCondition, metav1.ConditionFalse))
			g.Expect(deployment(g).Labels).To(HaveKeyWithValue("app.kubernetes.io/version", "v1.1.0"))
		}).WithTimeout(3 * time.Minute).Should(Succeed())
	})

	It("leaves the chart installed when the ManagementOperator is deleted", func(ctx SpecContext) {
		Expect(k8s.Delete(ctx, &csv1.ManagementOperator{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			err := k8s.Get(ctx, client.ObjectKey{Namespace: mgmt, Name: opgen.ObjectName(name)}, &helmv2.HelmRelease{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
		}).Should(Succeed())
		Consistently(ctx, func(g Gomega) {
			g.Expect(deployment(g).Status.AvailableReplicas).To(Equal(int32(2)), "not uninstalled")
		}, 5*time.Second, time.Second).Should(Succeed())
	})
})

// chartDeployment is the Deployment template of the chart in "Management operators delivered
// as Helm charts".
const chartDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Chart.Name }}
  namespace: {{ .Release.Namespace }}
  labels:
    app.kubernetes.io/name: {{ .Chart.Name }}
    app.kubernetes.io/version: {{ .Chart.AppVersion }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels:
      app.kubernetes.io/name: {{ .Chart.Name }}
  template:
    metadata:
      labels:
        app.kubernetes.io/name: {{ .Chart.Name }}
        app.kubernetes.io/version: {{ .Chart.AppVersion }}
    spec:
      containers:
        - name: manager
          image: registry.example.com/{{ .Chart.Name }}:{{ .Chart.AppVersion }}
`
