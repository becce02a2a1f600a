// Package hooks is the operator's Cluster API Runtime Extension: the answers of the lifecycle
// hooks it serves (this file: pure functions of the Cluster CAPI sends, the ClusterAddon's
// status and the release's stages), the HTTP handlers CAPI calls (server.go) and the
// ExtensionConfig registering them (extensionconfig.go).
//
// The answers hold no state of their own: every call is decided from API status the
// ClusterAddon controller writes (status.desiredRelease and status.stages) and the
// ClusterStackRelease's status.stages, read through the manager's cache. So any replica gives
// the same answer, a restart of the operator loses nothing, and the same status always gives
// the same message. The handlers write nothing; the Event recording a skipped gate comes from
// the ClusterAddon controller.
//
//   - BeforeClusterUpgrade (blocking): Success when the release the Cluster moves to lists no
//     BeforeClusterUpgrade steps, when its components are applied at it and Ready and the
//     components its delete steps name are removed (the ClusterAddon's BeforeClusterUpgrade
//     stage for that release is Ready), or when the Cluster carries
//     csv1.SkipBeforeUpgradeGateAnnotation; otherwise Success with RetryAfterSeconds, which
//     makes CAPI hold the control plane upgrade and ask again, and a message naming what is
//     awaited and ending with how to let the upgrade through (SkipHint). The Cluster is the one
//     the API server has, read by the name the request gives and answered for only when the
//     request carries its uid (server.go).
//   - AfterControlPlaneInitialized (non-blocking by contract): Success. The addons are installed
//     by the ClusterAddon controller once the control plane is initialized and the kubeconfig
//     Secret exists, whether or not the hook is called.
//   - BeforeClusterDelete (blocking allowed): Success at once. Nothing needs to happen before
//     the Cluster's objects go: the ClusterAddon is owned by the Cluster, and its finalizer
//     suspends and deletes the Cluster's Flux objects without uninstalling anything from the
//     workload cluster, which is deleted with the Cluster. Holding the deletion would only
//     delay it.
package hooks

import (
	"fmt"
	"strings"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/stageplan"
)

// RetryAfterSeconds is how long CAPI waits before asking the BeforeClusterUpgrade hook again
// while the gate is closed (CAPI caches the answer until then), unless Server.RetryAfter
// (--upgrade-hook-retry-after) says otherwise.
const RetryAfterSeconds int32 = 10

// Answer is the answer of a hook.
type Answer struct {
	// Status is Success or Failure.
	Status runtimehooksv1.ResponseStatus
	// RetryAfterSeconds, when not zero, makes CAPI wait and call a blocking hook again.
	RetryAfterSeconds int32
	// Message is deterministic: the same inputs give the same text.
	Message string
}

func success(format string, args ...any) Answer {
	return Answer{Status: runtimehooksv1.ResponseStatusSuccess, Message: fmt.Sprintf(format, args...)}
}

// retry is an answer that holds the upgrade of Cluster c: its message says what is awaited and
// how to let the upgrade through without waiting (SkipHint).
func retry(c *clusterv1.Cluster, format string, args ...any) Answer {
	return Answer{Status: runtimehooksv1.ResponseStatusSuccess, RetryAfterSeconds: RetryAfterSeconds,
		Message: fmt.Sprintf(format, args...) + "; " + SkipHint(c.Namespace, c.Name)}
}

// SkipHint says how to let the upgrade of Cluster ns/name through without waiting for its
// BeforeClusterUpgrade components (stageplan.SkipHint): every message that holds an upgrade
// ends with it.
func SkipHint(ns, name string) string { return stageplan.SkipHint(ns, name) }

// UpgradeFacts is what the BeforeClusterUpgrade answer is decided from.
type UpgradeFacts struct {
	// Cluster is the Cluster the request names, as the API server has it.
	Cluster *clusterv1.Cluster
	// Release is the ClusterStackRelease the Cluster's ClusterClass is, in the Cluster's
	// namespace; nil when there is none.
	Release *csv1.ClusterStackRelease
	// Addon is the Cluster's ClusterAddon; nil when there is none.
	Addon *csv1.ClusterAddon
}

// ClassOf returns the ClusterClass a Cluster's topology uses when it is in the Cluster's own
// namespace (the only ClusterClasses the operator serves a Cluster from), else "".
func ClassOf(c *clusterv1.Cluster) string {
	ref := c.Spec.Topology.ClassRef
	if ref.Name == "" || (ref.Namespace != "" && ref.Namespace != c.Namespace) {
		return ""
	}
	return ref.Name
}

// BeforeClusterUpgrade answers the BeforeClusterUpgrade hook.
func BeforeClusterUpgrade(f UpgradeFacts) Answer {
	c := f.Cluster
	key := c.Namespace + "/" + c.Name
	class := ClassOf(c)
	if class == "" {
		return success("Cluster %s uses no ClusterClass of its namespace: no addon stages to wait for", key)
	}
	rel := f.Release
	if rel == nil {
		return success("ClusterClass %s of Cluster %s is no ClusterStackRelease: no addon stages to wait for", class, key)
	}
	if !apimeta.IsStatusConditionTrue(rel.Status.Conditions, csv1.StackValidCondition) || rel.Status.KubernetesVersion == "" {
		return retry(c, "Cluster %s moves to release %s, which has not been validated yet: its BeforeClusterUpgrade components are not known", key, rel.Name)
	}
	before := stageplan.BeforeUpgradeComponents(rel)
	removes := stageplan.BeforeUpgradeRemovals(rel)
	if len(before) == 0 && len(removes) == 0 {
		return success("release %s lists no BeforeClusterUpgrade components: the upgrade of Cluster %s does not wait for addons", rel.Name, key)
	}
	work := describeStage(before, removes)
	if _, ok := c.Annotations[csv1.SkipBeforeUpgradeGateAnnotation]; ok {
		return success("Cluster %s carries annotation %s: the upgrade to release %s does not wait for its BeforeClusterUpgrade components (%s)",
			key, csv1.SkipBeforeUpgradeGateAnnotation, rel.Name, work)
	}
	a := f.Addon
	if a == nil {
		return retry(c, "waiting for the ClusterAddon of Cluster %s to be created: the BeforeClusterUpgrade components of release %s (%s) are applied first",
			key, rel.Name, work)
	}
	if a.Status.DesiredRelease != rel.Name {
		return retry(c, "waiting for ClusterAddon %s to move to release %s (it is at %q): the BeforeClusterUpgrade components (%s) are applied first",
			key, rel.Name, a.Status.DesiredRelease, work)
	}
	var stage *csv1.AddonStageStatus
	for i := range a.Status.Stages {
		if s := &a.Status.Stages[i]; s.Name == csv1.StageBeforeClusterUpgrade && s.Release == rel.Name {
			stage = s
		}
	}
	switch {
	case stage == nil:
		return retry(c, "waiting for ClusterAddon %s to apply the BeforeClusterUpgrade components of release %s (%s)", key, rel.Name, work)
	case stage.Ready:
		done := strings.Join(stage.Components, ", ")
		if len(stage.Removes) > 0 {
			done = strings.TrimPrefix(done+"; "+strings.Join(stage.Removes, ", ")+" removed", "; ")
		}
		return success("the BeforeClusterUpgrade components of release %s are Ready in Cluster %s: %s", rel.Name, key, done)
	default:
		return retry(c, "Cluster %s: %s", key, stage.Message)
	}
}

// describeStage names what a BeforeClusterUpgrade stage does: "cni, ccm", "cni; removes
// old-ccm", "removes old-ccm".
func describeStage(apply, removes []string) string {
	var parts []string
	if len(apply) > 0 {
		parts = append(parts, strings.Join(apply, ", "))
	}
	if len(removes) > 0 {
		parts = append(parts, "removes "+strings.Join(removes, ", "))
	}
	return strings.Join(parts, "; ")
}

// AfterControlPlaneInitialized answers the AfterControlPlaneInitialized hook: non-blocking,
// Success.
func AfterControlPlaneInitialized(c *clusterv1.Cluster) Answer {
	return success("the ClusterStack operator installs the addons of Cluster %s/%s once its kubeconfig Secret exists; see ClusterAddon %s/%s",
		c.Namespace, c.Name, c.Namespace, c.Name)
}

// BeforeClusterDelete answers the BeforeClusterDelete hook: Success, the deletion need not wait.
func BeforeClusterDelete(c *clusterv1.Cluster) Answer {
	return success("the addons of Cluster %s/%s go with it: the ClusterStack operator deletes their Flux objects without uninstalling from the workload cluster",
		c.Namespace, c.Name)
}
