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
	// It does not go False during a normal upgrade, nor during one that is stuck or invalid while
	// the delivered version keeps running: only when a Flux object failed while applying to the
	// cluster (an upgrade, install or health check failed), or the delivered state is observed
	// not to serve.
	// +docs:kinds=ClusterStack,ClusterStackRelease,ClusterAddon,ManagementOperator
	AvailableCondition = "Available"
	// ProgressingCondition is True while moving from one version or configuration to another.
	// It is not set for routine reconciles of an unchanged state.
	// +docs:kinds=ClusterStack,ClusterStackRelease,ClusterAddon,ManagementOperator
	ProgressingCondition = "Progressing"
	// DegradedCondition is True when the desired state is persistently not met: a Flux object
	// is Stalled, or not Ready for longer than the grace period, or the input is invalid.
	// +docs:kinds=ClusterStack,ClusterStackRelease,ClusterAddon,ManagementOperator
	DegradedCondition = "Degraded"
	// ReadyCondition summarises the others for kstatus: True when Available and neither
	// Progressing nor Degraded.
	// +docs:kinds=ClusterStack,ClusterStackRelease,ClusterAddon,ManagementOperator
	// +docs:mirrors=Degraded,Progressing,Available
	ReadyCondition = meta.ReadyCondition
	// StalledCondition follows kstatus: True when the object cannot reach its desired state
	// without a change (invalid input, a Flux object that stalled, a failure that outlasted the
	// grace period). kstatus, `kubectl wait` and Flux health checks then report it Failed.
	// Set together with Degraded, with the same reason and message.
	// +docs:kinds=ClusterStack,ClusterStackRelease,ClusterAddon,ManagementOperator
	// +docs:mirrors=Degraded
	StalledCondition = meta.StalledCondition
	// ReconcilingCondition follows kstatus: True while the object is not Ready yet and not
	// Stalled (work in progress), so kstatus reports it InProgress rather than Current.
	// +docs:kinds=ClusterStack,ClusterStackRelease,ClusterAddon,ManagementOperator
	// +docs:mirrors=Degraded,Progressing,Available
	ReconcilingCondition = meta.ReconcilingCondition
)

// Condition types owned by the controllers that write Flux objects. They record facts
// (input problems, what is awaited); the status aggregation turns them into the four above.
const (
	// ReleasesResolvedCondition on a ClusterStack is False when the wanted releases could not
	// be determined (for example the repository's tags could not be listed).
	// +docs:kinds=ClusterStack
	ReleasesResolvedCondition = "ReleasesResolved"
	// StackValidCondition on a ClusterStackRelease is False when the stack at the release's tag
	// could not be fetched or is malformed; the message names the tag, the file and the cause.
	// +docs:kinds=ClusterStackRelease
	StackValidCondition = "StackValid"
	// ValuesRenderedCondition on a ClusterAddon is False when the stack's value templates could
	// not be rendered for the cluster; the message names the component, the file and the cause.
	// +docs:kinds=ClusterAddon
	ValuesRenderedCondition = "ValuesRendered"
	// WorkloadClusterReadyCondition on a ClusterAddon is False while the Cluster's control plane
	// is not initialized or its kubeconfig Secret does not exist yet.
	// +docs:kinds=ClusterAddon
	WorkloadClusterReadyCondition = "WorkloadClusterReady"
	// ReleaseReadyCondition on a ClusterAddon is False while the ClusterStackRelease the Cluster
	// uses does not exist (it is being created, or its tag is not published) or has not been
	// validated yet; the message names the release and the ClusterStack.
	// +docs:kinds=ClusterAddon
	ReleaseReadyCondition = "ReleaseReady"
	// ObjectsOwnedCondition on a ClusterAddon is False when an object the operator would generate
	// for the Cluster exists and is controlled by someone else (another ClusterAddon, a person):
	// the operator reports the conflict instead of taking the object over.
	// +docs:kinds=ClusterAddon
	ObjectsOwnedCondition = "ObjectsOwned"
	// PausedCondition on a ClusterAddon is True while the Cluster is paused (spec.paused or
	// CAPI's paused annotation): the operator writes nothing for the Cluster until it resumes.
	// +docs:kinds=ClusterAddon
	PausedCondition = "Paused"
	// TagVerifiedCondition on a ClusterStackRelease is False when the release's tag no longer
	// points at the commit the release was validated at (and the ClusterStack does not follow
	// moved tags), or when the tag's commit could not be checked. On a ManagementOperator it is
	// False when the tag of the desired version no longer points at the commit the version is
	// pinned to (status.history[].commit), Unknown when the tags could not be listed.
	// +docs:kinds=ClusterStackRelease,ManagementOperator
	TagVerifiedCondition = "TagVerified"
	// UpgradeableCondition follows ClusterOperator's Upgradeable. On a ManagementOperator it is
	// False when spec.version is outside a version range that a stack release in use by Clusters
	// requires of the operator: the version is not applied unless spec.overrideStackRequirements
	// is set. On a ClusterStack it is False when one of its releases does not have its
	// requirements met (RequirementsMet=False); the message names the release and the operator.
	// +docs:kinds=ManagementOperator,ClusterStack
	UpgradeableCondition = "Upgradeable"
	// DisabledCondition on a ManagementOperator is True when no stack in the cluster requires the
	// operator (as cluster-baremetal-operator reports on platforms it does not support): it is
	// then Available too, rather than reported missing or broken.
	// +docs:kinds=ManagementOperator
	DisabledCondition = "Disabled"
	// RequirementsMetCondition on a ClusterStackRelease is False when the operator versions or the
	// Cluster API contract its stack requires (`requires:` in stack.yaml) are not delivered: no
	// Cluster's addons are moved to it until they are. The message names the release, the
	// operator, the range and the delivered version.
	// +docs:kinds=ClusterStackRelease
	RequirementsMetCondition = "RequirementsMet"
	// ProviderObjectsReadyCondition on a ClusterStackRelease is False while an object its
	// cluster-class created besides the ClusterClass and templates (status.providerKinds: a
	// machine image, say) is not ready by its own status, naming it; True once every one is (or
	// the cluster-class creates none). While it is False the release is not Available, is not
	// offered as an update, and the Cluster webhook refuses Clusters that would start using it.
	// +docs:kinds=ClusterStackRelease
	ProviderObjectsReadyCondition = "ProviderObjectsReady"
)

// Condition reasons.
const (
	// ReasonAsExpected: the condition holds as it should. What to do: nothing.
	// +docs:on=ClusterStack/Available,ClusterStack/Progressing,ClusterStack/Degraded,ClusterStack/ReleasesResolved,ClusterStack/Upgradeable,ClusterStackRelease/Available,ClusterStackRelease/Progressing,ClusterStackRelease/Degraded,ClusterStackRelease/StackValid,ClusterStackRelease/TagVerified,ClusterStackRelease/RequirementsMet,ClusterStackRelease/ProviderObjectsReady,ClusterAddon/Available,ClusterAddon/Progressing,ClusterAddon/Degraded,ClusterAddon/ValuesRendered,ClusterAddon/WorkloadClusterReady,ClusterAddon/ReleaseReady,ClusterAddon/ObjectsOwned,ManagementOperator/Available,ManagementOperator/Progressing,ManagementOperator/Degraded,ManagementOperator/Upgradeable,ManagementOperator/TagVerified
	ReasonAsExpected = "AsExpected"
	// ReasonReconciling: a Flux object is reconciling or has not observed its latest generation; on a
	// ClusterStack, a release or Cluster of the stack is progressing, or no version is fully available
	// yet. What to do: usually nothing: Flux is applying. The message names the object; `kubectl
	// clusterstack tree` shows every object's state. If it lasts longer than the grace period it turns
	// into Degraded with reason FluxObjectNotReady.
	// +docs:on=ClusterStack/Progressing,ClusterStack/Available,ClusterStackRelease/Progressing,ClusterAddon/Progressing,ManagementOperator/Progressing
	ReasonReconciling = "Reconciling"
	// ReasonRevisionPending: a Flux object has not yet applied the expected revision. What to do:
	// usually nothing: Flux fetches and applies it at its next reconcile. If it stays, look at the
	// release's GitRepository (`kubectl describe gitrepository <release>`) and at source-controller.
	// +docs:on=ClusterStackRelease/Progressing,ClusterAddon/Progressing,ManagementOperator/Progressing
	ReasonRevisionPending = "RevisionPending"
	// ReasonUpgrading: a newer release is being rolled out. What to do: nothing; follow it with
	// `kubectl get caddon -o wide` or `kubectl clusterstack tree`. The version delivered before stays
	// Available meanwhile.
	// +docs:on=ClusterAddon/Progressing,ManagementOperator/Progressing
	ReasonUpgrading = "Upgrading"
	// ReasonFluxStalled: a Flux object reports Stalled: Flux cannot go on without a change. What to
	// do: the message names the object and what Flux said; fix the cause (the chart or manifests of
	// the stack, the values, the target cluster) and deliver the fix as a new stack version, or change
	// what the object depends on. `kubectl clusterstack why CLUSTER` shows the failing component.
	// +docs:on=ClusterStackRelease/Degraded,ClusterAddon/Degraded,ManagementOperator/Degraded,ClusterStack/Degraded
	ReasonFluxStalled = "FluxObjectStalled"
	// ReasonFluxNotReady: a Flux object has not been Ready for longer than the grace period (the
	// operator's --degraded-grace-period); on a ClusterStack's Available, some of its Clusters are not
	// Available. What to do: the message names the object and what Flux last said (a failed install,
	// an unreachable workload API server, a "forbidden" of the service account); `kubectl describe`
	// the object, fix the cause, and Flux retries by itself.
	// +docs:on=ClusterStack/Available,ClusterStackRelease/Degraded,ClusterAddon/Degraded,ManagementOperator/Degraded,ClusterStack/Degraded
	ReasonFluxNotReady = "FluxObjectNotReady"
	// ReasonInvalidStack: the stack at the release's tag is malformed; the message names the tag, the
	// file and the problem. What to do: run `stackctl lint` on the stack at that tag, fix it, and
	// publish the fix as a new version (do not move the tag); then pin the new version, or move the
	// Clusters to it.
	// +docs:on=ClusterStackRelease/StackValid,ClusterStackRelease/Degraded,ClusterStack/Degraded
	ReasonInvalidStack = "InvalidStack"
	// ReasonArtifactUnavailable: the release's source artifact could not be fetched from
	// source-controller. What to do: usually nothing: it is retried. If it lasts, check that
	// source-controller runs and serves its storage to the operator (--artifact-host-override), and
	// the release's GitRepository.
	// +docs:on=ClusterStackRelease/StackValid,ClusterStackRelease/Progressing,ClusterStackRelease/Degraded,ClusterStack/Degraded
	ReasonArtifactUnavailable = "ArtifactUnavailable"
	// ReasonSourceNotReady: the release's GitRepository is not Ready (tag missing, repository
	// unreachable). What to do: `kubectl describe gitrepository <release>` says why; check that the
	// tag exists (`git ls-remote --tags <url>`), the URL, and the Secret in spec.source.secretRef.
	// +docs:on=ClusterStackRelease/Progressing,ClusterStackRelease/Degraded,ClusterStack/Degraded
	ReasonSourceNotReady = "SourceNotReady"
	// ReasonTagListFailed: the repository's tags could not be listed, so the operator cannot tell
	// which releases exist. What to do: the message has the error (credentials removed); check
	// spec.source.url, the credentials Secret in spec.source.secretRef (Flux's GitRepository format)
	// and that the operator reaches the Git server. It is retried every spec.interval. A release
	// whose tag cannot be listed keeps delivering its validated commit (TagVerified Unknown), and is
	// Degraded once that has lasted the grace period. A ManagementOperator whose repository's tags
	// cannot be listed reports TagVerified Unknown and keeps its availableUpdates as last listed.
	// +docs:on=ClusterStack/ReleasesResolved,ClusterStack/Degraded,ClusterStackRelease/TagVerified,ClusterStackRelease/Degraded,ClusterAddon/ReleaseReady,ClusterAddon/ValuesRendered,ClusterAddon/Progressing,ClusterAddon/Degraded,ManagementOperator/TagVerified
	ReasonTagListFailed = "TagListFailed"
	// ReasonTagListTooLarge: the repository advertises more references than one listing reads
	// (more than 16 MiB of reference advertisement, more than 50,000 references, or more than
	// 1,000 tags of the stack's or operator's form); the message names the repository and the
	// limit. The listing stops there, so the operator cannot tell which releases exist; stacks
	// and operators reading other repositories are not affected. What to do: delete the branches
	// and tags the repository no longer needs, or publish the stack (or operator) from a
	// repository of its own.
	// +docs:on=ClusterStack/ReleasesResolved,ClusterStack/Degraded,ManagementOperator/TagVerified
	ReasonTagListTooLarge = "TagListTooLarge"
	// ReasonNoReleases: no release matches the ClusterStack. What to do: pin a published version in
	// spec.versions, or publish a tag <provider>-<name>-<major>-<minor>-<version> (with
	// spec.autoSubscribe).
	// +docs:on=ClusterStack/Available
	ReasonNoReleases = "NoReleases"
	// ReasonRenderFailed: a value template failed to render; the message names the release, the
	// component, the file and the error. What to do: `kubectl clusterstack values CLUSTER` and
	// `stackctl template` show the rendering. A printed value missing from the data (often a field the
	// Cluster does not have yet, such as the control plane endpoint) is retried on every change of the
	// Cluster; a broken template needs a fixed stack version.
	// +docs:on=ClusterAddon/ValuesRendered,ClusterAddon/Degraded,ClusterStack/Degraded
	ReasonRenderFailed = "RenderFailed"
	// ReasonRenderLimitExceeded: a value template hit a rendering limit (time, output size, a count or
	// allocation cap); the message names the function and the limit. The time limit counts wall-clock
	// time, which an operator short of CPU can run out of: a render that did is tried again by itself,
	// after 10 s, then twice as long each time up to 10 minutes. What to do: make the template do
	// less (smaller output, fewer iterations) and publish it as a new stack version; the limits are
	// fixed.
	// +docs:on=ClusterAddon/ValuesRendered,ClusterAddon/Degraded,ClusterStack/Degraded
	ReasonRenderLimitExceeded = "RenderLimitExceeded"
	// ReasonOverrideFailed: a ClusterAddonOverride selecting the Cluster cannot be merged into its
	// values: it names a component the Cluster's release does not have, a key that would become a
	// variable every component gets or that two keys would become, or it takes the values past the
	// render limits; the message names the override, the component and the key. Nothing of the
	// release changes for this Cluster (other Clusters are not affected). What to do: fix or remove
	// the override the message names (`kubectl get clusteraddonoverrides -n NAMESPACE`), or narrow
	// its spec.clusterSelector so that it no longer selects this Cluster.
	// +docs:on=ClusterAddon/ValuesRendered,ClusterAddon/Degraded,ClusterStack/Degraded
	ReasonOverrideFailed = "OverrideFailed"
	// ReasonWaitingForControlPlane: the Cluster's control plane is not initialized yet; when Cluster
	// API reports that it cannot build the Cluster's topology (TopologyReconciled False, reason
	// ReconcileFailed or ClusterClassNotReconciled), the message quotes it. What to do: nothing
	// until Cluster API initializes it; if that takes long, or the message quotes Cluster API, fix
	// what it names (a variable, a template of the ClusterClass) and look at the Cluster and its
	// control plane (`kubectl describe cluster`, `kubectl get kubeadmcontrolplanes`).
	// +docs:on=ClusterAddon/WorkloadClusterReady,ClusterAddon/Progressing,ClusterAddon/Degraded,ClusterStack/Degraded
	ReasonWaitingForControlPlane = "WaitingForControlPlane"
	// ReasonWaitingForKubeconfig: the Cluster's kubeconfig Secret does not exist yet. What to do:
	// nothing until Cluster API writes Secret <cluster>-kubeconfig; if the control plane is
	// initialized and it does not appear, look at the control plane provider.
	// +docs:on=ClusterAddon/WorkloadClusterReady,ClusterAddon/Progressing,ClusterAddon/Degraded,ClusterStack/Degraded
	ReasonWaitingForKubeconfig = "WaitingForKubeconfig"
	// ReasonWaitingForRelease: the ClusterStackRelease the Cluster uses is not ready to deliver yet
	// (not validated, its requirements not checked, or its GitRepository not at the validated
	// revision). What to do: usually nothing; if it stays, the message and the release's own
	// conditions (`kubectl describe clusterstackrelease <release>`) say what it waits for.
	// +docs:on=ClusterAddon/ReleaseReady,ClusterAddon/Progressing,ClusterAddon/Degraded,ClusterStack/Degraded
	ReasonWaitingForRelease = "WaitingForRelease"
	// ReasonInUse: the object cannot be removed because Clusters still use it. What to do: move the
	// Clusters the message names to another release, or delete them; the deletion then completes.
	// +docs:on=ClusterStack/ReleasesResolved
	ReasonInUse = "InUse"
	// ReasonNoClusters: no Cluster uses the stack; nothing to report for clusters. What to do:
	// nothing.
	// +docs:on=none
	ReasonNoClusters = "NoClusters"
	// ReasonTagMoved: the release tag (or a ManagementOperator version's tag) points at another
	// commit than the validated (pinned) one; the message names the tag and both commits. The
	// validated commit keeps being delivered. What to do: move the tag back to the validated
	// commit, or publish the change as a new version; set spec.followMovedTags on the ClusterStack
	// (or the ManagementOperator) only if moved tags are meant to be delivered.
	// +docs:on=ClusterStackRelease/TagVerified,ClusterStackRelease/Degraded,ClusterStack/Degraded,ManagementOperator/TagVerified,ManagementOperator/Degraded
	ReasonTagMoved = "TagMoved"
	// ReasonTagNotFound: a Cluster uses a release whose tag is not published. The ClusterStack lists
	// it in status.missingReleases; nothing delivered is removed. What to do: publish the tag, or move
	// the Cluster to a published release (the ClusterStack's status.releases).
	// +docs:on=ClusterAddon/ReleaseReady,ClusterAddon/ValuesRendered,ClusterAddon/Degraded,ClusterStack/Degraded
	ReasonTagNotFound = "TagNotFound"
	// ReasonReleaseNotFound: the release a Cluster uses does not exist (yet); it is being created.
	// What to do: usually nothing: the ClusterStack creates it when its tag is published. If it stays,
	// look at the ClusterStack's status.missingReleases and ReleasesResolved condition.
	// +docs:on=ClusterAddon/ReleaseReady,ClusterAddon/ValuesRendered,ClusterAddon/Progressing,ClusterAddon/Degraded,ClusterStack/Degraded
	ReasonReleaseNotFound = "ReleaseNotFound"
	// ReasonStackNotFound: a Cluster uses a release-shaped ClusterClass for which no ClusterStack in
	// its namespace exists. What to do: create the ClusterStack for that provider, stack and
	// Kubernetes minor in the Cluster's namespace, or move the Cluster to a release of an existing
	// one.
	// +docs:on=ClusterAddon/ReleaseReady,ClusterAddon/ValuesRendered,ClusterAddon/Degraded
	ReasonStackNotFound = "StackNotFound"
	// ReasonOwnershipConflict: a generated object's name is taken by an object someone else controls;
	// the operator does not take it over. What to do: rename or delete the object the message names
	// (or its owner); the operator looks again every minute.
	// +docs:on=ClusterAddon/ObjectsOwned,ClusterAddon/Degraded,ClusterStack/Degraded
	ReasonOwnershipConflict = "OwnershipConflict"
	// ReasonClusterPaused: the Cluster is paused (spec.paused or the cluster.x-k8s.io/paused
	// annotation); nothing is written for it. What to do: nothing while the pause is meant; resume the
	// Cluster and the operator catches up.
	// +docs:on=ClusterAddon/Paused
	ReasonClusterPaused = "ClusterPaused"
	// ReasonNotPaused: the Cluster is not paused. What to do: nothing.
	// +docs:on=ClusterAddon/Paused
	ReasonNotPaused = "NotPaused"
	// ReasonUnknown: the controller cannot tell yet (the object has not been reconciled, or no version
	// was accepted yet). What to do: wait for the first reconcile; if it stays, check that the
	// operator runs and read its log.
	// +docs:on=ClusterAddon/Progressing,ClusterAddon/Degraded,ManagementOperator/Progressing,ClusterStack/Degraded
	ReasonUnknown = "Unknown"
	// ReasonDowngradeNotSupported: a ManagementOperator's spec.version has a lower minor than the
	// delivered version; it is refused and nothing is applied. What to do: set spec.version to a
	// version of the delivered minor or later (the delivered version itself rolls back a failed
	// upgrade).
	// +docs:on=ManagementOperator/Degraded,ManagementOperator/Upgradeable
	ReasonDowngradeNotSupported = "DowngradeNotSupported"
	// ReasonRequirementsNotMet: a version is outside a range a stack release requires (on a
	// ManagementOperator), or the delivered operators do not meet a release's requirements (on a
	// ClusterStackRelease, the ClusterAddons waiting for it and its ClusterStack). What to do: on a
	// ManagementOperator, move the Clusters to releases that allow spec.version, or set
	// spec.overrideStackRequirements; otherwise deliver the operator version (or the Cluster API
	// contract) the message names, and the Clusters move by themselves.
	// +docs:on=ClusterStack/Upgradeable,ClusterStackRelease/RequirementsMet,ClusterAddon/ReleaseReady,ClusterAddon/Progressing,ClusterAddon/Degraded,ManagementOperator/Upgradeable,ManagementOperator/Progressing,ClusterStack/Degraded
	ReasonRequirementsNotMet = "RequirementsNotMet"
	// ReasonProviderObjectNotReady: an object the release's cluster-class created besides the
	// ClusterClass and templates (a machine image, an OpenStack Resource Controller Image) is not
	// ready by its own status: still being made, or failed; the message names the object and
	// what its controller said. While it lasts, the release is not Available and Clusters cannot
	// start using it; past the grace period it is Degraded. What to do: usually wait (an image
	// upload takes minutes); for a failure, `kubectl describe` the object, fix its cause (the image
	// URL, the cloud credentials) and let its controller retry, or publish a fixed stack version.
	// +docs:on=ClusterStackRelease/ProviderObjectsReady
	ReasonProviderObjectNotReady = "ProviderObjectNotReady"
	// ReasonRequirementsOverridden: a ManagementOperator's spec.version is outside a range an in-use
	// release requires, and is applied anyway because spec.overrideStackRequirements is set. What to
	// do: nothing required (status.history records the accepted risk); move the Clusters to releases
	// that allow the version, then remove the override.
	// +docs:on=ManagementOperator/Upgradeable
	ReasonRequirementsOverridden = "RequirementsOverridden"
	// ReasonInvalidChannel: a ManagementOperator's spec.channel is not a semantic version range. What
	// to do: fix spec.channel (e.g. ">=1.10.0 <1.12.0"); the delivered version is not affected.
	// +docs:on=ManagementOperator/Degraded
	ReasonInvalidChannel = "InvalidChannel"
	// ReasonInvalidVersion: a ManagementOperator's spec.version is not a semantic version. What to do:
	// set spec.version to an exact version with a leading v, e.g. v1.10.3.
	// +docs:on=ManagementOperator/Degraded,ManagementOperator/Upgradeable
	ReasonInvalidVersion = "InvalidVersion"
	// ReasonNotRequired: no stack in the cluster requires the ManagementOperator (Disabled=True). What
	// to do: nothing; it is still delivered. Delete it if nothing else needs it.
	// +docs:on=ManagementOperator/Disabled,ManagementOperator/Available
	ReasonNotRequired = "NotRequired"
	// ReasonRequired: a stack in the cluster requires the ManagementOperator (Disabled=False). What to
	// do: nothing.
	// +docs:on=ManagementOperator/Disabled
	ReasonRequired = "Required"
	// ReasonDeploymentUnavailable: a Deployment of a ManagementOperator has no available replicas.
	// What to do: `kubectl describe deployment` the Deployment the message names and fix its pods
	// (image, configuration, variables in spec.kustomize.variablesSecretRef, resources).
	// +docs:on=ManagementOperator/Available
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

// ShardLabel is the label of a CAPI Cluster that names the shard (the operator instance) that
// delivers its addons, by convention: shard N runs with
// --watch-label-selector=clusterstack.io/shard=N, the main instance with
// --watch-label-selector='!clusterstack.io/shard' (it serves the Clusters without the label), as
// Flux shards its controllers with sharding.fluxcd.io/key. Changing the label hands the Cluster
// over to the other shard, which adopts its ClusterAddon and generated objects as they are.
const ShardLabel = "clusterstack.io/shard"

// TenantNamespaceLabel, with the value TenantNamespaceValue, marks a namespace whose Clusters
// may use cluster stacks (a team's namespace): the platform sets it when it creates the
// namespace (with the namespace's Flux ServiceAccount and RoleBinding). Cluster API calls the
// operator's Runtime Extension only for Clusters in namespaces carrying it (the ExtensionConfig's
// namespaceSelector), so that an operator outage never holds the upgrade of a Cluster that has
// nothing to do with cluster stacks.
const (
	TenantNamespaceLabel = "clusterstack.io/tenant"
	TenantNamespaceValue = "true"
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
	// lastFailureReason is the reason Flux gave with lastFailure (for example UpgradeFailed,
	// HealthCheckFailed or ArtifactFailed). A failure before anything was applied to the
	// cluster (ArtifactFailed, BuildFailed, DependencyNotReady, ValuesError, SourceNotReady)
	// leaves the delivered state as it was, so the subject stays Available for the delivered
	// version.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	LastFailureReason string `json:"lastFailureReason,omitempty"`
}

// OCISource is a repository in an OCI registry, read by Flux's OCIRepository and by the
// operator's tag listing with the same credentials, CA and verification.
// +kubebuilder:validation:XValidation:rule="!has(self.insecure) || !self.insecure || self.url.matches('^oci://(localhost|127[.][0-9]+[.][0-9]+[.][0-9]+)(:[0-9]+)?/')",message="insecure (plain http) is allowed only for a registry on a loopback address (localhost, 127.0.0.0/8), as in tests and the local plane: serve the registry over https, with certSecretRef for a private CA"
// +kubebuilder:validation:XValidation:rule="!has(self.insecure) || !self.insecure || !has(self.secretRef)",message="credentials are never sent over plain http: remove secretRef or insecure"
// +kubebuilder:validation:XValidation:rule="!has(self.insecure) || !self.insecure || !has(self.certSecretRef)",message="a CA (certSecretRef) is meaningless over plain http: remove certSecretRef or insecure"
type OCISource struct {
	// url of the OCI repository, without tag or digest: oci://<registry host>[:<port>]/<repository>,
	// e.g. oci://ghcr.io/org/operators/cluster-api.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.matches('^oci://[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?(:[0-9]+)?(/[a-z0-9]+(([.]|_|__|-+)[a-z0-9]+)*)+$')",message="url must be an OCI repository URL without tag or digest, oci://<registry host>[:<port>]/<repository>, with a lower-case repository path, e.g. oci://ghcr.io/org/operators/cluster-api"
	// +required
	URL string `json:"url"`

	// secretRef names a Secret of type kubernetes.io/dockerconfigjson holding the registry's
	// credentials (as `kubectl create secret docker-registry` writes it), in the namespace the
	// Flux objects are generated in. Its data is never copied.
	// +kubebuilder:validation:XValidation:rule="size(self.name) <= 253 && self.name.matches('^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$')",message="secretRef.name must be the name of a Secret: at most 253 lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// certSecretRef names a Secret whose `ca.crt` is the PEM CA bundle the registry's certificate
	// must chain to (Flux's OCIRepository `spec.certSecretRef`; `tls.crt` and `tls.key`, when
	// present, are a client certificate for Flux).
	// +kubebuilder:validation:XValidation:rule="size(self.name) <= 253 && self.name.matches('^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$')",message="certSecretRef.name must be the name of a Secret: at most 253 lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"
	// +optional
	CertSecretRef *meta.LocalObjectReference `json:"certSecretRef,omitempty"`

	// insecure reaches the registry over plain http. Only a registry on a loopback address may be
	// reached so (tests, the local plane), and never with credentials.
	// +optional
	Insecure bool `json:"insecure,omitempty"`

	// verify makes Flux verify every artifact's signature before anything of it is delivered: an
	// artifact without a valid signature is never delivered, and the object is Degraded with
	// Flux's message naming its digest.
	// +optional
	Verify *OCIVerification `json:"verify,omitempty"`
}

// OCIVerification verifies the signatures of OCI artifacts (Flux's OCIRepository `spec.verify`).
type OCIVerification struct {
	// provider of the signatures: cosign, with the public keys of secretRef. (Keyless cosign
	// needs Sigstore's public services, which air-gapped sites cannot reach: not offered.)
	// +kubebuilder:validation:Enum=cosign
	// +kubebuilder:default=cosign
	// +optional
	Provider string `json:"provider,omitempty"`

	// secretRef names a Secret whose keys ending in `.pub` are the cosign public keys a
	// signature must verify with (any one of them), in the namespace the Flux objects are
	// generated in.
	// +kubebuilder:validation:XValidation:rule="size(self.name) <= 253 && self.name.matches('^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$')",message="verify.secretRef.name must be the name of a Secret: at most 253 lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"
	// +required
	SecretRef meta.LocalObjectReference `json:"secretRef"`
}

// StackSource says where a stack's releases are published: a Git repository (url, secretRef,
// path) or an OCI registry (oci), one of the two.
// +kubebuilder:validation:XValidation:rule="has(self.url) != has(self.oci)",message="set spec.source.url (a Git repository) or spec.source.oci (an OCI repository), exactly one of them"
// +kubebuilder:validation:XValidation:rule="!has(self.url) || has(self.path)",message="spec.source.path is required with a Git repository (spec.source.url): the stack's directory in the repository, e.g. providers/aws/base/1-33"
// +kubebuilder:validation:XValidation:rule="!has(self.oci) || !has(self.secretRef)",message="spec.source.secretRef holds Git credentials: with spec.source.oci, set the registry's credentials in spec.source.oci.secretRef (a kubernetes.io/dockerconfigjson Secret)"
type StackSource struct {
	// url of the Git repository holding the stack, e.g. https://github.com/org/stacks. Its
	// releases are the tags <provider>-<name>-<major>-<minor>-<version>.
	// +kubebuilder:validation:Pattern=`^(https?|ssh)://.+$`
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	URL string `json:"url,omitempty"`

	// secretRef names a Secret in the ClusterStack's namespace with Git credentials, in the
	// format of Flux's GitRepository `spec.secretRef` (username/password, bearerToken or SSH keys).
	// +kubebuilder:validation:XValidation:rule="size(self.name) <= 253 && self.name.matches('^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$')",message="spec.source.secretRef.name must be the name of a Secret in the same namespace: at most 253 lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// path of the stack directory in the repository, e.g. "providers/aws/base/1-33"; required
	// with url. With oci, the directory in the published artifact; empty: its root (as
	// `stackctl push` publishes a stack).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.contains('..')",message="spec.source.path must be relative to the repository root and must not contain '..'"
	// +optional
	Path string `json:"path,omitempty"`

	// oci is the OCI repository the stack's releases are published in, one tag
	// <provider>-<name>-<major>-<minor>-<version> per release (`stackctl push`), with the
	// release's Helm charts beside it (docs/oci.md). Its Secrets are read in the ClusterStack's
	// namespace.
	// +optional
	OCI *OCISource `json:"oci,omitempty"`
}

// IsOCI reports whether the releases are read from an OCI registry.
func (s StackSource) IsOCI() bool { return s.OCI != nil }

// Location is the source's repository URL (Git or oci://), for messages.
func (s StackSource) Location() string {
	if s.OCI != nil {
		return s.OCI.URL
	}
	return s.URL
}
