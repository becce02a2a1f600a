package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AddonStage names a stage of a stack's clusteraddon.yaml: the Cluster API lifecycle moment its
// components are delivered at.
// +kubebuilder:validation:Enum=AfterControlPlaneInitialized;BeforeClusterUpgrade;AfterClusterUpgrade
type AddonStage string

const (
	// StageAfterControlPlaneInitialized: a new Cluster's addons, installed once its control
	// plane is initialized (every component of the release, in addon order).
	StageAfterControlPlaneInitialized AddonStage = "AfterControlPlaneInitialized"
	// StageBeforeClusterUpgrade: when a Cluster moves to a release of another Kubernetes
	// version, the components the release lists with action apply in this stage move to it
	// first, while the control plane still runs the old version, and the Flux objects of the
	// components it lists with action delete are deleted (Flux uninstalls them from the
	// workload cluster). With Cluster API's Runtime SDK, the operator's BeforeClusterUpgrade
	// hook holds the control plane upgrade until the former are Ready and the latter gone.
	StageBeforeClusterUpgrade AddonStage = "BeforeClusterUpgrade"
	// StageAfterClusterUpgrade: the release's other components (among them those a delete step
	// removed before the upgrade, installed again) move once the whole Cluster runs the
	// release's Kubernetes version: the control plane and every MachineDeployment and
	// MachinePool, rolled out. Until then they stay at the release they were at.
	StageAfterClusterUpgrade AddonStage = "AfterClusterUpgrade"
)

// StageAction is what a stage step does with its component.
// +kubebuilder:validation:Enum=apply;delete
type StageAction string

const (
	// StageActionApply installs or upgrades the component.
	StageActionApply StageAction = "apply"
	// StageActionDelete, in the BeforeClusterUpgrade stage only, removes the component from a
	// Cluster upgrading to the release before its control plane moves: its Flux object is
	// deleted and Flux uninstalls it. The component may be one the release does not have (an
	// old release's); one the release has is installed again after the upgrade.
	StageActionDelete StageAction = "delete"
)

// SkipBeforeUpgradeGateAnnotation on a CAPI Cluster lets its Kubernetes upgrade proceed although
// the BeforeClusterUpgrade components of the release it moves to are not Ready yet: the
// operator's BeforeClusterUpgrade hook answers Success, and the ClusterAddon records the skip
// (status.stages[].skipped) with an Event. The value is ignored. Remove it after the upgrade:
// while it is set, no upgrade of the Cluster waits for its addons.
const SkipBeforeUpgradeGateAnnotation = "clusterstack.io/skip-before-upgrade-gate"

// Reasons of the addon stages.
const (
	// ReasonWaitingForControlPlaneUpgrade: components of the AfterClusterUpgrade stage wait for the
	// control plane to run the Kubernetes version of the release the Cluster moves to. What to do:
	// nothing: Cluster API upgrades the control plane. If it does not move, look at the ClusterAddon's
	// status.stages (the BeforeClusterUpgrade gate) and the control plane object.
	// +docs:on=ClusterAddon/Progressing
	ReasonWaitingForControlPlaneUpgrade = "WaitingForControlPlaneUpgrade"
	// ReasonWaitingForWorkersUpgrade: the control plane runs the Kubernetes version of the release the
	// Cluster moves to; components of the AfterClusterUpgrade stage wait for the Cluster's
	// MachineDeployments and MachinePools to be rolled out at it. What to do: nothing; if the rollout
	// stalls, look at the MachineDeployments the stage's message names.
	// +docs:on=ClusterAddon/Progressing
	ReasonWaitingForWorkersUpgrade = "WaitingForWorkersUpgrade"
	// ReasonUpgradeHeld: the BeforeClusterUpgrade hook has held the Kubernetes upgrade of the
	// Cluster for longer than the degraded grace period, because the BeforeClusterUpgrade
	// components of the release it moves to are not Ready (the message names the component and
	// its Flux object). What to do: fix what the message names (the component's Flux object and
	// what Flux says about it); to upgrade without waiting for the components, set annotation
	// clusterstack.io/skip-before-upgrade-gate on the Cluster and remove it after the upgrade.
	// +docs:on=ClusterAddon/Degraded,ClusterStack/Degraded
	ReasonUpgradeHeld = "UpgradeHeld"
	// ReasonRequirementsConflict: the release a Cluster moves to and the release its addons are at
	// require a ManagementOperator in version ranges no version satisfies together: while the
	// Cluster is at the one, the operator may not leave its range, and the Cluster may not move
	// until the operator is in the other's (a cycle no wait resolves; the message names both
	// releases, the operator and the ranges). What to do: move the Cluster to a release whose range
	// overlaps the one it is at, and from there to the target; or set the ManagementOperator's
	// spec.overrideStackRequirements to move the operator anyway. The Kubernetes upgrade can go
	// ahead with annotation clusterstack.io/skip-before-upgrade-gate on the Cluster.
	// +docs:on=ClusterAddon/ReleaseReady,ClusterAddon/Progressing,ClusterAddon/Degraded,ClusterStack/Degraded
	ReasonRequirementsConflict = "RequirementsConflict"
)

// StageWait is what the components of an addon stage wait for before they move.
// +kubebuilder:validation:Enum=ControlPlane;Workers
type StageWait string

const (
	// StageWaitControlPlane: the control plane does not run the release's Kubernetes version yet.
	StageWaitControlPlane StageWait = "ControlPlane"
	// StageWaitWorkers: the control plane runs the release's Kubernetes version, but some
	// MachineDeployment or MachinePool of the Cluster is not rolled out at it yet.
	StageWaitWorkers StageWait = "Workers"
)

// ReleaseStageStep is one step of an addon stage of a release.
type ReleaseStageStep struct {
	// component the step is about.
	// +kubebuilder:validation:MaxLength=63
	Component string `json:"component"`
	// action is apply or delete.
	Action StageAction `json:"action"`
}

// ReleaseStage is one addon stage of a release's clusteraddon.yaml.
type ReleaseStage struct {
	// name of the stage.
	Name AddonStage `json:"name"`
	// steps of the stage, in the order of clusteraddon.yaml.
	// +kubebuilder:validation:MaxItems=256
	// +listType=atomic
	// +optional
	Steps []ReleaseStageStep `json:"steps,omitempty"`
}

// AddonStageStatus is the state of one addon stage of a Cluster: which components it moves to
// which release, and whether they are applied and Ready there. The ClusterAddon controller
// computes it from the Cluster, its control plane and the Flux objects on every reconcile.
type AddonStageStatus struct {
	// name of the stage.
	Name AddonStage `json:"name"`
	// release the stage moves its components to (status.desiredRelease).
	// +kubebuilder:validation:MaxLength=63
	Release string `json:"release"`
	// components the stage moves, in addon order; empty when the release lists none for it.
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=atomic
	// +optional
	Components []string `json:"components,omitempty"`
	// removes are the components this stage removes from the Cluster (the release's delete
	// steps of BeforeClusterUpgrade, in file order): their Flux objects are deleted, and Flux
	// uninstalls them, before the control plane upgrade. One the release has is installed
	// again after the upgrade. Empty when the stage removes nothing.
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=atomic
	// +optional
	Removes []string `json:"removes,omitempty"`
	// applied is true when the Flux object of every component of the stage is written for the
	// release and no Flux object of a component it removes is left.
	Applied bool `json:"applied"`
	// ready is true when every component of the stage is applied and its Flux object is Ready at
	// the release's version and revision.
	Ready bool `json:"ready"`
	// skipped is true when the Cluster carries the clusterstack.io/skip-before-upgrade-gate
	// annotation while this BeforeClusterUpgrade stage is not Ready: the upgrade is let through.
	// +optional
	Skipped bool `json:"skipped,omitempty"`
	// waitingFor is set while the components of this AfterClusterUpgrade stage wait for the
	// Cluster's upgrade: ControlPlane while the control plane does not run the release's
	// Kubernetes version, Workers while it does but a MachineDeployment or MachinePool of the
	// Cluster is not rolled out at it yet. Empty otherwise.
	// +optional
	WaitingFor StageWait `json:"waitingFor,omitempty"`
	// message says what the stage waits for, naming the Cluster, the components and versions.
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	Message string `json:"message,omitempty"`
	// lastTransitionTime is when applied or ready last changed.
	LastTransitionTime metav1.Time `json:"lastTransitionTime"`
}
