package e2e

import (
	"context"
	"net"
	"net/url"
	"sync"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
	"github.com/clusterstack-io/clusterstack-operator/test/framework"
)

// observation is one sample of a cluster's and its stack's status during a rollout.
type observation struct {
	// At is when the sample was read.
	At                     time.Time
	Available, Progressing metav1.ConditionStatus
	ProgressingMsg         string
	Degraded               metav1.ConditionStatus
	DegradedMsg            string
	Desired, LastApplied   string
	StackAvailableVersion  string
	// Info is the cluster's status of its cluster-info component (the zero value while it has none).
	Info csv1.AddonComponentStatus
}

// observe samples a ClusterAddon and its ClusterStack every 50ms until stop is called.
func observe(ctx context.Context, ns, cluster string) (stop func() []observation) {
	return sampleEvery(ctx, 50*time.Millisecond, func() (observation, bool) {
		a := &csv1.ClusterAddon{}
		cs := &csv1.ClusterStack{}
		if k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster}, a) != nil ||
			k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "aws-base-1-36"}, cs) != nil {
			return observation{}, false
		}
		o := observation{At: time.Now(), Desired: a.Status.DesiredRelease, LastApplied: a.Status.LastAppliedRelease, StackAvailableVersion: cs.Status.Versions.Available}
		if c := apimeta.FindStatusCondition(a.Status.Conditions, csv1.AvailableCondition); c != nil {
			o.Available = c.Status
		}
		if c := apimeta.FindStatusCondition(a.Status.Conditions, csv1.ProgressingCondition); c != nil {
			o.Progressing, o.ProgressingMsg = c.Status, c.Message
		}
		if c := apimeta.FindStatusCondition(a.Status.Conditions, csv1.DegradedCondition); c != nil {
			o.Degraded, o.DegradedMsg = c.Status, c.Message
		}
		for _, c := range a.Status.Components {
			if c.Name == "cluster-info" {
				o.Info = c
			}
		}
		return o, true
	})
}

// sampleEvery calls sample every interval until stop is called (or ctx ends) and returns, from
// stop, the samples it reported as taken, in order. stop takes one more sample first: what the
// caller saw before it stopped the sampling (an Eventually that saw Available) is in the
// samples, even when it changed less than an interval before.
func sampleEvery[T any](ctx context.Context, interval time.Duration, sample func() (T, bool)) (stop func() []T) {
	var mu sync.Mutex
	var out []T
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(finished)
		t := time.NewTicker(interval)
		defer t.Stop()
		take := func() {
			if v, ok := sample(); ok {
				mu.Lock()
				out = append(out, v)
				mu.Unlock()
			}
		}
		for {
			select {
			case <-done:
				take()
				return
			case <-ctx.Done():
				return
			case <-t.C:
				take()
			}
		}
	}()
	return func() []T {
		close(done)
		<-finished
		mu.Lock()
		defer mu.Unlock()
		return out
	}
}

func helmRevision(ctx context.Context, g Gomega, ns, name string) int {
	hr := &helmv2.HelmRelease{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, hr)).To(Succeed())
	rev := framework.HelmRevision(hr)
	g.Expect(rev).To(BeNumerically(">", 0), "HelmRelease %s/%s has no Helm release yet", ns, name)
	return rev
}

var _ = Describe("Cluster addons: values, upgrades, removal, bad input and deletion", Ordered, SpecPriority(7), func() {
	const ns = "addons"
	var wl1, wl2 client.Client

	BeforeAll(func(ctx SpecContext) {
		createNamespace(ctx, ns)
		cs := newClusterStack(ns, "v1", "v2", "v3", "v5", "v6")
		cs.Spec.FollowMovedTags = true // a spec fixes v5 by moving its tag
		Expect(k8s.Create(ctx, cs)).To(Succeed())
	})

	It("installs v1 on both clusters, with each cluster's own values: Progressing, then Available", func(ctx SpecContext) {
		stop := observe(ctx, ns, "a1")
		Expect(k8s.Create(ctx, newCluster(ns, "a1", "v1", "10.1.0.0/16"))).To(Succeed())
		Expect(k8s.Create(ctx, newCluster(ns, "a2", "v1", "10.2.0.0/16"))).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			g.Expect(getAddon(ctx, g, ns, "a1")).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue))
		}).Should(Succeed())
		obs := stop()
		firstAvailable := -1
		for i, o := range obs {
			if o.Available == metav1.ConditionTrue {
				firstAvailable = i
				break
			}
		}
		Expect(firstAvailable).To(BeNumerically(">", 0), "a new cluster is not Available at once")
		Expect(obs[:firstAvailable]).To(ContainElement(HaveField("Progressing", metav1.ConditionTrue)), "a healthy rollout goes Progressing, then Available")
		Expect(obs[:firstAvailable]).NotTo(ContainElement(HaveField("Available", metav1.ConditionTrue)))
		// cluster-info (a Kustomization) follows cni (a HelmRelease): until cni is Ready the
		// ClusterAddon reconciler says why it is not created (waitingFor), and the status
		// reconciler shows that as its message while the Kustomization does not exist.
		waiting := "waiting for HelmRelease/a1-cni to be Ready before creating it"
		Expect(obs).To(ContainElement(HaveField("Info", And(HaveField("WaitingFor", waiting), HaveField("Message", waiting), HaveField("Ready", false)))),
			"the cross-kind order shows in the component's status")

		for _, c := range []string{"a1", "a2"} {
			Eventually(ctx, func(g Gomega) {
				a := getAddon(ctx, g, ns, c)
				g.Expect(a).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue))
				g.Expect(a.Status.LastAppliedRelease).To(Equal(tagPrefix + "v1"))
				g.Expect(a.Status.Progress).To(Equal("2/2"))
				for _, comp := range a.Status.Components {
					g.Expect(comp.WaitingFor).To(BeEmpty(), "component %s is installed", comp.Name)
					g.Expect(comp.Ready).To(BeTrue(), "component %s", comp.Name)
					g.Expect(comp.Message).To(Equal(comp.FluxObject+" is Ready"), "component %s: what Flux says", comp.Name)
				}
			}).Should(Succeed())
		}
		var err error
		wl1, err = workloadClient(ctx, ns, "a1")
		Expect(err).NotTo(HaveOccurred())
		wl2, err = workloadClient(ctx, ns, "a2")
		Expect(err).NotTo(HaveOccurred())
		for c, wl := range map[string]client.Client{"10.1.0.0/16": wl1, "10.2.0.0/16": wl2} {
			info := &corev1.ConfigMap{}
			Expect(wl.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "cluster-info"}, info)).To(Succeed())
			Expect(info.Data).To(HaveKeyWithValue("pod-cidr", c))
			Expect(info.Data).To(HaveKeyWithValue("region", "eu-north-1"))
		}
	})

	It("upgrades a cluster from v1 to v2: Available stays True, unchanged components are not reinstalled, versions move at the end", func(ctx SpecContext) {
		var revBefore int
		Eventually(ctx, func(g Gomega) { revBefore = helmRevision(ctx, g, ns, "a1-cni") }).Should(Succeed())
		// The starting point: v1 delivered everywhere, as the ClusterStack reports it (its
		// roll-up follows the ClusterAddons within RollupDelay).
		Eventually(ctx, func(g Gomega) {
			g.Expect(getStack(ctx, g, ns).Status.Versions.Available).To(Equal("v1"))
		}).Should(Succeed())

		stop := observe(ctx, ns, "a1")
		moveCluster(ctx, ns, "a1", "v2")
		Eventually(ctx, func(g Gomega) {
			a := getAddon(ctx, g, ns, "a1")
			g.Expect(a.Status.LastAppliedRelease).To(Equal(tagPrefix + "v2"))
			g.Expect(a).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue))
			g.Expect(a).To(framework.HaveCondition(csv1.ProgressingCondition, metav1.ConditionFalse))
		}).Should(Succeed())
		Eventually(ctx, func(g Gomega) {
			g.Expect(getStack(ctx, g, ns).Status.Versions.Available).To(Equal("v2"))
		}).Should(Succeed())
		obs := stop()

		Expect(obs).To(ContainElement(And(
			HaveField("Progressing", metav1.ConditionTrue),
			HaveField("ProgressingMsg", ContainSubstring("upgrading from "+tagPrefix+"v1 to "+tagPrefix+"v2")),
		)), "the ClusterAddon shows from-version and to-version while upgrading")
		for _, o := range obs {
			Expect(o.Available).To(Equal(metav1.ConditionTrue), "Available does not go False during a normal upgrade")
			if o.LastApplied != tagPrefix+"v2" {
				Expect(o.StackAvailableVersion).To(Equal("v1"), "status.versions.available moves only when v2 is fully available")
			}
		}

		info := &corev1.ConfigMap{}
		Eventually(ctx, func(g Gomega) {
			g.Expect(wl1.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "cluster-info"}, info)).To(Succeed())
			g.Expect(info.Data).To(HaveKeyWithValue("stack-version", "v2"))
		}).Should(Succeed())
		hr := &helmv2.HelmRelease{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a1-cni"}, hr)).To(Succeed())
		Expect(hr.Spec.ChartRef.Name).To(Equal(tagPrefix + "v2-cni"))
		Eventually(ctx, func(g Gomega) {
			g.Expect(helmRevision(ctx, g, ns, "a1-cni")).To(Equal(revBefore), "cni did not change between v1 and v2: not reinstalled")
		}).Should(Succeed())
		Expect(wl2.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "cluster-info"}, info)).To(Succeed())
		Expect(info.Data).NotTo(HaveKey("stack-version"), "a2 stays on v1")
	})

	It("removes a component dropped by the new release from the clusters that upgrade, and only from those", func(ctx SpecContext) {
		moveCluster(ctx, ns, "a1", "v3")
		Eventually(ctx, func(g Gomega) {
			err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: fluxgen.AddonObjectName("a1", "cluster-info")}, &kustomizev1.Kustomization{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
			err = wl1.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "cluster-info"}, &corev1.ConfigMap{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "pruned from the workload cluster")
			a := getAddon(ctx, g, ns, "a1")
			g.Expect(a.Status.LastAppliedRelease).To(Equal(tagPrefix + "v3"))
			g.Expect(a.Status.Components).To(HaveLen(1))
		}).Should(Succeed())
		Expect(wl2.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "cluster-info"}, &corev1.ConfigMap{})).To(Succeed())
	})

	It("reports a template that fails to render on that cluster only, keeps what is installed, and recovers when fixed", func(ctx SpecContext) {
		// What a2 has installed: the operator's Flux objects and values ConfigMaps (its
		// ClusterAddon's status reports the failure), and what Flux delivered into the cluster.
		installed := func(g Gomega) map[string]objectState {
			objs := generatedObjects(ctx, g, ns, client.MatchingLabels{csv1.ClusterNameLabel: "a2"})
			delete(objs, "ClusterAddon/a2")
			return objs
		}
		generated := installed(Default)
		delivered := deliveredObjects(ctx, Default, wl2)
		Expect(generated).To(And(HaveKey("HelmRelease/a2-cni"), HaveKey("Kustomization/"+fluxgen.AddonObjectName("a2", "cluster-info"))))
		Expect(delivered).To(And(HaveKey("DaemonSet kube-system/cni"), HaveKey("ConfigMap kube-system/cluster-info"), HaveKey("Deployment kube-system/cluster-info")))

		moveCluster(ctx, ns, "a2", "v5")
		Eventually(ctx, func(g Gomega) {
			a := getAddon(ctx, g, ns, "a2")
			g.Expect(a).To(framework.HaveCondition(csv1.DegradedCondition, metav1.ConditionTrue, "cluster "+ns+"/a2", "component cni", "cluster-addon/cni/overwrite.yaml", "missing from the data", "zone:"))
			g.Expect(a).To(framework.HaveCondition(csv1.ValuesRenderedCondition, metav1.ConditionFalse, "overwrite.yaml"))
		}).Should(Succeed())
		Expect(getAddon(ctx, Default, ns, "a1")).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue), "other clusters are unaffected")
		// Nothing installed is removed or replaced while the values do not render. The operator
		// looks at the cluster again on events and at the stack's interval (10s, when it lists the
		// stack's tags); Flux re-applies these objects every 10 minutes, which removes nothing as
		// long as their spec is unchanged: unchanged generations and specs say it never will.
		Consistently(ctx, func(g Gomega) {
			g.Expect(installed(g)).To(Equal(generated),
				"the ClusterAddon's Flux objects and values ConfigMaps are kept as they are")
			g.Expect(deliveredObjects(ctx, g, wl2)).To(Equal(delivered), "the objects in the workload cluster are kept (same UIDs)")
		}).WithTimeout(2 * stackInterval).WithPolling(time.Second).Should(Succeed())

		By("fixing the stack (the v5 tag moves to a good commit), the cluster recovers by itself")
		publishVersion(ctx, "v5", nil)
		Eventually(ctx, func(g Gomega) {
			a := getAddon(ctx, g, ns, "a2")
			g.Expect(a).To(framework.HaveCondition(csv1.DegradedCondition, metav1.ConditionFalse))
			g.Expect(a).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue))
			g.Expect(a.Status.LastAppliedRelease).To(Equal(tagPrefix + "v5"))
		}).WithTimeout(3 * time.Minute).Should(Succeed())
		Expect(deliveredObjects(ctx, Default, wl2)).To(Equal(delivered), "the upgrade to v5 changed the objects in place")
	})

	It("reports a chart that fails to install after the grace period, naming the Flux object and what Flux said", func(ctx SpecContext) {
		gw := watchGrace(ctx, "ClusterAddon "+ns+"/a1", addonDegraded(ns, "a1", "v6"))
		fault := moveCluster(ctx, ns, "a1", "v6")
		Eventually(ctx, func(g Gomega) {
			a := getAddon(ctx, g, ns, "a1")
			// Once helm-controller rolled back, its Ready message says only that ("Helm rollback
			// to previous release … succeeded"); the condition says what failed, then that.
			g.Expect(a).To(framework.HaveCondition(csv1.DegradedCondition, metav1.ConditionTrue, "cluster "+ns+"/a1", "component cni", "HelmRelease/a1-cni",
				"Helm upgrade failed for release kube-system/cni", "(rolled back to the previous release)"))
			g.Expect(a).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionFalse))
		}).Should(Succeed())
		gw.Check(fault)
		ds := &appsv1.DaemonSet{}
		Expect(wl1.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "cni"}, ds)).To(Succeed(), "the installed version stays")
		Expect(getAddon(ctx, Default, ns, "a2")).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue), "other clusters are unaffected")

		var events corev1.EventList
		Expect(k8s.List(ctx, &events, client.InNamespace(ns), client.MatchingFields{"involvedObject.name": "a1"})).To(Succeed())
		Expect(events.Items).To(ContainElement(And(HaveField("Reason", "DegradedTrue"), HaveField("Type", corev1.EventTypeWarning))))

		By("moving the cluster back to a working release, it recovers")
		moveCluster(ctx, ns, "a1", "v3")
		Eventually(ctx, func(g Gomega) {
			a := getAddon(ctx, g, ns, "a1")
			g.Expect(a).To(framework.HaveCondition(csv1.DegradedCondition, metav1.ConditionFalse))
			g.Expect(a).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue))
			g.Expect(a.Status.LastAppliedRelease).To(Equal(tagPrefix + "v3"))
		}).Should(Succeed())
	})

	It("re-renders the values when an object the templates read changes, and Flux applies them at once", func(ctx SpecContext) {
		// The topology variable feeds the AWSCluster's region (a ClusterClass patch, applied by
		// the stand-in topology controller); the cluster-info component reads .InfraCluster.spec.region.
		c := &clusterv1.Cluster{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a2"}, c)).To(Succeed())
		patch := client.MergeFrom(c.DeepCopy())
		c.Spec.Topology.Variables = []clusterv1.ClusterVariable{{Name: "region", Value: framework.JSON(`"eu-south-2"`)}}
		Expect(k8s.Patch(ctx, c, patch)).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			cm := valuesOf(ctx, g, ns, "a2")
			g.Expect(cm.Data).To(HaveKeyWithValue("infra_region", "eu-south-2"))
			info := &corev1.ConfigMap{}
			g.Expect(wl2.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "cluster-info"}, info)).To(Succeed())
			g.Expect(info.Data).To(HaveKeyWithValue("region", "eu-south-2"))
		}).WithTimeout(time.Minute).Should(Succeed(), "Flux reacts to the labelled ConfigMap without waiting for its interval")
	})

	It("reports an unreachable workload cluster after the grace period and recovers when it is back", func(ctx SpecContext) {
		// The fault: a1's workload API server stops (its etcd, data and certificates stay), as an
		// outage of its control plane. localinfra leaves a cluster whose API server was stopped
		// so alone (it neither restarts it nor rewrites the kubeconfig Secret), so the fault
		// lasts until the spec ends it.
		cfg, err := pl.WorkloadConfig(ctx, ns, "a1")
		Expect(err).NotTo(HaveOccurred())
		server, err := url.Parse(cfg.Host)
		Expect(err).NotTo(HaveOccurred())
		endpoint := server.Host
		kubeconfig := &corev1.Secret{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a1-kubeconfig"}, kubeconfig)).To(Succeed())
		// faultInPlace: the kubeconfig Secret is the one from before the fault and its API server
		// refuses connections.
		faultInPlace := func(g Gomega) {
			s := &corev1.Secret{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(kubeconfig), s)).To(Succeed())
			g.Expect(s.Data).To(Equal(kubeconfig.Data), "the kubeconfig Secret is unchanged")
			conn, err := net.DialTimeout("tcp", endpoint, time.Second)
			if err == nil {
				_ = conn.Close()
			}
			g.Expect(err).To(MatchError(ContainSubstring("connection refused")), "the workload API server %s is still down", endpoint)
		}

		// The stop is the only fault: a1's HelmRelease is Ready at its current spec before it
		// (helm-controller may still be settling the previous spec's rollback, and an object not
		// Ready since before the fault starts its grace period then).
		Eventually(ctx, func(g Gomega) {
			hr := &helmv2.HelmRelease{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a1-cni"}, hr)).To(Succeed())
			g.Expect(readyStatus(hr.Status.Conditions)).To(Equal(metav1.ConditionTrue), "HelmRelease a1-cni Ready: %v", hr.Status.Conditions)
			g.Expect(hr.Status.ObservedGeneration).To(Equal(hr.Generation))
			a := getAddon(ctx, g, ns, "a1")
			g.Expect(a).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue))
			g.Expect(a).To(framework.HaveCondition(csv1.DegradedCondition, metav1.ConditionFalse))
			// The operator has seen it healthy: no record of an earlier failure whose clock a
			// retry would keep running.
			g.Expect(a.Status.Unhealthy).To(BeEmpty(), "ClusterAddon a1 still records unhealthy objects")
		}).Should(Succeed())
		gw := watchGrace(ctx, "ClusterAddon "+ns+"/a1", addonDegraded(ns, "a1", ""))
		fault := time.Now()
		Expect(pl.StopWorkloadAPIServer(ns, "a1")).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(pl.StartWorkloadAPIServer(ctx, ns, "a1")).To(Succeed()) })
		// Flux finds out when it next reconciles the HelmRelease (every 10 minutes): now.
		requestReconcile(ctx, ns, "a1-cni", &helmv2.HelmRelease{})
		Eventually(ctx, func(g Gomega) {
			a := getAddon(ctx, g, ns, "a1")
			g.Expect(a).To(framework.HaveCondition(csv1.DegradedCondition, metav1.ConditionTrue, "cluster "+ns+"/a1", "HelmRelease/a1-cni", endpoint, "connection refused"))
			faultInPlace(g)
		}).Should(Succeed())
		gw.Check(fault)
		Expect(getAddon(ctx, Default, ns, "a2")).To(framework.HaveCondition(csv1.DegradedCondition, metav1.ConditionFalse), "other clusters are unaffected")

		Expect(pl.StartWorkloadAPIServer(ctx, ns, "a1")).To(Succeed())
		requestReconcile(ctx, ns, "a1-cni", &helmv2.HelmRelease{})
		Eventually(ctx, func(g Gomega) {
			a := getAddon(ctx, g, ns, "a1")
			g.Expect(a).To(framework.HaveCondition(csv1.DegradedCondition, metav1.ConditionFalse))
			g.Expect(a).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue))
		}).Should(Succeed())
	})

	It("labels every generated object so a cluster's, a release's or a stack's objects can be selected", func(ctx SpecContext) {
		var hrs helmv2.HelmReleaseList
		Expect(k8s.List(ctx, &hrs, client.InNamespace(ns), client.MatchingLabels{csv1.ClusterNameLabel: "a2"})).To(Succeed())
		Expect(hrs.Items).To(ConsistOf(HaveField("ObjectMeta.Name", "a2-cni")))
		var kss kustomizev1.KustomizationList
		Expect(k8s.List(ctx, &kss, client.InNamespace(ns), client.MatchingLabels{csv1.ReleaseLabel: tagPrefix + "v5"})).To(Succeed())
		Expect(kss.Items).To(ConsistOf(HaveField("ObjectMeta.Name", fluxgen.AddonObjectName("a2", "cluster-info"))))
		Expect(k8s.List(ctx, &hrs, client.InNamespace(ns), client.MatchingLabels{csv1.StackLabel: "aws-base-1-36", csv1.ComponentLabel: "cluster-class"})).To(Succeed())
		Expect(hrs.Items).To(HaveLen(5), "one cluster-class HelmRelease per pinned release")
		for _, hr := range hrs.Items {
			Expect(hr.Labels).To(HaveKeyWithValue(csv1.ManagedByLabel, csv1.ManagedByValue))
			Expect(hr.Labels).NotTo(HaveKey(csv1.ClusterNameLabel))
		}
	})

	It("creates nothing for a Cluster whose ClusterClass belongs to no stack", func(ctx SpecContext) {
		c := newCluster(ns, "plain", "v1", "10.9.0.0/16")
		c.Spec.Topology.ClassRef.Name = "some-other-class"
		Expect(k8s.Create(ctx, c)).To(Succeed())
		Consistently(ctx, func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "plain"}, &csv1.ClusterAddon{}))
		}, 5*time.Second, 500*time.Millisecond).Should(BeTrue())
		awaitGone(ctx, c, 2*time.Minute)
	})

	It("removes a deleted Cluster's generated objects without hanging", func(ctx SpecContext) {
		Expect(k8s.Delete(ctx, &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a2"}})).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			for _, o := range []client.Object{&csv1.ClusterAddon{}, &helmv2.HelmRelease{}, &kustomizev1.Kustomization{}, &corev1.ConfigMap{}} {
				var list client.ObjectList
				switch o.(type) {
				case *csv1.ClusterAddon:
					list = &csv1.ClusterAddonList{}
				case *helmv2.HelmRelease:
					list = &helmv2.HelmReleaseList{}
				case *kustomizev1.Kustomization:
					list = &kustomizev1.KustomizationList{}
				default:
					list = &corev1.ConfigMapList{}
				}
				g.Expect(k8s.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{csv1.ClusterNameLabel: "a2"})).To(Succeed())
				g.Expect(apimeta.LenList(list)).To(BeZero(), "%T of a2 left", o)
			}
			err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a2"}, &csv1.ClusterAddon{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
			err = k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a2"}, &clusterv1.Cluster{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the Cluster is gone")
		}).WithTimeout(90 * time.Second).Should(Succeed())
	})
})

// requestReconcile asks Flux to reconcile an object now, as `flux reconcile` does.
func requestReconcile(ctx context.Context, ns, name string, obj client.Object) {
	GinkgoHelper()
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj)).To(Succeed())
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann["reconcile.fluxcd.io/requestedAt"] = time.Now().Format(time.RFC3339Nano)
	obj.SetAnnotations(ann)
	Expect(k8s.Patch(ctx, obj, patch)).To(Succeed())
}

// A component whose kind a release changes has two Flux objects of the same name in turn; the
// old one must be gone (its objects uninstalled or pruned) before the new one installs, or the
// old one's removal could delete what the new one had just installed and reported Ready.
var _ = Describe("A component whose kind changes between releases", Ordered, func() {
	const ns, cluster, cidr = "kind-change", "k1", "10.17.0.0/16"
	name := fluxgen.AddonObjectName(cluster, "cluster-info")
	var wl client.Client

	// replaceSamples samples, every 50 ms until stopped, whether the new object exists while the
	// old one still does (the new one is read first: seen after it, the old one existed then).
	replaceSamples := func(ctx context.Context, newObj, oldObj client.Object) (stop func() []bool) {
		return sampleEvery(ctx, 50*time.Millisecond, func() (bool, bool) {
			key := client.ObjectKey{Namespace: ns, Name: name}
			errNew := k8s.Get(ctx, key, newObj)
			errOld := k8s.Get(ctx, key, oldObj)
			if client.IgnoreNotFound(errNew) != nil || client.IgnoreNotFound(errOld) != nil {
				return false, false
			}
			return errNew == nil && errOld == nil, true
		})
	}
	infoAvailable := func(ctx context.Context, g Gomega, v string, kind csv1.ComponentKind) {
		a := getAddon(ctx, g, ns, cluster)
		g.Expect(a).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue))
		g.Expect(a.Status.LastAppliedRelease).To(Equal(tagPrefix + v))
		g.Expect(a.Status.Components).To(ContainElement(And(HaveField("Name", "cluster-info"), HaveField("Kind", kind), HaveField("Ready", true))))
	}

	BeforeAll(func(ctx SpecContext) {
		createNamespace(ctx, ns)
		Expect(k8s.Create(ctx, newClusterStack(ns, "v1", helmInfoVersion))).To(Succeed())
		Expect(k8s.Create(ctx, newCluster(ns, cluster, "v1", cidr))).To(Succeed())
		Eventually(ctx, func(g Gomega) { infoAvailable(ctx, g, "v1", csv1.ComponentKindKustomize) }).Should(Succeed())
		var err error
		wl, err = workloadClient(ctx, ns, cluster)
		Expect(err).NotTo(HaveOccurred())
	})

	It("from a kustomize directory to a Helm chart: the Kustomization is pruned before the HelmRelease installs, and what it installs stays", func(ctx SpecContext) {
		stop := replaceSamples(ctx, &helmv2.HelmRelease{}, &kustomizev1.Kustomization{})
		moveCluster(ctx, ns, cluster, helmInfoVersion)
		Eventually(ctx, func(g Gomega) { infoAvailable(ctx, g, helmInfoVersion, csv1.ComponentKindHelm) }).Should(Succeed())
		Expect(stop()).NotTo(ContainElement(true), "HelmRelease %s existed while Kustomization %s did", name, name)
		Expect(exists(ctx, client.ObjectKey{Namespace: ns, Name: name}, &kustomizev1.Kustomization{})).To(BeFalse())
		Consistently(ctx, func(g Gomega) {
			info := &corev1.ConfigMap{}
			g.Expect(wl.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "cluster-info"}, info)).To(Succeed())
			g.Expect(info.Data).To(HaveKeyWithValue("delivered-by", "helm"))
			g.Expect(info.Data).To(HaveKeyWithValue("pod-cidr", cidr))
			g.Expect(info.Annotations).To(HaveKeyWithValue("meta.helm.sh/release-name", "cluster-info"))
			g.Expect(wl.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "cluster-info"}, &appsv1.Deployment{})).To(Succeed())
		}).WithTimeout(5*time.Second).Should(Succeed(), "the Helm chart's objects stay in the workload cluster")
	})

	It("and back: the HelmRelease is uninstalled before the Kustomization applies, and what it applies stays", func(ctx SpecContext) {
		stop := replaceSamples(ctx, &kustomizev1.Kustomization{}, &helmv2.HelmRelease{})
		moveCluster(ctx, ns, cluster, "v1")
		Eventually(ctx, func(g Gomega) { infoAvailable(ctx, g, "v1", csv1.ComponentKindKustomize) }).Should(Succeed())
		Expect(stop()).NotTo(ContainElement(true), "Kustomization %s existed while HelmRelease %s did", name, name)
		Consistently(ctx, func(g Gomega) {
			info := &corev1.ConfigMap{}
			g.Expect(wl.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "cluster-info"}, info)).To(Succeed())
			g.Expect(info.Data).NotTo(HaveKey("delivered-by"))
			g.Expect(info.Data).To(HaveKeyWithValue("pod-cidr", cidr))
			g.Expect(wl.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "cluster-info"}, &appsv1.Deployment{})).To(Succeed())
		}).WithTimeout(5*time.Second).Should(Succeed(), "the kustomize directory's objects stay in the workload cluster")
	})
})
