package controllers_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/gitauth"
)

// A repository beyond the listing's limits (gitauth.LimitError) is reported on the stacks that
// read it, naming the limit and what to do; a stack of another repository is not affected.
var _ = Describe("ClusterStack tag listing limits", func() {
	It("reports TagListTooLarge on the stack whose repository exceeds a limit, and nothing else", func() {
		hostile, other := newNamespace("tag-limit"), newNamespace("tag-limit-other")
		st := newStack("acme", "limits", "1.36").WithHelmAddon("cni", "1.0.0")
		tags.fail(repoURL(hostile), &gitauth.LimitError{URL: repoURL(hostile), What: "bytes of reference advertisement", Limit: gitauth.MaxAdvertisementBytes})
		b := newClusterStack(hostile, "limits", st)
		b.cs.Spec.AutoSubscribe = true
		b.Create()
		v1 := publishRelease(other, st, "v1")
		newClusterStack(other, "limits", st).Versions("v1").Create()

		Eventually(func(g Gomega) {
			got := &csv1.ClusterStack{}
			g.Expect(k8s.Get(ctx, key(hostile, "limits"), got)).To(Succeed())
			c := condition(got.Status.Conditions, csv1.ReleasesResolvedCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(csv1.ReasonTagListTooLarge))
			g.Expect(c.Message).To(And(ContainSubstring(repoURL(hostile)), ContainSubstring("more than 16777216 bytes of reference advertisement"),
				ContainSubstring("publish from a repository of its own")))
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			got := &csv1.ClusterStack{}
			g.Expect(k8s.Get(ctx, key(other, "limits"), got)).To(Succeed())
			g.Expect(condition(got.Status.Conditions, csv1.ReleasesResolvedCondition)).To(HaveField("Status", metav1.ConditionTrue))
			g.Expect(k8s.Get(ctx, key(other, v1), &csv1.ClusterStackRelease{})).To(Succeed())
		}).Should(Succeed())
	})
})
