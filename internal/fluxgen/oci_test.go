package fluxgen

import (
	"strings"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

func ociRelease(mut ...func(*csv1.ClusterStackRelease)) *csv1.ClusterStackRelease {
	return release(append([]func(*csv1.ClusterStackRelease){func(r *csv1.ClusterStackRelease) {
		r.Spec.Source = csv1.StackSource{OCI: &csv1.OCISource{
			URL:       "oci://registry.example/stacks/aws-base",
			SecretRef: &meta.LocalObjectReference{Name: "registry"},
			Verify:    &csv1.OCIVerification{SecretRef: meta.LocalObjectReference{Name: "cosign"}},
		}}
	}}, mut...)...)
}

const (
	testDigestHex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	testChart     = "sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
)

// TestOCIReleaseSource: a release read from a registry has an OCIRepository at its tag,
// unpacking Flux's content layer, pinned to the validated digest once validated; a Git commit
// recorded before the stack moved to the registry is no pin.
func TestOCIReleaseSource(t *testing.T) {
	repo, ok := ReleaseSource(ociRelease()).(*sourcev1.OCIRepository)
	if !ok {
		t.Fatalf("ReleaseSource of an OCI release is %T, want an OCIRepository", ReleaseSource(ociRelease()))
	}
	if repo.Name != testRelease || repo.Spec.URL != "oci://registry.example/stacks/aws-base" || repo.Spec.Reference.Tag != testRelease || repo.Spec.Reference.Digest != "" {
		t.Errorf("unpinned OCIRepository: name %s, url %s, ref %+v", repo.Name, repo.Spec.URL, repo.Spec.Reference)
	}
	if ls := repo.Spec.LayerSelector; ls == nil || ls.MediaType != FluxContentMediaType || ls.Operation != sourcev1.OCILayerExtract {
		t.Errorf("layer selector %+v, want Flux's content layer, extracted", ls)
	}
	if repo.Spec.SecretRef.Name != "registry" || repo.Spec.Verify == nil || repo.Spec.Verify.Provider != "cosign" || repo.Spec.Verify.SecretRef.Name != "cosign" {
		t.Errorf("credentials %v, verification %+v", repo.Spec.SecretRef, repo.Spec.Verify)
	}
	if repo.Spec.Ignore != nil {
		t.Errorf("an artifact's root needs no ignore rules, got %q", *repo.Spec.Ignore)
	}

	pinned := OCIRepository(ociRelease(func(r *csv1.ClusterStackRelease) { r.Status.Commit = testDigestHex }))
	if pinned.Spec.Reference.Digest != "sha256:"+testDigestHex || pinned.Spec.Reference.Tag != "" {
		t.Errorf("pinned reference %+v, want the digest alone", pinned.Spec.Reference)
	}
	git := ociRelease(func(r *csv1.ClusterStackRelease) { r.Status.Commit = "5d4e3031a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7" })
	if Pinned(git) || OCIRepository(git).Spec.Reference.Tag != testRelease {
		t.Errorf("a Git commit pins an OCI release: %+v", OCIRepository(git).Spec.Reference)
	}
	follow := ociRelease(func(r *csv1.ClusterStackRelease) { r.Status.Commit = testDigestHex; r.Spec.FollowMovedTags = true })
	if Pinned(follow) {
		t.Error("a release following moved tags is pinned")
	}
	if !Pinned(release(func(r *csv1.ClusterStackRelease) { r.Status.Commit = "5d4e3031a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7" })) {
		t.Error("a Git release at its validated commit is not pinned")
	}
	sub := OCIRepository(ociRelease(func(r *csv1.ClusterStackRelease) { r.Spec.Source.Path = "stacks/base" }))
	if sub.Spec.Ignore == nil || !strings.Contains(*sub.Spec.Ignore, "!/stacks/base/") {
		t.Errorf("a stack in a directory of the artifact: ignore %v", sub.Spec.Ignore)
	}
}

// TestOCIReleaseCharts: a release read from a registry delivers each Helm chart from an
// OCIRepository of its own artifact, pinned to the digest the release names, verified as the
// release is; HelmReleases and Kustomizations refer to the OCI sources.
func TestOCIReleaseCharts(t *testing.T) {
	rel := ociRelease(func(r *csv1.ClusterStackRelease) { r.Status.Commit = testDigestHex })
	cni := csv1.ReleaseComponent{Name: "cni", Kind: csv1.ComponentKindHelm, Path: "cluster-addon/cni", Version: "1.2.0", ChartDigest: testChart}
	info := csv1.ReleaseComponent{Name: "info", Kind: csv1.ComponentKindKustomize, Path: "cluster-addon/info"}
	charts := AddonCharts(rel, []csv1.ReleaseComponent{cni, info})
	if len(charts) != 1 {
		t.Fatalf("got %d chart sources, want 1", len(charts))
	}
	chart, ok := charts[0].(*sourcev1.OCIRepository)
	if !ok {
		t.Fatalf("chart source is %T, want an OCIRepository", charts[0])
	}
	if chart.Name != AddonChartName(testRelease, "cni") || chart.Spec.Reference.Digest != testChart || chart.Spec.Reference.Tag != "" {
		t.Errorf("chart %s reference %+v", chart.Name, chart.Spec.Reference)
	}
	if ls := chart.Spec.LayerSelector; ls == nil || ls.MediaType != HelmChartContentMediaType || ls.Operation != sourcev1.OCILayerCopy {
		t.Errorf("chart layer selector %+v, want the Helm chart layer, copied", ls)
	}
	if chart.Spec.Verify == nil || chart.Spec.SecretRef == nil || chart.Labels[csv1.ComponentLabel] != "cni" {
		t.Errorf("chart verification %+v, credentials %v, labels %v", chart.Spec.Verify, chart.Spec.SecretRef, chart.Labels)
	}

	cc := ClusterClassObjects(rel, csv1.ReleaseComponent{Name: csv1.ClusterClassComponent, Kind: csv1.ComponentKindHelm, Path: "cluster-class", Version: "2.0.0", ChartDigest: testChart})
	if _, ok := cc[0].(*sourcev1.OCIRepository); !ok {
		t.Errorf("cluster-class chart source is %T", cc[0])
	}
	if hr := cc[1].(*helmv2.HelmRelease); hr.Spec.ChartRef.Kind != sourcev1.OCIRepositoryKind || hr.Spec.ChartRef.Name != cc[0].GetName() {
		t.Errorf("cluster-class HelmRelease chartRef %+v", hr.Spec.ChartRef)
	}
	kcc := ClusterClassObjects(rel, csv1.ReleaseComponent{Name: csv1.ClusterClassComponent, Kind: csv1.ComponentKindKustomize, Path: "cluster-class"})
	if ks := kcc[0].(*kustomizev1.Kustomization); ks.Spec.SourceRef.Kind != sourcev1.OCIRepositoryKind || ks.Spec.Path != "./cluster-class" {
		t.Errorf("cluster-class Kustomization source %+v path %s", ks.Spec.SourceRef, ks.Spec.Path)
	}

	objs := AddonObjects(ClusterInput{Cluster: "c1", Namespace: testNS, Stack: "aws-base", Release: rel, Components: []csv1.ReleaseComponent{cni, info}})
	if hr := objs[0].(*helmv2.HelmRelease); hr.Spec.ChartRef.Kind != sourcev1.OCIRepositoryKind || hr.Spec.ChartRef.Name != chart.Name {
		t.Errorf("addon HelmRelease chartRef %+v", hr.Spec.ChartRef)
	}
	if ks := objs[1].(*kustomizev1.Kustomization); ks.Spec.SourceRef.Kind != sourcev1.OCIRepositoryKind || ks.Spec.Path != "./cluster-addon/info" {
		t.Errorf("addon Kustomization source %+v path %s", ks.Spec.SourceRef, ks.Spec.Path)
	}
}

// TestChartVersion: helm-controller reports a chart read from an OCIRepository at its version
// as semver with the digest's first 12 hex digits as build metadata (replacing the chart's own).
func TestChartVersion(t *testing.T) {
	for _, tt := range []struct {
		c    csv1.ReleaseComponent
		want string
	}{
		{csv1.ReleaseComponent{Version: "1.2.0"}, "1.2.0"},
		{csv1.ReleaseComponent{Version: "1.2.0", ChartDigest: testChart}, "1.2.0+fedcba987654"},
		{csv1.ReleaseComponent{Version: "1.2.0+build.7", ChartDigest: testChart}, "1.2.0+fedcba987654"},
		{csv1.ReleaseComponent{Version: "v1", ChartDigest: testChart}, "1.0.0+fedcba987654"},
	} {
		if got := ChartVersion(tt.c); got != tt.want {
			t.Errorf("ChartVersion(%+v) = %q, want %q", tt.c, got, tt.want)
		}
	}
}
