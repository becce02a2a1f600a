package lifecycle

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

const p = "aws-base-1-36-"

func TestKeep(t *testing.T) {
	existing := []Release{{p + "v1", "v1", true}, {p + "v2", "v2", true}, {p + "v3", "v3", true}, {p + "v4", "v4", false}}
	tests := []struct {
		name string
		f    Facts
		want map[string][]string
	}{
		{
			name: "the issue's scenario: v3 latest and broken for cluster one, which still runs v2; two stays on v1",
			f: Facts{
				Wanted:     map[string][]string{p + "v3": {Latest}},
				Existing:   existing[:3],
				ClassUsers: map[string][]string{p + "v3": {"one"}, p + "v1": {"two"}},
				Applied:    map[string][]string{p + "v2": {"one"}, p + "v1": {"two"}},
				Referenced: map[string][]string{p + "v2": {"HelmRelease/one-cni"}, p + "v1": {"HelmRelease/two-cni"}},
			},
			want: map[string][]string{
				p + "v1": {Applied, InUse, Referenced},
				p + "v2": {Applied, Referenced},
				p + "v3": {InUse, Latest},
			},
		},
		{
			name: "rollback targets: the newest working releases older than the newest wanted",
			f:    Facts{Wanted: map[string][]string{p + "v5": {Pinned}}, Existing: existing, RollbackReleases: 2},
			want: map[string][]string{p + "v5": {Pinned}, p + "v3": {RollbackTarget}, p + "v2": {RollbackTarget}},
		},
		{
			name: "a release that does not work is no rollback target",
			f:    Facts{Wanted: map[string][]string{p + "v5": {Pinned}}, Existing: []Release{{p + "v4", "v4", false}, {p + "v3", "v3", true}}, RollbackReleases: 1},
			want: map[string][]string{p + "v5": {Pinned}, p + "v3": {RollbackTarget}},
		},
		{
			name: "no rollback targets with 0, nothing used: only what is wanted",
			f:    Facts{Wanted: map[string][]string{p + "v2": {Pinned}}, Existing: existing},
			want: map[string][]string{p + "v2": {Pinned}},
		},
		{
			name: "a release only a Flux object still refers to is kept",
			f:    Facts{Wanted: map[string][]string{p + "v3": {Pinned}}, Existing: existing, Referenced: map[string][]string{p + "v1": {"Kustomization/a-info"}}},
			want: map[string][]string{p + "v3": {Pinned}, p + "v1": {Referenced}},
		},
		{
			name: "a Cluster using a release that does not exist: it is wanted (to be created)",
			f:    Facts{Wanted: map[string][]string{p + "v1": {Pinned}}, ClassUsers: map[string][]string{p + "v9": {"c"}}},
			want: map[string][]string{p + "v1": {Pinned}, p + "v9": {InUse}},
		},
		{
			name: "empty use lists do not keep anything",
			f:    Facts{Wanted: map[string][]string{}, Existing: existing, ClassUsers: map[string][]string{p + "v1": nil}},
			want: map[string][]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Keep(tt.f)); diff != "" {
				t.Errorf("Keep (-want +got):\n%s", diff)
			}
		})
	}
}
