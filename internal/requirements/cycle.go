package requirements

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// Conflict is an operator that two releases require in ranges no version satisfies together.
type Conflict struct {
	// Operator is the ManagementOperator component both releases require.
	Operator string
	// From and To name the releases; FromVersions and ToVersions are their ranges.
	From, FromVersions, To, ToVersions string
}

// String names the cycle: "release a requires cluster-api <1.11.0 and release b requires
// cluster-api >=1.11.0: no version of cluster-api satisfies both".
func (c Conflict) String() string {
	return fmt.Sprintf("release %s requires %s %s and release %s requires %s %s: no version of %s satisfies both",
		c.From, c.Operator, c.FromVersions, c.To, c.Operator, c.ToVersions, c.Operator)
}

// Conflicts returns the operators that release from (the one a Cluster's addons are at) and
// release to (the one it moves to) both require in version ranges with no version in common,
// sorted by operator. Each is a cycle no wait resolves: while the Cluster is at from, the
// operator may not move out of from's range (Excluding), and the Cluster may not move to to
// until the operator is within to's range. A range that does not parse conflicts with nothing
// here (Validate and Met report it).
func Conflicts(from, to Release) []Conflict {
	var out []Conflict
	for _, f := range from.Requirements {
		if f.Operator == "" || f.Versions == "" {
			continue
		}
		fc, err := ParseRange(f.Versions)
		if err != nil {
			continue
		}
		for _, t := range to.Requirements {
			if t.Operator != f.Operator || t.Versions == "" {
				continue
			}
			tc, err := ParseRange(t.Versions)
			if err != nil || Intersect(f.Versions, fc, t.Versions, tc) {
				continue
			}
			out = append(out, Conflict{Operator: f.Operator, From: from.Name, FromVersions: f.Versions, To: to.Name, ToVersions: t.Versions})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Operator < out[j].Operator })
	return out
}

// versionRE finds the versions a range names: "1", "1.10", "v1.10.3", "1.x", "1.10.*", with a
// pre-release ("1.11.0-rc.1") when it has one.
var versionRE = regexp.MustCompile(`v?(\d+)(?:\.(\d+|[xX*]))?(?:\.(\d+|[xX*]))?(-[0-9A-Za-z.-]+)?`)

// Intersect reports whether some version satisfies both ranges a and b (parsed as ac and bc).
//
// Every Masterminds range is a union of intervals whose lower ends are versions the range names
// (">=1.2.3", "~1.2", "^1.2.3", "1.2.x" and "1.2.3 - 1.4" start at the version they name,
// ">1.2.3" just above it, "<1.2.3" at 0.0.0) and which exclude at most the versions they name
// ("!=1.2.3"). So two ranges have a version in common exactly when one of these candidates is
// in both: every version either range names (missing and wildcard parts as 0), the next patch,
// minor and major of each, and 0.0.0.
func Intersect(a string, ac *semver.Constraints, b string, bc *semver.Constraints) bool {
	for _, v := range candidates(a + " " + b) {
		if ac.Check(v) && bc.Check(v) {
			return true
		}
	}
	return false
}

// candidates are the versions Intersect tries for the ranges in s.
func candidates(s string) []*semver.Version {
	out := []*semver.Version{semver.New(0, 0, 0, "", "")}
	for _, m := range versionRE.FindAllStringSubmatch(s, -1) {
		num := func(p string) uint64 {
			n, err := strconv.ParseUint(p, 10, 64)
			if err != nil {
				return 0 // missing or a wildcard
			}
			return n
		}
		major, minor, patch := num(m[1]), num(m[2]), num(m[3])
		pre := strings.TrimPrefix(m[4], "-")
		if pre != "" {
			out = append(out, semver.New(major, minor, patch, pre, ""))
		}
		out = append(out,
			semver.New(major, minor, patch, "", ""),
			semver.New(major, minor, patch+1, "", ""),
			semver.New(major, minor+1, 0, "", ""),
			semver.New(major+1, 0, 0, "", ""))
	}
	return out
}
