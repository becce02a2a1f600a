package main

import (
	"errors"
	"math"
	"os"
	"runtime/debug"
	"testing"

	"github.com/go-logr/logr"
)

// TestDefaultManagementNamespace: $POD_NAMESPACE, else the ServiceAccount's namespace, else
// clusterstack-system.
func TestDefaultManagementNamespace(t *testing.T) {
	env := func(v string) func(string) string { return func(string) string { return v } }
	file := func(b string, err error) func(string) ([]byte, error) {
		return func(string) ([]byte, error) { return []byte(b), err }
	}
	for _, tc := range []struct {
		name   string
		getenv func(string) string
		read   func(string) ([]byte, error)
		want   string
	}{
		{"POD_NAMESPACE", env("ops"), file("sa-ns\n", nil), "ops"},
		{"service account", env(""), file("sa-ns\n", nil), "sa-ns"},
		{"out of cluster", env(""), file("", errors.New("no such file")), "clusterstack-system"},
	} {
		if got := defaultManagementNamespace(tc.getenv, tc.read); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestSetMemoryLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	for _, bad := range []float64{-0.5, 1.5, math.NaN()} {
		if err := setMemoryLimit(bad, logr.Discard()); err == nil {
			t.Errorf("ratio %v: no error", bad)
		}
	}
	// GOMEMLIMIT in the environment wins over the ratio, as the runtime read it at start.
	t.Setenv("GOMEMLIMIT", "123MiB")
	debug.SetMemoryLimit(123 << 20)
	if err := setMemoryLimit(0.5, logr.Discard()); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != 123<<20 {
		t.Errorf("GOMEMLIMIT set in the environment was changed to %d", got)
	}
	// 0: left alone.
	if err := os.Unsetenv("GOMEMLIMIT"); err != nil {
		t.Fatal(err)
	}
	if err := setMemoryLimit(0, logr.Discard()); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != 123<<20 {
		t.Errorf("ratio 0 changed the limit to %d", got)
	}
}
