package controllers_test

import (
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
)

// Pruning of dropped components (ClusterAddonReconciler.pruneStale, pruneValues): when a
// Cluster moves to a release without one of its components, that component's Flux object is
// deleted, not suspended, so that Flux uninstalls it from the workload cluster, with a
// ComponentRemoved Event; the other components' objects are updated in place, the values
// ConfigMap of the old release goes once Flux has observed every object's new spec, and objects
// the ClusterAddon does not control stay.
var _ = Describe("ClusterAddon pruning of dropped components", func() {
	It("deletes the Flux object of a component the new release dropped, and touches nothing else", func() {
		ns := newNamespace("addon-prune")
		st1 := newStack("acme", "prune", "1.36").WithHelmAddon("cni", "1.0.0").WithKustomizeAddon("dns").WithHelmAddon("metrics", "1.0.0")
		st2 := newStack("acme", "prune", "1.36").WithHelmAddon("cni", "1.1.0").WithKustomizeAddon("dns")
		v1, v2 := publishRelease(ns, st1, "v1"), publishRelease(ns, st2, "v2")
		newClusterStack(ns, "prune", st1).Versions("v1", "v2").Create()
		rel1 := releaseValidated(ns, v1)
		releaseValidated(ns, v2)
		cni, dns, metrics := fluxgen.AddonObjectName("c1", "cni"), fluxgen.AddonObjectName("c1", "dns"), fluxgen.AddonObjectName("c1", "metrics")
		// A HelmRelease labelled as c1's that its ClusterAddon does not control.
		bystander := &helmv2.HelmRelease{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c1-bystander", Labels: map[string]string{
				csv1.ManagedByLabel: csv1.ManagedByValue, csv1.ClusterNameLabel: "c1", csv1.ComponentLabel: "bystander"}},
			Spec: helmv2.HelmReleaseSpec{
				ChartRef: &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.HelmChartKind, Name: "bystander"},
				Interval: metav1.Duration{Duration: time.Hour},
			},
		}
		Expect(k8s.Create(ctx, bystander)).To(Succeed())
		c := newCluster(ns, "c1").WithClass(st1, v1).Initialized().Create()

		By("release v1's three components are delivered; Flux puts its finalizer on their objects")
		Eventually(func(g Gomega) {
			readyHelmRelease(g, ns, cni, "1.0.0")
			readyKustomization(g, ns, dns, rel1.Status.Revision)
			readyHelmRelease(g, ns, metrics, "1.0.0")
		}).Should(Succeed())
		uids := map[string]types.UID{}
		for _, o := range []client.Object{helmRelease(ns, cni), kustomization(ns, dns), helmRelease(ns, metrics)} {
			update(o, func(o client.Object) { controllerutil.AddFinalizer(o, helmv2.HelmReleaseFinalizer) })
			uids[o.GetName()] = o.GetUID()
		}
		v1Values := &corev1.ConfigMap{ObjectMeta: objectMeta(ns, fluxgen.ValuesConfigMapName("c1", v1))}
		Expect(k8s.Get(ctx, key(ns, v1Values.Name), v1Values)).To(Succeed())

		By("the Cluster moves to v2, which has no metrics: its HelmRelease is deleted, not suspended")
		moveCluster(c, v2)
		Eventually(func(g Gomega) {
			hr := helmRelease(ns, metrics)
			g.Expect(k8s.Get(ctx, key(ns, metrics), hr)).To(Succeed())
			g.Expect(hr.DeletionTimestamp).NotTo(BeNil())
			g.Expect(hr.Spec.Suspend).To(BeFalse(), "HelmRelease %s was suspended: Flux would leave metrics installed in the workload cluster", metrics)
		}).Should(Succeed())
		Eventually(func(g Gomega) []string { return events(g, ns, "ClusterAddon", "c1", "ComponentRemoved") }).Should(ConsistOf(
			metrics + " is not part of release " + v2 + ": removed from the cluster"))

		By("the components v2 keeps are updated in place; v1's values go; the bystander stays")
		Eventually(func(g Gomega) {
			hr := helmRelease(ns, cni)
			g.Expect(k8s.Get(ctx, key(ns, cni), hr)).To(Succeed())
			g.Expect(hr.Spec.ChartRef.Name).To(Equal(fluxgen.AddonChartName(v2, "cni")))
			ks := kustomization(ns, dns)
			g.Expect(k8s.Get(ctx, key(ns, dns), ks)).To(Succeed())
			g.Expect(ks.Spec.PostBuild.SubstituteFrom).To(Equal([]kustomizev1.SubstituteReference{{Kind: "ConfigMap", Name: fluxgen.ValuesConfigMapName("c1", v2)}}))
			for _, o := range []client.Object{hr, ks} {
				g.Expect(o.GetUID()).To(Equal(uids[o.GetName()]), "%s was replaced", o.GetName())
				g.Expect(o.GetDeletionTimestamp()).To(BeNil(), "%s is being deleted", o.GetName())
				g.Expect(o.GetLabels()).To(HaveKeyWithValue(csv1.ReleaseLabel, v2))
			}
			g.Expect(exists(g, &corev1.ConfigMap{ObjectMeta: objectMeta(ns, fluxgen.ValuesConfigMapName("c1", v2))})).To(BeTrue())
		}).Should(Succeed())
		By("v1's values stay until Flux has acted on the objects' new spec: a controller still reconciling from its cached spec reads them")
		Consistently(func(g Gomega) bool { return exists(g, v1Values) }, "2s").Should(BeTrue(),
			"v1's values ConfigMap went while Flux had not observed the switch to v2's")
		rel2 := releaseValidated(ns, v2)
		Eventually(func(g Gomega) { readyHelmRelease(g, ns, cni, "1.1.0") }).Should(Succeed())
		Consistently(func(g Gomega) bool { return exists(g, v1Values) }, "2s").Should(BeTrue(),
			"v1's values ConfigMap went while kustomize-controller had not observed the Kustomization's switch to v2's")
		Eventually(func(g Gomega) { readyKustomization(g, ns, dns, rel2.Status.Revision) }).Should(Succeed())
		Eventually(gone(v1Values)).Should(Succeed())
		cur := helmRelease(ns, bystander.Name)
		Expect(k8s.Get(ctx, key(ns, bystander.Name), cur)).To(Succeed())
		Expect(cur.ResourceVersion).To(Equal(bystander.ResourceVersion), "the bystander HelmRelease was written to")
		Eventually(func(g Gomega) []string {
			var names []string
			for _, comp := range clusterAddon(g, ns, "c1").Status.Components {
				names = append(names, comp.Name+"@"+comp.Release)
			}
			return names
		}).Should(Equal([]string{"cni@" + v2, "dns@" + v2}))

		By("helm-controller uninstalls metrics and lets its HelmRelease go")
		update(helmRelease(ns, metrics), func(hr *helmv2.HelmRelease) { controllerutil.RemoveFinalizer(hr, helmv2.HelmReleaseFinalizer) })
		Eventually(gone(helmRelease(ns, metrics))).Should(Succeed())
		Expect(exists(Default, helmRelease(ns, cni))).To(BeTrue())
	})
})

// A component whose kind a release changes (a Helm chart that becomes a kustomize directory, or
// the reverse) has two objects of the same name: the old one is deleted first, so that Flux
// uninstalls or prunes what it installed, and the new one is created only once it is gone (side
// by side, the uninstall could remove what the new object had just applied and reported Ready).
var _ = Describe("ClusterAddon components whose kind changes", func() {
	It("removes the old object first and creates the new one only when it is gone, both ways", func() {
		ns := newNamespace("addon-kind")
		st1 := newStack("acme", "kind", "1.36").WithHelmAddon("cni", "1.0.0").WithKustomizeAddon("dns")
		st2 := newStack("acme", "kind", "1.36").WithKustomizeAddon("cni").WithKustomizeAddon("dns")
		v1, v2 := publishRelease(ns, st1, "v1"), publishRelease(ns, st2, "v2")
		newClusterStack(ns, "kind", st1).Versions("v1", "v2").Create()
		rel1 := releaseValidated(ns, v1)
		rel2 := releaseValidated(ns, v2)
		cni, dns := fluxgen.AddonObjectName("c1", "cni"), fluxgen.AddonObjectName("c1", "dns")
		c := newCluster(ns, "c1").WithClass(st1, v1).Initialized().Create()
		Eventually(func(g Gomega) {
			readyHelmRelease(g, ns, cni, "1.0.0")
			readyKustomization(g, ns, dns, rel1.Status.Revision)
		}).Should(Succeed())
		update(helmRelease(ns, cni), func(hr *helmv2.HelmRelease) { controllerutil.AddFinalizer(hr, helmv2.HelmReleaseFinalizer) })

		By("the Cluster moves to v2, where cni is a kustomize directory: its HelmRelease is deleted (not suspended) and no Kustomization is made while it exists")
		moveCluster(c, v2)
		waiting := "waiting for HelmRelease/" + cni + ", which release " + v2 + " replaces with a Kustomization, to be removed before creating it"
		Eventually(func(g Gomega) {
			hr := helmRelease(ns, cni)
			g.Expect(k8s.Get(ctx, key(ns, cni), hr)).To(Succeed())
			g.Expect(hr.DeletionTimestamp).NotTo(BeNil())
			g.Expect(hr.Spec.Suspend).To(BeFalse(), "a suspended HelmRelease is not uninstalled")
			g.Expect(clusterAddon(g, ns, "c1").Status.Components).To(ContainElement(And(
				HaveField("Name", "cni"), HaveField("Kind", csv1.ComponentKindKustomize), HaveField("Release", v2), HaveField("WaitingFor", waiting))))
		}).Should(Succeed())
		Consistently(func(g Gomega) bool { return exists(g, kustomization(ns, cni)) }, "2s").Should(BeFalse(),
			"the Kustomization was created while the HelmRelease it replaces was still uninstalling")
		Eventually(func(g Gomega) []string { return events(g, ns, "ClusterAddon", "c1", "ComponentReplaced") }).Should(ConsistOf(
			"HelmRelease/" + cni + " is removed from Cluster c1 before Kustomization/" + cni + " replaces it: release " + v2 + " delivers component cni as a Kustomization"))

		By("helm-controller lets the HelmRelease go: the Kustomization is created")
		update(helmRelease(ns, cni), func(hr *helmv2.HelmRelease) { controllerutil.RemoveFinalizer(hr, helmv2.HelmReleaseFinalizer) })
		Eventually(func(g Gomega) {
			readyKustomization(g, ns, cni, rel2.Status.Revision)
			readyKustomization(g, ns, dns, rel2.Status.Revision)
			g.Expect(condition(clusterAddon(g, ns, "c1").Status.Conditions, csv1.AvailableCondition)).To(HaveField("Status", metav1.ConditionTrue))
		}).Should(Succeed())
		Expect(events(Default, ns, "ClusterAddon", "c1", "ComponentRemoved")).To(BeEmpty(), "the replaced object was reported as a dropped component")

		By("back to v1: the Kustomization is pruned first, then the HelmRelease is created")
		update(kustomization(ns, cni), func(ks *kustomizev1.Kustomization) {
			controllerutil.AddFinalizer(ks, kustomizev1.KustomizationFinalizer)
		})
		moveCluster(c, v1)
		Eventually(func(g Gomega) {
			ks := kustomization(ns, cni)
			g.Expect(k8s.Get(ctx, key(ns, cni), ks)).To(Succeed())
			g.Expect(ks.DeletionTimestamp).NotTo(BeNil())
			g.Expect(ks.Spec.Suspend).To(BeFalse(), "a suspended Kustomization is not pruned")
		}).Should(Succeed())
		Consistently(func(g Gomega) bool { return exists(g, helmRelease(ns, cni)) }, "2s").Should(BeFalse())
		update(kustomization(ns, cni), func(ks *kustomizev1.Kustomization) {
			controllerutil.RemoveFinalizer(ks, kustomizev1.KustomizationFinalizer)
		})
		Eventually(func(g Gomega) { readyHelmRelease(g, ns, cni, "1.0.0") }).Should(Succeed())
	})
})
