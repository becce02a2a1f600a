// Package redact removes credentials from what the operator writes into statuses, events, logs,
// errors, admission messages, pull requests and upgrade diffs: the user information and query of
// a URL (URL), the user information of every URL in a text (URLs), known secret values wherever
// they appear in a text (Scrubber, Secrets, Error), and the values of Secrets and of keys that
// name credentials (SensitiveKey, Mask).
package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// URL returns raw without its user information (https://user:pass@host/p becomes
// https://host/p) and with its query, if any, replaced by Mask (a token parameter). A string
// that does not parse as a URL, or parses as an opaque one (such as the scp-like
// user@host:path), loses everything between "://", or its start, and its last "@". Use it for
// every repository, registry or API URL put in a status, an event, a log or an error.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" {
		prefix, rest := "", raw
		if i := strings.Index(raw, "://"); i >= 0 {
			prefix, rest = raw[:i+3], raw[i+3:]
		}
		if j := strings.LastIndex(rest, "@"); j >= 0 {
			return prefix + rest[j+1:]
		}
		return raw
	}
	if u.User == nil && u.RawQuery == "" {
		return raw
	}
	u.User = nil
	if u.RawQuery != "" {
		u.RawQuery = Mask
	}
	return u.String()
}

// userinfoRE matches the user information of URLs inside a text: everything between "://" and
// the first "@" that is not separated from it by a '/' or white space (so a password holding a
// '?', '#' or quote is dropped whole), including empty user information.
var userinfoRE = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s]*@`)

// URLs drops the user information of every URL in a text.
func URLs(text string) string {
	return userinfoRE.ReplaceAllString(text, "$1")
}
