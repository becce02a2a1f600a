package dashboard

import (
	"fmt"
	"math"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/plugin"
)

func TestBucketOf(t *testing.T) {
	for state, want := range map[string]string{
		plugin.StateDegraded: BucketDegraded, plugin.StateFailed: BucketDegraded,
		plugin.StateProgressing: BucketProgressing,
		plugin.StateReady:       BucketAvailable, plugin.StateAvailable: BucketAvailable,
		plugin.StatePaused: BucketOther, plugin.StateUnknown: BucketOther, plugin.StateNotFound: BucketOther,
	} {
		if got := BucketOf(state); got != want {
			t.Errorf("BucketOf(%s) = %s, want %s", state, got, want)
		}
	}
}

func TestCountsSegments(t *testing.T) {
	tests := []struct {
		name   string
		counts Counts
		want   []Segment
	}{
		{"no Clusters: no bar", Counts{}, nil},
		{"failures first", Counts{Total: 4, Degraded: 1, Progressing: 1, Other: 1, Available: 1}, []Segment{
			{BucketDegraded, 1, 0, 25}, {BucketProgressing, 1, 25, 25}, {BucketOther, 1, 50, 25}, {BucketAvailable, 1, 75, 25}}},
		{"one Degraded among 10,000 is 1% wide, the widest gives it back", Counts{Total: 10000, Degraded: 1, Available: 9999}, []Segment{
			{BucketDegraded, 1, 0, 1}, {BucketAvailable, 9999, 1, 99}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.counts.Segments()
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 0.01 })); diff != "" {
				t.Errorf("Segments (-want +got):\n%s", diff)
			}
			sum := 0.0
			for _, s := range got {
				sum += s.Width
			}
			if len(got) > 0 && math.Abs(sum-100) > 0.01 {
				t.Errorf("segments add up to %.2f%%, not 100%%", sum)
			}
		})
	}
	if got := (Counts{Total: 3, Degraded: 1, Available: 2}).Summary(); got != "1 Degraded, 2 Available" {
		t.Errorf("Summary = %q", got)
	}
}

func TestBuildFleet(t *testing.T) {
	f := BuildFleet(fixture(), ParseQuery(nil))
	if want := (Counts{Total: 4, Degraded: 1, Progressing: 1, Other: 1, Available: 1}); f.Totals != want {
		t.Errorf("Totals = %+v, want %+v (the Cluster of no stack is not counted; the one without ClusterAddon is Other)", f.Totals, want)
	}
	if len(f.Stacks) != 1 {
		t.Fatalf("Stacks = %+v", f.Stacks)
	}
	s := f.Stacks[0]
	if s.Halted != "prod" || s.State != plugin.StateDegraded {
		t.Errorf("stack Halted = %q, State = %s; want the halted wave prod, Degraded", s.Halted, s.State)
	}
	got := map[string]Counts{}
	for _, r := range s.Releases {
		got[r.Name] = r.Counts
	}
	want := map[string]Counts{
		relV1: {Total: 1, Available: 1},
		relV2: {Total: 3, Degraded: 1, Progressing: 1, Other: 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("per-release counts (-want +got):\n%s", diff)
	}
	var names []string
	for _, r := range f.Clusters.Rows {
		names = append(names, r.Name+"="+r.State)
	}
	if diff := cmp.Diff([]string{"broken=Degraded", "upgrading=Progressing", "fresh=NotFound"}, names); diff != "" {
		t.Errorf("failing Clusters, failures first (-want +got):\n%s", diff)
	}
	if len(f.Operators) != 1 || f.Operators[0].Delivered != "v1.11.2" {
		t.Errorf("Operators = %+v", f.Operators)
	}
}

func TestBuildFleetOrdersStacksFailuresFirst(t *testing.T) {
	objs := fixture()
	calm := stackObj()
	calm.Name, calm.Status.Rollout, calm.Status.Conditions = "aaa-calm", nil, ready()
	objs.Stacks = append([]csv1.ClusterStack{calm}, objs.Stacks...)
	f := BuildFleet(objs, ParseQuery(nil))
	if f.Stacks[0].Name != stackName || f.Stacks[1].Name != "aaa-calm" {
		t.Errorf("stacks = %s, %s; want the one with Degraded Clusters first", f.Stacks[0].Name, f.Stacks[1].Name)
	}
}

// manyRows are n Clusters: every tenth Degraded (since i minutes before t0), the rest Available.
func manyRows(n int) []ClusterRow {
	rows := make([]ClusterRow, n)
	for i := range rows {
		rows[i] = ClusterRow{Namespace: ns, Name: fmt.Sprintf("c-%05d", i), Stack: stackName, Release: relV1, State: plugin.StateReady, Bucket: BucketAvailable}
		if i%10 == 0 {
			rows[i].State, rows[i].Bucket, rows[i].Message = plugin.StateDegraded, BucketDegraded, "component cni failed"
			rows[i].Since = t0.Add(-time.Duration(i) * time.Minute)
		}
	}
	return rows
}

func TestListClusters(t *testing.T) {
	rows := manyRows(10000)
	tests := []struct {
		name                string
		query               url.Values
		matching, page, len int
		first               string
	}{
		{"default: the failing ones, the longest Degraded first", nil, 1000, 1, PageSize, "c-09990"},
		{"a later page", url.Values{"page": {"3"}}, 1000, 3, PageSize, "c-08990"},
		{"a page past the end is the last", url.Values{"page": {"99"}}, 1000, 20, PageSize, "c-00490"},
		{"all, failures first", url.Values{"state": {"all"}}, 10000, 1, PageSize, "c-09990"},
		{"Available only", url.Values{"state": {"Available"}}, 9000, 1, PageSize, "c-00001"},
		{"search by name", url.Values{"q": {"c-0001"}, "state": {"all"}}, 10, 1, 10, "c-00010"},
		{"search is case-insensitive and reads messages", url.Values{"q": {"CNI"}}, 1000, 1, PageSize, "c-09990"},
		{"another stack", url.Values{"stack": {"team-b/x"}}, 0, 1, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := listClusters(rows, ParseQuery(tt.query))
			if l.Matching != tt.matching || l.Page != tt.page || len(l.Rows) != tt.len {
				t.Fatalf("Matching %d, Page %d, %d rows; want %d, %d, %d", l.Matching, l.Page, len(l.Rows), tt.matching, tt.page, tt.len)
			}
			if tt.first != "" && l.Rows[0].Name != tt.first {
				t.Errorf("first row %s, want %s", l.Rows[0].Name, tt.first)
			}
		})
	}
}

func TestParseQuery(t *testing.T) {
	tests := []struct {
		in   url.Values
		want Query
		back string
	}{
		{nil, Query{State: StateFailing, Page: 1}, ""},
		{url.Values{"state": {"Degraded"}, "page": {"2"}, "q": {"  prod  "}}, Query{Search: "prod", State: BucketDegraded, Page: 2}, "page=2&q=prod&state=Degraded"},
		{url.Values{"state": {"<script>"}, "page": {"-4"}}, Query{State: StateFailing, Page: 1}, ""},
		{url.Values{"q": {strings.Repeat("x", 1000)}}, Query{Search: strings.Repeat("x", maxSearch), State: StateFailing, Page: 1}, "q=" + strings.Repeat("x", maxSearch)},
	}
	for _, tt := range tests {
		got := ParseQuery(tt.in)
		if got != tt.want {
			t.Errorf("ParseQuery(%v) = %+v, want %+v", tt.in, got, tt.want)
		}
		if back := got.Values(got.Page).Encode(); back != tt.back {
			t.Errorf("Values = %q, want %q", back, tt.back)
		}
	}
}

func TestBuildStack(t *testing.T) {
	if _, ok := BuildStack(fixture(), ns, "no-such-stack", ParseQuery(nil)); ok {
		t.Error("a stack that does not exist was found")
	}
	if _, ok := BuildStack(fixture(), "team-b", stackName, ParseQuery(nil)); ok {
		t.Error("a stack of another namespace was found")
	}
	v, ok := BuildStack(fixture(), ns, stackName, ParseQuery(nil))
	if !ok {
		t.Fatal("stack not found")
	}
	var problems []string
	for _, p := range v.Problems {
		problems = append(problems, p.Bucket+": "+p.Text)
	}
	wantProblems := []string{
		"Degraded: Rollout of aws-base-1-36-v2 halted in wave prod: cluster team-a/broken is Degraded: component cni failed",
		"Degraded: Release aws-base-1-36-v9 does not exist (TagNotFound): tag aws-base-1-36-v9 is not published",
		"Degraded: 1 of 4 Clusters are Degraded",
	}
	if diff := cmp.Diff(wantProblems, problems); diff != "" {
		t.Errorf("problems, the halted wave first (-want +got):\n%s", diff)
	}
	if v.Rollout == nil || len(v.Rollout.Waves) != 3 {
		t.Fatalf("Rollout = %+v", v.Rollout)
	}
	canary, prod := v.Rollout.Waves[0], v.Rollout.Waves[1]
	if canary.SoakTime != time.Hour || !canary.SoakEnds.Equal(t0.Add(time.Hour)) {
		t.Errorf("canary soaks %s until %s; want 1h from %s", canary.SoakTime, canary.SoakEnds, t0)
	}
	if prod.Phase != "Halted" || prod.Message != "cluster team-a/broken is Degraded: component cni failed" || prod.PullRequest.Number != 8 || prod.Total != 2 {
		t.Errorf("prod wave = %+v", prod)
	}
	if len(v.Releases) != 2 || v.Releases[1].Counts != (Counts{Total: 3, Degraded: 1, Progressing: 1, Other: 1}) ||
		v.Releases[0].Requirements[0] != "cluster-api >=1.10.0 <1.12.0" {
		t.Errorf("Releases = %+v", v.Releases)
	}
	if len(v.Updates.AvailableUpdates) != 1 || len(v.Updates.ConditionalUpdates) != 1 || v.Updates.ConditionalUpdates[0].Risks[0].Type != csv1.RiskRequirementsNotMet {
		t.Errorf("Updates = %+v", v.Updates)
	}
	if v.Clusters.Matching != 3 || v.Clusters.Rows[0].Name != "broken" {
		t.Errorf("the stack's failing Clusters = %+v", v.Clusters)
	}

	objs := fixture()
	objs.Releases[0].Status.Conditions = append(ready(), cond(csv1.RequirementsMetCondition, "False", "RequirementsNotMet", "cluster-api v1.9.0 is delivered"))
	v, _ = BuildStack(objs, ns, stackName, ParseQuery(nil))
	if v.Releases[0].RequirementsMessage != "cluster-api v1.9.0 is delivered" {
		t.Errorf("RequirementsMessage = %q", v.Releases[0].RequirementsMessage)
	}
}

func TestBuildCluster(t *testing.T) {
	values := &plugin.ClusterValues{Cluster: ns + "/broken"}
	v, ok := BuildCluster(fixture(), ns, "broken", values, "")
	if !ok {
		t.Fatal("Cluster not found")
	}
	if v.Verdict.Blocker != plugin.BlockerComponentFailing || v.Verdict.FluxObject == nil || v.Verdict.FluxObject.Ref() != "HelmRelease/broken-cni" {
		t.Errorf("Verdict = %+v, want the failing HelmRelease/broken-cni (plugin.Why)", v.Verdict)
	}
	if v.State != plugin.StateDegraded || v.DesiredRelease != relV2 || v.KubernetesVersion != "v1.36.1" || v.Values != values {
		t.Errorf("view = %+v", v)
	}
	var comps []string
	for _, c := range v.Components {
		comps = append(comps, fmt.Sprintf("%d %s %s %s", c.Order, c.Name, c.Bucket, c.Flux.Ref()))
	}
	if diff := cmp.Diff([]string{"2 cni Degraded HelmRelease/broken-cni", "1 cluster-info Available Kustomization/broken-cluster-info"}, comps); diff != "" {
		t.Errorf("components, failing first (-want +got):\n%s", diff)
	}
	cni := v.Components[0]
	if cni.Said != hostile || !cni.UnhealthySince.Equal(t0.Add(-5*time.Minute)) || cni.LastFailureReason != "InstallFailed" {
		t.Errorf("cni = %+v: want what Flux said and since when it is unhealthy", cni)
	}

	fresh, ok := BuildCluster(fixture(), ns, "fresh", nil, "no values")
	if !ok || fresh.HasAddon || fresh.State != plugin.StateNotFound || fresh.Verdict.Blocker != plugin.BlockerClusterAddonNotFound {
		t.Errorf("a Cluster without ClusterAddon: %+v", fresh)
	}
	if _, ok := BuildCluster(fixture(), ns, "ghost", nil, ""); ok {
		t.Error("a Cluster that does not exist was found")
	}
}

func TestBuildOperator(t *testing.T) {
	if _, ok := BuildOperator(fixture(), "cert-manager"); ok {
		t.Error("an operator that does not exist was found")
	}
	v, ok := BuildOperator(fixture(), "cluster-api")
	if !ok {
		t.Fatal("operator not found")
	}
	if v.Version != "v1.12.0" || v.Delivered != "v1.11.2" || v.Upgradeable == nil || v.Upgradeable.Status != metav1.ConditionFalse {
		t.Errorf("versions = %+v", v.OperatorSummary)
	}
	if diff := cmp.Diff([]string{"release team-a/aws-base-1-36-v1 requires cluster-api >=1.10.0 <1.12.0"}, v.Holds); diff != "" {
		t.Errorf("Holds (-want +got):\n%s", diff)
	}
	want := []RequirementRow{
		{Release: ns + "/" + relV1, Range: ">=1.10.0 <1.12.0", Clusters: 1, AllowsVersion: false, AllowsDelivered: true, Holds: true},
		{Release: ns + "/" + relV2, Range: ">=1.11.0", Clusters: 2, AllowsVersion: true, AllowsDelivered: true},
	}
	if diff := cmp.Diff(want, v.Requirements); diff != "" {
		t.Errorf("Requirements, those holding it first (-want +got):\n%s", diff)
	}
}

func TestStripControl(t *testing.T) {
	for in, want := range map[string]string{
		"plain <b> text\twith tab\nand line": "plain <b> text\twith tab\nand line",
		"\x1b[31mred\x1b[0m":                 "red",
		"\x1b]0;title\x07after":              "after",
		"\x1b]8;;http://x\x1b\\link":         "link",
		"bell\x07 nul\x00 del\x7f c1\u0085":  "bell nul del c1",
		"\u202Egnp.exe":                      "gnp.exe",
		"cr\r\nlf":                           "cr\nlf",
	} {
		if got := StripControl(in); got != want {
			t.Errorf("StripControl(%q) = %q, want %q", in, got, want)
		}
	}
}
