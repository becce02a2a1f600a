package gitauth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"maps"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
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
func checkTags(t *testing.T, repo *gittest.Repo, got TagList) {
	t.Helper()
	if !maps.Equal(got.Tags, repo.Commits) || got.Ignored != 0 {
		t.Errorf("tags = %v (%d ignored), want %v", got.Tags, got.Ignored, repo.Commits)
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
	got, err := r.ListTags(listCtx(t), TagQuery{})
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
		got, err := r.ListTags(listCtx(t), TagQuery{})
		if err != nil || len(got.Tags) != 0 {
			t.Errorf("got %v, %v; want no tags and no error", got, err)
		}
	})
	t.Run("missing repository", func(t *testing.T) {
		r, err := NewRemote(srv.URL+"/missing.git", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := r.ListTags(listCtx(t), TagQuery{}); err == nil {
			t.Errorf("got %v, want an error", got)
		}
	})
	t.Run("only the tags asked for", func(t *testing.T) {
		// v3-nested has the prefix but is refused; main and HEAD are no tags.
		got, err := r.ListTags(listCtx(t), TagQuery{Prefix: "v", Keep: func(tag string) bool { return len(tag) == 2 }})
		want := map[string]string{"v1": repo.Commits["v1"], "v2": repo.Commits["v2"], "v3": repo.Commits["v3"]}
		if err != nil || !maps.Equal(got.Tags, want) || got.Ignored != 1 {
			t.Errorf("got %v (%d ignored), %v; want %v and 1 ignored", got.Tags, got.Ignored, err, want)
		}
		got, err = r.ListTags(listCtx(t), TagQuery{Prefix: "v3", MaxLength: 2})
		if err != nil || !maps.Equal(got.Tags, map[string]string{"v3": repo.Commits["v3"]}) || got.Ignored != 1 {
			t.Errorf("MaxLength 2: got %v (%d ignored), %v; want v3 alone and v3-nested ignored", got.Tags, got.Ignored, err)
		}
	})
	for _, tt := range []struct {
		name   string
		set    func() (restore func())
		query  TagQuery
		errHas string
	}{
		{"more references than allowed", func() func() {
			v := maxRefs
			maxRefs = 3 // HEAD, main and four tags are advertised
			return func() { maxRefs = v }
		}, TagQuery{}, "more than 3 references"},
		{"advertisement larger than allowed", func() func() {
			v := maxAdvertisementBytes
			maxAdvertisementBytes = 200
			return func() { maxAdvertisementBytes = v }
		}, TagQuery{}, "more than 200 bytes of reference advertisement"},
		{"more tags of the form asked for than allowed", func() func() { return func() {} },
			TagQuery{Prefix: "v", MaxKept: 2}, "more than 2 references of the form asked for (refs/tags/v...)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			defer tt.set()()
			_, err := r.ListTags(listCtx(t), tt.query)
			if !errors.Is(err, ErrTooManyRefs) || !strings.Contains(err.Error(), tt.errHas) ||
				!strings.Contains(err.Error(), srv.URL+"/"+repo.Name) {
				t.Errorf("got %v, want ErrTooManyRefs naming the repository and %q", err, tt.errHas)
			}
		})
	}
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
			got, err := r.ListTags(listCtx(t), TagQuery{})
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
			got, err := r.ListTags(listCtx(t), TagQuery{})
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

// A hostile remote advertising 50,000 tags of 600 characters (about 32 MiB), over https and
// over ssh: the listing stops at MaxAdvertisementBytes with ErrTooManyRefs naming the limit, and
// its heap never grows by more than a small part of what it read (it streams, and keeps nothing
// that was not asked for).
func TestListTagsOfAHostileRemoteIsBounded(t *testing.T) {
	adv := gittest.Advertisement{Tags: 50000, NameLength: 600}
	if adv.Size() < 30<<20 {
		t.Fatalf("the advertisement has %d bytes, want at least 30 MiB", adv.Size())
	}
	srv := httptest.NewTLSServer(adv.Handler())
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	_, hostKey := sshKey(t, "")
	identity, clientKey := sshKey(t, "")
	addr := adv.ServeSSH(t, hostKey, clientKey.PublicKey())
	known := []byte(knownhosts.Line([]string{addr}, hostKey.PublicKey()) + "\n")

	for _, tt := range []struct {
		name, url string
		data      map[string][]byte
	}{
		{"https", srv.URL + "/hostile.git", map[string][]byte{"ca.crt": ca}},
		{"ssh", "ssh://git@" + addr + "/hostile.git", map[string][]byte{"identity": identity, "known_hosts": known}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewRemote(tt.url, "ns/creds", tt.data)
			if err != nil {
				t.Fatal(err)
			}
			var got TagList
			growth := peakHeapGrowth(func() { got, err = r.ListTags(listCtx(t), TagQuery{Prefix: "aws-base-1-36-"}) })
			t.Logf("error: %v; heap grew by at most %d KiB while %d MiB were read", err, growth>>10, MaxAdvertisementBytes>>20)
			if !errors.Is(err, ErrTooManyRefs) || !strings.Contains(err.Error(), "more than 16777216 bytes of reference advertisement") {
				t.Errorf("got %v tags, %v; want the byte limit", len(got.Tags), err)
			}
			// The TLS or SSH layer's buffers (an SSH channel's window is 2 MiB on either side), a
			// 64 KiB read buffer, and no tag: a listing that held the advertisement, or its names,
			// grows by more than the limit.
			if growth > MaxAdvertisementBytes/2 {
				t.Errorf("the heap grew by %d bytes during a listing that keeps nothing, want at most %d", growth, MaxAdvertisementBytes/2)
			}
		})
	}
}

// peakHeapGrowth runs f with the garbage collector at GOGC=5 (so that garbage does not pass for
// growth) and returns how far the heap's live objects grew above what they were before, sampled
// every millisecond.
func peakHeapGrowth(f func()) uint64 {
	defer debug.SetGCPercent(debug.SetGCPercent(5))
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	heap := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	runtime.GC()
	base, peak := heap(), uint64(0)
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			if h := heap(); h > peak {
				peak = h
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	f()
	close(done)
	<-sampled
	if peak < base {
		return 0
	}
	return peak - base
}
