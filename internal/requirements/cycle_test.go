package requirements

import (
	"testing"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-cmp/cmp"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// TestIntersect: whether two ranges have a version in common, for the range forms a stack may
// write, against a brute force over every version up to 3.4.4.
func TestIntersect(t *testing.T) {
	ranges := []string{
		">=1.10.0 <1.12.0", "<1.11.0", ">=1.11.0", ">1.11.0", "<=1.11.0", "~1.10", "~1.11.2", "^1.10", "^2.0.0",
		"1.10.x", "1.11.*", "1.x", "*", "1.10.x || 1.12.x", "!=1.11.0", ">=1.11.0 !=1.11.0 <1.11.2", "1.10.3 - 1.11.1",
		">1.10.3 <1.10.5", "=1.11.1", "1.11.1", ">=v2.1.0", "<0.0.1", ">3.0.0 <3.0.1", "2 - 3",
	}
	for _, a := range ranges {
		ac, err := ParseRange(a)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range ranges {
			bc, err := ParseRange(b)
			if err != nil {
				t.Fatal(err)
			}
			want := false
			for major := uint64(0); major <= 3 && !want; major++ {
				for minor := uint64(0); minor <= 14 && !want; minor++ {
					for patch := uint64(0); patch <= 6 && !want; patch++ {
						v := mustVersion(t, major, minor, patch)
						want = ac.Check(v) && bc.Check(v)
					}
				}
			}
			if got := Intersect(a, ac, b, bc); got != want {
				t.Errorf("Intersect(%q, %q) = %v, want %v", a, b, got, want)
			}
		}
	}
}

// TestConflicts: a cycle is named for each operator both releases require in disjoint ranges,
// and only for those.
func TestConflicts(t *testing.T) {
	from := Release{Name: "aws-base-1-36-v1", Requirements: []csv1.StackRequirement{
		op("cluster-api", "<1.11.0"), op("capa", ">=2.8.0"), op("cert-manager", "~1.14"), contract("v1beta2"), op("odd", "not a range"),
	}}
	to := Release{Name: "aws-base-1-37-v1", Requirements: []csv1.StackRequirement{
		op("cluster-api", ">=1.11.0"), op("capa", ">=2.9.0"), op("cert-manager", "~1.15"), op("new-one", ">=1.0.0"), op("odd", ">=1.0.0"), contract("v1beta2"),
	}}
	got := Conflicts(from, to)
	want := []Conflict{
		{Operator: "cert-manager", From: from.Name, FromVersions: "~1.14", To: to.Name, ToVersions: "~1.15"},
		{Operator: "cluster-api", From: from.Name, FromVersions: "<1.11.0", To: to.Name, ToVersions: ">=1.11.0"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Conflicts (-want +got):\n%s", diff)
	}
	if got, want := got[1].String(), "release aws-base-1-36-v1 requires cluster-api <1.11.0 and release aws-base-1-37-v1 requires cluster-api >=1.11.0: no version of cluster-api satisfies both"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got := Conflicts(to, to); len(got) != 0 {
		t.Errorf("a release conflicts with itself: %v", got)
	}
	if got := Conflicts(Release{Name: "none"}, to); len(got) != 0 {
		t.Errorf("a release without requirements conflicts: %v", got)
	}
}

func mustVersion(t *testing.T, major, minor, patch uint64) *semver.Version {
	t.Helper()
	return semver.New(major, minor, patch, "", "")
}
