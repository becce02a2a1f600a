// Package manifests builds the kustomize directories under config/ into objects, as
// `kubectl apply -k` would: the local plane and the tests install exactly what a deployment
// installs.
package manifests

import (
	"fmt"
	"path/filepath"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
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

// WebhookConfigurations builds the kustomize directory dir (config/webhook, or CAPI's core
// webhook configurations copied by hack/collect-crds.sh) and returns its Mutating- and
// ValidatingWebhookConfigurations, as a deployment installs them (none is not an error here).
func WebhookConfigurations(dir string) ([]*admissionv1.MutatingWebhookConfiguration, []*admissionv1.ValidatingWebhookConfiguration, error) {
	objs, err := Build(dir)
	if err != nil {
		return nil, nil, err
	}
	var muts []*admissionv1.MutatingWebhookConfiguration
	var vals []*admissionv1.ValidatingWebhookConfiguration
	for _, u := range objs {
		var target any
		switch u.GetKind() {
		case "MutatingWebhookConfiguration":
			m := &admissionv1.MutatingWebhookConfiguration{}
			muts, target = append(muts, m), m
		case "ValidatingWebhookConfiguration":
			v := &admissionv1.ValidatingWebhookConfiguration{}
			vals, target = append(vals, v), v
		default:
			continue
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, target, true); err != nil {
			return nil, nil, fmt.Errorf("%s: %s %s: %w", dir, u.GetKind(), u.GetName(), err)
		}
	}
	return muts, vals, nil
}
