package v1alpha1

import (
	"github.com/fluxcd/pkg/apis/kustomize"
	"github.com/fluxcd/pkg/apis/meta"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// OperatorComponentType says what part of the management plane an operator is. Stacks' requirements
// name operators by spec.component.name; the type documents the operator and lets the core
// provider be recognised (every stack needs it: a ClusterClass is a Cluster API object).
// +kubebuilder:validation:Enum=CoreProvider;InfrastructureProvider;BootstrapProvider;ControlPlaneProvider;AddonProvider;Other
type OperatorComponentType string

const (
	// CoreProvider is Cluster API's core manager (clusterctl's "cluster-api").
	CoreProvider OperatorComponentType = "CoreProvider"
	// InfrastructureProvider is a Cluster API infrastructure provider (CAPA, CAPO, CAPD, ...).
	InfrastructureProvider OperatorComponentType = "InfrastructureProvider"
	// BootstrapProvider is a Cluster API bootstrap provider (kubeadm, ...).
	BootstrapProvider OperatorComponentType = "BootstrapProvider"
	// ControlPlaneProvider is a Cluster API control plane provider (kubeadm, ...).
	ControlPlaneProvider OperatorComponentType = "ControlPlaneProvider"
	// AddonProvider is a Cluster API addon provider (CAAPH, ...).
	AddonProvider OperatorComponentType = "AddonProvider"
	// OtherComponent is any other operator of the management plane (cert-manager, an IPAM
	// provider, ...).
	OtherComponent OperatorComponentType = "Other"
)

// OperatorUpdateState is the state of one entry of a ManagementOperator's update history.
// +kubebuilder:validation:Enum=Completed;Partial
type OperatorUpdateState string

const (
	// UpdateCompleted: every Deployment of the version was rolled out and Available, and the
	// version was reported in status.versions.
	UpdateCompleted OperatorUpdateState = "Completed"
	// UpdatePartial: the version was being rolled out, and still is (no completionTime) or was
	// superseded by another version before it completed (completionTime set).
	UpdatePartial OperatorUpdateState = "Partial"
)

// Constants of the ManagementOperator API.
const (
	// OperatorVersionName is the name of the status.versions entry holding the operator's
	// delivered version, as ClusterOperator's versions[name=operator].
	OperatorVersionName = "operator"
	// MaxOperatorHistory is how many entries status.history keeps (the newest).
	MaxOperatorHistory = 10
	// MaxAvailableUpdates is how many versions status.availableUpdates lists (the newest).
	MaxAvailableUpdates = 32
	// MaxVersionLength is the longest version spec.version, status.desiredVersion,
	// status.versions[].version, status.history[].version and status.availableUpdates[] hold
	// (their MaxLength): a tag whose version is longer is never listed as an update.
	MaxVersionLength = 64
)

// OperatorComponent names the component a ManagementOperator delivers.
type OperatorComponent struct {
	// type of the component: CoreProvider, InfrastructureProvider, BootstrapProvider,
	// ControlPlaneProvider, AddonProvider or Other.
	// +required
	Type OperatorComponentType `json:"type"`

	// name of the component, the name stacks' requirements use (`requires: [{operator: <name>}]`
	// in a stack's stack.yaml), e.g. "cluster-api", "capo", "cert-manager". It must equal the
	// ManagementOperator's metadata.name, which keeps it unique in the cluster.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="spec.component.name must be a DNS label: lower-case letters, digits and '-', starting and ending with a letter or digit, e.g. cluster-api"
	// +required
	Name string `json:"name"`
}

// OperatorSource says where an operator's manifests are published: a Git repository or an OCI
// repository in a registry, exactly one of them.
// +kubebuilder:validation:XValidation:rule="has(self.git) || has(self.oci)",message="spec.source.git must be set: the Git repository holding the operator's manifests, tagged per version; or spec.source.oci: the OCI repository holding them, tagged per version"
// +kubebuilder:validation:XValidation:rule="!(has(self.git) && has(self.oci))",message="set either spec.source.git or spec.source.oci, not both: an operator's versions come from one source"
type OperatorSource struct {
	// git is a Git repository holding the operator's manifests (a kustomize directory or a Helm
	// chart), with one tag per version: tagPrefix + spec.version.
	// +optional
	Git *OperatorGitSource `json:"git,omitempty"`

	// oci is an OCI repository with one tag per version (tagPrefix + spec.version): with
	// spec.kustomize, artifacts in Flux's format (`flux push artifact`, `stackctl push`) holding
	// the kustomize directory at their root; with spec.chart, Helm charts pushed with `helm push`.
	// OCI tags cannot hold '+': versions with build metadata cannot be published so.
	// +optional
	OCI *OperatorOCISource `json:"oci,omitempty"`
}

// OperatorOCISource is an OCI repository with one tag per operator version.
type OperatorOCISource struct {
	OCISource `json:",inline"`

	// tagPrefix is put before spec.version to make the OCI tag of a version: with tagPrefix
	// "capi-" version v1.10.3 is tag "capi-v1.10.3". Empty means the tag is the version itself.
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self == '' || self.matches('^[A-Za-z0-9_][A-Za-z0-9._-]*$')",message="spec.source.oci.tagPrefix must start with a letter, digit or '_' and hold only letters, digits, '_', '.' and '-' (the characters of an OCI tag), e.g. \"capi-\""
	// +optional
	TagPrefix string `json:"tagPrefix,omitempty"`
}

// OperatorGitSource is a Git repository with one tag per operator version.
type OperatorGitSource struct {
	// url of the Git repository, e.g. https://github.com/org/management-operators.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.matches('^(https?|ssh)://.+$')",message="spec.source.git.url must be an http://, https:// or ssh:// Git URL, e.g. https://github.com/org/management-operators"
	// +required
	URL string `json:"url"`

	// path of the operator's directory in the repository, e.g. "operators/cluster-api": the
	// kustomize directory that is applied, or the directory spec.chart.path is relative to. Only
	// this directory is packaged into Flux's artifact. Empty is the repository's root.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.contains('..')",message="spec.source.git.path must be relative to the repository root and must not contain '..'"
	// +optional
	Path string `json:"path,omitempty"`

	// secretRef names a Secret with Git credentials, in the format of Flux's GitRepository
	// `spec.secretRef` (username/password, bearerToken or SSH keys). ManagementOperators are
	// cluster-scoped: the Secret is read in the management namespace, the namespace the operator
	// generates the Flux objects in (its --management-namespace, by default its own). Its data is
	// never copied.
	// +kubebuilder:validation:XValidation:rule="size(self.name) <= 253 && self.name.matches('^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$')",message="spec.source.git.secretRef.name must be the name of a Secret in the management namespace: at most 253 lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// tagPrefix is put before spec.version to make the Git tag of a version: with tagPrefix
	// "cluster-api/" version v1.10.3 is tag "cluster-api/v1.10.3". Empty means the tag is the
	// version itself.
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self == '' || (self.matches('^[A-Za-z0-9][-A-Za-z0-9._/]*$') && !self.contains('..') && !self.contains('//') && !self.endsWith('.'))",message="spec.source.git.tagPrefix must start with a letter or digit and hold only letters, digits, '-', '_', '.' and '/', without '..' or '//', e.g. \"cluster-api/\" or \"capi-\""
	// +optional
	TagPrefix string `json:"tagPrefix,omitempty"`
}

// OperatorKustomize delivers the operator's directory with a Flux Kustomization.
type OperatorKustomize struct {
	// patches are applied to the operator's manifests, as the Kustomization's `spec.patches`
	// (strategic merge or JSON 6902 patches, each with an optional target selector).
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Patches []kustomize.Patch `json:"patches,omitempty"`

	// variablesSecretRef names a Secret in the management namespace whose keys are substituted
	// for `${VAR}` (and `${VAR:=default}`) in the manifests, as the Kustomization's
	// `spec.postBuild.substituteFrom`: the clusterctl-style variables of Cluster API providers
	// (e.g. EXP_CLUSTER_RESOURCE_SET, AWS_B64ENCODED_CREDENTIALS). Its data is never copied.
	// +kubebuilder:validation:XValidation:rule="size(self.name) <= 253 && self.name.matches('^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$')",message="spec.kustomize.variablesSecretRef.name must be the name of a Secret in the management namespace: at most 253 lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"
	// +optional
	VariablesSecretRef *meta.LocalObjectReference `json:"variablesSecretRef,omitempty"`

	// targetNamespace, when set, puts every namespaced object of the manifests into this
	// namespace (the Kustomization's `spec.targetNamespace`). Empty keeps the namespaces the
	// manifests name, as clusterctl does.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="spec.kustomize.targetNamespace must be a namespace name: a DNS label of lower-case letters, digits and '-'"
	// +optional
	TargetNamespace string `json:"targetNamespace,omitempty"`
}

// OperatorChart delivers the operator as a Helm chart, with a Flux HelmChart and HelmRelease.
type OperatorChart struct {
	// path of the chart directory, relative to spec.source.git.path. Empty is that directory itself.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.contains('..')",message="spec.chart.path must be relative to spec.source.git.path and must not contain '..'"
	// +optional
	Path string `json:"path,omitempty"`

	// values are the chart's values, as the HelmRelease's `spec.values`.
	// +optional
	Values *apiextensionsv1.JSON `json:"values,omitempty"`

	// targetNamespace is the namespace the chart is installed into (created if missing). Empty
	// is the management namespace.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="spec.chart.targetNamespace must be a namespace name: a DNS label of lower-case letters, digits and '-'"
	// +optional
	TargetNamespace string `json:"targetNamespace,omitempty"`
}

// ManagementOperatorSpec is an operator of the management plane (a Cluster API provider,
// cert-manager, ...) at one exact version, as a commit merged into Git says, delivered by Flux
// from a Git tag.
//
// The manifests are delivered either with kustomize (spec.kustomize, the default when neither
// is set) or as a Helm chart (spec.chart).
// +kubebuilder:validation:XValidation:rule="!(has(self.kustomize) && has(self.chart))",message="set either spec.kustomize (apply the directory with kustomize, with patches and variables) or spec.chart (install it as a Helm chart with values), not both"
// +kubebuilder:validation:XValidation:rule="!has(self.source.oci) || !has(self.chart) || !has(self.chart.path) || size(self.chart.path) == 0",message="spec.chart.path is a directory of a Git source: an OCI source's artifact is the chart itself (pushed with helm push); remove spec.chart.path"
// +kubebuilder:validation:XValidation:rule="!has(self.chart) || !has(self.healthChecks) || size(self.healthChecks) == 0",message="spec.healthChecks are checked by the Kustomization of spec.kustomize; a chart's HelmRelease waits for the chart's own resources: remove spec.healthChecks or deliver the operator with spec.kustomize"
type ManagementOperatorSpec struct {
	// component is the component the operator is: its type and the name stacks' requirements
	// use. It cannot be changed.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.component cannot be changed; create a new ManagementOperator for another component"
	// +required
	Component OperatorComponent `json:"component"`

	// version is the exact version to deliver, a semantic version with a leading "v", e.g.
	// "v1.10.3": what a merged commit says runs. The Git tag delivered is
	// spec.source.git.tagPrefix + version. A version whose minor is lower than the delivered
	// one is refused (Degraded, reason DowngradeNotSupported) and nothing is applied; a version
	// outside a range an in-use stack release requires is not applied (Upgradeable=False)
	// unless spec.overrideStackRequirements is true.
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^v(0|[1-9][0-9]*)[.](0|[1-9][0-9]*)[.](0|[1-9][0-9]*)(-[0-9A-Za-z-]+([.][0-9A-Za-z-]+)*)?([+][0-9A-Za-z-]+([.][0-9A-Za-z-]+)*)?$')",message="spec.version must be an exact semantic version with a leading v, such as v1.10.3 or v1.11.0-rc.1: a range belongs in spec.channel, a tag prefix in spec.source.git.tagPrefix"
	// +required
	Version string `json:"version"`

	// channel is a semantic version range, e.g. ">=1.10.0 <1.12.0" or "~1.10", used only to
	// compute status.availableUpdates from the repository's tags. It never changes what runs:
	// only spec.version does. A range the operator cannot parse makes the ManagementOperator
	// Degraded (reason InvalidChannel) without touching the delivered version.
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="self.matches('^[-0-9A-Za-z.*+<>=~^!|, ]+$') && self.matches('[0-9xX*]')",message="spec.channel must be a semantic version range such as \">=1.10.0 <1.12.0\", \"~1.10\" or \"1.10.x || 1.11.x\" (operators <, <=, >, >=, =, !=, ~, ^, ranges with ' - ', alternatives with '||')"
	// +optional
	Channel string `json:"channel,omitempty"`

	// source is where the operator's manifests are published, one tag per version.
	// +required
	Source OperatorSource `json:"source"`

	// kustomize delivers the manifests with a Flux Kustomization (the default when neither
	// kustomize nor chart is set), with patches and a Secret of variables.
	// +optional
	Kustomize *OperatorKustomize `json:"kustomize,omitempty"`

	// chart delivers the manifests as a Helm chart, with values.
	// +optional
	Chart *OperatorChart `json:"chart,omitempty"`

	// healthChecks are objects, beyond those the manifests create, that must be healthy
	// (kstatus Current) before the version is reported delivered: the Kustomization's
	// `spec.healthChecks` (kustomize only). The manifests' own Deployments are always waited for.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	HealthChecks []meta.NamespacedObjectKindReference `json:"healthChecks,omitempty"`

	// interval at which Flux re-checks the tag and corrects drift of the applied objects.
	// Defaults to 10m.
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s')",message="spec.interval must be a duration of at least 10s, such as 1m or 10m: it is how often Flux re-checks the tag and corrects drift"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`

	// timeout bounds one apply and wait (the Kustomization's or HelmRelease's `spec.timeout`):
	// how long Flux waits for the operator's Deployments to become ready before it reports the
	// attempt failed. Defaults to 10m.
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('30s') && duration(self) <= duration('2h')",message="spec.timeout must be a duration between 30s and 2h, such as 10m: it is how long Flux waits for the operator's Deployments to become ready"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// serviceAccountName is the ServiceAccount, in the management namespace, whose identity Flux
	// applies the manifests with. Operators install CRDs, cluster roles and webhooks, so the
	// account needs wide rights. Empty leaves the choice to Flux (its --default-service-account,
	// or its own identity).
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$')",message="spec.serviceAccountName must be the name of a ServiceAccount in the management namespace: lower-case letters, digits, '-' and '.'"
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// overrideStackRequirements, when true, applies spec.version although a stack release in use
	// by Clusters requires a version range of this operator that excludes it. The override is
	// recorded in status.history[].acceptedRisks. Defaults to false: such a version is not
	// applied, and the ManagementOperator reports Upgradeable=False naming the release and its
	// range. It does not override the refusal of minor downgrades.
	// +optional
	OverrideStackRequirements bool `json:"overrideStackRequirements,omitempty"`

	// followMovedTags, when true, delivers whatever commit a version's tag points to, also after
	// the tag was moved. By default (false) each version is pinned to the commit its tag pointed
	// to when Flux first fetched it (status.history[].commit; the GitRepository's `spec.ref.commit`):
	// if the tag later points elsewhere, the ManagementOperator reports TagVerified False and
	// Degraded (reason TagMoved, naming both commits) and keeps delivering the pinned commit.
	// +optional
	FollowMovedTags bool `json:"followMovedTags,omitempty"`
}

// OperandVersion is a version a ManagementOperator reports, as ClusterOperator's versions.
type OperandVersion struct {
	// name of the versioned thing: "operator" for the operator itself.
	// +kubebuilder:validation:MaxLength=63
	// +required
	Name string `json:"name"`
	// version delivered: every Deployment of it is rolled out and Available.
	// +kubebuilder:validation:MaxLength=64
	// +required
	Version string `json:"version"`
}

// ResourceReference names an object related to a ManagementOperator, as ClusterOperator's
// relatedObjects: `kubectl get <resource>.<group> -n <namespace> <name>` shows it.
type ResourceReference struct {
	// group of the object's API ("" for the core group).
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Group string `json:"group"`
	// resource is the plural resource name, e.g. "kustomizations".
	// +kubebuilder:validation:MaxLength=253
	// +required
	Resource string `json:"resource"`
	// namespace of the object; empty for a cluster-scoped object.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// name of the object.
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`
}

// OperatorHistoryEntry is one version a ManagementOperator rolled out, as ClusterVersion's history.
type OperatorHistoryEntry struct {
	// version rolled out.
	// +kubebuilder:validation:MaxLength=64
	// +required
	Version string `json:"version"`
	// state is Completed once the version was delivered (status.versions reports it), Partial
	// while it rolls out or when another version superseded it before it completed.
	// +required
	State OperatorUpdateState `json:"state"`
	// startedTime is when the operator started to apply the version.
	// +required
	StartedTime metav1.Time `json:"startedTime"`
	// completionTime is when the version was delivered (state Completed) or superseded (state
	// Partial); unset while it rolls out.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// acceptedRisks says what the version was applied despite: the requirements of in-use stack
	// releases it does not meet, when spec.overrideStackRequirements forced it.
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	AcceptedRisks string `json:"acceptedRisks,omitempty"`
	// commit is the Git commit the version's tag pointed to when Flux first fetched it (full hex);
	// for an OCI source, the hex of the artifact's sha256 digest. Unless spec.followMovedTags is
	// set, the version's GitRepository (OCIRepository) is pinned to it, also when
	// the ManagementOperator moves back to this version later: a tag moved since is reported
	// (TagVerified False, reason TagMoved) and not delivered.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Commit string `json:"commit,omitempty"`
}

// ManagementOperatorStatus is the observed state of a ManagementOperator, with the semantics of
// OpenShift's ClusterOperator. Written by the ManagementOperator reconciler alone, every field
// (docs/status-ownership.md).
type ManagementOperatorStatus struct {
	// observedGeneration is the generation last reconciled successfully.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Available (the delivered version serves; it stays True during an upgrade while
	// the old version still serves), Progressing (moving from one version to another), Degraded
	// (a failure that outlasted the grace period, a refused downgrade, or a moved tag), Upgradeable
	// (False when spec.version is outside what an in-use stack release requires), Disabled (True
	// when no stack in the cluster requires the operator; it is then Available too), TagVerified
	// (False when the tag of the desired version no longer points at its pinned commit), and the
	// kstatus conditions Ready, Stalled and Reconciling.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// versions are the delivered versions; versions[name=operator] moves to a new version only
	// once every Deployment of it is rolled out and Available (the old version stays reported
	// until then).
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Versions []OperandVersion `json:"versions,omitempty"`

	// desiredVersion is the version the Flux objects were last written for: spec.version once
	// it was accepted. While spec.version is refused (a minor downgrade) or held back (outside an
	// in-use release's requirements), it stays at the version accepted before.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	DesiredVersion string `json:"desiredVersion,omitempty"`

	// relatedObjects are the objects generated for the operator (its Flux source and
	// Kustomization or HelmChart and HelmRelease) and the Deployments they deliver.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +optional
	RelatedObjects []ResourceReference `json:"relatedObjects,omitempty"`

	// history lists the versions rolled out, newest first, at most the last 10.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	// +optional
	History []OperatorHistoryEntry `json:"history,omitempty"`

	// availableUpdates are the versions published in the repository (tags with
	// spec.source.git.tagPrefix) that are newer than the delivered version and, with
	// spec.channel, within it; newest first, at most 32. Informative: only spec.version changes
	// what runs. A tag whose version is not of spec.version's form or longer than 64 characters
	// is never listed; the TagVerified condition's message counts them.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=64
	// +optional
	AvailableUpdates []string `json:"availableUpdates,omitempty"`

	// unhealthy lists the Flux objects and Deployments that are not healthy, with how long they
	// have been so (the grace clock of the Degraded condition, kept across operator restarts and
	// Flux's retries) and what was last said about the failure.
	// +listType=map
	// +listMapKey=object
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Unhealthy []UnhealthyObject `json:"unhealthy,omitempty"`
}

// ManagementOperator is an operator of the management plane itself (a Cluster API provider,
// cert-manager, ...), versioned in Git and delivered by Flux: the operator generates a
// GitRepository pinned to the version's tag and a Kustomization (or HelmChart and HelmRelease)
// in the management namespace, and never applies the manifests itself. Its status follows
// OpenShift's ClusterOperator. Deleting a ManagementOperator removes its Flux objects but leaves
// what they applied running: uninstalling a Cluster API provider would delete its CRDs and with
// them every object of its kinds.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=mgmtop,categories=cluster-stacks
// +kubebuilder:printcolumn:name="Component",type=string,JSONPath=`.spec.component.name`
// +kubebuilder:printcolumn:name="Type",type=string,priority=1,JSONPath=`.spec.component.type`
// +kubebuilder:printcolumn:name="Desired",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Delivered",type=string,JSONPath=`.status.versions[?(@.name=="operator")].version`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Progressing",type=string,JSONPath=`.status.conditions[?(@.type=="Progressing")].status`
// +kubebuilder:printcolumn:name="Degraded",type=string,JSONPath=`.status.conditions[?(@.type=="Degraded")].status`
// +kubebuilder:printcolumn:name="Upgradeable",type=string,JSONPath=`.status.conditions[?(@.type=="Upgradeable")].status`
// +kubebuilder:printcolumn:name="Disabled",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Disabled")].status`
// +kubebuilder:printcolumn:name="Message",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name == self.spec.component.name",message="metadata.name must equal spec.component.name: name the ManagementOperator after its component (e.g. cluster-api), so that one object per component exists"
type ManagementOperator struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state.
	Spec ManagementOperatorSpec `json:"spec"`
	// status is the observed state.
	// +optional
	Status ManagementOperatorStatus `json:"status,omitempty"`
}

// ManagementOperatorList is a list of ManagementOperators.
// +kubebuilder:object:root=true
type ManagementOperatorList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ManagementOperator `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ManagementOperator{}, &ManagementOperatorList{})
}

// GetConditions returns the conditions.
func (in *ManagementOperator) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions sets the conditions.
func (in *ManagementOperator) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// Tag is the tag of a version of the operator: the source's tagPrefix + version.
func (in *ManagementOperator) Tag(version string) string {
	switch {
	case in.Spec.Source.Git != nil:
		return in.Spec.Source.Git.TagPrefix + version
	case in.Spec.Source.OCI != nil:
		return in.Spec.Source.OCI.TagPrefix + version
	}
	return version
}

// DeliveredVersion is status.versions[name=operator], "" before any version was delivered.
func (in *ManagementOperator) DeliveredVersion() string {
	for _, v := range in.Status.Versions {
		if v.Name == OperatorVersionName {
			return v.Version
		}
	}
	return ""
}
