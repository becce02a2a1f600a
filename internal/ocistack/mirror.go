package ocistack

import (
	"context"
	"errors"
	"fmt"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/memory"
	"oras.land/oras-go/v2/errdef"
)

// Copied is what Mirror copied of one tag.
type Copied struct {
	// Tag is the release tag.
	Tag string
	// Descriptor is the release manifest's, the same in both repositories.
	Descriptor ocispec.Descriptor
	// Signed is true when a cosign signature was copied with it.
	Signed bool
}

// Mirror copies tag from src to dst, byte for byte (the digest is preserved), with the
// artifacts that refer to it (notation signatures, through the referrers API or its tag
// schema) and its cosign signature (the SignatureTag), so that a registry mirror verifies as
// the original does.
func Mirror(ctx context.Context, src, dst Target, tag string) (Copied, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	from, err := src.Repository()
	if err != nil {
		return Copied{}, err
	}
	to, err := dst.Repository()
	if err != nil {
		return Copied{}, err
	}
	// Through memory, not registry to registry: oras-go closes a blob's download stream, when
	// it is the upload's body, from two goroutines at once (a data race its HTTP/2 client hits).
	// A release is small; the memory store holds it and its referrers once.
	mem := memory.New()
	// Every blob is held in memory on the way: one larger than a release's content may be is
	// refused before it is read (the size a descriptor declares is the size ORAS reads and
	// verifies).
	bounded := oras.DefaultExtendedCopyOptions
	bounded.PreCopy = func(_ context.Context, desc ocispec.Descriptor) error {
		if desc.Size > MaxContentBytes {
			return fmt.Errorf("%s (%s) has %d bytes: more than the %d a release may hold", desc.Digest, desc.MediaType, desc.Size, MaxContentBytes)
		}
		return nil
	}
	if _, err := oras.ExtendedCopy(ctx, from, tag, mem, tag, bounded); err != nil {
		return Copied{}, fmt.Errorf("copy %s:%s: %w", from.Reference, tag, err)
	}
	desc, err := oras.ExtendedCopy(ctx, mem, tag, to, tag, oras.DefaultExtendedCopyOptions)
	if err != nil {
		return Copied{}, fmt.Errorf("copy %s:%s to %s: %w", from.Reference, tag, to.Reference, err)
	}
	out := Copied{Tag: tag, Descriptor: desc}
	sigTag := SignatureTag(desc.Digest)
	if _, err := from.Resolve(ctx, sigTag); err != nil {
		if errors.Is(err, errdef.ErrNotFound) {
			return out, nil
		}
		return out, fmt.Errorf("look for the signature %s:%s: %w", from.Reference, sigTag, err)
	}
	sigOpts := oras.DefaultCopyOptions
	sigOpts.PreCopy = bounded.PreCopy
	if _, err := oras.Copy(ctx, from, sigTag, mem, sigTag, sigOpts); err != nil {
		return out, fmt.Errorf("copy the signature %s:%s: %w", from.Reference, sigTag, err)
	}
	if _, err := oras.Copy(ctx, mem, sigTag, to, sigTag, oras.DefaultCopyOptions); err != nil {
		return out, fmt.Errorf("copy the signature %s:%s to %s: %w", from.Reference, sigTag, to.Reference, err)
	}
	out.Signed = true
	return out, nil
}
