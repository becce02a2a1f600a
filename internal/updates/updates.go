// Package updates computes a ClusterStack's available and conditional updates (in the manner
// of OpenShift's ClusterVersion) and the releases a Cluster may move to next. It has no client:
// the controller gathers the tags, the releases' conditions, the Clusters' releases and the
// declined pull requests.
package updates

import (
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/releasename"
)

// Release is what is known of an existing ClusterStackRelease.
type Release struct {
	// Name of the release (tag and ClusterClass name).
	Name string
	// Validated is nil while the release was not validated, else whether its stack is valid;
	// ValidationMessage says why not.
	Validated         *bool
	ValidationMessage string
	// RequirementsMet is nil while unknown, else whether the management cluster meets the
	// release's requirements; RequirementsMessage says what is missing.
	RequirementsMet     *bool
	RequirementsMessage string
	// ProviderObjectsReady is nil while unknown, else whether the objects the release's
	// cluster-class created (machine images) are ready; ProviderObjectsMessage says which is not.
	ProviderObjectsReady   *bool
	ProviderObjectsMessage string
}

// Facts are what the updates are computed from.
type Facts struct {
	// Provider, Name and KubernetesMinor ("1.33") of the ClusterStack.
	Provider, Name, KubernetesMinor string
	// Channel: "" for stable versions only, else that channel's versions and the stable ones.
	Channel string
	// Tags of the stack repository (most are not this stack's).
	Tags []string
	// Baseline is the newest version the stack's Clusters use (without Clusters, the newest
	// pinned version): only newer versions are updates. Empty: every version is newer.
	Baseline string
	// InUse are the release names some Cluster uses: never listed.
	InUse map[string]bool
	// Releases are the existing ClusterStackReleases by name.
	Releases map[string]Release
	// Discovered is when each release was first seen (from the previous status). Releases not
	// in it are first seen at Now.
	Discovered map[string]metav1.Time
	// MinReleaseAge holds back releases first seen less than this long ago.
	MinReleaseAge time.Duration
	// Now is the current time.
	Now time.Time
	// Declined maps a release to the URL of a pull request proposing it that was closed
	// without merging.
	Declined map[string]string
	// Lagging are Clusters using a release of the same stack more than one Kubernetes minor
	// below KubernetesMinor: they cannot take these releases without skipping a minor. This is
	// a risk only while no Cluster uses the stack itself (InUse is empty: then the lagging
	// Clusters are the only ones that could want its releases); the stack's own Clusters skip
	// no minor by taking them and are not held back by Clusters of other stacks.
	Lagging []string
}

// Result are the computed updates.
type Result struct {
	// Available are the releases that may be taken, newest first.
	Available []csv1.StackUpdate
	// Conditional are the releases held back, newest first, each with every risk.
	Conditional []csv1.ConditionalUpdate
	// Discovered is when each listed release (available or conditional) was first seen, to
	// record; releases no longer listed are left out.
	Discovered map[string]metav1.Time
	// RequeueAfter is when the next held-back release reaches MinReleaseAge (0: none).
	RequeueAfter time.Duration
}

// Compute lists the updates: the tags that are releases of Provider/Name for KubernetesMinor,
// in Channel (or stable), newer than Baseline and not InUse. A release with no risk is
// available; one with risks is conditional. Discovery times are truncated to seconds and kept
// in UTC (as metav1.Time is written), so that computing again from the written status gives
// the same result.
func Compute(f Facts) Result {
	res := Result{Discovered: map[string]metav1.Time{}}
	candidates := candidates(f)
	for i := len(candidates) - 1; i >= 0; i-- {
		r := candidates[i]
		name := r.String()
		found := discovered(f, name)
		res.Discovered[name] = found
		u := csv1.StackUpdate{Release: name, Version: r.Version, DiscoveredAt: &found}
		risks, wait := risksOf(f, r, found)
		if wait > 0 && (res.RequeueAfter == 0 || wait < res.RequeueAfter) {
			res.RequeueAfter = wait
		}
		if len(risks) == 0 {
			res.Available = append(res.Available, u)
			continue
		}
		res.Conditional = append(res.Conditional, csv1.ConditionalUpdate{StackUpdate: u, Risks: risks})
	}
	return res
}

// Target is the newest available update, or "".
func Target(r Result) string {
	if len(r.Available) == 0 {
		return ""
	}
	return r.Available[0].Release
}

// candidates are the tags that may be updates, oldest first, each once.
func candidates(f Facts) []releasename.Release {
	minor := strings.TrimPrefix(f.KubernetesMinor, "v")
	seen := map[string]bool{}
	var out []releasename.Release
	for _, tag := range f.Tags {
		r, err := releasename.Parse(tag)
		if err != nil || r.Provider != f.Provider || r.Name != f.Name || r.KubernetesMinor() != minor || seen[tag] {
			continue
		}
		v, _ := releasename.ParseVersion(r.Version) // valid: releasename.Parse checked it
		if !v.Stable() && v.Channel != f.Channel {
			continue
		}
		if f.InUse[tag] || (f.Baseline != "" && releasename.CompareVersions(r.Version, f.Baseline) <= 0) {
			continue
		}
		seen[tag] = true
		out = append(out, r)
	}
	releasename.Sort(out)
	return out
}

// discovered is when release name was first seen: as recorded, or now.
func discovered(f Facts, name string) metav1.Time {
	t, ok := f.Discovered[name]
	if !ok {
		t = metav1.NewTime(f.Now)
	}
	return metav1.NewTime(t.UTC().Truncate(time.Second))
}

// risksOf lists what holds release r back, in a fixed order, and how long until the minimum
// age is reached (0 when it is not what holds it back).
func risksOf(f Facts, r releasename.Release, found metav1.Time) ([]csv1.UpdateRisk, time.Duration) {
	name := r.String()
	var risks []csv1.UpdateRisk
	add := func(risk *csv1.UpdateRisk) {
		if risk != nil {
			risks = append(risks, *risk)
		}
	}
	add(validationRisk(f.Releases[name], name))
	add(requirementsRisk(f.Releases[name], name))
	add(providerObjectsRisk(f.Releases[name]))
	ageRisk, wait := minimumAgeRisk(f, name, found)
	add(ageRisk)
	add(declinedRisk(f, r))
	add(skipsMinorRisk(f))
	return risks, wait
}

// validationRisk: the release's stack failed validation.
func validationRisk(rel Release, name string) *csv1.UpdateRisk {
	if rel.Validated == nil || *rel.Validated {
		return nil
	}
	return &csv1.UpdateRisk{Type: csv1.RiskValidationFailed,
		Message: fmt.Sprintf("release %s failed validation: %s", name, OrUnknown(rel.ValidationMessage))}
}

// requirementsRisk: the management cluster does not meet the release's requirements.
func requirementsRisk(rel Release, name string) *csv1.UpdateRisk {
	if rel.RequirementsMet == nil || *rel.RequirementsMet {
		return nil
	}
	return &csv1.UpdateRisk{Type: csv1.RiskRequirementsNotMet,
		Message: fmt.Sprintf("release %s requires what the management cluster does not have: %s", name, OrUnknown(rel.RequirementsMessage))}
}

// providerObjectsRisk: an object the release's cluster-class created is not ready.
func providerObjectsRisk(rel Release) *csv1.UpdateRisk {
	if rel.ProviderObjectsReady == nil || *rel.ProviderObjectsReady {
		return nil
	}
	return &csv1.UpdateRisk{Type: csv1.RiskProviderObjectsNotReady, Message: OrUnknown(rel.ProviderObjectsMessage)}
}

// minimumAgeRisk: the tag was first seen less than MinReleaseAge ago. wait is the time left.
func minimumAgeRisk(f Facts, name string, found metav1.Time) (*csv1.UpdateRisk, time.Duration) {
	if f.MinReleaseAge <= 0 {
		return nil, 0
	}
	ready := found.Add(f.MinReleaseAge)
	if !f.Now.Before(ready) {
		return nil, 0
	}
	return &csv1.UpdateRisk{Type: csv1.RiskMinimumAgeNotReached,
		Message: fmt.Sprintf("tag %s first seen %s; spec.updates.minReleaseAge %s holds it back until %s",
			name, found.UTC().Format(time.RFC3339), ShortDuration(f.MinReleaseAge), ready.UTC().Format(time.RFC3339))}, ready.Sub(f.Now)
}

// declinedRisk: a pull request proposing the release was closed without merging.
func declinedRisk(f Facts, r releasename.Release) *csv1.UpdateRisk {
	url, ok := f.Declined[r.String()]
	if !ok {
		return nil
	}
	return &csv1.UpdateRisk{Type: csv1.RiskDeclined,
		Message: fmt.Sprintf("pull request %s proposing %s was closed without merging: the version is skipped and not proposed again "+
			"(a newer release is proposed once published); to take it anyway, pin %s in spec.versions and set the Clusters' classRef to %s in the fleet repository",
			OrUnknown(url), r, r.Version, r)}
}

// skipsMinorRisk: Clusters lagging more than one Kubernetes minor behind could take the
// release only by skipping a minor (see Facts.Lagging for when this is a risk).
func skipsMinorRisk(f Facts) *csv1.UpdateRisk {
	if len(f.Lagging) == 0 || len(f.InUse) > 0 {
		return nil
	}
	lagging := append([]string(nil), f.Lagging...)
	sort.Strings(lagging)
	return &csv1.UpdateRisk{Type: csv1.RiskSkipsKubernetesMinor,
		Message: fmt.Sprintf("%d Cluster(s) (%s) use a release of %s-%s for a Kubernetes minor more than one below %s: "+
			"they must first move to a release for each minor in between",
			len(lagging), Names(lagging), f.Provider, f.Name, strings.TrimPrefix(f.KubernetesMinor, "v"))}
}

// Names lists at most three names and counts the rest (for messages; the rollout's too).
func Names(ns []string) string {
	if len(ns) <= 3 {
		return strings.Join(ns, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ns[:3], ", "), len(ns)-3)
}

// ShortDuration writes d as a person would: "1h", "1h30m", "90s", not "1h0m0s".
func ShortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// OrUnknown stands in for an empty message.
func OrUnknown(s string) string {
	if s == "" {
		return "(no message)"
	}
	return s
}
