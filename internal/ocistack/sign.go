package ocistack

import (
	"bytes"
	"context"
	"crypto"
	"crypto/elliptic"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/payload"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
)

// LoadSigner reads a PEM private key: cosign's encrypted key (`cosign generate-key-pair`,
// decrypted with password), or an unencrypted PKCS#8, SEC 1 or PKCS#1 key.
func LoadSigner(pemKey, password []byte) (signature.SignerVerifier, error) {
	priv, err := cryptoutils.UnmarshalPEMToPrivateKey(pemKey, cryptoutils.StaticPasswordFunc(password))
	if err != nil {
		return nil, fmt.Errorf("read the signing key: %w", err)
	}
	sv, err := signature.LoadSignerVerifier(priv, crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("load the signing key: %w", err)
	}
	return sv, nil
}

// GenerateKeyPair makes an ECDSA P-256 key pair in cosign's PEM formats: the private key
// encrypted with password (as `cosign generate-key-pair` writes cosign.key) and the public key
// (cosign.pub, what Flux's `spec.verify` Secret holds).
func GenerateKeyPair(password []byte) (privPEM, pubPEM []byte, err error) {
	return cryptoutils.GeneratePEMEncodedECDSAKeyPair(elliptic.P256(), cryptoutils.StaticPasswordFunc(password))
}

// SignatureTag is the tag cosign stores the signatures of the manifest d under.
func SignatureTag(d digest.Digest) string {
	return strings.Replace(d.String(), ":", "-", 1) + ".sig"
}

// Sign signs the manifest desc of the repository with cosign's key-based scheme and stores the
// signature under SignatureTag, replacing any signature there.
func Sign(ctx context.Context, t Target, desc ocispec.Descriptor, signer signature.Signer) error {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	repo, err := t.Repository()
	if err != nil {
		return err
	}
	ref, err := name.NewDigest(repo.Reference.Registry + "/" + repo.Reference.Repository + "@" + desc.Digest.String())
	if err != nil {
		return fmt.Errorf("signed reference: %w", err)
	}
	body, err := payload.Cosign{Image: ref}.MarshalJSON()
	if err != nil {
		return err
	}
	sig, err := signer.SignMessage(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("sign %s: %w", desc.Digest, err)
	}
	layer := content.NewDescriptorFromBytes(CosignSimpleSigningMediaType, body)
	layer.Annotations = map[string]string{CosignSignatureAnnotation: base64.StdEncoding.EncodeToString(sig)}
	if err := pushIfAbsent(ctx, repo, layer, body); err != nil {
		return fmt.Errorf("push the signature payload: %w", err)
	}
	// The config cosign writes: an image config whose one layer is the payload.
	config, err := json.Marshal(map[string]any{
		"architecture": "", "os": "", "config": map[string]any{},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{layer.Digest.String()}},
	})
	if err != nil {
		return err
	}
	configDesc := content.NewDescriptorFromBytes(ocispec.MediaTypeImageConfig, config)
	if err := pushIfAbsent(ctx, repo, configDesc, config); err != nil {
		return fmt.Errorf("push the signature config: %w", err)
	}
	manifest, err := json.Marshal(ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    configDesc,
		Layers:    []ocispec.Descriptor{layer},
	})
	if err != nil {
		return err
	}
	if _, err := oras.TagBytes(ctx, repo, ocispec.MediaTypeImageManifest, manifest, SignatureTag(desc.Digest)); err != nil {
		return fmt.Errorf("push the signature %s: %w", SignatureTag(desc.Digest), err)
	}
	return nil
}

// VerifySignature checks that the repository holds a cosign signature of the manifest d made
// with the key of pubPEM, as Flux's OCIRepository verification with a public key checks it.
func VerifySignature(ctx context.Context, t Target, d digest.Digest, pubPEM []byte) error {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	repo, err := t.Repository()
	if err != nil {
		return err
	}
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(pubPEM)
	if err != nil {
		return fmt.Errorf("read the public key: %w", err)
	}
	verifier, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		return err
	}
	m, err := fetchManifest(ctx, repo, SignatureTag(d))
	if err != nil {
		return fmt.Errorf("no signature of %s: %w", d, err)
	}
	var errs []error
	for _, l := range m.Layers {
		if l.MediaType != CosignSimpleSigningMediaType {
			continue
		}
		body, err := content.FetchAll(ctx, repo, l)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var p payload.SimpleContainerImage
		if err := json.Unmarshal(body, &p); err != nil || p.Critical.Image.DockerManifestDigest != d.String() {
			errs = append(errs, fmt.Errorf("a signature payload names another digest than %s", d))
			continue
		}
		sig, err := base64.StdEncoding.DecodeString(l.Annotations[CosignSignatureAnnotation])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := verifier.VerifySignature(bytes.NewReader(sig), bytes.NewReader(body)); err != nil {
			errs = append(errs, err)
			continue
		}
		return nil
	}
	if len(errs) == 0 {
		return fmt.Errorf("the signature manifest of %s has no cosign signature layer", d)
	}
	return fmt.Errorf("no valid signature of %s: %w", d, errors.Join(errs...))
}

func pushIfAbsent(ctx context.Context, repo *remote.Repository, desc ocispec.Descriptor, body []byte) error {
	ok, err := repo.Exists(ctx, desc)
	if err != nil || ok {
		return err
	}
	return repo.Push(ctx, desc, bytes.NewReader(body))
}

// IsSignatureTag reports whether tag is one of cosign's tags for signatures, attestations or
// SBOMs of a digest (sha256-<hex>.sig, .att, .sbom) rather than a release.
func IsSignatureTag(tag string) bool {
	rest, ok := strings.CutPrefix(tag, "sha256-")
	if !ok {
		return false
	}
	hex, suffix, ok := strings.Cut(rest, ".")
	return ok && len(hex) == 64 && (suffix == "sig" || suffix == "att" || suffix == "sbom")
}
