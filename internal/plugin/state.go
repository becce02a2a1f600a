package plugin

import (
	"strings"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// States the plugin reports for objects.
const (
	// StateReady: the object's Ready condition is True.
	StateReady = "Ready"
	// StateAvailable: Available is True, but the object is not Ready (e.g. upgrading).
	StateAvailable = "Available"
	// StateProgressing: Progressing is True, or a Flux object is reconciling.
	StateProgressing = "Progressing"
	// StateDegraded: Degraded is True.
	StateDegraded = "Degraded"
	// StateFailed: a Flux object's Ready condition is False (or it is Stalled).
	StateFailed = "Failed"
	// StatePaused: the Cluster is paused; the operator leaves it alone.
	StatePaused = "Paused"
	// StateSuspended: the Flux object is suspended.
	StateSuspended = "Suspended"
	// StateNotFound: the object does not exist.
	StateNotFound = "NotFound"
	// StateUnknown: the object has no conditions to tell yet.
	StateUnknown = "Unknown"
)

// Condition is the part of a status condition the plugin prints.
type Condition struct {
	// Type of the condition.
	Type string `json:"type"`
	// Status is True, False or Unknown.
	Status metav1.ConditionStatus `json:"status"`
	// Reason is the condition's reason.
	Reason string `json:"reason,omitempty"`
	// Message is the condition's message.
	Message string `json:"message,omitempty"`
}

// conditionOf returns condition t of conds, or nil.
func conditionOf(conds []metav1.Condition, t string) *Condition {
	c := apimeta.FindStatusCondition(conds, t)
	if c == nil {
		return nil
	}
	return &Condition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message}
}

func isTrue(conds []metav1.Condition, t string) bool {
	return apimeta.IsStatusConditionTrue(conds, t)
}

// ObjectState is the state of a ClusterStack, ClusterStackRelease or ClusterAddon from its
// OpenShift-style conditions, and the message that explains it: Paused (ClusterAddon),
// Degraded, Progressing, Ready, Available, else Unknown. The message is that of the condition
// that decided the state (for Ready, none is needed; for Unknown, the Ready condition's if any).
func ObjectState(conds []metav1.Condition) (string, string) {
	msg := func(t string) string {
		if c := apimeta.FindStatusCondition(conds, t); c != nil {
			return c.Message
		}
		return ""
	}
	switch {
	case isTrue(conds, csv1.PausedCondition):
		return StatePaused, msg(csv1.PausedCondition)
	case isTrue(conds, csv1.DegradedCondition):
		return StateDegraded, msg(csv1.DegradedCondition)
	case isTrue(conds, csv1.ProgressingCondition):
		return StateProgressing, msg(csv1.ProgressingCondition)
	case isTrue(conds, csv1.ReadyCondition):
		return StateReady, ""
	case isTrue(conds, csv1.AvailableCondition):
		return StateAvailable, msg(csv1.ReadyCondition)
	}
	return StateUnknown, msg(csv1.ReadyCondition)
}

// FluxObject is what the plugin reports of a HelmRelease or Kustomization.
type FluxObject struct {
	// Kind is HelmRelease or Kustomization.
	Kind string `json:"kind"`
	// Namespace of the object.
	Namespace string `json:"namespace,omitempty"`
	// Name of the object.
	Name string `json:"name"`
	// State is Ready, Failed, Progressing, Suspended, NotFound or Unknown.
	State string `json:"state"`
	// Ready is the object's Ready condition (nil before Flux has reported one).
	Ready *Condition `json:"ready,omitempty"`
	// Stalled is the object's Stalled condition when it is True.
	Stalled *Condition `json:"stalled,omitempty"`
	// LastAppliedRevision (Kustomization) is the source revision last applied.
	LastAppliedRevision string `json:"lastAppliedRevision,omitempty"`
	// LastAttemptedRevision is the revision (Kustomization) or chart version (HelmRelease) last tried.
	LastAttemptedRevision string `json:"lastAttemptedRevision,omitempty"`
	// LastAction (HelmRelease) is the last release action attempted: install or upgrade.
	LastAction string `json:"lastAction,omitempty"`
	// Failures (HelmRelease) counts reconciliation failures since the last success.
	Failures int64 `json:"failures,omitempty"`
	// InstallFailures (HelmRelease) counts failed installs.
	InstallFailures int64 `json:"installFailures,omitempty"`
	// UpgradeFailures (HelmRelease) counts failed upgrades.
	UpgradeFailures int64 `json:"upgradeFailures,omitempty"`
	// History (HelmRelease) is the newest Helm release revisions, newest first (at most 5).
	History []HelmRevision `json:"history,omitempty"`
}

// HelmRevision is one Helm release revision of a HelmRelease's history.
type HelmRevision struct {
	// Version is the Helm release revision.
	Version int `json:"version"`
	// Status is Helm's status of the revision: deployed, failed, superseded, ...
	Status string `json:"status"`
	// Chart is "<chart>@<version>".
	Chart string `json:"chart"`
}

// Ref is "<Kind>/<name>", as ClusterAddon status names Flux objects.
func (f FluxObject) Ref() string { return f.Kind + "/" + f.Name }

// maxHistory bounds the Helm history the plugin reports.
const maxHistory = 5

// fluxState is the state of a Flux object from its conditions.
func fluxState(conds []metav1.Condition, suspended bool) string {
	if suspended {
		return StateSuspended
	}
	if isTrue(conds, meta.StalledCondition) {
		return StateFailed
	}
	c := apimeta.FindStatusCondition(conds, meta.ReadyCondition)
	switch {
	case c == nil:
		return StateUnknown
	case c.Status == metav1.ConditionTrue:
		return StateReady
	case c.Status == metav1.ConditionFalse:
		return StateFailed
	}
	return StateProgressing
}

func stalledOf(conds []metav1.Condition) *Condition {
	if !isTrue(conds, meta.StalledCondition) {
		return nil
	}
	return conditionOf(conds, meta.StalledCondition)
}

// FluxFromHelmRelease summarises a HelmRelease.
func FluxFromHelmRelease(hr *helmv2.HelmRelease) FluxObject {
	f := FluxObject{
		Kind: helmv2.HelmReleaseKind, Namespace: hr.Namespace, Name: hr.Name,
		State:                 fluxState(hr.Status.Conditions, hr.Spec.Suspend),
		Ready:                 conditionOf(hr.Status.Conditions, meta.ReadyCondition),
		Stalled:               stalledOf(hr.Status.Conditions),
		LastAttemptedRevision: hr.Status.LastAttemptedRevision,
		LastAction:            string(hr.Status.LastAttemptedReleaseAction),
		Failures:              hr.Status.Failures,
		InstallFailures:       hr.Status.InstallFailures,
		UpgradeFailures:       hr.Status.UpgradeFailures,
	}
	for i, s := range hr.Status.History {
		if i == maxHistory || s == nil {
			break
		}
		f.History = append(f.History, HelmRevision{Version: s.Version, Status: s.Status, Chart: s.ChartName + "@" + s.ChartVersion})
	}
	return f
}

// FluxFromKustomization summarises a Kustomization.
func FluxFromKustomization(ks *kustomizev1.Kustomization) FluxObject {
	return FluxObject{
		Kind: kustomizev1.KustomizationKind, Namespace: ks.Namespace, Name: ks.Name,
		State:                 fluxState(ks.Status.Conditions, ks.Spec.Suspend),
		Ready:                 conditionOf(ks.Status.Conditions, meta.ReadyCondition),
		Stalled:               stalledOf(ks.Status.Conditions),
		LastAppliedRevision:   ks.Status.LastAppliedRevision,
		LastAttemptedRevision: ks.Status.LastAttemptedRevision,
	}
}

// FluxIndex holds the Flux objects of a namespace or more, by namespace and "<Kind>/<name>".
type FluxIndex map[string]FluxObject

// NewFluxIndex indexes HelmReleases and Kustomizations.
func NewFluxIndex(hrs []helmv2.HelmRelease, kss []kustomizev1.Kustomization) FluxIndex {
	idx := FluxIndex{}
	for i := range hrs {
		f := FluxFromHelmRelease(&hrs[i])
		idx[f.Namespace+"/"+f.Ref()] = f
	}
	for i := range kss {
		f := FluxFromKustomization(&kss[i])
		idx[f.Namespace+"/"+f.Ref()] = f
	}
	return idx
}

// Get returns the Flux object ref ("<Kind>/<name>") in namespace ns; a missing one is reported
// with State NotFound.
func (idx FluxIndex) Get(ns, ref string) FluxObject {
	if f, ok := idx[ns+"/"+ref]; ok {
		return f
	}
	kind, name, _ := strings.Cut(ref, "/")
	return FluxObject{Kind: kind, Namespace: ns, Name: name, State: StateNotFound}
}

// Message is what Flux said about the object: the Stalled message when it is stalled, else
// its Ready message.
func (f FluxObject) Message() string {
	if f.Stalled != nil && f.Stalled.Message != "" {
		return f.Stalled.Message
	}
	if f.Ready != nil {
		return f.Ready.Message
	}
	return ""
}
