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
	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
)

// Release is what is known of an existing ClusterStackRelease.
type Release struct {
	Name string
	// Validated is nil while the release was not validated, else whether its stack is valid;
	// ValidationMessage says why not.
	Validated         *bool
	ValidationMessage string
	// RequirementsMet is nil while unknown; RequirementsMessage says what is missing.
	RequirementsMet     *bool
	RequirementsMessage string
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
	// Discovered is when each release was first seen (from the previous status).
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
	// a risk only while no Cluster uses the stack itself (then the lagging Clusters are the
	// only ones that could take its releases); the stack's own Clusters are not held back.
	Lagging []string
}

// Result are the computed updates.
type Result struct {
	// Available are the releases that may be taken, newest first.
	Available []csv1.StackUpdate
	// Conditional are the releases held back, newest first, with every risk.
	Conditional []csv1.ConditionalUpdate
	// RequeueAfter is when the next held-back release reaches MinReleaseAge (0: none).
	RequeueAfter time.Duration
}

// Compute lists the updates. Discovery times are truncated to seconds (as metav1.Time is
// written), so that computing again from the written status gives the same result.
func Compute(f Facts) Result {
	var res Result
	now := metav1.NewTime(f.Now.Truncate(time.Second))
	var candidates []stack.Release
	for _, tag := range f.Tags {
		r, err := stack.ParseReleaseName(tag)
		if err != nil || r.Provider != f.Provider || r.Name != f.Name || r.KubernetesMinor() != strings.TrimPrefix(f.KubernetesMinor, "v") {
			continue
		}
		v, _ := stack.ParseVersion(r.Version)
		if !v.Stable() && v.Channel != f.Channel {
			continue
		}
		if f.InUse[tag] || (f.Baseline != "" && stack.CompareVersions(r.Version, f.Baseline) <= 0) {
			continue
		}
		candidates = append(candidates, r)
	}
	stack.SortReleases(candidates)
	for i := len(candidates) - 1; i >= 0; i-- {
		r := candidates[i]
		name := r.String()
		found, ok := f.Discovered[name]
		if !ok {
			found = now
		}
		u := csv1.StackUpdate{Release: name, Version: r.Version, DiscoveredAt: &found}
		risks := risksOf(f, name, found, &res)
		if len(risks) == 0 {
			res.Available = append(res.Available, u)
			continue
		}
		res.Conditional = append(res.Conditional, csv1.ConditionalUpdate{StackUpdate: u, Risks: risks})
	}
	return res
}

// risksOf lists what holds release name back.
func risksOf(f Facts, name string, found metav1.Time, res *Result) []csv1.UpdateRisk {
	var risks []csv1.UpdateRisk
	if rel, ok := f.Releases[name]; ok {
		if rel.Validated != nil && !*rel.Validated {
			risks = append(risks, csv1.UpdateRisk{Type: csv1.RiskValidationFailed,
				Message: fmt.Sprintf("release %s failed validation: %s", name, rel.ValidationMessage)})
		}
		if rel.RequirementsMet != nil && !*rel.RequirementsMet {
			risks = append(risks, csv1.UpdateRisk{Type: csv1.RiskRequirementsNotMet,
				Message: fmt.Sprintf("release %s requires what the management cluster does not have: %s", name, rel.RequirementsMessage)})
		}
	}
	if f.MinReleaseAge > 0 {
		if ready := found.Add(f.MinReleaseAge); f.Now.Before(ready) {
			risks = append(risks, csv1.UpdateRisk{Type: csv1.RiskMinimumAgeNotReached,
				Message: fmt.Sprintf("tag %s first seen %s; spec.updates.minReleaseAge %s holds it back until %s",
					name, found.UTC().Format(time.RFC3339), f.MinReleaseAge, ready.UTC().Format(time.RFC3339))})
			if wait := ready.Sub(f.Now); res.RequeueAfter == 0 || wait < res.RequeueAfter {
				res.RequeueAfter = wait
			}
		}
	}
	if url, ok := f.Declined[name]; ok {
		risks = append(risks, csv1.UpdateRisk{Type: csv1.RiskDeclined,
			Message: fmt.Sprintf("pull request %s proposing %s was closed without merging: the version is skipped (pin it in spec.versions to take it anyway)", url, name)})
	}
	if len(f.Lagging) > 0 && len(f.InUse) == 0 {
		lagging := append([]string(nil), f.Lagging...)
		sort.Strings(lagging)
		shown := lagging
		if len(shown) > 3 {
			shown = shown[:3]
		}
		risks = append(risks, csv1.UpdateRisk{Type: csv1.RiskSkipsKubernetesMinor,
			Message: fmt.Sprintf("%d Cluster(s) (%s) use a release for a Kubernetes minor more than one below %s: they must move to a release for the minor in between first",
				len(lagging), strings.Join(shown, ", "), f.KubernetesMinor)})
	}
	return risks
}

// Target is the newest available update, or "".
func Target(r Result) string {
	if len(r.Available) == 0 {
		return ""
	}
	return r.Available[0].Release
}
