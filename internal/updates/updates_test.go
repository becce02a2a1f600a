package updates

import (
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

func ptr[T any](v T) *T { return &v }

func names(r Result) (avail, cond []string, risks map[string][]csv1.UpdateRiskType) {
	risks = map[string][]csv1.UpdateRiskType{}
	for _, u := range r.Available {
		avail = append(avail, u.Release)
	}
	for _, u := range r.Conditional {
		cond = append(cond, u.Release)
		for _, k := range u.Risks {
			risks[u.Release] = append(risks[u.Release], k.Type)
		}
	}
	return avail, cond, risks
}

func TestCompute(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	tags := []string{"aws-base-1-36-v1", "aws-base-1-36-v2", "aws-base-1-36-v3", "aws-base-1-36-v4-rc.1",
		"aws-base-1-37-v9", "aws-other-1-36-v9", "not-a-release", "aws-base-1-36-v10"}
	base := func() Facts {
		return Facts{Provider: "aws", Name: "base", KubernetesMinor: "1.36", Tags: tags, Baseline: "v2",
			InUse: map[string]bool{"aws-base-1-36-v2": true}, Now: now}
	}
	for _, tc := range []struct {
		name      string
		mutate    func(*Facts)
		avail     []string
		cond      []string
		risks     map[string][]csv1.UpdateRiskType
		requeueIn time.Duration
	}{
		{name: "newer stable versions, newest first (v10 after v3)", avail: []string{"aws-base-1-36-v10", "aws-base-1-36-v3"}},
		{name: "a channel adds its versions", mutate: func(f *Facts) { f.Channel = "rc" },
			avail: []string{"aws-base-1-36-v10", "aws-base-1-36-v4-rc.1", "aws-base-1-36-v3"}},
		{name: "validation failed and requirements unmet", mutate: func(f *Facts) {
			f.Releases = map[string]Release{
				"aws-base-1-36-v10": {Validated: ptr(false), ValidationMessage: "chart broken"},
				"aws-base-1-36-v3":  {Validated: ptr(true), RequirementsMet: ptr(false), RequirementsMessage: "needs capi v1beta3"},
			}
		}, cond: []string{"aws-base-1-36-v10", "aws-base-1-36-v3"}, risks: map[string][]csv1.UpdateRiskType{
			"aws-base-1-36-v10": {csv1.RiskValidationFailed}, "aws-base-1-36-v3": {csv1.RiskRequirementsNotMet}}},
		{name: "too young: held until the minimum age", mutate: func(f *Facts) {
			f.MinReleaseAge = time.Hour
			f.Discovered = map[string]metav1.Time{"aws-base-1-36-v3": metav1.NewTime(now.Add(-2 * time.Hour)), "aws-base-1-36-v10": metav1.NewTime(now.Add(-20 * time.Minute))}
		}, avail: []string{"aws-base-1-36-v3"}, cond: []string{"aws-base-1-36-v10"},
			risks: map[string][]csv1.UpdateRiskType{"aws-base-1-36-v10": {csv1.RiskMinimumAgeNotReached}}, requeueIn: 40 * time.Minute},
		{name: "declined", mutate: func(f *Facts) { f.Declined = map[string]string{"aws-base-1-36-v10": "https://forge/pr/1"} },
			avail: []string{"aws-base-1-36-v3"}, cond: []string{"aws-base-1-36-v10"},
			risks: map[string][]csv1.UpdateRiskType{"aws-base-1-36-v10": {csv1.RiskDeclined}}},
		{name: "lagging Clusters hold back a stack nobody uses yet", mutate: func(f *Facts) {
			f.InUse, f.Baseline, f.Lagging = nil, "v3", []string{"old-1"}
		}, cond: []string{"aws-base-1-36-v10"}, risks: map[string][]csv1.UpdateRiskType{"aws-base-1-36-v10": {csv1.RiskSkipsKubernetesMinor}}},
		{name: "lagging Clusters do not hold back the stack's own", mutate: func(f *Facts) { f.Lagging = []string{"old-1"} },
			avail: []string{"aws-base-1-36-v10", "aws-base-1-36-v3"}},
		{name: "nothing newer", mutate: func(f *Facts) { f.Baseline = "v10" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := base()
			if tc.mutate != nil {
				tc.mutate(&f)
			}
			res := Compute(f)
			avail, cond, risks := names(res)
			if !reflect.DeepEqual(avail, tc.avail) || !reflect.DeepEqual(cond, tc.cond) {
				t.Fatalf("available %v conditional %v, want %v %v", avail, cond, tc.avail, tc.cond)
			}
			if tc.risks == nil {
				tc.risks = map[string][]csv1.UpdateRiskType{}
			}
			if !reflect.DeepEqual(risks, tc.risks) {
				t.Errorf("risks %v, want %v", risks, tc.risks)
			}
			if res.RequeueAfter != tc.requeueIn {
				t.Errorf("RequeueAfter %s, want %s", res.RequeueAfter, tc.requeueIn)
			}
			for _, u := range res.Conditional {
				for _, r := range u.Risks {
					if !strings.Contains(r.Message, u.Release) && r.Type != csv1.RiskSkipsKubernetesMinor {
						t.Errorf("risk message %q does not name %s", r.Message, u.Release)
					}
				}
			}
			// Fed back through the status, the result is the same (no churn).
			f.Now = f.Now.Add(1500 * time.Millisecond)
			f.Discovered = map[string]metav1.Time{}
			for _, u := range append(res.Available, conditionalUpdates(res)...) {
				f.Discovered[u.Release] = *u.DiscoveredAt
			}
			again := Compute(f)
			if !reflect.DeepEqual(again.Available, res.Available) {
				t.Errorf("recomputed from the status: %v, was %v", again.Available, res.Available)
			}
		})
	}
	if got := Target(Compute(base())); got != "aws-base-1-36-v10" {
		t.Errorf("Target = %s", got)
	}
}

func conditionalUpdates(r Result) []csv1.StackUpdate {
	var out []csv1.StackUpdate
	for _, c := range r.Conditional {
		out = append(out, c.StackUpdate)
	}
	return out
}
