package controllers_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/controllers"
	"github.com/clusterstack-io/clusterstack-operator/internal/lifecycle"
)

// Finalizers of ClusterStacks and ClusterStackReleases: both get theirs when created; a release
// a Cluster uses outlives its deletion, and a deleted ClusterStack waits for its releases, naming
// what still uses them; both go once nothing does.
var _ = Describe("ClusterStack and ClusterStackRelease finalizers", func() {
	It("are added on creation and removed once no Cluster uses the stack's releases", func() {
		ns := newNamespace("stack-finalizers")
		st := newStack("demo", "fin", "1.36").WithHelmAddon("cni", "1.0.0")
		v1, v2 := publishRelease(ns, st, "v1"), publishRelease(ns, st, "v2")
		cs := newClusterStack(ns, "fin", st).Versions("v1", "v2").Create()
		rel1 := &csv1.ClusterStackRelease{ObjectMeta: objectMeta(ns, v1)}
		rel2 := &csv1.ClusterStackRelease{ObjectMeta: objectMeta(ns, v2)}

		By("the ClusterStack and its releases carry their finalizers")
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, key(ns, cs.Name), cs)).To(Succeed())
			g.Expect(cs.Finalizers).To(ConsistOf(csv1.ClusterStackFinalizer))
			for _, rel := range []*csv1.ClusterStackRelease{rel1, rel2} {
				g.Expect(k8s.Get(ctx, key(ns, rel.Name), rel)).To(Succeed())
				g.Expect(rel.Finalizers).To(ConsistOf(controllers.ReleaseFinalizer))
			}
		}).Should(Succeed())

		c := newCluster(ns, "w1").WithClass(st, v1).Create()
		Eventually(func(g Gomega) []string { return releaseReasons(g, ns, cs.Name)[v1] }).Should(ConsistOf(lifecycle.InUse, lifecycle.Pinned))

		By("a release the Cluster uses, deleted, stays with its finalizer")
		Expect(k8s.Delete(ctx, rel1)).To(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(k8s.Get(ctx, key(ns, v1), rel1)).To(Succeed())
			g.Expect(rel1.DeletionTimestamp).NotTo(BeNil())
			g.Expect(rel1.Finalizers).To(ConsistOf(controllers.ReleaseFinalizer))
		}).Should(Succeed())

		By("the deleted ClusterStack removes the unused release and waits for the used one, naming its Cluster")
		Expect(k8s.Delete(ctx, cs)).To(Succeed())
		Eventually(gone(rel2)).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, key(ns, cs.Name), cs)).To(Succeed())
			g.Expect(cs.DeletionTimestamp).NotTo(BeNil())
			g.Expect(cs.Finalizers).To(ConsistOf(csv1.ClusterStackFinalizer))
			resolved := condition(cs.Status.Conditions, csv1.ReleasesResolvedCondition)
			g.Expect(resolved).NotTo(BeNil())
			g.Expect(resolved.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(resolved.Reason).To(Equal(csv1.ReasonInUse))
			g.Expect(resolved.Message).To(Equal("deletion waits until no Cluster uses the stack's releases: " + v1 + " (used by Cluster w1)"))
		}).Should(Succeed())
		Expect(k8s.Get(ctx, key(ns, v1), rel1)).To(Succeed())

		By("the Cluster goes: the release and then the ClusterStack go")
		Expect(k8s.Delete(ctx, c)).To(Succeed())
		Eventually(gone(rel1)).Should(Succeed())
		Eventually(gone(cs)).Should(Succeed())
	})
})
