package controllers

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// While a Cluster's control plane is not initialized, the ClusterAddon waits; when Cluster API
// says it cannot build the topology (the two reasons CAPI counts as issues), the wait says why.
func TestWaitingForControlPlane(t *testing.T) {
	const plain = "waiting for the control plane of Cluster one to be initialized"
	topology := func(status metav1.ConditionStatus, reason, msg string) []metav1.Condition {
		return []metav1.Condition{{Type: clusterv1.ClusterTopologyReconciledCondition, Status: status, Reason: reason, Message: msg}}
	}
	for _, tc := range []struct {
		name  string
		conds []metav1.Condition
		want  string
	}{
		{"no condition", nil, plain},
		{"topology reconciled", topology(metav1.ConditionTrue, "ReconcileSucceeded", ""), plain},
		{"on its way: creating", topology(metav1.ConditionFalse, clusterv1.ClusterTopologyReconciledClusterCreatingReason, "Cluster is creating"), plain},
		{"on its way: upgrading", topology(metav1.ConditionFalse, clusterv1.ClusterTopologyReconciledClusterUpgradingReason, "Cluster is upgrading"), plain},
		{"reconcile failed", topology(metav1.ConditionFalse, clusterv1.ClusterTopologyReconciledFailedReason,
			"error reconciling the Cluster topology: failed to create KubeadmControlPlane.controlplane.cluster.x-k8s.io: FieldValueInvalid:\nspec.imageRepository: Invalid value: \"\"\n"),
			plain + "; Cluster API cannot build its topology: TopologyReconciled is False (ReconcileFailed): error reconciling the Cluster topology: " +
				"failed to create KubeadmControlPlane.controlplane.cluster.x-k8s.io: FieldValueInvalid:; spec.imageRepository: Invalid value: \"\""},
		{"class not reconciled", topology(metav1.ConditionFalse, clusterv1.ClusterTopologyReconciledClusterClassNotReconciledReason, "ClusterClass not reconciled"),
			plain + "; Cluster API cannot build its topology: TopologyReconciled is False (ClusterClassNotReconciled): ClusterClass not reconciled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "one"}}
			c.Status.Conditions = tc.conds
			if got := waitingForControlPlane(c); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
	// CAPI's messages may be long (up to 10,240 characters): the wait stays readable.
	c := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "one"}}
	c.Status.Conditions = topology(metav1.ConditionFalse, clusterv1.ClusterTopologyReconciledFailedReason, strings.Repeat("x", 10240))
	if got := waitingForControlPlane(c); len(got) > 2048 || !strings.HasPrefix(got, plain+"; Cluster API cannot build its topology: ") {
		t.Errorf("a long message: got %d bytes starting %.120q", len(got), got)
	}
}
