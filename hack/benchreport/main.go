// Command benchreport, run by `make bench-report`, runs the benchmarks of test/bench (the
// fan-out against the floors at N = 100 and 1,000, and 10,000 with -with-10k; the real-Flux
// benchmark, Flux alone beside the operator driving Flux, at N = 1,000) and the fault-injection suite, each once, and writes what they printed into the
// tables of docs/performance.md and docs/reliability.md (between their "bench-report" markers),
// headed by the commit, the date and the machine they were measured on. The figures in those
// documents are therefore the output of the last run at the commit they name.
//
// It refuses a working tree with uncommitted changes to tracked files (-allow-dirty measures it
// anyway and says "-dirty" after the commit): a figure names the code it measured.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/clusterstack-io/clusterstack-operator/test/bench/benchresult"
)

func main() {
	var (
		clusters     = flag.String("clusters", "100,1000", "the fan-out benchmark's N, comma-separated; empty: leave the fan-out table as it is")
		with10k      = flag.Bool("with-10k", false, "also N = 10,000 (about two hours more on 2 cores: its three floor settings take 20 to 30 minutes each)")
		fluxClusters = flag.Int("flux-clusters", 1000, "N of the real-Flux benchmark")
		skipFlux     = flag.Bool("skip-flux", false, "leave the real-Flux table as it is")
		skipFaults   = flag.Bool("skip-faults", false, "leave the reliability table as it is")
		allowDirty   = flag.Bool("allow-dirty", false, "measure a working tree with uncommitted changes")
		idle         = flag.String("idle", "1m", "the fan-out benchmark's idle window")
		cgroup       = flag.Bool("memory-cgroup", true, "run the operator in a 300 MiB memory cgroup (hack/memory-cgroup.sh), as in a container with that limit")
		floorWorkers = flag.String("floor-workers", "", "the floor writer's concurrency settings of the fan-out runs (BENCH_FLOOR_WORKERS, named in the table's text); empty: the benchmark's default, 8,32,128")
	)
	flag.Parse()
	if err := run(*clusters, *with10k, *fluxClusters, *skipFlux, *skipFaults, *allowDirty, *idle, *cgroup, *floorWorkers); err != nil {
		fmt.Fprintln(os.Stderr, "bench-report:", err)
		os.Exit(1)
	}
}

func run(clusters string, with10k bool, fluxClusters int, skipFlux, skipFaults, allowDirty bool, idle string, cgroup bool, floorWorkers string) error {
	root, err := gitOut("rev-parse", "--show-toplevel")
	if err != nil {
		return err
	}
	if err := os.Chdir(root); err != nil {
		return err
	}
	commit, err := gitOut("rev-parse", "--short", "HEAD")
	if err != nil {
		return err
	}
	if dirty, err := gitOut("status", "--porcelain", "--untracked-files=no"); err != nil {
		return err
	} else if dirty != "" {
		if !allowDirty {
			return fmt.Errorf("uncommitted changes to tracked files (commit first, or -allow-dirty):\n%s", dirty)
		}
		commit += "-dirty"
	}
	out, err := os.MkdirTemp("", "bench-report-")
	if err != nil {
		return err
	}
	fmt.Printf("bench-report: results and logs in %s\n", out)
	header := fmt.Sprintf("Measured at commit %#q on %s by `make bench-report`, on %s.", commit, time.Now().UTC().Format("2006-01-02"), machine())

	var ns []string
	if strings.TrimSpace(clusters) != "" {
		ns = strings.Split(clusters, ",")
	}
	if with10k {
		ns = append(ns, "10000")
	}
	var fanouts []benchresult.Fanout
	for _, n := range ns {
		n = strings.TrimSpace(n)
		if _, err := strconv.Atoi(n); err != nil {
			return fmt.Errorf("-clusters: %q is not a number", n)
		}
		path := filepath.Join(out, "fanout-"+n+".json")
		env := []string{"BENCH_CLUSTERS=" + n, "BENCH_IDLE=" + idle, "BENCH_RESULT=" + path}
		if floorWorkers != "" {
			env = append(env, "BENCH_FLOOR_WORKERS="+floorWorkers)
		}
		if n == "10000" {
			env = append(env, "BENCH_SAMPLES=100")
		}
		if cgroup {
			env = append(env, "BENCH_MANAGER="+filepath.Join(root, "hack", "memory-cgroup.sh"))
		}
		if err := goTest(out, "fanout-"+n, env, "./test/bench/", "-run", "^$", "-bench", "^BenchmarkIdleWritesAndStatusLatency$", "-benchtime", "1x", "-timeout", "180m"); err != nil {
			return err
		}
		r, err := benchresult.Read(path)
		if err != nil {
			return err
		}
		fanouts = append(fanouts, *r.Fanout)
	}
	if len(fanouts) > 0 {
		command := "BENCH_CLUSTERS=N BENCH_IDLE=" + idle + " make bench"
		if floorWorkers != "" {
			command = "BENCH_FLOOR_WORKERS=" + floorWorkers + " " + command
		}
		settings := "Each row is one run of `" + command + "`"
		if cgroup {
			settings += " with the operator in a 300 MiB memory cgroup (`BENCH_MANAGER=$PWD/hack/memory-cgroup.sh`)"
		}
		settings += ". Ratios are against the floors measured in the same run, against this writer; each floor is the fastest of the writer's concurrency settings (in parentheses), all of which follow."
		body := header + "\n\n" + settings + "\n\n" + benchresult.FanoutTable(fanouts) + "\nThe floor writer at each concurrency setting (" + fanouts[0].FloorVerbs + "); the fastest of each floor in bold:\n\n" + benchresult.FloorSweepTable(fanouts)
		if err := replaceIn("docs/performance.md", "performance", body); err != nil {
			return err
		}
	}

	if !skipFlux {
		path := filepath.Join(out, "realflux.json")
		env := []string{"BENCH_FLUX_CLUSTERS=" + strconv.Itoa(fluxClusters), "BENCH_RESULT=" + path}
		if cgroup {
			env = append(env, "BENCH_MANAGER="+filepath.Join(root, "hack", "memory-cgroup.sh"))
		}
		if err := goTest(out, "realflux", env, "./test/bench/", "-run", "^$", "-bench", "^BenchmarkRealFlux$", "-benchtime", "1x", "-timeout", "180m"); err != nil {
			return err
		}
		r, err := benchresult.Read(path)
		if err != nil {
			return err
		}
		run := "One run of `BENCH_FLUX_CLUSTERS=" + strconv.Itoa(fluxClusters) + " make bench-flux`"
		if w := os.Getenv("BENCH_FLUX_WORKLOADS"); w != "" {
			run = "One run of `BENCH_FLUX_CLUSTERS=" + strconv.Itoa(fluxClusters) + " BENCH_FLUX_WORKLOADS=" + w + " make bench-flux`"
		}
		if cgroup {
			run += " with the operator in a 300 MiB memory cgroup"
		}
		phases := "Flux alone, then the operator driving Flux, "
		if r.RealFlux.FluxAloneAfterReady > 0 {
			phases = "Flux alone, the operator driving Flux, then Flux alone again (the operator compared with the mean of the two), "
		}
		body := header + "\n\n" + run + ": " + phases + strconv.Itoa(r.RealFlux.Clusters) + " Clusters over " +
			strconv.Itoa(r.RealFlux.Workloads) + " workload API servers; Flux flags: " + r.RealFlux.FluxFlags + ".\n\n" + benchresult.RealFluxTable([]benchresult.RealFlux{*r.RealFlux})
		if err := replaceIn("docs/performance.md", "real-flux", body); err != nil {
			return err
		}
	}

	if !skipFaults {
		path := filepath.Join(out, "faults.md")
		if err := goTest(out, "faults", []string{"FAULTS_REPORT=" + path}, "./test/faults/", "-count=1", "-timeout", "80m", "-v"); err != nil {
			return err
		}
		report, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := replaceIn("docs/reliability.md", "reliability", header+"\n\nOne run of `make test-faults`.\n\n"+string(report)); err != nil {
			return err
		}
	}
	fmt.Println("bench-report: docs/performance.md and docs/reliability.md written; commit them with the code they measured")
	return nil
}

// goTest runs go test with args and env added, its output to the terminal and to <out>/<name>.log.
func goTest(out, name string, env []string, args ...string) error {
	log, err := os.Create(filepath.Join(out, name+".log"))
	if err != nil {
		return err
	}
	defer func() { _ = log.Close() }()
	fmt.Printf("bench-report: %s: %s go test %s\n", name, strings.Join(env, " "), strings.Join(args, " "))
	cmd := exec.Command("go", append([]string{"test"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	w := io.MultiWriter(os.Stdout, log)
	cmd.Stdout, cmd.Stderr = w, w
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s failed after %s (log %s): %w", name, time.Since(start).Round(time.Second), log.Name(), err)
	}
	fmt.Printf("bench-report: %s done in %s\n", name, time.Since(start).Round(time.Second))
	return nil
}

func replaceIn(path, section, body string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	doc, err := benchresult.Replace(string(b), section, body)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, []byte(doc), 0o644)
}

func gitOut(args ...string) (string, error) {
	out, err := exec.Command("git", args...).Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

// machine names the CPU, the cores and the memory, e.g. "Intel(R) Xeon(R) Processor @ 2.50GHz,
// 2 cores, 24 GiB, go1.26.8".
func machine() string {
	cpu := "unknown CPU"
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
		_ = f.Close()
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemTotal:" {
				if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil {
					mem = fmt.Sprintf(", %.0f GiB", float64(kb)/(1<<20))
				}
			}
		}
	}
	return fmt.Sprintf("%s, %d cores%s, %s", cpu, runtime.NumCPU(), mem, runtime.Version())
}
