// Package registry runs a real OCI registry on loopback for the local management plane and the
// tests: CNCF Distribution's registry server (bin/registry, built by `make tools` from the
// pinned module in hack/tools/registry) with the filesystem storage driver under a state
// directory.
//
// It serves plain http by default (what Flux's OCIRepository `spec.insecure` allows on
// loopback), or https with a certificate of a CA it generates (Options.TLS; Server.CA is the
// bundle clients trust), and anonymous access by default, or htpasswd users (Options.Users,
// which Distribution accepts only over https).
package registry

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/clusterstack-io/clusterstack-operator/bootstrap/proc"
)

// Binary is the registry's executable in the tools directory.
const Binary = "registry"

// Options configures a registry.
type Options struct {
	// BinDir holds bin/registry.
	BinDir string
	// StateDir holds the configuration, the storage (<StateDir>/storage) and, with TLS, the CA
	// and the certificate.
	StateDir string
	// LogFile receives the registry's output. Default: <StateDir>/registry.log.
	LogFile string
	// TLS serves https with a certificate for 127.0.0.1 and localhost from a generated CA.
	TLS bool
	// Users are htpasswd users, name to password; none: anonymous access. Needs TLS.
	Users map[string]string
	// Port is the port to listen on (127.0.0.1); 0: a free one.
	Port int
}

// Server is a running registry.
type Server struct {
	opts    Options
	host    string
	ca      []byte
	config  string
	process *proc.Process
}

// Start writes the configuration and starts the registry, and returns once it answers.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if opts.StateDir == "" {
		return nil, errors.New("registry: StateDir is required")
	}
	if len(opts.Users) > 0 && !opts.TLS {
		return nil, errors.New("registry: htpasswd users need TLS")
	}
	if opts.LogFile == "" {
		opts.LogFile = filepath.Join(opts.StateDir, "registry.log")
	}
	bin := filepath.Join(opts.BinDir, Binary)
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("registry: %w (run `make tools`)", err)
	}
	if err := os.MkdirAll(filepath.Join(opts.StateDir, "storage"), 0o755); err != nil {
		return nil, err
	}
	port := opts.Port
	if port == 0 {
		var err error
		if port, err = proc.FreePort(); err != nil {
			return nil, fmt.Errorf("registry: %w", err)
		}
	}
	s := &Server{opts: opts, host: "127.0.0.1:" + strconv.Itoa(port)}
	var err error
	if s.config, err = s.writeFiles(); err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	if err := s.start(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Server) start(ctx context.Context) error {
	var err error
	s.process, err = proc.Start(proc.Spec{
		Name: "registry",
		Path: filepath.Join(s.opts.BinDir, Binary),
		Args: []string{"serve", s.config},
		// Distribution exports traces over OTLP unless told not to.
		Env:     []string{"OTEL_TRACES_EXPORTER=none", "OTEL_SDK_DISABLED=true"},
		Dir:     s.opts.StateDir,
		LogFile: s.opts.LogFile,
	})
	if err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	if err := s.waitReady(ctx); err != nil {
		_ = s.Stop()
		return fmt.Errorf("registry: not ready (log: %s): %w", s.opts.LogFile, err)
	}
	return nil
}

// Restart starts a stopped registry again, on the same address with the same storage,
// certificate and users (to test clients against a registry that goes away).
func (s *Server) Restart(ctx context.Context) error {
	if err := s.Stop(); err != nil {
		return err
	}
	return s.start(ctx)
}

// Host is the registry's host:port.
func (s *Server) Host() string { return s.host }

// URL is the oci:// URL of the repository repo.
func (s *Server) URL(repo string) string {
	return "oci://" + s.host + "/" + strings.TrimPrefix(repo, "/")
}

// Insecure reports whether the registry serves plain http.
func (s *Server) Insecure() bool { return !s.opts.TLS }

// CA is the PEM CA bundle the registry's certificate chains to (nil without TLS).
func (s *Server) CA() []byte { return s.ca }

// StorageDir is where the registry keeps blobs and manifests.
func (s *Server) StorageDir() string { return filepath.Join(s.opts.StateDir, "storage") }

// Process is the registry's process.
func (s *Server) Process() *proc.Process { return s.process }

// Stop stops the registry; its storage stays. Idempotent.
func (s *Server) Stop() error {
	if s == nil || s.process == nil {
		return nil
	}
	return s.process.Stop(proc.DefaultStopTimeout)
}

func (s *Server) writeFiles() (string, error) {
	dir := s.opts.StateDir
	var b strings.Builder
	fmt.Fprintf(&b, "version: 0.1\nlog:\n  level: info\n  formatter: text\n")
	fmt.Fprintf(&b, "storage:\n  filesystem:\n    rootdirectory: %q\n  delete:\n    enabled: true\n", s.StorageDir())
	fmt.Fprintf(&b, "http:\n  addr: %q\n  secret: %q\n", s.host, randomString())
	if s.opts.TLS {
		ca, cert, key, err := certificates()
		if err != nil {
			return "", err
		}
		s.ca = ca
		for name, data := range map[string][]byte{"ca.crt": ca, "tls.crt": cert, "tls.key": key} {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
				return "", err
			}
		}
		fmt.Fprintf(&b, "  tls:\n    certificate: %q\n    key: %q\n", filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	}
	if len(s.opts.Users) > 0 {
		names := make([]string, 0, len(s.opts.Users))
		for n := range s.opts.Users {
			names = append(names, n)
		}
		sort.Strings(names)
		var h strings.Builder
		for _, n := range names {
			hash, err := bcrypt.GenerateFromPassword([]byte(s.opts.Users[n]), bcrypt.MinCost)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(&h, "%s:%s\n", n, hash)
		}
		if err := os.WriteFile(filepath.Join(dir, "htpasswd"), []byte(h.String()), 0o600); err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "auth:\n  htpasswd:\n    realm: registry\n    path: %q\n", filepath.Join(dir, "htpasswd"))
	}
	config := filepath.Join(dir, "config.yml")
	return config, os.WriteFile(config, []byte(b.String()), 0o600)
}

// waitReady polls /v2/ until it answers 200 (anonymous) or 401 (htpasswd).
func (s *Server) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	scheme, tr := "http", &http.Transport{}
	if s.opts.TLS {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(s.ca)
		scheme, tr = "https", &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	}
	client := &http.Client{Timeout: 2 * time.Second, Transport: tr}
	defer client.CloseIdleConnections()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+s.host+"/v2/", nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusUnauthorized {
				return nil
			}
			err = fmt.Errorf("GET /v2/: %s", resp.Status)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), last)
		case <-s.process.Done():
			return fmt.Errorf("the registry exited: %w", s.process.Exited())
		case <-tick.C:
		}
	}
}

// certificates makes a CA and a server certificate for 127.0.0.1, ::1 and localhost, PEM.
func certificates() (caPEM, certPEM, keyPEM []byte, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "local registry CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(10 * 365 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, nil, nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(10 * 365 * 24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.IPv6loopback}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

func randomString() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x", b)
}
