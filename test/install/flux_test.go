package install_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/clusterstack-io/clusterstack-operator/internal/manifests"
	"github.com/clusterstack-io/clusterstack-operator/test/install"
)

// fluxInstall builds config/flux/<dir> and returns its GitRepository and the other object,
// converted strictly (an unknown field fails).
func fluxInstall(t *testing.T, dir string) (*sourcev1.GitRepository, *unstructured.Unstructured) {
	t.Helper()
	objs, err := manifests.Build(filepath.Join(repoRoot(t), install.FluxDir, dir))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 {
		t.Fatalf("config/flux/%s has %d objects, want a GitRepository and the install", dir, len(objs))
	}
	repo := &sourcev1.GitRepository{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(objs[0].Object, repo, true); err != nil || objs[0].GetKind() != sourcev1.GitRepositoryKind {
		t.Fatalf("config/flux/%s: first object %s: %v", dir, objs[0].GetKind(), err)
	}
	return repo, objs[1]
}

// TestFluxInstallObjects: the documented Flux objects (config/flux) are valid Flux objects that
// fetch this repository at the operator's release tag and install the chart (HelmRelease) or
// config/default (Kustomization) from paths that exist, with the release's image.
func TestFluxInstallObjects(t *testing.T) {
	root := repoRoot(t)
	version, err := install.Version(root)
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	module := strings.Fields(strings.SplitN(string(gomod), "\n", 2)[0])[1]
	checkRepo := func(t *testing.T, repo *sourcev1.GitRepository) {
		if repo.Spec.URL != "https://"+module {
			t.Errorf("GitRepository url %q, want https://%s", repo.Spec.URL, module)
		}
		if repo.Spec.Reference == nil || repo.Spec.Reference.Tag != "v"+version {
			t.Errorf("GitRepository ref %+v, want tag v%s (VERSION in the Makefile): run make chart", repo.Spec.Reference, version)
		}
		if repo.Spec.Ignore == nil || !strings.Contains(*repo.Spec.Ignore, "!/config/") {
			t.Errorf("GitRepository ignore %v does not keep config/", repo.Spec.Ignore)
		}
	}
	existing := func(t *testing.T, path string) string {
		rel := strings.TrimPrefix(path, "./")
		if _, err := os.Stat(filepath.Join(root, rel)); err != nil || rel == path {
			t.Errorf("path %q is no ./-relative directory of this repository: %v", path, err)
		}
		return rel
	}

	t.Run("HelmRelease of the chart", func(t *testing.T) {
		repo, obj := fluxInstall(t, "helm")
		checkRepo(t, repo)
		hr := &helmv2.HelmRelease{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj.Object, hr, true); err != nil || obj.GetKind() != helmv2.HelmReleaseKind {
			t.Fatalf("%s: %v", obj.GetKind(), err)
		}
		spec := hr.Spec.Chart.Spec
		if existing(t, spec.Chart) != install.ChartDir || spec.SourceRef.Kind != sourcev1.GitRepositoryKind || spec.SourceRef.Name != repo.Name {
			t.Errorf("HelmRelease chart %+v, want %s of GitRepository %s", spec, install.ChartDir, repo.Name)
		}
		if hr.Spec.ReleaseName != install.DefaultReleaseName || hr.Spec.TargetNamespace != install.DefaultNamespace {
			t.Errorf("HelmRelease installs release %q into %q, want %q into %q", hr.Spec.ReleaseName, hr.Spec.TargetNamespace, install.DefaultReleaseName, install.DefaultNamespace)
		}
		if hr.Spec.Install == nil || hr.Spec.Install.CRDs != helmv2.CreateReplace || hr.Spec.Upgrade == nil || hr.Spec.Upgrade.CRDs != helmv2.CreateReplace {
			t.Error("HelmRelease does not create and update the chart's CRDs (install.crds, upgrade.crds: CreateReplace)")
		}
		vals := hr.GetValues()
		if _, err := install.Render(filepath.Join(root, install.ChartDir), hr.Spec.ReleaseName, hr.Spec.TargetNamespace, vals); err != nil {
			t.Errorf("the HelmRelease's values do not render: %v", err)
		}
	})
	t.Run("Kustomization of config/default", func(t *testing.T) {
		repo, obj := fluxInstall(t, "kustomize")
		checkRepo(t, repo)
		ks := &kustomizev1.Kustomization{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj.Object, ks, true); err != nil || obj.GetKind() != kustomizev1.KustomizationKind {
			t.Fatalf("%s: %v", obj.GetKind(), err)
		}
		if existing(t, ks.Spec.Path) != "config/default" || ks.Spec.SourceRef.Kind != sourcev1.GitRepositoryKind || ks.Spec.SourceRef.Name != repo.Name {
			t.Errorf("Kustomization applies %q of %+v, want config/default of GitRepository %s", ks.Spec.Path, ks.Spec.SourceRef, repo.Name)
		}
		if !ks.Spec.Prune || !ks.Spec.Wait {
			t.Error("Kustomization neither prunes nor waits")
		}
		if len(ks.Spec.Images) != 1 || ks.Spec.Images[0].Name != "clusterstack-operator" || ks.Spec.Images[0].NewTag != "v"+version {
			t.Errorf("Kustomization images %+v, want clusterstack-operator at v%s", ks.Spec.Images, version)
		}
	})
}
