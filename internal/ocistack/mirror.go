package ocistack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/memory"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"
)

// Copied is what Mirror copied of one tag.
type Copied struct {
	// Tag is the release tag (for a chart, its ChartTag).
	Tag string
	// Descriptor is the manifest's (the release's, or the chart's), the same in both
	// repositories.
	Descriptor ocispec.Descriptor
	// Signed is true when a cosign signature was copied with it.
	Signed bool
	// Charts are the release's charts copied with it, by component (see ChartDigests); empty
	// for a release that names none, and for a chart.
	Charts map[string]Copied
}

// Mirror copies tag from src to dst, byte for byte (the digest is preserved), with the
// artifacts that refer to it (notation signatures, through the referrers API or its tag
// schema) and its cosign signature (the SignatureTag), so that a registry mirror verifies as
// the original does. The charts the release's manifest names (ChartDigests) are copied with
// it, each by the digest the release names, tagged ChartTag(tag, component) in dst, with its
// referrers and its cosign signature; they are copied before the release, so the release's
// tag in dst never names a chart dst lacks. A chart the release names that src lacks is an
// error naming the component and the digest.
func Mirror(ctx context.Context, src, dst Target, tag string) (Copied, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	from, err := src.Repository()
	if err != nil {
		return Copied{}, err
	}
	to, err := dst.Repository()
	if err != nil {
		return Copied{}, err
	}
	// Through memory, not registry to registry: oras-go closes a blob's download stream, when
	// it is the upload's body, from two goroutines at once (a data race its HTTP/2 client hits).
	// A release is small; a memory store holds one artifact and its referrers at a time (the
	// release, then each chart).
	mem := memory.New()
	desc, err := oras.ExtendedCopy(ctx, from, tag, mem, tag, boundedCopy)
	if err != nil {
		return Copied{}, fmt.Errorf("copy %s:%s: %w", from.Reference, tag, err)
	}
	charts, err := releaseChartDigests(ctx, mem, desc)
	if err != nil {
		return Copied{}, fmt.Errorf("the release %s:%s (%s): %w", from.Reference, tag, desc.Digest, err)
	}
	out := Copied{Tag: tag, Descriptor: desc}
	components := make([]string, 0, len(charts))
	for c := range charts {
		components = append(components, c)
	}
	sort.Strings(components)
	for _, component := range components {
		c, err := mirrorChart(ctx, from, to, tag, component, charts[component])
		if err != nil {
			return out, err
		}
		if out.Charts == nil {
			out.Charts = map[string]Copied{}
		}
		out.Charts[component] = c
	}
	if out.Descriptor, err = oras.ExtendedCopy(ctx, mem, tag, to, tag, oras.DefaultExtendedCopyOptions); err != nil {
		return out, fmt.Errorf("copy %s:%s to %s: %w", from.Reference, tag, to.Reference, err)
	}
	out.Signed, err = mirrorSignature(ctx, from, to, out.Descriptor.Digest)
	return out, err
}

// boundedCopy copies through memory: every blob is held in memory on the way, so one larger
// than a release's content may be is refused before it is read (the size a descriptor
// declares is the size ORAS reads and verifies).
var boundedCopy = func() oras.ExtendedCopyOptions {
	o := oras.DefaultExtendedCopyOptions
	o.PreCopy = func(_ context.Context, desc ocispec.Descriptor) error {
		if desc.Size > MaxContentBytes {
			return fmt.Errorf("%s (%s) has %d bytes: more than the %d a release may hold", desc.Digest, desc.MediaType, desc.Size, MaxContentBytes)
		}
		return nil
	}
	return o
}()

// releaseChartDigests reads the chart digests the release manifest desc (held in mem, so
// within MaxMetadataBytes) names.
func releaseChartDigests(ctx context.Context, mem *memory.Store, desc ocispec.Descriptor) (map[string]string, error) {
	body, err := content.FetchAll(ctx, mem, desc)
	if err != nil {
		return nil, err
	}
	var m struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("the manifest is not JSON: %w", err)
	}
	return ChartDigests(m.Annotations)
}

// mirrorChart copies the chart d of component of the release tag from one repository to the
// other, by digest, tagging it ChartTag(tag, component), with its referrers and signature.
func mirrorChart(ctx context.Context, from, to *remote.Repository, tag, component, d string) (Copied, error) {
	chartTag := ChartTag(tag, component)
	out := Copied{Tag: chartTag}
	if _, err := from.Resolve(ctx, d); err != nil {
		if errors.Is(err, errdef.ErrNotFound) {
			return out, fmt.Errorf("the release %s:%s names %s as the chart of component %s, which %s does not hold: publish the release again (stackctl push) or mirror from the registry it was published to", from.Reference, tag, d, component, from.Reference)
		}
		return out, fmt.Errorf("look for the chart %s@%s of component %s: %w", from.Reference, d, component, err)
	}
	mem := memory.New()
	desc, err := oras.ExtendedCopy(ctx, from, d, mem, chartTag, boundedCopy)
	if err != nil {
		return out, fmt.Errorf("copy the chart %s@%s of component %s: %w", from.Reference, d, component, err)
	}
	if desc.Digest.String() != d {
		return out, fmt.Errorf("the chart %s@%s of component %s was served as %s", from.Reference, d, component, desc.Digest)
	}
	if out.Descriptor, err = oras.ExtendedCopy(ctx, mem, chartTag, to, chartTag, oras.DefaultExtendedCopyOptions); err != nil {
		return out, fmt.Errorf("copy the chart %s@%s of component %s to %s: %w", from.Reference, d, component, to.Reference, err)
	}
	out.Signed, err = mirrorSignature(ctx, from, to, desc.Digest)
	return out, err
}

// mirrorSignature copies the cosign signature of the manifest d, if from holds one, and
// reports whether it did.
func mirrorSignature(ctx context.Context, from, to *remote.Repository, d digest.Digest) (bool, error) {
	sigTag := SignatureTag(d)
	if _, err := from.Resolve(ctx, sigTag); err != nil {
		if errors.Is(err, errdef.ErrNotFound) {
			return false, nil
		}
		return false, fmt.Errorf("look for the signature %s:%s: %w", from.Reference, sigTag, err)
	}
	mem := memory.New()
	sigOpts := oras.DefaultCopyOptions
	sigOpts.PreCopy = boundedCopy.PreCopy
	if _, err := oras.Copy(ctx, from, sigTag, mem, sigTag, sigOpts); err != nil {
		return false, fmt.Errorf("copy the signature %s:%s: %w", from.Reference, sigTag, err)
	}
	if _, err := oras.Copy(ctx, mem, sigTag, to, sigTag, oras.DefaultCopyOptions); err != nil {
		return false, fmt.Errorf("copy the signature %s:%s to %s: %w", from.Reference, sigTag, to.Reference, err)
	}
	return true, nil
}
