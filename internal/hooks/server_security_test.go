package hooks

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// TestServerDecidesFromTheStoredCluster: the answer comes from the Cluster as the API server has
// it, and only for a request that carries that Cluster's uid. A crafted request can neither
// open the gate (an annotation or another ClusterClass in the body) nor read the stage of a
// Cluster it has not read (another namespace's, by name).
func TestServerDecidesFromTheStoredCluster(t *testing.T) {
	const secret = "ccm not Ready yet: HelmRelease ns/c1-ccm says tenant-secret-detail"
	rel := validRelease("cni", "ccm")
	a := addon(target, beforeStage(target, false, secret))
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(rel, a, stored(nil)).WithStatusSubresource(rel, a).WithInterceptorFuncs(readOnly(t)).Build()
	srv := serve(t, c)
	ask := func(cl runtimehooksv1.BeforeClusterUpgradeRequest) runtimehooksv1.BeforeClusterUpgradeResponse {
		var resp runtimehooksv1.BeforeClusterUpgradeResponse
		call(t, srv, Path("BeforeClusterUpgrade", BeforeClusterUpgradeHandler), &cl, &resp)
		return resp
	}

	withSkip := stored(map[string]string{csv1.SkipBeforeUpgradeGateAnnotation: ""})
	if resp := ask(runtimehooksv1.BeforeClusterUpgradeRequest{Cluster: *withSkip}); resp.RetryAfterSeconds == 0 {
		t.Errorf("a skip annotation only in the request body opened the gate: %+v", resp)
	}
	otherClass := stored(nil)
	otherClass.Spec.Topology.ClassRef.Name = "not-a-release"
	if resp := ask(runtimehooksv1.BeforeClusterUpgradeRequest{Cluster: *otherClass}); resp.RetryAfterSeconds == 0 {
		t.Errorf("another ClusterClass only in the request body opened the gate: %+v", resp)
	}

	for name, sent := range map[string]func() runtimehooksv1.BeforeClusterUpgradeRequest{
		"no uid": func() runtimehooksv1.BeforeClusterUpgradeRequest {
			return runtimehooksv1.BeforeClusterUpgradeRequest{Cluster: *cluster(target, nil)}
		},
		"a guessed uid": func() runtimehooksv1.BeforeClusterUpgradeRequest {
			cl := stored(nil)
			cl.UID = "guessed"
			return runtimehooksv1.BeforeClusterUpgradeRequest{Cluster: *cl}
		},
		"a Cluster that does not exist": func() runtimehooksv1.BeforeClusterUpgradeRequest {
			cl := stored(nil)
			cl.Name = "c2"
			return runtimehooksv1.BeforeClusterUpgradeRequest{Cluster: *cl}
		},
	} {
		resp := ask(sent())
		if resp.Status != runtimehooksv1.ResponseStatusSuccess || resp.RetryAfterSeconds != 0 ||
			strings.Contains(resp.Message, "tenant-secret-detail") || strings.Contains(resp.Message, "ccm") || !strings.HasPrefix(resp.Message, "no Cluster ns/") {
			t.Errorf("%s: %+v, want Success without any stage's message", name, resp)
		}
	}
}

// TestServerBoundsRequestBody: a body larger than maxRequestBytes is not read whole.
func TestServerBoundsRequestBody(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(stored(nil)).Build()
	srv := serve(t, c)
	huge := stored(map[string]string{"filler": strings.Repeat("x", 3<<20)})
	body, err := json.Marshal(&runtimehooksv1.BeforeClusterUpgradeRequest{Cluster: *huge})
	if err != nil {
		t.Fatal(err)
	}
	r, err := http.Post(srv.URL+Path("BeforeClusterUpgrade", BeforeClusterUpgradeHandler), "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var resp runtimehooksv1.BeforeClusterUpgradeResponse
	if err := json.NewDecoder(r.Body).Decode(&resp); err != nil {
		t.Fatal(err)
	}
	if resp.Status != runtimehooksv1.ResponseStatusFailure || !strings.Contains(resp.Message, "request body too large") {
		t.Errorf("a %d MiB request: %+v, want Failure for its size", len(body)>>20, resp)
	}
}

// TestServerBoundsRequestsInFlight: at most maxInFlight requests are served at once; the others
// wait for a slot.
func TestServerBoundsRequestsInFlight(t *testing.T) {
	var inFlight, most atomic.Int32
	release := make(chan struct{})
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(stored(nil)).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			<-release
			return c.Get(ctx, key, obj, opts...)
		},
	}).Build()
	srv := serve(t, c)
	body, _ := json.Marshal(&runtimehooksv1.BeforeClusterUpgradeRequest{Cluster: *stored(nil)})
	var wg sync.WaitGroup
	for range maxInFlight + 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := http.Post(srv.URL+Path("BeforeClusterUpgrade", BeforeClusterUpgradeHandler), "application/json", bytes.NewReader(body))
			if err == nil {
				r.Body.Close()
			}
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for inFlight.Load() < maxInFlight && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // give a request past the bound the time to get in
	close(release)
	wg.Wait()
	if got := most.Load(); got != maxInFlight {
		t.Errorf("%d requests were served at once, want at most (and here exactly) %d", got, maxInFlight)
	}
}

// TestServerRequiresClientCert: with RequireClientCert on a TLS server that verifies client
// certificates given (ClientTLSConfig), a client without a certificate of the client CA is
// refused before anything is read, and one with such a certificate is answered. The same
// server still accepts TLS connections without a client certificate (the API server's admission
// calls).
func TestServerRequiresClientCert(t *testing.T) {
	dir := t.TempDir()
	ca, caKey := newCA(t, "runtime-extension-clients")
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	opt, err := ClientTLSConfig(caFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ClientTLSConfig(filepath.Join(dir, "missing")); err == nil {
		t.Error("ClientTLSConfig of a missing file: no error")
	}

	var reads atomic.Int32
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(stored(nil), validRelease("cni"), addon(target)).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			reads.Add(1)
			return c.Get(ctx, key, obj, opts...)
		},
	}).Build()
	mux := http.NewServeMux()
	(&Server{Reader: c, RequireClientCert: true}).Register(muxRegistry{mux})
	mux.HandleFunc("/validate", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("admission")) })
	srv := httptest.NewUnstartedServer(mux)
	srv.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	opt(srv.TLS)
	srv.StartTLS()
	t.Cleanup(srv.Close)

	post := func(cert *tls.Certificate, path string) (int, string) {
		tr := srv.Client().Transport.(*http.Transport).Clone()
		if cert != nil {
			tr.TLSClientConfig.Certificates = []tls.Certificate{*cert}
		}
		body, _ := json.Marshal(&runtimehooksv1.BeforeClusterUpgradeRequest{Cluster: *stored(nil)})
		r, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Post(srv.URL+path, "application/json", bytes.NewReader(body))
		if err != nil {
			return 0, err.Error()
		}
		defer r.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(r.Body)
		return r.StatusCode, b.String()
	}
	hook := Path("BeforeClusterUpgrade", BeforeClusterUpgradeHandler)
	if code, body := post(nil, hook); code != http.StatusForbidden || reads.Load() != 0 {
		t.Errorf("no client certificate: %d %q after %d reads, want 403 before any read", code, body, reads.Load())
	}
	if code, _ := post(nil, Path("Discovery", "")); code != http.StatusForbidden {
		t.Errorf("discovery without a client certificate: %d, want 403", code)
	}
	if code, body := post(nil, "/validate"); code != http.StatusOK || body != "admission" {
		t.Errorf("another path without a client certificate: %d %q, want it served", code, body)
	}
	other, otherKey := newCA(t, "someone-else")
	// Go's client sends no certificate of a CA the server did not ask for; either way, refused.
	if code, body := post(clientCert(t, other, otherKey), hook); code != http.StatusForbidden && (code != 0 || !strings.Contains(body, "certificate")) {
		t.Errorf("a client certificate of another CA: %d %q, want it refused", code, body)
	}
	code, body := post(clientCert(t, ca, caKey), hook)
	var resp runtimehooksv1.BeforeClusterUpgradeResponse
	if err := json.Unmarshal([]byte(body), &resp); code != http.StatusOK || err != nil || resp.Status != runtimehooksv1.ResponseStatusSuccess || resp.RetryAfterSeconds == 0 {
		t.Errorf("a client certificate of the client CA: %d %q, want the gate's answer", code, body)
	}
}

// newCA makes a self-signed CA certificate and its key.
func newCA(t *testing.T, name string) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// clientCert makes a client certificate signed by ca.
func clientCert(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey) *tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "capi-controller-manager"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
