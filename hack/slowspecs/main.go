// Command slowspecs prints the slowest specs of Ginkgo JSON reports (`make test` runs it on the
// end-to-end and fault suites' reports), so that a suite's growth is visible in every run.
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
}

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
				specs = append(specs, spec{suite: suite, name: name, state: s.State.String(), took: s.RunTime})
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
	return b.String()
}
