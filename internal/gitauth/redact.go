package gitauth

import (
	"errors"
	"net/url"
	"regexp"
	"strings"
)

// minSecretLen is the shortest credential value hidden verbatim from error texts: shorter values
// would turn ordinary words into "***" without protecting anything.
const minSecretLen = 4

// redacted replaces a hidden value.
const redacted = "***"

// RedactURL returns rawURL without its userinfo (https://user:pass@host/p becomes
// https://host/p) and with its query, if any, replaced by "***". A string that does not parse as
// a URL (such as the scp-like user@host:path) loses everything between "://", or its start,
// and its last "@". Use it for every repository URL put in a
// status, an event or a log.
func RedactURL(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Opaque != "" {
		prefix, rest := "", rawURL
		if i := strings.Index(rawURL, "://"); i >= 0 {
			prefix, rest = rawURL[:i+3], rawURL[i+3:]
		}
		if j := strings.LastIndex(rest, "@"); j >= 0 {
			return prefix + rest[j+1:]
		}
		return rawURL
	}
	if u.User == nil && u.RawQuery == "" {
		return rawURL
	}
	u.User = nil
	if u.RawQuery != "" {
		u.RawQuery = redacted
	}
	return u.String()
}

// urlUserinfo matches the userinfo of URLs inside a text.
var urlUserinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^\s/?#@"'<>]*@`)

// RedactText returns s with the userinfo of every URL it contains removed.
func RedactText(s string) string {
	return urlUserinfo.ReplaceAllString(s, "$1")
}

// redactText is RedactText that also replaces every occurrence of the given values with "***".
// secrets must be sorted longest first.
func redactText(s string, secrets []string) string {
	s = RedactText(s)
	for _, v := range secrets {
		if len(v) >= minSecretLen {
			s = strings.ReplaceAll(s, v, redacted)
			// Also the forms a URL or an HTTP client may have escaped it into.
			if e := url.QueryEscape(v); e != v {
				s = strings.ReplaceAll(s, e, redacted)
			}
			if e := url.PathEscape(v); e != v {
				s = strings.ReplaceAll(s, e, redacted)
			}
		}
	}
	return s
}

// redactedError is an error whose text was redacted. It matches the original error's chain with
// errors.Is, but does not unwrap to it, so the original text cannot be printed by accident.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }

// Is reports whether the original error matches target.
func (e *redactedError) Is(target error) bool { return errors.Is(e.err, target) }
