package redact

import "strings"

// Mask is what a hidden value is shown as.
const Mask = "***"

// Masks of a hidden value that changed, as `kubectl diff` shows a changed Secret value: the two
// sides differ, neither is shown.
const (
	MaskBefore = "*** (before)"
	MaskAfter  = "*** (after)"
)

// sensitiveWords are the words whose presence in the last segment of a values key marks a
// credential (compared without case and without '-', '_' and '.').
var sensitiveWords = []string{"password", "passwd", "passphrase", "secret", "token", "apikey", "privatekey", "credential", "bearer", "kubeconfig"}

// referenceSuffixes end keys that name where a credential is rather than hold it
// ("existingSecretName", "passwordKey", "tokenPath", "secretRef", "secretEnabled").
var referenceSuffixes = []string{"name", "names", "ref", "path", "file", "key", "keys", "enabled", "namespace", "mount", "mountpath"}

// SensitiveKey reports whether the last segment of a values key ("db.password", "auth_token",
// "tls.key", "cloudCredentials", "openstack[0].apiKey") names a credential, so that its value is
// shown as Mask: it contains one of sensitiveWords (case, '-', '_' and '.' ignored) and does not
// end with a word naming a reference (Name, Ref, Path, Key, ...), or it is "key" itself (tls.key).
func SensitiveKey(key string) bool {
	// A list element counts as the list: "apiKeys[0]" is the key "apiKeys".
	for strings.HasSuffix(key, "]") && strings.LastIndex(key, "[") > 0 {
		key = key[:strings.LastIndex(key, "[")]
	}
	last := key
	if i := strings.LastIndexAny(key, ".]"); i >= 0 {
		last = key[i+1:]
	}
	norm := strings.NewReplacer("-", "", "_", "", ".", "").Replace(strings.ToLower(last))
	if norm == "key" {
		return true
	}
	for _, w := range sensitiveWords {
		if !strings.Contains(norm, w) {
			continue
		}
		for _, suffix := range referenceSuffixes {
			if strings.HasSuffix(norm, suffix) && !strings.HasSuffix(w, suffix) && len(norm) > len(suffix) {
				return false
			}
		}
		return true
	}
	return false
}
