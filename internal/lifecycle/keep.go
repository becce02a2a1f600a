// Package lifecycle decides which ClusterStackReleases a ClusterStack keeps, and why. It has no
// client: the controllers gather the facts (what is pinned, what Clusters, ClusterAddons and
// generated Flux objects use) and act on the decision. A release is never removed while anything
// still runs it.
package lifecycle

import (
	"slices"
	"sort"

	"github.com/clusterstack-io/clusterstack-operator/internal/releasename"
)

// Reasons a release is kept, as listed in the ClusterStack's status.
const (
	// Pinned: the version is in spec.versions.
	Pinned = "Pinned"
	// Latest: the newest published release, with autoSubscribe.
	Latest = "Latest"
	// InUse: a Cluster's topology uses the release's ClusterClass.
	InUse = "InUse"
	// Applied: a Cluster's addons were last applied from the release (for example the previous
	// release of a Cluster that is upgrading, or failed to upgrade).
	Applied = "Applied"
	// Referenced: a generated Flux object (a cluster's HelmRelease or Kustomization, or a values
	// ConfigMap) still refers to the release's sources or charts.
	Referenced = "Referenced"
	// RollbackTarget: one of the newest working releases older than the newest wanted one.
	RollbackTarget = "RollbackTarget"
	// Candidate: the newest update of a ClusterStack that proposes updates, created before any
	// Cluster uses it so that it is validated (and its requirements checked) before it is
	// proposed. Its ClusterClass exists in the management cluster; nothing reaches a workload
	// cluster until a pull request moving a Cluster is merged.
	Candidate = "Candidate"
)

// Release is an existing ClusterStackRelease.
type Release struct {
	// Name of the release (the tag).
	Name string
	// Version of the stack, e.g. "v2".
	Version string
	// Works is true when the release's stack was validated and the release is Available: only
	// such a release is worth keeping as a rollback target.
	Works bool
}

// Facts are what the decision is made from.
type Facts struct {
	// Wanted are the release names the ClusterStack asks for, with their reasons (Pinned, Latest).
	Wanted map[string][]string
	// Existing are the stack's releases.
	Existing []Release
	// ClassUsers, Applied and Referenced map a release name to who uses it: Clusters whose
	// topology names it, ClusterAddons whose last applied release it is, and generated objects
	// referring to it.
	ClassUsers, Applied, Referenced map[string][]string
	// RollbackReleases is how many validated releases older than the newest wanted one are kept.
	RollbackReleases int
}

// Keep returns, for every release that must exist or stay, the sorted reasons why. Releases of
// Existing that are not in the result may be removed. Releases in the result that do not exist
// (a pinned version, or one a Cluster uses) should be created.
func Keep(f Facts) map[string][]string {
	keep := map[string][]string{}
	add := func(name, reason string) { keep[name] = append(keep[name], reason) }
	for name, reasons := range f.Wanted {
		for _, r := range reasons {
			add(name, r)
		}
	}
	for reason, uses := range map[string]map[string][]string{InUse: f.ClassUsers, Applied: f.Applied, Referenced: f.Referenced} {
		for name, users := range uses {
			if len(users) > 0 {
				add(name, reason)
			}
		}
	}
	for _, name := range RollbackTargets(f.Wanted, f.Existing, f.RollbackReleases) {
		add(name, RollbackTarget)
	}
	for name, rs := range keep {
		keep[name] = slices.Compact(slices.Sorted(slices.Values(rs)))
	}
	return keep
}

// RollbackTargets are the n newest working existing releases older than the newest wanted one.
func RollbackTargets(wanted map[string][]string, existing []Release, n int) []string {
	if n <= 0 {
		return nil
	}
	newest := ""
	for name, reasons := range wanted {
		if len(reasons) == 1 && reasons[0] == Candidate {
			continue // a candidate is not delivered yet: rollback targets are counted from what is
		}
		if r, err := releasename.Parse(name); err == nil && (newest == "" || releasename.CompareVersions(r.Version, newest) > 0) {
			newest = r.Version
		}
	}
	if newest == "" {
		return nil
	}
	var older []Release
	for _, r := range existing {
		if r.Works && releasename.CompareVersions(r.Version, newest) < 0 {
			older = append(older, r)
		}
	}
	sort.Slice(older, func(i, j int) bool { return releasename.CompareVersions(older[i].Version, older[j].Version) > 0 })
	var out []string
	for i := 0; i < len(older) && i < n; i++ {
		out = append(out, older[i].Name)
	}
	return out
}
