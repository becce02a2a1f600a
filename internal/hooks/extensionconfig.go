package hooks

import (
	"fmt"
	"net/url"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// ExtensionConfigName is the name of the ExtensionConfig registering the operator's Runtime
// Extension (config/runtimeextension). CAPI names the handlers "<handler>.<this name>".
const ExtensionConfigName = "clusterstack-operator"

// ExtensionConfig is the ExtensionConfig through which CAPI (with its RuntimeSDK feature gate)
// discovers and calls the operator's Runtime Extension at baseURL, the https URL of the
// operator's webhook server (e.g. https://127.0.0.1:9443 for a local plane; CAPI appends the
// hook paths), trusting caBundle (PEM) for its serving certificate. The hooks are called only
// for Clusters in namespaces labelled csv1.TenantNamespaceLabel=csv1.TenantNamespaceValue
// (NamespaceSelector): BeforeClusterUpgrade fails closed, and an operator outage must not hold
// the upgrade of Clusters that do not use cluster stacks. In a cluster, prefer
// config/runtimeextension, which points at the webhook Service and has CAPI inject the CA from
// the serving certificate's Secret.
func ExtensionConfig(baseURL string, caBundle []byte) (*runtimev1.ExtensionConfig, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("runtime extension URL %q: %w", baseURL, err)
	}
	if u.Scheme != "https" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("runtime extension URL %q must be https://host[:port][/path], without user, query or fragment (CAPI calls only https)", baseURL)
	}
	if len(caBundle) == 0 {
		return nil, fmt.Errorf("runtime extension at %s: the CA bundle is empty", baseURL)
	}
	return &runtimev1.ExtensionConfig{
		TypeMeta:   metav1.TypeMeta{APIVersion: runtimev1.GroupVersion.String(), Kind: "ExtensionConfig"},
		ObjectMeta: metav1.ObjectMeta{Name: ExtensionConfigName},
		Spec: runtimev1.ExtensionConfigSpec{
			ClientConfig:      runtimev1.ClientConfig{URL: baseURL, CABundle: append([]byte(nil), caBundle...)},
			NamespaceSelector: NamespaceSelector(),
		},
	}, nil
}

// NamespaceSelector selects the namespaces whose Clusters CAPI calls the Runtime Extension for:
// those labelled csv1.TenantNamespaceLabel=csv1.TenantNamespaceValue.
func NamespaceSelector() *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{csv1.TenantNamespaceLabel: csv1.TenantNamespaceValue}}
}
