package upgradediff

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/clusterstack-io/clusterstack-operator/internal/render"
)

// workerEnv makes this test binary serve one request as the worker (TestMain), the way the
// manager binary does with WorkerArg.
const workerEnv = "UPGRADEDIFF_TEST_WORKER"

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) == "1" {
		if err := ServeWorker(os.Stdin, os.Stdout); err != nil {
			os.Exit(3)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func testWorker(timeout time.Duration, memory uint64) Isolated {
	return Isolated{Path: os.Args[0], Args: []string{"-test.run=^$"}, Env: []string{workerEnv + "=1"}, Timeout: timeout, Memory: memory}
}

func workerRequest(t *testing.T, from, to files) WorkerRequest {
	t.Helper()
	return WorkerRequest{
		From:     WorkerRelease{Release: render.Release{Name: "test-demo-1-36-v1", Version: "v1", KubernetesVersion: "v1.36.3"}, Dir: writeStackDir(t, from)},
		To:       WorkerRelease{Release: render.Release{Name: "test-demo-1-36-v2", Version: "v2", KubernetesVersion: "v1.36.3"}, Dir: writeStackDir(t, to)},
		Clusters: []Cluster{alpha},
		Markdown: MarkdownOptions{Budget: 2000, FullDiff: "the file `x.md` of this branch"},
	}
}

// The worker's answer is what the operator's process would compute itself, numbers included
// (the Cluster's port is an int64 on both sides of the pipe).
func TestIsolatedComputesWhatTheProcessWould(t *testing.T) {
	to := baseStack.with(cniWithRBAC).with(infraWithLabel)
	req := workerRequest(t, baseStack, to)
	got, err := testWorker(0, 0).Compute(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	desc, full, truncated, err := ForProposal(Input{
		From: release(t, "v1", baseStack), To: release(t, "v2", to), Clusters: []Cluster{alpha},
	}, req.Markdown)
	if err != nil {
		t.Fatal(err)
	}
	if got.Description != desc || got.Truncated != truncated || !truncated || got.Full != full {
		t.Fatalf("the worker answered\n%s\n(truncated %v)\nthe process computes\n%s\n(truncated %v)", got.Description, got.Truncated, desc, truncated)
	}
	if !strings.Contains(full, "alpha.example.com") || !strings.Contains(full, "ClusterRole") {
		t.Fatalf("the full diff lacks the endpoint host or the ClusterRole:\n%s", full)
	}
}

// A chart whose templates allocate without end costs the worker, which fails and says why.
func TestIsolatedBoundsMemory(t *testing.T) {
	hog := baseStack.with(files{"cluster-addon/cni/templates/hog.yaml": "data: {{ range until 200000000 }}x{{ end }}\n"})
	// 512 MiB: the race detector's own memory (this test binary is the worker) fits below it.
	_, err := testWorker(time.Minute, 512<<20).Compute(context.Background(), workerRequest(t, baseStack, hog))
	if !errors.Is(err, ErrWorker) || !strings.Contains(err.Error(), "more than 512 MiB of memory") {
		t.Fatalf("want the memory limit named, got %v", err)
	}
}

// A chart whose templates loop without end is stopped at the deadline.
func TestIsolatedBoundsTime(t *testing.T) {
	spin := baseStack.with(files{"cluster-addon/cni/templates/spin.yaml": "{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}\n"})
	start := time.Now()
	_, err := testWorker(3*time.Second, 0).Compute(context.Background(), workerRequest(t, baseStack, spin))
	named := err != nil && (strings.Contains(err.Error(), "longer than 3s") || strings.Contains(err.Error(), "CPU seconds"))
	if !errors.Is(err, ErrWorker) || !named {
		t.Fatalf("want the time limit named, got %v", err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("the worker ran for %s, its limit is 3s", d)
	}
}

// A stack that does not load is an answer that names the release, not a crash.
func TestIsolatedReportsAStackThatDoesNotLoad(t *testing.T) {
	req := workerRequest(t, baseStack, baseStack)
	req.To.Dir = t.TempDir()
	_, err := testWorker(0, 0).Compute(context.Background(), req)
	if !errors.Is(err, ErrWorker) || !strings.Contains(err.Error(), "test-demo-1-36-v2") {
		t.Fatalf("want the release named, got %v", err)
	}
}
