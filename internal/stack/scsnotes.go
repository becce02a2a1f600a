package stack

import (
	"path"
	"strings"

	"github.com/clusterstack-io/clusterstack-operator/internal/render"
)

// SCSNotes says where the Sovereign Cloud Stack's own tooling would read the stack directory
// dir otherwise than this operator does: csctl, which builds a cluster-stack release from the
// directory, and the cluster-stack-operator, which applies the release. They are notes, not
// problems: the stack works with this operator as it is, and lint passes without them. Read
// from csctl (pkg/cmd/create.go) and the cluster-stack-operator
// (internal/controller/clusteraddon_controller.go):
//
//   - With a clusteraddon.yaml (SCS's "new convention"), csctl leaves cluster-addon-values.yaml
//     out of the release, and the cluster-stack-operator gives each component only its own
//     overwrite.yaml. This operator applies the file (see addonvalues.go).
//   - An entry under a subchart's key reaches that subchart, as it would through an umbrella
//     chart (csctl's "old convention", one cluster-addon chart, for which SCS wrote the file's
//     layout); the note names the component and subchart, so that the reading is never a
//     surprise.
//   - An entry under a subchart's key that holds nothing but that key again would reach the
//     subchart nested twice: written for a reading that hands the entry to the wrapper chart.
func SCSNotes(dir string) []Problem {
	s, loadProblems := load(dir)
	if len(loadProblems) > 0 || strings.TrimSpace(s.AddonValuesTemplate) == "" {
		return nil
	}
	lt := &linter{stackReader: &stackReader{dir: dir}, s: s}
	file := s.AddonValuesFile
	if s.Stages != nil {
		lt.ps.addf(file, "SCS's csctl leaves this file out of a release when the stack has a %s (it ships it only with one %s/ umbrella chart), so SCS's cluster-stack-operator gives each component only its own %s; this operator applies it, each component taking its entries", ClusterAddonFile, ClusterAddonDir, OverwriteFile)
	}
	values, err := lt.sharedSample()
	if err != nil {
		return lt.ps.list
	}
	for _, key := range sortedKeys(values) {
		for _, c := range s.subchartOwners(key) {
			chart := path.Join(c.Path, ChartFile)
			lt.ps.addf(file, "entry %q is values for the subchart %q of component %s (%s), as in an umbrella chart: the component's chart gets them under %q", key, key, c.Name, chart, key)
			if entry, err := render.SharedEntry(values, key); err == nil && len(entry) == 1 && entry[key] != nil {
				lt.ps.addf(file, "entry %q holds only %q, so the subchart gets its values nested twice (%s.%s): write them directly under %q", key, key, key, key, key)
			}
		}
	}
	return lt.ps.list
}
