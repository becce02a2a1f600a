package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxReleaseName is the limit of release names (tags): they are ClusterStackRelease and
// ClusterClass names and label values.
const MaxReleaseName = 63

// MinAutoSubscribeVersionRoom is how many characters of a release name an autoSubscribe
// ClusterStack's fixed parts (provider, name, Kubernetes minor and the separators) must leave
// for the version: enough for "v12" and channel versions such as "v0-sha.abc1234".
const MinAutoSubscribeVersionRoom = 16

// ClusterStackFinalizer keeps a ClusterStack until no Cluster uses any of its releases.
const ClusterStackFinalizer = "clusterstack.io/finalizer"

// ClusterStackSpec says which stack, for which Kubernetes minor, and which versions of it to deliver.
//
// Release names are tags <provider>-<name>-<major>-<minor>-<version>; they become the names of
// ClusterStackReleases and ClusterClasses (which Clusters reference) and label values, so they
// must have at most 63 characters (MaxReleaseName). The rules below keep every release name a
// ClusterStack can ask for within that: each of spec.versions, and with autoSubscribe the fixed
// parts, which leave room for a version of MinAutoSubscribeVersionRoom characters.
// (The messages print lengths digit by digit: string(int) has no size bound for the API
// server's cost estimate, which then refuses the CRD. A one-element list's map binds a name.)
// +kubebuilder:validation:XValidation:rule="self.autoSubscribe || (has(self.versions) && size(self.versions) > 0)",message="set spec.versions to at least one version (e.g. [\"v1\"]) or set spec.autoSubscribe to true"
// +kubebuilder:validation:XValidation:rule="!has(self.versions) || self.versions.all(v, size(self.provider) + size(self.name) + size(self.kubernetesVersion) + size(v) + 3 <= 63)",fieldPath=".versions",message="spec.versions: a release name (tag) <provider>-<name>-<major>-<minor>-<version> would be longer than 63 characters: use a shorter provider, name or version",messageExpression="[self.versions.map(v, self.provider + '-' + self.name + '-' + self.kubernetesVersion.replace('.', '-') + '-' + v).filter(n, size(n) > 63)[0]].map(n, [size(n)].map(l, 'spec.versions: release name ' + n + ' would be ' + (l >= 100 ? ['0','1','2','3','4','5','6','7','8','9'][l / 100] : \"\") + (l >= 10 ? ['0','1','2','3','4','5','6','7','8','9'][l / 10 % 10] : \"\") + ['0','1','2','3','4','5','6','7','8','9'][l % 10] + ' characters; release names (tags) must be at most 63: use a shorter provider, name or version')[0])[0]"
// +kubebuilder:validation:XValidation:rule="!self.autoSubscribe || size(self.provider) + size(self.name) + size(self.kubernetesVersion) <= 44",message="spec.provider, spec.name, spec.kubernetesVersion: with spec.autoSubscribe the start <provider>-<name>-<major>-<minor>- of the release names must be at most 47 characters so that versions of up to 16 characters fit into release names (tags) of at most 63: use a shorter provider or name, or pin spec.versions instead of autoSubscribe",messageExpression="[self.provider + '-' + self.name + '-' + self.kubernetesVersion.replace('.', '-') + '-'].map(p, [size(p)].map(l, 'spec.provider, spec.name, spec.kubernetesVersion: the release names start with ' + p + ', ' + (l >= 100 ? ['0','1','2','3','4','5','6','7','8','9'][l / 100] : \"\") + (l >= 10 ? ['0','1','2','3','4','5','6','7','8','9'][l / 10 % 10] : \"\") + ['0','1','2','3','4','5','6','7','8','9'][l % 10] + ' characters; with spec.autoSubscribe that must be at most 47 so that versions of up to 16 characters fit into release names (tags) of at most 63: use a shorter provider or name, or pin spec.versions instead of autoSubscribe')[0])[0]"
type ClusterStackSpec struct {
	// provider is the infrastructure provider the stack is for, e.g. "aws". It is the first part
	// of the release tags and cannot be changed.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.provider cannot be changed; create a new ClusterStack instead"
	// +required
	Provider string `json:"provider"`

	// name of the stack, e.g. "base". It is the second part of the release tags and cannot be changed.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.name cannot be changed; create a new ClusterStack instead"
	// +required
	Name string `json:"name"`

	// kubernetesVersion is the Kubernetes minor version the stack is for, as "<major>.<minor>",
	// e.g. "1.33". It cannot be changed: a new minor is a new ClusterStack.
	// +kubebuilder:validation:Pattern=`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`
	// +kubebuilder:validation:MaxLength=8
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.kubernetesVersion cannot be changed; create a new ClusterStack for another Kubernetes minor"
	// +required
	KubernetesVersion string `json:"kubernetesVersion"`

	// source is the Git repository the stack's releases are published in, as tags named
	// <provider>-<name>-<major>-<minor>-<version>.
	// +required
	Source StackSource `json:"source"`

	// versions are the stack versions to deliver, e.g. ["v1", "v2"]; each becomes a
	// ClusterStackRelease named like its tag. A version is v<N> or a channel version
	// v<N>-<channel>.<patch> or v<N>-<channel>-<patch> (e.g. "v0-sha.abc1234", "v1-alpha-0").
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:Pattern=`^v(0|[1-9][0-9]*)(-[a-z0-9]+[.-][a-z0-9]+)?$`
	// +kubebuilder:validation:items:MaxLength=64
	// +listType=set
	// +optional
	Versions []string `json:"versions,omitempty"`

	// autoSubscribe, when true, makes the newest release published in the repository for this
	// provider, stack and Kubernetes minor a release too, and follows new tags as they appear.
	// Defaults to false.
	// +kubebuilder:default=false
	// +optional
	AutoSubscribe bool `json:"autoSubscribe,omitempty"`

	// interval at which the repository's tags are listed (with autoSubscribe, and to verify that
	// each release's tag still points at its validated commit) and at which Flux re-checks the
	// release sources and re-applies the cluster-class. A source pinned to its validated commit
	// cannot change: Flux re-checks it (and its charts) every interval but at most hourly.
	// Defaults to 5m.
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s')",message="spec.interval must be a duration of at least 10s, such as 30s or 5m: it is how often the repository's tags are listed and Flux re-checks the sources"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`

	// rollbackReleases is how many releases older than the newest wanted one are kept (reason
	// RollbackTarget) after no Cluster uses them any more, so that a Cluster can be moved back to
	// them at once after a failed upgrade. Only releases that were validated and are Available count.
	// Defaults to 1; 0 keeps none.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	// +optional
	RollbackReleases *int32 `json:"rollbackReleases,omitempty"`

	// followMovedTags, when true, makes a release deliver whatever commit its tag points to, also
	// after the tag was moved. By default (false) a release is pinned to the commit its tag
	// pointed to when the stack was validated; if the tag later points elsewhere the release is
	// Degraded (reason TagMoved, naming the old and the new commit) and keeps delivering the
	// validated commit.
	// +optional
	FollowMovedTags bool `json:"followMovedTags,omitempty"`

	// serviceAccountName is the ServiceAccount, in the ClusterStack's namespace, whose identity
	// Flux uses to apply everything generated for the stack: the cluster-class into this
	// namespace of the management cluster, and (impersonated on the workload cluster, through the
	// Cluster's kubeconfig) every cluster's addons. The account needs only what the stack's
	// cluster-class creates in this namespace (see the example Role in docs/multi-tenancy.md); what it may not
	// do fails and is reported, and is not created. When empty, the operator's
	// --default-service-account is used, and when that is empty too, Flux's own
	// --default-service-account (or, without it, Flux's own identity).
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// updates configures which newer releases are offered as updates (status.availableUpdates
	// and status.conditionalUpdates), and whether and in which waves the operator proposes them
	// as pull requests to the fleet repository.
	// +optional
	Updates *UpdatePolicy `json:"updates,omitempty"`
}

// MissingRelease is a release a Cluster uses that does not exist and cannot be created.
type MissingRelease struct {
	// name of the release (its tag and ClusterClass name).
	Name string `json:"name"`
	// reason is TagNotFound (the tag is not published), TagListFailed (the repository's tags
	// could not be listed, so the operator cannot tell yet) or TagListTooLarge (the repository
	// advertises more references than one listing reads).
	Reason string `json:"reason"`
	// message says why the release cannot be created (the tag does not exist, the repository
	// cannot be read) and what to do.
	Message string `json:"message"`
}

// ReleaseSummary is what a ClusterStack reports of one of its releases. Two reconcilers write
// it, each its own fields: the ClusterStack reconciler which releases are kept and why (name,
// version, reasons), the ClusterStack status reconciler how they are doing (available,
// clusters). Each keeps the other's fields as they are.
type ReleaseSummary struct {
	// name of the ClusterStackRelease (and of its tag and ClusterClass). Written by the
	// ClusterStack reconciler.
	Name string `json:"name"`
	// version of the stack, e.g. "v2". Written by the ClusterStack reconciler.
	Version string `json:"version"`
	// reasons the release is kept: Pinned (in spec.versions), Latest (the newest published, with
	// autoSubscribe), InUse (a Cluster's topology uses its ClusterClass), Applied (a Cluster's
	// addons were last applied from it, e.g. the previous release of a Cluster that is upgrading
	// or failed to upgrade), Referenced (a generated Flux object still uses its sources or charts),
	// RollbackTarget (one of the spec.rollbackReleases newest older releases). Written by the
	// ClusterStack reconciler.
	// +optional
	Reasons []string `json:"reasons,omitempty"`
	// available is true when the release's Available condition is True. Written by the
	// ClusterStack status reconciler.
	// +optional
	Available bool `json:"available,omitempty"`
	// clusters counts the Clusters that use the release. Written by the ClusterStack status
	// reconciler.
	// +optional
	Clusters ClusterCounts `json:"clusters,omitempty"`
}

// ClusterCounts counts Clusters by the state of their addons.
type ClusterCounts struct {
	// total Clusters using the release or stack.
	Total int32 `json:"total"`
	// upToDate Clusters whose addons are at the release they use.
	UpToDate int32 `json:"upToDate"`
	// available Clusters whose ClusterAddon is Available.
	Available int32 `json:"available"`
	// degraded Clusters whose ClusterAddon is Degraded.
	Degraded int32 `json:"degraded"`
}

// StackVersions reports which version of the stack is delivered.
type StackVersions struct {
	// available is the newest version that is fully available: its release is Available and
	// every Cluster using it is Available. It moves only when a rollout has completed. Written by
	// the ClusterStack status reconciler.
	// +optional
	Available string `json:"available,omitempty"`
	// desired is the newest version the ClusterStack asks for. Written by the ClusterStack
	// reconciler.
	// +optional
	Desired string `json:"desired,omitempty"`
}

// RelatedObject names an object generated for a ClusterStack.
type RelatedObject struct {
	// apiVersion of the object.
	APIVersion string `json:"apiVersion"`
	// kind of the object.
	Kind string `json:"kind"`
	// namespace of the object.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// name of the object.
	Name string `json:"name"`
}

// ClusterStackStatus is the observed state of a ClusterStack. Every field has one writer,
// named in its documentation (docs/status-ownership.md has the table); conditions have one
// writer per type.
type ClusterStackStatus struct {
	// observedGeneration is the generation last reconciled successfully. Written by the
	// ClusterStack reconciler.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Available, Progressing, Degraded, Ready, Stalled, Reconciling and Upgradeable
	// are written by the ClusterStack status reconciler; ReleasesResolved and FluxLockdown by the
	// ClusterStack reconciler; UpdatesProposed by the ClusterStack updates reconciler.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// releases known for this stack, oldest first. The ClusterStack reconciler decides which
	// releases are listed; within each, fields have the writers their documentation names.
	// +listType=map
	// +listMapKey=name
	// +optional
	Releases []ReleaseSummary `json:"releases,omitempty"`

	// latestRelease is the newest release published for the stack and Kubernetes minor
	// (only known with autoSubscribe), or the newest pinned version. Written by the ClusterStack
	// reconciler.
	// +optional
	LatestRelease string `json:"latestRelease,omitempty"`

	// versions reports the available and desired versions (each field names its writer).
	// +optional
	Versions StackVersions `json:"versions,omitempty"`

	// clusters counts the Clusters using any release of the stack. Written by the ClusterStack
	// status reconciler.
	// +optional
	Clusters ClusterCounts `json:"clusters,omitempty"`

	// clustersSummary is "<available>/<total>" for kubectl. Written by the ClusterStack status
	// reconciler.
	// +optional
	ClustersSummary string `json:"clustersSummary,omitempty"`

	// missingReleases are releases Clusters use that do not exist and cannot be created (their tag
	// is not published); the Clusters' ClusterAddons are Degraded until the tag is published or
	// the Clusters move. Written by the ClusterStack reconciler.
	// +listType=map
	// +listMapKey=name
	// +optional
	MissingReleases []MissingRelease `json:"missingReleases,omitempty"`

	// relatedObjects lists every object generated for the stack's releases (not per-cluster objects,
	// which the ClusterAddons list). Written by the ClusterStack status reconciler.
	// +optional
	RelatedObjects []RelatedObject `json:"relatedObjects,omitempty"`

	// availableUpdates are published releases newer than every release the stack's Clusters
	// use, in spec.updates.channel, that no Cluster uses yet and nothing holds back; newest first.
	// Written by the ClusterStack updates reconciler.
	// +listType=atomic
	// +optional
	AvailableUpdates []StackUpdate `json:"availableUpdates,omitempty"`

	// conditionalUpdates are newer releases that exist but may not be taken, with the risks
	// (requirements unmet, a skipped Kubernetes minor, a failed validation, too young, declined).
	// Written by the ClusterStack updates reconciler.
	// +listType=atomic
	// +optional
	ConditionalUpdates []ConditionalUpdate `json:"conditionalUpdates,omitempty"`

	// rollout is the state of the rollout of the newest available update, wave by wave, when
	// spec.updates.proposals is set. Written by the ClusterStack updates reconciler.
	// +optional
	Rollout *RolloutStatus `json:"rollout,omitempty"`

	// hold says who holds the rollout, why and since when, while the clusterstack.io/hold
	// annotation or a pull request's hold label holds it. Written by the ClusterStack updates
	// reconciler.
	// +optional
	Hold *RolloutHold `json:"hold,omitempty"`
}

// ClusterStack says which cluster stack, for which Kubernetes minor, and which of its versions
// to deliver to the Clusters in its namespace.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cstack,categories=cluster-stacks
// +kubebuilder:printcolumn:name="Provider",type=string,JSONPath=`.spec.provider`
// +kubebuilder:printcolumn:name="Stack",type=string,JSONPath=`.spec.name`
// +kubebuilder:printcolumn:name="K8s",type=string,JSONPath=`.spec.kubernetesVersion`
// +kubebuilder:printcolumn:name="Available Version",type=string,JSONPath=`.status.versions.available`
// +kubebuilder:printcolumn:name="Latest",type=string,JSONPath=`.status.latestRelease`
// +kubebuilder:printcolumn:name="Clusters",type=string,JSONPath=`.status.clustersSummary`
// +kubebuilder:printcolumn:name="Update",type=string,JSONPath=`.status.availableUpdates[0].version`
// +kubebuilder:printcolumn:name="Proposal",type=string,JSONPath=`.status.rollout.openPullRequest`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Progressing",type=string,JSONPath=`.status.conditions[?(@.type=="Progressing")].status`
// +kubebuilder:printcolumn:name="Degraded",type=string,JSONPath=`.status.conditions[?(@.type=="Degraded")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="metadata.name must be at most 63 characters: the ClusterStack's name goes into label values and generated names; choose a shorter name",messageExpression="[size(self.metadata.name)].map(l, 'metadata.name is ' + (l >= 100 ? ['0','1','2','3','4','5','6','7','8','9'][l / 100] : \"\") + (l >= 10 ? ['0','1','2','3','4','5','6','7','8','9'][l / 10 % 10] : \"\") + ['0','1','2','3','4','5','6','7','8','9'][l % 10] + ' characters; a ClusterStack name must be at most 63 (it goes into label values and generated names): choose a shorter name')[0]"
type ClusterStack struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state.
	Spec ClusterStackSpec `json:"spec"`
	// status is the observed state.
	// +optional
	Status ClusterStackStatus `json:"status,omitempty"`
}

// ClusterStackList is a list of ClusterStacks.
// +kubebuilder:object:root=true
type ClusterStackList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterStack `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ClusterStack{}, &ClusterStackList{})
}

// GetConditions returns the conditions.
func (in *ClusterStack) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions sets the conditions.
func (in *ClusterStack) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }
