// Package releasename names the releases of a stack: the Git tag (and ClusterClass name)
// "<provider>-<stack>-<k8s major>-<k8s minor>-<version>", the stack versions in it and their
// order, and Kubernetes patch versions. It is a leaf package: reading or comparing a release
// name does not pull in the stack loader (internal/stack) and its Helm and kustomize engines.
package releasename

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// Release identifies one release of a stack: the Git tag
// "<provider>-<stack>-<k8s major>-<k8s minor>-<version>", which is also the name of the
// ClusterClass the release produces.
type Release struct {
	Provider string `json:"provider"`
	Name     string `json:"name"`
	Major    int    `json:"major"`
	Minor    int    `json:"minor"`
	// Version is the stack version as written in the tag: "v1", "v12", or an SCS
	// channel version such as "v0-sha.abc1234", "v1-alpha.0" or (tag form) "v1-alpha-0".
	Version string `json:"version"`
}

// String is the tag (and ClusterClass) name, e.g. "aws-base-1-36-v1".
func (r Release) String() string {
	return fmt.Sprintf("%s-%s-%d-%d-%s", r.Provider, r.Name, r.Major, r.Minor, r.Version)
}

// KubernetesMinor is "1.36" for a release of a 1-36 stack.
func (r Release) KubernetesMinor() string { return fmt.Sprintf("%d.%d", r.Major, r.Minor) }

// HelmReleaseName is the Helm release name under which the operator installs the
// cluster-class chart: the tag without the version, e.g. "aws-base-1-36". A chart that names
// its ClusterClass "{{ .Release.Name }}-{{ .Chart.Version }}" thus produces String().
func (r Release) HelmReleaseName() string {
	return r.Provider + "-" + r.Name + "-" + strconv.Itoa(r.Major) + "-" + strconv.Itoa(r.Minor)
}

// StackVersion is a parsed stack version. Stable versions are "v<N>"; SCS (csctl / cluster
// stack operator) also produces channel versions "v<N>-<channel>.<patch>" (ClusterClass and
// metadata form, e.g. "v0-sha.abc1234" in csctl's hash mode, "v1-alpha.0") and
// "v<N>-<channel>-<patch>" (SCS release-tag form, e.g. "v1-alpha-0"). Both are accepted.
type StackVersion struct {
	Major   int    `json:"major"`
	Channel string `json:"channel,omitempty"` // "" for a stable version
	Patch   string `json:"patch,omitempty"`
}

// Stable reports whether the version has no channel.
func (v StackVersion) Stable() bool { return v.Channel == "" }

// The grammar of a release name is checked byte by byte rather than with regular expressions:
// every Cluster's ClusterClass name is parsed again whenever a stack's uses are counted.

// ValidSegment reports whether s may be the provider or the stack name of a release name:
// lower-case letters and digits only (they are '-'-separated parts of the name).
func ValidSegment(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// validNumber reports whether s is a decimal number without leading zeros ("0", "36").
func validNumber(s string) bool {
	if s == "" || s[0] == '0' && len(s) > 1 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// splitVersion splits "v<major>[-<channel>{.|-}<patch>]" into its parts; ok is false when
// version is not of that form (major a number without leading zeros, channel and patch
// lower-case letters and digits).
func splitVersion(version string) (major, channel, patch string, ok bool) {
	rest, found := strings.CutPrefix(version, "v")
	if !found {
		return "", "", "", false
	}
	major, tail, hasTail := strings.Cut(rest, "-")
	if !validNumber(major) {
		return "", "", "", false
	}
	if !hasTail {
		return major, "", "", true
	}
	i := strings.IndexAny(tail, ".-")
	if i < 0 || !ValidSegment(tail[:i]) || !ValidSegment(tail[i+1:]) {
		return "", "", "", false
	}
	return major, tail[:i], tail[i+1:], true
}

// ParseVersion parses a stack version ("v1", "v0-sha.abc1234", "v1-alpha.0", "v1-alpha-0").
func ParseVersion(version string) (StackVersion, error) {
	m, channel, patch, ok := splitVersion(version)
	if !ok {
		return StackVersion{}, fmt.Errorf("version %q is not a stack version (v<N>, or v<N>-<channel>.<patch> such as v0-sha.abc1234)", version)
	}
	major, err := strconv.Atoi(m)
	if err != nil {
		return StackVersion{}, fmt.Errorf("version %q: %w", version, err)
	}
	return StackVersion{Major: major, Channel: channel, Patch: patch}, nil
}

// Format builds the tag / ClusterClass name of a release:
// Format("aws", "base", "1.36", "v1") == "aws-base-1-36-v1". kubernetesMinor may be
// given as "1.36", "v1.36", "1-36" or as a full version "1.36.3". It does not validate its
// arguments; use Parse on the result for that.
func Format(provider, name, kubernetesMinor, version string) string {
	minor := strings.TrimPrefix(kubernetesMinor, "v")
	minor = strings.ReplaceAll(minor, ".", "-")
	if parts := strings.Split(minor, "-"); len(parts) > 2 {
		minor = parts[0] + "-" + parts[1]
	}
	return provider + "-" + name + "-" + minor + "-" + version
}

// Parse parses a release name (tag) such as "aws-base-1-36-v1" or
// "openstack-scs-1-35-v0-sha.abc1234". Provider and stack name are lower-case alphanumeric
// (no '-'); major and minor are decimal; the version must satisfy ParseVersion.
func Parse(tag string) (Release, error) {
	parts := strings.SplitN(tag, "-", 5)
	if len(parts) != 5 {
		return Release{}, fmt.Errorf("release name %q is not <provider>-<stack>-<major>-<minor>-<version>", tag)
	}
	if !ValidSegment(parts[0]) {
		return Release{}, fmt.Errorf("release name %q: provider %q must be lower-case letters and digits", tag, parts[0])
	}
	if !ValidSegment(parts[1]) {
		return Release{}, fmt.Errorf("release name %q: stack name %q must be lower-case letters and digits", tag, parts[1])
	}
	if !validNumber(parts[2]) || !validNumber(parts[3]) {
		return Release{}, fmt.Errorf("release name %q: %q-%q is not a Kubernetes <major>-<minor>", tag, parts[2], parts[3])
	}
	if _, err := ParseVersion(parts[4]); err != nil {
		return Release{}, fmt.Errorf("release name %q: %w", tag, err)
	}
	major, _ := strconv.Atoi(parts[2])
	minor, _ := strconv.Atoi(parts[3])
	return Release{Provider: parts[0], Name: parts[1], Major: major, Minor: minor, Version: parts[4]}, nil
}

// CompareVersions orders two stack versions: -1 if a < b, 0 if equal, +1 if a > b.
// The major number is compared numerically (v10 > v2); for the same major, a channel
// version sorts before the stable one (v1-alpha.0 < v1, like a SemVer pre-release); between
// channel versions the channel and then the patch are compared as SemVer pre-release
// identifiers (numeric patches numerically, others lexically; "v0-sha.<hash>" versions of
// csctl's hash mode therefore have no meaningful order among themselves). The two spellings
// "v1-alpha.0" and "v1-alpha-0" are equal. Unparseable versions sort before all valid ones,
// and among themselves lexically.
func CompareVersions(a, b string) int {
	va, errA := ParseVersion(a)
	vb, errB := ParseVersion(b)
	switch {
	case errA != nil && errB != nil:
		return strings.Compare(a, b)
	case errA != nil:
		return -1
	case errB != nil:
		return 1
	}
	return va.semver().Compare(vb.semver())
}

// semver maps v<N>[-<channel>.<patch>] to <N>.0.0[-<channel>.<patch>].
func (v StackVersion) semver() *semver.Version {
	pre := ""
	if v.Channel != "" {
		pre = v.Channel + "." + v.Patch
	}
	sv, err := semver.NewVersion(fmt.Sprintf("%d.0.0", v.Major))
	if err != nil {
		panic(err) // cannot happen: a non-negative integer
	}
	if pre != "" {
		if withPre, err := sv.SetPrerelease(pre); err == nil {
			return &withPre
		}
		// A patch with leading zeros ("v1-rc.01") is no valid SemVer identifier: compare it
		// as text by making it alphanumeric.
		if withPre, err := sv.SetPrerelease(v.Channel + ".x" + v.Patch); err == nil {
			return &withPre
		}
	}
	return sv
}

// Sort sorts releases in place, oldest first: by provider, stack name, Kubernetes
// major and minor, then CompareVersions.
func Sort(rs []Release) {
	sort.SliceStable(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		if a.Provider != b.Provider {
			return a.Provider < b.Provider
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		if a.Major != b.Major {
			return a.Major < b.Major
		}
		if a.Minor != b.Minor {
			return a.Minor < b.Minor
		}
		return CompareVersions(a.Version, b.Version) < 0
	})
}

// Latest picks the newest release of provider/name for a Kubernetes minor ("1.36")
// among tags. Tags that are no release names, or of another stack or minor, are ignored, and
// so are channel versions unless includeChannels is set. ok is false when none is left.
func Latest(tags []string, provider, name, kubernetesMinor string, includeChannels bool) (latest Release, ok bool) {
	want := strings.TrimPrefix(kubernetesMinor, "v")
	for _, tag := range tags {
		r, err := Parse(tag)
		if err != nil || r.Provider != provider || r.Name != name || r.KubernetesMinor() != want {
			continue
		}
		v, _ := ParseVersion(r.Version)
		if !v.Stable() && !includeChannels {
			continue
		}
		if !ok || CompareVersions(r.Version, latest.Version) > 0 {
			latest, ok = r, true
		}
	}
	return latest, ok
}

var kubernetesVersionRE = regexp.MustCompile(`^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`)

// ParseKubernetesVersion checks that version is an exact Kubernetes patch version ("1.36.3"
// or "v1.36.3") and returns it normalized ("v1.36.3") with its minor ("1.36").
func ParseKubernetesVersion(version string) (normalized, minor string, err error) {
	if !kubernetesVersionRE.MatchString(version) {
		return "", "", fmt.Errorf("kubernetesVersion %q is not a Kubernetes patch version like 1.36.3", version)
	}
	v, err := semver.NewVersion(version)
	if err != nil {
		return "", "", fmt.Errorf("kubernetesVersion %q: %w", version, err)
	}
	return fmt.Sprintf("v%d.%d.%d", v.Major(), v.Minor(), v.Patch()), fmt.Sprintf("%d.%d", v.Major(), v.Minor()), nil
}
