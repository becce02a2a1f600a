package ocistack_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/clusterstack-io/clusterstack-operator/bootstrap/registry"
	"github.com/clusterstack-io/clusterstack-operator/internal/ocistack"
	"github.com/clusterstack-io/clusterstack-operator/internal/ocistack/ocitest"
)

func hostile(t *testing.T, r *ocitest.Registry) ocistack.Target {
	t.Helper()
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return ocistack.Target{URL: r.URL("stacks/aws-base"), Insecure: true}
}

// allocated runs f and returns the bytes it allocated (all goroutines, so an upper bound).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// The bound on what reading a hostile answer may allocate: a few times MaxMetadataBytes, far
// below what the registries below offer (40 and 64 MiB).
const allocBound = 16 << 20

func TestHugeTagListIsRefusedWithinBounds(t *testing.T) {
	r := &ocitest.Registry{Mode: ocitest.HugeTagList}
	tgt := hostile(t, r)
	var err error
	alloc := allocated(func() { _, err = ocistack.Tags(context.Background(), tgt, 1000) })
	if err == nil {
		t.Fatal("Tags read a 40 MiB tag list")
	}
	if !strings.Contains(err.Error(), "too large") || !strings.Contains(err.Error(), "1048576 bytes") {
		t.Errorf("error does not say the list is too large: %v", err)
	}
	if alloc > allocBound {
		t.Errorf("listing allocated %d bytes, more than %d", alloc, allocBound)
	}
	t.Logf("error: %v; allocated %d bytes; the registry wrote %d", err, alloc, r.Served.Load())
}

func TestHugeManifestIsRefusedWithinBounds(t *testing.T) {
	r := &ocitest.Registry{Mode: ocitest.HugeManifest}
	tgt := hostile(t, r)
	var err error
	alloc := allocated(func() { _, err = ocistack.Inspect(context.Background(), tgt, "aws-base-1-36-v1") })
	if err == nil || !strings.Contains(err.Error(), "exceeds") {
		t.Fatalf("Inspect of a 64 MiB manifest = %v, want an error saying it exceeds the limit", err)
	}
	if alloc > allocBound {
		t.Errorf("Inspect allocated %d bytes, more than %d", alloc, allocBound)
	}
	t.Logf("error: %v; allocated %d bytes", err, alloc)
}

func TestSlowStreamEndsWithTheCallersDeadline(t *testing.T) {
	r := &ocitest.Registry{Mode: ocitest.SlowStream, SlowEvery: time.Second}
	tgt := hostile(t, r)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err := ocistack.Inspect(ctx, tgt, "aws-base-1-36-v1")
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Inspect of a manifest sent a byte a second = %v, want the deadline exceeded", err)
	}
}

func TestMirrorRefusesLayersThatDoNotMatchTheirDigests(t *testing.T) {
	r := &ocitest.Registry{Mode: ocitest.BadLayerDigest}
	src := hostile(t, r)
	dst := startRegistry(t, registry.Options{})
	to := target(dst, "mirror/aws-base")
	_, err := ocistack.Mirror(context.Background(), src, to, "aws-base-1-36-v1")
	if err == nil || !strings.Contains(err.Error(), "digest") {
		t.Fatalf("Mirror of a layer whose bytes do not match its digest = %v, want a digest mismatch", err)
	}
	if _, err := ocistack.Inspect(context.Background(), to, "aws-base-1-36-v1"); err == nil {
		t.Fatal("the mirror has the tag although its layer did not match")
	}
}

func TestMirrorRefusesALayerLargerThanAReleaseBeforeReadingIt(t *testing.T) {
	r := &ocitest.Registry{Mode: ocitest.HugeLayer}
	src := hostile(t, r)
	dst := startRegistry(t, registry.Options{})
	_, err := ocistack.Mirror(context.Background(), src, target(dst, "mirror/aws-base"), "aws-base-1-36-v1")
	if err == nil || !strings.Contains(err.Error(), "a release may hold") {
		t.Fatalf("Mirror of a manifest announcing a %d-byte layer = %v, want it refused as larger than a release may hold", ocitest.HugeLayerBytes, err)
	}
	if served := r.Served.Load(); served > 1<<20 {
		t.Errorf("the registry served %d bytes: the layer was read", served)
	}
}
