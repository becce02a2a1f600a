// Command slowspecs prints the slowest specs of Ginkgo JSON reports (`make test` runs it on the
// end-to-end, fault and local plane suites' reports), so that a suite's growth is visible in
// every run; then every spec that failed with its failure's message and location, and every
// failed test of the `go test` logs given with -go-log (the benchmark package's tests are plain
// Go tests); and last a line for each failure, so that the tail of a long CI log names them all.
//
//	go run ./hack/slowspecs [-n 20] [-go-log LOG]... REPORT.json...
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2/types"
)

// spec is one spec or set-up node of a report, with its run time.
type spec struct {
	suite, name, state string
	took               time.Duration
	// failure is the failure's location and message when the spec failed, panicked, was
	// interrupted or timed out; empty otherwise.
	failure string
	// goTest marks a failed Go test of a `go test` output: listed among the failures, not among
	// the slowest specs (a passed Go test's time is not read).
	goTest bool
}

// maxFailureLen bounds how much of one failure's message is printed; maxWhereLen, the first line
// of it in the closing list.
const (
	maxFailureLen = 2000
	maxWhereLen   = 240
)

func main() {
	n := flag.Int("n", 20, "how many specs to print")
	var goLogs []string
	flag.Func("go-log", "a `go test` output whose failed tests to list (repeatable)", func(p string) error {
		goLogs = append(goLogs, p)
		return nil
	})
	flag.Parse()
	specs, suites, err := read(flag.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "slowspecs:", err)
		os.Exit(1)
	}
	failed, err := readGoLogs(goLogs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "slowspecs:", err)
		os.Exit(1)
	}
	specs = append(specs, failed...)
	fmt.Print(format(specs, suites, *n))
}

// readGoLogs returns the failures of the `go test` outputs at paths (goTestFailures), each
// labelled with its file's name. A missing output is skipped, as read skips a missing report.
func readGoLogs(paths []string) ([]spec, error) {
	var out []spec
	for _, p := range paths {
		f, err := os.Open(p)
		if os.IsNotExist(err) {
			fmt.Fprintf(os.Stderr, "slowspecs: no log %s\n", p)
			continue
		}
		if err != nil {
			return nil, err
		}
		failed, err := goTestFailures(strings.TrimSuffix(filepath.Base(p), filepath.Ext(p)), f)
		_ = f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, failed...)
	}
	return out, nil
}

// maxGoFailureLines bounds how many lines of a failed Go test's output are kept.
const maxGoFailureLines = 12

// goTestFailures returns what a `go test` output (without -v) reports as failed, labelled with
// suite: each test with the lines it printed under its "--- FAIL:" line, and a panic (a test
// binary's timeout is one) with the lines that follow it. A Ginkgo suite's test function, which
// prints nothing under its "--- FAIL:" line (its report lists the specs), is left out.
func goTestFailures(suite string, r io.Reader) ([]spec, error) {
	var out []spec
	var cur *spec
	var lines []string
	flush := func() {
		if cur != nil && len(lines) > 0 {
			cur.failure = strings.Join(lines, "\n")
			out = append(out, *cur)
		}
		cur, lines = nil, nil
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(trimmed, "--- FAIL: "); ok {
			flush()
			name, took, _ := strings.Cut(rest, " (")
			d, _ := time.ParseDuration(strings.TrimSuffix(took, ")"))
			cur = &spec{suite: suite, name: name, state: "failed", took: d, goTest: true}
			continue
		}
		if strings.HasPrefix(line, "panic: ") {
			flush()
			cur = &spec{suite: suite, name: "(the test binary)", state: "panicked", goTest: true}
			lines = append(lines, trimmed)
			continue
		}
		if cur == nil {
			continue
		}
		// A test's messages are indented under its line; a panic's stack is not.
		if cur.state != "panicked" && !strings.HasPrefix(line, "    ") {
			flush()
			continue
		}
		if len(lines) < maxGoFailureLines && trimmed != "" {
			lines = append(lines, trimmed)
		}
	}
	flush()
	return out, sc.Err()
}

// read returns every spec and set-up node (BeforeSuite, BeforeAll, AfterAll, ...) of the reports,
// and each suite's run time. A missing report is skipped: the suite did not run or did not end.
func read(paths []string) ([]spec, map[string]time.Duration, error) {
	var specs []spec
	suites := map[string]time.Duration{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if os.IsNotExist(err) {
			fmt.Fprintf(os.Stderr, "slowspecs: no report %s (the suite did not finish)\n", p)
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		var reports []types.Report
		if err := json.Unmarshal(b, &reports); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", p, err)
		}
		for _, r := range reports {
			suite := strings.TrimSuffix(filepath.Base(p), ".json")
			suites[suite] += r.RunTime
			for _, s := range r.SpecReports {
				if s.State == types.SpecStateSkipped || s.State == types.SpecStatePending {
					continue
				}
				name := s.FullText()
				if s.LeafNodeType != types.NodeTypeIt {
					name = strings.TrimSpace(strings.Join(s.ContainerHierarchyTexts, " ") + " [" + s.LeafNodeType.String() + "]")
				}
				sp := spec{suite: suite, name: name, state: s.State.String(), took: s.RunTime}
				if s.State.Is(types.SpecStateFailureStates) {
					sp.failure = describeFailure(s.Failure)
				}
				specs = append(specs, sp)
			}
		}
	}
	return specs, suites, nil
}

// format lists the n slowest specs, slowest first, after each suite's total.
func format(specs []spec, suites map[string]time.Duration, n int) string {
	sort.SliceStable(specs, func(i, j int) bool { return specs[i].took > specs[j].took })
	var b strings.Builder
	names := make([]string, 0, len(suites))
	for s := range suites {
		names = append(names, s)
	}
	sort.Strings(names)
	for _, s := range names {
		fmt.Fprintf(&b, "suite %s: %s\n", s, suites[s].Round(time.Second))
	}
	var ginkgo []spec
	for _, s := range specs {
		if !s.goTest {
			ginkgo = append(ginkgo, s)
		}
	}
	fmt.Fprintf(&b, "the %d slowest specs and set-up nodes:\n", min(n, len(ginkgo)))
	for i, s := range ginkgo {
		if i == n {
			break
		}
		fmt.Fprintf(&b, "%3d. %7s  %-6s %s  (%s)\n", i+1, s.took.Round(100*time.Millisecond), s.suite, s.name, s.state)
	}
	var failed []spec
	for _, s := range specs {
		if s.failure != "" {
			failed = append(failed, s)
		}
	}
	if len(failed) == 0 {
		return b.String()
	}
	fmt.Fprintf(&b, "%d failed:\n", len(failed))
	for _, s := range failed {
		fmt.Fprintf(&b, "- %s %s  (%s after %s)\n%s\n", s.suite, s.name, s.state, s.took.Round(100*time.Millisecond), indent(s.failure))
	}
	// A line each, last: a failure's message may be long, and only the log's tail may be read.
	fmt.Fprintf(&b, "failed, in short (%d):\n", len(failed))
	for _, s := range failed {
		where, _, _ := strings.Cut(s.failure, "\n")
		if len(where) > maxWhereLen {
			where = where[:maxWhereLen] + " [...]"
		}
		fmt.Fprintf(&b, "- %s %s  (%s after %s) at %s\n", s.suite, s.name, s.state, s.took.Round(100*time.Millisecond), where)
	}
	return b.String()
}

// describeFailure is where a spec failed and what it said, the message cut to maxFailureLen.
func describeFailure(f types.Failure) string {
	msg := strings.TrimSpace(f.Message)
	if len(msg) > maxFailureLen {
		msg = msg[:maxFailureLen] + " [...]"
	}
	where := f.Location.String()
	if f.FailureNodeType != types.NodeTypeIt && f.FailureNodeType != types.NodeTypeInvalid {
		where += " (in " + f.FailureNodeType.String() + ")"
	}
	if msg == "" {
		return where
	}
	return where + "\n" + msg
}

// indent prefixes every line of s with four spaces.
func indent(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}
