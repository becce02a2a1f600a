package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterAddonFinalizer lets the operator suspend a cluster's Flux objects before they are
// deleted, so that deleting a Cluster never waits on an unreachable workload cluster.
const ClusterAddonFinalizer = "clusterstack.io/clusteraddon"

// ClusterAddonSpec names the Cluster whose addons the object tracks. The operator creates it.
type ClusterAddonSpec struct {
	// clusterName is the name of the CAPI Cluster in the same namespace.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.clusterName cannot be changed"
	// +required
	ClusterName string `json:"clusterName"`
}

// AddonComponentStatus is the state of one addon component in one cluster: what is delivered
// (name, kind, release, version, fluxObject, waitingFor) and how it is doing (ready, message),
// all written by the ClusterAddon reconciler in one status write.
type AddonComponentStatus struct {
	// name of the component. Written by the ClusterAddon reconciler.
	Name string `json:"name"`
	// kind says how it is delivered. Written by the ClusterAddon reconciler.
	Kind ComponentKind `json:"kind"`
	// release whose version of the component is wanted: the desired release, or the release an
	// upgrade holds the component at (addon stages). Written by the ClusterAddon reconciler.
	Release string `json:"release"`
	// version of the component in that release. Written by the ClusterAddon reconciler.
	// +optional
	Version string `json:"version,omitempty"`
	// fluxObject is "<Kind>/<name>" of the Flux object delivering the component. Written by the
	// ClusterAddon reconciler.
	// +optional
	FluxObject string `json:"fluxObject,omitempty"`
	// waitingFor says why the component's Flux object is not written for the release yet: it
	// waits for its predecessor of another kind to be Ready, for the Cluster's upgrade (stage
	// AfterClusterUpgrade), or for a delete step of the upgrade. Empty once the object is
	// written. Written by the ClusterAddon reconciler.
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	WaitingFor string `json:"waitingFor,omitempty"`
	// ready is true when the Flux object is Ready at the wanted revision. Written by the
	// ClusterAddon reconciler.
	// +optional
	Ready bool `json:"ready,omitempty"`
	// message is what Flux last said about the object; while the object does not exist and the
	// component waits, waitingFor. Written by the ClusterAddon reconciler.
	// +optional
	Message string `json:"message,omitempty"`
}

// ClusterAddonStatus is the observed state of a cluster's addons. Every field has one writer,
// named in its documentation (docs/status-ownership.md has the table); conditions have one
// writer per type.
type ClusterAddonStatus struct {
	// observedGeneration is the generation last reconciled successfully. Written by the
	// ClusterAddon reconciler.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Available, Progressing, Degraded, Ready, Stalled and Reconciling are written
	// by the ClusterAddon reconciler; ReleaseReady, ValuesRendered, WorkloadClusterReady,
	// ObjectsOwned and Paused by the ClusterAddon reconciler.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// clusterStack is the ClusterStack the Cluster's ClusterClass belongs to. Written by the
	// ClusterAddon reconciler.
	// +optional
	ClusterStack string `json:"clusterStack,omitempty"`

	// desiredRelease is the ClusterStackRelease whose ClusterClass the Cluster's topology uses.
	// Written by the ClusterAddon reconciler.
	// +optional
	DesiredRelease string `json:"desiredRelease,omitempty"`

	// desiredReleaseTime is when desiredRelease last changed: a rollout, and the grace period
	// before a component that does not become Ready makes the ClusterAddon Degraded, start
	// again from it (a failure of the release desired before says nothing of this one).
	// Written by the ClusterAddon reconciler, with desiredRelease.
	// +optional
	DesiredReleaseTime *metav1.Time `json:"desiredReleaseTime,omitempty"`

	// lastAppliedRelease is the release whose addons were last Ready everywhere in the cluster.
	// Written by the ClusterAddon reconciler.
	// +optional
	LastAppliedRelease string `json:"lastAppliedRelease,omitempty"`

	// lastAppliedTime is when lastAppliedRelease last changed (rollout waves measure their soak
	// time from it). Written by the ClusterAddon reconciler, with lastAppliedRelease.
	// +optional
	LastAppliedTime *metav1.Time `json:"lastAppliedTime,omitempty"`

	// availableUpgrades are the releases the Cluster may move to next: validated releases of
	// its stack in its namespace, newer than the one it uses, for the same Kubernetes minor or
	// the next one (the moves the Cluster webhook allows), newest first. Written by the
	// ClusterStack updates reconciler.
	// +listType=atomic
	// +optional
	AvailableUpgrades []string `json:"availableUpgrades,omitempty"`

	// valuesConfigMap is the name of the generated ConfigMap holding the cluster's values for the
	// desired release. Each release has its own ConfigMap, which the Flux objects switch to in the
	// same write as their chart or source; a ConfigMap no Flux object uses any more is deleted.
	// Written by the ClusterAddon reconciler.
	// +optional
	ValuesConfigMap string `json:"valuesConfigMap,omitempty"`

	// components is the state of each addon component, in install order. The ClusterAddon
	// reconciler decides which components are listed; within each, fields have the writers their
	// documentation names.
	// +listType=map
	// +listMapKey=name
	// +optional
	Components []AddonComponentStatus `json:"components,omitempty"`

	// stages is the state of the addon stages while the Cluster is created (AfterControlPlaneInitialized)
	// or moves to a release of another Kubernetes version (BeforeClusterUpgrade, then
	// AfterClusterUpgrade), for releases whose stack has a clusteraddon.yaml. Empty once the
	// desired release is applied, and for moves that keep the Kubernetes version. Written by
	// the ClusterAddon reconciler; the operator's BeforeClusterUpgrade hook answers from it.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=3
	// +optional
	Stages []AddonStageStatus `json:"stages,omitempty"`

	// progress is "<ready>/<total>" components at the desired release. Written by the
	// ClusterAddon reconciler.
	// +optional
	Progress string `json:"progress,omitempty"`

	// unhealthy lists the cluster's Flux objects that are not healthy, with how long they have
	// been so (the grace clock of the Degraded condition, kept across operator restarts and Flux's
	// retries) and what Flux last said about the failure. Written by the ClusterAddon
	// reconciler.
	// +listType=map
	// +listMapKey=object
	// +optional
	Unhealthy []UnhealthyObject `json:"unhealthy,omitempty"`
}

// ClusterAddon records, for one CAPI Cluster that uses a cluster stack, which release's addons
// are wanted and delivered, and the state of each component. It is owned by the Cluster.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=caddon,categories=cluster-stacks
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterName`
// +kubebuilder:printcolumn:name="Release",type=string,JSONPath=`.status.desiredRelease`
// +kubebuilder:printcolumn:name="Applied",type=string,JSONPath=`.status.lastAppliedRelease`
// +kubebuilder:printcolumn:name="Progress",type=string,JSONPath=`.status.progress`
// +kubebuilder:printcolumn:name="Stage",type=string,priority=1,JSONPath=`.status.stages[?(@.ready==false)].name`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Progressing",type=string,JSONPath=`.status.conditions[?(@.type=="Progressing")].status`
// +kubebuilder:printcolumn:name="Degraded",type=string,JSONPath=`.status.conditions[?(@.type=="Degraded")].status`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterAddon struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state.
	Spec ClusterAddonSpec `json:"spec"`
	// status is the observed state.
	// +optional
	Status ClusterAddonStatus `json:"status,omitempty"`
}

// ClusterAddonList is a list of ClusterAddons.
// +kubebuilder:object:root=true
type ClusterAddonList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterAddon `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ClusterAddon{}, &ClusterAddonList{})
}

// GetConditions returns the conditions.
func (in *ClusterAddon) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions sets the conditions.
func (in *ClusterAddon) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }
