// Package webhooks holds the operator's admission webhooks.
//
// The validating webhook on CAPI Clusters enforces how a Cluster may use ClusterStackReleases
// (whose names are the ClusterClass names the operator delivers):
//
//   - a Cluster using a release must set spec.topology.version to the Kubernetes version the
//     release was validated with (status.kubernetesVersion); while the release has not been
//     validated yet the Cluster is admitted with a warning;
//   - a Cluster moving from one release to another stays with the same provider and stack and
//     moves at most one Kubernetes minor up (no downgrade, no skipped minor);
//   - a ClusterStack only serves Clusters of its own namespace: a classRef into another
//     namespace that names a release there is refused;
//   - a Cluster moves to a newer release of a ClusterStack only while the stack's rollout is not
//     held and while a maintenance window of the Cluster's wave is open (ValidateMoveTiming).
//
// Clusters whose ClusterClass is not a release are admitted untouched. The rules are pure
// functions (this file); ClusterValidator does the reads.
package webhooks

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/redact"
	"github.com/clusterstack-io/clusterstack-operator/internal/releasename"
	"github.com/clusterstack-io/clusterstack-operator/internal/rollout"
	"github.com/clusterstack-io/clusterstack-operator/internal/window"
)

var (
	classRefPath          = field.NewPath("spec", "topology", "classRef")
	classRefNamePath      = classRefPath.Child("name")
	classRefNamespacePath = classRefPath.Child("namespace")
	versionPath           = field.NewPath("spec", "topology", "version")
)

// ClassRef returns the namespace and name of the ClusterClass a Cluster's topology uses; the
// namespace defaults to the Cluster's, as in CAPI. The name is "" when the Cluster has no
// topology.
func ClassRef(c *clusterv1.Cluster) (namespace, name string) {
	ref := c.Spec.Topology.ClassRef
	if ref.Name == "" {
		return "", ""
	}
	if ref.Namespace == "" {
		return c.Namespace, ref.Name
	}
	return ref.Namespace, ref.Name
}

// ClassOrVersionChanged reports whether an update changes what the rules look at: the
// ClusterClass (name or effective namespace) or spec.topology.version. Other updates (labels,
// finalizers, the control plane endpoint, replicas) are never refused, so that the webhook
// cannot stop CAPI's controllers or a deletion, even for a Cluster that predates a rule.
func ClassOrVersionChanged(old, updated *clusterv1.Cluster) bool {
	oldNS, oldName := ClassRef(old)
	newNS, newName := ClassRef(updated)
	return oldNS != newNS || oldName != newName || old.Spec.Topology.Version != updated.Spec.Topology.Version
}

// ValidateClusterCreate checks a new Cluster. rel is the ClusterStackRelease its classRef
// names (in the classRef's namespace), nil when the ClusterClass is not a release. It returns
// the errors and the warnings for the user.
func ValidateClusterCreate(c *clusterv1.Cluster, rel *csv1.ClusterStackRelease) (field.ErrorList, []string) {
	return validateUse(c, rel)
}

// ValidateClusterUpdate checks an update of a Cluster. oldRel is the ClusterStackRelease the
// old Cluster used (in its own namespace), newRel the one the updated Cluster's classRef names
// (in the classRef's namespace); either is nil when that ClusterClass is not a release.
// Updates that change neither the ClusterClass nor spec.topology.version are always allowed.
func ValidateClusterUpdate(old, updated *clusterv1.Cluster, oldRel, newRel *csv1.ClusterStackRelease) (field.ErrorList, []string) {
	if !ClassOrVersionChanged(old, updated) {
		return nil, nil
	}
	errs, warnings := validateUse(updated, newRel)
	if newRel != nil && newRel.Namespace == updated.Namespace &&
		oldRel != nil && oldRel.Namespace == old.Namespace && oldRel.Name != newRel.Name {
		errs = append(errs, validateMove(oldRel, newRel)...)
	}
	return errs, warnings
}

// validateUse checks that c may use rel at its spec.topology.version.
func validateUse(c *clusterv1.Cluster, rel *csv1.ClusterStackRelease) (field.ErrorList, []string) {
	if rel == nil {
		return nil, nil
	}
	if rel.Namespace != c.Namespace {
		return field.ErrorList{field.Invalid(classRefNamespacePath, rel.Namespace, fmt.Sprintf(
			"ClusterClass %q in namespace %q is ClusterStackRelease %s/%s, and a ClusterStack only serves Clusters of its own namespace: "+
				"create the ClusterStack in namespace %q and refer to its release without classRef.namespace",
			rel.Name, rel.Namespace, rel.Namespace, rel.Name, c.Namespace))}, nil
	}
	if pr := apimeta.FindStatusCondition(rel.Status.Conditions, csv1.ProviderObjectsReadyCondition); pr != nil && pr.Status == metav1.ConditionFalse {
		return field.ErrorList{field.Forbidden(classRefNamePath, fmt.Sprintf(
			"ClusterStackRelease %q cannot be used by a Cluster yet: %s. Its ClusterClass would build nodes from what is not ready; wait until the release's ProviderObjectsReady condition is True",
			rel.Name, pr.Message))}, nil
	}
	want, got := rel.Status.KubernetesVersion, c.Spec.Topology.Version
	if want == "" {
		return nil, []string{fmt.Sprintf(
			"ClusterStackRelease %s/%s has not been validated yet (no status.kubernetesVersion), so spec.topology.version %q is not checked; "+
				"once it is, Clusters using it must set the Kubernetes version it was validated with",
			rel.Namespace, rel.Name, got)}
	}
	if got != want {
		return field.ErrorList{field.Invalid(versionPath, got, fmt.Sprintf(
			"ClusterStackRelease %q was validated with Kubernetes %s: a Cluster using it must set spec.topology.version to %q",
			rel.Name, want, want))}, nil
	}
	return nil, nil
}

// validateMove checks a move from release from to release to: same provider and stack, and
// the Kubernetes minor of to equal to that of from or one more.
func validateMove(from, to *csv1.ClusterStackRelease) field.ErrorList {
	fromStack := from.Spec.Provider + "/" + from.Spec.StackName
	toStack := to.Spec.Provider + "/" + to.Spec.StackName
	if fromStack != toStack {
		return field.ErrorList{field.Invalid(classRefNamePath, to.Name, fmt.Sprintf(
			"the Cluster uses ClusterStackRelease %q of stack %s and cannot move to %q of stack %s: "+
				"a Cluster may only move to a release of the same provider and stack (%s-%s-<major>-<minor>-<version>)",
			from.Name, fromStack, to.Name, toStack, from.Spec.Provider, from.Spec.StackName))}
	}
	fromMajor, fromMinor, err := parseMinor(from.Spec.KubernetesVersion)
	if err != nil {
		return field.ErrorList{field.InternalError(classRefNamePath, fmt.Errorf("ClusterStackRelease %q: %w", from.Name, err))}
	}
	toMajor, toMinor, err := parseMinor(to.Spec.KubernetesVersion)
	if err != nil {
		return field.ErrorList{field.InternalError(classRefNamePath, fmt.Errorf("ClusterStackRelease %q: %w", to.Name, err))}
	}
	if fromMajor == toMajor && (toMinor == fromMinor || toMinor == fromMinor+1) {
		return nil
	}
	what := "skips a Kubernetes minor version"
	if toMajor < fromMajor || (toMajor == fromMajor && toMinor < fromMinor) {
		what = "downgrades Kubernetes"
	}
	return field.ErrorList{field.Invalid(classRefNamePath, to.Name, fmt.Sprintf(
		"moving from ClusterStackRelease %q (Kubernetes %s) to %q (Kubernetes %s) %s: "+
			"a Cluster moves one Kubernetes minor at a time, so it may move to a release of stack %s for Kubernetes %d.%d or %d.%d",
		from.Name, from.Spec.KubernetesVersion, to.Name, to.Spec.KubernetesVersion, what,
		fromStack, fromMajor, fromMinor, fromMajor, fromMinor+1))}
}

// ValidateUnpublishedRelease checks a Cluster whose ClusterClass has the name of a release of
// ClusterStack cs that does not exist: its tag must be published (tags lists the stack
// repository's tags), or the release could never be created. The message lists the published
// releases of the stack for the Kubernetes minor, newest first.
func ValidateUnpublishedRelease(c *clusterv1.Cluster, cs *csv1.ClusterStack, tags []string) field.ErrorList {
	_, name := ClassRef(c)
	if slices.Contains(tags, name) {
		return nil
	}
	var published []releasename.Release
	for _, t := range tags {
		r, err := releasename.Parse(t)
		if err == nil && r.Provider == cs.Spec.Provider && r.Name == cs.Spec.Name && r.KubernetesMinor() == cs.Spec.KubernetesVersion {
			published = append(published, r)
		}
	}
	releasename.Sort(published)
	slices.Reverse(published)
	var names []string
	for i := 0; i < len(published) && i < 5; i++ {
		names = append(names, published[i].String())
	}
	hint := "no release of the stack for this Kubernetes minor is published yet"
	if len(names) > 0 {
		hint = "published releases, newest first: " + strings.Join(names, ", ")
	}
	return field.ErrorList{field.Invalid(classRefNamePath, name, fmt.Sprintf(
		"ClusterClass %q would be a release of ClusterStack %q, but tag %q is not published in its repository %s: publish the tag first, or use a published release (%s)",
		name, cs.Name, name, redact.URL(cs.Spec.Source.Location()), hint))}
}

// parseMinor parses a Kubernetes minor such as "1.36".
func parseMinor(v string) (major, minor int, err error) {
	ma, mi, ok := strings.Cut(v, ".")
	if ok {
		major, err = strconv.Atoi(ma)
		if err == nil {
			minor, err = strconv.Atoi(mi)
		}
	}
	if !ok || err != nil {
		return 0, 0, fmt.Errorf("spec.kubernetesVersion %q is not <major>.<minor>", v)
	}
	return major, minor, nil
}

// ValidateMoveTiming checks a move of Cluster c from release from to release to of ClusterStack
// cs (to's stack): a move to a newer release happens only while the rollout is not held (the
// clusterstack.io/hold annotation, or status.hold for a pull request's hold label) and while a
// maintenance window of the Cluster's wave is open (docs/gitops.md). A move back to an older
// release is always allowed, so that a failed upgrade can be undone at once. A window that
// does not parse counts as closed, naming what is wrong.
func ValidateMoveTiming(c *clusterv1.Cluster, from, to *csv1.ClusterStackRelease, cs *csv1.ClusterStack, now time.Time) field.ErrorList {
	if cs == nil || from == nil || to == nil || from.Name == to.Name || releasename.CompareVersions(to.Spec.Version, from.Spec.Version) < 0 && from.Spec.KubernetesVersion == to.Spec.KubernetesVersion {
		return nil
	}
	back := fmt.Sprintf("moving back to an older release is always allowed (the Cluster uses %s)", from.Name)
	if h := holdOf(cs); h != nil {
		return field.ErrorList{field.Forbidden(classRefNamePath, fmt.Sprintf(
			"the rollout of ClusterStack %s is held by %s: Cluster %s may move to %s once the hold is removed; %s",
			cs.Name, rollout.HoldText(h), c.Name, to.Name, back))}
	}
	wave, specs, err := rollout.WaveWindows(cs.Spec.Updates, c.Labels)
	if err != nil {
		return field.ErrorList{field.Forbidden(classRefNamePath, fmt.Sprintf("ClusterStack %s: %s: the Cluster's wave, and so its maintenance windows, cannot be told; fix the selector", cs.Name, err))}
	}
	if len(specs) == 0 {
		return nil
	}
	ws, err := window.ParseAll(specs)
	if err != nil {
		return field.ErrorList{field.Forbidden(classRefNamePath, fmt.Sprintf(
			"Cluster %s is in wave %s of ClusterStack %s, whose maintenance %s: fix the window; until then the wave's Clusters do not move; %s",
			c.Name, wave, cs.Name, err, back))}
	}
	st := window.At(ws, now)
	if st.Open {
		return nil
	}
	return field.ErrorList{field.Forbidden(classRefNamePath, fmt.Sprintf(
		"Cluster %s is in wave %s of ClusterStack %s, and no maintenance window of the wave is open now: the %s; the Cluster may move to %s only then (Flux applies the change again by itself), or add a window to the wave; %s",
		c.Name, wave, cs.Name, st.Describe(now), to.Name, back))}
}

// holdOf is the hold of cs: what the updates reconciler recorded, else the annotation itself
// (set a moment ago, not reconciled yet).
func holdOf(cs *csv1.ClusterStack) *csv1.RolloutHold {
	if v, ok := cs.Annotations[csv1.HoldAnnotation]; ok {
		if h := cs.Status.Hold; h != nil && h.Source == csv1.HoldFromAnnotation {
			return h
		}
		by, reason := rollout.ParseHold(v)
		return &csv1.RolloutHold{Source: csv1.HoldFromAnnotation, By: by, Reason: reason, Since: cs.CreationTimestamp}
	}
	if h := cs.Status.Hold; h != nil && h.Source == csv1.HoldFromPullRequestLabel {
		return h
	}
	return nil
}
