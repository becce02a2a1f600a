package e2e

import (
	"context"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"k8s.io/utils/ptr"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/test/framework"
)

// What presence reports of an object.
const (
	// present: the object exists and is not being deleted.
	present = "present"
	// beingDeleted: the object exists with a deletionTimestamp (its finalizers still run).
	beingDeleted = "being deleted"
	// absent: the object does not exist.
	absent = "absent"
)

// presence reports whether the object key exists (present), is being deleted, or is absent, or
// the error that kept it from telling: an object being deleted is neither kept nor gone yet.
func presence(ctx context.Context, key client.ObjectKey, obj client.Object) func() string {
	return func() string {
		switch err := k8s.Get(ctx, key, obj); {
		case apierrors.IsNotFound(err):
			return absent
		case err != nil:
			return "unknown: " + err.Error()
		case obj.GetDeletionTimestamp() != nil:
			return beingDeleted
		default:
			return present
		}
	}
}

// clusterClassPresence is the presence of the ClusterClass of version v of the reference stack.
func clusterClassPresence(ctx context.Context, ns, v string) func() string {
	cc := &unstructured.Unstructured{}
	cc.SetGroupVersionKind(schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "ClusterClass"})
	return presence(ctx, client.ObjectKey{Namespace: ns, Name: tagPrefix + v}, cc)
}

// releasePresence is the presence of the ClusterStackRelease of version v of the reference stack.
func releasePresence(ctx context.Context, ns, v string) func() string {
	return presence(ctx, client.ObjectKey{Namespace: ns, Name: tagPrefix + v}, &csv1.ClusterStackRelease{})
}

// awaitGone deletes obj (unless it is gone already) and waits, up to timeout, until it no longer
// exists: its finalizers ran.
func awaitGone(ctx context.Context, obj client.Object, timeout time.Duration) {
	GinkgoHelper()
	Expect(client.IgnoreNotFound(k8s.Delete(ctx, obj))).To(Succeed())
	Eventually(ctx, presence(ctx, client.ObjectKeyFromObject(obj), obj)).WithTimeout(timeout).
		Should(Equal(absent), "%T %s deleted", obj, client.ObjectKeyFromObject(obj))
}

var _ = Describe("Releases: pinned versions, garbage collection and deletion", Ordered, func() {
	const ns = "releases"

	BeforeAll(func(ctx SpecContext) {
		createNamespace(ctx, ns)
		cs := newClusterStack(ns, "v1", "v2")
		cs.Spec.RollbackReleases = ptr.To[int32](0) // the lifecycle specs cover rollback targets
		Expect(k8s.Create(ctx, cs)).To(Succeed())
	})

	It("delivers every pinned version: a release, a GitRepository pinned to its tag and its ClusterClass", func(ctx SpecContext) {
		for _, v := range []string{"v1", "v2"} {
			Eventually(ctx, func(g Gomega) {
				rel := getRelease(ctx, g, ns, v)
				g.Expect(rel).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue))
				g.Expect(rel.Status.KubernetesVersion).To(Equal("v1.36.3"))
				g.Expect(rel.Status.ClusterClassName).To(Equal(tagPrefix + v))
				g.Expect(rel.Status.Components).To(ConsistOf(HaveField("Name", "cni"), HaveField("Name", "cluster-info")))
				repo := &sourcev1.GitRepository{}
				g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: tagPrefix + v}, repo)).To(Succeed())
				g.Expect(repo.Spec.Reference.Tag).To(Equal(tagPrefix + v))
			}).Should(Succeed())
			Eventually(ctx, clusterClassPresence(ctx, ns, v)).Should(Equal(present))
		}
		Eventually(ctx, func(g Gomega) {
			cs := getStack(ctx, g, ns)
			g.Expect(cs.Status.Releases).To(HaveLen(2))
			g.Expect(cs.Status.LatestRelease).To(Equal(tagPrefix + "v2"))
			g.Expect(cs.Status.RelatedObjects).To(ContainElement(HaveField("Kind", "GitRepository")))
		}).Should(Succeed())
	})

	It("keeps a release a Cluster uses after it is unpinned, and removes an unused one", func(ctx SpecContext) {
		Expect(k8s.Create(ctx, newCluster(ns, "r1", "v1", "10.10.0.0/16"))).To(Succeed())
		pinVersions(ctx, ns, "v2")

		Eventually(ctx, func(g Gomega) {
			cs := getStack(ctx, g, ns)
			g.Expect(cs.Status.Releases).To(ContainElement(And(HaveField("Name", tagPrefix+"v1"), HaveField("Reasons", ContainElement("InUse")))))
		}).Should(Succeed())
		Consistently(ctx, releasePresence(ctx, ns, "v1"), 10*time.Second, time.Second).Should(Equal(present), "a release in use is never removed")
		Expect(clusterClassPresence(ctx, ns, "v1")()).To(Equal(present))

		By("moving the Cluster to v2, v1 is no longer used and goes, with its Flux objects and ClusterClass")
		moveCluster(ctx, ns, "r1", "v2")
		Eventually(ctx, releasePresence(ctx, ns, "v1")).Should(Equal(absent))
		Eventually(ctx, func() bool {
			err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: tagPrefix + "v1"}, &sourcev1.GitRepository{})
			return apierrors.IsNotFound(err)
		}).Should(BeTrue())
		Eventually(ctx, clusterClassPresence(ctx, ns, "v1")).Should(Equal(absent))
		Expect(clusterClassPresence(ctx, ns, "v2")()).To(Equal(present))
	})

	It("waits to delete a ClusterStack that Clusters still use, and says why", func(ctx SpecContext) {
		cs := &csv1.ClusterStack{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "aws-base-1-36"}, cs)).To(Succeed())
		Expect(k8s.Delete(ctx, cs)).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			g.Expect(getStack(ctx, g, ns)).To(framework.HaveCondition(csv1.ReleasesResolvedCondition, metav1.ConditionFalse, "deletion waits", tagPrefix+"v2", "r1"))
		}).Should(Succeed())
		Consistently(ctx, releasePresence(ctx, ns, "v2"), 5*time.Second, time.Second).Should(Equal(present))

		By("deleting the Cluster, the ClusterStack and its release go")
		awaitGone(ctx, &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "r1"}}, 2*time.Minute)
		Eventually(ctx, func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "aws-base-1-36"}, &csv1.ClusterStack{}))
		}).Should(BeTrue())
		Eventually(ctx, releasePresence(ctx, ns, "v2")).Should(Equal(absent))
		Eventually(ctx, clusterClassPresence(ctx, ns, "v2")).Should(Equal(absent))
	})
})

var _ = Describe("Releases: auto-subscribe", Ordered, func() {
	const ns = "autosub"

	It("makes the newest published release a release and follows a tag pushed later", func(ctx SpecContext) {
		createNamespace(ctx, ns)
		cs := newClusterStack(ns)
		cs.Spec.AutoSubscribe = true
		cs.Spec.RollbackReleases = ptr.To[int32](0)
		Expect(k8s.Create(ctx, cs)).To(Succeed())
		// newestVersion is the newest tag the suite published before.
		Eventually(ctx, func(g Gomega) {
			cs := getStack(ctx, g, ns)
			g.Expect(cs.Status.LatestRelease).To(Equal(tagPrefix + newestVersion))
			g.Expect(cs.Status.Releases).To(ConsistOf(And(HaveField("Name", tagPrefix+newestVersion), HaveField("Reasons", ConsistOf("Latest")))))
		}).Should(Succeed())

		By("pushing a newer tag")
		publishVersion(ctx, "v20", withStackVersion("v20"))
		Eventually(ctx, func(g Gomega) {
			cs := getStack(ctx, g, ns)
			g.Expect(cs.Status.LatestRelease).To(Equal(tagPrefix + "v20"))
			rel := getRelease(ctx, g, ns, "v20")
			g.Expect(rel).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue))
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		Eventually(ctx, releasePresence(ctx, ns, newestVersion)).Should(Equal(absent), "the previous latest, unused and no rollback target (rollbackReleases 0), is garbage-collected")
	})
})

var _ = Describe("Releases: bad input", Ordered, func() {
	const ns = "badinput"

	BeforeAll(func(ctx SpecContext) { createNamespace(ctx, ns) })

	It("says so when a tag does not exist, naming the tag", func(ctx SpecContext) {
		cs := newClusterStack(ns, "v404")
		cs.Name = "missing-tag"
		Expect(k8s.Create(ctx, cs)).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			g.Expect(getRelease(ctx, g, ns, "v404")).To(framework.HaveCondition(csv1.DegradedCondition, metav1.ConditionTrue, "GitRepository/"+tagPrefix+"v404", tagPrefix+"v404"))
			s := &csv1.ClusterStack{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "missing-tag"}, s)).To(Succeed())
			g.Expect(s).To(framework.HaveCondition(csv1.DegradedCondition, metav1.ConditionTrue, tagPrefix+"v404"))
		}).Should(Succeed())
	})

	It("says so when the repository cannot be reached, naming it", func(ctx SpecContext) {
		cs := newClusterStack(ns, "v1")
		cs.Name = "unreachable"
		cs.Spec.Source.URL = "http://127.0.0.1:1/nowhere.git"
		Expect(k8s.Create(ctx, cs)).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			s := &csv1.ClusterStack{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "unreachable"}, s)).To(Succeed())
			g.Expect(s).To(framework.HaveCondition(csv1.DegradedCondition, metav1.ConditionTrue, "GitRepository/"+tagPrefix+"v1", "127.0.0.1:1"))
		}).Should(Succeed())
		awaitGone(ctx, cs, 2*time.Minute)
	})

	It("says so when the cluster-class chart fails to render, naming the Flux object and the template", func(ctx SpecContext) {
		cs := newClusterStack(ns, "v8")
		cs.Name = "unrenderable"
		Expect(k8s.Create(ctx, cs)).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			rel := getRelease(ctx, g, ns, "v8")
			g.Expect(rel).To(framework.HaveCondition(csv1.DegradedCondition, metav1.ConditionTrue, "HelmRelease/"+tagPrefix+"v8-cluster-class", "cluster-class.yaml"))
		}).Should(Succeed())
		awaitGone(ctx, cs, 2*time.Minute)
	})

	It("says which file is wrong in a malformed stack, keeps what was delivered and recovers when fixed", func(ctx SpecContext) {
		cs := newClusterStack(ns, "v7")
		cs.Name = "malformed"
		cs.Spec.FollowMovedTags = true // delivers a moved tag (the default pins the validated commit)
		Expect(k8s.Create(ctx, cs)).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			g.Expect(getRelease(ctx, g, ns, "v7")).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue))
		}).Should(Succeed())
		Expect(clusterClassPresence(ctx, ns, "v7")()).To(Equal(present))

		By("moving the tag to a commit without cluster-class/")
		publishVersion(ctx, "v7", withoutClusterClass)
		Eventually(ctx, func(g Gomega) {
			rel := getRelease(ctx, g, ns, "v7")
			g.Expect(rel).To(framework.HaveCondition(csv1.StackValidCondition, metav1.ConditionFalse, "cluster-class", tagPrefix+"v7"))
			g.Expect(rel).To(framework.HaveCondition(csv1.DegradedCondition, metav1.ConditionTrue, "cluster-class"))
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		// Flux fetches the moved tag and rebuilds the cluster-class chart at the release's
		// interval (the stack's): two of them.
		Consistently(ctx, clusterClassPresence(ctx, ns, "v7"), 2*stackInterval, time.Second).Should(Equal(present), "nothing already delivered is removed")

		By("fixing the tag, the release recovers by itself")
		publishVersion(ctx, "v7", nil)
		Eventually(ctx, func(g Gomega) {
			rel := getRelease(ctx, g, ns, "v7")
			g.Expect(rel).To(framework.HaveCondition(csv1.StackValidCondition, metav1.ConditionTrue))
			g.Expect(rel).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue))
			g.Expect(rel).To(framework.HaveCondition(csv1.DegradedCondition, metav1.ConditionFalse))
		}).WithTimeout(2 * time.Minute).Should(Succeed())
	})
})
