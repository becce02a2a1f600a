package controllers_test

import (
	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
)

// The cross-kind ordering gate (ClusterAddonReconciler.applyFluxObjects): Flux orders a cluster's
// addons only within a kind (dependsOn between HelmReleases, between Kustomizations), so a
// component that follows one of another kind in addon order is created only once its
// predecessor is Ready; the component's status says what it waits for.
var _ = Describe("ClusterAddon ordering across Flux kinds", func() {
	It("creates a component after one of another kind only once that one is Ready", func() {
		ns := newNamespace("addon-order")
		// Addon order is alphabetical here: cni (Helm), dns (Kustomize), storage (Helm).
		st := newStack("acme", "order", "1.36").WithHelmAddon("cni", "1.0.0").WithKustomizeAddon("dns").WithHelmAddon("storage", "2.0.0")
		v1 := publishRelease(ns, st, "v1")
		newClusterStack(ns, "order", st).Versions("v1").Create()
		rel := releaseValidated(ns, v1)
		c := newCluster(ns, "c1").WithClass(st, v1).Initialized().Create()
		cni, dns, storage := fluxgen.AddonObjectName("c1", "cni"), fluxgen.AddonObjectName("c1", "dns"), fluxgen.AddonObjectName("c1", "storage")
		waitCNI := "waiting for HelmRelease/" + cni + " to be Ready before creating it"
		waitDNS := "waiting for Kustomization/" + dns + " to be Ready before creating it"

		By("only the first component's HelmRelease is created; the Kustomization waits for it")
		Eventually(func(g Gomega) {
			msgs := componentMessages(clusterAddon(g, ns, "c1"))
			g.Expect(msgs).To(HaveKeyWithValue("dns", waitCNI))
			g.Expect(msgs).To(HaveKeyWithValue("storage", waitDNS))
			g.Expect(exists(g, helmRelease(ns, cni))).To(BeTrue())
		}).Should(Succeed())
		Expect(exists(Default, kustomization(ns, dns))).To(BeFalse(), "Kustomization %s was created before HelmRelease %s is Ready", dns, cni)
		Expect(exists(Default, helmRelease(ns, storage))).To(BeFalse(), "HelmRelease %s was created before Kustomization %s is Ready", storage, dns)

		By("the HelmRelease is Ready: the Kustomization is created; the next HelmRelease waits for it")
		Eventually(func(g Gomega) {
			readyHelmRelease(g, ns, cni, "1.0.0")
			g.Expect(exists(g, kustomization(ns, dns))).To(BeTrue())
		}).Should(Succeed())
		Eventually(func(g Gomega) map[string]string { return componentMessages(clusterAddon(g, ns, "c1")) }).Should(HaveKeyWithValue("storage", waitDNS))
		Expect(exists(Default, helmRelease(ns, storage))).To(BeFalse(), "HelmRelease %s was created before Kustomization %s is Ready", storage, dns)
		ks := kustomization(ns, dns)
		Expect(k8s.Get(ctx, key(ns, dns), ks)).To(Succeed())
		Expect(ks.Spec.DependsOn).To(BeEmpty(), "the only Kustomization depends on nothing: its HelmRelease predecessor is the operator's gate")

		By("the Kustomization is Ready: the second HelmRelease is created, depending on the first (Flux orders within a kind)")
		Eventually(func(g Gomega) {
			readyKustomization(g, ns, dns, rel.Status.Revision)
			hr := helmRelease(ns, storage)
			g.Expect(exists(g, hr)).To(BeTrue())
			g.Expect(hr.Spec.DependsOn).To(Equal([]helmv2.DependencyReference{{Name: cni}}))
		}).Should(Succeed())

		By("a predecessor that turns not Ready neither takes back nor freezes what was created after it")
		Eventually(func(g Gomega) {
			setStatus(g, helmRelease(ns, cni), func(hr *helmv2.HelmRelease) {
				apimeta.SetStatusCondition(&hr.Status.Conditions, metav1.Condition{Type: meta.ReadyCondition, Status: metav1.ConditionFalse,
					Reason: helmv2.UpgradeFailedReason, Message: "upgrade failed", ObservedGeneration: hr.Generation})
			})
			g.Expect(componentMessages(clusterAddon(g, ns, "c1"))).To(HaveKeyWithValue("cni", ContainSubstring("upgrade failed")))
		}).Should(Succeed())
		want := ks.Spec.Path
		update(ks, func(ks *kustomizev1.Kustomization) { ks.Spec.Path = "./tampered" })
		touch(c)
		Eventually(func(g Gomega) string {
			g.Expect(k8s.Get(ctx, key(ns, dns), ks)).To(Succeed())
			return ks.Spec.Path
		}).Should(Equal(want), "the existing Kustomization is not kept as its component wants while HelmRelease %s is not Ready", cni)
		Expect(exists(Default, helmRelease(ns, storage))).To(BeTrue())
	})
})
