package ocistack_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sigstore/sigstore/pkg/signature"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"

	"github.com/clusterstack-io/clusterstack-operator/bootstrap/registry"
	"github.com/clusterstack-io/clusterstack-operator/internal/ocistack"
	"github.com/clusterstack-io/clusterstack-operator/internal/testenv"
)

// keyPair makes a cosign key pair without a password: the signer and the PEM public key.
func keyPair(t *testing.T) (signature.Signer, []byte) {
	t.Helper()
	priv, pub, err := ocistack.GenerateKeyPair(nil)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ocistack.LoadSigner(priv, nil)
	if err != nil {
		t.Fatal(err)
	}
	return signer, pub
}

// startRegistry starts the real registry (bin/registry), plain http on loopback, or https with
// htpasswd users.
func startRegistry(t *testing.T, opts registry.Options) *registry.Server {
	t.Helper()
	root, err := testenv.Root()
	if err != nil {
		t.Fatal(err)
	}
	opts.BinDir = filepath.Join(root, "bin")
	if _, err := os.Stat(filepath.Join(opts.BinDir, registry.Binary)); err != nil {
		testenv.SkipOrFail(t, "bin/registry missing: run `make tools`")
	}
	opts.StateDir = t.TempDir()
	s, err := registry.Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

func target(s *registry.Server, repo string) ocistack.Target {
	return ocistack.Target{URL: s.URL(repo), Insecure: s.Insecure(), CA: s.CA()}
}

func stackDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

var files = map[string]string{
	"stack.yaml":                 "provider: aws\nclusterStackName: base\nkubernetesVersion: 1.36.3\n",
	"cluster-class/Chart.yaml":   "apiVersion: v2\nname: cluster-class\nversion: v1\n",
	"cluster-addon/cni/a.yaml":   "kind: ConfigMap\n",
	".git/HEAD":                  "ref: refs/heads/main\n",
	"cluster-addon/cni/b/c.yaml": "kind: Secret\n",
}

// untar lists the tarball's entries and their contents.
func untar(t *testing.T, gz []byte) map[string]string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	out := map[string]string{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		out[h.Name] = string(b)
		if !h.ModTime.IsZero() && h.ModTime.Unix() != 0 || h.Uname != "" {
			t.Errorf("entry %s keeps a time or an owner (%v, %q): the same directory must pack to the same bytes", h.Name, h.ModTime, h.Uname)
		}
	}
}

func TestPushWritesFluxsArtifactFormat(t *testing.T) {
	s := startRegistry(t, registry.Options{})
	ctx := context.Background()
	tgt := target(s, "stacks/aws-base")
	created := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	desc, err := ocistack.Push(ctx, tgt, stackDir(t, files), "aws-base-1-36-v1", ocistack.Origin{Source: "https://git.example/stacks", Revision: "aws-base-1-36-v1@sha1:0123", Created: created})
	if err != nil {
		t.Fatal(err)
	}
	rel, err := ocistack.Inspect(ctx, tgt, "aws-base-1-36-v1")
	if err != nil {
		t.Fatal(err)
	}
	if rel.Descriptor.Digest != desc.Digest || rel.Format != ocistack.FormatFlux || rel.Problem != "" {
		t.Fatalf("Inspect = %s %s %q, want %s Flux", rel.Descriptor.Digest, rel.Format, rel.Problem, desc.Digest)
	}
	m := rel.Manifest
	if m.MediaType != ocispec.MediaTypeImageManifest || m.Config.MediaType != ocistack.FluxConfigMediaType || len(m.Layers) != 1 || m.Layers[0].MediaType != ocistack.FluxContentMediaType {
		t.Fatalf("manifest is not in Flux's format: %+v", m)
	}
	want := map[string]string{ocistack.AnnotationCreated: "2026-11-01T10:00:00Z", ocistack.AnnotationSource: "https://git.example/stacks", ocistack.AnnotationRevision: "aws-base-1-36-v1@sha1:0123"}
	for k, v := range want {
		if m.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, m.Annotations[k], v)
		}
	}
	repo, err := tgt.Repository()
	if err != nil {
		t.Fatal(err)
	}
	layer, err := content.FetchAll(ctx, repo, m.Layers[0])
	if err != nil {
		t.Fatal(err)
	}
	got := untar(t, layer)
	for name, body := range files {
		if strings.HasPrefix(name, ".git/") {
			if _, ok := got[name]; ok {
				t.Errorf("%s is in the artifact: .git must be left out", name)
			}
			continue
		}
		if got[name] != body {
			t.Errorf("artifact entry %s = %q, want %q (entries: %v)", name, got[name], body, got)
		}
	}
	// The same directory and time publish the same digest (a mirror from Git is reproducible).
	again, err := ocistack.Push(ctx, tgt, stackDir(t, files), "again", ocistack.Origin{Source: "https://git.example/stacks", Revision: "aws-base-1-36-v1@sha1:0123", Created: created})
	if err != nil {
		t.Fatal(err)
	}
	if again.Digest != desc.Digest {
		t.Errorf("pushing the same directory again gave %s, first %s", again.Digest, desc.Digest)
	}
}

func TestSignAndVerifyWithCosignKeys(t *testing.T) {
	s := startRegistry(t, registry.Options{})
	ctx := context.Background()
	tgt := target(s, "stacks/signed")
	desc, err := ocistack.Push(ctx, tgt, stackDir(t, files), "v1", ocistack.Origin{})
	if err != nil {
		t.Fatal(err)
	}
	priv, pub, err := ocistack.GenerateKeyPair([]byte("secret"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(priv, []byte("ENCRYPTED SIGSTORE PRIVATE KEY")) {
		t.Fatalf("private key is not in cosign's encrypted format:\n%s", priv)
	}
	if _, err := ocistack.LoadSigner(priv, []byte("wrong")); err == nil {
		t.Fatal("LoadSigner accepted a wrong password")
	}
	signer, err := ocistack.LoadSigner(priv, []byte("secret"))
	if err != nil {
		t.Fatal(err)
	}
	if err := ocistack.VerifySignature(ctx, tgt, desc.Digest, pub); err == nil {
		t.Fatal("VerifySignature passed before anything was signed")
	}
	if err := ocistack.Sign(ctx, tgt, desc, signer); err != nil {
		t.Fatal(err)
	}
	if err := ocistack.VerifySignature(ctx, tgt, desc.Digest, pub); err != nil {
		t.Fatalf("VerifySignature: %v", err)
	}
	_, otherPub, err := ocistack.GenerateKeyPair(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ocistack.VerifySignature(ctx, tgt, desc.Digest, otherPub); err == nil {
		t.Fatal("VerifySignature passed with another key")
	}
	tags, err := ocistack.Tags(ctx, tgt, 10)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(tags, ",") != ocistack.SignatureTag(desc.Digest)+",v1" {
		t.Errorf("tags = %v, want the release and its cosign signature tag %s", tags, ocistack.SignatureTag(desc.Digest))
	}
}

func TestMirrorPreservesDigestAndSignature(t *testing.T) {
	src := startRegistry(t, registry.Options{})
	dst := startRegistry(t, registry.Options{TLS: true, Users: map[string]string{"mirror": "pw"}})
	ctx := context.Background()
	from := target(src, "stacks/aws-base")
	to := target(dst, "mirror/aws-base")
	to.Username, to.Password = "mirror", "pw"
	signed, err := ocistack.Push(ctx, from, stackDir(t, files), "v1", ocistack.Origin{})
	if err != nil {
		t.Fatal(err)
	}
	signer, pub := keyPair(t)
	if err := ocistack.Sign(ctx, from, signed, signer); err != nil {
		t.Fatal(err)
	}
	unsigned, err := ocistack.Push(ctx, from, stackDir(t, map[string]string{"stack.yaml": "v2"}), "v2", ocistack.Origin{})
	if err != nil {
		t.Fatal(err)
	}

	anonymous := to
	anonymous.Username, anonymous.Password = "", ""
	if _, err := ocistack.Mirror(ctx, from, anonymous, "v1"); err == nil {
		t.Fatal("Mirror pushed to a registry that wants credentials without them")
	}
	c, err := ocistack.Mirror(ctx, from, to, "v1")
	if err != nil {
		t.Fatal(err)
	}
	if c.Descriptor.Digest != signed.Digest || !c.Signed {
		t.Fatalf("Mirror(v1) = %s signed=%v, want %s signed", c.Descriptor.Digest, c.Signed, signed.Digest)
	}
	if err := ocistack.VerifySignature(ctx, to, signed.Digest, pub); err != nil {
		t.Fatalf("the mirror's signature does not verify: %v", err)
	}
	c, err = ocistack.Mirror(ctx, from, to, "v2")
	if err != nil {
		t.Fatal(err)
	}
	if c.Descriptor.Digest != unsigned.Digest || c.Signed {
		t.Fatalf("Mirror(v2) = %s signed=%v, want %s unsigned", c.Descriptor.Digest, c.Signed, unsigned.Digest)
	}
	rel, err := ocistack.Inspect(ctx, to, "v2")
	if err != nil || rel.Descriptor.Digest != unsigned.Digest {
		t.Fatalf("Inspect(mirror v2) = %s, %v", rel.Descriptor.Digest, err)
	}
}

func TestTargetRefusals(t *testing.T) {
	for name, tc := range map[string]struct {
		t    ocistack.Target
		want string
	}{
		"credentials over plain http": {ocistack.Target{URL: "oci://127.0.0.1:5000/a", Insecure: true, Username: "u", Password: "p"}, "never sent over plain http"},
		"plain http to another host":  {ocistack.Target{URL: "oci://registry.example/a", Insecure: true}, "only for loopback"},
		"a tag in the URL":            {ocistack.Target{URL: "oci://registry.example/a:v1"}, "without a tag or digest"},
		"not oci://":                  {ocistack.Target{URL: "https://registry.example/a"}, "not an OCI repository URL"},
		"a CA that holds nothing":     {ocistack.Target{URL: "oci://registry.example/a", CA: []byte("x")}, "no PEM certificate"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := tc.t.Repository()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Repository() = %v, want an error with %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "p@") {
				t.Errorf("the error carries a credential: %v", err)
			}
		})
	}
}

// An SCS cluster-stack release, laid out as csctl publishes it: one layer per release file.
func TestInspectExplainsAnSCSRelease(t *testing.T) {
	s := startRegistry(t, registry.Options{})
	ctx := context.Background()
	tgt := target(s, "scs/cluster-stacks")
	repo, err := tgt.Repository()
	if err != nil {
		t.Fatal(err)
	}
	var layers []ocispec.Descriptor
	for _, f := range []struct{ name, mediaType, body string }{
		{"docker-ferrol-1-27-cluster-class-v2.tgz", "application/vnd.scs.cluster-class.v1.tar+gzip", "chart"},
		{"docker-ferrol-1-27-cluster-addon-v2.tgz", "application/vnd.scs.cluster-addon.layer.v1.tar+gzip", "addon"},
		{"metadata.yaml", "application/vnd.scs.metadata.layer.v1+yaml", "apiVersion: metadata.clusterstack.x-k8s.io/v1alpha1\n"},
		{"hashes.json", "application/vnd.scs.hashes.layer.v1+yaml", "{}"},
	} {
		d, err := oras.PushBytes(ctx, repo, f.mediaType, []byte(f.body))
		if err != nil {
			t.Fatal(err)
		}
		d.Annotations = map[string]string{"org.opencontainers.image.title": f.name}
		layers = append(layers, d)
	}
	desc, err := oras.PackManifest(ctx, repo, oras.PackManifestVersion1_1, ocistack.SCSArtifactType, oras.PackManifestOptions{Layers: layers, ManifestAnnotations: map[string]string{"kubernetesVersion": "v1.27.3"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Tag(ctx, desc, "docker-ferrol-1-27-v2"); err != nil {
		t.Fatal(err)
	}
	rel, err := ocistack.Inspect(ctx, tgt, "docker-ferrol-1-27-v2")
	if err != nil {
		t.Fatal(err)
	}
	if rel.Format != ocistack.FormatSCS {
		t.Fatalf("Format = %s, want SCS (problem: %s)", rel.Format, rel.Problem)
	}
	for _, want := range []string{desc.Digest.String(), ocistack.SCSArtifactType, "metadata.yaml (application/vnd.scs.metadata.layer.v1+yaml)", "docker-ferrol-1-27-cluster-class-v2.tgz", ocistack.FluxContentMediaType, "stackctl push"} {
		if !strings.Contains(rel.Problem, want) {
			t.Errorf("the message does not say %q:\n%s", want, rel.Problem)
		}
	}
}
