package webhooks

import (
	"fmt"
	"path/filepath"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/api/krusty"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// ConfigDir is the kustomize directory of the webhook configuration, relative to the
// repository root.
const ConfigDir = "config/webhook"

// LoadValidatingWebhookConfigurations builds the kustomize directory dir (normally
// <repo>/config/webhook) and returns the ValidatingWebhookConfigurations in it: what a
// deployment installs, matchConditions included. Local planes and tests install these with
// envtest (which replaces the Service reference by a local URL and the CA bundle by its own).
func LoadValidatingWebhookConfigurations(dir string) ([]*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
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
	var out []*admissionregistrationv1.ValidatingWebhookConfiguration
	for _, res := range rm.Resources() {
		if res.GetKind() != "ValidatingWebhookConfiguration" {
			continue
		}
		m, err := res.Map()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
		vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(m, vwc, true); err != nil {
			return nil, fmt.Errorf("%s: ValidatingWebhookConfiguration %s: %w", dir, res.GetName(), err)
		}
		out = append(out, vwc)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no ValidatingWebhookConfiguration (run `make manifests`)", dir)
	}
	return out, nil
}
