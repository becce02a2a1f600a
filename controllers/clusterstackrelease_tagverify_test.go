package controllers_test

import (
	"errors"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
)

// Tag verification (ClusterStackReleaseReconciler.verifyTag): a release pinned to its validated
// commit checks, every interval, that its tag still points there. The tag listings are cached
// per namespace and repository, shared by every ClusterStack of the namespace that reads the
// repository (one repository holding many stacks, as SCS's cluster-stacks does); a listing made
// before a tag was pushed must not report a new release's tag as gone.
var _ = Describe("ClusterStackRelease tag verification", func() {
	It("does not report the tag of a release published after the namespace's last listing as moved", func() {
		ns := newNamespace("tag-verify")
		first := newStack("acme", "first", "1.36").WithHelmAddon("cni", "1.0.0")
		second := newStack("acme", "second", "1.36").WithHelmAddon("cni", "1.0.0")

		By("a first stack's release is validated and verifies its tag: the repository's tags are listed and cached")
		v1 := publishRelease(ns, first, "v1")
		newClusterStack(ns, "first", first).Versions("v1").Create()
		releaseWorks(ns, v1)
		Eventually(func(g Gomega) {
			g.Expect(tagVerified(g, ns, v1)).To(HaveField("Status", metav1.ConditionTrue))
		}).Should(Succeed())

		By("a tag of a second stack of the same repository is pushed afterwards, and delivered")
		w1 := publishRelease(ns, second, "v1")
		cs := newClusterStack(ns, "second", second).Versions("v1").Create()
		rel := releaseValidated(ns, w1)
		Eventually(func(g Gomega) {
			c := tagVerified(g, ns, w1)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "TagVerified: %s: %s", c.Reason, c.Message)
			g.Expect(c.Message).To(ContainSubstring(rel.Status.Commit))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(tagVerified(g, ns, w1)).To(HaveField("Status", metav1.ConditionTrue))
			g.Expect(events(g, ns, "ClusterStackRelease", w1, csv1.ReasonTagMoved)).To(BeEmpty())
		}).Should(Succeed())

		By("a tag that is gone is still reported, from a listing made after the validation")
		tags.remove(repoURL(ns), w1)
		update(cs, func(cs *csv1.ClusterStack) { cs.Spec.Interval = &metav1.Duration{Duration: 10 * time.Second} })
		Eventually(func(g Gomega) {
			c := tagVerified(g, ns, w1)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(csv1.ReasonTagMoved))
			g.Expect(c.Message).To(ContainSubstring("no longer exists"))
		}).Should(Succeed())
	})

	It("degrades a release whose tag cannot be listed for longer than the grace period, and keeps delivering it", func() {
		ns := newNamespace("tag-list")
		st := newStack("acme", "listing", "1.36").WithHelmAddon("cni", "1.0.0")
		v1 := publishRelease(ns, st, "v1")
		newClusterStack(ns, "listing", st).Versions("v1").Interval(10 * time.Second).Create()
		releaseWorks(ns, v1)
		commit := releaseValidated(ns, v1).Status.Commit

		By("the repository cannot be listed: TagVerified turns Unknown, and the release is not Degraded within the grace period")
		tags.fail(repoURL(ns), errors.New("dial tcp 192.0.2.1:443: connect: connection refused"))
		Eventually(func(g Gomega) {
			c := tagVerified(g, ns, v1)
			g.Expect(c.Status).To(Equal(metav1.ConditionUnknown))
			g.Expect(c.Reason).To(Equal(csv1.ReasonTagListFailed))
			g.Expect(c.Message).To(ContainSubstring("connection refused"))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(releaseCondition(g, ns, v1, csv1.DegradedCondition)).To(HaveField("Status", metav1.ConditionFalse))
		}, 3*time.Second).Should(Succeed())

		By("once that has lasted longer than the grace period (the condition's transition moved back), the release is Degraded and still Available")
		Eventually(func(g Gomega) {
			setStatus(g, &csv1.ClusterStackRelease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: v1}}, func(rel *csv1.ClusterStackRelease) {
				condition(rel.Status.Conditions, csv1.TagVerifiedCondition).LastTransitionTime = metav1.NewTime(time.Now().Add(-6 * time.Minute))
			})
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			deg := releaseCondition(g, ns, v1, csv1.DegradedCondition)
			g.Expect(deg.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(deg.Reason).To(Equal(csv1.ReasonTagListFailed))
			g.Expect(deg.Message).To(And(ContainSubstring("cannot check where tag "+v1+" points"), ContainSubstring("connection refused"), HaveSuffix("(for more than 5m0s)")))
			g.Expect(releaseCondition(g, ns, v1, csv1.AvailableCondition)).To(HaveField("Status", metav1.ConditionTrue))
			rel := &csv1.ClusterStackRelease{}
			g.Expect(k8s.Get(ctx, key(ns, v1), rel)).To(Succeed())
			g.Expect(rel.Status.Commit).To(Equal(commit))
			repo := &sourcev1.GitRepository{}
			g.Expect(k8s.Get(ctx, key(ns, fluxgen.GitRepositoryName(v1)), repo)).To(Succeed())
			g.Expect(repo.Spec.Reference.Commit).To(Equal(commit), "the validated commit stays pinned")
		}).Should(Succeed())

		By("the repository can be listed again: verified, and no longer Degraded")
		tags.recover(repoURL(ns))
		Eventually(func(g Gomega) {
			g.Expect(tagVerified(g, ns, v1)).To(HaveField("Status", metav1.ConditionTrue))
			g.Expect(releaseCondition(g, ns, v1, csv1.DegradedCondition)).To(HaveField("Status", metav1.ConditionFalse))
		}).Should(Succeed())
	})
})

// tagVerified is the release's TagVerified condition (it must be there).
func tagVerified(g Gomega, ns, release string) metav1.Condition {
	return releaseCondition(g, ns, release, csv1.TagVerifiedCondition)
}

// releaseCondition is a condition of the release (it must be there).
func releaseCondition(g Gomega, ns, release, t string) metav1.Condition {
	rel := &csv1.ClusterStackRelease{}
	g.ExpectWithOffset(1, k8s.Get(ctx, key(ns, release), rel)).To(Succeed())
	c := condition(rel.Status.Conditions, t)
	g.ExpectWithOffset(1, c).NotTo(BeNil(), "release %s has no %s condition: %v", release, t, rel.Status.Conditions)
	return *c
}
