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

	// windows are the maintenance windows of every wave that has none of its own, the
	// "remaining" wave included. A wave's Clusters move only while one of its windows is open:
	// its pull request may be opened at any time (the wave is then WaitingForWindow), and the
	// Cluster admission webhook refuses a move of one of its Clusters to a newer release of the
	// stack outside its windows, naming the next opening (docs/gitops.md). Moves back to an older
	// release are always allowed. Without windows (here and on the wave) a wave moves at any time.
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	// +optional
	Windows []MaintenanceWindow `json:"windows,omitempty"`
}

// HoldAnnotation on a ClusterStack holds its rollout: no pull request is opened or updated, and
// the Cluster admission webhook refuses moves of its Clusters to a newer release, until the
// annotation is removed. Its value is "<who>: <reason>", e.g. "alice: waiting for the CVE fix";
// without "<who>: " the field manager that last wrote the annotation is reported as who.
const HoldAnnotation = "clusterstack.io/hold"

// DefaultHoldLabel is the pull request label that holds a rollout when
// spec.updates.proposals.holdLabel is not set.
const DefaultHoldLabel = "clusterstack-hold"

// MaintenanceWindow is a recurring span of time in which a wave's Clusters may move.
type MaintenanceWindow struct {
	// schedule is when the window opens, in cron syntax: five fields (minute, hour, day of month,
	// month, day of week), e.g. "0 2 * * 1-5" for 02:00 on weekdays, or one of @hourly, @daily,
	// @weekly, @monthly, @yearly. The time zone is timeZone's, not a CRON_TZ prefix.
	// +kubebuilder:validation:MaxLength=100
	// +kubebuilder:validation:XValidation:rule="self.matches('^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|[0-9A-Za-z*,/?-]+( [0-9A-Za-z*,/?-]+){4})$')",message="spec.updates.windows[].schedule must be five cron fields separated by single spaces (minute hour day-of-month month day-of-week, e.g. \"0 2 * * 1-5\") or one of @hourly, @daily, @weekly, @monthly, @yearly; set the time zone in timeZone"
	// +required
	Schedule string `json:"schedule"`

	// duration is how long the window stays open after each start, in real (elapsed) time,
	// from 1m to 168h, e.g. "4h".
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('168h')",message="spec.updates.windows[].duration must be between 1m and 168h (one week), e.g. 4h"
	// +required
	Duration metav1.Duration `json:"duration"`

	// timeZone is the IANA time zone the schedule is read in, e.g. "Europe/Berlin"; defaults
	// to UTC. A name the time zone database does not know (or a schedule the cron parser
	// refuses) is reported (UpdatesProposed InvalidProposalConfig): nothing is proposed, and the
	// Cluster admission webhook refuses moves of the wave's Clusters, until it is fixed.
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_+-]+(/[A-Za-z0-9_+-]+)*$`
	// +optional
	TimeZone string `json:"timeZone,omitempty"`
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
	// Its host must be the fleet repository's or one the platform allows (the manager's
	// --forge-api-hosts), and it must be https: the token is sent there.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://`
	// +optional
	APIURL string `json:"apiURL,omitempty"`

	// branchPrefix is the first element of the branches the operator pushes:
	// <branchPrefix>/<namespace>/<stack>/<wave>. Defaults to "clusterstack". It is one path
	// element (no "/"): the operator appends the namespace and the stack itself, so that every
	// stack's branches have the same depth and no stack, in any namespace, can name or shadow
	// another's branches. The operator never pushes to the repository's default branch or to the
	// branch Flux follows.
	// +kubebuilder:validation:MaxLength=100
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._/-]*$`
	// +kubebuilder:validation:XValidation:rule="!self.contains('/')",message="spec.updates.proposals.branchPrefix must be one path element without '/': the operator appends /<namespace>/<stack>/<wave> itself, so that no ClusterStack's branches can overlap another's"
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

	// holdLabel is the label that, on one of the rollout's pull requests (open or merged),
	// holds the rollout as the clusterstack.io/hold annotation does. Defaults to
	// "clusterstack-hold".
	// +kubebuilder:validation:MaxLength=50
	// +kubebuilder:validation:Pattern=`^[^\s,]+$`
	// +optional
	HoldLabel string `json:"holdLabel,omitempty"`
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

	// windows are the wave's maintenance windows; they replace spec.updates.windows for this
	// wave. The wave's Clusters move only while one of them is open (see spec.updates.windows).
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	// +optional
	Windows []MaintenanceWindow `json:"windows,omitempty"`
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
	// RiskProviderObjectsNotReady: an object the release's cluster-class created (a machine image)
	// is not ready yet, or failed (the release's ProviderObjectsReady condition); no Cluster can use
	// the release meanwhile. What to do: wait for it, or see the condition's message for a failure.
	RiskProviderObjectsNotReady UpdateRiskType = "ProviderObjectsNotReady"
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
// +kubebuilder:validation:Enum=Pending;Proposed;WaitingForWindow;Held;Rolling;Soaking;Done;Halted
type WavePhase string

// Wave phases.
const (
	// WavePending: an earlier wave has not finished.
	WavePending WavePhase = "Pending"
	// WaveProposed: the wave's pull request is open.
	WaveProposed WavePhase = "Proposed"
	// WaveWaitingForWindow: the wave's Clusters would move now, but none of its maintenance
	// windows is open: its pull request is open (and may be merged), or merged and its Clusters
	// held by the Cluster admission webhook, until the window the message names opens.
	WaveWaitingForWindow WavePhase = "WaitingForWindow"
	// WaveHeld: the rollout is held (status.hold says by whom and since when): the wave's
	// pull request is neither opened nor updated, and its Clusters do not move.
	WaveHeld WavePhase = "Held"
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
	// phase of the wave: Pending, Proposed, WaitingForWindow, Held, Rolling, Soaking, Done or
	// Halted.
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
	// nextWindow is when the wave's next maintenance window opens, while it is
	// WaitingForWindow.
	// +optional
	NextWindow *metav1.Time `json:"nextWindow,omitempty"`
}

// HoldSource says where a rollout hold comes from.
// +kubebuilder:validation:Enum=Annotation;PullRequestLabel
type HoldSource string

// Hold sources.
const (
	// HoldFromAnnotation: the ClusterStack's clusterstack.io/hold annotation.
	HoldFromAnnotation HoldSource = "Annotation"
	// HoldFromPullRequestLabel: the hold label on one of the rollout's pull requests.
	HoldFromPullRequestLabel HoldSource = "PullRequestLabel"
)

// RolloutHold says who holds a stack's rollout, why and since when.
type RolloutHold struct {
	// source is Annotation or PullRequestLabel.
	Source HoldSource `json:"source"`
	// by is who set the hold: the name in the annotation's "<who>: <reason>", else the field
	// manager that last wrote the annotation ("manager kubectl-annotate"); for a label, the
	// forge user who added it, when the forge says.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	By string `json:"by,omitempty"`
	// reason is the annotation's reason, or which pull request carries the label.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Reason string `json:"reason,omitempty"`
	// since is when the operator first saw the hold; kept while the hold stays.
	Since metav1.Time `json:"since"`
	// pullRequest is the URL of the labelled pull request (source PullRequestLabel).
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	PullRequest string `json:"pullRequest,omitempty"`
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
	// ReasonWaitingForWindow: the wave that moves next has no maintenance window open: its pull
	// request is open or merged, and its Clusters move when the window the message names opens
	// (until then the Cluster admission webhook refuses their move, and the fleet's Kustomization
	// reports that refusal). What to do: nothing; to move now, add or widen a window in
	// spec.updates.windows or the wave's windows.
	// +docs:on=ClusterStack/UpdatesProposed
	ReasonWaitingForWindow = "WaitingForWindow"
	// ReasonRolloutHeld: the rollout is held by the clusterstack.io/hold annotation on the
	// ClusterStack or by the hold label on one of its pull requests; the message and status.hold say
	// who and since when. Nothing is proposed, and the Cluster admission webhook refuses moves of the
	// stack's Clusters to a newer release. What to do: remove the annotation (`kubectl annotate
	// clusterstack STACK clusterstack.io/hold-`) or the label when the reason is resolved.
	// +docs:on=ClusterStack/UpdatesProposed
	ReasonRolloutHeld = "RolloutHeld"
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
	// ReasonForgeError: the forge's API or the repository could not be reached, did not answer within
	// its deadline (the manager's --forge-api-timeout for an API call, --git-operation-timeout for a
	// clone, fetch or push), answered an error (the message says the HTTP status and the forge's
	// short reason, never its response body), or the fleet repository is larger than the checkout
	// size limit (--fleet-checkout-size-limit). What to do: check spec.updates.proposals.apiURL, the
	// token, and that the operator reaches the forge; it is retried.
	// +docs:on=ClusterStack/UpdatesProposed
	ReasonForgeError = "ForgeError"
	// ReasonForgeBusy: as many other ClusterStacks as the manager allows per forge host
	// (--forge-host-concurrency) are talking to this stack's forge host; the stack takes its turn
	// within seconds, and its updates are computed meanwhile. Reported only while the stack has no
	// other UpdatesProposed condition yet (otherwise that one is kept). What to do: nothing; if it
	// lasts, another stack's forge on the same host is slow (its ForgeError says so).
	// +docs:on=ClusterStack/UpdatesProposed
	ReasonForgeBusy = "ForgeBusy"
	// ReasonRolloutHalted: a Cluster of a rolling wave is Degraded; nothing more is proposed. What to
	// do: fix the Cluster the message names (`kubectl clusterstack why CLUSTER`), or move it back to
	// the release it came from; the rollout goes on once no Cluster of the wave is Degraded.
	// +docs:on=ClusterStack/UpdatesProposed
	ReasonRolloutHalted = "RolloutHalted"
	// ReasonInvalidProposalConfig: spec.updates.proposals cannot be used (Secret missing, a plain http
	// fleet repository URL or apiURL the token would be sent to, an apiURL host the platform does not
	// allow, ...). What to do: fix what the message names: the Secret in
	// spec.updates.proposals.secretRef must exist in the ClusterStack's namespace with a key "token",
	// the fleet repository and the forge API must be https, apiURL must name the fleet repository's
	// host or one of the manager's --forge-api-hosts, and each wave's selector must be valid.
	// +docs:on=ClusterStack/UpdatesProposed
	ReasonInvalidProposalConfig = "InvalidProposalConfig"
)
