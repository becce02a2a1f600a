package fluxgen

import (
	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// StackSelector selects the objects the operator generated for a ClusterStack: its releases'
// and their clusters' (ReleaseLabels, ClusterLabels).
func StackSelector(stack string) map[string]string {
	return map[string]string{csv1.ManagedByLabel: csv1.ManagedByValue, csv1.StackLabel: LabelValue(stack)}
}

// ClusterSelector selects the objects the operator generated for one Cluster (ClusterLabels).
func ClusterSelector(cluster string) map[string]string {
	return map[string]string{csv1.ManagedByLabel: csv1.ManagedByValue, csv1.ClusterNameLabel: LabelValue(cluster)}
}

// StackReleaseLabels are the labels of a ClusterStackRelease its ClusterStack creates.
func StackReleaseLabels(stack, release string) map[string]string {
	return map[string]string{csv1.ManagedByLabel: csv1.ManagedByValue, csv1.StackLabel: LabelValue(stack), csv1.ReleaseLabel: LabelValue(release)}
}
