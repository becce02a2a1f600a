package plane

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/clusterstack-io/clusterstack-operator/internal/manifests"
)

// crdSet is what the plane installs into the management API server: CRD files read by envtest
// and CRDs built from kustomize directories.
type crdSet struct {
	// paths are directories (or files) of plain CRD manifests.
	paths []string
	// built are the CRDs of the kustomize directories, with conversion strategy None.
	built []*apiextensionsv1.CustomResourceDefinition
	// byDir names the CRDs built from each kustomize directory (by its base name).
	byDir map[string][]string
}

// loadCRDs sorts dirs into plain manifest directories and kustomize directories (a provider's
// config/crd as copied by hack/collect-crds.sh), building the latter as the provider's own
// installation does, so that the CRDs carry the cluster.x-k8s.io/<contract> labels CAPI reads
// API versions from. The conversion webhooks these directories configure point at Services
// that do not exist here: the CRDs are installed with conversion None, and the plane points
// those it serves a converter for at it (Options.WithCAPI).
func loadCRDs(dirs []string) (crdSet, error) {
	set := crdSet{byDir: map[string][]string{}}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "kustomization.yaml")); errors.Is(err, os.ErrNotExist) {
			set.paths = append(set.paths, d)
			continue
		}
		objs, err := manifests.Build(d)
		if err != nil {
			return set, fmt.Errorf("plane: CRDs of %s: %w", d, err)
		}
		for _, o := range objs {
			if o.GetKind() != "CustomResourceDefinition" {
				continue
			}
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, crd); err != nil {
				return set, fmt.Errorf("plane: CRD %s of %s: %w", o.GetName(), d, err)
			}
			crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
			set.built = append(set.built, crd)
			set.byDir[filepath.Base(d)] = append(set.byDir[filepath.Base(d)], crd.Name)
		}
	}
	return set, nil
}

// addStandIns adds a stand-in CRD for each kind that no built CRD serves.
func (s *crdSet) addStandIns(kinds []schema.GroupVersionKind) {
	for _, gvk := range kinds {
		served := false
		for _, crd := range s.built {
			served = served || (crd.Spec.Group == gvk.Group && crd.Spec.Names.Kind == gvk.Kind)
		}
		if !served {
			s.built = append(s.built, StandInCRD(gvk))
		}
	}
}
