package ocistack

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sigstore/sigstore/pkg/signature"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
)

// Published is what PushRelease published.
type Published struct {
	// Release is the release manifest's descriptor (its digest is what a release is pinned to).
	Release ocispec.Descriptor
	// Charts are the descriptors of the chart artifacts of the release's Helm components, by
	// component (csv1.ClusterClassComponent for the cluster-class), each tagged
	// ChartTag(release tag, component). Empty for a stack without Helm components.
	Charts map[string]ocispec.Descriptor
	// Signed is true when the release and each of its charts were signed.
	Signed bool
}

// ociTag is the grammar of an OCI tag (distribution spec).
var ociTag = regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$`)

// releaseChart is a Helm component of a stack: the component name and its directory.
type releaseChart struct{ component, path string }

// PushRelease publishes the stack directory dir as the release tag of the repository, with
// its Helm charts beside it (see ChartAnnotationPrefix): each Helm component's chart (the
// cluster-class's, when it is a Helm chart, as component csv1.ClusterClassComponent) is
// packaged (PackageChart) and pushed in Helm's format (PushChart) as ChartTag(tag, component);
// then the directory is pushed as Push does, its manifest naming each chart's digest in an
// annotation ChartAnnotationPrefix+<component>. With a signer, each chart and the release are
// signed (Sign). A stack without Helm components publishes as Push does.
//
// Every chart is packaged before anything is pushed, so a chart that cannot be packaged
// leaves nothing in the registry; the release is tagged after its charts, so its tag never
// names a chart the repository lacks. The charts record origin as the release does, at the
// same time, so the same directory and origin publish the same digests.
func PushRelease(ctx context.Context, t Target, dir, tag string, origin Origin, signer signature.Signer) (Published, error) {
	if strings.Contains(tag, chartTagSeparator) {
		return Published{}, fmt.Errorf("the release tag %q contains %q, which marks the tags of charts (<release tag>%s<component>): choose a tag without it", tag, chartTagSeparator, chartTagSeparator)
	}
	s, err := stack.Load(dir)
	if err != nil {
		var ps stack.Problems
		if errors.As(err, &ps) {
			return Published{}, fmt.Errorf("the stack has problems (stackctl lint %s):\n%s", dir, strings.TrimSuffix(stack.FormatProblems(dir, ps), "\n"))
		}
		return Published{}, fmt.Errorf("load the stack %s: %w", dir, err)
	}
	charts, err := helmCharts(s, tag)
	if err != nil {
		return Published{}, err
	}
	packaged := make([][]byte, len(charts))
	total := 0
	for i, c := range charts {
		tgz, err := PackageChart(filepath.Join(dir, filepath.FromSlash(c.path)))
		if err != nil {
			return Published{}, fmt.Errorf("package the chart of component %s: %w", c.component, err)
		}
		if total += len(tgz); total > MaxContentBytes {
			return Published{}, fmt.Errorf("the charts of %s package to more than the %d bytes a release's charts may hold together", dir, MaxContentBytes)
		}
		packaged[i] = tgz
	}

	if origin.Created.IsZero() {
		origin.Created = time.Now()
	}
	out := Published{Charts: map[string]ocispec.Descriptor{}}
	annotations := map[string]string{}
	for i, c := range charts {
		chartTag := ChartTag(tag, c.component)
		desc, err := pushChart(ctx, t, packaged[i], chartTag, originAnnotations(origin, origin.Created))
		if err != nil {
			return out, fmt.Errorf("push the chart of component %s: %w", c.component, err)
		}
		if signer != nil {
			if err := Sign(ctx, t, desc, signer); err != nil {
				return out, fmt.Errorf("sign the chart %s@%s of component %s: %w", chartTag, desc.Digest, c.component, err)
			}
		}
		out.Charts[c.component] = desc
		annotations[ChartAnnotationPrefix+c.component] = desc.Digest.String()
	}
	desc, err := push(ctx, t, dir, tag, origin, annotations)
	if err != nil {
		return out, err
	}
	out.Release = desc
	if signer != nil {
		if err := Sign(ctx, t, desc, signer); err != nil {
			return out, fmt.Errorf("published %s@%s, but signing it failed: %w", tag, desc.Digest, err)
		}
		out.Signed = true
	}
	return out, nil
}

// helmCharts are the Helm components of s whose charts a release of tag carries, the
// cluster-class first, then the addons in addon order.
func helmCharts(s *stack.Stack, tag string) ([]releaseChart, error) {
	var out []releaseChart
	if s.ClusterClass.Kind == stack.KindHelm {
		out = append(out, releaseChart{csv1.ClusterClassComponent, s.ClusterClass.Path})
	}
	for _, c := range s.Components {
		if c.Kind == stack.KindHelm {
			out = append(out, releaseChart{c.Name, c.Path})
		}
	}
	if len(out) > MaxCharts {
		return nil, fmt.Errorf("the stack has %d Helm components, more than the %d charts a release may carry", len(out), MaxCharts)
	}
	seen := map[string]bool{}
	for _, c := range out {
		if seen[c.component] {
			return nil, fmt.Errorf("two Helm components are named %s (%s): a release carries one chart per component name; rename the addon", c.component, c.path)
		}
		seen[c.component] = true
		if t := ChartTag(tag, c.component); !ociTag.MatchString(t) {
			return nil, fmt.Errorf("the chart of component %s would be tagged %q, which is not an OCI tag (letters, digits, '_', '.', '-'; at most 128): shorten the release tag or the component name", c.component, t)
		}
	}
	return out, nil
}
