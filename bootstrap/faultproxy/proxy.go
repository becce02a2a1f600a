// Package faultproxy is a fault-injecting HTTPS reverse proxy in front of a Kubernetes API
// server, for the fault tests of the local management plane.
//
// A client (the operator) talks to the proxy instead of the API server, with its own
// credentials: the proxy forwards every request, its Authorization header included, and adds
// none of its own. While faults are injected ([Proxy.Inject]) it delays requests and answers a
// fraction of them itself with an error (500, 503, 429, ...) in the metav1.Status form the API
// server uses, so that client-go handles them as it would the API server's. [Proxy.CloseStreams]
// ends the watches in flight, as a restart of the API server does.
//
// The proxy counts the requests it receives by Kubernetes verb and resource (as the API
// server's RequestInfo names them), so that a test can tell how many writes a client made in a
// period ([Proxy.Counts], [Proxy.ResetCounts]).
//
// It serves HTTP/2 and HTTP/1.1 over TLS with a certificate of its own CA ([Proxy.CAData]) for
// 127.0.0.1, ::1 and localhost, and streams responses (watches, chunked lists) as they come.
// Upgrade requests (exec, attach, port-forward) are not supported.
package faultproxy

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	cryptorand "crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/rest"
)

// Faults are what the proxy injects while they are active. The zero value injects nothing.
type Faults struct {
	// Latency is added before each request is forwarded (or answered with an injected error).
	Latency time.Duration
	// Jitter adds a uniformly random extra latency in [0, Jitter).
	Jitter time.Duration
	// ErrorRate is the fraction (0 to 1) of requests the proxy answers itself with an error
	// instead of forwarding them.
	ErrorRate float64
	// Codes are the HTTP status codes injected errors are picked from, uniformly (for example
	// 500, 503, 429); 500 when empty. Answers with 429 and 503 carry Retry-After: 1, as the API
	// server's do.
	Codes []int
	// Seed seeds the random choices (jitter, which requests fail, with which code): the same
	// seed and the same sequence of requests give the same faults.
	Seed int64
	// Verbs, when not empty, limits injection (latency and errors) to requests of these
	// Kubernetes verbs (get, list, watch, create, update, patch, delete, deletecollection).
	Verbs []string
}

// Counts are the requests the proxy received, injected errors included, since it started or
// since the last [Proxy.ResetCounts].
type Counts struct {
	// ByVerb counts requests by Kubernetes verb: get, list, watch, create, update, patch,
	// delete, deletecollection; the lower-case HTTP method for requests that are not for a
	// resource (discovery, /version).
	ByVerb map[string]int
	// ByVerbResource counts requests by verb and resource, as "<verb> <resource>" or
	// "<verb> <resource>/<subresource>" (for example "patch clusteraddons/status",
	// "update leases"); by verb and path ("get /apis") for requests that are not for a
	// resource.
	ByVerbResource map[string]int
	// Injected counts the requests answered with an injected error.
	Injected int
	// Total counts all requests.
	Total int
}

// writeVerbs are the Kubernetes verbs that change objects.
var writeVerbs = []string{"create", "update", "patch", "delete", "deletecollection"}

// Writes is the number of requests that write: create, update, patch, delete and
// deletecollection.
func (c Counts) Writes() int {
	n := 0
	for _, v := range writeVerbs {
		n += c.ByVerb[v]
	}
	return n
}

func (c Counts) clone() Counts {
	return Counts{ByVerb: cloneMap(c.ByVerb), ByVerbResource: cloneMap(c.ByVerbResource), Injected: c.Injected, Total: c.Total}
}

func cloneMap(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func newCounts() Counts {
	return Counts{ByVerb: map[string]int{}, ByVerbResource: map[string]int{}}
}

// Proxy is a running fault-injecting proxy. Its methods are safe for concurrent use.
type Proxy struct {
	url    string
	caPEM  []byte
	server *http.Server
	// transport forwards to the API server; forward wraps it.
	transport *http.Transport
	forward   *httputil.ReverseProxy
	served    chan struct{}

	mu sync.Mutex
	// faults are the active faults, with verbs normalised to a set and codes defaulted.
	faults Faults
	verbs  sets.Set[string]
	rnd    *rand.Rand
	counts Counts
	// streams cancels the long-running requests in flight, by request number.
	streams map[uint64]context.CancelFunc
	next    uint64
	closed  bool
}

// Start starts a proxy listening on listenAddr (for example "127.0.0.1:0") in front of the API
// server of target. It verifies the API server's certificate with target's CA (CAData or
// CAFile, ServerName, Insecure) and never uses target's credentials: requests are forwarded
// with the client's own.
func Start(target *rest.Config, listenAddr string) (*Proxy, error) {
	upstream, err := targetURL(target)
	if err != nil {
		return nil, err
	}
	tlsConfig, err := upstreamTLS(target)
	if err != nil {
		return nil, err
	}
	caPEM, cert, err := servingCert(time.Now())
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", listenAddr)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen on %s: %w", listenAddr, err)
	}
	addr, ok := ln.Addr().(*net.TCPAddr)
	if !ok {
		_ = ln.Close()
		return nil, fmt.Errorf("faultproxy: listen on %s: not a TCP address: %s", listenAddr, ln.Addr())
	}
	host := addr.IP.String()
	if addr.IP.IsUnspecified() {
		host = "127.0.0.1"
	}

	discard := log.New(io.Discard, "", 0)
	p := &Proxy{
		url:   "https://" + net.JoinHostPort(host, strconv.Itoa(addr.Port)),
		caPEM: caPEM,
		transport: &http.Transport{
			TLSClientConfig:     tlsConfig,
			ForceAttemptHTTP2:   true,
			DialContext:         (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout: 10 * time.Second,
			MaxIdleConnsPerHost: 100,
			IdleConnTimeout:     90 * time.Second,
		},
		served:  make(chan struct{}),
		counts:  newCounts(),
		streams: map[uint64]context.CancelFunc{},
	}
	p.forward = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(upstream)
			// Forward the query as the client wrote it, parsable or not.
			r.Out.URL.RawQuery = r.In.URL.RawQuery
		},
		Transport:     p.transport,
		FlushInterval: -1,
		ErrorLog:      discard,
		ErrorHandler:  unreachable,
	}
	p.server = &http.Server{
		Handler:           p,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          discard,
	}
	go func() {
		defer close(p.served)
		_ = p.server.ServeTLS(ln, "", "")
	}()
	return p, nil
}

// targetURL is the API server's URL of cfg.Host, https when it names no scheme.
func targetURL(cfg *rest.Config) (*url.URL, error) {
	host := cfg.Host
	if host == "" {
		return nil, errors.New("faultproxy: the target rest.Config has no Host")
	}
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	u, err := url.Parse(host)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: target host %q: %w", cfg.Host, err)
	}
	return u, nil
}

// upstreamTLS verifies the API server as cfg would, without cfg's client certificate.
func upstreamTLS(cfg *rest.Config) (*tls.Config, error) {
	c := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         cfg.ServerName,
		InsecureSkipVerify: cfg.Insecure,
	}
	ca := cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		b, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("faultproxy: read the target's CA: %w", err)
		}
		ca = b
	}
	if len(ca) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, errors.New("faultproxy: the target's CA data holds no PEM certificate")
		}
		c.RootCAs = pool
	}
	return c, nil
}

// servingCert makes a CA and a serving certificate it signs for 127.0.0.1, ::1 and localhost.
func servingCert(now time.Time) ([]byte, tls.Certificate, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), cryptorand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, fmt.Errorf("faultproxy: CA key: %w", err)
	}
	caTemplate := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "faultproxy-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(cryptorand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, fmt.Errorf("faultproxy: CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, tls.Certificate{}, fmt.Errorf("faultproxy: CA certificate: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), cryptorand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, fmt.Errorf("faultproxy: serving key: %w", err)
	}
	leafTemplate := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(cryptorand.Reader, leafTemplate, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, fmt.Errorf("faultproxy: serving certificate: %w", err)
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	return caPEM, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// URL is the proxy's address, https://127.0.0.1:<port>.
func (p *Proxy) URL() string { return p.url }

// CAData is the PEM certificate of the CA of the proxy's serving certificate.
func (p *Proxy) CAData() []byte { return slices.Clone(p.caPEM) }

// Inject replaces the active faults with f and seeds the random choices with f.Seed.
func (p *Proxy) Inject(f Faults) {
	f.Codes = slices.Clone(f.Codes)
	if len(f.Codes) == 0 {
		f.Codes = []int{http.StatusInternalServerError}
	}
	f.ErrorRate = min(max(f.ErrorRate, 0), 1)
	verbs := sets.New[string]()
	for _, v := range f.Verbs {
		verbs.Insert(strings.ToLower(v))
	}
	f.Verbs = sets.List(verbs)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults, p.verbs = f, verbs
	p.rnd = rand.New(rand.NewPCG(uint64(f.Seed), 0))
}

// Clear ends the injection of faults: requests are forwarded again without delay.
func (p *Proxy) Clear() { p.Inject(Faults{}) }

// Counts returns a copy of the request counts.
func (p *Proxy) Counts() Counts {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts.clone()
}

// ResetCounts sets the request counts to zero.
func (p *Proxy) ResetCounts() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counts = newCounts()
}

// CloseStreams ends every long-running request in flight (watches, logs), as a restart of
// the API server would: their connections (HTTP/1.1) or streams (HTTP/2) are reset. Later
// requests are served as before.
func (p *Proxy) CloseStreams() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, cancel := range p.streams {
		cancel()
		delete(p.streams, id)
	}
}

// Close stops the proxy and closes all its connections.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	p.CloseStreams()
	err := p.server.Close()
	<-p.served
	p.transport.CloseIdleConnections()
	if err != nil {
		return fmt.Errorf("faultproxy: close: %w", err)
	}
	return nil
}

// decision is what the proxy does with one request.
type decision struct {
	delay time.Duration
	// code is the status of the injected error; 0 to forward.
	code int
	seed int64
}

// decide counts a request of verb and key and draws its faults.
func (p *Proxy) decide(verb, key string) decision {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counts.Total++
	p.counts.ByVerb[verb]++
	p.counts.ByVerbResource[key]++
	f := p.faults
	if p.rnd == nil || (p.verbs.Len() > 0 && !p.verbs.Has(verb)) {
		return decision{}
	}
	d := decision{delay: f.Latency, seed: f.Seed}
	if f.Jitter > 0 {
		d.delay += time.Duration(p.rnd.Int64N(int64(f.Jitter)))
	}
	if f.ErrorRate > 0 && p.rnd.Float64() < f.ErrorRate {
		d.code = f.Codes[p.rnd.IntN(len(f.Codes))]
		p.counts.Injected++
	}
	return d
}

// track registers the cancellation of a long-running request for CloseStreams.
func (p *Proxy) track(cancel context.CancelFunc) (untrack func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		cancel()
		return func() {}
	}
	id := p.next
	p.next++
	p.streams[id] = cancel
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		delete(p.streams, id)
	}
}

// ServeHTTP counts the request, applies the active faults and forwards it.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	info := requestInfo(r)
	verb, key := classify(info)
	d := p.decide(verb, key)

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	if longRunning(info) {
		defer p.track(cancel)()
	}
	if d.delay > 0 {
		t := time.NewTimer(d.delay)
		select {
		case <-ctx.Done():
			t.Stop()
			// The client went away or CloseStreams ended the request: reset it.
			panic(http.ErrAbortHandler)
		case <-t.C:
		}
	}
	if d.code != 0 {
		writeStatus(w, d.code, fmt.Sprintf("faultproxy: injected error %d (seed %d) for %s %s", d.code, d.seed, verb, r.URL.Path))
		return
	}
	p.forward.ServeHTTP(w, r.WithContext(ctx))
}

// requestInfos names requests as the API server does (its default API prefixes).
var requestInfos = &request.RequestInfoFactory{
	APIPrefixes:          map[string]sets.Empty{"api": {}, "apis": {}},
	GrouplessAPIPrefixes: map[string]sets.Empty{"api": {}},
}

// requestInfo names the request as the API server does; one it cannot parse (which the API
// server would refuse) as a request for no resource, by its method and path.
func requestInfo(r *http.Request) *request.RequestInfo {
	info, err := requestInfos.NewRequestInfo(r)
	if err != nil || info == nil {
		return &request.RequestInfo{Path: r.URL.Path, Verb: strings.ToLower(r.Method)}
	}
	return info
}

// classify returns the verb of a request and its key in Counts.ByVerbResource.
func classify(info *request.RequestInfo) (verb, key string) {
	if !info.IsResourceRequest {
		return info.Verb, info.Verb + " " + info.Path
	}
	resource := info.Resource
	if info.Subresource != "" {
		resource += "/" + info.Subresource
	}
	return info.Verb, info.Verb + " " + resource
}

// longRunning tells the requests that stay open, as the API server's default
// BasicLongRunningRequestCheck does.
func longRunning(info *request.RequestInfo) bool {
	if !info.IsResourceRequest {
		return false
	}
	switch info.Verb {
	case "watch", "proxy":
		return true
	}
	switch info.Subresource {
	case "attach", "exec", "proxy", "log", "portforward":
		return true
	}
	return false
}

// writeStatus answers as the API server does: a metav1.Status in JSON, and Retry-After: 1 with
// 429 and 503.
func writeStatus(w http.ResponseWriter, code int, message string) {
	retryAfter := 0
	if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
		retryAfter = 1
	}
	// apimachinery's own mapping of a status code to its reason, as a client decodes it.
	st := apierrors.NewGenericServerResponse(code, "", schema.GroupResource{}, "", message, retryAfter, false).ErrStatus
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	st.Message = message
	if retryAfter == 0 {
		st.Details = nil
	}
	b, err := json.Marshal(st)
	if err != nil {
		http.Error(w, message, code)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// unreachable answers a request the API server did not: 502 with a Status, as a load balancer
// in front of a stopped API server would. A request its client or CloseStreams ended is reset.
func unreachable(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		panic(http.ErrAbortHandler)
	}
	writeStatus(w, http.StatusBadGateway, fmt.Sprintf("faultproxy: the API server is unreachable: %v", err))
}
