// Package v1alpha1 contains the API of the ClusterStack operator, group clusterstack.io.
// +kubebuilder:object:generate=true
// +groupName=clusterstack.io
package v1alpha1
