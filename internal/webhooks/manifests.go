package webhooks

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

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
	_, out, err := manifests.WebhookConfigurations(dir)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no ValidatingWebhookConfiguration (run `make manifests`)", dir)
	}
	return out, nil
}
