// Package gitauth turns a Git repository URL and the data of a credentials Secret in the format
// of Flux's GitRepository `spec.secretRef` into what go-git needs to reach the repository, lists
// the repository's references with the commits they point to (reading the advertisement as a
// stream, within limits of bytes and references, and keeping only the references the caller
// asked for), and keeps credentials out of every string it returns.
//
// The Secret is read by Flux's own code, as source-controller v1.7.3 reads it
// (github.com/fluxcd/pkg/git v0.37.0 NewAuthOptions), and the options are turned into go-git
// authentication as Flux's go-git client does (fluxcd/pkg/git/gogit v0.41.0, whose helpers are
// unexported and whose package changes go-git's global capabilities when imported):
//
//   - https: `username` and `password` (basic auth), or `bearerToken` (when the key is present,
//     username and password of the Secret are not read); `ca.crt` (legacy `caFile`) adds a CA
//     bundle to the system pool; `tls.crt` and `tls.key` are a TLS client certificate (Flux
//     does not read the legacy `certFile` and `keyFile` for Git). Userinfo in the URL
//     (https://user:pass@host/...) fills in what the Secret lacks; with a bearer token it is
//     refused, as Flux refuses basic auth and a bearer token together.
//   - ssh: `identity` (a PEM private key), optional `password` (the key's passphrase) and the
//     `known_hosts` the server's host key must match (mandatory here: there is no fallback to
//     the process's known_hosts); the SSH user is the URL's user, else "git".
//   - http: no credential at all. A Secret with credentials (or a URL with userinfo) over plain
//     http is refused before the remote is contacted, as Flux does; so is a CA or client
//     certificate, which plain http would ignore.
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
	"strings"
	"time"

	fluxgit "github.com/fluxcd/pkg/git"
	"github.com/fluxcd/pkg/ssh/knownhosts"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"

	"github.com/clusterstack-io/clusterstack-operator/internal/redact"
)

// Keys of a Flux-format Git credentials Secret.
const (
	// KeyUsername is the basic auth user name (https).
	KeyUsername = "username"
	// KeyPassword is the basic auth password (https), or the passphrase of KeyIdentity (ssh).
	KeyPassword = "password"
	// KeyBearerToken is a bearer token sent in the Authorization header (https). When the key
	// is present, KeyUsername and KeyPassword are not read.
	KeyBearerToken = "bearerToken"
	// KeyCACert is a PEM CA bundle trusted in addition to the system roots (https).
	KeyCACert = "ca.crt"
	// KeyCAFile is the legacy name of KeyCACert; KeyCACert wins when both are set.
	KeyCAFile = "caFile"
	// KeyTLSCert is the PEM TLS client certificate (https), used with KeyTLSKey.
	KeyTLSCert = "tls.crt"
	// KeyTLSKey is the PEM key of KeyTLSCert.
	KeyTLSKey = "tls.key"
	// KeyIdentity is the PEM SSH private key (ssh).
	KeyIdentity = "identity"
	// KeyKnownHosts holds the known_hosts lines the SSH server's host key must match (ssh).
	KeyKnownHosts = "known_hosts"
)

// knownKeys are the Secret keys Flux reads for Git, for the size check.
var knownKeys = []string{KeyUsername, KeyPassword, KeyBearerToken, KeyCACert, KeyCAFile, KeyTLSCert,
	KeyTLSKey, KeyIdentity, KeyKnownHosts}

// legacyTLSKeys are the names of a TLS client certificate and key that Flux reads for Helm
// repositories but not for Git: a Secret holding them gets a hint.
var legacyTLSKeys = []string{"certFile", "keyFile"}

// Limits on what is read from a Secret and from a remote.
const (
	// MaxSecretValueBytes bounds the size of each Secret value used.
	MaxSecretValueBytes = 64 << 10
	// MaxRefs bounds the number of references a remote may advertise (branches and tags; the
	// peeled entries of annotated tags are not counted).
	MaxRefs = 50000
	// MaxAdvertisementBytes bounds the bytes of reference advertisement read from a remote, over
	// https and ssh alike (about 300 bytes per reference for MaxRefs references with their
	// peeled entries). The advertisement is read as a stream and never held: the bound is on
	// the time and traffic of a listing, not on its memory.
	MaxAdvertisementBytes = 16 << 20
	// MaxKeptRefs bounds the number of references a listing keeps (those of the form its caller
	// asked for), unless the caller gives another bound.
	MaxKeptRefs = 1000
	// MaxRefNameBytes bounds the name of a reference a listing keeps, unless the caller gives
	// another bound.
	MaxRefNameBytes = 1024
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
	secrets    redact.Scrubber // values to hide from error texts
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
		return nil, fmt.Errorf("invalid repository URL %s: %s", redact.URL(rawURL), redact.URLs(err.Error()))
	}
	safeURL := redact.URL(rawURL)
	scheme := strings.ToLower(u.Scheme)
	if u.Host == "" {
		return nil, fmt.Errorf("invalid repository URL %s: no host", safeURL)
	}
	urlUser := u.User.Username()
	urlPass, _ := u.User.Password()
	clean := *u
	clean.User = nil
	clean.Scheme = scheme
	r := &Remote{url: clean.String(), shown: redact.URL(clean.String()), scheme: scheme, method: Anonymous}
	// Both URL parts can be credentials (a token is often given as the user name), and so can
	// the query (a token parameter), which error texts may echo.
	r.addSecrets(urlPass, u.RawQuery)
	for _, vs := range u.Query() {
		r.addSecrets(vs...)
	}
	if scheme != "ssh" {
		r.addSecrets(urlUser)
	}

	if secretName == "" {
		data = nil
	} else {
		for _, k := range knownKeys {
			if n := len(data[k]); n > MaxSecretValueBytes {
				return nil, fmt.Errorf("credentials Secret %s: key %q holds %d bytes, more than the %d allowed", secretName, k, n, MaxSecretValueBytes)
			}
		}
	}
	switch scheme {
	case "ssh":
		if err := r.checkSSHSecret(secretName, data); err != nil {
			return nil, err
		}
	case "https", "http":
		if err := r.checkHTTPSecret(secretName, data); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unsupported URL scheme %q in %s: use https:// or ssh://", u.Scheme, safeURL)
	}
	// The Secret as source-controller reads it.
	parsed := *u
	parsed.Scheme = scheme
	opts, err := fluxgit.NewAuthOptions(parsed, data)
	if err != nil {
		what := "credentials for " + r.shown
		if secretName != "" {
			what = "credentials Secret " + secretName + " for " + r.shown
		}
		return nil, fmt.Errorf("%s: %s", what, r.redactString(err.Error()))
	}
	// What Flux uses, and what it leaves unread (a password beside a bearer token).
	r.addSecrets(opts.Password, opts.BearerToken, string(data[KeyPassword]), string(data[KeyBearerToken]))
	if scheme == "ssh" {
		return r.resolveSSH(secretName, opts)
	}
	secretCreds := false
	for _, k := range []string{KeyUsername, KeyPassword, KeyBearerToken, KeyTLSCert, KeyTLSKey} {
		secretCreds = secretCreds || len(data[k]) > 0
	}
	return r.resolveHTTP(secretName, secretCreds, u.User != nil, opts)
}

// checkHTTPSecret reports, for an http(s) URL, a Secret that holds none of the keys Flux reads
// for http(s), with a hint at what it holds instead.
func (r *Remote) checkHTTPSecret(secretName string, data map[string][]byte) error {
	if secretName == "" {
		return nil
	}
	for _, k := range []string{KeyUsername, KeyPassword, KeyBearerToken, KeyCACert, KeyCAFile, KeyTLSCert, KeyTLSKey} {
		if len(data[k]) > 0 {
			return nil
		}
	}
	hint := ""
	switch {
	case len(data[KeyIdentity]) > 0:
		hint = ": it holds an SSH identity, which needs an ssh:// URL"
	case len(data[legacyTLSKeys[0]]) > 0 || len(data[legacyTLSKeys[1]]) > 0:
		hint = fmt.Sprintf(": Flux does not read %s/%s for Git, rename them %s/%s", legacyTLSKeys[0], legacyTLSKeys[1], KeyTLSCert, KeyTLSKey)
	}
	return fmt.Errorf("credentials Secret %s has none of the keys %s, %s, %s, %s, %s/%s for %s%s",
		secretName, KeyUsername, KeyPassword, KeyBearerToken, KeyCACert, KeyTLSCert, KeyTLSKey, r.shown, hint)
}

// checkSSHSecret reports, for an ssh URL, a missing Secret, identity or known_hosts (which
// Flux's option validation would report less precisely).
func (r *Remote) checkSSHSecret(secretName string, data map[string][]byte) error {
	switch {
	case secretName == "":
		return fmt.Errorf("%s is an ssh URL: it needs a credentials Secret with %s and %s", r.shown, KeyIdentity, KeyKnownHosts)
	case len(data[KeyIdentity]) == 0:
		return fmt.Errorf("credentials Secret %s has no %s: an ssh URL (%s) needs an SSH private key", secretName, KeyIdentity, r.shown)
	case len(data[KeyKnownHosts]) == 0:
		return fmt.Errorf("credentials Secret %s has no %s: refusing SSH to %s without known host keys", secretName, KeyKnownHosts, r.shown)
	}
	return nil
}

// resolveHTTP turns Flux's options for an http(s) URL into go-git authentication and a TLS
// configuration, with the checks of Flux's go-git client (no basic auth together with a bearer
// token, no credentials over plain http). secretCreds says whether the Secret holds
// credentials (rather than only a CA), urlUserinfo whether the URL has userinfo.
func (r *Remote) resolveHTTP(secretName string, secretCreds, urlUserinfo bool, opts *fluxgit.AuthOptions) (*Remote, error) {
	basic := opts.Username != "" || opts.Password != ""
	if basic && opts.BearerToken != "" {
		return nil, fmt.Errorf("credentials Secret %s has a %s and the URL %s has userinfo: Flux refuses basic auth and a bearer token together; remove the userinfo from the URL",
			secretName, KeyBearerToken, r.shown)
	}
	// An empty value counts as absent.
	nonEmpty := func(b []byte) []byte {
		if len(b) == 0 {
			return nil
		}
		return b
	}
	ca, cert, key := nonEmpty(opts.CAFile), nonEmpty(opts.ClientCert), nonEmpty(opts.ClientKey)
	if opts.Transport == fluxgit.HTTP && (basic || opts.BearerToken != "" || urlUserinfo || cert != nil || key != nil) {
		from := "the URL's userinfo"
		if secretCreds {
			from = "credentials Secret " + secretName
		}
		return nil, plainHTTPError(from, r.shown)
	}
	if opts.Transport == fluxgit.HTTP && ca != nil {
		return nil, fmt.Errorf("credentials Secret %s holds a CA certificate but %s is plain http: use https", secretName, r.shown)
	}
	// As Flux's go-git client: basic auth when a user name or password is set, else the token.
	switch {
	case basic:
		r.method, r.auth = Basic, &githttp.BasicAuth{Username: opts.Username, Password: opts.Password}
	case opts.BearerToken != "":
		r.method, r.auth = Bearer, &githttp.TokenAuth{Token: opts.BearerToken}
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

// resolveSSH turns Flux's options for an ssh URL into go-git public key authentication that
// checks the host key against known_hosts, as Flux's go-git client does.
func (r *Remote) resolveSSH(secretName string, opts *fluxgit.AuthOptions) (*Remote, error) {
	if _, err := ssh.ParsePrivateKey(opts.Identity); opts.Password == "" && errors.As(err, new(*ssh.PassphraseMissingError)) {
		return nil, fmt.Errorf("credentials Secret %s: %s is protected by a passphrase: give it as %s", secretName, KeyIdentity, KeyPassword)
	}
	pk, err := gitssh.NewPublicKeys(opts.Username, opts.Identity, opts.Password)
	if err != nil {
		return nil, fmt.Errorf("credentials Secret %s: invalid %s: %s", secretName, KeyIdentity, r.redactString(err.Error()))
	}
	callback, algos, err := knownhosts.New(opts.KnownHosts)
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
// "***" (redact.URL): the form for statuses, events, logs and errors.
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
	return r.secrets.Error(err)
}

func (r *Remote) redactString(s string) string {
	return r.secrets.Text(s)
}

func (r *Remote) addSecrets(values ...string) {
	r.secrets.Add(values...)
}
