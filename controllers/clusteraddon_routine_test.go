package controllers_test

import (
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
)

// kustomize-controller marks a Kustomization's Ready Unknown, "Reconciliation in progress", at
// the start of every reconcile, its interval's drift checks included, and Ready again at the
// end. For a delivered component nothing moves: the ClusterAddon is not written, neither when
// the reconcile starts nor when it ends (two writes per Kustomization and Flux interval across a
// fleet otherwise).
var _ = Describe("ClusterAddon and Flux's routine reconciles", func() {
	It("does not write the status of a delivered component while Flux reconciles it again", func() {
		ns := newNamespace("addon-routine")
		st := newStack("acme", "routine", "1.36").WithKustomizeAddon("info")
		v1 := publishRelease(ns, st, "v1")
		newClusterStack(ns, "routine", st).Versions("v1").Create()
		rel := releaseValidated(ns, v1)
		newCluster(ns, "c1").WithClass(st, v1).Initialized().Create()
		info := fluxgen.AddonObjectName("c1", "info")
		Eventually(func(g Gomega) {
			readyKustomization(g, ns, info, rel.Status.Revision)
			a := clusterAddon(g, ns, "c1")
			g.Expect(apimeta.IsStatusConditionTrue(a.Status.Conditions, csv1.ReadyCondition)).To(BeTrue())
			g.Expect(componentMessages(a)).To(HaveKeyWithValue("info", "Kustomization/"+info+" is Ready"))
		}).Should(Succeed())
		var settled string
		Eventually(func(g Gomega) {
			before := clusterAddon(g, ns, "c1").ResourceVersion
			time.Sleep(time.Second)
			settled = clusterAddon(g, ns, "c1").ResourceVersion
			g.Expect(settled).To(Equal(before))
		}).Should(Succeed())
		unwritten := func(g Gomega) {
			g.Expect(clusterAddon(g, ns, "c1").ResourceVersion).To(Equal(settled), "the ClusterAddon was written")
		}

		By("kustomize-controller starts a reconcile of the applied revision")
		Eventually(func(g Gomega) {
			setStatus(g, &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: info}}, func(k *kustomizev1.Kustomization) {
				apimeta.SetStatusCondition(&k.Status.Conditions, metav1.Condition{Type: meta.ReadyCondition, Status: metav1.ConditionUnknown,
					Reason: meta.ProgressingReason, Message: "Reconciliation in progress", ObservedGeneration: k.Generation})
				apimeta.SetStatusCondition(&k.Status.Conditions, metav1.Condition{Type: meta.ReconcilingCondition, Status: metav1.ConditionTrue,
					Reason: meta.ProgressingReason, Message: "Fetching manifests for revision " + rel.Status.Revision, ObservedGeneration: k.Generation})
			})
		}).Should(Succeed())
		Consistently(unwritten, "3s").Should(Succeed())

		By("and ends it, Ready again")
		Eventually(func(g Gomega) {
			setStatus(g, &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: info}}, func(k *kustomizev1.Kustomization) {
				apimeta.RemoveStatusCondition(&k.Status.Conditions, meta.ReconcilingCondition)
			})
			readyKustomization(g, ns, info, rel.Status.Revision)
		}).Should(Succeed())
		Consistently(unwritten, "2s").Should(Succeed())
	})
})
