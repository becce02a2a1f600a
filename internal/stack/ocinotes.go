package stack

import (
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// OCIVersion is the chart version helm-controller gives a chart read through a Flux
// OCIRepository, as a stack published to an OCI registry is delivered: the version as semver
// with the first 12 hex digits of the chart artifact's digest as build metadata ("v1" becomes
// "1.0.0+0123456789ab"), unless helm-controller runs with its DisableChartDigestTracking
// feature gate. A version that is no semver is returned with the metadata appended.
func OCIVersion(version, digest string) string {
	hex := strings.TrimPrefix(digest, "sha256:")
	if len(hex) > 12 {
		hex = hex[:12]
	}
	v, err := semver.NewVersion(version)
	if err != nil {
		return version + "+" + hex
	}
	withDigest, err := v.SetMetadata(hex)
	if err != nil {
		return version + "+" + hex
	}
	return withDigest.String()
}

// OCINotes says where a stack's Helm charts would render differently when the stack is
// delivered from an OCI registry: helm-controller then versions each chart OCIVersion, and a
// chart that puts .Chart.Version into object names (the Sovereign Cloud Stack's naming of a
// cluster-class) renders names with "+", which no Kubernetes name may hold. They are notes: the
// stack works from Git as it is.
func OCINotes(dir string) []Problem {
	s, loadProblems := load(dir)
	if len(loadProblems) > 0 {
		return nil
	}
	var out []Problem
	charts := append([]Component{s.ClusterClass}, s.Components...)
	for _, c := range charts {
		if c.Kind != KindHelm {
			continue
		}
		version := OCIVersion(c.Version, strings.Repeat("0", 64))
		files, err := renderHelm(dir, c, helmRender{releaseName: s.HelmReleaseName(), namespace: "default", version: version})
		if err != nil {
			continue // lint reports what does not render
		}
		for _, f := range files {
			for _, o := range f.Objects {
				if name := objName(o); strings.Contains(name, "+") {
					out = append(out, Problem{File: f.File, Message: fmt.Sprintf(
						"delivered from an OCI registry, the chart is versioned %s by helm-controller, and %s %q would get a name with '+', which Kubernetes refuses: write {{ .Chart.Version | replace \"+\" \"-\" }} in names (docs/oci.md)",
						version, objKind(o), name)})
				}
			}
		}
	}
	return out
}
