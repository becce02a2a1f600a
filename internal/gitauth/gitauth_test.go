package gitauth

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/clusterstack-io/clusterstack-operator/internal/gitauth/gittest"
)

// Credential values the tests check never show up in any returned text.
const (
	testPassword   = "hunter22-pw"
	testToken      = "tok-3456-bearer"
	testPassphrase = "s3cret-pass"
	testURLPass    = "urlpass99"
	testURLUser    = "ghp_urluser77"
)

var testSecrets = []string{testPassword, testToken, testPassphrase, testURLPass, testURLUser}

// testPKI is a throw-away CA issuing server and client certificates.
type testPKI struct {
	caPEM  []byte
	caCert *x509.Certificate
	caKey  *ecdsa.PrivateKey
}

func newTestPKI(t testing.TB) *testPKI {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testPKI{caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), caCert: cert, caKey: key}
}

// issue returns a PEM certificate and key signed by the CA, for a client or for 127.0.0.1.
func (p *testPKI) issue(t testing.TB, client bool) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "leaf"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	if client {
		tmpl.ExtKeyUsage, tmpl.IPAddresses = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, nil
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// sshKey returns a PEM OpenSSH private key (encrypted with passphrase if not empty) and its
// signer.
func sshKey(t testing.TB, passphrase string) ([]byte, ssh.Signer) {
	t.Helper()
	return gittest.SSHKey(t, passphrase)
}

// assertNoSecret fails when a test credential appears in s.
func assertNoSecret(t *testing.T, what, s string) {
	t.Helper()
	for _, v := range testSecrets {
		if strings.Contains(s, v) {
			t.Errorf("%s leaks %q: %s", what, v, s)
		}
	}
}

func TestNewRemoteMapsFluxSecret(t *testing.T) {
	pki := newTestPKI(t)
	clientCert, clientKey := pki.issue(t, true)
	identity, _ := sshKey(t, "")
	encIdentity, _ := sshKey(t, testPassphrase)
	_, hostSigner := sshKey(t, "")
	knownHosts := []byte(knownhosts.Line([]string{"git.example.com"}, hostSigner.PublicKey()) + "\n")
	big := bytes.Repeat([]byte("a"), MaxSecretValueBytes+1)

	type want struct {
		method     Method
		user, pass string // basic auth, or the SSH user
		token      string
		customCA   bool
		clientCert bool
		errHas     string // error expected when not empty
	}
	tests := []struct {
		name   string
		url    string
		secret string // "" means no Secret
		data   map[string][]byte
		want   want
	}{
		{"https without Secret is anonymous", "https://git.example.com/org/stack.git", "", nil,
			want{method: Anonymous}},
		{"username and password", "https://git.example.com/org/stack.git", "ns/creds",
			map[string][]byte{"username": []byte("dev"), "password": []byte(testPassword)},
			want{method: Basic, user: "dev", pass: testPassword}},
		{"bearer token", "https://git.example.com/org/stack.git", "ns/creds",
			map[string][]byte{"bearerToken": []byte(testToken)},
			want{method: Bearer, token: testToken}},
		{"bearer token wins over username/password, as in Flux", "https://git.example.com/org/stack.git", "ns/creds",
			map[string][]byte{"bearerToken": []byte(testToken), "username": []byte("dev"), "password": []byte(testPassword)},
			want{method: Bearer, token: testToken}},
		{"an empty bearerToken key still hides username/password, as in Flux", "https://git.example.com/org/stack.git", "ns/creds",
			map[string][]byte{"bearerToken": {}, "username": []byte("dev"), "password": []byte(testPassword)},
			want{method: Anonymous}},
		{"bearer token with URL userinfo is refused, as by Flux", "https://" + testURLUser + ":" + testURLPass + "@git.example.com/org/stack.git", "ns/creds",
			map[string][]byte{"bearerToken": []byte(testToken)},
			want{errHas: "credentials Secret ns/creds has a bearerToken and the URL https://git.example.com/org/stack.git has userinfo: Flux refuses basic auth and a bearer token together"}},
		{"URL user name with the Secret's password", "https://" + testURLUser + "@git.example.com/org/stack.git", "ns/creds",
			map[string][]byte{"password": []byte(testPassword)},
			want{method: Basic, user: testURLUser, pass: testPassword}},
		{"URL userinfo without Secret", "https://" + testURLUser + ":" + testURLPass + "@git.example.com/org/stack.git", "", nil,
			want{method: Basic, user: testURLUser, pass: testURLPass}},
		{"Secret wins over URL userinfo", "https://" + testURLUser + ":" + testURLPass + "@git.example.com/org/stack.git", "ns/creds",
			map[string][]byte{"username": []byte("dev"), "password": []byte(testPassword)},
			want{method: Basic, user: "dev", pass: testPassword}},
		{"password without username", "https://git.example.com/org/stack.git", "ns/creds",
			map[string][]byte{"password": []byte(testPassword)},
			want{errHas: `credentials Secret ns/creds for https://git.example.com/org/stack.git: invalid 'https' auth option: 'password' requires 'username' to be set`}},
		{"ca.crt alone", "https://git.example.com/org/stack.git", "ns/creds",
			map[string][]byte{"ca.crt": pki.caPEM},
			want{method: Anonymous, customCA: true}},
		{"legacy caFile with username/password", "https://git.example.com/org/stack.git", "ns/creds",
			map[string][]byte{"caFile": pki.caPEM, "username": []byte("dev"), "password": []byte(testPassword)},
			want{method: Basic, user: "dev", pass: testPassword, customCA: true}},
		{"ca.crt without a certificate", "https://git.example.com/org/stack.git", "ns/creds",
			map[string][]byte{"ca.crt": []byte("not a certificate")},
			want{errHas: "ca.crt holds no PEM certificate"}},
		{"TLS client certificate", "https://git.example.com/org/stack.git", "ns/creds",
			map[string][]byte{"tls.crt": clientCert, "tls.key": clientKey, "ca.crt": pki.caPEM},
			want{method: Anonymous, customCA: true, clientCert: true}},
		{"legacy certFile/keyFile are not read for Git, as by Flux", "https://git.example.com/org/stack.git", "ns/creds",
			map[string][]byte{"certFile": clientCert, "keyFile": clientKey, "bearerToken": []byte(testToken)},
			want{method: Bearer, token: testToken}},
		{"legacy certFile/keyFile alone", "https://git.example.com/org/stack.git", "ns/creds",
			map[string][]byte{"certFile": clientCert, "keyFile": clientKey},
			want{errHas: "Flux does not read certFile/keyFile for Git, rename them tls.crt/tls.key"}},
		{"empty TLS values count as absent", "https://git.example.com/org/stack.git", "ns/creds",
			map[string][]byte{"username": []byte("dev"), "password": []byte(testPassword), "tls.crt": {}, "tls.key": {}, "ca.crt": {}},
			want{method: Basic, user: "dev", pass: testPassword}},
		{"tls.crt without tls.key", "https://git.example.com/org/stack.git", "ns/creds",
			map[string][]byte{"tls.crt": clientCert},
			want{errHas: "tls.crt and tls.key must be given together"}},
		{"tls.key not matching tls.crt", "https://git.example.com/org/stack.git", "ns/creds",
			map[string][]byte{"tls.crt": clientCert, "tls.key": []byte("garbage")},
			want{errHas: "invalid client certificate"}},
		{"Secret without any known key", "https://git.example.com/org/stack.git", "ns/creds",
			map[string][]byte{"user": []byte("dev")},
			want{errHas: "has none of the keys username, password, bearerToken"}},
		{"Secret without data", "https://git.example.com/org/stack.git", "ns/creds", nil,
			want{errHas: "has none of the keys"}},
		{"SSH identity with an https URL", "https://git.example.com/org/stack.git", "ns/creds",
			map[string][]byte{"identity": identity, "known_hosts": knownHosts},
			want{errHas: "needs an ssh:// URL"}},
		{"value larger than the limit", "https://git.example.com/org/stack.git", "ns/creds",
			map[string][]byte{"username": []byte("dev"), "password": big},
			want{errHas: `key "password" holds 65537 bytes, more than the 65536 allowed`}},
		{"plain http, anonymous", "http://127.0.0.1:8080/stack.git", "", nil,
			want{method: Anonymous}},
		{"plain http with username/password", "http://127.0.0.1:8080/stack.git", "ns/creds",
			map[string][]byte{"username": []byte("dev"), "password": []byte(testPassword)},
			want{errHas: "refusing to send credentials (from credentials Secret ns/creds) over plain http to http://127.0.0.1:8080/stack.git: use an https URL"}},
		{"plain http with a bearer token", "http://127.0.0.1:8080/stack.git", "ns/creds",
			map[string][]byte{"bearerToken": []byte(testToken)},
			want{errHas: "refusing to send credentials (from credentials Secret ns/creds) over plain http to http://127.0.0.1:8080/stack.git: use an https URL"}},
		{"plain http with a client certificate", "http://127.0.0.1:8080/stack.git", "ns/creds",
			map[string][]byte{"tls.crt": clientCert, "tls.key": clientKey},
			want{errHas: "refusing to send credentials (from credentials Secret ns/creds) over plain http"}},
		{"plain http with URL userinfo", "http://" + testURLUser + ":" + testURLPass + "@127.0.0.1:8080/stack.git", "", nil,
			want{errHas: "refusing to send credentials (from the URL's userinfo) over plain http to http://127.0.0.1:8080/stack.git: use an https URL"}},
		{"plain http with a CA", "http://127.0.0.1:8080/stack.git", "ns/creds",
			map[string][]byte{"ca.crt": pki.caPEM},
			want{errHas: "is plain http: use https"}},
		{"ssh identity and known_hosts", "ssh://git.example.com/org/stack.git", "ns/creds",
			map[string][]byte{"identity": identity, "known_hosts": knownHosts},
			want{method: SSHKey, user: "git"}},
		{"ssh user from the URL", "ssh://deploy@git.example.com:2222/org/stack.git", "ns/creds",
			map[string][]byte{"identity": identity, "known_hosts": knownHosts},
			want{method: SSHKey, user: "deploy"}},
		{"ssh identity with its passphrase", "ssh://git.example.com/org/stack.git", "ns/creds",
			map[string][]byte{"identity": encIdentity, "password": []byte(testPassphrase), "known_hosts": knownHosts},
			want{method: SSHKey, user: "git"}},
		{"ssh identity with a wrong passphrase", "ssh://git.example.com/org/stack.git", "ns/creds",
			map[string][]byte{"identity": encIdentity, "password": []byte(testPassword), "known_hosts": knownHosts},
			want{errHas: "invalid identity"}},
		{"ssh identity without its passphrase", "ssh://git.example.com/org/stack.git", "ns/creds",
			map[string][]byte{"identity": encIdentity, "known_hosts": knownHosts},
			want{errHas: "identity is protected by a passphrase: give it as password"}},
		{"ssh without known_hosts", "ssh://git.example.com/org/stack.git", "ns/creds",
			map[string][]byte{"identity": identity},
			want{errHas: "has no known_hosts: refusing SSH to ssh://git.example.com/org/stack.git without known host keys"}},
		{"ssh with invalid known_hosts", "ssh://git.example.com/org/stack.git", "ns/creds",
			map[string][]byte{"identity": identity, "known_hosts": []byte("git.example.com ssh-ed25519 !!!")},
			want{errHas: "invalid known_hosts"}},
		{"ssh without identity", "ssh://git.example.com/org/stack.git", "ns/creds",
			map[string][]byte{"username": []byte("dev"), "password": []byte(testPassword), "known_hosts": knownHosts},
			want{errHas: "has no identity"}},
		{"ssh without Secret", "ssh://git@git.example.com/org/stack.git", "", nil,
			want{errHas: "needs a credentials Secret with identity and known_hosts"}},
		{"ssh with a password in the URL is not shown", "ssh://git:" + testURLPass + "@git.example.com/org/stack.git", "", nil,
			want{errHas: "ssh://git.example.com/org/stack.git is an ssh URL"}},
		{"unsupported scheme", "git://git.example.com/org/stack.git", "", nil,
			want{errHas: `unsupported URL scheme "git"`}},
		{"invalid URL with userinfo", "https://" + testURLUser + ":" + testURLPass + "@git.example.com:port/x", "", nil,
			want{errHas: "invalid repository URL https://git.example.com:port/x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewRemote(tt.url, tt.secret, tt.data)
			if tt.want.errHas != "" {
				if err == nil {
					t.Fatalf("got remote %v, want an error with %q", r, tt.want.errHas)
				}
				if !strings.Contains(err.Error(), tt.want.errHas) {
					t.Errorf("error %q does not contain %q", err, tt.want.errHas)
				}
				t.Logf("error: %v", err)
				assertNoSecret(t, "error", err.Error())
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if r.Method() != tt.want.method {
				t.Errorf("method %q, want %q", r.Method(), tt.want.method)
			}
			switch a := r.auth.(type) {
			case nil:
				if tt.want.method != Anonymous {
					t.Errorf("no auth, want %q", tt.want.method)
				}
			case *githttp.BasicAuth:
				if a.Username != tt.want.user || a.Password != tt.want.pass {
					t.Errorf("basic auth %q/%q, want %q/%q", a.Username, a.Password, tt.want.user, tt.want.pass)
				}
			case *githttp.TokenAuth:
				if a.Token != tt.want.token {
					t.Errorf("token %q, want %q", a.Token, tt.want.token)
				}
			case *sshAuth:
				cfg, err := a.ClientConfig()
				if err != nil {
					t.Fatal(err)
				}
				if cfg.User != tt.want.user || cfg.HostKeyCallback == nil || len(cfg.HostKeyAlgorithms) == 0 || cfg.Timeout == 0 {
					t.Errorf("ssh config user %q, callback set %v, algorithms %v, timeout %v; want user %q and all set",
						cfg.User, cfg.HostKeyCallback != nil, cfg.HostKeyAlgorithms, cfg.Timeout, tt.want.user)
				}
			default:
				t.Errorf("unexpected auth %T", a)
			}
			if got := r.tlsConfig != nil && r.tlsConfig.RootCAs != nil; got != tt.want.customCA {
				t.Errorf("custom CA %v, want %v", got, tt.want.customCA)
			}
			if got := r.tlsConfig != nil && len(r.tlsConfig.Certificates) == 1; got != tt.want.clientCert {
				t.Errorf("client certificate %v, want %v", got, tt.want.clientCert)
			}
			if strings.Contains(r.URL(), "@") {
				t.Errorf("URL %q keeps its userinfo", r.URL())
			}
			for _, s := range []string{r.String(), r.URL(), fmt.Sprintf("%v %+v %#v %s", r, r, r, r)} {
				assertNoSecret(t, "remote text", s)
			}
		})
	}
}

func TestRedactErrors(t *testing.T) {
	r, err := NewRemote("https://"+testURLUser+":"+testURLPass+"@git.example.com/stack.git", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	orig := fmt.Errorf(`Get "https://x:%s@git.example.com/stack.git/info/refs": token %s, password %s rejected: %w`,
		testURLPass, testURLUser, testURLPass, transport.ErrAuthenticationRequired)
	red := r.Redact(orig)
	if got := red.Error(); strings.Contains(got, "x:") || strings.Contains(got, "@git.example.com") {
		t.Errorf("redacted error keeps URL userinfo: %s", got)
	}
	assertNoSecret(t, "redacted error", red.Error())
	if !errors.Is(red, transport.ErrAuthenticationRequired) {
		t.Errorf("errors.Is lost the original chain: %v", red)
	}
	if errors.Unwrap(red) != nil {
		t.Errorf("the redacted error unwraps to the original text")
	}
	if r.Redact(nil) != nil {
		t.Errorf("Redact(nil) is not nil")
	}
}

// A token in the URL's query never reaches a message: not the errors NewRemote builds, not
// SafeURL or String, not a transport error echoing the URL.
func TestURLQueryIsHidden(t *testing.T) {
	_, err := NewRemote("http://git.example.com/stack.git?private_token="+testToken, "ns/creds",
		map[string][]byte{KeyUsername: []byte("u"), KeyPassword: []byte(testPassword)})
	if err == nil || !strings.Contains(err.Error(), "http://git.example.com/stack.git?***") {
		t.Fatalf("got %v, want a refusal naming the URL with its query hidden", err)
	}
	assertNoSecret(t, "error", err.Error())

	r, err := NewRemote("https://git.example.com/stack.git?private_token="+testToken, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.SafeURL() != "https://git.example.com/stack.git?***" {
		t.Errorf("SafeURL = %q", r.SafeURL())
	}
	assertNoSecret(t, "remote text", r.SafeURL()+" "+r.String())
	red := r.Redact(fmt.Errorf(`Get "https://git.example.com/stack.git/info/refs?private_token=%s&service=git-upload-pack": EOF`, testToken))
	assertNoSecret(t, "redacted error", red.Error())
}
