package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"

	"github.com/fluxcd/pkg/http/fetch"
	"github.com/fluxcd/pkg/tar"
	"github.com/opencontainers/go-digest"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Bounds of an artifact, as the operator's (controllers/stackcache.go).
const (
	maxArtifactSize = 64 << 20
	maxUntarSize    = 256 << 20
)

// fetchArtifact downloads a source-controller artifact, checks its digest and unpacks it into
// dir. A URL on a cluster-internal Service name is read through the API server's service proxy;
// any other (or one whose host hostOverride replaces, or any with direct) directly.
func fetchArtifact(ctx context.Context, cfg *rest.Config, artifactURL, dig, hostOverride string, direct bool, dir string) error {
	u, err := url.Parse(artifactURL)
	if err != nil {
		return fmt.Errorf("artifact URL %q: %w", artifactURL, err)
	}
	if hostOverride != "" || direct || !clusterInternal(u.Hostname()) {
		f := fetch.New(fetch.WithRetries(1), fetch.WithHostnameOverwrite(hostOverride), fetch.WithMaxDownloadSize(maxArtifactSize),
			fetch.WithUntar(tar.WithMaxUntarSize(maxUntarSize)))
		if err := f.FetchWithContext(ctx, artifactURL, dig, dir); err != nil {
			return fmt.Errorf("download %s: %w", artifactURL, err)
		}
		return nil
	}
	svc, ns, _ := strings.Cut(u.Hostname(), ".")
	port := u.Port()
	if port == "" {
		port = "80"
	}
	if u.Scheme == "https" && u.Port() == "" {
		port = "443"
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("client for the service proxy: %w", err)
	}
	rc, err := cs.CoreV1().Services(ns).ProxyGet(u.Scheme, svc, port, u.Path, nil).Stream(ctx)
	if err != nil {
		return fmt.Errorf("read %s through the API server's proxy of Service %s/%s: %w", artifactURL, ns, svc, err)
	}
	defer func() { _ = rc.Close() }()
	data, err := io.ReadAll(io.LimitReader(rc, maxArtifactSize+1))
	if err != nil {
		return fmt.Errorf("read %s: %w", artifactURL, err)
	}
	if len(data) > maxArtifactSize {
		return fmt.Errorf("artifact %s is larger than %d bytes", artifactURL, maxArtifactSize)
	}
	d, err := digest.Parse(dig)
	if err != nil {
		return fmt.Errorf("artifact digest %q: %w", dig, err)
	}
	if got := d.Algorithm().FromBytes(data); got != d {
		return fmt.Errorf("artifact %s has digest %s, not %s", artifactURL, got, d)
	}
	if err := tar.Untar(bytes.NewReader(data), dir, tar.WithMaxUntarSize(maxUntarSize)); err != nil {
		return fmt.Errorf("unpack %s: %w", artifactURL, err)
	}
	return nil
}

// clusterInternal reports whether host is a Service name only the cluster resolves:
// <svc>.<ns>.svc, optionally followed by the cluster domain.
func clusterInternal(host string) bool {
	if net.ParseIP(host) != nil {
		return false
	}
	labels := strings.Split(strings.TrimSuffix(host, "."), ".")
	return len(labels) >= 3 && labels[2] == "svc"
}
