package ocistack

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
)

// SCS release artifacts, as the Sovereign Cloud Stack's csctl publishes them (`csctl publish`,
// ORAS): an image manifest v1.1 of this artifact type with an empty config and one layer per
// file of the release directory, each titled with its file name.
const (
	SCSArtifactType          = "application/vnd.scs.cluster-stacks.v1"
	scsClusterClassMediaType = "application/vnd.scs.cluster-class.v1.tar+gzip"
	scsClusterAddonMediaType = "application/vnd.scs.cluster-addon.layer.v1.tar+gzip"
	annotationTitle          = "org.opencontainers.image.title"
)

// Format is the kind of artifact a release manifest describes.
type Format string

const (
	// FormatFlux is Flux's artifact format: delivered.
	FormatFlux Format = "Flux"
	// FormatSCS is an SCS cluster-stack release (csctl): refused, with what differs.
	FormatSCS Format = "SCS"
	// FormatOther is any other artifact: refused.
	FormatOther Format = "Other"
)

// Release is what Inspect learned of a tag.
type Release struct {
	// Descriptor is the manifest's (its digest is what a release is pinned to).
	Descriptor ocispec.Descriptor
	// Manifest is the manifest.
	Manifest ocispec.Manifest
	// Format says which kind of artifact it is.
	Format Format
	// Problem says, for an artifact that is not in Flux's format, what differs from it.
	Problem string
}

// Inspect resolves ref (a tag or digest) of the repository and classifies its manifest. It
// reads only the manifest, within MaxMetadataBytes.
func Inspect(ctx context.Context, t Target, ref string) (Release, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	repo, err := t.Repository()
	if err != nil {
		return Release{}, err
	}
	desc, body, err := fetchManifestBytes(ctx, repo, ref)
	if err != nil {
		return Release{}, err
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(body, &m); err != nil {
		return Release{}, fmt.Errorf("manifest %s of %s:%s is not JSON: %w", desc.Digest, repo.Reference, ref, err)
	}
	rel := Release{Descriptor: desc, Manifest: m}
	rel.Format, rel.Problem = Classify(desc, m)
	return rel, nil
}

// Classify tells which kind of artifact the manifest m (of descriptor desc) is and, unless it
// is Flux's format, what differs from Flux's format.
func Classify(desc ocispec.Descriptor, m ocispec.Manifest) (Format, string) {
	if desc.MediaType == ocispec.MediaTypeImageIndex || m.MediaType == ocispec.MediaTypeImageIndex {
		return FormatOther, fmt.Sprintf("%s is an image index, not an artifact manifest; publish the stack with `stackctl push`", desc.Digest)
	}
	if len(m.Layers) > 0 && m.Layers[0].MediaType == FluxContentMediaType {
		return FormatFlux, ""
	}
	if m.ArtifactType == SCSArtifactType || hasSCSLayer(m) {
		var files []string
		for _, l := range m.Layers {
			files = append(files, fmt.Sprintf("%s (%s)", l.Annotations[annotationTitle], l.MediaType))
		}
		sort.Strings(files)
		return FormatSCS, fmt.Sprintf("%s is a Sovereign Cloud Stack cluster-stack release (artifactType %s, as csctl publishes it): its %d layers are release files packaged one per layer (%s), where a release is one %s layer holding the stack directory, which Flux's OCIRepository unpacks. Publish the stack directory with `stackctl push` (or `flux push artifact`)",
			desc.Digest, SCSArtifactType, len(m.Layers), strings.Join(files, ", "), FluxContentMediaType)
	}
	var types []string
	for _, l := range m.Layers {
		types = append(types, l.MediaType)
	}
	return FormatOther, fmt.Sprintf("%s is not a release in Flux's format: its first layer must be %s, the layers are [%s] (config %s); publish the stack with `stackctl push`",
		desc.Digest, FluxContentMediaType, strings.Join(types, ", "), m.Config.MediaType)
}

func hasSCSLayer(m ocispec.Manifest) bool {
	for _, l := range m.Layers {
		if l.MediaType == scsClusterClassMediaType || l.MediaType == scsClusterAddonMediaType {
			return true
		}
	}
	return false
}

// fetchManifestBytes reads the manifest ref within MaxMetadataBytes and checks it against its
// digest.
func fetchManifestBytes(ctx context.Context, repo *remote.Repository, ref string) (ocispec.Descriptor, []byte, error) {
	desc, rc, err := repo.Manifests().FetchReference(ctx, ref)
	if err != nil {
		return ocispec.Descriptor{}, nil, fmt.Errorf("fetch the manifest %s:%s: %w", repo.Reference, ref, err)
	}
	defer func() { _ = rc.Close() }()
	if desc.Size > MaxMetadataBytes {
		return ocispec.Descriptor{}, nil, fmt.Errorf("the manifest %s:%s (%s) has %d bytes: it exceeds the %d bytes a release manifest may have", repo.Reference, ref, desc.Digest, desc.Size, MaxMetadataBytes)
	}
	body, err := content.ReadAll(rc, desc)
	if err != nil {
		return ocispec.Descriptor{}, nil, fmt.Errorf("read the manifest %s:%s: %w", repo.Reference, ref, err)
	}
	if d, err := digest.Parse(ref); err == nil && d != desc.Digest {
		return ocispec.Descriptor{}, nil, fmt.Errorf("the manifest %s:%s has the digest %s", repo.Reference, ref, desc.Digest)
	}
	return desc, body, nil
}

func fetchManifest(ctx context.Context, repo *remote.Repository, ref string) (ocispec.Manifest, error) {
	_, body, err := fetchManifestBytes(ctx, repo, ref)
	if err != nil {
		return ocispec.Manifest{}, err
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(body, &m); err != nil {
		return ocispec.Manifest{}, fmt.Errorf("manifest %s: %w", ref, err)
	}
	return m, nil
}
