package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/types"
)

func TestSlowestFirst(t *testing.T) {
	dir := t.TempDir()
	report := []types.Report{{RunTime: 3 * time.Minute, SpecReports: types.SpecReports{
		{LeafNodeType: types.NodeTypeIt, LeafNodeText: "quick", ContainerHierarchyTexts: []string{"A"}, State: types.SpecStatePassed, RunTime: time.Second},
		{LeafNodeType: types.NodeTypeIt, LeafNodeText: "slow", ContainerHierarchyTexts: []string{"A"}, State: types.SpecStateFailed, RunTime: 2 * time.Minute,
			Failure: types.Failure{Message: "Expected\n    <int>: 2\nto be <= 1", FailureNodeType: types.NodeTypeIt,
				Location: types.CodeLocation{FileName: "/src/test/e2e/gitops_test.go", LineNumber: 412}}},
		{LeafNodeType: types.NodeTypeBeforeAll, ContainerHierarchyTexts: []string{"B"}, State: types.SpecStatePassed, RunTime: 30 * time.Second},
		{LeafNodeType: types.NodeTypeIt, LeafNodeText: "skipped", State: types.SpecStateSkipped, RunTime: time.Hour},
	}}}
	b, err := json.Marshal(report)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "e2e.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	specs, suites, err := read([]string{path, filepath.Join(dir, "missing.json")})
	if err != nil {
		t.Fatal(err)
	}
	out := format(specs, suites, 2)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 4 || !strings.Contains(lines[0], "suite e2e: 3m0s") ||
		!strings.Contains(lines[2], "A slow") || !strings.Contains(lines[2], "failed") ||
		!strings.Contains(lines[3], "B [BeforeAll]") {
		t.Fatalf("want the suite's time, then the two slowest (a failed spec, a BeforeAll), no skipped spec:\n%s", out)
	}
	// Then the failed spec with where and what, and last a line for it: the tail of a CI log is
	// what is kept.
	want := "1 failed:\n- e2e A slow  (failed after 2m0s)\n    /src/test/e2e/gitops_test.go:412\n    Expected\n        <int>: 2\n    to be <= 1\n" +
		"failed, in short (1):\n- e2e A slow  (failed after 2m0s) at /src/test/e2e/gitops_test.go:412\n"
	if !strings.HasSuffix(out, want) {
		t.Fatalf("want the output to end with the failure:\n%s\ngot:\n%s", want, out)
	}
	if out := format(specs[1:], suites, 2); strings.Contains(out, "failed:") {
		t.Fatalf("no failures section without a failed spec:\n%s", out)
	}
}

func TestGoTestFailures(t *testing.T) {
	log := `--- FAIL: TestIdleWrites (312.50s)
    idle_test.go:90: every ClusterAddon Ready: 19 of 20 ClusterAddons Ready
    idle_test.go:91: second line
--- FAIL: TestFaults (1500.00s)
FAIL
FAIL	github.com/clusterstack-io/clusterstack-operator/test/bench	313.1s
ok  	github.com/clusterstack-io/clusterstack-operator/test/faults	1500.2s
panic: test timed out after 30m0s
	running tests:
		TestPlane (30m0s)

goroutine 1 [running]:
FAIL	github.com/clusterstack-io/clusterstack-operator/bootstrap/plane	1800.0s
`
	got, err := goTestFailures("faults", strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	// TestFaults is a Ginkgo suite's function: it printed nothing of its own, its report has the specs.
	if len(got) != 2 {
		t.Fatalf("want TestIdleWrites and the panic, got %+v", got)
	}
	if got[0].name != "TestIdleWrites" || got[0].took != 312500*time.Millisecond ||
		got[0].failure != "idle_test.go:90: every ClusterAddon Ready: 19 of 20 ClusterAddons Ready\nidle_test.go:91: second line" {
		t.Fatalf("want TestIdleWrites with its two lines, got %+v", got[0])
	}
	if got[1].state != "panicked" || !strings.HasPrefix(got[1].failure, "panic: test timed out after 30m0s\nrunning tests:\nTestPlane (30m0s)") {
		t.Fatalf("want the panic with the tests it names, got %+v", got[1])
	}
	out := format(got, map[string]time.Duration{}, 5)
	if !strings.HasPrefix(out, "the 0 slowest specs and set-up nodes:\n2 failed:\n") {
		t.Fatalf("want a Go test's failure among the failures only, not among the slowest specs:\n%s", out)
	}
	if !strings.HasSuffix(out, "failed, in short (2):\n"+
		"- faults TestIdleWrites  (failed after 5m12.5s) at idle_test.go:90: every ClusterAddon Ready: 19 of 20 ClusterAddons Ready\n"+
		"- faults (the test binary)  (panicked after 0s) at panic: test timed out after 30m0s\n") {
		t.Fatalf("want a line for each failure last, got:\n%s", out)
	}
}
