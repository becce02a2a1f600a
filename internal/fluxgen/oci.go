package fluxgen

import (
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// OCIRepositorySpec is the spec of a Flux OCIRepository reading src: its URL, credentials
// Secret (kubernetes.io/dockerconfigjson), CA Secret, plain http for a loopback registry and
// cosign verification, every Secret named, never copied. The caller sets the reference (and
// the layer selector).
func OCIRepositorySpec(src csv1.OCISource, interval metav1.Duration) sourcev1.OCIRepositorySpec {
	spec := sourcev1.OCIRepositorySpec{
		URL:           src.URL,
		SecretRef:     src.SecretRef.DeepCopy(),
		CertSecretRef: src.CertSecretRef.DeepCopy(),
		Insecure:      src.Insecure,
		Interval:      interval,
	}
	if v := src.Verify; v != nil {
		provider := v.Provider
		if provider == "" {
			provider = "cosign"
		}
		ref := v.SecretRef
		spec.Verify = &sourcev1.OCIRepositoryVerification{Provider: provider, SecretRef: &ref}
	}
	return spec
}
