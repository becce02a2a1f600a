package updates

import (
	"slices"
	"testing"
)

func TestUpgrades(t *testing.T) {
	validated := []string{
		"docker-base-1-33-v1", "docker-base-1-33-v2", "docker-base-1-33-v3-alpha.0",
		"docker-base-1-34-v1", "docker-base-1-35-v1", "docker-other-1-33-v9", "docker-base-1-32-v7",
	}
	for _, tc := range []struct {
		name, current string
		want          []string
	}{
		{"newer same minor and next minor, newest first", "docker-base-1-33-v1",
			[]string{"docker-base-1-34-v1", "docker-base-1-33-v3-alpha.0", "docker-base-1-33-v2"}},
		{"from a channel version", "docker-base-1-33-v3-alpha.0",
			[]string{"docker-base-1-34-v1"}},
		{"no skip of a minor, no downgrade", "docker-base-1-34-v1", []string{"docker-base-1-35-v1"}},
		{"newest release: nothing", "docker-base-1-35-v1", nil},
		{"not a release", "my-class", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Upgrades(tc.current, validated)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Upgrades(%s) = %v, want %v", tc.current, got, tc.want)
			}
		})
	}
}
