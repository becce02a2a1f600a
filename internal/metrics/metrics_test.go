package metrics

import (
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

func conds(available, progressing, degraded metav1.ConditionStatus) []metav1.Condition {
	var out []metav1.Condition
	for t, s := range map[string]metav1.ConditionStatus{csv1.AvailableCondition: available, csv1.ProgressingCondition: progressing, csv1.DegradedCondition: degraded} {
		if s != "" {
			out = append(out, metav1.Condition{Type: t, Status: s, Reason: "Test"})
		}
	}
	return out
}

const (
	T = metav1.ConditionTrue
	F = metav1.ConditionFalse
	U = metav1.ConditionUnknown
)

func TestStateOf(t *testing.T) {
	for _, tc := range []struct {
		name                             string
		available, progressing, degraded metav1.ConditionStatus
		want                             string
	}{
		{"no conditions yet", "", "", "", StateUnknown},
		{"all unknown", U, U, U, StateUnknown},
		{"healthy", T, F, F, StateAvailable},
		{"upgrading while the delivered release works", T, T, F, StateAvailable},
		{"first rollout", F, T, F, StateProgressing},
		{"degraded", F, F, T, StateDegraded},
		{"degraded wins over everything", T, T, T, StateDegraded},
		{"neither available nor moving", F, F, F, StateUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := StateOf(conds(tc.available, tc.progressing, tc.degraded)); got != tc.want {
				t.Errorf("StateOf = %q, want %q", got, tc.want)
			}
		})
	}
}

func release(name string, c []metav1.Condition) csv1.ClusterStackRelease {
	return csv1.ClusterStackRelease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant"}, Status: csv1.ClusterStackReleaseStatus{Conditions: c}}
}

func addon(name, desired string, c []metav1.Condition) csv1.ClusterAddon {
	return csv1.ClusterAddon{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant"}, Status: csv1.ClusterAddonStatus{DesiredRelease: desired, Conditions: c}}
}

func clusterSeries(stack, rel string, avail, prog, degr, unknown int) string {
	var b strings.Builder
	for _, s := range []struct {
		state string
		n     int
	}{{StateAvailable, avail}, {StateDegraded, degr}, {StateProgressing, prog}, {StateUnknown, unknown}} {
		b.WriteString(`clusterstack_clusters{namespace="tenant",release="` + rel + `",stack="` + stack + `",state="` + s.state + `"} ` + strconv.Itoa(s.n) + "\n")
	}
	return b.String()
}

func releaseSeries(stack string, avail, prog, degr, unknown int) string {
	var b strings.Builder
	for _, s := range []struct {
		state string
		n     int
	}{{StateAvailable, avail}, {StateDegraded, degr}, {StateProgressing, prog}, {StateUnknown, unknown}} {
		b.WriteString(`clusterstack_releases{namespace="tenant",stack="` + stack + `",state="` + s.state + `"} ` + strconv.Itoa(s.n) + "\n")
	}
	return b.String()
}

// byState counts ClusterAddons by the release they want and their state, as the ClusterStack
// status aggregation's index does (stackstatus.Fleet.States).
func byState(addons ...csv1.ClusterAddon) map[string]map[string]int {
	out := map[string]map[string]int{}
	for _, a := range addons {
		if out[a.Status.DesiredRelease] == nil {
			out[a.Status.DesiredRelease] = map[string]int{}
		}
		out[a.Status.DesiredRelease][StateOf(a.Status.Conditions)]++
	}
	return out
}

const clustersHeader = "# HELP clusterstack_clusters CAPI Clusters using a cluster stack (one ClusterAddon each), by the release they want and their state (available, progressing, degraded, unknown).\n# TYPE clusterstack_clusters gauge\n"
const releasesHeader = "# HELP clusterstack_releases ClusterStackReleases of a cluster stack by state (available, progressing, degraded, unknown).\n# TYPE clusterstack_releases gauge\n"

func TestSetStackRecountsAndDeletesVanishedSeries(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	r := New(reg)
	healthy := conds(T, F, F)

	// v1 serves three clusters (one degraded), v2 rolls out to one, v0 is degraded and serves
	// none, v4 has no status yet; another stack has one cluster.
	r.SetStack("tenant", "aws", []csv1.ClusterStackRelease{
		release("aws-v0", conds(F, F, T)),
		release("aws-v4", nil),
		release("aws-v1", healthy),
		release("aws-v2", conds(F, T, F)),
	}, byState(
		addon("a", "aws-v1", healthy),
		addon("b", "aws-v1", healthy),
		addon("c", "aws-v1", conds(F, F, T)),
		addon("d", "aws-v2", conds(F, T, F)),
	))
	r.SetStack("tenant", "gcp", []csv1.ClusterStackRelease{release("gcp-v1", healthy)}, byState(addon("e", "gcp-v1", nil)))

	want := clustersHeader +
		clusterSeries("aws", "aws-v0", 0, 0, 0, 0) +
		clusterSeries("aws", "aws-v1", 2, 0, 1, 0) +
		clusterSeries("aws", "aws-v2", 0, 1, 0, 0) +
		clusterSeries("aws", "aws-v4", 0, 0, 0, 0) +
		clusterSeries("gcp", "gcp-v1", 0, 0, 0, 1)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), ClustersMetric); err != nil {
		t.Fatal(err)
	}
	want = releasesHeader + releaseSeries("aws", 1, 1, 1, 1) + releaseSeries("gcp", 1, 0, 0, 0)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), ReleasesMetric); err != nil {
		t.Fatal(err)
	}

	// Recount: v0, v1 and v4 are gone (all clusters moved to v2, the releases were removed); a
	// cluster of v2 wants v3, which has no release object yet. Nothing of the others is left
	// behind.
	r.SetStack("tenant", "aws", []csv1.ClusterStackRelease{release("aws-v2", healthy)}, byState(
		addon("a", "aws-v2", healthy),
		addon("b", "aws-v2", healthy),
		addon("c", "aws-v3", conds(T, T, F)),
	))
	want = clustersHeader +
		clusterSeries("aws", "aws-v2", 2, 0, 0, 0) +
		clusterSeries("aws", "aws-v3", 1, 0, 0, 0) +
		clusterSeries("gcp", "gcp-v1", 0, 0, 0, 1)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), ClustersMetric); err != nil {
		t.Fatal(err)
	}

	// The aws stack is deleted: only gcp's series remain.
	r.RenderFailed("tenant", "aws", "aws-v2")
	r.DeleteStack("tenant", "aws")
	want = clustersHeader + clusterSeries("gcp", "gcp-v1", 0, 0, 0, 1)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), ClustersMetric); err != nil {
		t.Fatal(err)
	}
	want = releasesHeader + releaseSeries("gcp", 1, 0, 0, 0)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), ReleasesMetric); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(r.renderFailures); n != 0 {
		t.Errorf("render failure series after the stack was deleted: %d, want 0", n)
	}
}

func TestSetStackWithoutAnything(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	r := New(reg)
	r.SetStack("tenant", "empty", nil, nil)
	if n := testutil.CollectAndCount(r.clusters); n != 0 {
		t.Errorf("cluster series of a stack with no release and no cluster: %d, want 0", n)
	}
	want := releasesHeader + releaseSeries("empty", 0, 0, 0, 0)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), ReleasesMetric); err != nil {
		t.Fatal(err)
	}
}

func TestRenderFailed(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	r := New(reg)
	r.RenderFailed("tenant", "aws", "aws-v1")
	r.RenderFailed("tenant", "aws", "aws-v1")
	r.RenderFailed("tenant", "aws", "aws-v2")
	want := `# HELP clusterstack_render_failures_total Value render failures recorded on ClusterAddons: ValuesRendered turned False, or stayed False with a different error. Retries of the same failure are not counted.
# TYPE clusterstack_render_failures_total counter
clusterstack_render_failures_total{namespace="tenant",release="aws-v1",stack="aws"} 2
clusterstack_render_failures_total{namespace="tenant",release="aws-v2",stack="aws"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), RenderFailuresMetric); err != nil {
		t.Fatal(err)
	}
}

func TestDefaultIsServedByTheManager(t *testing.T) {
	Default.SetStack("default-test", "s", []csv1.ClusterStackRelease{release("s-v1", nil)}, nil)
	defer Default.DeleteStack("default-test", "s")
	for _, name := range []string{ClustersMetric, ReleasesMetric} {
		n, err := testutil.GatherAndCount(ctrlmetrics.Registry, name)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			t.Errorf("%s is not in controller-runtime's registry", name)
		}
	}
}
