package webhooks

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/clusterstack-io/clusterstack-operator/internal/manifests"
)

// ConfigDir is the kustomize directory of the webhook configuration, relative to the
// repository root.
const ConfigDir = "config/webhook"

// LoadValidatingWebhookConfigurations builds the kustomize directory dir (normally
// <repo>/config/webhook) and returns the ValidatingWebhookConfigurations in it: what a
// deployment installs, matchConditions included. Local planes and tests install these with
// envtest (which replaces the Service reference by a local URL and the CA bundle by its own).
func LoadValidatingWebhookConfigurations(dir string) ([]*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	objs, err := manifests.Build(dir)
	if err != nil {
		return nil, err
	}
	var out []*admissionregistrationv1.ValidatingWebhookConfiguration
	for _, u := range objs {
		if u.GetKind() != "ValidatingWebhookConfiguration" {
			continue
		}
		vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, vwc, true); err != nil {
			return nil, fmt.Errorf("%s: ValidatingWebhookConfiguration %s: %w", dir, u.GetName(), err)
		}
		out = append(out, vwc)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no ValidatingWebhookConfiguration (run `make manifests`)", dir)
	}
	return out, nil
}
