package controllers_test

import (
	"strings"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/opgen"
)

// What a ManagementOperator takes from its sources: the commit Flux first fetched at a
// version's tag, which the GitRepository is then pinned to (a moved tag is reported, not
// delivered); only version tags the status can hold; only the Deployments its own chart
// installed.
var _ = Describe("ManagementOperator sources", func() {
	BeforeEach(func() {
		err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: managementNamespace}})
		Expect(err == nil || apierrors.IsAlreadyExists(err)).To(BeTrue(), "create %s: %v", managementNamespace, err)
	})

	It("pins a version to the commit Flux first fetched at its tag, and reports a moved tag without delivering it", func() {
		const name = "pinned-op"
		url := "https://git.example.test/operators/" + name + ".git"
		c1, c2 := strings.Repeat("1", 40), strings.Repeat("2", 40)
		tags.publish(url, "v1.0.0", c1)
		createOperator(name, url, nil)
		repo := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: managementNamespace, Name: opgen.ObjectName(name)}}

		By("Flux fetches the tag (following it: nothing is pinned yet); the commit is recorded and pinned")
		Eventually(func(g Gomega) {
			setStatus(g, repo, func(gr *sourcev1.GitRepository) {
				g.Expect(gr.Spec.Reference.Tag).To(Equal("v1.0.0"))
				fetched(gr, "v1.0.0@sha1:"+c1)
			})
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, key(managementNamespace, repo.Name), repo)).To(Succeed())
			g.Expect(repo.Spec.Reference.Commit).To(Equal(c1))
			mo := getOperator(g, name)
			g.Expect(mo.Status.History).NotTo(BeEmpty())
			g.Expect(mo.Status.History[0].Commit).To(Equal(c1))
			c := condition(mo.Status.Conditions, csv1.TagVerifiedCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
		}).Should(Succeed())

		By("the tag is moved: TagMoved naming both commits, Degraded, the GitRepository still at the pinned commit")
		Eventually(func(g Gomega) {
			setStatus(g, repo, func(gr *sourcev1.GitRepository) { fetched(gr, "sha1:"+c1) })
		}).Should(Succeed())
		tags.publish(url, "v1.0.0", c2)
		Eventually(func(g Gomega) {
			mo := getOperator(g, name)
			c := condition(mo.Status.Conditions, csv1.TagVerifiedCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(csv1.ReasonTagMoved))
			g.Expect(c.Message).To(And(ContainSubstring(c1), ContainSubstring(c2), ContainSubstring("spec.followMovedTags")))
			deg := condition(mo.Status.Conditions, csv1.DegradedCondition)
			g.Expect(deg).NotTo(BeNil())
			g.Expect(deg.Reason).To(Equal(csv1.ReasonTagMoved))
		}).WithTimeout(time.Minute).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(k8s.Get(ctx, key(managementNamespace, repo.Name), repo)).To(Succeed())
			g.Expect(repo.Spec.Reference.Commit).To(Equal(c1), "the moved tag is not fetched")
		}, 3*time.Second).Should(Succeed())

		By("opting in with spec.followMovedTags: the GitRepository follows the tag again, nothing is reported")
		patchOperatorSpec(name, func(mo *csv1.ManagementOperator) { mo.Spec.FollowMovedTags = true })
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, key(managementNamespace, repo.Name), repo)).To(Succeed())
			g.Expect(repo.Spec.Reference.Commit).To(BeEmpty())
			g.Expect(condition(getOperator(g, name).Status.Conditions, csv1.TagVerifiedCondition)).To(HaveField("Status", metav1.ConditionTrue))
		}).Should(Succeed())
	})

	It("moves from a Git to an OCI source and back: the new source is applied and the other deleted", func() {
		const name = "moving-op"
		url := "https://git.example.test/operators/" + name + ".git"
		tags.publish(url, "v1.0.0", strings.Repeat("3", 40))
		createOperator(name, url, nil)
		objKey := key(managementNamespace, opgen.ObjectName(name))
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, objKey, &sourcev1.GitRepository{})).To(Succeed())
		}).Should(Succeed())

		// Nothing listens there: the tag listing fails (TagVerified Unknown); the objects do not wait for it.
		ociURL := "oci://127.0.0.1:1/operators/" + name
		patchOperatorSpec(name, func(mo *csv1.ManagementOperator) {
			mo.Spec.Source = csv1.OperatorSource{OCI: &csv1.OperatorOCISource{OCISource: csv1.OCISource{URL: ociURL, Insecure: true}}}
		})
		Eventually(func(g Gomega) {
			oci := &sourcev1.OCIRepository{}
			g.Expect(k8s.Get(ctx, objKey, oci)).To(Succeed())
			g.Expect(oci.Spec.URL).To(Equal(ociURL))
			g.Expect(oci.Spec.Reference.Tag).To(Equal("v1.0.0"))
			err := k8s.Get(ctx, objKey, &sourcev1.GitRepository{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the GitRepository is left: %v", err)
			c := condition(getOperator(g, name).Status.Conditions, csv1.TagVerifiedCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionUnknown))
			g.Expect(c.Message).To(ContainSubstring("oci://127.0.0.1:1/operators/" + name))
		}).WithTimeout(time.Minute).Should(Succeed())

		patchOperatorSpec(name, func(mo *csv1.ManagementOperator) {
			mo.Spec.Source = csv1.OperatorSource{Git: &csv1.OperatorGitSource{URL: url, Path: "config"}}
		})
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, objKey, &sourcev1.GitRepository{})).To(Succeed())
			err := k8s.Get(ctx, objKey, &sourcev1.OCIRepository{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the OCIRepository is left: %v", err)
		}).Should(Succeed())
	})

	It("lists no tag whose version the status cannot hold, says how many, and keeps writing the status", func() {
		const name = "long-tags-op"
		url := "https://git.example.test/operators/" + name + ".git"
		for _, tag := range []string{"v1.0.0", "v1.1.0", "v1.2.0+" + strings.Repeat("b", 200), "v1.3.0-" + strings.Repeat("r", 70)} {
			tags.publish(url, tag, strings.Repeat("3", 40))
		}
		createOperator(name, url, nil)
		Eventually(func(g Gomega) {
			mo := getOperator(g, name)
			g.Expect(mo.Status.AvailableUpdates).To(Equal([]string{"v1.1.0", "v1.0.0"}), "nothing delivered yet: every version")
			c := condition(mo.Status.Conditions, csv1.TagVerifiedCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Message).To(ContainSubstring("2 tag(s)"))
		}).Should(Succeed())
		patchOperatorSpec(name, func(mo *csv1.ManagementOperator) { mo.Spec.Channel = ">=1.0.0-0" })
		Eventually(func(g Gomega) {
			mo := getOperator(g, name)
			g.Expect(mo.Status.ObservedGeneration).To(Equal(mo.Generation))
			g.Expect(mo.Status.AvailableUpdates).To(Equal([]string{"v1.1.0", "v1.0.0"}), "nothing delivered yet: every version")
		}).Should(Succeed())
	})

	It("counts only the Deployments in the namespace its chart is installed into, not look-alikes with Flux's labels elsewhere", func() {
		const name = "chart-op"
		url := "https://git.example.test/operators/" + name + ".git"
		tags.publish(url, "v1.0.0", strings.Repeat("4", 40))
		target, tenant := newNamespace("chart-op-system"), newNamespace("chart-op-tenant")
		createOperator(name, url, func(mo *csv1.ManagementOperator) {
			mo.Spec.Chart = &csv1.OperatorChart{TargetNamespace: target}
		})
		labels := map[string]string{"helm.toolkit.fluxcd.io/name": opgen.ObjectName(name), "helm.toolkit.fluxcd.io/namespace": managementNamespace}
		for _, ns := range []string{target, tenant} {
			Expect(k8s.Create(ctx, labelledDeployment(ns, name, labels))).To(Succeed())
		}
		Eventually(func(g Gomega) {
			var deps []string
			for _, o := range getOperator(g, name).Status.RelatedObjects {
				if o.Resource == "deployments" {
					deps = append(deps, o.Namespace+"/"+o.Name)
				}
			}
			g.Expect(deps).To(Equal([]string{target + "/" + name}))
		}).Should(Succeed())
	})
})

// createOperator creates a ManagementOperator of component name at v1.0.0 from url, with a 10s
// interval, changed by mutate.
func createOperator(name, url string, mutate func(*csv1.ManagementOperator)) {
	mo := &csv1.ManagementOperator{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: csv1.ManagementOperatorSpec{
			Component: csv1.OperatorComponent{Type: csv1.OtherComponent, Name: name},
			Version:   "v1.0.0",
			Source:    csv1.OperatorSource{Git: &csv1.OperatorGitSource{URL: url, Path: "config"}},
			Interval:  &metav1.Duration{Duration: 10 * time.Second},
		},
	}
	if mutate != nil {
		mutate(mo)
	}
	ExpectWithOffset(1, k8s.Create(ctx, mo)).To(Succeed())
	DeferCleanup(func() { _ = k8s.Delete(ctx, mo) })
}

func getOperator(g Gomega, name string) *csv1.ManagementOperator {
	mo := &csv1.ManagementOperator{}
	g.ExpectWithOffset(1, k8s.Get(ctx, key("", name), mo)).To(Succeed())
	return mo
}

func patchOperatorSpec(name string, mutate func(*csv1.ManagementOperator)) {
	update(&csv1.ManagementOperator{ObjectMeta: metav1.ObjectMeta{Name: name}}, mutate)
}

// fetched plays source-controller: the GitRepository is Ready at revision.
func fetched(gr *sourcev1.GitRepository, revision string) {
	gr.Status.ObservedGeneration = gr.Generation
	gr.Status.Artifact = &meta.Artifact{Path: "x.tar.gz", URL: "http://source-controller/x.tar.gz", Revision: revision,
		Digest: "sha256:" + strings.Repeat("0", 64), LastUpdateTime: metav1.Now()}
	setReady(&gr.Status.Conditions, gr.Generation, meta.SucceededReason, "stored artifact for revision '"+revision+"'")
}

// labelledDeployment is a Deployment named name in ns carrying labels.
func labelledDeployment(ns, name string, labels map[string]string) *appsv1.Deployment {
	sel := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "registry.example.com/" + name + ":v1.0.0"}}},
			},
		},
	}
}
