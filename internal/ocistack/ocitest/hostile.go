// Package ocitest has a hostile OCI registry for tests: an HTTP server on loopback that speaks
// enough of the distribution API (tag list, manifests, blobs) for a client to reach what it
// abuses, and abuses it in one of the ways of Mode. It has no storage: everything it serves is
// generated, without allocating per tag or per byte.
package ocitest

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Mode is how the registry misbehaves.
type Mode string

const (
	// HugeTagList answers the tag list with Tags tags in one page (no Link header).
	HugeTagList Mode = "HugeTagList"
	// HugeManifest answers every manifest with a JSON document of ManifestBytes bytes.
	HugeManifest Mode = "HugeManifest"
	// SlowStream answers every manifest and blob one byte per SlowEvery.
	SlowStream Mode = "SlowStream"
	// BadLayerDigest serves a well-formed Flux artifact manifest whose layer's bytes do not
	// match the digest the manifest gives.
	BadLayerDigest Mode = "BadLayerDigest"
	// HugeLayer serves a manifest whose layer says it has HugeLayerBytes bytes.
	HugeLayer Mode = "HugeLayer"
)

// Registry is a hostile registry.
type Registry struct {
	Mode Mode
	// Tags is how many tags HugeTagList lists (default 2,000,000: about 40 MiB).
	Tags int
	// ManifestBytes is the size of HugeManifest's manifests (default 64 MiB).
	ManifestBytes int64
	// SlowEvery is SlowStream's pause between bytes (default 1s).
	SlowEvery time.Duration
	// Served counts the bytes written to clients.
	Served atomic.Int64

	srv *http.Server
	ln  net.Listener
}

// Start serves on a free loopback port until Close.
func (r *Registry) Start() error {
	if r.Tags == 0 {
		r.Tags = 2_000_000
	}
	if r.ManifestBytes == 0 {
		r.ManifestBytes = 64 << 20
	}
	if r.SlowEvery == 0 {
		r.SlowEvery = time.Second
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	r.ln = ln
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return nil
}

// Host is host:port.
func (r *Registry) Host() string { return r.ln.Addr().String() }

// URL is the oci:// URL of repository repo on this registry.
func (r *Registry) URL(repo string) string { return "oci://" + r.Host() + "/" + repo }

// Close stops serving and ends open connections.
func (r *Registry) Close() error { return r.srv.Close() }

// The layer BadLayerDigest announces, and the different bytes it serves.
var (
	announcedLayer = []byte("the layer the manifest announces")
	servedLayer    = []byte("other bytes, of another digest..")
)

func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// HugeLayerBytes is the size of the layer HugeLayer announces (1 GiB).
const HugeLayerBytes = 1 << 30

// BadManifest is the manifest BadLayerDigest serves, and its digest.
func BadManifest() ([]byte, string) { return manifestWithLayer(len(announcedLayer)) }

// manifestWithLayer is a Flux artifact manifest announcing announcedLayer's digest with size.
func manifestWithLayer(size int) ([]byte, string) {
	m := map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        map[string]any{"mediaType": "application/vnd.cncf.flux.config.v1+json", "digest": digestOf([]byte("{}")), "size": 2},
		"layers": []any{map[string]any{"mediaType": "application/vnd.cncf.flux.content.v1.tar+gzip",
			"digest": digestOf(announcedLayer), "size": size}},
	}
	b, _ := json.Marshal(m)
	return b, digestOf(b)
}

func (r *Registry) serve(w http.ResponseWriter, req *http.Request) {
	cw := &countingWriter{w: w, n: &r.Served}
	p := req.URL.Path
	switch {
	case p == "/v2/" || p == "/v2":
		w.WriteHeader(http.StatusOK)
	case strings.HasSuffix(p, "/tags/list"):
		r.tagList(cw, w)
	case strings.Contains(p, "/manifests/"):
		r.manifest(cw, w, req)
	case strings.Contains(p, "/blobs/"):
		r.blob(cw, w, req)
	default:
		http.NotFound(w, req)
	}
}

func (r *Registry) tagList(cw io.Writer, w http.ResponseWriter) {
	if r.Mode != HugeTagList {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(cw, `{"name":"x","tags":["v1"]}`)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	bw := bufio.NewWriterSize(cw, 64<<10)
	_, _ = bw.WriteString(`{"name":"x","tags":[`)
	buf := make([]byte, 0, 32)
	for i := range r.Tags {
		buf = buf[:0]
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, `"aws-base-1-36-v`...)
		buf = strconv.AppendInt(buf, int64(i), 10)
		buf = append(buf, '"')
		if _, err := bw.Write(buf); err != nil {
			return
		}
	}
	_, _ = bw.WriteString(`]}`)
	_ = bw.Flush()
}

func (r *Registry) manifest(cw io.Writer, w http.ResponseWriter, req *http.Request) {
	switch r.Mode {
	case HugeManifest:
		w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
		w.Header().Set("Docker-Content-Digest", digestOf([]byte("huge")))
		w.Header().Set("Content-Length", strconv.FormatInt(r.ManifestBytes, 10))
		if req.Method == http.MethodHead {
			return
		}
		bw := bufio.NewWriterSize(cw, 64<<10)
		_, _ = bw.WriteString(`{"schemaVersion":2,"annotations":{"x":"`)
		pad := make([]byte, 64<<10)
		for i := range pad {
			pad[i] = 'x'
		}
		for left := r.ManifestBytes - 40; left > 0; left -= int64(len(pad)) {
			n := min(left, int64(len(pad)))
			if _, err := bw.Write(pad[:n]); err != nil {
				return
			}
		}
		_ = bw.Flush()
	case SlowStream:
		body, d := BadManifest()
		w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
		w.Header().Set("Docker-Content-Digest", d)
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		if req.Method == http.MethodHead {
			return
		}
		r.slow(cw, w, req, body)
	default:
		body, d := BadManifest()
		if r.Mode == HugeLayer {
			body, d = manifestWithLayer(HugeLayerBytes)
		}
		w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
		w.Header().Set("Docker-Content-Digest", d)
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		if req.Method == http.MethodHead {
			return
		}
		_, _ = cw.Write(body)
	}
}

func (r *Registry) blob(cw io.Writer, w http.ResponseWriter, req *http.Request) {
	body := servedLayer
	if strings.HasSuffix(req.URL.Path, digestOf([]byte("{}"))) {
		body = []byte("{}")
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.Header().Set("Docker-Content-Digest", digestOf(body))
	if req.Method == http.MethodHead {
		return
	}
	if r.Mode == SlowStream {
		r.slow(cw, w, req, body)
		return
	}
	_, _ = cw.Write(body)
}

// slow writes body a byte at a time, SlowEvery apart, until the client goes away.
func (r *Registry) slow(cw io.Writer, w http.ResponseWriter, req *http.Request, body []byte) {
	fl, _ := w.(http.Flusher)
	for i := range body {
		if _, err := cw.Write(body[i : i+1]); err != nil {
			return
		}
		if fl != nil {
			fl.Flush()
		}
		select {
		case <-req.Context().Done():
			return
		case <-time.After(r.SlowEvery):
		}
	}
}

type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// String names the registry's mode and address.
func (r *Registry) String() string { return fmt.Sprintf("hostile registry %s (%s)", r.Host(), r.Mode) }
