package gitauth

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/clusterstack-io/clusterstack-operator/internal/redact"
)

// TokenUser is the user name sent with a forge token as the password of HTTP basic auth (Gitea
// and GitHub accept any user name with a token).
const TokenUser = "x-access-token"

// plainHTTPError is the refusal to send credentials over plain http: the one rule of this
// package, for a Remote resolved from a Secret and for a forge token alike.
func plainHTTPError(from, shown string) error {
	return fmt.Errorf("refusing to send credentials (from %s) over plain http to %s: use an https URL", from, shown)
}

// RefusePlainHTTP returns an error, free of credentials, when credentials (named by from, e.g.
// "Secret ns/bot") would be sent to rawURL over plain http. An https URL passes; so does an http
// URL whose host is a loopback address (IsLoopback) when allowLoopback is set: a local plane or
// a test, where the traffic never leaves the machine. Other schemes pass (the caller decides
// which it supports).
func RefusePlainHTTP(rawURL, from string, allowLoopback bool) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return fmt.Errorf("invalid URL %s", redact.URL(rawURL))
	}
	if !strings.EqualFold(u.Scheme, "http") || (allowLoopback && IsLoopback(u.Hostname())) {
		return nil
	}
	return plainHTTPError(from, redact.URL(rawURL))
}

// IsLoopback reports whether host (without port) is a loopback IP address (127.0.0.0/8, ::1)
// or "localhost". Names are not resolved: what a name resolves to can change between the check
// and the connection.
func IsLoopback(host string) bool {
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// NewTokenRemote returns the Remote of an http(s) repository reached with a forge token (HTTP
// basic auth, user TokenUser), as the operator pushes proposal branches. from names where the
// token comes from, for messages. Like NewRemote, it refuses to send the token over plain
// http (RefusePlainHTTP, with its loopback exception when allowLoopbackHTTP is set), and every
// error and string of the Remote is free of the token.
func NewTokenRemote(rawURL, from, token string, allowLoopbackHTTP bool) (*Remote, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("invalid repository URL %s", redact.URL(rawURL))
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "https" && scheme != "http" {
		return nil, fmt.Errorf("unsupported URL scheme %q in %s: a forge token is sent over https", u.Scheme, redact.URL(rawURL))
	}
	if u.User != nil {
		return nil, fmt.Errorf("the repository URL %s has userinfo: the token is sent from %s, remove the userinfo from the URL", redact.URL(rawURL), from)
	}
	if err := RefusePlainHTTP(rawURL, from, allowLoopbackHTTP); err != nil {
		return nil, err
	}
	clean := *u
	clean.Scheme = scheme
	r := &Remote{url: clean.String(), shown: redact.URL(clean.String()), scheme: scheme, method: Anonymous}
	r.addSecrets(u.RawQuery)
	for _, vs := range u.Query() {
		r.addSecrets(vs...)
	}
	if token != "" {
		r.method, r.auth = Basic, &githttp.BasicAuth{Username: TokenUser, Password: token}
		r.addSecrets(token)
	}
	return r, nil
}

// AuthMethod returns the go-git authentication of the remote (nil when anonymous), for the
// Git operations the package does not do itself (clone, fetch, push).
func (r *Remote) AuthMethod() transport.AuthMethod { return r.auth }
