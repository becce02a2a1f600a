// Package stackstatus computes a ClusterStack's status from its releases and the ClusterAddons of
// its Clusters: which version is fully available, the Cluster counts and the Available,
// Progressing, Degraded and Ready conditions. Pure functions of literal inputs, no client: the
// ClusterStack status reconciler reads the objects and writes the result.
package stackstatus

import (
	"fmt"
	"slices"
	"strings"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxstatus"
	"github.com/clusterstack-io/clusterstack-operator/internal/releasename"
)

// maxListed is how many degraded or progressing subjects a condition message names.
const maxListed = 3

// Facts is what a ClusterStack's status is computed from.
type Facts struct {
	// Releases are the stack's delivered releases (not those kept only as a proposal's candidate).
	Releases []csv1.ClusterStackRelease
	// Fleet sums the ClusterAddons of the stack's Clusters (an Index keeps it, Summarize makes it
	// from a list).
	Fleet Fleet
	// Resolved is the stack's ReleasesResolved condition (nil when not set yet).
	Resolved *metav1.Condition
	// PreviousAvailable is the status.versions.available reported so far.
	PreviousAvailable string
}

// Result is the computed status of a ClusterStack.
type Result struct {
	fluxstatus.Result
	// AvailableVersion is status.versions.available: the newest fully available version.
	AvailableVersion string
	// Clusters counts every Cluster of the stack.
	Clusters csv1.ClusterCounts
	// ReleaseAvailable and ReleaseClusters are, by release name, status.releases[].available and
	// status.releases[].clusters.
	ReleaseAvailable map[string]bool
	ReleaseClusters  map[string]csv1.ClusterCounts
}

// observed is what Compute gathers from the facts before it sets any condition.
type observed struct {
	// degraded and progressing are the messages of the degraded and progressing releases and
	// Clusters (and of ReleasesResolved), in order, the Clusters by ClusterAddon name and only
	// the first maxListed of them; degradedReason is the reason of the first degraded one.
	degraded, progressing []string
	degradedReason        string
	// moreDegraded and moreProgressing count the Clusters left out of degraded and progressing.
	moreDegraded, moreProgressing int
	// allAvailable is true when every Cluster is Available.
	allAvailable bool
	// pending are the releases some Cluster wants but does not have (Available) yet; delivered
	// those some Cluster has applied and is Available with.
	pending, delivered map[string]bool
}

// Compute derives a ClusterStack's status from its releases and ClusterAddons. A version is fully
// available when its release is Available and every Cluster that wants it has it applied and
// Available; status.versions.available is the newest such version, so it moves only when a
// rollout has completed.
func Compute(name string, f Facts) Result {
	res := Result{ReleaseAvailable: map[string]bool{}, ReleaseClusters: map[string]csv1.ClusterCounts{}}
	o := observed{allAvailable: true, pending: map[string]bool{}, delivered: map[string]bool{}}
	for _, rel := range f.Releases {
		res.ReleaseAvailable[rel.Name] = apimeta.IsStatusConditionTrue(rel.Status.Conditions, csv1.AvailableCondition)
		o.release(rel)
	}
	res.Clusters = f.Fleet.Clusters
	for rel, n := range f.Fleet.Releases {
		res.ReleaseClusters[rel] = n
	}
	o.fleet(f.Fleet)
	res.AvailableVersion = availableVersion(f, res.ReleaseAvailable, o)
	o.resolved(f.Resolved)

	subject := "ClusterStack " + name
	res.Degraded = degradedCondition(subject, o)
	res.Progressing = progressingCondition(subject, o)
	res.Available = availableCondition(subject, len(f.Releases), res.AvailableVersion, o.allAvailable, res.Clusters, deliveredVersions(f))
	res.Ready = fluxstatus.ReadyFrom(res.Available, res.Progressing, res.Degraded)
	res.Stalled, res.Reconciling = fluxstatus.KstatusFrom(res.Ready, res.Degraded)
	res.Healthy = res.Ready.Status == metav1.ConditionTrue
	return res
}

// release notes a degraded or unfinished release: one whose Progressing is not False (a release
// without conditions yet is being reconciled).
func (o *observed) release(rel csv1.ClusterStackRelease) {
	if c := apimeta.FindStatusCondition(rel.Status.Conditions, csv1.DegradedCondition); c != nil && c.Status == metav1.ConditionTrue {
		o.degrade(c.Reason, c.Message)
		return
	}
	if c := apimeta.FindStatusCondition(rel.Status.Conditions, csv1.ProgressingCondition); c == nil {
		o.progressing = append(o.progressing, "release "+rel.Name+" is being reconciled")
	} else if c.Status != metav1.ConditionFalse {
		o.progressing = append(o.progressing, c.Message)
	}
}

// fleet notes the Clusters: whether all are Available, which releases they wait for or deliver,
// and the first degraded and progressing ones by ClusterAddon name (only as many as a message
// names: O(k) in the degraded or progressing Clusters, never a walk over all of them).
func (o *observed) fleet(f Fleet) {
	o.allAvailable = f.NotAvailable == 0
	for rel, n := range f.Pending {
		o.pending[rel] = n > 0
	}
	for rel, n := range f.Delivered {
		o.delivered[rel] = n > 0
	}
	for _, name := range firstNames(f.Degraded, maxListed) {
		o.degrade(f.Degraded[name].Reason, f.Degraded[name].Message)
	}
	o.moreDegraded = len(f.Degraded) - min(len(f.Degraded), maxListed)
	for _, name := range firstNames(f.Progressing, maxListed) {
		o.progressing = append(o.progressing, f.Progressing[name])
	}
	o.moreProgressing = len(f.Progressing) - min(len(f.Progressing), maxListed)
}

// resolved puts a False ReleasesResolved first: a release still in use that is no longer wanted
// is progress (it goes once the Clusters move), any other reason (tags cannot be listed) degrades.
func (o *observed) resolved(c *metav1.Condition) {
	if c == nil || c.Status != metav1.ConditionFalse {
		return
	}
	if c.Reason == csv1.ReasonInUse {
		o.progressing = append([]string{c.Message}, o.progressing...)
		return
	}
	o.degraded = append([]string{c.Message}, o.degraded...)
	o.degradedReason = c.Reason
}

func (o *observed) degrade(reason, msg string) {
	o.degraded = append(o.degraded, msg)
	if o.degradedReason == "" {
		o.degradedReason = reason
	}
}

// availableVersion is the newest version whose release is Available and that no Cluster still
// waits for; with Clusters, only versions delivered to some Cluster count (a release no Cluster
// uses yet is not "the version delivered", however healthy its ClusterClass is). When nothing
// qualifies (say the newest version is applied everywhere but one cluster broke), the version
// reported before stays while its release exists: it moves only forward to a version that is
// fully available.
func availableVersion(f Facts, releaseAvailable map[string]bool, o observed) string {
	v := ""
	for _, rel := range f.Releases {
		if !releaseAvailable[rel.Name] || o.pending[rel.Name] || (f.Fleet.Clusters.Total > 0 && !o.delivered[rel.Name]) {
			continue
		}
		if v == "" || releasename.CompareVersions(rel.Spec.Version, v) > 0 {
			v = rel.Spec.Version
		}
	}
	if v != "" || f.PreviousAvailable == "" {
		return v
	}
	for _, rel := range f.Releases {
		if rel.Spec.Version == f.PreviousAvailable {
			return f.PreviousAvailable
		}
	}
	return ""
}

// degradedCondition is True, with the reason of the first degraded subject, while a release or
// a Cluster is degraded (or the releases cannot be resolved), naming up to three of them.
func degradedCondition(subject string, o observed) metav1.Condition {
	if len(o.degraded) > 0 {
		return cond(csv1.DegradedCondition, metav1.ConditionTrue, o.degradedReason, subject+": "+joinLimited(o.degraded, o.moreDegraded))
	}
	return cond(csv1.DegradedCondition, metav1.ConditionFalse, csv1.ReasonAsExpected, subject+": no release or cluster is degraded")
}

// progressingCondition is True while a release is reconciled, a Cluster rolls out, or a release
// no longer wanted waits for its Clusters, naming up to three of them.
func progressingCondition(subject string, o observed) metav1.Condition {
	if len(o.progressing) > 0 {
		return cond(csv1.ProgressingCondition, metav1.ConditionTrue, csv1.ReasonReconciling, subject+": "+joinLimited(o.progressing, o.moreProgressing))
	}
	return cond(csv1.ProgressingCondition, metav1.ConditionFalse, csv1.ReasonAsExpected, subject+": nothing is rolling out")
}

// versionCount is how many Clusters are Available with a version last applied.
type versionCount struct {
	version  string
	clusters int
}

// deliveredVersions counts the Clusters that are Available with each version last applied, the
// newest version first (a release the stack no longer lists is named by its release name).
func deliveredVersions(f Facts) []versionCount {
	versionOf := map[string]string{}
	for _, rel := range f.Releases {
		versionOf[rel.Name] = rel.Spec.Version
	}
	var out []versionCount
	for rel, n := range f.Fleet.Delivered {
		if n <= 0 {
			continue
		}
		v, ok := versionOf[rel]
		if !ok {
			v = rel
		}
		out = append(out, versionCount{version: v, clusters: n})
	}
	slices.SortFunc(out, func(a, b versionCount) int {
		if c := releasename.CompareVersions(b.version, a.version); c != 0 {
			return c
		}
		return strings.Compare(a.version, b.version)
	})
	return out
}

// onOtherVersions says, when some Clusters run another version than version, how many run it and
// how many each other version, the newest first ("v1 on 2, v0 on 1"); "" when every Cluster runs
// version (or there are none).
func onOtherVersions(version string, delivered []versionCount) (on int, others string) {
	var named []string
	more := 0
	for _, d := range delivered {
		switch {
		case d.version == version:
			on = d.clusters
		case len(named) < maxListed:
			named = append(named, fmt.Sprintf("%s on %d", d.version, d.clusters))
		default:
			more++
		}
	}
	switch {
	case more == 1:
		named = append(named, "1 more version")
	case more > 1:
		named = append(named, fmt.Sprintf("%d more versions", more))
	}
	return on, strings.Join(named, ", ")
}

// availableCondition is True when a version is fully available and every Cluster is Available.
// Its message names how many Clusters run that version, and the others when they differ.
func availableCondition(subject string, releases int, version string, allAvailable bool, clusters csv1.ClusterCounts, delivered []versionCount) metav1.Condition {
	switch {
	case releases == 0:
		return cond(csv1.AvailableCondition, metav1.ConditionFalse, csv1.ReasonNoReleases, subject+": no release yet")
	case version == "":
		return cond(csv1.AvailableCondition, metav1.ConditionFalse, csv1.ReasonReconciling, subject+": no version is fully available yet")
	case !allAvailable:
		return cond(csv1.AvailableCondition, metav1.ConditionFalse, csv1.ReasonFluxNotReady,
			fmt.Sprintf("%s: %s is available, but only %d/%d clusters are", subject, version, clusters.Available, clusters.Total))
	default:
		if on, others := onOtherVersions(version, delivered); others != "" {
			return cond(csv1.AvailableCondition, metav1.ConditionTrue, csv1.ReasonAsExpected,
				fmt.Sprintf("%s: %s is available on %d/%d clusters, %s; all %d are available", subject, version, on, clusters.Total, others, clusters.Total))
		}
		return cond(csv1.AvailableCondition, metav1.ConditionTrue, csv1.ReasonAsExpected,
			fmt.Sprintf("%s: %s is available on %d/%d clusters", subject, version, clusters.Available, clusters.Total))
	}
}

// joinLimited names the first maxListed items and counts the rest, more of which were left out
// of items already (fluxstatus.JoinLimited of the whole list).
func joinLimited(items []string, more int) string {
	if more == 0 {
		return fluxstatus.JoinLimited(items, maxListed)
	}
	if len(items) > maxListed {
		more += len(items) - maxListed
		items = items[:maxListed]
	}
	return fmt.Sprintf("%s; and %d more", strings.Join(items, "; "), more)
}

func cond(t string, s metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: t, Status: s, Reason: reason, Message: fluxstatus.Truncate(msg)}
}

// Tally counts one ClusterAddon into n: total, up to date (its desired release is the one last
// applied), Available, Degraded.
func Tally(n *csv1.ClusterCounts, a *csv1.ClusterAddon) {
	n.Total++
	if UpToDate(a) {
		n.UpToDate++
	}
	if apimeta.IsStatusConditionTrue(a.Status.Conditions, csv1.AvailableCondition) {
		n.Available++
	}
	if apimeta.IsStatusConditionTrue(a.Status.Conditions, csv1.DegradedCondition) {
		n.Degraded++
	}
}

// UpToDate is true when a Cluster's addons were last applied from the release it uses.
func UpToDate(a *csv1.ClusterAddon) bool {
	return a.Status.LastAppliedRelease != "" && a.Status.LastAppliedRelease == a.Status.DesiredRelease
}
