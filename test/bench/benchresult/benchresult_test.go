package benchresult

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestReplace(t *testing.T) {
	doc := "# T\n\n<!-- BEGIN bench-report: performance -->\nold\nrows\n<!-- END bench-report: performance -->\n\nafter\n"
	got, err := Replace(doc, "performance", "new table\n")
	if err != nil {
		t.Fatal(err)
	}
	want := "# T\n\n<!-- BEGIN bench-report: performance -->\nnew table\n<!-- END bench-report: performance -->\n\nafter\n"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if _, err := Replace(doc, "reliability", "x"); err == nil {
		t.Fatal("a missing section must be an error, not a silent no-op")
	}
	if _, err := Replace("<!-- END bench-report: p -->\n<!-- BEGIN bench-report: p -->", "p", "x"); err == nil {
		t.Fatal("markers in the wrong order must be an error")
	}
}

func TestFanoutTable(t *testing.T) {
	table := FanoutTable([]Fanout{
		{Clusters: 1000, Floor: 10, FloorWorkers: 32, FloorWithStatuses: 24, FloorWithStatusesWorkers: 128, FloorWithStatusesOverlapped: true,
			FloorWithFluxFanout: 20, FloorWithFluxFanoutWorkers: 8, FloorWithFluxReady: 25, FloorWithFluxReadyWorkers: 32, Fanout: 30, Ready: 30,
			WritesPerCluster: 5.07, ReconcilesPerCluster: 5.5, OperatorCPU: 14.3, APIServerCPU: 40, OperatorPeakRSS: 108 << 20,
			APIServerPeakRSS: 2 << 30, IdleWrites: 0, IdleWindow: 60, StatusP50: 0.0195, StatusP99: 0.102,
			JobCPUms: 1.5, FloorWithFluxJobCPUms: 2, StealPercent: 1.3, FloorWithFluxStealPercent: 0},
		{Clusters: 100, Floor: 1, FloorWithFluxFanout: 2, FloorWithFluxReady: 2.5, Fanout: 4, Ready: 5},
	})
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 4 {
		t.Fatalf("want a header, a separator and two rows, got:\n%s", table)
	}
	if !strings.HasPrefix(lines[2], "| 100 |") || !strings.HasPrefix(lines[3], "| 1000 |") {
		t.Fatalf("rows are not ordered by N:\n%s", table)
	}
	for _, want := range []string{"| 1000 | 10s (32) | 24s (128, overlapped) | 20s (8) / 25s (32) |", "| 30s / 30s |", "| 1.50x / 1.20x |", "| 3.00x / 3.00x |",
		"| 5.07 / 5.5 |", "108 MiB / 2048 MiB", "0 in 1m0s", "19.5 ms / 102.0 ms", "| 1.50 / 2.00 ms (0.75x); 1.3% / 0.0% |"} {
		if !strings.Contains(lines[3], want) {
			t.Errorf("row %q lacks %q", lines[3], want)
		}
	}
	// A result without the writer's settings (written before the sweep) shows the times alone.
	if !strings.HasPrefix(lines[2], "| 100 | 1s | 0s | 2s / 2.5s |") {
		t.Errorf("row without settings: %q", lines[2])
	}
	// A run that did not gauge the machine (before the probe) says so.
	if !strings.HasSuffix(lines[2], "| - |") {
		t.Errorf("row without the machine's speed: %q", lines[2])
	}
}

func TestFloorSweepTable(t *testing.T) {
	table := FloorSweepTable([]Fanout{
		{Clusters: 1000, FloorSweep: []FloorSetting{
			{Workers: 8, Floor: 12, WithStatusesSequential: 30, WithStatusesOverlapped: 26, WithFluxFanout: 21, WithFluxReady: 27},
			{Workers: 32, Floor: 10, WithStatusesSequential: 25, WithStatusesOverlapped: 27, WithFluxFanout: 20, WithFluxReady: 28},
			{Workers: 128, Floor: 11, WithStatusesSequential: 29, WithStatusesOverlapped: 24, WithFluxFanout: 22, WithFluxReady: 26},
		}},
		{Clusters: 100, FloorSweep: []FloorSetting{{Workers: 32, Floor: 1, WithStatusesSequential: 2.5, WithStatusesOverlapped: 3, WithFluxFanout: 2, WithFluxReady: 2.5}}},
	})
	lines := strings.Split(strings.TrimSpace(table), "\n")
	want := []string{
		"| N | concurrent writes | floor | floor with statuses: sequential / overlapped | floor with Flux: written / Ready |",
		"|---|---|---|---|---|",
		// N = 100 first; one setting: its figures are the fastest, the overlapped (slower) one not.
		"| 100 | 32 | **1s** | **2.5s** / 3s | **2s** / **2.5s** |",
		// In run order; each floor's least in bold: the floor with statuses only in its faster mode.
		"| 1000 | 8 | 12s | 30s / 26s | 21s / 27s |",
		"| 1000 | 32 | **10s** | 25s / 27s | **20s** / 28s |",
		"| 1000 | 128 | 11s | 29s / **24s** | 22s / **26s** |",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

func TestRealFluxTable(t *testing.T) {
	table := RealFluxTable([]RealFlux{{
		Clusters: 1000, Workloads: 10, GeneratedObjects: 4,
		FluxAloneWritten: 300, FluxAloneReady: 400, AllWritten: 310, FluxReady: 420, AddonsReady: 440,
		OperatorShareP50: 1.5, OperatorSharePercent: 4, HelmReleaseReadyP50: 60, KustomizationP50: 2,
		HelmReleasesPerMin: 150, WritesPerCluster: 6.2,
		PeakRSS:               map[string]int64{"operator": 100 << 20, "helm-controller": 500 << 20, "kustomize-controller": 200 << 20},
		FluxAlonePeakRSS:      map[string]int64{"helm-controller": 450 << 20, "kustomize-controller": 190 << 20},
		WorkloadServerPeakRSS: 400 << 20,
		JobCPUms:              2.4, FluxAloneJobCPUms: 2, StealPercent: 0.3, FluxAloneStealPercent: -1,
	}})
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 3 {
		t.Fatalf("want a header, a separator and a row, got:\n%s", table)
	}
	for _, want := range []string{"| 1000 | 10 | 5m0s / 6m40s |", "| 5m10s / 7m0s / 7m20s |", "| 1.05x / 1.10x | - | 6.200 (6) |",
		"| 1.5s (4%) |", "| 1m0s / 2s |", "| 150 |", "| 100 MiB / 500 MiB (450 MiB) / 200 MiB (190 MiB) |", "| 400 MiB |",
		"| 2.40 / 2.00 ms (1.20x); 0.3% / ? |"} {
		if !strings.Contains(lines[2], want) {
			t.Errorf("row %q lacks %q", lines[2], want)
		}
	}
	// With Flux alone measured again after the operator, the ratios are to the mean of both
	// phases, and the ratios to each follow.
	after := RealFlux{Clusters: 1000, FluxAloneWritten: 300, FluxAloneReady: 400, FluxAloneAfterWritten: 350, FluxAloneAfterReady: 480,
		FluxReady: 420, AddonsReady: 462, JobCPUms: 2.4, FluxAloneJobCPUms: 2, FluxAloneAfterJobCPUms: 3, FluxAloneAfterStealPercent: 1.5,
		PlaneCPU: 880, FluxAlonePlaneCPU: 760, FluxAloneAfterPlaneCPU: 840, OperatorCPU: 40}
	if got := after.FluxAlone(); got != 440 {
		t.Errorf("FluxAlone() = %v, want the mean 440", got)
	}
	row := strings.Split(strings.TrimSpace(RealFluxTable([]RealFlux{after})), "\n")[2]
	if got := after.FluxAlonePlane(); got != 800 {
		t.Errorf("FluxAlonePlane() = %v, want the mean 800", got)
	}
	for _, want := range []string{"| 5m0s / 6m40s; 5m50s / 8m0s |", "| 0.95x / 1.05x; 1.16x / 0.96x |", "| 14m40s / 13m20s (1.10x); the operator 40s |", "; after: 2.40 / 3.00 ms (0.80x); 0.0% / 1.5% |"} {
		if !strings.Contains(row, want) {
			t.Errorf("row %q lacks %q", row, want)
		}
	}
	// A run that did not gauge the machine (before the probe) says so.
	if row := strings.Split(strings.TrimSpace(RealFluxTable([]RealFlux{{Clusters: 1}})), "\n")[2]; !strings.HasSuffix(row, "| - |") {
		t.Errorf("row %q: want the speed column \"-\"", row)
	}
}

func TestWriteRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.json")
	if err := Write(path, Result{Kind: RealFluxKind, RealFlux: &RealFlux{Clusters: 200, PeakRSS: map[string]int64{"operator": 1}}}); err != nil {
		t.Fatal(err)
	}
	r, err := Read(path)
	if err != nil || r.RealFlux == nil || r.RealFlux.Clusters != 200 {
		t.Fatalf("read back %+v, %v", r, err)
	}
	if err := Write(path, Result{Kind: FanoutKind}); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(path); err == nil {
		t.Fatal("a result without figures must be refused")
	}
	if err := Write("", Result{}); err != nil {
		t.Fatalf("no path: nothing to write, got %v", err)
	}
}
