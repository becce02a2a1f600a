package v1alpha1

import (
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// UpdatePolicy says which newer releases of a stack are offered as updates, and whether the
// operator proposes them as pull requests to the fleet repository the ClusterStack and its
// Clusters are applied from (by a Flux Kustomization). The operator never changes those
// objects itself: an update reaches a Cluster only through a merged commit.
type UpdatePolicy struct {
	// channel selects which versions are updates: empty (the default) for stable versions v<N>
	// only, or a channel name such as "alpha" for the versions v<N>-<channel>.<patch> (and
	// v<N>-<channel>-<patch>) of that channel and the stable versions.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]*$`
	// +kubebuilder:validation:MaxLength=32
	// +optional
	Channel string `json:"channel,omitempty"`

	// minReleaseAge holds back tags the operator first saw less than this long ago: they are
	// listed in status.conditionalUpdates (risk MinimumAgeNotReached, saying when the tag
	// becomes an update) and are not proposed. The age is measured from the time recorded in
	// status (discoveredAt), so a restart neither resets nor skips it. Defaults to 0.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +optional
	MinReleaseAge *metav1.Duration `json:"minReleaseAge,omitempty"`

	// proposals, when set, makes the operator open pull requests that move the Clusters (and,
	// with pinned versions, the ClusterStack) to the newest available update, wave by wave.
	// +optional
	Proposals *ProposalPolicy `json:"proposals,omitempty"`

	// waves split the stack's Clusters into rollout waves, in order. Each Cluster belongs to the
	// first wave whose selector matches its labels; Clusters that match none form a last wave
	// named "remaining". Without waves all Clusters form one wave. A wave's pull request is
	// opened only after the previous wave's was merged and every Cluster in it has been Available
	// on the target release for the wave's soak time.
	// +kubebuilder:validation:MaxItems=10
	// +listType=map
	// +listMapKey=name
	// +optional
	Waves []RolloutWave `json:"waves,omitempty"`
}

// ForgeProvider is a Git forge the operator opens pull requests on.
// +kubebuilder:validation:Enum=gitea;github
type ForgeProvider string

// Forge providers.
const (
	// ForgeGitea: Gitea, through go-git-providers and Gitea's SDK.
	ForgeGitea ForgeProvider = "gitea"
	// ForgeGitHub: GitHub or GitHub Enterprise (go-git-providers).
	ForgeGitHub ForgeProvider = "github"
)

// ProposalPolicy configures the pull requests the operator opens.
// +kubebuilder:validation:XValidation:rule="!has(self.branchPrefix) || !self.branchPrefix.endsWith('/')",message="spec.updates.proposals.branchPrefix must not end with '/': the operator appends /<stack>/<wave>"
type ProposalPolicy struct {
	// provider is the forge hosting the fleet repository: gitea or github.
	// +required
	Provider ForgeProvider `json:"provider"`

	// secretRef names a Secret in the ClusterStack's namespace whose key "token" holds a token
	// that may push branches to the fleet repository and open pull requests on it. It is kept
	// apart from the read credentials Flux uses for the repository. The operator reads the
	// token when it proposes and never copies it.
	// +required
	SecretRef meta.LocalObjectReference `json:"secretRef"`

	// apiURL is the forge's base URL, e.g. "https://gitea.example.com" or (GitHub Enterprise)
	// "https://github.example.com". Defaults to the scheme and host of the fleet repository's URL.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://`
	// +optional
	APIURL string `json:"apiURL,omitempty"`

	// branchPrefix is the start of the branches the operator pushes:
	// <branchPrefix>/<namespace>/<stack>/<wave>. Defaults to "clusterstack". The operator never
	// pushes to the repository's default branch or to the branch Flux follows.
	// +kubebuilder:validation:MaxLength=100
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._/-]*$`
	// +optional
	BranchPrefix string `json:"branchPrefix,omitempty"`

	// authorName and authorEmail identify the operator's commits. Commits on a proposal branch
	// by anyone else stop the operator from pushing to it. Default to "clusterstack-operator"
	// and "clusterstack-operator@users.noreply.local".
	// +kubebuilder:validation:MaxLength=100
	// +optional
	AuthorName string `json:"authorName,omitempty"`
	// +kubebuilder:validation:MaxLength=254
	// +optional
	AuthorEmail string `json:"authorEmail,omitempty"`
}

// RolloutWave is one wave of a rollout.
type RolloutWave struct {
	// name of the wave, e.g. "canary". It is part of the pull request's branch.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:XValidation:rule="self != 'remaining'",message="spec.updates.waves[].name \"remaining\" is reserved for the Clusters no wave selects"
	// +required
	Name string `json:"name"`

	// selector selects the wave's Clusters by their labels.
	// +required
	Selector metav1.LabelSelector `json:"selector"`

	// soakTime is how long every Cluster of the wave must have been Available on the target
	// release before the next wave is proposed. Defaults to 0.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +optional
	SoakTime *metav1.Duration `json:"soakTime,omitempty"`

	// maxConcurrent is how many of the wave's Clusters one pull request moves: the next ones
	// are proposed once those are Available on the target release. Unset means all at once.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxConcurrent *int32 `json:"maxConcurrent,omitempty"`
}

// UpdateRiskType names why a release may not be taken.
type UpdateRiskType string

// Risks of a conditional update.
const (
	// RiskRequirementsNotMet: the release requires management operators or a Cluster API contract the
	// management cluster does not have. What to do: deliver the operator versions the message names
	// (ManagementOperators' spec.version).
	RiskRequirementsNotMet UpdateRiskType = "RequirementsNotMet"
	// RiskValidationFailed: the release's stack failed validation. What to do: see the release's
	// StackValid condition; publish a fixed version.
	RiskValidationFailed UpdateRiskType = "ValidationFailed"
	// RiskSkipsKubernetesMinor: Clusters would have to skip a Kubernetes minor to take it. What to do:
	// move the Clusters through the minors in between first, one ClusterStack per minor.
	RiskSkipsKubernetesMinor UpdateRiskType = "SkipsKubernetesMinor"
	// RiskMinimumAgeNotReached: the tag is younger than spec.updates.minReleaseAge. What to do: wait
	// until the time the message names, or lower spec.updates.minReleaseAge.
	RiskMinimumAgeNotReached UpdateRiskType = "MinimumAgeNotReached"
	// RiskDeclined: a pull request proposing it was closed without merging. What to do: nothing: a
	// newer release is proposed when it comes; to take this one anyway, change the fleet by hand.
	RiskDeclined UpdateRiskType = "Declined"
)

// StackUpdate is a release Clusters may move to.
type StackUpdate struct {
	// release is the release name (tag and ClusterClass name).
	Release string `json:"release"`
	// version of the stack, e.g. "v3".
	Version string `json:"version"`
	// discoveredAt is when the operator first saw the tag.
	// +optional
	DiscoveredAt *metav1.Time `json:"discoveredAt,omitempty"`
}

// UpdateRisk is one reason a release may not be taken.
type UpdateRisk struct {
	// type of the risk: RequirementsNotMet, ValidationFailed, SkipsKubernetesMinor,
	// MinimumAgeNotReached or Declined.
	Type UpdateRiskType `json:"type"`
	// message says what the risk is and what would lift it.
	Message string `json:"message"`
}

// ConditionalUpdate is a release that exists but may not be taken, with the risks.
type ConditionalUpdate struct {
	StackUpdate `json:",inline"`
	// risks that hold the release back.
	// +listType=atomic
	Risks []UpdateRisk `json:"risks"`
}

// WavePhase is where a rollout wave stands.
// +kubebuilder:validation:Enum=Pending;Proposed;Rolling;Soaking;Done;Halted
type WavePhase string

// Wave phases.
const (
	// WavePending: an earlier wave has not finished.
	WavePending WavePhase = "Pending"
	// WaveProposed: the wave's pull request is open.
	WaveProposed WavePhase = "Proposed"
	// WaveRolling: the pull request was merged; Clusters are moving to the target release.
	WaveRolling WavePhase = "Rolling"
	// WaveSoaking: every Cluster is Available on the target release; the soak time runs.
	WaveSoaking WavePhase = "Soaking"
	// WaveDone: the soak time has passed (or the wave has no Cluster left to move).
	WaveDone WavePhase = "Done"
	// WaveHalted: a Cluster of the wave is Degraded, or its proposal cannot be made; no
	// further pull request is opened until that is resolved.
	WaveHalted WavePhase = "Halted"
)

// PullRequestRef names a pull request.
type PullRequestRef struct {
	// number of the pull request.
	Number int64 `json:"number"`
	// url of the pull request's web page.
	// +optional
	URL string `json:"url,omitempty"`
	// title of the pull request.
	// +optional
	Title string `json:"title,omitempty"`
	// branch the pull request is opened from.
	// +optional
	Branch string `json:"branch,omitempty"`
	// state is open, merged or closed.
	// +optional
	State string `json:"state,omitempty"`
}

// WaveStatus is the state of one rollout wave.
type WaveStatus struct {
	// name of the wave ("remaining" for the Clusters no wave selects).
	Name string `json:"name"`
	// phase of the wave: Pending, Proposed, Rolling, Soaking, Done or Halted.
	Phase WavePhase `json:"phase"`
	// clusters are the names of the wave's Clusters, sorted.
	// +listType=atomic
	// +optional
	Clusters []string `json:"clusters,omitempty"`
	// updated counts the wave's Clusters that are Available on the target release.
	// +optional
	Updated int32 `json:"updated"`
	// pullRequest is the wave's latest pull request for the target release.
	// +optional
	PullRequest *PullRequestRef `json:"pullRequest,omitempty"`
	// soakingSince is when the last of the wave's Clusters became Available on the target
	// release (taken from the ClusterAddons' status).
	// +optional
	SoakingSince *metav1.Time `json:"soakingSince,omitempty"`
	// message says what the wave waits for, or why it is halted.
	// +optional
	Message string `json:"message,omitempty"`
}

// RolloutStatus is the state of the rollout of one release to the stack's Clusters.
type RolloutStatus struct {
	// target is the release being rolled out.
	Target string `json:"target"`
	// waves in order; the last one is "remaining" when Clusters match no wave.
	// +listType=atomic
	// +optional
	Waves []WaveStatus `json:"waves,omitempty"`
	// openPullRequest is the URL of the rollout's open pull request, if any.
	// +optional
	OpenPullRequest string `json:"openPullRequest,omitempty"`
}

// UpdatesProposedCondition is True when the rollout's current pull request is in place (or
// nothing needs proposing) and False, with a reason, when the operator cannot propose: the
// fleet file is not found, the forge refuses the push, someone else committed on the branch,
// or the rollout is halted.
// +docs:kinds=ClusterStack
const UpdatesProposedCondition = "UpdatesProposed"

// Reasons of the UpdatesProposed condition.
const (
	// ReasonNothingToPropose: no update, or every Cluster is at the newest one. What to do: nothing.
	// +docs:on=ClusterStack/UpdatesProposed
	ReasonNothingToPropose = "NothingToPropose"
	// ReasonProposed: the wave's pull request is open. What to do: review it and merge it (or close it
	// to decline the version); status.rollout.openPullRequest is its URL.
	// +docs:on=ClusterStack/UpdatesProposed
	ReasonProposed = "Proposed"
	// ReasonWaitingForWave: the rollout waits for a wave to roll out or soak. What to do: nothing;
	// `kubectl clusterstack updates STACK` shows each wave's phase.
	// +docs:on=ClusterStack/UpdatesProposed
	ReasonWaitingForWave = "WaitingForWave"
	// ReasonFleetSourceNotFound: the ClusterStack or its Clusters were not applied by a Flux
	// Kustomization from a GitRepository, or their manifests were not found in it. What to do: apply
	// them from the fleet repository with a Flux Kustomization (its kustomize.toolkit.fluxcd.io labels
	// on them and its inventory name them), or remove spec.updates.proposals.
	// +docs:on=ClusterStack/UpdatesProposed
	ReasonFleetSourceNotFound = "FleetSourceNotFound"
	// ReasonPushRefused: the forge refused the push of the proposal branch (a Warning Event says what
	// it answered). What to do: let the token in spec.updates.proposals.secretRef push branches named
	// <branchPrefix>/...; the push is retried once a minute.
	// +docs:on=ClusterStack/UpdatesProposed
	ReasonPushRefused = "PushRefused"
	// ReasonBranchModified: someone else committed on the proposal branch, so the operator stops
	// pushing to it; the message names the commit. What to do: merge or close the pull request as it
	// is, or delete the branch to let the operator propose afresh.
	// +docs:on=ClusterStack/UpdatesProposed
	ReasonBranchModified = "BranchModifiedByOthers"
	// ReasonForgeError: the forge's API or the repository could not be reached or answered an error.
	// What to do: check spec.updates.proposals.apiURL, the token, and that the operator reaches the
	// forge; it is retried.
	// +docs:on=ClusterStack/UpdatesProposed
	ReasonForgeError = "ForgeError"
	// ReasonRolloutHalted: a Cluster of a rolling wave is Degraded; nothing more is proposed. What to
	// do: fix the Cluster the message names (`kubectl clusterstack why CLUSTER`), or move it back to
	// the release it came from; the rollout goes on once no Cluster of the wave is Degraded.
	// +docs:on=ClusterStack/UpdatesProposed
	ReasonRolloutHalted = "RolloutHalted"
	// ReasonInvalidProposalConfig: spec.updates.proposals cannot be used (Secret missing, ...). What
	// to do: fix what the message names: the Secret in spec.updates.proposals.secretRef must exist in
	// the ClusterStack's namespace with a key "token", and each wave's selector must be valid.
	// +docs:on=ClusterStack/UpdatesProposed
	ReasonInvalidProposalConfig = "InvalidProposalConfig"
)
