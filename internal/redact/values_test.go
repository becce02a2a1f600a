package redact

import "testing"

func TestSensitiveKey(t *testing.T) {
	for key, want := range map[string]bool{
		"db.password":                 true,
		"auth_token":                  true,
		"tls.key":                     true,
		"cloudCredentials":            true,
		"openstack[0].apiKey":         true,
		"api-key":                     true,
		"clientSecret":                true,
		"privateKey":                  true,
		"token":                       true,
		"existingSecretName":          false,
		"passwordKey":                 false,
		"tls.secretName":              false,
		"tokenPath":                   false,
		"secretRef":                   false,
		"podCIDR":                     false,
		"apiServer.host":              false,
		"monkey":                      false,
		"keys[0]":                     false,
		"apiTokens[1]":                true,
		"infra_region":                false,
		"cluster_name":                false,
		"helm_values_cni":             false,
		"serviceAccount.automountKey": false,
	} {
		if got := SensitiveKey(key); got != want {
			t.Errorf("SensitiveKey(%q) = %t, want %t", key, got, want)
		}
	}
}
