package faults

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// scenarioRow is one line of the reliability table. Every count is of something the scenario
// asserted.
type scenarioRow struct {
	Scenario string
	Runs     int
	// Injected says what was done and what was measured of it.
	Injected string
	// Converge is how long convergence took (asserted: it converges within a bound).
	Converge string
	// Objects and HelmRevisions count what the conservation checks compared (fleet.check).
	Objects, HelmRevisions int
	// Status counts the status samples and the Degraded ones whose timing and message
	// expectHonest checked.
	Status honestyCheck
	// Took is the scenario's wall time.
	Took time.Duration
}

// add counts what a check looked at.
func (r *scenarioRow) add(c checked) {
	r.Objects, r.HelmRevisions = r.Objects+c.objects, r.HelmRevisions+c.helmRevisions
}

// scenarioReport is the reliability table the suite writes (FAULTS_REPORT) and prints.
type scenarioReport struct {
	mu    sync.Mutex
	rows  []scenarioRow
	start time.Time
	// fleet and later are the fleet's sizes in the first scenario and in the others.
	fleet, later int
}

func (r *scenarioReport) Add(row scenarioRow) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rows = append(r.rows, row)
}

// Markdown is the report: what ran where (commit, date, machine, seed, fleet, plane, wall time),
// then one row per scenario.
func (r *scenarioReport) Markdown() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "Fault-injection suite (`test/faults`) at commit %s, %s.\n\n", commit(), time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "- machine: %s\n", machine())
	fmt.Fprintf(&b, "- seed %d (`FAULTS_SEED=%d` replays its random choices)\n", seed, seed)
	fmt.Fprintf(&b, "- fleet: %d Clusters in scenario 1, %d in the others (`FAULTS_CLUSTERS`, `FAULTS_LATER_CLUSTERS`)\n", r.fleet, r.later)
	fmt.Fprintf(&b, "- plane: %s\n", planeKind())
	fmt.Fprintf(&b, "- wall time: %s for the suite (plane start and fleet creation included)\n\n", time.Since(r.start).Round(time.Second))
	b.WriteString("| scenario | runs | injected | time to converge | objects checked | Helm revisions checked | status samples checked | Degraded samples checked | scenario time |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, row := range r.rows {
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %d | %d | %d | %d | %s |\n", row.Scenario, row.Runs, row.Injected, row.Converge,
			row.Objects, row.HelmRevisions, row.Status.samples, row.Status.degraded, row.Took.Round(time.Second))
	}
	return b.String()
}

func (r *scenarioReport) Print(w io.Writer) {
	fmt.Fprintf(w, "\nReliability (fault suite):\n%s\n", r.Markdown())
}

// commit is the checkout's short commit, with "-dirty" when its tree has changes.
func commit() string {
	out, err := exec.Command("git", "-C", repoRoot, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	status, err := exec.Command("git", "-C", repoRoot, "status", "--porcelain", "--untracked-files=no").Output()
	if err != nil || len(strings.TrimSpace(string(status))) > 0 {
		c += "-dirty"
	}
	return c
}

// machine describes the CPU (model and cores) and memory from /proc.
func machine() string {
	model, cores := "unknown CPU", 0
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			switch k = strings.TrimSpace(k); {
			case !ok:
			case k == "processor":
				cores++
			case k == "model name" && model == "unknown CPU":
				model = strings.TrimSpace(v)
			}
		}
		_ = f.Close()
	}
	if cores == 0 {
		cores = runtime.NumCPU()
	}
	mem := "unknown memory"
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
				if kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64); err == nil {
					mem = fmt.Sprintf("%.1f GiB memory", kb/(1<<20))
				}
			}
		}
		_ = f.Close()
	}
	return fmt.Sprintf("%s, %d cores, %s", model, cores, mem)
}
