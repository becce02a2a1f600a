// Package manifests builds the kustomize directories under config/ into objects, as
// `kubectl apply -k` would: the local plane and the tests install exactly what a deployment
// installs.
package manifests

import (
	"fmt"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Build runs kustomize on the directory dir (root-only load restrictions, no plugins) and
// returns its objects in the order kustomize emits them.
func Build(dir string) ([]*unstructured.Unstructured, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	k := krusty.MakeKustomizer(&krusty.Options{
		LoadRestrictions: kustypes.LoadRestrictionsRootOnly,
		PluginConfig:     kustypes.DisabledPluginConfig(),
	})
	rm, err := k.Run(filesys.MakeFsOnDisk(), abs)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	var out []*unstructured.Unstructured
	for _, res := range rm.Resources() {
		m, err := res.Map()
		if err != nil {
			return nil, fmt.Errorf("%s: %s %s: %w", dir, res.GetKind(), res.GetName(), err)
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out, nil
}
