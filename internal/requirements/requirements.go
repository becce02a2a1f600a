// Package requirements decides whether the operators the management plane delivers meet what
// stack releases require (`requires:` in a stack's stack.yaml, recorded in
// ClusterStackRelease.status.requirements), in both directions:
//
//   - Met: a release can be used only once the delivered ManagementOperators are within its
//     ranges and the delivered core provider serves its Cluster API contract;
//   - Excluding: a ManagementOperator may move to a version only when every release in use by
//     Clusters allows it.
//
// Ranges are Masterminds/semver ranges (">=1.10.0 <1.12.0", "~1.10", "^1.10", "1.10.x || 1.11.x").
// As in Masterminds/semver, a pre-release version is within a range only when the range names a
// pre-release of the same major.minor.patch. Everything here is pure and table-tested.
package requirements

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// contractRE matches Cluster API contract names: v1beta1, v1beta2, v1, v1alpha4.
var contractRE = regexp.MustCompile(`^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$`)

// operatorNameRE matches ManagementOperator component names (DNS labels).
var operatorNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// ParseRange parses a version range. The error says what a range looks like.
func ParseRange(r string) (*semver.Constraints, error) {
	c, err := semver.NewConstraint(r)
	if err != nil {
		return nil, fmt.Errorf("%q is not a semantic version range (e.g. \">=1.10.0 <1.12.0\", \"~1.10\" or \"1.10.x || 1.11.x\"): %w", r, err)
	}
	return c, nil
}

// ParseVersion parses a version as ManagementOperators give them ("v1.10.3"; "1.10.3" too).
func ParseVersion(v string) (*semver.Version, error) {
	parsed, err := semver.StrictNewVersion(strings.TrimPrefix(v, "v"))
	if err != nil {
		return nil, fmt.Errorf("%q is not a semantic version such as v1.10.3: %w", v, err)
	}
	return parsed, nil
}

// Validate checks one requirement as a stack declares it, and returns what is wrong with it for
// a person to fix ("" when nothing is).
func Validate(r csv1.StackRequirement) string {
	switch {
	case r.Operator == "" && r.CAPIContract == "":
		return "set operator (with an optional versions range) or capiContract"
	case r.Operator != "" && r.CAPIContract != "":
		return "set operator or capiContract, not both: write them as two entries"
	case r.CAPIContract != "":
		if !contractRE.MatchString(r.CAPIContract) {
			return fmt.Sprintf("capiContract %q is not a Cluster API contract such as v1beta2", r.CAPIContract)
		}
		if r.Versions != "" {
			return "versions applies to an operator, not to capiContract"
		}
	default:
		if len(r.Operator) > 63 || !operatorNameRE.MatchString(r.Operator) {
			return fmt.Sprintf("operator %q is not a ManagementOperator component name (a DNS label such as cluster-api)", r.Operator)
		}
		if r.Versions != "" {
			if _, err := ParseRange(r.Versions); err != nil {
				return fmt.Sprintf("operator %s: versions %v", r.Operator, err)
			}
		}
	}
	return ""
}

// Delivered is what the management plane runs.
type Delivered struct {
	// Operators maps the component name of each ManagementOperator to its delivered version
	// (status.versions[name=operator]); an operator without a delivered version is absent.
	Operators map[string]string
	// Contracts are the Cluster API contracts the delivered core provider serves (the versions
	// its Cluster CRD serves, e.g. ["v1beta1", "v1beta2"]); empty when no core provider is delivered.
	Contracts []string
}

// Met reports whether the delivered operators meet the requirements of release. When they do
// not, reason names the release and, for every unmet requirement, the operator, the range and
// the delivered version (or the contract and the contracts served).
func Met(release string, reqs []csv1.StackRequirement, d Delivered) (ok bool, reason string) {
	var unmet []string
	for _, r := range reqs {
		if msg := unmetReason(r, d); msg != "" {
			unmet = append(unmet, msg)
		}
	}
	if len(unmet) == 0 {
		return true, ""
	}
	return false, fmt.Sprintf("release %s requires %s", release, strings.Join(unmet, "; and "))
}

func unmetReason(r csv1.StackRequirement, d Delivered) string {
	if r.CAPIContract != "" {
		for _, c := range d.Contracts {
			if c == r.CAPIContract {
				return ""
			}
		}
		if len(d.Contracts) == 0 {
			return fmt.Sprintf("Cluster API contract %s, but no Cluster API core provider is delivered", r.CAPIContract)
		}
		return fmt.Sprintf("Cluster API contract %s, but the delivered core provider serves %s", r.CAPIContract, strings.Join(d.Contracts, ", "))
	}
	want := r.Operator
	if r.Versions != "" {
		want += " " + r.Versions
	}
	delivered, ok := d.Operators[r.Operator]
	if !ok || delivered == "" {
		return fmt.Sprintf("operator %s, which is not delivered (no ManagementOperator %s reports a delivered version)", want, r.Operator)
	}
	if r.Versions == "" {
		return ""
	}
	c, err := ParseRange(r.Versions)
	if err != nil {
		return fmt.Sprintf("operator %s: %v", r.Operator, err)
	}
	v, err := ParseVersion(delivered)
	if err != nil {
		return fmt.Sprintf("operator %s, and the delivered version %v", want, err)
	}
	if c.Check(v) {
		return ""
	}
	return fmt.Sprintf("operator %s, but %s is delivered", want, delivered)
}

// Release is a stack release and its requirements.
type Release struct {
	// Name of the ClusterStackRelease ("<namespace>/<name>" when releases of several namespaces
	// are compared), for messages.
	Name string
	// Requirements are its status.requirements.
	Requirements []csv1.StackRequirement
}

// Excluding returns, for each of the releases whose requirements on the operator exclude
// version, a description naming the release and its range ("release aws-base-1-36-v2 requires
// cluster-api >=1.9.0 <1.11.0"), sorted. A range that does not parse excludes every version.
func Excluding(operator, version string, releases []Release) []string {
	v, verr := ParseVersion(version)
	var out []string
	for _, rel := range releases {
		for _, r := range rel.Requirements {
			if r.Operator != operator || r.Versions == "" {
				continue
			}
			c, err := ParseRange(r.Versions)
			if err != nil || verr != nil || !c.Check(v) {
				out = append(out, fmt.Sprintf("release %s requires %s %s", rel.Name, operator, r.Versions))
			}
		}
	}
	sort.Strings(out)
	return out
}

// Requiring returns the names of the releases that require the component, sorted: those whose
// requirements name it, and, for the core provider, every release (a ClusterClass is a Cluster
// API object, and a capiContract requirement is one on the core provider).
func Requiring(component csv1.OperatorComponent, releases []Release) []string {
	var out []string
	for _, rel := range releases {
		if component.Type == csv1.CoreProvider || requires(rel.Requirements, component.Name) {
			out = append(out, rel.Name)
		}
	}
	sort.Strings(out)
	return out
}

func requires(reqs []csv1.StackRequirement, operator string) bool {
	for _, r := range reqs {
		if r.Operator == operator {
			return true
		}
	}
	return false
}
