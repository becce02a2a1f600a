package bench

import (
	"errors"
	"testing"
	"time"
)

func TestPhaseAccount(t *testing.T) {
	before := newPhaseAccount(phaseCPU{cpuSample: cpuSample{api: 200 * time.Second, etcd: 30 * time.Second, self: 10 * time.Second}, workloads: 220 * time.Second},
		[]procUsage{{name: "helm-controller", cpu: 190}, {name: "kustomize-controller", cpu: 70}},
		map[string]float64{"helmreleases PATCH": 1000, "helmreleases/status PATCH": 6000, "secrets GET": 3000})
	after := newPhaseAccount(phaseCPU{cpuSample: cpuSample{api: 240 * time.Second, etcd: 34 * time.Second, self: 10 * time.Second}, workloads: 240 * time.Second},
		[]procUsage{{name: "helm-controller", cpu: 194}, {name: "kustomize-controller", cpu: 74}, {name: "lost", cpu: 99, err: errors.New("gone")}},
		map[string]float64{"helmreleases PATCH": 1000, "helmreleases/status PATCH": 6200, "secrets GET": 3000})
	if got, want := before.total(), 720*time.Second; got != want {
		t.Fatalf("total: got %s, want %s", got, want)
	}
	if _, ok := after.cpu["lost"]; ok {
		t.Fatal("a process whose figures could not be read counts")
	}
	mean := meanAccount(before, after)
	if got, want := mean.cpu["management API server"], 220*time.Second; got != want {
		t.Fatalf("mean API server CPU: got %s, want %s", got, want)
	}
	if got, want := mean.requests["helmreleases/status PATCH"], 6100.0; got != want {
		t.Fatalf("mean status patches: got %v, want %v", got, want)
	}

	op := newPhaseAccount(phaseCPU{cpuSample: cpuSample{api: 250 * time.Second, etcd: 32 * time.Second, self: 12 * time.Second}, workloads: 230 * time.Second},
		[]procUsage{{name: "helm-controller", cpu: 190}, {name: "kustomize-controller", cpu: 72}, {name: "operator", cpu: 40}},
		map[string]float64{"helmreleases PATCH": 1000, "helmreleases/status PATCH": 6110, "secrets GET": 4000, "clusteraddons POST": 1000, "clusteraddons/status PUT": 2000,
			"workload secrets GET": 150})
	// 826 s against the mean's 756 s: the operator's 40 s first, then the API server's 30 s; the
	// processes that spent the same are left out.
	if got, want := cpuBeyond(op, mean), "13m46s against 12m36s (1.09x): operator +40s, management API server +30s, "+
		"helm-controller -2s, this benchmark +2s"; got != want {
		t.Errorf("cpuBeyond:\n got %s\nwant %s", got, want)
	}
	// Only differences of at least 100 requests, the largest first; the workload API servers'
	// (scrapePlaneRequests) among them.
	if got, want := requestsBeyond(op, mean, 1000, 100), "clusteraddons/status PUT +2000 (2.00 per Cluster), clusteraddons POST +1000 (1.00 per Cluster), "+
		"secrets GET +1000 (1.00 per Cluster), workload secrets GET +150 (0.15 per Cluster)"; got != want {
		t.Errorf("requestsBeyond:\n got %s\nwant %s", got, want)
	}
	if got, want := requestsBeyond(mean, op, 1000, 100), "clusteraddons/status PUT -2000 (-2.00 per Cluster), clusteraddons POST -1000 (-1.00 per Cluster), "+
		"secrets GET -1000 (-1.00 per Cluster), workload secrets GET -150 (-0.15 per Cluster)"; got != want {
		t.Errorf("requestsBeyond, fewer:\n got %s\nwant %s", got, want)
	}
	if got, want := requestsBeyond(after, after, 1000, 100), "none differs by 100 or more"; got != want {
		t.Errorf("requestsBeyond, the same: got %s, want %s", got, want)
	}

	// Every write of the management API server counts, the workload API servers' and reads do
	// not; the kinds under 0.05 per Cluster are summed only.
	op.requests["leases PUT"] = 40
	op.requests["workload configmaps PATCH"] = 3000
	if got, want := writesPerCluster(op, 1000), "10.15 (helmreleases/status PATCH 6.11, clusteraddons/status PUT 2.00, clusteraddons POST 1.00, helmreleases PATCH 1.00)"; got != want {
		t.Errorf("writesPerCluster:\n got %s\nwant %s", got, want)
	}
	if got, want := writesPerCluster(op, 0), "no Clusters"; got != want {
		t.Errorf("writesPerCluster, no Clusters: got %s, want %s", got, want)
	}

	// Each count's growth; a count that did not grow is left out, and diffCounts sums them whole.
	before2, after2 := map[string]float64{"a": 1, "b": 2}, map[string]float64{"a": 4, "b": 2, "c": 2.5}
	if got := diffMap(before2, after2); len(got) != 2 || got["a"] != 3 || got["c"] != 2.5 {
		t.Errorf("diffMap: got %v, want a: 3, c: 2.5", got)
	}
	if total, breakdown := diffCounts(before2, after2); total != 5 || breakdown != "(a: 3, c: 2)" {
		t.Errorf("diffCounts: got %d %s, want 5 (a: 3, c: 2)", total, breakdown)
	}
}
