package controllers_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// A Cluster whose topology Cluster API cannot build (a template its webhook refuses, say) never
// gets an initialized control plane: the ClusterAddon's wait for it names what CAPI said, and
// goes back to a plain wait when CAPI gets on with it.
var _ = Describe("ClusterAddon waiting for a control plane", func() {
	It("names the reason Cluster API gives for not building the topology, and follows it", func() {
		ns := newNamespace("cp-wait")
		st := newStack("acme", "wait", "1.36").WithHelmAddon("cni", "1.0.0")
		v1 := publishRelease(ns, st, "v1")
		newClusterStack(ns, "wait", st).Versions("v1").Create()
		releaseWorks(ns, v1)
		c := newCluster(ns, "c1").WithClass(st, v1).Create()
		const plain = "waiting for the control plane of Cluster c1 to be initialized"
		waiting := func(g Gomega) string {
			cond := apimeta.FindStatusCondition(clusterAddon(g, ns, "c1").Status.Conditions, csv1.WorkloadClusterReadyCondition)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(cond.Reason).To(Equal(csv1.ReasonWaitingForControlPlane))
			return cond.Message
		}
		Eventually(waiting).Should(Equal(plain))

		topology := func(reason, msg string) {
			Eventually(func(g Gomega) {
				setStatus(g, c, func(c *clusterv1.Cluster) {
					apimeta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: clusterv1.ClusterTopologyReconciledCondition,
						Status: metav1.ConditionFalse, Reason: reason, Message: msg, ObservedGeneration: c.Generation})
				})
			}).Should(Succeed())
		}
		By("Cluster API fails to create the control plane")
		refused := `error reconciling the Cluster topology: failed to create KubeadmControlPlane.controlplane.cluster.x-k8s.io: FieldValueInvalid: spec.kubeadmConfigSpec.clusterConfiguration.imageRepository: Invalid value: "": should be at least 1 chars long`
		topology(clusterv1.ClusterTopologyReconciledFailedReason, refused)
		Eventually(waiting).Should(Equal(plain + "; Cluster API cannot build its topology: TopologyReconciled is False (ReconcileFailed): " + refused))

		By("the Cluster is fixed: CAPI creates it, the wait is a plain one again")
		topology(clusterv1.ClusterTopologyReconciledClusterCreatingReason, "Cluster is creating")
		Eventually(waiting).Should(Equal(plain))
	})
})
