// Package benchresult holds the figures the benchmarks of test/bench print, as the benchmarks
// write them (BENCH_RESULT) and `make bench-report` (hack/benchreport) reads them, and renders
// them into the Markdown tables of docs/performance.md. Pure: no client, no processes.
package benchresult

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

// Kind names the benchmark a result comes from.
type Kind string

const (
	// FanoutKind is BenchmarkIdleWritesAndStatusLatency: the operator against the floors, with the
	// stand-in for Flux.
	FanoutKind Kind = "fanout"
	// RealFluxKind is BenchmarkRealFlux: the operator with the real helm- and kustomize-controller.
	RealFluxKind Kind = "realflux"
)

// Result is one benchmark run's figures; exactly one of Fanout and RealFlux is set.
type Result struct {
	Kind     Kind            `json:"kind"`
	Fanout   *Fanout         `json:"fanout,omitempty"`
	RealFlux *RealFlux       `json:"realFlux,omitempty"`
	Extra    json.RawMessage `json:"extra,omitempty"`
}

// Fanout is what BenchmarkIdleWritesAndStatusLatency measured in one run. Durations are
// seconds; ratios are computed from them. Every floor is against the benchmark's floor writer.
type Fanout struct {
	Clusters          int `json:"clusters"`
	ObjectsPerCluster int `json:"objectsPerCluster"`
	// FloorVerbs says which kinds the floor writer created (POST) and which it server-side
	// applied: the verbs the operator uses for them.
	FloorVerbs string `json:"floorVerbs,omitempty"`
	// FloorSweep is every concurrency setting the floor writer ran at, in the order run.
	FloorSweep []FloorSetting `json:"floorSweep,omitempty"`
	// Floor is the writer's time to write every object at its fastest setting, FloorWorkers.
	Floor        float64 `json:"floor"`
	FloorWorkers int     `json:"floorWorkers"`
	// FloorWithStatuses adds the status writes no operator can avoid: the fastest setting
	// (FloorWithStatusesWorkers), with the statuses after every object or, when
	// FloorWithStatusesOverlapped, each right after its object.
	FloorWithStatuses           float64 `json:"floorWithStatuses"`
	FloorWithStatusesWorkers    int     `json:"floorWithStatusesWorkers,omitempty"`
	FloorWithStatusesOverlapped bool    `json:"floorWithStatusesOverlapped,omitempty"`
	// FloorWithFluxFanout and FloorWithFluxReady are the floor with Flux: every object written,
	// and every ClusterAddon status written, each at its fastest setting.
	FloorWithFluxFanout        float64 `json:"floorWithFluxFanout"`
	FloorWithFluxFanoutWorkers int     `json:"floorWithFluxFanoutWorkers,omitempty"`
	FloorWithFluxReady         float64 `json:"floorWithFluxReady"`
	FloorWithFluxReadyWorkers  int     `json:"floorWithFluxReadyWorkers,omitempty"`
	// Fanout and Ready are the operator's: from its start to every object written, and to every
	// ClusterAddon Ready.
	Fanout float64 `json:"fanout"`
	Ready  float64 `json:"ready"`
	// WritesPerCluster and ReconcilesPerCluster are the operator's to converge.
	WritesPerCluster     float64 `json:"writesPerCluster"`
	ReconcilesPerCluster float64 `json:"reconcilesPerCluster"`
	// OperatorCPU and APIServerCPU are CPU seconds from the operator's start to converged.
	OperatorCPU  float64 `json:"operatorCPU"`
	APIServerCPU float64 `json:"apiServerCPU"`
	// OperatorPeakRSS and APIServerPeakRSS are bytes.
	OperatorPeakRSS  int64 `json:"operatorPeakRSS"`
	APIServerPeakRSS int64 `json:"apiServerPeakRSS"`
	// IdleWrites are the operator's writes in an idle window of IdleWindow seconds.
	IdleWrites int     `json:"idleWrites"`
	IdleWindow float64 `json:"idleWindow"`
	// StatusP50 and StatusP99 are the status latency in seconds.
	StatusP50 float64 `json:"statusP50"`
	StatusP99 float64 `json:"statusP99"`
	// ManagerArgs, ManagerEnv and ManagerWrapper say how the operator ran.
	ManagerArgs    []string `json:"managerArgs,omitempty"`
	ManagerEnv     []string `json:"managerEnv,omitempty"`
	ManagerWrapper string   `json:"managerWrapper,omitempty"`
	// JobCPUms and FloorWithFluxJobCPUms are the machine's speed while the operator converged and
	// during the floor with Flux at its fastest setting for Ready: the median CPU time, in
	// milliseconds, of the benchmark's fixed job (decoding one JSON document, every 250 ms); 0
	// when not measured. StealPercent and FloorWithFluxStealPercent are the share of all CPU time
	// the hypervisor stole in each (-1: unknown).
	JobCPUms                  float64 `json:"jobCPUms,omitempty"`
	FloorWithFluxJobCPUms     float64 `json:"floorWithFluxJobCPUms,omitempty"`
	StealPercent              float64 `json:"stealPercent,omitempty"`
	FloorWithFluxStealPercent float64 `json:"floorWithFluxStealPercent,omitempty"`
}

// FloorSetting is what the floor writer measured at one concurrency, in seconds.
type FloorSetting struct {
	Workers int `json:"workers"`
	// Floor is every object written.
	Floor float64 `json:"floor"`
	// WithStatusesSequential is every object, then every status; WithStatusesOverlapped each
	// object's status right after the object.
	WithStatusesSequential float64 `json:"withStatusesSequential"`
	WithStatusesOverlapped float64 `json:"withStatusesOverlapped"`
	// WithFluxFanout and WithFluxReady are the floor with Flux.
	WithFluxFanout float64 `json:"withFluxFanout"`
	WithFluxReady  float64 `json:"withFluxReady"`
}

// RealFlux is what BenchmarkRealFlux measured in one run: Flux alone (the floor writer writing
// the Flux objects and values ConfigMaps directly, in the order Flux needs), then the operator
// driving Flux, then (when FluxAloneAfterReady is set) Flux alone again, all with the real helm-
// and kustomize-controller. Durations are seconds: Flux alone's from the writer's start, the
// operator's from its start (the Clusters exist by then).
type RealFlux struct {
	Clusters  int    `json:"clusters"`
	FluxFlags string `json:"fluxFlags"`
	// Workloads is how many workload API servers the Clusters' addons are spread over.
	Workloads int `json:"workloads,omitempty"`
	// GeneratedObjects is how many objects the operator generates per Cluster.
	GeneratedObjects int `json:"generatedObjects,omitempty"`
	// FluxAloneWritten and FluxAloneReady are Flux alone: every object written, and every
	// HelmRelease and Kustomization Ready.
	FluxAloneWritten float64 `json:"fluxAloneWritten,omitempty"`
	FluxAloneReady   float64 `json:"fluxAloneReady,omitempty"`
	// FluxAloneAfterWritten and FluxAloneAfterReady are the same of Flux alone again, after the
	// operator's phase; 0 when not measured.
	FluxAloneAfterWritten float64 `json:"fluxAloneAfterWritten,omitempty"`
	FluxAloneAfterReady   float64 `json:"fluxAloneAfterReady,omitempty"`
	// AllWritten, FluxReady and AddonsReady are the operator driving Flux: every generated
	// HelmRelease and Kustomization written, every one Ready, every ClusterAddon Ready.
	AllWritten       float64 `json:"allWritten"`
	FluxReady        float64 `json:"fluxReady"`
	AddonsReady      float64 `json:"addonsReady"`
	OperatorShareP50 float64 `json:"operatorShareP50"`
	FluxShareP50     float64 `json:"fluxShareP50"`
	// OperatorSharePercent is the operator's part of the summed per-Cluster times.
	OperatorSharePercent float64 `json:"operatorSharePercent"`
	HelmReleaseReadyP50  float64 `json:"helmReleaseReadyP50"`
	KustomizationP50     float64 `json:"kustomizationReadyP50"`
	HelmReleasesPerMin   float64 `json:"helmReleasesPerMin"`
	WritesPerCluster     float64 `json:"writesPerCluster"`
	// PeakRSS is bytes by process while the operator drove Flux: operator, helm-controller,
	// kustomize-controller; FluxAlonePeakRSS the Flux controllers' during Flux alone.
	PeakRSS          map[string]int64 `json:"peakRSS"`
	FluxAlonePeakRSS map[string]int64 `json:"fluxAlonePeakRSS,omitempty"`
	// WorkloadServerPeakRSS is the largest peak RSS of one workload API server and its etcd.
	WorkloadServerPeakRSS int64 `json:"workloadServerPeakRSS,omitempty"`
	// JobCPUms and FluxAloneJobCPUms are the machine's speed in each phase: the median CPU time,
	// in milliseconds, of the benchmark's fixed job (decoding one JSON document, every 2 s) while
	// the operator drove Flux and during Flux alone; 0 when not measured. StealPercent and
	// FluxAloneStealPercent are the share of all CPU time the hypervisor stole in each phase
	// (-1: unknown).
	JobCPUms              float64 `json:"jobCPUms,omitempty"`
	FluxAloneJobCPUms     float64 `json:"fluxAloneJobCPUms,omitempty"`
	StealPercent          float64 `json:"stealPercent,omitempty"`
	FluxAloneStealPercent float64 `json:"fluxAloneStealPercent,omitempty"`
	// FluxAloneAfterJobCPUms and FluxAloneAfterStealPercent are the same of Flux alone again.
	FluxAloneAfterJobCPUms     float64 `json:"fluxAloneAfterJobCPUms,omitempty"`
	FluxAloneAfterStealPercent float64 `json:"fluxAloneAfterStealPercent,omitempty"`
	// PlaneCPU, FluxAlonePlaneCPU and FluxAloneAfterPlaneCPU are the CPU seconds every process of
	// the plane spent in each phase (the management and workload API servers with their etcd,
	// helm- and kustomize-controller, the benchmark, and the operator in its phase), OperatorCPU
	// the operator's part; 0 when not measured.
	PlaneCPU               float64 `json:"planeCPU,omitempty"`
	FluxAlonePlaneCPU      float64 `json:"fluxAlonePlaneCPU,omitempty"`
	FluxAloneAfterPlaneCPU float64 `json:"fluxAloneAfterPlaneCPU,omitempty"`
	OperatorCPU            float64 `json:"operatorCPU,omitempty"`
}

// FluxAlone is what the operator's phase is compared with: Flux alone's time to every object
// Ready, the mean of the phases before and after the operator's when both ran. A machine whose
// speed drifts linearly over the run moves the two alike, and the drift cancels out of their mean.
func (r RealFlux) FluxAlone() float64 {
	return meanOfMeasured(r.FluxAloneReady, r.FluxAloneAfterReady)
}

// meanOfMeasured is the mean of Flux alone's figures before and after the operator's phase, or the
// one before when the phase after was not measured (0).
func meanOfMeasured(before, after float64) float64 {
	if after > 0 {
		return (before + after) / 2
	}
	return before
}

// FluxAlonePlane is Flux alone's plane CPU the operator's phase is compared with: the mean of the
// phases before and after it when both measured it.
func (r RealFlux) FluxAlonePlane() float64 {
	return meanOfMeasured(r.FluxAlonePlaneCPU, r.FluxAloneAfterPlaneCPU)
}

// planeCPU is a table's plane CPU column: the operator's phase, Flux alone's (FluxAlonePlane),
// their ratio and the operator's own part; "-" when the run did not measure it.
func (r RealFlux) planeCPU() string {
	if r.PlaneCPU <= 0 || r.FluxAlonePlane() <= 0 {
		return "-"
	}
	return fmt.Sprintf("%s / %s (%s); the operator %s", secs(r.PlaneCPU), secs(r.FluxAlonePlane()), ratio(r.PlaneCPU, r.FluxAlonePlane()), secs(r.OperatorCPU))
}

// Write writes r as JSON to path; nothing when path is "".
func Write(path string, r Result) error {
	if path == "" {
		return nil
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Read reads a Result Write wrote.
func Read(path string) (Result, error) {
	var r Result
	b, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	if (r.Fanout == nil) == (r.RealFlux == nil) {
		return r, fmt.Errorf("%s: want exactly one of fanout and realFlux", path)
	}
	return r, nil
}

// ratio is a/b as "1.23x", or "-" when b is 0.
func ratio(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

// secs formats seconds as Go's duration at 0.1 s.
func secs(s float64) string {
	return (time.Duration(s * float64(time.Second))).Round(100 * time.Millisecond).String()
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

// at is seconds at a concurrency of the floor writer, "9.9s (32)"; the seconds alone when the
// concurrency is not known.
func at(s float64, workers int, more ...string) string {
	if workers == 0 {
		return secs(s)
	}
	return fmt.Sprintf("%s (%s)", secs(s), strings.Join(append([]string{fmt.Sprint(workers)}, more...), ", "))
}

// FanoutTable renders fan-out results, one row per run ordered by N, as a Markdown table. The
// floors are the fastest of the writer's settings, the setting in parentheses.
func FanoutTable(rs []Fanout) string {
	rs = append([]Fanout(nil), rs...)
	sort.Slice(rs, func(i, j int) bool { return rs[i].Clusters < rs[j].Clusters })
	var b strings.Builder
	b.WriteString("| N | floor (concurrent writes) | floor with statuses | floor with Flux: written / Ready | operator: written / Ready | over the floor with Flux | over the floor | writes / reconciles per Cluster | CPU to converge: operator / API server | peak RSS: operator / API server | idle writes | status p50 / p99 | machine speed: fixed job's CPU, operator / floor with Flux; CPU stolen |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		mode := "sequential"
		if r.FloorWithStatusesOverlapped {
			mode = "overlapped"
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s / %s | %s / %s | %s / %s | %s / %s | %.2f / %.1f | %s / %s | %s / %s | %d in %s | %.1f ms / %.1f ms | %s |\n",
			r.Clusters, at(r.Floor, r.FloorWorkers), at(r.FloorWithStatuses, r.FloorWithStatusesWorkers, mode),
			at(r.FloorWithFluxFanout, r.FloorWithFluxFanoutWorkers), at(r.FloorWithFluxReady, r.FloorWithFluxReadyWorkers),
			secs(r.Fanout), secs(r.Ready),
			ratio(r.Fanout, r.FloorWithFluxFanout), ratio(r.Ready, r.FloorWithFluxReady),
			ratio(r.Fanout, r.Floor), ratio(r.Ready, r.Floor),
			r.WritesPerCluster, r.ReconcilesPerCluster,
			secs(r.OperatorCPU), secs(r.APIServerCPU),
			mib(r.OperatorPeakRSS), mib(r.APIServerPeakRSS),
			r.IdleWrites, secs(r.IdleWindow), r.StatusP50*1000, r.StatusP99*1000,
			machineSpeed(r.JobCPUms, r.FloorWithFluxJobCPUms, r.StealPercent, r.FloorWithFluxStealPercent))
	}
	return b.String()
}

// FloorSweepTable renders every setting of the floor writer of fan-out results, ordered by N
// and then as run, as a Markdown table; each N's fastest figure of each floor is in bold.
func FloorSweepTable(rs []Fanout) string {
	rs = append([]Fanout(nil), rs...)
	sort.Slice(rs, func(i, j int) bool { return rs[i].Clusters < rs[j].Clusters })
	var b strings.Builder
	b.WriteString("| N | concurrent writes | floor | floor with statuses: sequential / overlapped | floor with Flux: written / Ready |\n")
	b.WriteString("|---|---|---|---|---|\n")
	for _, r := range rs {
		figures := []func(FloorSetting) float64{
			func(s FloorSetting) float64 { return s.Floor },
			func(s FloorSetting) float64 { return s.WithStatusesSequential },
			func(s FloorSetting) float64 { return s.WithStatusesOverlapped },
			func(s FloorSetting) float64 { return s.WithFluxFanout },
			func(s FloorSetting) float64 { return s.WithFluxReady },
		}
		least := make([]float64, len(figures))
		for i, f := range figures {
			for j, s := range r.FloorSweep {
				if v := f(s); j == 0 || v < least[i] {
					least[i] = v
				}
			}
		}
		// The floor with statuses is the least of both modes: only that one is bold.
		withStatuses := min(least[1], least[2])
		for _, s := range r.FloorSweep {
			cell := func(i int, bold bool) string {
				v := figures[i](s)
				if bold && v == least[i] {
					return "**" + secs(v) + "**"
				}
				return secs(v)
			}
			fmt.Fprintf(&b, "| %d | %d | %s | %s / %s | %s / %s |\n", r.Clusters, s.Workers, cell(0, true),
				cell(1, least[1] == withStatuses), cell(2, least[2] == withStatuses), cell(3, true), cell(4, true))
		}
	}
	return b.String()
}

// RealFluxTable renders real-Flux results as a Markdown table.
func RealFluxTable(rs []RealFlux) string {
	rs = append([]RealFlux(nil), rs...)
	sort.Slice(rs, func(i, j int) bool { return rs[i].Clusters < rs[j].Clusters })
	var b strings.Builder
	b.WriteString("| N | workload API servers | Flux alone: every object written / Ready (before; after the operator) | with the operator: every object written / Flux Ready / ClusterAddon Ready | over Flux alone (the mean of before and after): Flux Ready / ClusterAddon Ready (goal 1.10x); ClusterAddon Ready over before / after | the plane's CPU in the phase: with the operator / Flux alone (the mean) (ratio); the operator's part | operator writes per Cluster (goal) | operator's share of each Cluster's time: p50 / of the sum | written -> Ready p50: HelmRelease / Kustomization | HelmReleases per minute | peak RSS: operator / helm-controller / kustomize-controller (Flux alone) | peak RSS of a workload API server and etcd | machine speed: fixed job's CPU with the operator / alone (before; after); CPU stolen |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		goal := "-"
		if r.GeneratedObjects > 0 {
			goal = fmt.Sprint(r.GeneratedObjects + 2)
		}
		alone, ratios, speed := secs(r.FluxAloneWritten)+" / "+secs(r.FluxAloneReady), "", machineSpeed(r.JobCPUms, r.FluxAloneJobCPUms, r.StealPercent, r.FluxAloneStealPercent)
		if r.FluxAloneAfterReady > 0 {
			alone += "; " + secs(r.FluxAloneAfterWritten) + " / " + secs(r.FluxAloneAfterReady)
			ratios = "; " + ratio(r.AddonsReady, r.FluxAloneReady) + " / " + ratio(r.AddonsReady, r.FluxAloneAfterReady)
			speed += "; after: " + machineSpeed(r.JobCPUms, r.FluxAloneAfterJobCPUms, r.StealPercent, r.FluxAloneAfterStealPercent)
		}
		fmt.Fprintf(&b, "| %d | %d | %s | %s / %s / %s | %s / %s%s | %s | %.3f (%s) | %s (%.0f%%) | %s / %s | %.0f | %s / %s (%s) / %s (%s) | %s | %s |\n",
			r.Clusters, max(r.Workloads, 1), alone,
			secs(r.AllWritten), secs(r.FluxReady), secs(r.AddonsReady),
			ratio(r.FluxReady, r.FluxAlone()), ratio(r.AddonsReady, r.FluxAlone()), ratios, r.planeCPU(),
			r.WritesPerCluster, goal, secs(r.OperatorShareP50), r.OperatorSharePercent,
			secs(r.HelmReleaseReadyP50), secs(r.KustomizationP50), r.HelmReleasesPerMin,
			mib(r.PeakRSS["operator"]), mib(r.PeakRSS["helm-controller"]), mib(r.FluxAlonePeakRSS["helm-controller"]),
			mib(r.PeakRSS["kustomize-controller"]), mib(r.FluxAlonePeakRSS["kustomize-controller"]), mib(r.WorkloadServerPeakRSS),
			speed)
	}
	return b.String()
}

// machineSpeed is a table's machine speed column: the fixed job's CPU time with the operator and
// in the phase it is compared with (in milliseconds), their ratio, and the share of CPU time
// stolen in each; "-" when the run did not measure it.
func machineSpeed(jobMS, baseMS, steal, baseSteal float64) string {
	if jobMS <= 0 || baseMS <= 0 {
		return "-"
	}
	stolen := func(p float64) string {
		if p < 0 {
			return "?"
		}
		return fmt.Sprintf("%.1f%%", p)
	}
	return fmt.Sprintf("%.2f / %.2f ms (%s); %s / %s", jobMS, baseMS, ratio(jobMS, baseMS), stolen(steal), stolen(baseSteal))
}

// Replace returns doc with the text between the lines "<!-- BEGIN bench-report: name -->" and
// "<!-- END bench-report: name -->" replaced by body.
func Replace(doc, name, body string) (string, error) {
	begin, end := "<!-- BEGIN bench-report: "+name+" -->", "<!-- END bench-report: "+name+" -->"
	i := strings.Index(doc, begin)
	j := strings.Index(doc, end)
	if i < 0 || j < i {
		return "", fmt.Errorf("no %q ... %q section", begin, end)
	}
	return doc[:i+len(begin)] + "\n" + strings.TrimSpace(body) + "\n" + doc[j:], nil
}
