package e2e

import (
	"context"
	"fmt"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/test/framework"
)

// Sharding by label (docs/sharding.md): the plane's operator is the main instance
// (--watch-label-selector='!clusterstack.io/shard', --manage-stacks); two more instances are
// shards a and b (--watch-label-selector=clusterstack.io/shard=<x> --manage-stacks=false), each
// with its own lease. The fleet is split by the Clusters' clusterstack.io/shard label.
var _ = Describe("Sharding by label", Ordered, SpecPriority(4), func() {
	const ns = "sharding"
	shard := func(s string) string { return "operator-shard-" + s }
	leaseOf := func(s string) string { return "clusterstack-operator-shard-" + s }
	startShard := func(ctx context.Context, s string) {
		GinkgoHelper()
		Expect(pl.StartOperatorInstance(ctx, shard(s), append([]string{
			"--watch-label-selector=" + csv1.ShardLabel + "=" + s, "--manage-stacks=false",
			"--leader-elect", "--leader-election-id=" + leaseOf(s),
		}, operatorArgs...)...)).To(Succeed())
	}
	cidr := 0
	createCluster := func(ctx context.Context, name, s string) {
		GinkgoHelper()
		cidr++
		c := newCluster(ns, name, "v1", fmt.Sprintf("10.11%d.0.0/16", cidr))
		c.Labels = map[string]string{csv1.ShardLabel: s}
		Expect(k8s.Create(ctx, c)).To(Succeed())
	}
	ready := func(ctx context.Context, names ...string) {
		GinkgoHelper()
		for _, n := range names {
			// A new Cluster is Ready after Cluster API's topology controller, the workload
			// cluster's start and Flux: beside the fault suite on 2 cores, at times over 4 minutes.
			Eventually(ctx, func(g Gomega) {
				g.Expect(getAddon(ctx, g, ns, n)).To(framework.HaveCondition(csv1.ReadyCondition, metav1.ConditionTrue))
			}).WithTimeout(6*time.Minute).Should(Succeed(), "ClusterAddon %s Ready", n)
		}
	}

	BeforeAll(func(ctx SpecContext) {
		createNamespace(ctx, ns)
		Expect(k8s.Create(ctx, newClusterStack(ns, "v1"))).To(Succeed())
		startShard(ctx, "a")
		startShard(ctx, "b")
		DeferCleanup(func() {
			for _, s := range []string{"a", "b"} {
				Expect(pl.StopOperatorInstance(shard(s))).To(Succeed())
			}
		})
	})

	It("splits the fleet: each shard delivers its Clusters, under its own lease", func(ctx SpecContext) {
		start := time.Now()
		createCluster(ctx, "a1", "a")
		createCluster(ctx, "b1", "b")
		ready(ctx, "a1", "b1")
		GinkgoWriter.Printf("a1 (shard a) and b1 (shard b) Ready after %s\n", time.Since(start).Round(time.Second))
		for _, s := range []string{"a", "b"} {
			lease := &coordinationv1.Lease{}
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: "clusterstack-system", Name: leaseOf(s)}, lease)).To(Succeed())
			Expect(lease.Spec.HolderIdentity).NotTo(BeNil(), "shard %s holds its own lease", s)
		}
	})

	It("shows which instance works: with shard b stopped a new b Cluster gets nothing, a new a Cluster converges", func(ctx SpecContext) {
		Expect(pl.StopOperatorInstance(shard("b"))).To(Succeed())
		start := time.Now()
		createCluster(ctx, "a2", "a")
		createCluster(ctx, "b2", "b")
		ready(ctx, "a2")
		GinkgoWriter.Printf("a2 Ready after %s with shard b stopped\n", time.Since(start).Round(time.Second))
		By("neither the main instance nor shard a touches b2, even once its control plane is up")
		Eventually(ctx, func(g Gomega) {
			c := &clusterv1.Cluster{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "b2"}, c)).To(Succeed())
			g.Expect(c.Status.Initialization.ControlPlaneInitialized).To(HaveValue(BeTrue()))
		}).WithTimeout(3 * time.Minute).Should(Succeed())
		Consistently(ctx, func() error {
			return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "b2"}, &csv1.ClusterAddon{})
		}).WithTimeout(10 * time.Second).Should(MatchError(ContainSubstring("not found")))

		By("shard b started again: b2 converges")
		startShard(ctx, "b")
		start = time.Now()
		ready(ctx, "b2")
		GinkgoWriter.Printf("b2 Ready %s after shard b started again\n", time.Since(start).Round(time.Second))
	})

	It("hands a Cluster moved from shard a to shard b over: nothing recreated, still Ready, now served by b", func(ctx SpecContext) {
		before := addonUIDs(ctx, Default, ns, "a1")
		Expect(before).To(HaveLen(2 + len(getAddon(ctx, Default, ns, "a1").Status.Components)))
		patchCluster(ctx, ns, "a1", func(c *clusterv1.Cluster) { c.Labels[csv1.ShardLabel] = "b" })
		By("shard a stopped: only b can answer for a1 now (it pauses and resumes)")
		Expect(pl.StopOperatorInstance(shard("a"))).To(Succeed())
		patchCluster(ctx, ns, "a1", func(c *clusterv1.Cluster) {
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			c.Annotations[clusterv1.PausedAnnotation] = "true"
		})
		Eventually(ctx, func(g Gomega) {
			g.Expect(getAddon(ctx, g, ns, "a1")).To(framework.HaveCondition(csv1.PausedCondition, metav1.ConditionTrue))
		}).WithTimeout(time.Minute).Should(Succeed())
		patchCluster(ctx, ns, "a1", func(c *clusterv1.Cluster) { delete(c.Annotations, clusterv1.PausedAnnotation) })
		Eventually(ctx, func(g Gomega) {
			a := getAddon(ctx, g, ns, "a1")
			g.Expect(a).To(framework.HaveCondition(csv1.PausedCondition, metav1.ConditionFalse))
			g.Expect(a).To(framework.HaveCondition(csv1.ReadyCondition, metav1.ConditionTrue))
			g.Expect(a).To(framework.HaveCondition(csv1.ObjectsOwnedCondition, metav1.ConditionTrue))
		}).WithTimeout(time.Minute).Should(Succeed())
		Consistently(ctx, func(g Gomega) {
			g.Expect(addonUIDs(ctx, g, ns, "a1")).To(Equal(before))
			g.Expect(getAddon(ctx, g, ns, "a1")).To(framework.HaveCondition(csv1.ReadyCondition, metav1.ConditionTrue))
		}).WithTimeout(5 * time.Second).Should(Succeed())
		GinkgoWriter.Printf("a1 moved to shard b, UIDs kept: %v\n", before)
	})
})

// addonUIDs maps a Cluster's ClusterAddon, values ConfigMap and Flux objects ("Kind/name") to
// their UIDs.
func addonUIDs(ctx context.Context, g Gomega, ns, cluster string) map[string]string {
	a := getAddon(ctx, g, ns, cluster)
	out := map[string]string{"ClusterAddon/" + a.Name: string(a.UID)}
	cm := &corev1.ConfigMap{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: a.Status.ValuesConfigMap}, cm)).To(Succeed())
	out["ConfigMap/"+cm.Name] = string(cm.UID)
	for _, c := range a.Status.Components {
		kind, name, _ := strings.Cut(c.FluxObject, "/")
		var o client.Object = &helmv2.HelmRelease{}
		if kind == kustomizev1.KustomizationKind {
			o = &kustomizev1.Kustomization{}
		}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, o)).To(Succeed(), c.FluxObject)
		out[c.FluxObject] = string(o.GetUID())
	}
	return out
}

// patchCluster changes Cluster ns/name with mutate (merge patch).
func patchCluster(ctx context.Context, ns, name string, mutate func(*clusterv1.Cluster)) {
	GinkgoHelper()
	c := &clusterv1.Cluster{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, c)).To(Succeed())
	patch := client.MergeFrom(c.DeepCopy())
	mutate(c)
	Expect(k8s.Patch(ctx, c, patch)).To(Succeed())
}
