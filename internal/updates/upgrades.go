package updates

import (
	"github.com/clusterstack-io/clusterstack-operator/internal/releasename"
)

// Upgrades returns the releases a Cluster using release current may move to next, newest
// first: releases of the same provider and stack, validated (validated lists their names), for
// the same Kubernetes minor with a newer version or for the next minor (the moves the Cluster
// webhook allows). current itself is never listed.
func Upgrades(current string, validated []string) []string {
	cur, err := releasename.Parse(current)
	if err != nil {
		return nil
	}
	var out []releasename.Release
	for _, name := range validated {
		r, err := releasename.Parse(name)
		if err != nil || r.Provider != cur.Provider || r.Name != cur.Name || r.Major != cur.Major || name == current {
			continue
		}
		switch {
		case r.Minor == cur.Minor && releasename.CompareVersions(r.Version, cur.Version) > 0:
		case r.Minor == cur.Minor+1:
		default:
			continue
		}
		out = append(out, r)
	}
	releasename.Sort(out)
	names := make([]string, 0, len(out))
	for i := len(out) - 1; i >= 0; i-- {
		names = append(names, out[i].String())
	}
	if len(names) == 0 {
		return nil
	}
	return names
}
