package ocistack

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
)

// Origin is where a published release came from, recorded in the manifest's annotations as
// Flux's `flux push artifact --source --revision` records it.
type Origin struct {
	// Source is the URL of the source the release was published from (a Git repository).
	Source string
	// Revision is the source's revision, as Flux writes revisions: "<tag>@sha1:<commit>".
	Revision string
	// Created is the time the artifact records; zero: now.
	Created time.Time
}

// Push publishes the directory dir as tag of the repository in Flux's artifact format and
// returns the manifest's descriptor (its digest is what a release is pinned to). It publishes
// the directory alone: PushRelease publishes a stack release with its Helm charts.
func Push(ctx context.Context, t Target, dir, tag string, origin Origin) (ocispec.Descriptor, error) {
	return push(ctx, t, dir, tag, origin, nil)
}

// push is Push with the annotations extra added to the manifest's (origin's win over them).
func push(ctx context.Context, t Target, dir, tag string, origin Origin, extra map[string]string) (ocispec.Descriptor, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	repo, err := t.Repository()
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	layer, err := Tarball(dir)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	if len(layer) > MaxContentBytes {
		return ocispec.Descriptor{}, fmt.Errorf("%s packs to %d bytes, more than the %d a release may hold", dir, len(layer), MaxContentBytes)
	}
	layerDesc, err := oras.PushBytes(ctx, repo, FluxContentMediaType, layer)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("push the content layer to %s: %w", repo.Reference, err)
	}
	configDesc, err := oras.PushBytes(ctx, repo, FluxConfigMediaType, []byte("{}"))
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("push the config to %s: %w", repo.Reference, err)
	}
	created := origin.Created
	if created.IsZero() {
		created = time.Now()
	}
	annotations := originAnnotations(origin, created)
	for k, v := range extra {
		if _, ok := annotations[k]; !ok {
			annotations[k] = v
		}
	}
	desc, err := oras.PackManifest(ctx, repo, oras.PackManifestVersion1_1, "", oras.PackManifestOptions{
		ConfigDescriptor:    &configDesc,
		Layers:              []ocispec.Descriptor{layerDesc},
		ManifestAnnotations: annotations,
	})
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("push the manifest to %s: %w", repo.Reference, err)
	}
	if err := repo.Tag(ctx, desc, tag); err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("tag %s:%s: %w", repo.Reference, tag, err)
	}
	return desc, nil
}

// originAnnotations are the annotations recording origin, created at created.
func originAnnotations(origin Origin, created time.Time) map[string]string {
	annotations := map[string]string{AnnotationCreated: created.UTC().Format(time.RFC3339)}
	if origin.Source != "" {
		annotations[AnnotationSource] = origin.Source
	}
	if origin.Revision != "" {
		annotations[AnnotationRevision] = origin.Revision
	}
	return annotations
}

// Tarball packs the regular files of dir (not .git) into a gzipped tarball with paths relative
// to dir, as Flux's artifact builder does: sorted, without owners and times, so that the same
// directory packs to the same bytes.
func Tarball(dir string) ([]byte, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			files = append(files, p)
		} else if !d.IsDir() {
			return fmt.Errorf("%s is not a regular file: a release holds only files and directories", p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, p := range files {
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return nil, err
		}
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		mode := int64(0o644)
		if fi.Mode()&0o111 != 0 {
			mode = 0o755
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: filepath.ToSlash(rel), Mode: mode, Size: fi.Size(), Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		_, err = io.Copy(tw, f)
		_ = f.Close()
		if err != nil {
			return nil, err
		}
		if buf.Len() > MaxContentBytes {
			return nil, fmt.Errorf("%s packs to more than the %d bytes a release may hold", dir, MaxContentBytes)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func withDefaultTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, DefaultTimeout)
}
