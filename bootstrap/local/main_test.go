package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestStackTreeFor: a release tag gets a copy of the tree whose cluster-class chart carries the
// release's version, in this repository's layout and in SCS's providers/<provider>/<name>
// layout (found by its csctl.yaml); another tag gets the tree itself.
func TestStackTreeFor(t *testing.T) {
	tests := []struct {
		name, tree, tag string
		chart, version  string // the Chart.yaml that must carry version; "" for none
	}{
		{name: "stacks layout", tree: "../../stacks", tag: "aws-base-1-36-v7", chart: "aws/base/1-36/cluster-class/Chart.yaml", version: "v7"},
		{name: "SCS layout", tree: "../../internal/stack/testdata/scs/providers", tag: "openstack-scs-1-32-v7", chart: "openstack/scs/cluster-class/Chart.yaml", version: "v7"},
		{name: "SCS channel version", tree: "../../internal/stack/testdata/scs/providers", tag: "openstack-scs-1-32-v0-sha.abc1234", chart: "openstack/scs/cluster-class/Chart.yaml", version: "v0-sha.abc1234"},
		{name: "no such stack", tree: "../../internal/stack/testdata/scs/providers", tag: "openstack-scs-1-29-v1"},
		{name: "not a release tag", tree: "../../stacks", tag: "main"},
	}
	version := regexp.MustCompile(`(?m)^version:[ \t]*(\S+)`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, err := stackTreeFor(tt.tree, tt.tag)
			if err != nil {
				t.Fatal(err)
			}
			if tt.chart == "" {
				if dir != tt.tree {
					t.Fatalf("got a copy %s, want the tree itself", dir)
				}
				return
			}
			if dir == tt.tree {
				t.Fatalf("got the tree itself, want a copy")
			}
			defer func() { _ = os.RemoveAll(dir) }()
			data, err := os.ReadFile(filepath.Join(dir, tt.chart))
			if err != nil {
				t.Fatal(err)
			}
			m := version.FindSubmatch(data)
			want := tt.version
			if m == nil || string(m[1]) != want {
				t.Fatalf("%s: version %q, want %q", tt.chart, m, want)
			}
			// The original is untouched.
			orig, err := os.ReadFile(filepath.Join(tt.tree, tt.chart))
			if err != nil {
				t.Fatal(err)
			}
			if m := version.FindSubmatch(orig); m == nil || string(m[1]) == want {
				t.Fatalf("the tree's own %s was changed or carries the version already", tt.chart)
			}
		})
	}
}
