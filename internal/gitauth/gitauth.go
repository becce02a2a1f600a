// Package gitauth turns a Git repository URL and the data of a credentials Secret in the format
// of Flux's GitRepository `spec.secretRef` into what go-git needs to reach the repository, lists
// the repository's tags with the commits they point to, and keeps credentials out of every
// string it returns.
//
// Supported Secret keys, as for Flux's GitRepository:
//
//   - https: `username` and `password` (basic auth), or `bearerToken` (which wins over
//     username/password, as in Flux); `ca.crt` (legacy `caFile`) adds a CA bundle to the system
//     pool; `tls.crt` and `tls.key` (legacy `certFile` and `keyFile`) are a TLS client
//     certificate. Userinfo in the URL (https://user:pass@host/...) is used when the Secret has
//     no username/password, as Flux does.
//   - ssh: `identity` (a PEM private key), optional `password` (the key's passphrase) and the
//     mandatory `known_hosts`; the SSH user is the URL's user, else "git".
//   - http: no credential at all. A Secret with credentials (or a URL with userinfo) over plain
//     http is refused before the remote is contacted.
//
// The package keeps no global state: it installs no go-git protocol and changes no default
// HTTP transport.
package gitauth

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/fluxcd/pkg/ssh/knownhosts"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
)

// Keys of a Flux-format Git credentials Secret.
const (
	// KeyUsername is the basic auth user name (https).
	KeyUsername = "username"
	// KeyPassword is the basic auth password (https), or the passphrase of KeyIdentity (ssh).
	KeyPassword = "password"
	// KeyBearerToken is a bearer token sent in the Authorization header (https).
	KeyBearerToken = "bearerToken"
	// KeyCACert is a PEM CA bundle trusted in addition to the system roots (https).
	KeyCACert = "ca.crt"
	// KeyCAFile is the legacy name of KeyCACert; KeyCACert wins when both are set.
	KeyCAFile = "caFile"
	// KeyTLSCert is the PEM TLS client certificate (https), used with KeyTLSKey.
	KeyTLSCert = "tls.crt"
	// KeyTLSKey is the PEM key of KeyTLSCert.
	KeyTLSKey = "tls.key"
	// KeyCertFile is the legacy name of KeyTLSCert; KeyTLSCert wins when both are set.
	KeyCertFile = "certFile"
	// KeyKeyFile is the legacy name of KeyTLSKey; KeyTLSKey wins when both are set.
	KeyKeyFile = "keyFile"
	// KeyIdentity is the PEM SSH private key (ssh).
	KeyIdentity = "identity"
	// KeyKnownHosts holds the known_hosts lines the SSH server's host key must match (ssh).
	KeyKnownHosts = "known_hosts"
)

// knownKeys are the Secret keys this package reads, for the size check.
var knownKeys = []string{KeyUsername, KeyPassword, KeyBearerToken, KeyCACert, KeyCAFile, KeyTLSCert,
	KeyTLSKey, KeyCertFile, KeyKeyFile, KeyIdentity, KeyKnownHosts}

// Limits on what is read from a Secret and from a remote.
const (
	// MaxSecretValueBytes bounds the size of each Secret value used.
	MaxSecretValueBytes = 64 << 10
	// MaxRefs bounds the number of tags accepted from a remote.
	MaxRefs = 50000
	// MaxAdvertisementBytes bounds the size of the reference advertisement read from an
	// http(s) remote (about 200 bytes per reference for MaxRefs tags with their peeled entries
	// and some branches). The SSH transport of go-git offers no hook to count bytes: over SSH
	// only MaxRefs and the caller's deadline apply.
	MaxAdvertisementBytes = 32 << 20
)

// sshDialTimeout bounds the SSH connection and handshake.
const sshDialTimeout = 30 * time.Second

// Method says how a Remote authenticates.
type Method string

// Authentication methods of a Remote.
const (
	// Anonymous sends no credential.
	Anonymous Method = "anonymous"
	// Basic sends a user name and password (HTTP basic auth).
	Basic Method = "basic"
	// Bearer sends a bearer token.
	Bearer Method = "bearer"
	// SSHKey authenticates with an SSH private key and checks the host key with known_hosts.
	SSHKey Method = "ssh-key"
)

// Remote is a Git repository URL with the credentials to reach it, resolved from a Secret. Its
// String and every error it returns are free of credentials.
type Remote struct {
	url        string // without userinfo
	shown      string // url with its query, if any, hidden: the form put in messages
	scheme     string
	method     Method
	auth       transport.AuthMethod
	tlsConfig  *tls.Config // https only; nil means the default
	customCA   bool
	clientCert bool
	secrets    []string // values to hide from error texts
}

// NewRemote resolves the credentials to reach rawURL. secretName names the credentials Secret
// for error messages ("namespace/name"); empty means there is no Secret, and data is ignored.
// data is the Secret's data. It returns an error, free of credentials, when the URL or the
// Secret is invalid, when a value is larger than MaxSecretValueBytes, when credentials would go
// over plain http, or when an ssh URL lacks an identity or known_hosts. It never contacts the
// remote.
func NewRemote(rawURL, secretName string, data map[string][]byte) (*Remote, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error repeats the URL, userinfo included
		}
		return nil, fmt.Errorf("invalid repository URL %s: %s", RedactURL(rawURL), RedactText(err.Error()))
	}
	safeURL := RedactURL(rawURL)
	scheme := strings.ToLower(u.Scheme)
	if u.Host == "" {
		return nil, fmt.Errorf("invalid repository URL %s: no host", safeURL)
	}
	urlUser := u.User.Username()
	urlPass, _ := u.User.Password()
	clean := *u
	clean.User = nil
	clean.Scheme = scheme
	r := &Remote{url: clean.String(), shown: RedactURL(clean.String()), scheme: scheme, method: Anonymous}
	// Both URL parts can be credentials (a token is often given as the user name), and so can
	// the query (a token parameter), which error texts may echo.
	r.addSecrets(urlPass, u.RawQuery)
	for _, vs := range u.Query() {
		r.addSecrets(vs...)
	}
	if scheme != "ssh" {
		r.addSecrets(urlUser)
	}

	var secret func(string) []byte
	if secretName == "" {
		secret = func(string) []byte { return nil }
	} else {
		for _, k := range knownKeys {
			if n := len(data[k]); n > MaxSecretValueBytes {
				return nil, fmt.Errorf("credentials Secret %s: key %q holds %d bytes, more than the %d allowed", secretName, k, n, MaxSecretValueBytes)
			}
		}
		secret = func(k string) []byte { return data[k] }
	}
	first := func(keys ...string) []byte {
		for _, k := range keys {
			if v := secret(k); len(v) > 0 {
				return v
			}
		}
		return nil
	}

	switch scheme {
	case "ssh":
		return r.resolveSSH(secretName, urlUser, first)
	case "https", "http":
		return r.resolveHTTP(secretName, urlUser, urlPass, first)
	default:
		return nil, fmt.Errorf("unsupported URL scheme %q in %s: use https:// or ssh://", u.Scheme, safeURL)
	}
}

func (r *Remote) resolveHTTP(secretName, urlUser, urlPass string, first func(...string) []byte) (*Remote, error) {
	token := string(first(KeyBearerToken))
	user, pass := string(first(KeyUsername)), string(first(KeyPassword))
	ca := first(KeyCACert, KeyCAFile)
	cert, key := first(KeyTLSCert, KeyCertFile), first(KeyTLSKey, KeyKeyFile)
	r.addSecrets(token, pass)
	if secretName != "" && token == "" && user == "" && pass == "" && ca == nil && cert == nil && key == nil {
		hint := ""
		if first(KeyIdentity) != nil {
			hint = ": it holds an SSH identity, which needs an ssh:// URL"
		}
		return nil, fmt.Errorf("credentials Secret %s has none of the keys %s, %s, %s, %s, %s/%s for %s%s",
			secretName, KeyUsername, KeyPassword, KeyBearerToken, KeyCACert, KeyTLSCert, KeyTLSKey, r.shown, hint)
	}
	if token == "" { // as in Flux, a bearer token wins and URL userinfo fills in what the Secret lacks
		if user == "" {
			user = urlUser
		}
		if pass == "" {
			pass = urlPass
		}
	}
	if r.scheme == "http" && (token != "" || user != "" || pass != "" || cert != nil || key != nil) {
		from := "the URL's userinfo"
		if secretName != "" {
			from = "credentials Secret " + secretName
		}
		return nil, fmt.Errorf("refusing to send credentials (from %s) over plain http to %s: use an https URL", from, r.shown)
	}
	if r.scheme == "http" && ca != nil {
		return nil, fmt.Errorf("credentials Secret %s holds a CA certificate but %s is plain http: use https", secretName, r.shown)
	}
	switch {
	case token != "":
		r.method, r.auth = Bearer, &githttp.TokenAuth{Token: token}
	case user != "":
		r.method, r.auth = Basic, &githttp.BasicAuth{Username: user, Password: pass}
	case pass != "":
		return nil, fmt.Errorf("credentials for %s: %q requires %q", r.shown, KeyPassword, KeyUsername)
	}
	if ca == nil && cert == nil && key == nil {
		return r, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != nil {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("credentials Secret %s: %s holds no PEM certificate", secretName, KeyCACert)
		}
		cfg.RootCAs, r.customCA = pool, true
	}
	if (cert == nil) != (key == nil) {
		return nil, fmt.Errorf("credentials Secret %s: %s and %s must be given together", secretName, KeyTLSCert, KeyTLSKey)
	}
	if cert != nil {
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("credentials Secret %s: invalid client certificate %s/%s: %s", secretName, KeyTLSCert, KeyTLSKey, r.redactString(err.Error()))
		}
		cfg.Certificates, r.clientCert = []tls.Certificate{pair}, true
	}
	r.tlsConfig = cfg
	return r, nil
}

func (r *Remote) resolveSSH(secretName, urlUser string, first func(...string) []byte) (*Remote, error) {
	if secretName == "" {
		return nil, fmt.Errorf("%s is an ssh URL: it needs a credentials Secret with %s and %s", r.shown, KeyIdentity, KeyKnownHosts)
	}
	identity, hosts, passphrase := first(KeyIdentity), first(KeyKnownHosts), string(first(KeyPassword))
	r.addSecrets(passphrase)
	if identity == nil {
		return nil, fmt.Errorf("credentials Secret %s has no %s: an ssh URL (%s) needs an SSH private key", secretName, KeyIdentity, r.shown)
	}
	if hosts == nil {
		return nil, fmt.Errorf("credentials Secret %s has no %s: refusing SSH to %s without known host keys", secretName, KeyKnownHosts, r.shown)
	}
	user := urlUser
	if user == "" {
		user = "git"
	}
	if _, err := ssh.ParsePrivateKey(identity); passphrase == "" && errors.As(err, new(*ssh.PassphraseMissingError)) {
		return nil, fmt.Errorf("credentials Secret %s: %s is protected by a passphrase: give it as %s", secretName, KeyIdentity, KeyPassword)
	}
	pk, err := gitssh.NewPublicKeys(user, identity, passphrase)
	if err != nil {
		return nil, fmt.Errorf("credentials Secret %s: invalid %s: %s", secretName, KeyIdentity, r.redactString(err.Error()))
	}
	callback, algos, err := knownhosts.New(hosts)
	if err != nil {
		return nil, fmt.Errorf("credentials Secret %s: invalid %s: %s", secretName, KeyKnownHosts, r.redactString(err.Error()))
	}
	// As Flux does: with only ssh-rsa keys known, prefer its SHA-2 signature algorithms.
	if len(algos) == 1 && algos[0] == ssh.KeyAlgoRSA {
		algos = []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
	}
	r.method = SSHKey
	r.auth = &sshAuth{pk: pk, callback: callback, algos: algos}
	return r, nil
}

// sshAuth is go-git's public key auth with the host key check of a known_hosts Secret value,
// the host key algorithms it lists and a dial timeout.
type sshAuth struct {
	pk       *gitssh.PublicKeys
	callback ssh.HostKeyCallback
	algos    []string
}

func (a *sshAuth) Name() string   { return a.pk.Name() }
func (a *sshAuth) String() string { return a.pk.String() }

// ClientConfig returns the SSH client configuration; it never falls back to the process's
// known_hosts files, ssh-agent or default keys.
func (a *sshAuth) ClientConfig() (*ssh.ClientConfig, error) {
	return &ssh.ClientConfig{
		User:              a.pk.User,
		Auth:              []ssh.AuthMethod{ssh.PublicKeys(a.pk.Signer)},
		HostKeyCallback:   a.callback,
		HostKeyAlgorithms: a.algos,
		Timeout:           sshDialTimeout,
	}, nil
}

// URL returns the repository URL without userinfo, as it is contacted. Put SafeURL in messages.
func (r *Remote) URL() string { return r.url }

// SafeURL returns the repository URL without userinfo and with its query, if any, replaced by
// "***" (RedactURL): the form for statuses, events, logs and errors.
func (r *Remote) SafeURL() string { return r.shown }

// Method returns how the remote authenticates.
func (r *Remote) Method() Method { return r.method }

// String describes the remote for logs: URL without credentials, method, and TLS options.
func (r *Remote) String() string {
	parts := []string{string(r.method)}
	if r.customCA {
		parts = append(parts, "custom CA")
	}
	if r.clientCert {
		parts = append(parts, "client certificate")
	}
	return fmt.Sprintf("%s (%s)", r.shown, strings.Join(parts, ", "))
}

// GoString is String, so that %#v does not print credentials either.
func (r *Remote) GoString() string { return r.String() }

// Redact returns err with URL userinfo and the remote's credentials removed from its text; nil
// stays nil. errors.Is still sees the original error's chain; the original text is not reachable
// through errors.Unwrap.
func (r *Remote) Redact(err error) error {
	if err == nil {
		return nil
	}
	return &redactedError{msg: r.redactString(err.Error()), err: err}
}

func (r *Remote) redactString(s string) string {
	return redactText(s, r.secrets)
}

func (r *Remote) addSecrets(values ...string) {
	for _, v := range values {
		if len(v) >= minSecretLen {
			r.secrets = append(r.secrets, v)
		}
	}
	// Longest first, so that a secret containing another is hidden whole.
	sort.Slice(r.secrets, func(i, j int) bool { return len(r.secrets[i]) > len(r.secrets[j]) })
}
