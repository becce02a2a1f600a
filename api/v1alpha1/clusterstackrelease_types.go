package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ComponentKind says how a stack component is delivered.
// +kubebuilder:validation:Enum=Helm;Kustomize
type ComponentKind string

const (
	// ComponentKindHelm: a Helm chart, delivered by a HelmRelease through a shared HelmChart.
	ComponentKindHelm ComponentKind = "Helm"
	// ComponentKindKustomize: a kustomize directory, delivered by a Kustomization.
	ComponentKindKustomize ComponentKind = "Kustomize"
)

// ClusterStackReleaseSpec is one version of a stack. The operator writes it from the owning
// ClusterStack; the object's name is the release tag and the ClusterClass name.
// +kubebuilder:validation:XValidation:rule="self.version == oldSelf.version",message="spec.version cannot be changed"
type ClusterStackReleaseSpec struct {
	// clusterStack is the name of the ClusterStack the release belongs to (at most 63
	// characters, as ClusterStack names are).
	// +kubebuilder:validation:MaxLength=63
	// +required
	ClusterStack string `json:"clusterStack"`

	// provider of the stack, e.g. "aws".
	// +kubebuilder:validation:Pattern=`^[a-z0-9]+$`
	// +kubebuilder:validation:MaxLength=32
	// +required
	Provider string `json:"provider"`

	// stackName is the stack's name, e.g. "base".
	// +kubebuilder:validation:Pattern=`^[a-z0-9]+$`
	// +kubebuilder:validation:MaxLength=32
	// +required
	StackName string `json:"stackName"`

	// kubernetesVersion is the Kubernetes minor, e.g. "1.33".
	// +kubebuilder:validation:Pattern=`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`
	// +kubebuilder:validation:MaxLength=8
	// +required
	KubernetesVersion string `json:"kubernetesVersion"`

	// version of the stack, e.g. "v2".
	// +kubebuilder:validation:Pattern=`^v(0|[1-9][0-9]*)(-[a-z0-9]+[.-][a-z0-9]+)?$`
	// +kubebuilder:validation:MaxLength=64
	// +required
	Version string `json:"version"`

	// source is where the release's tag is published.
	// +required
	Source StackSource `json:"source"`

	// interval at which the operator checks that the tag still points at the validated commit,
	// and at which Flux re-checks the release's sources (at most hourly once they are pinned to
	// that commit, which cannot change) and re-applies its cluster-class.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="spec.interval must be a duration such as 5m, of at most 2562047h"
	// +optional
	Interval metav1.Duration `json:"interval,omitempty"`

	// followMovedTags, copied from the ClusterStack: when true the release delivers whatever
	// commit its tag points to; when false it stays pinned to the validated commit.
	// +optional
	FollowMovedTags bool `json:"followMovedTags,omitempty"`

	// serviceAccountName is the identity Flux applies the release's cluster-class and the
	// clusters' addons with: the ClusterStack's spec.serviceAccountName, or the operator's
	// --default-service-account when that is empty. Empty leaves the choice to Flux.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
}

// ReleaseComponent describes one component of a release.
type ReleaseComponent struct {
	// name of the component, e.g. "cni".
	Name string `json:"name"`
	// kind says how it is delivered.
	Kind ComponentKind `json:"kind"`
	// version is the chart version, or a content digest for a kustomize directory.
	// +optional
	Version string `json:"version,omitempty"`
	// digest of the component's files; components with equal digests in two releases have the
	// same content, so a cluster moving between them does not reinstall it.
	// +optional
	Digest string `json:"digest,omitempty"`
	// path of the component in the repository.
	Path string `json:"path"`
	// namespace in the workload cluster the component is installed into.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// source is the name of the shared Flux source of the component (for Helm a HelmChart, or
	// with an OCI source an OCIRepository of the chart; for Kustomize the release's
	// GitRepository or OCIRepository).
	// +optional
	Source string `json:"source,omitempty"`
	// chartDigest is, for a Helm component of a release read from an OCI registry, the digest
	// (sha256:<hex>) of its packaged chart's artifact, as the release's manifest names it: the
	// chart's OCIRepository is pinned to it.
	// +kubebuilder:validation:MaxLength=71
	// +optional
	ChartDigest string `json:"chartDigest,omitempty"`
}

// ObjectKind is the API version and kind of objects.
type ObjectKind struct {
	// apiVersion of the objects, e.g. "openstack.k-orc.cloud/v1alpha1".
	// +kubebuilder:validation:MaxLength=253
	APIVersion string `json:"apiVersion"`
	// kind of the objects, e.g. "Image".
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`
}

// StackRequirement is one entry of the `requires:` list of a stack's stack.yaml: an operator of
// the management plane at a version range, or a Cluster API contract. Exactly one of operator and
// capiContract is set.
type StackRequirement struct {
	// operator is the name of a ManagementOperator's component (spec.component.name), e.g.
	// "cluster-api" or "capo".
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Operator string `json:"operator,omitempty"`
	// versions is the semantic version range the delivered version of the operator must be in,
	// e.g. ">=1.10.0 <1.12.0". Empty: any delivered version.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Versions string `json:"versions,omitempty"`
	// capiContract is a Cluster API contract the delivered core provider must serve, e.g. "v1beta2".
	// +kubebuilder:validation:MaxLength=32
	// +optional
	CAPIContract string `json:"capiContract,omitempty"`
}

// ClusterStackReleaseStatus is the observed state of a release. Every field has one writer,
// named in its documentation (docs/status-ownership.md has the table); conditions have one
// writer per type.
type ClusterStackReleaseStatus struct {
	// observedGeneration is the generation last reconciled successfully. Written by the
	// ClusterStackRelease reconciler.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Available, Progressing, Degraded, Ready, Stalled, Reconciling,
	// RequirementsMet and ProviderObjectsReady are written by the ClusterStackRelease status
	// reconciler; StackValid and TagVerified by the ClusterStackRelease reconciler.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// revision is the revision of the tag, as Flux reports it: "<tag>@sha1:<commit>" for a Git
	// repository, "<tag>@sha256:<digest>" for an OCI repository. Written by the ClusterStackRelease reconciler.
	// +optional
	Revision string `json:"revision,omitempty"`

	// commit is the Git commit the release was validated at (40 hex digits), or for an OCI
	// repository the sha256 digest of the validated manifest (64 hex digits). Unless the
	// ClusterStack sets followMovedTags, the release's GitRepository (OCIRepository) is pinned
	// to it, so a tag moved later is not delivered. Written by the ClusterStackRelease reconciler.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Commit string `json:"commit,omitempty"`

	// kubernetesVersion is the exact Kubernetes version the release was tested with, e.g. "v1.33.4";
	// Clusters using the release must have it as `spec.topology.version`. Written by the
	// ClusterStackRelease reconciler.
	// +optional
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`

	// clusterClassName is the name of the ClusterClass the release produces (the release's name).
	// Written by the ClusterStackRelease reconciler.
	// +optional
	ClusterClassName string `json:"clusterClassName,omitempty"`

	// clusterClass describes the cluster-class component. Written by the ClusterStackRelease
	// reconciler.
	// +optional
	ClusterClass *ReleaseComponent `json:"clusterClass,omitempty"`

	// components are the addon components, in install order. Written by the ClusterStackRelease
	// reconciler.
	// +listType=map
	// +listMapKey=name
	// +optional
	Components []ReleaseComponent `json:"components,omitempty"`

	// stages are the addon stages of the release's clusteraddon.yaml, in hook order
	// (AfterControlPlaneInitialized, BeforeClusterUpgrade, AfterClusterUpgrade); empty when the
	// stack has no clusteraddon.yaml. A Cluster upgrading to the release moves the components of
	// the BeforeClusterUpgrade stage first (stacks/README.md). Written by the ClusterStackRelease
	// reconciler.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=3
	// +optional
	Stages []ReleaseStage `json:"stages,omitempty"`

	// requirements are the operators of the management plane (with version ranges) and the
	// Cluster API contract the stack requires (`requires:` in its stack.yaml). While the
	// delivered ManagementOperators do not meet them, the release is RequirementsMet=False and no
	// Cluster's addons are moved to it. Written by the ClusterStackRelease reconciler.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Requirements []StackRequirement `json:"requirements,omitempty"`

	// providerKinds are the kinds of the provider objects the release's cluster-class creates
	// besides its ClusterClass and templates (the machine image of an OpenStack stack, an OpenStack
	// Resource Controller Image, say), of the API groups the operator reads (infrastructure and
	// control plane providers, openstack.k-orc.cloud). The release is Available, offered as an
	// update, and Clusters may use it only once each such object it created is ready by its own
	// status (ProviderObjectsReady). Written by the ClusterStackRelease reconciler.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +optional
	ProviderKinds []ObjectKind `json:"providerKinds,omitempty"`

	// clusters counts the Clusters using the release. Written by the ClusterStackRelease status
	// reconciler.
	// +optional
	Clusters ClusterCounts `json:"clusters,omitempty"`

	// unhealthy lists the release's Flux objects that are not healthy, with how long they have
	// been so (the grace clock of the Degraded condition, kept across operator restarts and Flux's
	// retries) and what Flux last said about the failure. Written by the ClusterStackRelease
	// status reconciler.
	// +listType=map
	// +listMapKey=object
	// +optional
	Unhealthy []UnhealthyObject `json:"unhealthy,omitempty"`
}

// ClusterStackRelease is one version of a cluster stack: a Flux source pinned to its tag, the Flux
// object applying its ClusterClass into the management cluster, and the shared sources of its addons.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cstackrel,categories=cluster-stacks
// +kubebuilder:printcolumn:name="Stack",type=string,JSONPath=`.spec.clusterStack`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="K8s",type=string,JSONPath=`.status.kubernetesVersion`
// +kubebuilder:printcolumn:name="ClusterClass",type=string,JSONPath=`.status.clusterClassName`
// +kubebuilder:printcolumn:name="Clusters",type=integer,JSONPath=`.status.clusters.total`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Progressing",type=string,JSONPath=`.status.conditions[?(@.type=="Progressing")].status`
// +kubebuilder:printcolumn:name="Degraded",type=string,JSONPath=`.status.conditions[?(@.type=="Degraded")].status`
// +kubebuilder:printcolumn:name="Message",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name == self.spec.provider + '-' + self.spec.stackName + '-' + self.spec.kubernetesVersion.replace('.', '-') + '-' + self.spec.version",message="metadata.name must be <provider>-<stackName>-<major>-<minor>-<version>, the release tag"
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="metadata.name (the release tag) must be at most 63 characters: it is the ClusterClass name Clusters refer to and a label value; use a shorter provider, stack name or version"
type ClusterStackRelease struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state.
	Spec ClusterStackReleaseSpec `json:"spec"`
	// status is the observed state.
	// +optional
	Status ClusterStackReleaseStatus `json:"status,omitempty"`
}

// ClusterStackReleaseList is a list of ClusterStackReleases.
// +kubebuilder:object:root=true
type ClusterStackReleaseList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterStackRelease `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ClusterStackRelease{}, &ClusterStackReleaseList{})
}

// GetConditions returns the conditions.
func (in *ClusterStackRelease) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions sets the conditions.
func (in *ClusterStackRelease) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }
