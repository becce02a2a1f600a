package gitauth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/clusterstack-io/clusterstack-operator/internal/gitauth/gittest"
)

func listCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// checkTags fails unless got maps every tag of the test repository to its commit.
func checkTags(t *testing.T, repo *gittest.Repo, got map[string]string) {
	t.Helper()
	if !maps.Equal(got, repo.Commits) {
		t.Errorf("tags = %v, want %v", got, repo.Commits)
	}
	// The test repository must exercise peeling: annotated tags name a tag object.
	if repo.Objects["v2"] == repo.Commits["v2"] || repo.Objects["v1"] != repo.Commits["v1"] {
		t.Fatalf("test repository: v2 is not annotated or v1 is not lightweight")
	}
}

func TestListTagsOverHTTPPeelsAnnotatedTags(t *testing.T) {
	repo := gittest.NewRepo(t)
	srv := httptest.NewServer(gittest.Handler(t, repo.Root))
	defer srv.Close()
	r, err := NewRemote(srv.URL+"/"+repo.Name, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.ListTags(listCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	checkTags(t, repo, got)

	t.Run("empty repository", func(t *testing.T) {
		name := gittest.NewEmptyRepo(t, repo.Root)
		r, err := NewRemote(srv.URL+"/"+name, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.ListTags(listCtx(t))
		if err != nil || len(got) != 0 {
			t.Errorf("got %v, %v; want no tags and no error", got, err)
		}
	})
	t.Run("missing repository", func(t *testing.T) {
		r, err := NewRemote(srv.URL+"/missing.git", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := r.ListTags(listCtx(t)); err == nil {
			t.Errorf("got %v, want an error", got)
		}
	})
	t.Run("more tags than allowed", func(t *testing.T) {
		defer func(v int) { maxRefs = v }(maxRefs)
		maxRefs = 3
		_, err := r.ListTags(listCtx(t))
		if !errors.Is(err, ErrTooManyRefs) || !strings.Contains(err.Error(), "more than 3 tags") {
			t.Errorf("got %v, want ErrTooManyRefs", err)
		}
	})
	t.Run("advertisement larger than allowed", func(t *testing.T) {
		defer func(v int64) { maxAdvertisementBytes = v }(maxAdvertisementBytes)
		maxAdvertisementBytes = 200
		_, err := r.ListTags(listCtx(t))
		if !errors.Is(err, ErrTooManyRefs) || !strings.Contains(err.Error(), "more than 200 bytes") {
			t.Errorf("got %v, want ErrTooManyRefs", err)
		}
	})
}

// authHandler answers 401 unless ok accepts the request, and counts the requests it accepts.
func authHandler(next http.Handler, ok func(*http.Request) bool, served *atomic.Int32) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !ok(req) {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		served.Add(1)
		next.ServeHTTP(w, req)
	})
}

func TestListTagsOverHTTPSWithCredentials(t *testing.T) {
	repo := gittest.NewRepo(t)
	pki := newTestPKI(t)
	serverCert, serverKey := pki.issue(t, false)
	pair, err := tls.X509KeyPair(serverCert, serverKey)
	if err != nil {
		t.Fatal(err)
	}
	clientCert, clientKey := pki.issue(t, true)
	otherPKI := newTestPKI(t)
	otherCert, otherKey := otherPKI.issue(t, true)
	clientCAs := x509.NewCertPool()
	clientCAs.AddCert(pki.caCert)

	var served atomic.Int32
	ok := func(req *http.Request) bool {
		if u, p, ok := req.BasicAuth(); ok {
			return u == "dev" && p == testPassword
		}
		return req.Header.Get("Authorization") == "Bearer "+testToken ||
			(req.TLS != nil && len(req.TLS.PeerCertificates) > 0)
	}
	srv := httptest.NewUnstartedServer(authHandler(gittest.Handler(t, repo.Root), ok, &served))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: clientCAs}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // failed handshakes are expected
	srv.StartTLS()
	defer srv.Close()
	url := srv.URL + "/" + repo.Name

	tests := []struct {
		name   string
		url    string
		data   map[string][]byte
		errHas string
	}{
		{"username and password", url, map[string][]byte{"username": []byte("dev"), "password": []byte(testPassword), "ca.crt": pki.caPEM}, ""},
		{"bearer token", url, map[string][]byte{"bearerToken": []byte(testToken), "caFile": pki.caPEM}, ""},
		{"client certificate", url, map[string][]byte{"tls.crt": clientCert, "tls.key": clientKey, "ca.crt": pki.caPEM}, ""},
		// Flux reads tls.crt/tls.key for Git, not the legacy names: no certificate is sent.
		{"legacy client certificate keys are not read", url, map[string][]byte{"certFile": clientCert, "keyFile": clientKey, "ca.crt": pki.caPEM}, "authentication required"},
		{"URL userinfo", strings.Replace(url, "https://", "https://dev:"+testPassword+"@", 1), map[string][]byte{"ca.crt": pki.caPEM}, ""},
		{"wrong password", strings.Replace(url, "https://", "https://dev:"+testURLPass+"@", 1), map[string][]byte{"ca.crt": pki.caPEM}, "authentication required"},
		{"wrong token", url, map[string][]byte{"bearerToken": []byte(testToken + "x"), "ca.crt": pki.caPEM}, "authentication required"},
		{"client certificate of another CA", url, map[string][]byte{"tls.crt": otherCert, "tls.key": otherKey, "ca.crt": pki.caPEM}, "certificate"},
		{"server CA not trusted", url, map[string][]byte{"username": []byte("dev"), "password": []byte(testPassword)}, "certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			served.Store(0)
			r, err := NewRemote(tt.url, "ns/creds", tt.data)
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.ListTags(listCtx(t))
			if tt.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("got %v, %v; want an error with %q", got, err, tt.errHas)
				}
				t.Logf("error: %v", err)
				assertNoSecret(t, "error", err.Error())
				if strings.Contains(err.Error(), "@127.0.0.1") {
					t.Errorf("error keeps URL userinfo: %v", err)
				}
				if served.Load() != 0 {
					t.Errorf("the server answered %d requests without valid credentials", served.Load())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkTags(t, repo, got)
		})
	}
}

func TestListTagsOverSSHChecksKnownHosts(t *testing.T) {
	repo := gittest.NewRepo(t)
	_, hostKey := sshKey(t, "")
	_, otherHostKey := sshKey(t, "")
	identity, clientKey := sshKey(t, testPassphrase)
	otherIdentity, _ := sshKey(t, "")
	addr := gittest.ServeSSH(t, repo.Root, hostKey, clientKey.PublicKey())
	url := "ssh://git@" + addr + "/" + repo.Name
	line := func(host string, k ssh.Signer) []byte {
		return []byte(knownhosts.Line([]string{host}, k.PublicKey()) + "\n")
	}

	tests := []struct {
		name   string
		data   map[string][]byte
		errHas string
	}{
		{"identity with passphrase and matching known_hosts",
			map[string][]byte{"identity": identity, "password": []byte(testPassphrase), "known_hosts": line(addr, hostKey)}, ""},
		{"known_hosts with another key for the host",
			map[string][]byte{"identity": identity, "password": []byte(testPassphrase), "known_hosts": line(addr, otherHostKey)}, "key mismatch"},
		{"known_hosts for another host only",
			map[string][]byte{"identity": identity, "password": []byte(testPassphrase), "known_hosts": line("git.example.com", hostKey)}, "key is unknown"},
		{"identity not authorized",
			map[string][]byte{"identity": otherIdentity, "known_hosts": line(addr, hostKey)}, "unable to authenticate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewRemote(url, "ns/creds", tt.data)
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.ListTags(listCtx(t))
			if tt.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("got %v, %v; want an error with %q", got, err, tt.errHas)
				}
				t.Logf("error: %v", err)
				assertNoSecret(t, "error", err.Error())
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkTags(t, repo, got)
		})
	}
}

func TestLimitedBody(t *testing.T) {
	for _, tt := range []struct {
		body     string
		max      int64
		exceeded bool
	}{
		{"12345", 5, false},
		{"123456", 5, true},
		{"", 5, false},
	} {
		var exceeded atomic.Bool
		b := &limitedBody{rc: io.NopCloser(strings.NewReader(tt.body)), left: tt.max, exceeded: &exceeded}
		data, err := io.ReadAll(b)
		if exceeded.Load() != tt.exceeded || (err != nil) != tt.exceeded {
			t.Errorf("body %q, max %d: read %q, err %v, exceeded %v; want exceeded %v", tt.body, tt.max, data, err, exceeded.Load(), tt.exceeded)
		}
	}
}
