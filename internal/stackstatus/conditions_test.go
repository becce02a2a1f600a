package stackstatus

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// One table per function of Compute (TestCompute tests them together).

func TestObserved(t *testing.T) {
	type got struct {
		Degraded, Progressing []string
		DegradedReason        string
		AllAvailable          bool
		Pending, Delivered    []string
	}
	keys := func(m map[string]bool) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		return out
	}
	tests := []struct {
		name     string
		releases []csv1.ClusterStackRelease
		addons   []csv1.ClusterAddon
		resolved *metav1.Condition
		want     got
	}{
		{
			name:     "a release without conditions is being reconciled",
			releases: []csv1.ClusterStackRelease{ssRelease(ssRelV1, "v1")},
			want:     got{Progressing: []string{"release " + ssRelV1 + " is being reconciled"}, AllAvailable: true},
		},
		{
			name:     "an up-to-date Available cluster: delivered, nothing pending",
			releases: []csv1.ClusterStackRelease{ssAvailableRelease(ssRelV1, "v1")},
			addons:   []csv1.ClusterAddon{ssUpToDateAddon("c1", ssRelV1)},
			want:     got{AllAvailable: true, Delivered: []string{ssRelV1}},
		},
		{
			name:   "an upgrading cluster: the new release pending, the old one delivered, progressing",
			addons: []csv1.ClusterAddon{ssUpgradingAddon("c1", ssRelV2, ssRelV1)},
			want: got{Progressing: []string{"cluster tenant/c1: upgrading from " + ssRelV1 + " to " + ssRelV2}, AllAvailable: true,
				Pending: []string{ssRelV2}, Delivered: []string{ssRelV1}},
		},
		{
			name:   "a degraded cluster: its reason, not Available, pending",
			addons: []csv1.ClusterAddon{ssDegradedAddon("c1", ssRelV1, "cluster tenant/c1: broken"), ssDegradedAddon("c2", ssRelV1, "cluster tenant/c2: broken")},
			want: got{Degraded: []string{"cluster tenant/c1: broken", "cluster tenant/c2: broken"}, DegradedReason: "FluxObjectNotReady",
				Pending: []string{ssRelV1}},
		},
		{
			name:     "ReleasesResolved False (not InUse) comes first and gives the reason",
			addons:   []csv1.ClusterAddon{ssDegradedAddon("c1", ssRelV1, "cluster tenant/c1: broken")},
			resolved: &metav1.Condition{Status: metav1.ConditionFalse, Reason: "TagListFailed", Message: "cannot list tags"},
			want: got{Degraded: []string{"cannot list tags", "cluster tenant/c1: broken"}, DegradedReason: "TagListFailed",
				Pending: []string{ssRelV1}},
		},
		{
			name:     "ReleasesResolved False InUse is progress, first",
			releases: []csv1.ClusterStackRelease{ssRelease(ssRelV1, "v1")},
			resolved: &metav1.Condition{Status: metav1.ConditionFalse, Reason: csv1.ReasonInUse, Message: "release in use"},
			want:     got{Progressing: []string{"release in use", "release " + ssRelV1 + " is being reconciled"}, AllAvailable: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := observed{allAvailable: true, pending: map[string]bool{}, delivered: map[string]bool{}}
			for _, r := range tt.releases {
				o.release(r)
			}
			o.fleet(Summarize(tt.addons))
			o.resolved(tt.resolved)
			g := got{Degraded: o.degraded, Progressing: o.progressing, DegradedReason: o.degradedReason, AllAvailable: o.allAvailable,
				Pending: keys(o.pending), Delivered: keys(o.delivered)}
			if diff := cmp.Diff(tt.want, g); diff != "" {
				t.Errorf("observed (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAvailableVersion(t *testing.T) {
	v1, v2 := ssAvailableRelease(ssRelV1, "v1"), ssAvailableRelease(ssRelV2, "v2")
	tests := []struct {
		name      string
		f         Facts
		available map[string]bool
		pending   []string
		delivered []string
		want      string
	}{
		{"no clusters: the newest Available release", Facts{Releases: []csv1.ClusterStackRelease{v1, v2}}, map[string]bool{ssRelV1: true, ssRelV2: true}, nil, nil, "v2"},
		{"an unavailable release does not count", Facts{Releases: []csv1.ClusterStackRelease{v1, v2}}, map[string]bool{ssRelV1: true}, nil, nil, "v1"},
		{"with clusters, only delivered versions count", Facts{Releases: []csv1.ClusterStackRelease{v1, v2}, Fleet: Summarize([]csv1.ClusterAddon{{}})},
			map[string]bool{ssRelV1: true, ssRelV2: true}, nil, []string{ssRelV1}, "v1"},
		{"a version some cluster still waits for does not count", Facts{Releases: []csv1.ClusterStackRelease{v1, v2}, Fleet: Summarize([]csv1.ClusterAddon{{}})},
			map[string]bool{ssRelV1: true, ssRelV2: true}, []string{ssRelV2}, []string{ssRelV1, ssRelV2}, "v1"},
		{"nothing qualifies: the previous version stays while its release exists", Facts{Releases: []csv1.ClusterStackRelease{v1, v2}, PreviousAvailable: "v1"},
			map[string]bool{}, nil, nil, "v1"},
		{"nothing qualifies and the previous release is gone: none", Facts{Releases: []csv1.ClusterStackRelease{v2}, PreviousAvailable: "v1"},
			map[string]bool{}, nil, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := observed{pending: map[string]bool{}, delivered: map[string]bool{}}
			for _, p := range tt.pending {
				o.pending[p] = true
			}
			for _, d := range tt.delivered {
				o.delivered[d] = true
			}
			if got := availableVersion(tt.f, tt.available, o); got != tt.want {
				t.Errorf("availableVersion = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestStackConditions(t *testing.T) {
	four := []string{"a", "b", "c", "d"}
	tests := []struct {
		name string
		got  metav1.Condition
		typ  string
		want ssC
	}{
		{"degraded: the first reason, three named", degradedCondition("ClusterStack s", observed{degraded: four, degradedReason: "InvalidStack"}),
			csv1.DegradedCondition, ssC{"True", "InvalidStack", "ClusterStack s: a; b; c; and 1 more"}},
		{"not degraded", degradedCondition("ClusterStack s", observed{}),
			csv1.DegradedCondition, ssC{"False", "AsExpected", "ClusterStack s: no release or cluster is degraded"}},
		{"progressing: three named", progressingCondition("ClusterStack s", observed{progressing: four}),
			csv1.ProgressingCondition, ssC{"True", "Reconciling", "ClusterStack s: a; b; c; and 1 more"}},
		{"not progressing", progressingCondition("ClusterStack s", observed{}),
			csv1.ProgressingCondition, ssC{"False", "AsExpected", "ClusterStack s: nothing is rolling out"}},
		{"available: no release", availableCondition("ClusterStack s", 0, "", true, csv1.ClusterCounts{}, nil),
			csv1.AvailableCondition, ssC{"False", "NoReleases", "ClusterStack s: no release yet"}},
		{"available: no version yet", availableCondition("ClusterStack s", 1, "", true, csv1.ClusterCounts{}, nil),
			csv1.AvailableCondition, ssC{"False", "Reconciling", "ClusterStack s: no version is fully available yet"}},
		{"available: not every cluster", availableCondition("ClusterStack s", 1, "v1", false, csv1.ClusterCounts{Total: 3, Available: 2}, nil),
			csv1.AvailableCondition, ssC{"False", "FluxObjectNotReady", "ClusterStack s: v1 is available, but only 2/3 clusters are"}},
		{"available everywhere", availableCondition("ClusterStack s", 2, "v2", true, csv1.ClusterCounts{Total: 3, Available: 3}, []versionCount{{"v2", 3}}),
			csv1.AvailableCondition, ssC{"True", "AsExpected", "ClusterStack s: v2 is available on 3/3 clusters"}},
		{"available, the clusters on two versions", availableCondition("ClusterStack s", 2, "v2", true, csv1.ClusterCounts{Total: 3, Available: 3}, []versionCount{{"v2", 1}, {"v1", 2}}),
			csv1.AvailableCondition, ssC{"True", "AsExpected", "ClusterStack s: v2 is available on 1/3 clusters, v1 on 2; all 3 are available"}},
		{"available, the clusters on five versions", availableCondition("ClusterStack s", 5, "v5", true, csv1.ClusterCounts{Total: 6, Available: 6},
			[]versionCount{{"v5", 2}, {"v4", 1}, {"v3", 1}, {"v2", 1}, {"v1", 1}}),
			csv1.AvailableCondition, ssC{"True", "AsExpected", "ClusterStack s: v5 is available on 2/6 clusters, v4 on 1, v3 on 1, v2 on 1, 1 more version; all 6 are available"}},
		{"available, the clusters on six versions", availableCondition("ClusterStack s", 6, "v6", true, csv1.ClusterCounts{Total: 7, Available: 7},
			[]versionCount{{"v6", 2}, {"v5", 1}, {"v4", 1}, {"v3", 1}, {"v2", 1}, {"v1", 1}}),
			csv1.AvailableCondition, ssC{"True", "AsExpected", "ClusterStack s: v6 is available on 2/7 clusters, v5 on 1, v4 on 1, v3 on 1, 2 more versions; all 7 are available"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got.Type != tt.typ {
				t.Errorf("type %q, want %q", tt.got.Type, tt.typ)
			}
			if diff := cmp.Diff(tt.want, ssProj(tt.got)); diff != "" {
				t.Errorf("condition (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTally(t *testing.T) {
	var n csv1.ClusterCounts
	for _, a := range []csv1.ClusterAddon{
		ssUpToDateAddon("c1", ssRelV1),
		ssUpgradingAddon("c2", ssRelV2, ssRelV1),
		ssDegradedAddon("c3", ssRelV1, "broken"),
		ssAddon("c4", ssRelV1, ""),
	} {
		Tally(&n, &a)
	}
	if diff := cmp.Diff(csv1.ClusterCounts{Total: 4, UpToDate: 2, Available: 2, Degraded: 1}, n); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	if a := ssAddon("c", "", ""); UpToDate(&a) {
		t.Error("a ClusterAddon that has applied nothing is not up to date")
	}
}
