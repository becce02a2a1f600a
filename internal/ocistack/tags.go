package ocistack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// ErrTooManyTags is returned (wrapped) by Tags when the repository has more tags than asked for.
var ErrTooManyTags = errors.New("too many tags")

// ErrBadTagPage is returned (wrapped) by Tags when a page of the tag list does not decode
// within MaxMetadataBytes: the registry serves an oversized or malformed list.
var ErrBadTagPage = errors.New("a page of the tag list is malformed or too large")

// Tags lists the repository's tags, page by page, each page within MaxMetadataBytes; a
// repository with more than max tags is an ErrTooManyTags error, after reading at most one
// page more than max needs.
func Tags(ctx context.Context, t Target, max int) ([]string, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	repo, err := t.Repository()
	if err != nil {
		return nil, err
	}
	var out []string
	err = repo.Tags(ctx, "", func(page []string) error {
		out = append(out, page...)
		if len(out) > max {
			return fmt.Errorf("%w: %s has more than %d", ErrTooManyTags, repo.Reference, max)
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrTooManyTags) {
			return nil, err
		}
		var syntax *json.SyntaxError
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &syntax) {
			// ORAS stops reading a page at MaxMetadataBytes: what it read does not decode.
			return nil, fmt.Errorf("list the tags of %s: %w (a page of at most %d bytes, the bound, did not decode): %v", repo.Reference, ErrBadTagPage, MaxMetadataBytes, err)
		}
		return nil, fmt.Errorf("list the tags of %s: %w", repo.Reference, err)
	}
	return out, nil
}

// Resolve returns the digest tag points to in the repository ("sha256:<hex>"), from the
// registry's answer to a HEAD of the manifest (no body is read).
func Resolve(ctx context.Context, t Target, tag string) (string, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	repo, err := t.Repository()
	if err != nil {
		return "", err
	}
	desc, err := repo.Resolve(ctx, tag)
	if err != nil {
		return "", fmt.Errorf("resolve tag %s of %s: %w", tag, repo.Reference, err)
	}
	return desc.Digest.String(), nil
}
