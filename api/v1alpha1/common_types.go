package v1alpha1

import (
	"github.com/fluxcd/pkg/apis/meta"
)

// Condition types. Available, Progressing and Degraded carry the meaning OpenShift gives them
// on ClusterOperator; Ready is the kstatus summary of the three, so that `kubectl wait
// --for=condition=Ready` and kstatus-based tools (Flux health checks, Argo CD) judge the
// objects correctly. Only the status aggregation sets these four.
const (
	// AvailableCondition is True when the version being reported works: every Flux object it
	// needs is Ready at its current generation and has applied exactly the expected revision.
	// It does not go False during a normal upgrade.
	AvailableCondition = "Available"
	// ProgressingCondition is True while moving from one version or configuration to another.
	// It is not set for routine reconciles of an unchanged state.
	ProgressingCondition = "Progressing"
	// DegradedCondition is True when the desired state is persistently not met: a Flux object
	// is Stalled, or not Ready for longer than the grace period, or the input is invalid.
	DegradedCondition = "Degraded"
	// ReadyCondition summarises the others for kstatus: True when Available and neither
	// Progressing nor Degraded.
	ReadyCondition = meta.ReadyCondition
)

// Condition types owned by the controllers that write Flux objects. They record facts
// (input problems, what is awaited); the status aggregation turns them into the four above.
const (
	// ReleasesResolvedCondition on a ClusterStack is False when the wanted releases could not
	// be determined (for example the repository's tags could not be listed).
	ReleasesResolvedCondition = "ReleasesResolved"
	// StackValidCondition on a ClusterStackRelease is False when the stack at the release's tag
	// could not be fetched or is malformed; the message names the tag, the file and the cause.
	StackValidCondition = "StackValid"
	// ValuesRenderedCondition on a ClusterAddon is False when the stack's value templates could
	// not be rendered for the cluster; the message names the component, the file and the cause.
	ValuesRenderedCondition = "ValuesRendered"
	// WorkloadClusterReadyCondition on a ClusterAddon is False while the Cluster's control plane
	// is not initialized or its kubeconfig Secret does not exist yet.
	WorkloadClusterReadyCondition = "WorkloadClusterReady"
)

// Condition reasons.
const (
	// ReasonAsExpected: the condition holds as it should.
	ReasonAsExpected = "AsExpected"
	// ReasonReconciling: a Flux object is reconciling or has not observed its latest generation.
	ReasonReconciling = "Reconciling"
	// ReasonRevisionPending: a Flux object has not yet applied the expected revision.
	ReasonRevisionPending = "RevisionPending"
	// ReasonUpgrading: a newer release is being rolled out.
	ReasonUpgrading = "Upgrading"
	// ReasonFluxStalled: a Flux object reports Stalled.
	ReasonFluxStalled = "FluxObjectStalled"
	// ReasonFluxNotReady: a Flux object has not been Ready for longer than the grace period.
	ReasonFluxNotReady = "FluxObjectNotReady"
	// ReasonInvalidStack: the stack at the release's tag is malformed.
	ReasonInvalidStack = "InvalidStack"
	// ReasonArtifactUnavailable: the release's source artifact could not be fetched.
	ReasonArtifactUnavailable = "ArtifactUnavailable"
	// ReasonSourceNotReady: the release's GitRepository is not Ready (tag missing, repository unreachable).
	ReasonSourceNotReady = "SourceNotReady"
	// ReasonTagListFailed: the repository's tags could not be listed.
	ReasonTagListFailed = "TagListFailed"
	// ReasonNoReleases: no release matches the ClusterStack.
	ReasonNoReleases = "NoReleases"
	// ReasonRenderFailed: a value template failed to render.
	ReasonRenderFailed = "RenderFailed"
	// ReasonWaitingForControlPlane: the Cluster's control plane is not initialized yet.
	ReasonWaitingForControlPlane = "WaitingForControlPlane"
	// ReasonWaitingForKubeconfig: the Cluster's kubeconfig Secret does not exist yet.
	ReasonWaitingForKubeconfig = "WaitingForKubeconfig"
	// ReasonWaitingForRelease: the ClusterStackRelease the Cluster uses is not ready to deliver yet.
	ReasonWaitingForRelease = "WaitingForRelease"
	// ReasonInUse: the object cannot be removed because Clusters still use it.
	ReasonInUse = "InUse"
	// ReasonNoClusters: no Cluster uses the stack; nothing to report for clusters.
	ReasonNoClusters = "NoClusters"
	// ReasonUnknown: the controller cannot tell yet.
	ReasonUnknown = "Unknown"
)

// Labels carried by every object the operator generates, so a stack's, a release's, a
// cluster's or a component's objects can be selected with `-l`.
const (
	// StackLabel names the ClusterStack.
	StackLabel = "clusterstack.io/stack"
	// ReleaseLabel names the ClusterStackRelease.
	ReleaseLabel = "clusterstack.io/release"
	// ComponentLabel names the stack component ("cluster-class" or an addon component).
	ComponentLabel = "clusterstack.io/component"
	// ClusterNameLabel names the CAPI Cluster (CAPI's own label key).
	ClusterNameLabel = "cluster.x-k8s.io/cluster-name"
	// ManagedByLabel marks objects generated by the operator.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// ManagedByValue is the value of ManagedByLabel.
	ManagedByValue = "clusterstack-operator"
	// ClusterClassComponent is the ComponentLabel value of a release's cluster-class objects.
	ClusterClassComponent = "cluster-class"
)

// StackSource says where a stack's releases are published.
type StackSource struct {
	// url of the Git repository holding the stack, e.g. https://github.com/org/stacks.
	// +kubebuilder:validation:Pattern=`^(https?|ssh)://.+$`
	// +kubebuilder:validation:MaxLength=2048
	// +required
	URL string `json:"url"`

	// secretRef names a Secret in the ClusterStack's namespace with Git credentials, in the
	// format of Flux's GitRepository `spec.secretRef` (username/password, bearerToken or SSH keys).
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// path of the stack directory in the repository, e.g. "providers/aws/base/1-33".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.contains('..')",message="spec.source.path must be relative to the repository root and must not contain '..'"
	// +required
	Path string `json:"path"`
}
