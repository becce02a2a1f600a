package ocistack

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// A release's Helm charts. Flux's OCIRepository gives helm-controller one chart per artifact
// (the layer its layerSelector copies), and a HelmChart cannot be built from an OCIRepository,
// so the charts of a release published to a registry are artifacts of their own, beside the
// release: each Helm component's chart (the cluster-class's too, as component "cluster-class"),
// packaged as `helm package` packages it, in the format `helm push` writes, in the release's
// repository under ChartTag(release tag, component). The release manifest names each chart's
// digest in an annotation ChartAnnotationPrefix+<component>, so that a signature of the
// release covers its charts, and the operator pins every chart to the digest the release names.
const (
	// ChartAnnotationPrefix starts the annotations of a release manifest that name the digests
	// of its charts: ChartAnnotationPrefix + <component> = sha256:<hex>.
	ChartAnnotationPrefix = "io.clusterstack.chart."
	// chartTagSeparator separates the release tag from the component in a chart's tag. Release
	// tags never contain it, so chart tags are never taken for releases.
	chartTagSeparator = "_"
	// MaxCharts bounds the chart annotations read from one release manifest.
	MaxCharts = 64
)

// ChartTag is the tag of the chart of a release's component: <release tag>_<component>.
func ChartTag(releaseTag, component string) string {
	return releaseTag + chartTagSeparator + component
}

// IsChartTag reports whether tag is the tag of a release's chart rather than of a release.
func IsChartTag(tag string) bool { return strings.Contains(tag, chartTagSeparator) }

var sha256Digest = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// ChartDigests reads the chart digests a release manifest's annotations name (as Flux copies
// them into an OCIRepository's status.artifact.metadata): component -> sha256:<hex>. A value
// that is not a sha256 digest, or more than MaxCharts of them, is an error naming the
// annotation.
func ChartDigests(annotations map[string]string) (map[string]string, error) {
	out := map[string]string{}
	keys := make([]string, 0, len(annotations))
	for k := range annotations {
		if strings.HasPrefix(k, ChartAnnotationPrefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if len(keys) > MaxCharts {
		return nil, fmt.Errorf("the release names %d charts (annotations %s*), more than the %d allowed", len(keys), ChartAnnotationPrefix, MaxCharts)
	}
	for _, k := range keys {
		v := annotations[k]
		if !sha256Digest.MatchString(v) {
			return nil, fmt.Errorf("annotation %s is %q, not a sha256 digest (sha256:<64 hex digits>)", k, truncate(v, 80))
		}
		out[strings.TrimPrefix(k, ChartAnnotationPrefix)] = v
	}
	return out, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
