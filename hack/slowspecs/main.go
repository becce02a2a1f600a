// Command slowspecs prints the slowest specs of Ginkgo JSON reports (`make test` runs it on the
// end-to-end and fault suites' reports), so that a suite's growth is visible in every run, and
// then every spec that failed with its failure's message and location: printed last, so that the
// tail of a long CI log says what failed.
//
//	go run ./hack/slowspecs [-n 20] REPORT.json...
package main

import (
	"encoding/json"
	"flag"
	"fmt"
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
}

// maxFailureLen bounds how much of one failure's message is printed.
const maxFailureLen = 2000

func main() {
	n := flag.Int("n", 20, "how many specs to print")
	flag.Parse()
	specs, suites, err := read(flag.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "slowspecs:", err)
		os.Exit(1)
	}
	fmt.Print(format(specs, suites, *n))
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
	fmt.Fprintf(&b, "the %d slowest specs and set-up nodes:\n", min(n, len(specs)))
	for i, s := range specs {
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
