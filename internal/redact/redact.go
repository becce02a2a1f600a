// Package redact removes credentials from what the operator writes into statuses, events, logs
// and admission messages.
package redact

import (
	"net/url"
	"regexp"
)

// URL drops the user information (credentials) of a URL.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	u.User = nil
	return u.String()
}

var userinfoRE = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s]+@`)

// URLs drops the user information of every URL in a message.
func URLs(msg string) string {
	return userinfoRE.ReplaceAllString(msg, "$1")
}
