package main

import (
	"errors"
	"testing"
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
