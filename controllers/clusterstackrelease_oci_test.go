package controllers

import (
	"strings"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/ocistack"
	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
)

// TestChartDigests: a release read from a registry names a chart artifact for every Helm
// component, the cluster-class included; one it does not name, or a value that is no digest,
// makes the stack invalid with a message naming the component and the annotation.
func TestChartDigests(t *testing.T) {
	st := &stack.Stack{
		ClusterClass: stack.Component{Name: csv1.ClusterClassComponent, Kind: stack.KindHelm, Path: "cluster-class"},
		Components: []stack.Component{
			{Name: "cni", Kind: stack.KindHelm, Path: "cluster-addon/cni"},
			{Name: "info", Kind: stack.KindKustomize, Path: "cluster-addon/info"},
		},
	}
	d1, d2 := "sha256:"+strings.Repeat("a", 64), "sha256:"+strings.Repeat("b", 64)
	all := map[string]string{
		ocistack.ChartAnnotationPrefix + "cluster-class": d1,
		ocistack.ChartAnnotationPrefix + "cni":           d2,
		"org.opencontainers.image.revision":              "v1@sha1:abc",
	}
	got, err := chartDigests(&meta.Artifact{Metadata: all}, st)
	if err != nil || got[csv1.ClusterClassComponent] != d1 || got["cni"] != d2 || len(got) != 2 {
		t.Fatalf("chartDigests = %v, %v", got, err)
	}

	delete(all, ocistack.ChartAnnotationPrefix+"cni")
	_, err = chartDigests(&meta.Artifact{Metadata: all}, st)
	if err == nil || !strings.Contains(err.Error(), "cluster-addon/cni/") || !strings.Contains(err.Error(), ocistack.ChartAnnotationPrefix+"cni") || !strings.Contains(err.Error(), "stackctl push") {
		t.Errorf("a Helm component without a chart artifact: %v", err)
	}

	all[ocistack.ChartAnnotationPrefix+"cni"] = "latest"
	_, err = chartDigests(&meta.Artifact{Metadata: all}, st)
	if err == nil || !strings.Contains(err.Error(), `is "latest", not a sha256 digest`) {
		t.Errorf("a chart annotation that is no digest: %v", err)
	}

	kust := &stack.Stack{ClusterClass: stack.Component{Name: csv1.ClusterClassComponent, Kind: stack.KindKustomize, Path: "cluster-class"}}
	if got, err := chartDigests(&meta.Artifact{}, kust); err != nil || len(got) != 0 {
		t.Errorf("a stack without charts needs no annotation: %v, %v", got, err)
	}
}

// TestArtifactOfOCIRelease: an OCI release's artifact is the release's when it is at the tag
// (not yet pinned) or at the validated digest (pinned).
func TestArtifactOfOCIRelease(t *testing.T) {
	hex := strings.Repeat("c", 64)
	rel := &csv1.ClusterStackRelease{}
	rel.Name = "aws-base-1-36-v1"
	rel.Spec.Source = csv1.StackSource{OCI: &csv1.OCISource{URL: "oci://r.example/s"}}
	repo := func(rev string) *sourcev1.OCIRepository {
		return &sourcev1.OCIRepository{Status: sourcev1.OCIRepositoryStatus{Artifact: &meta.Artifact{Revision: rev}}}
	}
	if !artifactOfRelease(rel, repo("aws-base-1-36-v1@sha256:"+hex)) || artifactOfRelease(rel, repo("aws-base-1-36-v2@sha256:"+hex)) {
		t.Error("unpinned: the artifact at the release's tag is the release's, another tag's is not")
	}
	rel.Status.Commit = hex
	if !artifactOfRelease(rel, repo("sha256:"+hex)) || artifactOfRelease(rel, repo("sha256:"+strings.Repeat("d", 64))) {
		t.Error("pinned: the artifact at the validated digest is the release's, another digest's is not")
	}
	if artifactOfRelease(rel, &sourcev1.OCIRepository{}) {
		t.Error("no artifact is not the release's")
	}
}
