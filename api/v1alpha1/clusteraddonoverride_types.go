package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// OverridesAnnotation is set by the operator on a Cluster's values ConfigMap: the names of the
// ClusterAddonOverrides whose values the ConfigMap holds, comma-separated, in the order they
// were merged (the last one wins). Absent when no override applies.
const OverridesAnnotation = "clusterstack.io/overrides"

// ClusterAddonOverrideSpec says whose addon values to override and with what.
//
// Precedence, lowest first: the chart's own values.yaml (Helm components), the stack's shared
// cluster-addon-values.yaml, the release's overwrite.yaml, then the overrides that select the
// Cluster: those selecting by spec.clusterSelector before those naming it in spec.clusterName,
// each group in the order of the overrides' names. Maps merge key by key; a list or scalar
// replaces what is below it, as Helm merges values files; null removes a key (Helm drops it).
// +kubebuilder:validation:XValidation:rule="has(self.clusterName) != has(self.clusterSelector)",message="set exactly one of spec.clusterName (one Cluster of this namespace) and spec.clusterSelector (the Clusters of this namespace whose labels match)"
type ClusterAddonOverrideSpec struct {
	// clusterName names the one Cluster, in the override's namespace, whose values are
	// overridden.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +optional
	ClusterName string `json:"clusterName,omitempty"`

	// clusterSelector selects the Clusters, in the override's namespace, whose values are
	// overridden, by their labels. An empty selector selects every Cluster of the namespace.
	// +optional
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector,omitempty"`

	// components are the values to merge over each component's rendered values. Every
	// component named must be one of the Cluster's release: a name the release lacks makes the
	// Cluster's ClusterAddon Degraded (reason OverrideFailed), and nothing of that release is
	// changed for the Cluster until the override or the Cluster is fixed.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=name
	// +required
	Components []ComponentOverride `json:"components"`
}

// ComponentOverride is the values of one addon component to merge over what the stack renders.
type ComponentOverride struct {
	// name of the addon component (the directory name below the stack's cluster-addon/).
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=63
	// +required
	Name string `json:"name"`

	// values are merged over the component's rendered values: for a Helm component they are
	// Helm values (`mtu: 9000`); for a kustomize component they become substitution variables
	// as overwrite.yaml's do (`infra: {region: x}` sets `${infra_region}`). They are plain
	// values, not templates. The values ConfigMap as a whole stays within the operator's render
	// limits.
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:MaxProperties=256
	// +required
	Values apiextensionsv1.JSON `json:"values"`
}

// ClusterAddonOverride overrides addon values for one Cluster, or for the Clusters of its
// namespace that a label selector matches, across every release they move to. The operator
// merges it into the Clusters' values ConfigMaps (docs/overrides.md) and reports a failure on
// each affected Cluster's ClusterAddon; it writes nothing to the override.
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=caoverride,categories=cluster-stacks
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterName`
// +kubebuilder:printcolumn:name="Selector",type=string,JSONPath=`.spec.clusterSelector`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterAddonOverride struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state.
	Spec ClusterAddonOverrideSpec `json:"spec"`
}

// ClusterAddonOverrideList is a list of ClusterAddonOverrides.
// +kubebuilder:object:root=true
type ClusterAddonOverrideList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterAddonOverride `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ClusterAddonOverride{}, &ClusterAddonOverrideList{})
}
