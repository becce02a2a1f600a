package requirements

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

const rel = "aws-base-1-36-v2"

func op(name, versions string) csv1.StackRequirement {
	return csv1.StackRequirement{Operator: name, Versions: versions}
}

func contract(c string) csv1.StackRequirement { return csv1.StackRequirement{CAPIContract: c} }

func TestMet(t *testing.T) {
	delivered := Delivered{
		Operators: map[string]string{"cluster-api": "v1.10.3", "capa": "v2.8.0", "odd": "latest"},
		Contracts: []string{"v1beta1", "v1beta2"},
	}
	tests := []struct {
		name       string
		reqs       []csv1.StackRequirement
		delivered  Delivered
		wantOK     bool
		wantReason string
	}{
		{name: "no requirements", wantOK: true},
		{name: "within the range", reqs: []csv1.StackRequirement{op("cluster-api", ">=1.10.0 <1.12.0")}, delivered: delivered, wantOK: true},
		{name: "a range with a leading v", reqs: []csv1.StackRequirement{op("cluster-api", ">=v1.10.0")}, delivered: delivered, wantOK: true},
		{name: "tilde and caret ranges", reqs: []csv1.StackRequirement{op("cluster-api", "~1.10"), op("capa", "^2.5")}, delivered: delivered, wantOK: true},
		{name: "any version of a delivered operator", reqs: []csv1.StackRequirement{op("capa", "")}, delivered: delivered, wantOK: true},
		{name: "a contract the core provider serves", reqs: []csv1.StackRequirement{contract("v1beta2")}, delivered: delivered, wantOK: true},
		{
			name: "below the range: names the release, the operator, the range and the delivered version",
			reqs: []csv1.StackRequirement{op("cluster-api", ">=1.11.0")}, delivered: delivered,
			wantReason: "release aws-base-1-36-v2 requires operator cluster-api >=1.11.0, but v1.10.3 is delivered",
		},
		{
			name: "an operator not delivered",
			reqs: []csv1.StackRequirement{op("capo", ">=0.12.0")}, delivered: delivered,
			wantReason: "release aws-base-1-36-v2 requires operator capo >=0.12.0, which is not delivered (no ManagementOperator capo reports a delivered version)",
		},
		{
			name: "an operator without a range, not delivered",
			reqs: []csv1.StackRequirement{op("capo", "")}, delivered: Delivered{},
			wantReason: "release aws-base-1-36-v2 requires operator capo, which is not delivered (no ManagementOperator capo reports a delivered version)",
		},
		{
			name: "a contract the core provider does not serve",
			reqs: []csv1.StackRequirement{contract("v1beta3")}, delivered: delivered,
			wantReason: "release aws-base-1-36-v2 requires Cluster API contract v1beta3, but the delivered core provider serves v1beta1, v1beta2",
		},
		{
			name: "a contract without a core provider",
			reqs: []csv1.StackRequirement{contract("v1beta2")}, delivered: Delivered{},
			wantReason: "release aws-base-1-36-v2 requires Cluster API contract v1beta2, but no Cluster API core provider is delivered",
		},
		{
			name: "every unmet requirement is named",
			reqs: []csv1.StackRequirement{op("cluster-api", "<1.10.0"), op("capa", ">=2.8.0"), op("capo", "")}, delivered: delivered,
			wantReason: "release aws-base-1-36-v2 requires operator cluster-api <1.10.0, but v1.10.3 is delivered; and operator capo, which is not delivered (no ManagementOperator capo reports a delivered version)",
		},
		{
			name: "a pre-release is outside a range without pre-releases",
			reqs: []csv1.StackRequirement{op("cluster-api", ">=1.10.0")}, delivered: Delivered{Operators: map[string]string{"cluster-api": "v1.11.0-rc.1"}},
			wantReason: "release aws-base-1-36-v2 requires operator cluster-api >=1.10.0, but v1.11.0-rc.1 is delivered",
		},
		{
			name: "a pre-release within a range naming pre-releases",
			reqs: []csv1.StackRequirement{op("cluster-api", ">=1.11.0-0")}, delivered: Delivered{Operators: map[string]string{"cluster-api": "v1.11.0-rc.1"}},
			wantOK: true,
		},
		{
			name: "a delivered version that is not semver",
			reqs: []csv1.StackRequirement{op("odd", ">=1.0.0")}, delivered: delivered,
			wantReason: `release aws-base-1-36-v2 requires operator odd >=1.0.0, and the delivered version "latest" is not a semantic version such as v1.10.3`,
		},
		{
			name: "a range that does not parse (lint refuses it; an old status may hold it)",
			reqs: []csv1.StackRequirement{op("capa", "newest")}, delivered: delivered,
			wantReason: `release aws-base-1-36-v2 requires operator capa: "newest" is not a semantic version range`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, reason := Met(rel, tt.reqs, tt.delivered)
			if ok != tt.wantOK {
				t.Errorf("Met() ok = %v, want %v (reason %q)", ok, tt.wantOK, reason)
			}
			if tt.wantOK && reason != "" {
				t.Errorf("Met() reason = %q, want none", reason)
			}
			if !strings.HasPrefix(reason, tt.wantReason) {
				t.Errorf("Met() reason =\n  %q\nwant it to start with\n  %q", reason, tt.wantReason)
			}
		})
	}
}

func TestExcluding(t *testing.T) {
	releases := []Release{
		{Name: "aws-base-1-36-v1", Requirements: []csv1.StackRequirement{op("cluster-api", ">=1.9.0 <1.11.0"), op("capa", ">=2.0.0")}},
		{Name: "aws-base-1-36-v2", Requirements: []csv1.StackRequirement{op("cluster-api", ">=1.10.0"), contract("v1beta2")}},
		{Name: "docker-base-1-36-v1", Requirements: []csv1.StackRequirement{op("capd", "")}},
	}
	tests := []struct {
		name, operator, version string
		want                    []string
	}{
		{name: "allowed by every release", operator: "cluster-api", version: "v1.10.5"},
		{name: "beyond one release's range", operator: "cluster-api", version: "v1.11.0", want: []string{"release aws-base-1-36-v1 requires cluster-api >=1.9.0 <1.11.0"}},
		{name: "below both ranges", operator: "cluster-api", version: "v1.8.0", want: []string{
			"release aws-base-1-36-v1 requires cluster-api >=1.9.0 <1.11.0",
			"release aws-base-1-36-v2 requires cluster-api >=1.10.0",
		}},
		{name: "an operator no range constrains", operator: "capd", version: "v0.1.0"},
		{name: "an operator no release names", operator: "cert-manager", version: "v1.0.0"},
		{name: "a version that does not parse is excluded by every range", operator: "capa", version: "main", want: []string{"release aws-base-1-36-v1 requires capa >=2.0.0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Excluding(tt.operator, tt.version, releases)); diff != "" {
				t.Errorf("Excluding (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRequiring(t *testing.T) {
	releases := []Release{
		{Name: "b/docker-base-1-36-v1", Requirements: []csv1.StackRequirement{op("capd", "")}},
		{Name: "a/aws-base-1-36-v2", Requirements: []csv1.StackRequirement{op("capa", ">=2.0.0"), contract("v1beta2")}},
		{Name: "a/plain-1-36-v1"},
	}
	tests := []struct {
		name      string
		component csv1.OperatorComponent
		want      []string
	}{
		{name: "an infrastructure provider a release names", component: csv1.OperatorComponent{Type: csv1.InfrastructureProvider, Name: "capa"}, want: []string{"a/aws-base-1-36-v2"}},
		{name: "one no release names", component: csv1.OperatorComponent{Type: csv1.InfrastructureProvider, Name: "capo"}},
		{name: "the core provider: every release", component: csv1.OperatorComponent{Type: csv1.CoreProvider, Name: "cluster-api"}, want: []string{"a/aws-base-1-36-v2", "a/plain-1-36-v1", "b/docker-base-1-36-v1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Requiring(tt.component, releases)); diff != "" {
				t.Errorf("Requiring (-want +got):\n%s", diff)
			}
		})
	}
	if got := Requiring(csv1.OperatorComponent{Type: csv1.CoreProvider, Name: "cluster-api"}, nil); got != nil {
		t.Errorf("Requiring(core provider, no releases) = %v, want none: without stacks nothing needs it", got)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		req  csv1.StackRequirement
		want string
	}{
		{name: "operator with a range", req: op("cluster-api", ">=1.10.0 <1.12.0")},
		{name: "operator without a range", req: op("capo", "")},
		{name: "contract", req: contract("v1beta2")},
		{name: "neither", req: csv1.StackRequirement{}, want: "set operator (with an optional versions range) or capiContract"},
		{name: "both", req: csv1.StackRequirement{Operator: "capa", CAPIContract: "v1beta2"}, want: "set operator or capiContract, not both: write them as two entries"},
		{name: "a contract that is not one", req: contract("beta2"), want: `capiContract "beta2" is not a Cluster API contract such as v1beta2`},
		{name: "versions on a contract", req: csv1.StackRequirement{CAPIContract: "v1beta2", Versions: ">=1.0.0"}, want: "versions applies to an operator, not to capiContract"},
		{name: "an operator name that is not a DNS label", req: op("Cluster_API", ""), want: `operator "Cluster_API" is not a ManagementOperator component name (a DNS label such as cluster-api)`},
		{name: "a range that does not parse", req: op("capa", ">= one"), want: `operator capa: versions ">= one" is not a semantic version range (e.g. ">=1.10.0 <1.12.0", "~1.10" or "1.10.x || 1.11.x")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Validate(tt.req)
			if !strings.HasPrefix(got, tt.want) || (tt.want == "" && got != "") {
				t.Errorf("Validate() = %q, want it to start with %q", got, tt.want)
			}
		})
	}
}
