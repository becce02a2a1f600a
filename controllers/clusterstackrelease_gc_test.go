package controllers_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/lifecycle"
)

// Release garbage collection and retention (internal/lifecycle.Keep, ClusterStackReconciler):
// a ClusterStack keeps its pinned releases, the spec.rollbackReleases newest working releases
// older than the newest pinned one (rollback targets) and every release something still runs (a
// Cluster's topology, its addons as last applied, its Flux objects); it deletes the others, each
// with a ReleaseRemoved Event.
var _ = Describe("ClusterStackRelease garbage collection", func() {
	const (
		pinned     = lifecycle.Pinned
		rollback   = lifecycle.RollbackTarget
		inUse      = lifecycle.InUse
		applied    = lifecycle.Applied
		referenced = lifecycle.Referenced
	)

	It("keeps the rollback targets spec.rollbackReleases asks for and the releases a Cluster runs, and removes the rest", func() {
		ns := newNamespace("release-gc")
		st := newStack("acme", "gc", "1.36").WithHelmAddon("cni", "1.0.0")
		v1, v2, v3 := publishRelease(ns, st, "v1"), publishRelease(ns, st, "v2"), publishRelease(ns, st, "v3")
		cs := newClusterStack(ns, "gc", st).Versions("v1").RollbackReleases(2).Create()
		reasons := func(g Gomega) map[string][]string { return releaseReasons(g, ns, cs.Name) }

		By("the pinned release v1 is created and works")
		releaseWorks(ns, v1)
		Eventually(reasons).Should(Equal(map[string][]string{v1: {pinned}}))
		stackSeesAvailable(ns, cs.Name, v1)

		By("pinning v2: v1 stays as a rollback target")
		update(cs, func(cs *csv1.ClusterStack) { cs.Spec.Versions = []string{"v2"} })
		releaseWorks(ns, v2)
		Eventually(reasons).Should(Equal(map[string][]string{v1: {rollback}, v2: {pinned}}))
		stackSeesAvailable(ns, cs.Name, v2)

		By("pinning v3 with rollbackReleases 2: v1 and v2 both stay")
		update(cs, func(cs *csv1.ClusterStack) { cs.Spec.Versions = []string{"v3"} })
		releaseWorks(ns, v3)
		Eventually(reasons).Should(Equal(map[string][]string{v1: {rollback}, v2: {rollback}, v3: {pinned}}))
		Expect(releaseNames(Default, ns)).To(Equal([]string{v1, v2, v3}))

		By("rollbackReleases 1: the older rollback target v1 is removed, with an Event")
		update(cs, func(cs *csv1.ClusterStack) { cs.Spec.RollbackReleases = ptr.To(int32(1)) })
		Eventually(gone(&csv1.ClusterStackRelease{ObjectMeta: objectMeta(ns, v1)})).Should(Succeed())
		Eventually(reasons).Should(Equal(map[string][]string{v2: {rollback}, v3: {pinned}}))
		Eventually(func(g Gomega) []string { return events(g, ns, "ClusterStack", cs.Name, "ReleaseRemoved") }).Should(ConsistOf(
			"release " + v1 + " is not pinned, latest, a rollback target or used by any Cluster or Flux object: removed"))

		By("a Cluster runs v2's addons: with rollbackReleases 0, v2 stays, in use")
		c := newCluster(ns, "c1").WithClass(st, v2).Initialized().Create()
		cni := fluxgen.AddonObjectName("c1", "cni")
		Eventually(func(g Gomega) {
			readyHelmRelease(g, ns, cni, "1.0.0")
			g.Expect(clusterAddon(g, ns, "c1").Status.LastAppliedRelease).To(Equal(v2))
		}).Should(Succeed())
		Eventually(reasons).Should(Equal(map[string][]string{v2: {applied, inUse, referenced, rollback}, v3: {pinned}}))
		update(cs, func(cs *csv1.ClusterStack) { cs.Spec.RollbackReleases = ptr.To(int32(0)) })
		Eventually(reasons).Should(Equal(map[string][]string{v2: {applied, inUse, referenced}, v3: {pinned}}))
		// The reconcile that wrote these reasons decided, before writing them, not to delete v2.
		Expect(releaseNames(Default, ns)).To(Equal([]string{v2, v3}))

		By("the Cluster moves to v3: v2 stays while the Cluster's addons still run it")
		moveCluster(c, v3)
		Eventually(func(g Gomega) map[string]string { return helmReleaseLabels(g, ns, cni) }).Should(HaveKeyWithValue(csv1.ReleaseLabel, v3))
		Eventually(reasons).Should(Equal(map[string][]string{v2: {applied}, v3: {inUse, pinned, referenced}}))
		Expect(releaseNames(Default, ns)).To(Equal([]string{v2, v3}))

		By("the addons run v3: v2 is removed")
		Eventually(func(g Gomega) {
			readyHelmRelease(g, ns, cni, "1.0.0")
			g.Expect(clusterAddon(g, ns, "c1").Status.LastAppliedRelease).To(Equal(v3))
		}).Should(Succeed())
		Eventually(gone(&csv1.ClusterStackRelease{ObjectMeta: objectMeta(ns, v2)})).Should(Succeed())
		Eventually(reasons).Should(Equal(map[string][]string{v3: {applied, inUse, pinned, referenced}}))
		Expect(releaseNames(Default, ns)).To(Equal([]string{v3}))
	})

	It("keeps only releases that worked as rollback targets", func() {
		ns := newNamespace("release-gc-broken")
		st := newStack("acme", "gcb", "1.36").WithHelmAddon("cni", "1.0.0")
		broken := newStack("acme", "gcb", "1.36").WithHelmAddon("cni", "1.0.0").WithoutClusterClass()
		v1, v2, v3 := publishRelease(ns, st, "v1"), publishRelease(ns, broken, "v2"), publishRelease(ns, st, "v3")
		cs := newClusterStack(ns, "gcb", st).Versions("v1").RollbackReleases(1).Create()
		reasons := func(g Gomega) map[string][]string { return releaseReasons(g, ns, cs.Name) }
		releaseWorks(ns, v1)
		stackSeesAvailable(ns, cs.Name, v1)

		By("v2's stack is invalid: it never works")
		update(cs, func(cs *csv1.ClusterStack) { cs.Spec.Versions = []string{"v2"} })
		Eventually(func(g Gomega) {
			serveArtifact(g, ns, v2)
			rel := &csv1.ClusterStackRelease{}
			g.Expect(k8s.Get(ctx, key(ns, v2), rel)).To(Succeed())
			valid := condition(rel.Status.Conditions, csv1.StackValidCondition)
			g.Expect(valid).NotTo(BeNil())
			g.Expect(valid.Reason).To(Equal(csv1.ReasonInvalidStack))
			g.Expect(valid.Message).To(ContainSubstring("a stack needs a cluster-class directory"))
		}).Should(Succeed())
		Eventually(reasons).Should(Equal(map[string][]string{v1: {rollback}, v2: {pinned}}))

		By("pinning v3: the rollback target is v1, the newest release that worked; v2 is removed")
		update(cs, func(cs *csv1.ClusterStack) { cs.Spec.Versions = []string{"v3"} })
		releaseWorks(ns, v3)
		Eventually(gone(&csv1.ClusterStackRelease{ObjectMeta: objectMeta(ns, v2)})).Should(Succeed())
		Eventually(reasons).Should(Equal(map[string][]string{v1: {rollback}, v3: {pinned}}))
		Expect(releaseNames(Default, ns)).To(Equal([]string{v1, v3}))
	})
})
