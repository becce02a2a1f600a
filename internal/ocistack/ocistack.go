// Package ocistack publishes, signs, copies and inspects cluster stack releases stored as OCI
// artifacts in a registry, through ORAS's Go library (oras.land/oras-go/v2). It has a client:
// every function talks to a registry; what it reads from one is bounded (MaxMetadataBytes for
// tag lists and manifests, MaxContentBytes for the content layer), and no error it returns
// carries a credential.
//
// A release is an artifact in Flux's format, as `flux push artifact` writes it: an OCI image
// manifest whose config has the media type FluxConfigMediaType and whose one layer
// (FluxContentMediaType) is a gzipped tarball of the stack directory, with the
// org.opencontainers.image.created/source/revision annotations. Flux's OCIRepository takes the
// first layer and unpacks it: the stack is at the artifact's root. A release's Helm charts are
// artifacts of their own beside it, in Helm's format, which the release manifest names by
// digest (release.go, PushRelease); Mirror copies them with it.
//
// A signature is cosign's: a manifest tagged sha256-<hex of the release digest>.sig with one
// layer of media type CosignSimpleSigningMediaType (the "simple signing" payload naming the
// release digest) and the base64 signature in its CosignSignatureAnnotation, which Flux's
// OCIRepository `spec.verify` (provider cosign, public keys) checks.
package ocistack

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/retry"
)

const (
	// FluxConfigMediaType is the media type of the config of Flux's artifacts.
	FluxConfigMediaType = "application/vnd.cncf.flux.config.v1+json"
	// FluxContentMediaType is the media type of the layer of Flux's artifacts: a gzipped
	// tarball of the published directory.
	FluxContentMediaType = "application/vnd.cncf.flux.content.v1.tar+gzip"
	// CosignSimpleSigningMediaType is the media type of a cosign signature layer.
	CosignSimpleSigningMediaType = "application/vnd.dev.cosign.simplesigning.v1+json"
	// CosignSignatureAnnotation holds the base64 signature of a cosign signature layer.
	CosignSignatureAnnotation = "dev.cosignproject.cosign/signature"

	// AnnotationCreated, AnnotationSource and AnnotationRevision are the OCI annotations Flux
	// reads from an artifact's manifest (its origin source and revision).
	AnnotationCreated  = "org.opencontainers.image.created"
	AnnotationSource   = "org.opencontainers.image.source"
	AnnotationRevision = "org.opencontainers.image.revision"

	// MaxMetadataBytes bounds every tag list page and manifest read from a registry.
	MaxMetadataBytes = 1 << 20
	// MaxContentBytes bounds a release's content layer (the stack directory, gzipped), as the
	// operator bounds an unpacked artifact.
	MaxContentBytes = 64 << 20
	// DefaultTimeout bounds one operation against a registry when the caller's context has no
	// deadline: a registry that streams slowly fails instead of holding the caller.
	DefaultTimeout = 2 * time.Minute
)

// Target is a repository in a registry and how to reach it.
type Target struct {
	// URL is oci://<host>[:<port>]/<repository>.
	URL string
	// Username and Password are the registry credentials (empty: anonymous).
	Username, Password string
	// CA is a PEM bundle the registry's certificate must chain to (added to the system pool).
	CA []byte
	// Insecure reaches the registry over plain http. Only loopback hosts may be reached so, and
	// never with credentials.
	Insecure bool
	// Transport replaces the default HTTP transport (tests).
	Transport http.RoundTripper
}

// Reference is the repository of url without its scheme: <host>[:<port>]/<repository>.
func Reference(url string) (string, error) {
	ref, ok := strings.CutPrefix(url, "oci://")
	if !ok {
		return "", fmt.Errorf("%q is not an OCI repository URL oci://<host>/<repository>", url)
	}
	r, err := registry.ParseReference(ref)
	if err != nil || r.Reference != "" {
		return "", fmt.Errorf("%q is not an OCI repository URL oci://<host>/<repository> (without a tag or digest)", url)
	}
	return r.String(), nil
}

// IsLoopback reports whether host (with or without a port) is a loopback name or address.
func IsLoopback(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Repository is the ORAS client of t's repository, with the package's bounds.
func (t Target) Repository() (*remote.Repository, error) {
	ref, err := Reference(t.URL)
	if err != nil {
		return nil, err
	}
	repo, err := remote.NewRepository(ref)
	if err != nil {
		return nil, fmt.Errorf("repository %s: %w", ref, err)
	}
	host := repo.Reference.Registry
	if t.Insecure {
		if !IsLoopback(host) {
			return nil, fmt.Errorf("registry %s: plain http (insecure) is allowed only for loopback hosts", host)
		}
		if t.Username != "" || t.Password != "" {
			return nil, fmt.Errorf("registry %s: credentials are never sent over plain http (insecure); serve the registry over https", host)
		}
		if len(t.CA) > 0 {
			return nil, fmt.Errorf("registry %s: a CA is meaningless over plain http (insecure)", host)
		}
	}
	repo.PlainHTTP = t.Insecure
	repo.MaxMetadataBytes = MaxMetadataBytes
	repo.TagListPageSize = 1000
	// Referrers are listed through the tag schema when the registry has no referrers API.
	repo.SkipReferrersGC = true

	base := t.Transport
	if base == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.ResponseHeaderTimeout = 30 * time.Second
		if len(t.CA) > 0 {
			pool, err := x509.SystemCertPool()
			if err != nil || pool == nil {
				pool = x509.NewCertPool()
			}
			if !pool.AppendCertsFromPEM(t.CA) {
				return nil, errors.New("the CA bundle holds no PEM certificate")
			}
			tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		}
		base = tr
	}
	client := &auth.Client{
		Client: &http.Client{Transport: retry.NewTransport(base), CheckRedirect: limitRedirects},
		Cache:  auth.NewCache(),
		Header: http.Header{"User-Agent": {"clusterstack-operator"}},
	}
	if t.Username != "" || t.Password != "" {
		client.Credential = auth.StaticCredential(host, auth.Credential{Username: t.Username, Password: t.Password})
	}
	repo.Client = client
	return repo, nil
}

// limitRedirects follows redirects (registries redirect blob downloads to storage; net/http
// drops the Authorization header on a redirect to another host) up to five.
func limitRedirects(_ *http.Request, via []*http.Request) error {
	if len(via) >= 5 {
		return errors.New("stopped after 5 redirects")
	}
	return nil
}
