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
	// Last, the failed spec with where and what: the tail of a CI log is what is kept.
	want := "1 failed:\n- e2e A slow  (failed after 2m0s)\n    /src/test/e2e/gitops_test.go:412\n    Expected\n        <int>: 2\n    to be <= 1\n"
	if !strings.HasSuffix(out, want) {
		t.Fatalf("want the output to end with the failure:\n%s\ngot:\n%s", want, out)
	}
	if out := format(specs[1:], suites, 2); strings.Contains(out, "failed:") {
		t.Fatalf("no failures section without a failed spec:\n%s", out)
	}
}
