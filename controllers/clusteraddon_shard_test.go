package controllers_test

import (
	"context"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/controllers"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
)

// Sharding by label (docs/sharding.md): the suite's manager is the main instance
// (--watch-label-selector='!clusterstack.io/shard'); this spec starts a second manager as shard
// "a" (--watch-label-selector=clusterstack.io/shard=a --manage-stacks=false), with its own,
// unfiltered cache. No instance serves shard "b".
var _ = Describe("ClusterAddon sharding by label", Ordered, func() {
	const shardA = csv1.ShardLabel + "=a"
	var ns string
	var rel *csv1.ClusterStackRelease
	var stopShard func()

	BeforeAll(func() {
		ns = newNamespace("addon-shard")
		st := newStack("acme", "shard", "1.35").WithHelmAddon("cni", "0.9.0").WithKustomizeAddon("dns")
		v1 := publishRelease(ns, st, "v1")
		newClusterStack(ns, "shard", st).Versions("v1").Create()
		rel = releaseValidated(ns, v1)
		stopShard = startShard(shardA)
		DeferCleanup(func() { stopShard() })
		for _, c := range []struct{ name, shard string }{{"in-a", "a"}, {"in-b", "b"}, {"doomed", "a"}} {
			b := newCluster(ns, c.name).WithClass(st, v1).Initialized()
			// Flux's own sharding key rides along to the generated Flux objects.
			b.c.Labels = map[string]string{csv1.ShardLabel: c.shard, fluxgen.FluxShardLabel: "flux-" + c.shard}
			b.Create()
		}
	})

	It("delivers shard a's Clusters and leaves those of a shard no instance serves alone", func() {
		Eventually(func(g Gomega) {
			a := clusterAddon(g, ns, "in-a")
			g.Expect(a.Status.ValuesConfigMap).NotTo(BeEmpty())
			g.Expect(helmReleaseLabels(g, ns, fluxgen.AddonObjectName("in-a", "cni"))).To(HaveKeyWithValue(fluxgen.FluxShardLabel, "flux-a"))
			readyHelmRelease(g, ns, fluxgen.AddonObjectName("in-a", "cni"), "0.9.0")
			readyKustomization(g, ns, fluxgen.AddonObjectName("in-a", "dns"), rel.Status.Revision)
			// The shard's status reconciler judges its ClusterAddons.
			g.Expect(condition(clusterAddon(g, ns, "in-a").Status.Conditions, csv1.ReadyCondition)).To(
				HaveField("Status", metav1.ConditionTrue))
		}).Should(Succeed())
		Consistently(func(g Gomega) bool {
			return exists(g, &csv1.ClusterAddon{ObjectMeta: objectMeta(ns, "in-b")})
		}).Should(BeFalse(), "neither the main instance nor shard a serves a Cluster of shard b")
	})

	It("leaves everything of a Cluster relabelled away in place, and the new owner adopts it as it is", func() {
		objs := addonObjects(ns, "in-a")
		uids := uidsOf(objs)
		hr := helmRelease(ns, fluxgen.AddonObjectName("in-a", "cni"))

		By("moved to shard b, which no instance serves: nothing is deleted, nothing written")
		relabel(ns, "in-a", "b")
		// Changes a serving instance would act on: CAPI's pause (the ClusterAddon reconciler
		// records it) and a failing HelmRelease (the status reconciler reports it).
		update(&clusterv1.Cluster{ObjectMeta: objectMeta(ns, "in-a")}, func(c *clusterv1.Cluster) {
			c.Annotations = map[string]string{clusterv1.PausedAnnotation: "true"}
		})
		Eventually(func(g Gomega) {
			setStatus(g, hr, func(hr *helmv2.HelmRelease) {
				apimeta.SetStatusCondition(&hr.Status.Conditions, metav1.Condition{Type: meta.ReadyCondition, Status: metav1.ConditionFalse,
					Reason: helmv2.UpgradeFailedReason, Message: "upgrade failed", ObservedGeneration: hr.Generation})
			})
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(uidsOf(reread(g, objs))).To(Equal(uids))
			for _, o := range objs {
				g.Expect(o.GetDeletionTimestamp()).To(BeNil(), "%T %s is being deleted", o, o.GetName())
			}
			a := clusterAddon(g, ns, "in-a")
			g.Expect(condition(a.Status.Conditions, csv1.PausedCondition)).To(BeNil(), "an instance that does not serve the Cluster wrote its ClusterAddon")
			g.Expect(condition(a.Status.Conditions, csv1.ReadyCondition)).To(HaveField("Status", metav1.ConditionTrue), "an instance that does not serve the Cluster judged its ClusterAddon")
		}).Should(Succeed())

		By("moved to the main instance (label removed): it serves the Cluster with the objects as they are")
		relabel(ns, "in-a", "")
		Eventually(func(g Gomega) {
			g.Expect(condition(clusterAddon(g, ns, "in-a").Status.Conditions, csv1.PausedCondition)).To(HaveField("Status", metav1.ConditionTrue))
		}).Should(Succeed())
		update(&clusterv1.Cluster{ObjectMeta: objectMeta(ns, "in-a")}, func(c *clusterv1.Cluster) { c.Annotations = nil })
		Eventually(func(g Gomega) {
			g.Expect(condition(clusterAddon(g, ns, "in-a").Status.Conditions, csv1.ReadyCondition)).To(
				HaveField("Message", ContainSubstring("upgrade failed")))
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			readyHelmRelease(g, ns, hr.Name, "0.9.0")
			a := clusterAddon(g, ns, "in-a")
			g.Expect(condition(a.Status.Conditions, csv1.PausedCondition)).To(HaveField("Status", metav1.ConditionFalse))
			g.Expect(condition(a.Status.Conditions, csv1.ReadyCondition)).To(HaveField("Status", metav1.ConditionTrue))
			g.Expect(condition(a.Status.Conditions, csv1.ObjectsOwnedCondition)).To(HaveField("Status", metav1.ConditionTrue))
		}).Should(Succeed())
		Expect(uidsOf(reread(Default, objs))).To(Equal(uids), "nothing was recreated")
	})

	It("a deleted Cluster of a shard loses its ClusterAddon: the main instance removes the orphan", func() {
		Eventually(func(g Gomega) { clusterAddon(g, ns, "doomed") }).Should(Succeed())
		c := &clusterv1.Cluster{ObjectMeta: objectMeta(ns, "doomed")}
		Expect(k8s.Delete(ctx, c)).To(Succeed())
		Eventually(gone(&csv1.ClusterAddon{ObjectMeta: objectMeta(ns, "doomed")})).Should(Succeed())
	})
})

// startShard runs the operator's per-Cluster controllers in a second manager, as a shard
// started with --watch-label-selector=selector --manage-stacks=false would, and returns its stop.
func startShard(selector string) (stop func()) {
	sel, err := controllers.ParseShardSelector(selector)
	Expect(err).NotTo(HaveOccurred())
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 k8s.Scheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  controllers.CacheOptions(managementNamespace),
		// The suite's manager registered the same controller names in this process.
		Controller: ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
	})
	Expect(err).NotTo(HaveOccurred())
	mctx, cancel := context.WithCancel(context.Background())
	Expect(controllers.Setup(mctx, mgr, controllers.Config{
		Grace:               5 * time.Minute,
		Tags:                &controllers.TagLister{Reader: mgr.GetAPIReader(), List: tags.list},
		ManagementNamespace: managementNamespace,
		WatchLabelSelector:  sel,
		ClusterAddonsOnly:   true,
		// The platform offers Flux shard flux-a: the Clusters' label for it rides along.
		AllowedFluxShards: []string{"flux-a"},
	})).To(Succeed())
	done := make(chan error, 1)
	go func() {
		defer GinkgoRecover()
		done <- mgr.Start(mctx)
	}()
	Eventually(func() bool { return mgr.GetCache().WaitForCacheSync(mctx) }).Should(BeTrue())
	return func() {
		cancel()
		Eventually(done, time.Minute).Should(Receive(BeNil()))
	}
}

// relabel sets the Cluster's shard label (removes it when shard is empty).
func relabel(ns, name, shard string) {
	GinkgoHelper()
	update(&clusterv1.Cluster{ObjectMeta: objectMeta(ns, name)}, func(c *clusterv1.Cluster) {
		if shard == "" {
			delete(c.Labels, csv1.ShardLabel)
			return
		}
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		c.Labels[csv1.ShardLabel] = shard
	})
}

// addonObjects reads a Cluster's ClusterAddon, HelmRelease of cni, Kustomization of dns and
// values ConfigMap.
func addonObjects(ns, cluster string) []client.Object {
	GinkgoHelper()
	var objs []client.Object
	Eventually(func(g Gomega) {
		a := clusterAddon(g, ns, cluster)
		g.Expect(a.Status.ValuesConfigMap).NotTo(BeEmpty())
		objs = reread(g, []client.Object{a, helmRelease(ns, fluxgen.AddonObjectName(cluster, "cni")),
			kustomization(ns, fluxgen.AddonObjectName(cluster, "dns")),
			&corev1.ConfigMap{ObjectMeta: objectMeta(ns, a.Status.ValuesConfigMap)}})
	}).Should(Succeed())
	return objs
}

// reread reads each object again (in place) and returns them.
func reread(g Gomega, objs []client.Object) []client.Object {
	for _, o := range objs {
		g.ExpectWithOffset(1, k8s.Get(ctx, client.ObjectKeyFromObject(o), o)).To(Succeed())
	}
	return objs
}

// uidsOf lists the objects' UIDs.
func uidsOf(objs []client.Object) []types.UID {
	out := make([]types.UID, len(objs))
	for i, o := range objs {
		out[i] = o.GetUID()
	}
	return out
}
