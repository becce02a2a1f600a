package stackstatus

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxstatus"
	"github.com/clusterstack-io/clusterstack-operator/internal/metrics"
)

// ssRelV3 is a release that exists only as what a Cluster wants.
const ssRelV3 = "aws-base-1-33-v3"

func TestSummarize(t *testing.T) {
	tests := []struct {
		name   string
		addons []csv1.ClusterAddon
		want   Fleet
	}{
		{name: "no clusters", want: Fleet{}},
		{
			name:   "an up-to-date Available cluster",
			addons: []csv1.ClusterAddon{ssUpToDateAddon("c1", ssRelV1)},
			want: Fleet{
				Clusters:  csv1.ClusterCounts{Total: 1, UpToDate: 1, Available: 1},
				Releases:  map[string]csv1.ClusterCounts{ssRelV1: {Total: 1, UpToDate: 1, Available: 1}},
				States:    map[string]map[string]int{ssRelV1: {metrics.StateAvailable: 1}},
				Delivered: map[string]int{ssRelV1: 1},
			},
		},
		{
			name: "upgrading, degraded and new clusters",
			addons: []csv1.ClusterAddon{
				ssUpgradingAddon("c1", ssRelV3, ssRelV2),
				ssDegradedAddon("c2", ssRelV1, "cluster tenant/c2: broken"),
				ssAddon("c3", "", ""),
			},
			want: Fleet{
				Clusters: csv1.ClusterCounts{Total: 3, UpToDate: 1, Available: 1, Degraded: 1},
				Releases: map[string]csv1.ClusterCounts{ssRelV3: {Total: 1, Available: 1}, ssRelV1: {Total: 1, UpToDate: 1, Degraded: 1}, "": {Total: 1}},
				States: map[string]map[string]int{ssRelV3: {metrics.StateAvailable: 1}, ssRelV1: {metrics.StateDegraded: 1},
					"": {metrics.StateUnknown: 1}},
				Pending:      map[string]int{ssRelV3: 1, ssRelV1: 1, "": 1},
				Delivered:    map[string]int{ssRelV2: 1},
				NotAvailable: 2,
				Degraded:     map[string]Problem{"c2": {Reason: "FluxObjectNotReady", Message: "cluster tenant/c2: broken"}},
				Progressing:  map[string]string{"c1": "cluster tenant/c1: upgrading from " + ssRelV2 + " to " + ssRelV3},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Summarize(tt.addons), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Summarize (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFirstNames(t *testing.T) {
	m := map[string]bool{"d": true, "b": true, "e": true, "a": true, "c": true}
	tests := []struct {
		n    int
		want []string
	}{{0, []string{}}, {1, []string{"a"}}, {3, []string{"a", "b", "c"}}, {9, []string{"a", "b", "c", "d", "e"}}}
	for _, tt := range tests {
		if got := firstNames(m, tt.n); !cmp.Equal(tt.want, got) {
			t.Errorf("firstNames(%d) = %v, want %v", tt.n, got, tt.want)
		}
	}
}

// TestIndexMatchesSummarize applies random sequences of Set and Delete (ClusterAddons moving
// between namespaces' stacks and releases, becoming Available, degraded, progressing, going
// away) and checks after every step that each stack's Fleet is Summarize of the ClusterAddons
// now in it, that the release counts are a recount, and that Compute from the Index's Fleet
// gives what a walk over the ClusterAddons gives (referenceCompute, the algorithm Compute had
// before the Index).
func TestIndexMatchesSummarize(t *testing.T) {
	namespaces := []string{"tenant", "other"}
	stacks := []string{"", ssStack, "gcp"}
	releases := []string{"", ssRelV1, ssRelV2, "gcp-1-33-v1"}
	statuses := []metav1.ConditionStatus{"", metav1.ConditionTrue, metav1.ConditionFalse}
	messages := []string{"x", "y", "z"}
	rels := []csv1.ClusterStackRelease{ssAvailableRelease(ssRelV1, "v1"), ssAvailableRelease(ssRelV2, "v2")}

	for seed := uint64(1); seed <= 10; seed++ {
		rng := rand.New(rand.NewPCG(seed, seed*7919))
		pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
		idx := NewIndex()
		live := map[[2]string]csv1.ClusterAddon{}
		for step := 0; step < 400; step++ {
			ns, name := pick(namespaces), fmt.Sprintf("c%d", rng.IntN(12))
			if rng.IntN(5) == 0 {
				idx.Delete(ns, name)
				delete(live, [2]string{ns, name})
			} else {
				a := ssAddon(name, pick(releases), pick(releases))
				a.Namespace = ns
				a.Status.ClusterStack = pick(stacks)
				for _, typ := range []string{csv1.AvailableCondition, csv1.ProgressingCondition, csv1.DegradedCondition} {
					if s := statuses[rng.IntN(len(statuses))]; s != "" {
						a.Status.Conditions = append(a.Status.Conditions, metav1.Condition{Type: typ, Status: s, Reason: "R" + pick(messages),
							Message: "cluster " + ns + "/" + name + ": " + pick(messages)})
					}
				}
				idx.Set(&a)
				live[[2]string{ns, name}] = a
			}

			for _, ns := range namespaces {
				for _, st := range stacks[1:] {
					var in []csv1.ClusterAddon
					for k, a := range live {
						if k[0] == ns && a.Status.ClusterStack == st {
							in = append(in, a)
						}
					}
					got, want := idx.Fleet(ns, st), Summarize(in)
					if !reflect.DeepEqual(normalized(want), normalized(got)) {
						diff := cmp.Diff(want, got, cmpopts.EquateEmpty())
						t.Fatalf("seed %d step %d: Fleet(%s, %s) differs from Summarize (-want +got):\n%s", seed, step, ns, st, diff)
					}
					f := Facts{Releases: rels, Fleet: got, PreviousAvailable: "v1"}
					if ref, res := referenceCompute(st, rels, in, "v1"), Compute(st, f); !reflect.DeepEqual(ref, res) {
						diff := cmp.Diff(ref, res)
						t.Fatalf("seed %d step %d: Compute(%s, %s) differs from a walk over the ClusterAddons (-want +got):\n%s", seed, step, ns, st, diff)
					}
				}
				for _, rel := range releases[1:] {
					var want csv1.ClusterCounts
					for k, a := range live {
						if k[0] == ns && a.Status.DesiredRelease == rel {
							Tally(&want, &a)
						}
					}
					if got := idx.ReleaseClusters(ns, rel); got != want {
						t.Fatalf("seed %d step %d: ReleaseClusters(%s, %s) = %+v, want %+v", seed, step, ns, rel, got, want)
					}
				}
			}
		}
	}
}

// TestIndexFleetIsACopy: a Fleet read from the Index does not change with later Sets.
func TestIndexFleetIsACopy(t *testing.T) {
	idx := NewIndex()
	a := ssDegradedAddon("c1", ssRelV1, "broken")
	idx.Set(&a)
	f := idx.Fleet("tenant", ssStack)
	b := ssUpToDateAddon("c1", ssRelV1)
	idx.Set(&b)
	if len(f.Degraded) != 1 || f.Clusters.Degraded != 1 {
		t.Errorf("the Fleet read before changed with a later Set: %+v", f)
	}
	if g := idx.Fleet("tenant", ssStack); len(g.Degraded) != 0 || g.Clusters != (csv1.ClusterCounts{Total: 1, UpToDate: 1, Available: 1}) {
		t.Errorf("Fleet after the change = %+v", g)
	}
	idx.Delete("tenant", "c1")
	idx.Delete("tenant", "c1") // deleting twice (a tombstone after the delete) is harmless
	if g := idx.Fleet("tenant", ssStack); !cmp.Equal(Fleet{}, g, cmpopts.EquateEmpty()) {
		t.Errorf("Fleet after Delete = %+v, want empty", g)
	}
}

// TestIndexNamespaceAddons: every ClusterAddon of a namespace counts once, with a status or not,
// until it is deleted.
func TestIndexNamespaceAddons(t *testing.T) {
	idx := NewIndex()
	fresh := csv1.ClusterAddon{}
	fresh.Namespace, fresh.Name = "tenant", "c0" // just created: no status, no stack, no release
	idx.Set(&fresh)
	a := ssDegradedAddon("c1", ssRelV1, "broken")
	idx.Set(&a)
	b := ssUpToDateAddon("c1", ssRelV1)
	idx.Set(&b) // a change of c1, not another ClusterAddon
	other := ssUpToDateAddon("c2", ssRelV1)
	other.Namespace = "elsewhere"
	idx.Set(&other)
	if n := idx.NamespaceAddons("tenant"); n != 2 {
		t.Errorf("NamespaceAddons(tenant) = %d, want 2 (c0 without a status and c1)", n)
	}
	if got := idx.Fleet("tenant", ssStack).Clusters.Total; got != 1 {
		t.Errorf("the stack's fleet counts %d, want 1: c0 has no stack yet", got)
	}
	idx.Delete("tenant", "c0")
	idx.Delete("tenant", "c0") // a tombstone after the delete
	if n, m := idx.NamespaceAddons("tenant"), idx.NamespaceAddons("elsewhere"); n != 1 || m != 1 {
		t.Errorf("after deleting c0: tenant %d, elsewhere %d, want 1 and 1", n, m)
	}
	idx.Delete("tenant", "c1")
	if n := idx.NamespaceAddons("tenant"); n != 0 {
		t.Errorf("after deleting every ClusterAddon: %d, want 0", n)
	}
}

// normalized is f with empty maps for nil ones, for reflect.DeepEqual (much faster than cmp).
func normalized(f Fleet) Fleet {
	if f.Releases == nil {
		f.Releases = map[string]csv1.ClusterCounts{}
	}
	if f.States == nil {
		f.States = map[string]map[string]int{}
	}
	if f.Pending == nil {
		f.Pending = map[string]int{}
	}
	if f.Delivered == nil {
		f.Delivered = map[string]int{}
	}
	if f.Degraded == nil {
		f.Degraded = map[string]Problem{}
	}
	if f.Progressing == nil {
		f.Progressing = map[string]string{}
	}
	return f
}

// referenceCompute is Compute as it was before the Index: a walk over every ClusterAddon, in
// the order of their names.
func referenceCompute(name string, releases []csv1.ClusterStackRelease, addons []csv1.ClusterAddon, previous string) Result {
	addons = append([]csv1.ClusterAddon(nil), addons...)
	sort.Slice(addons, func(i, j int) bool { return addons[i].Name < addons[j].Name })
	res := Result{ReleaseAvailable: map[string]bool{}, ReleaseClusters: map[string]csv1.ClusterCounts{}}
	o := observed{allAvailable: true, pending: map[string]bool{}, delivered: map[string]bool{}}
	for _, rel := range releases {
		res.ReleaseAvailable[rel.Name] = apimeta.IsStatusConditionTrue(rel.Status.Conditions, csv1.AvailableCondition)
		o.release(rel)
	}
	delivered := map[string]int{}
	for i := range addons {
		a := &addons[i]
		counts := res.ReleaseClusters[a.Status.DesiredRelease]
		Tally(&counts, a)
		Tally(&res.Clusters, a)
		res.ReleaseClusters[a.Status.DesiredRelease] = counts
		avail := apimeta.IsStatusConditionTrue(a.Status.Conditions, csv1.AvailableCondition)
		if !avail {
			o.allAvailable = false
		}
		if !UpToDate(a) || !avail {
			o.pending[a.Status.DesiredRelease] = true
		}
		if avail && a.Status.LastAppliedRelease != "" {
			o.delivered[a.Status.LastAppliedRelease] = true
			delivered[a.Status.LastAppliedRelease]++
		}
		if c := apimeta.FindStatusCondition(a.Status.Conditions, csv1.DegradedCondition); c != nil && c.Status == metav1.ConditionTrue {
			o.degrade(c.Reason, c.Message)
		} else if c := apimeta.FindStatusCondition(a.Status.Conditions, csv1.ProgressingCondition); c != nil && c.Status == metav1.ConditionTrue {
			o.progressing = append(o.progressing, c.Message)
		}
	}
	f := Facts{Releases: releases, PreviousAvailable: previous}
	f.Fleet.Clusters = res.Clusters // availableVersion asks only whether there are Clusters
	f.Fleet.Delivered = delivered   // the Available message counts the Clusters by version
	res.AvailableVersion = availableVersion(f, res.ReleaseAvailable, o)
	subject := "ClusterStack " + name
	res.Degraded = degradedCondition(subject, o)
	res.Progressing = progressingCondition(subject, o)
	res.Available = availableCondition(subject, len(releases), res.AvailableVersion, o.allAvailable, res.Clusters, deliveredVersions(f))
	res.Ready = fluxstatus.ReadyFrom(res.Available, res.Progressing, res.Degraded)
	res.Stalled, res.Reconciling = fluxstatus.KstatusFrom(res.Ready, res.Degraded)
	res.Healthy = res.Ready.Status == metav1.ConditionTrue
	return res
}
