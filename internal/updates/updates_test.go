package updates

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

func ptr[T any](v T) *T { return &v }

// summary is a Result in short: the release names and, per conditional release, its risks.
type summary struct {
	avail, cond []string
	risks       map[string][]csv1.UpdateRisk
}

func summarize(r Result) summary {
	s := summary{risks: map[string][]csv1.UpdateRisk{}}
	for _, u := range r.Available {
		s.avail = append(s.avail, u.Release)
	}
	for _, u := range r.Conditional {
		s.cond = append(s.cond, u.Release)
		s.risks[u.Release] = u.Risks
	}
	return s
}

func TestCompute(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	tags := []string{"aws-base-1-36-v1", "aws-base-1-36-v2", "aws-base-1-36-v3", "aws-base-1-36-v4-rc.1", "aws-base-1-36-v4-beta-0",
		"aws-base-1-37-v9", "aws-other-1-36-v9", "azure-base-1-36-v9", "not-a-release", "aws-base-1-36-v10", "aws-base-1-36-v3"}
	base := func() Facts {
		return Facts{Provider: "aws", Name: "base", KubernetesMinor: "1.36", Tags: tags, Baseline: "v2",
			InUse: map[string]bool{"aws-base-1-36-v2": true}, Now: now}
	}
	for _, tc := range []struct {
		name      string
		mutate    func(*Facts)
		avail     []string
		cond      []string
		risks     map[string][]csv1.UpdateRisk
		requeueIn time.Duration
	}{
		{name: "newer stable versions, newest first (v10 after v3), each once",
			avail: []string{"aws-base-1-36-v10", "aws-base-1-36-v3"}},
		{name: "a channel adds its versions, not other channels'", mutate: func(f *Facts) { f.Channel = "rc" },
			avail: []string{"aws-base-1-36-v10", "aws-base-1-36-v4-rc.1", "aws-base-1-36-v3"}},
		{name: "channel versions in the release-tag form", mutate: func(f *Facts) { f.Channel = "beta" },
			avail: []string{"aws-base-1-36-v10", "aws-base-1-36-v4-beta-0", "aws-base-1-36-v3"}},
		{name: "kubernetesMinor written with a v", mutate: func(f *Facts) { f.KubernetesMinor = "v1.36" },
			avail: []string{"aws-base-1-36-v10", "aws-base-1-36-v3"}},
		{name: "no baseline: every version is newer", mutate: func(f *Facts) { f.Baseline, f.InUse = "", nil },
			avail: []string{"aws-base-1-36-v10", "aws-base-1-36-v3", "aws-base-1-36-v2", "aws-base-1-36-v1"}},
		{name: "releases in use are never listed", mutate: func(f *Facts) { f.Baseline, f.InUse = "", map[string]bool{"aws-base-1-36-v3": true} },
			avail: []string{"aws-base-1-36-v10", "aws-base-1-36-v2", "aws-base-1-36-v1"}},
		{name: "nothing newer", mutate: func(f *Facts) { f.Baseline = "v10" }},
		{name: "no tags", mutate: func(f *Facts) { f.Tags = nil }},
		{name: "validation and requirements unknown: no risk", mutate: func(f *Facts) {
			f.Releases = map[string]Release{"aws-base-1-36-v10": {Name: "aws-base-1-36-v10"}}
		}, avail: []string{"aws-base-1-36-v10", "aws-base-1-36-v3"}},
		{name: "validation failed and requirements unmet", mutate: func(f *Facts) {
			f.Releases = map[string]Release{
				"aws-base-1-36-v10": {Validated: ptr(false), ValidationMessage: "chart broken"},
				"aws-base-1-36-v3":  {Validated: ptr(true), RequirementsMet: ptr(false), RequirementsMessage: "needs capi v1beta3"},
			}
		}, cond: []string{"aws-base-1-36-v10", "aws-base-1-36-v3"}, risks: map[string][]csv1.UpdateRisk{
			"aws-base-1-36-v10": {{Type: csv1.RiskValidationFailed, Message: "release aws-base-1-36-v10 failed validation: chart broken"}},
			"aws-base-1-36-v3": {{Type: csv1.RiskRequirementsNotMet,
				Message: "release aws-base-1-36-v3 requires what the management cluster does not have: needs capi v1beta3"}}}},
		{name: "a node image not ready: held back, saying which", mutate: func(f *Facts) {
			f.Releases = map[string]Release{
				"aws-base-1-36-v10": {Validated: ptr(true), ProviderObjectsReady: ptr(false), ProviderObjectsMessage: "release aws-base-1-36-v10: Image/ubuntu, created by its cluster-class, is not ready yet: uploading"},
				"aws-base-1-36-v3":  {Validated: ptr(true), ProviderObjectsReady: ptr(true)},
			}
		}, avail: []string{"aws-base-1-36-v3"}, cond: []string{"aws-base-1-36-v10"}, risks: map[string][]csv1.UpdateRisk{
			"aws-base-1-36-v10": {{Type: csv1.RiskProviderObjectsNotReady,
				Message: "release aws-base-1-36-v10: Image/ubuntu, created by its cluster-class, is not ready yet: uploading"}}}},
		{name: "too young: held until the minimum age, requeued then", mutate: func(f *Facts) {
			f.MinReleaseAge = time.Hour
			f.Discovered = map[string]metav1.Time{"aws-base-1-36-v3": metav1.NewTime(now.Add(-2 * time.Hour)), "aws-base-1-36-v10": metav1.NewTime(now.Add(-20 * time.Minute))}
		}, avail: []string{"aws-base-1-36-v3"}, cond: []string{"aws-base-1-36-v10"},
			risks: map[string][]csv1.UpdateRisk{"aws-base-1-36-v10": {{Type: csv1.RiskMinimumAgeNotReached,
				Message: "tag aws-base-1-36-v10 first seen 2026-11-23T11:40:00Z; spec.updates.minReleaseAge 1h holds it back until 2026-11-23T12:40:00Z"}}},
			requeueIn: 40 * time.Minute},
		{name: "new tags are first seen now; the earliest to come of age decides the requeue", mutate: func(f *Facts) {
			f.MinReleaseAge = 90 * time.Minute
			f.Discovered = map[string]metav1.Time{"aws-base-1-36-v3": metav1.NewTime(now.Add(-time.Hour))}
		}, cond: []string{"aws-base-1-36-v10", "aws-base-1-36-v3"},
			risks: map[string][]csv1.UpdateRisk{
				"aws-base-1-36-v10": {{Type: csv1.RiskMinimumAgeNotReached,
					Message: "tag aws-base-1-36-v10 first seen 2026-11-23T12:00:00Z; spec.updates.minReleaseAge 1h30m holds it back until 2026-11-23T13:30:00Z"}},
				"aws-base-1-36-v3": {{Type: csv1.RiskMinimumAgeNotReached,
					Message: "tag aws-base-1-36-v3 first seen 2026-11-23T11:00:00Z; spec.updates.minReleaseAge 1h30m holds it back until 2026-11-23T12:30:00Z"}}},
			requeueIn: 30 * time.Minute},
		{name: "exactly of age: available", mutate: func(f *Facts) {
			f.MinReleaseAge = time.Hour
			f.Discovered = map[string]metav1.Time{"aws-base-1-36-v3": metav1.NewTime(now.Add(-time.Hour)), "aws-base-1-36-v10": metav1.NewTime(now.Add(-time.Hour))}
		}, avail: []string{"aws-base-1-36-v10", "aws-base-1-36-v3"}},
		{name: "declined", mutate: func(f *Facts) { f.Declined = map[string]string{"aws-base-1-36-v10": "https://forge/pr/1"} },
			avail: []string{"aws-base-1-36-v3"}, cond: []string{"aws-base-1-36-v10"},
			risks: map[string][]csv1.UpdateRisk{"aws-base-1-36-v10": {{Type: csv1.RiskDeclined,
				Message: "pull request https://forge/pr/1 proposing aws-base-1-36-v10 was closed without merging: the version is skipped and not proposed again " +
					"(a newer release is proposed once published); to take it anyway, pin v10 in spec.versions and set the Clusters' classRef to aws-base-1-36-v10 in the fleet repository"}}}},
		{name: "lagging Clusters hold back a stack nobody uses yet, up to three named", mutate: func(f *Facts) {
			f.InUse, f.Baseline, f.Lagging = nil, "v3", []string{"old-4", "old-2", "old-1", "old-3"}
		}, cond: []string{"aws-base-1-36-v10"}, risks: map[string][]csv1.UpdateRisk{"aws-base-1-36-v10": {{Type: csv1.RiskSkipsKubernetesMinor,
			Message: "4 Cluster(s) (old-1, old-2, old-3 and 1 more) use a release of aws-base for a Kubernetes minor more than one below 1.36: " +
				"they must first move to a release for each minor in between"}}}},
		{name: "lagging Clusters do not hold back the stack's own Clusters", mutate: func(f *Facts) { f.Lagging = []string{"old-1"} },
			avail: []string{"aws-base-1-36-v10", "aws-base-1-36-v3"}},
		{name: "every risk at once, in a fixed order", mutate: func(f *Facts) {
			f.InUse, f.Baseline, f.Lagging, f.MinReleaseAge = nil, "v3", []string{"old-1"}, time.Minute
			f.Releases = map[string]Release{"aws-base-1-36-v10": {Validated: ptr(false), ValidationMessage: "bad", RequirementsMet: ptr(false)}}
			f.Declined = map[string]string{"aws-base-1-36-v10": "u"}
		}, cond: []string{"aws-base-1-36-v10"}, risks: map[string][]csv1.UpdateRisk{"aws-base-1-36-v10": {
			{Type: csv1.RiskValidationFailed, Message: "release aws-base-1-36-v10 failed validation: bad"},
			{Type: csv1.RiskRequirementsNotMet, Message: "release aws-base-1-36-v10 requires what the management cluster does not have: (no message)"},
			{Type: csv1.RiskMinimumAgeNotReached, Message: "tag aws-base-1-36-v10 first seen 2026-11-23T12:00:00Z; spec.updates.minReleaseAge 1m holds it back until 2026-11-23T12:01:00Z"},
			{Type: csv1.RiskDeclined, Message: "pull request u proposing aws-base-1-36-v10 was closed without merging: the version is skipped and not proposed again " +
				"(a newer release is proposed once published); to take it anyway, pin v10 in spec.versions and set the Clusters' classRef to aws-base-1-36-v10 in the fleet repository"},
			{Type: csv1.RiskSkipsKubernetesMinor, Message: "1 Cluster(s) (old-1) use a release of aws-base for a Kubernetes minor more than one below 1.36: " +
				"they must first move to a release for each minor in between"},
		}}, requeueIn: time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := base()
			if tc.mutate != nil {
				tc.mutate(&f)
			}
			res := Compute(f)
			got := summarize(res)
			if !reflect.DeepEqual(got.avail, tc.avail) || !reflect.DeepEqual(got.cond, tc.cond) {
				t.Fatalf("available %v conditional %v, want %v %v", got.avail, got.cond, tc.avail, tc.cond)
			}
			if tc.risks == nil {
				tc.risks = map[string][]csv1.UpdateRisk{}
			}
			if !reflect.DeepEqual(got.risks, tc.risks) {
				t.Errorf("risks\n%v\nwant\n%v", got.risks, tc.risks)
			}
			if res.RequeueAfter != tc.requeueIn {
				t.Errorf("RequeueAfter %s, want %s", res.RequeueAfter, tc.requeueIn)
			}
			// Discovered records exactly the listed releases, at the time shown in the lists.
			listed := append(append([]csv1.StackUpdate(nil), res.Available...), stackUpdates(res.Conditional)...)
			if len(res.Discovered) != len(listed) {
				t.Errorf("Discovered %v for %d listed releases", res.Discovered, len(listed))
			}
			for _, u := range listed {
				if d, ok := res.Discovered[u.Release]; !ok || u.DiscoveredAt == nil || !d.Equal(u.DiscoveredAt) {
					t.Errorf("%s: discoveredAt %v, Discovered %v", u.Release, u.DiscoveredAt, d)
				}
				if want, ok := f.Discovered[u.Release]; ok && !want.Equal(u.DiscoveredAt) {
					t.Errorf("%s: recorded discovery %v replaced by %v", u.Release, want, u.DiscoveredAt)
				}
			}
		})
	}
	if got := Target(Compute(base())); got != "aws-base-1-36-v10" {
		t.Errorf("Target = %q, want aws-base-1-36-v10", got)
	}
	f := base()
	f.Baseline = "v10"
	if got := Target(Compute(f)); got != "" {
		t.Errorf("Target without updates = %q, want empty", got)
	}
}

// Computing again from the written status (metav1.Time keeps seconds) gives the same result:
// no churn, at the same time or a moment later, and discovery times recorded earlier are kept.
func TestComputeFromItsOwnStatusIsStable(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 987654321, time.UTC)
	f := Facts{Provider: "aws", Name: "base", KubernetesMinor: "1.36", Now: now, MinReleaseAge: time.Minute,
		Tags:       []string{"aws-base-1-36-v1", "aws-base-1-36-v2", "aws-base-1-36-v3"},
		Discovered: map[string]metav1.Time{"aws-base-1-36-v1": metav1.NewTime(now.Add(-time.Hour)), "aws-base-1-36-v9": metav1.NewTime(now.Add(-time.Hour))},
		Releases:   map[string]Release{"aws-base-1-36-v2": {RequirementsMet: ptr(false), RequirementsMessage: "needs flux 2.9"}},
	}
	first := Compute(f)
	if _, ok := first.Discovered["aws-base-1-36-v9"]; ok {
		t.Errorf("a release no longer listed is still recorded: %v", first.Discovered)
	}
	if d := first.Discovered["aws-base-1-36-v3"]; !d.Equal(&metav1.Time{Time: now.Truncate(time.Second)}) {
		t.Errorf("new tag discovered at %v, want %v truncated to seconds", d, now)
	}
	for _, later := range []time.Duration{0, 10 * time.Millisecond, 1500 * time.Millisecond} {
		g := f
		g.Now = now.Add(later)
		g.Discovered = writtenAndRead(t, first)
		again := Compute(g)
		if !equality.Semantic.DeepEqual(again.Available, first.Available) || !equality.Semantic.DeepEqual(again.Conditional, first.Conditional) ||
			!equality.Semantic.DeepEqual(again.Discovered, first.Discovered) {
			t.Errorf("+%s: recomputed from the status\n%+v\nwas\n%+v", later, again, first)
		}
		if want := first.RequeueAfter - later; again.RequeueAfter != want {
			t.Errorf("+%s: RequeueAfter %s, want %s", later, again.RequeueAfter, want)
		}
	}
}

// writtenAndRead is the discovery times as the controller reads them back from the status it
// wrote: serialised as JSON and parsed again.
func writtenAndRead(t *testing.T, r Result) map[string]metav1.Time {
	t.Helper()
	var status struct {
		Available   []csv1.StackUpdate       `json:"availableUpdates"`
		Conditional []csv1.ConditionalUpdate `json:"conditionalUpdates"`
	}
	status.Available, status.Conditional = r.Available, r.Conditional
	data, err := json.Marshal(status)
	if err != nil {
		t.Fatal(err)
	}
	status.Available, status.Conditional = nil, nil
	if err := json.Unmarshal(data, &status); err != nil {
		t.Fatal(err)
	}
	out := map[string]metav1.Time{}
	for _, u := range append(status.Available, stackUpdates(status.Conditional)...) {
		out[u.Release] = *u.DiscoveredAt
	}
	return out
}

func stackUpdates(cs []csv1.ConditionalUpdate) []csv1.StackUpdate {
	var out []csv1.StackUpdate
	for _, c := range cs {
		out = append(out, c.StackUpdate)
	}
	return out
}

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Hour: "1h", 90 * time.Minute: "1h30m", time.Minute: "1m", 90 * time.Second: "1m30s",
		15 * time.Second: "15s", 40 * time.Second: "40s", time.Hour + time.Second: "1h0m1s", 1500 * time.Millisecond: "1.5s",
	} {
		if got := ShortDuration(d); got != want {
			t.Errorf("ShortDuration(%s) = %q, want %q", d, got, want)
		}
	}
}
