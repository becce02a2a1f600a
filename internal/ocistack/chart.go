package ocistack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"helm.sh/helm/v3/pkg/chart/loader"
	"oras.land/oras-go/v2"
)

const (
	// HelmConfigMediaType is the media type of a Helm chart artifact's config: the chart's
	// metadata (Chart.yaml) as JSON.
	HelmConfigMediaType = "application/vnd.cncf.helm.config.v1+json"
	// HelmChartContentMediaType is the media type of a Helm chart artifact's layer: the
	// packaged chart (.tgz), which Flux's OCIRepository keeps as it is for helm-controller
	// (layerSelector operation copy).
	HelmChartContentMediaType = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
)

// PushChart publishes a packaged Helm chart (the .tgz `helm package` writes) as tag of the
// repository in the format `helm push` writes (config HelmConfigMediaType with the chart's
// metadata, one HelmChartContentMediaType layer, the OCI title and version annotations), and
// returns the manifest's descriptor. Unlike `helm push`, the tag need not be the chart's
// version (a ManagementOperator's versions are tagged "v1.2.3", charts are often versioned
// "1.2.3").
func PushChart(ctx context.Context, t Target, tgz []byte, tag string) (ocispec.Descriptor, error) {
	return pushChart(ctx, t, tgz, tag, nil)
}

// pushChart is PushChart with annotations added to the manifest's (with AnnotationCreated
// among them the manifest is reproducible; without, ORAS records the time of the push).
func pushChart(ctx context.Context, t Target, tgz []byte, tag string, annotations map[string]string) (ocispec.Descriptor, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	if len(tgz) > MaxContentBytes {
		return ocispec.Descriptor{}, fmt.Errorf("the chart is %d bytes, more than the %d allowed", len(tgz), MaxContentBytes)
	}
	ch, err := loader.LoadArchive(bytes.NewReader(tgz))
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("load the chart: %w", err)
	}
	config, err := json.Marshal(ch.Metadata)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	repo, err := t.Repository()
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	layerDesc, err := oras.PushBytes(ctx, repo, HelmChartContentMediaType, tgz)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("push the chart layer to %s: %w", repo.Reference, err)
	}
	configDesc, err := oras.PushBytes(ctx, repo, HelmConfigMediaType, config)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("push the chart config to %s: %w", repo.Reference, err)
	}
	manifestAnnotations := map[string]string{}
	maps.Copy(manifestAnnotations, annotations)
	manifestAnnotations[ocispec.AnnotationTitle] = ch.Metadata.Name
	manifestAnnotations[ocispec.AnnotationVersion] = ch.Metadata.Version
	desc, err := oras.PackManifest(ctx, repo, oras.PackManifestVersion1_1, "", oras.PackManifestOptions{
		ConfigDescriptor:    &configDesc,
		Layers:              []ocispec.Descriptor{layerDesc},
		ManifestAnnotations: manifestAnnotations,
	})
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("push the chart manifest to %s: %w", repo.Reference, err)
	}
	if err := repo.Tag(ctx, desc, tag); err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("tag %s:%s: %w", repo.Reference, tag, err)
	}
	return desc, nil
}
