package controllers

import (
	"net/url"
	"regexp"
)

// redactURL drops the user information (credentials) of a URL, for messages.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	u.User = nil
	return u.String()
}

var userinfoRE = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s]+@`)

// redactURLs drops the user information of every URL in a message.
func redactURLs(msg string) string {
	return userinfoRE.ReplaceAllString(msg, "$1")
}
