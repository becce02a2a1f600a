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

func TestScrubber(t *testing.T) {
	var s Scrubber
	s.Add("s3cr3t-value")
	s.Add("s3cr3t-value-longer")
	s.Add("abc") // too short to hide in texts
	got := s.Text("a: s3cr3t-value-longer\nb: s3cr3t-value\nc: abc\nurl: https://user:pw@git.example.com/x\n")
	want := "a: ***\nb: ***\nc: abc\nurl: https://git.example.com/x\n"
	if got != want {
		t.Errorf("Text = %q, want %q", got, want)
	}
	var nilScrubber *Scrubber
	if got := nilScrubber.Text("https://u:p@h/x"); got != "https://h/x" {
		t.Errorf("nil Scrubber: %q", got)
	}
}
