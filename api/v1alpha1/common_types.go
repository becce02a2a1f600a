package v1alpha1

import (
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	// StalledCondition follows kstatus: True when the object cannot reach its desired state
	// without a change (invalid input, a Flux object that stalled, a failure that outlasted the
	// grace period). kstatus, `kubectl wait` and Flux health checks then report it Failed.
	// Set together with Degraded, with the same reason and message.
	StalledCondition = meta.StalledCondition
	// ReconcilingCondition follows kstatus: True while the object is not Ready yet and not
	// Stalled (work in progress), so kstatus reports it InProgress rather than Current.
	ReconcilingCondition = meta.ReconcilingCondition
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
	// ReleaseReadyCondition on a ClusterAddon is False while the ClusterStackRelease the Cluster
	// uses does not exist (it is being created, or its tag is not published) or has not been
	// validated yet; the message names the release and the ClusterStack.
	ReleaseReadyCondition = "ReleaseReady"
	// ObjectsOwnedCondition on a ClusterAddon is False when an object the operator would generate
	// for the Cluster exists and is controlled by someone else (another ClusterAddon, a person):
	// the operator reports the conflict instead of taking the object over.
	ObjectsOwnedCondition = "ObjectsOwned"
	// PausedCondition on a ClusterAddon is True while the Cluster is paused (spec.paused or
	// CAPI's paused annotation): the operator writes nothing for the Cluster until it resumes.
	PausedCondition = "Paused"
	// TagVerifiedCondition on a ClusterStackRelease is False when the release's tag no longer
	// points at the commit the release was validated at (and the ClusterStack does not follow
	// moved tags), or when the tag's commit could not be checked.
	TagVerifiedCondition = "TagVerified"
	// UpgradeableCondition follows ClusterOperator's Upgradeable. On a ManagementOperator it is
	// False when spec.version is outside a version range that a stack release in use by Clusters
	// requires of the operator: the version is not applied unless spec.overrideStackRequirements
	// is set. On a ClusterStack it is False when one of its releases does not have its
	// requirements met (RequirementsMet=False); the message names the release and the operator.
	UpgradeableCondition = "Upgradeable"
	// DisabledCondition on a ManagementOperator is True when no stack in the cluster requires the
	// operator (as cluster-baremetal-operator reports on platforms it does not support): it is
	// then Available too, rather than reported missing or broken.
	DisabledCondition = "Disabled"
	// RequirementsMetCondition on a ClusterStackRelease is False when the operator versions or the
	// Cluster API contract its stack requires (`requires:` in stack.yaml) are not delivered: no
	// Cluster's addons are moved to it until they are. The message names the release, the
	// operator, the range and the delivered version.
	RequirementsMetCondition = "RequirementsMet"
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
	// ReasonRenderLimitExceeded: a value template hit a rendering limit (time, output size, a
	// count or allocation cap); the message names the function and the limit.
	ReasonRenderLimitExceeded = "RenderLimitExceeded"
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
	// ReasonTagMoved: the release tag points at another commit than the validated one.
	ReasonTagMoved = "TagMoved"
	// ReasonTagNotFound: a Cluster uses a release whose tag is not published.
	ReasonTagNotFound = "TagNotFound"
	// ReasonReleaseNotFound: the release a Cluster uses does not exist (yet); it is being created.
	ReasonReleaseNotFound = "ReleaseNotFound"
	// ReasonStackNotFound: a Cluster uses a release-shaped ClusterClass for which no ClusterStack
	// in its namespace exists.
	ReasonStackNotFound = "StackNotFound"
	// ReasonOwnershipConflict: a generated object's name is taken by an object someone else controls.
	ReasonOwnershipConflict = "OwnershipConflict"
	// ReasonClusterPaused: the Cluster is paused.
	ReasonClusterPaused = "ClusterPaused"
	// ReasonNotPaused: the Cluster is not paused.
	ReasonNotPaused = "NotPaused"
	// ReasonUnknown: the controller cannot tell yet.
	ReasonUnknown = "Unknown"
	// ReasonDowngradeNotSupported: a ManagementOperator's spec.version has a lower minor than the
	// delivered version; it is refused and nothing is applied.
	ReasonDowngradeNotSupported = "DowngradeNotSupported"
	// ReasonRequirementsNotMet: a version is outside a range a stack release requires (on a
	// ManagementOperator), or the delivered operators do not meet a release's requirements (on a
	// ClusterStackRelease and its ClusterStack).
	ReasonRequirementsNotMet = "RequirementsNotMet"
	// ReasonRequirementsOverridden: a ManagementOperator's spec.version is outside a range an
	// in-use release requires, and is applied anyway because spec.overrideStackRequirements is set.
	ReasonRequirementsOverridden = "RequirementsOverridden"
	// ReasonInvalidChannel: a ManagementOperator's spec.channel is not a semantic version range.
	ReasonInvalidChannel = "InvalidChannel"
	// ReasonInvalidVersion: a ManagementOperator's spec.version is not a semantic version.
	ReasonInvalidVersion = "InvalidVersion"
	// ReasonNotRequired: no stack in the cluster requires the ManagementOperator (Disabled=True).
	ReasonNotRequired = "NotRequired"
	// ReasonRequired: a stack in the cluster requires the ManagementOperator (Disabled=False).
	ReasonRequired = "Required"
	// ReasonDeploymentUnavailable: a Deployment of a ManagementOperator has no available replicas.
	ReasonDeploymentUnavailable = "DeploymentUnavailable"
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
	// ManagementOperatorLabel names the ManagementOperator an object was generated for.
	ManagementOperatorLabel = "clusterstack.io/management-operator"
)

// UnhealthyObject is the status aggregation's record of a Flux object that is not healthy.
type UnhealthyObject struct {
	// object is "<Kind>/<name>" of the Flux object.
	// +kubebuilder:validation:MaxLength=320
	Object string `json:"object"`
	// component is the stack component the object delivers.
	// +optional
	Component string `json:"component,omitempty"`
	// since is when the object was first seen not healthy; it is not reset while Flux retries.
	Since metav1.Time `json:"since"`
	// lastFailure is what Flux last said when it reported the object failed (Ready False or
	// Stalled), kept while Flux retries and reports the attempt in progress.
	// +optional
	LastFailure string `json:"lastFailure,omitempty"`
}

// StackSource says where a stack's releases are published.
type StackSource struct {
	// url of the Git repository holding the stack, e.g. https://github.com/org/stacks.
	// +kubebuilder:validation:Pattern=`^(https?|ssh)://.+$`
	// +kubebuilder:validation:MaxLength=2048
	// +required
	URL string `json:"url"`

	// secretRef names a Secret in the ClusterStack's namespace with Git credentials, in the
	// format of Flux's GitRepository `spec.secretRef` (username/password, bearerToken or SSH keys).
	// +kubebuilder:validation:XValidation:rule="size(self.name) <= 253 && self.name.matches('^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$')",message="spec.source.secretRef.name must be the name of a Secret in the same namespace: at most 253 lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// path of the stack directory in the repository, e.g. "providers/aws/base/1-33".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.contains('..')",message="spec.source.path must be relative to the repository root and must not contain '..'"
	// +required
	Path string `json:"path"`
}
