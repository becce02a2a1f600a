package controllers

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/fluxcd/pkg/http/fetch"
	"github.com/fluxcd/pkg/tar"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"

	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
)

// StackCache fetches the artifact of a release's GitRepository from source-controller, loads
// the stack in it and keeps the result by artifact digest. It holds no state of its own that
// matters: after a restart the stacks are fetched again.
type StackCache struct {
	// HostnameOverride replaces the host of artifact URLs (like Flux's SOURCE_CONTROLLER_LOCALHOST)
	// when the operator does not run inside the cluster.
	HostnameOverride string
	// MaxEntries bounds the cache; the least recently used stack is dropped first.
	MaxEntries int

	mu      sync.Mutex
	entries map[string]*cacheEntry
	tick    uint64
}

type cacheEntry struct {
	stack *stack.Stack
	used  uint64
}

// ArtifactError is a failure to fetch a source artifact.
type ArtifactError struct{ Err error }

func (e *ArtifactError) Error() string { return e.Err.Error() }
func (e *ArtifactError) Unwrap() error { return e.Err }

// Get returns the stack at path in the GitRepository's current artifact.
func (c *StackCache) Get(ctx context.Context, repo *sourcev1.GitRepository, path string) (*stack.Stack, error) {
	art := repo.Status.Artifact
	if art == nil {
		return nil, &ArtifactError{Err: fmt.Errorf("GitRepository %s has no artifact yet", repo.Name)}
	}
	key := art.Digest + "/" + path
	c.mu.Lock()
	c.tick++
	if e, ok := c.entries[key]; ok {
		e.used = c.tick
		c.mu.Unlock()
		return e.stack, nil
	}
	c.mu.Unlock()

	dir, err := os.MkdirTemp("", "stack-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	f := fetch.New(fetch.WithRetries(3), fetch.WithHostnameOverwrite(c.HostnameOverride), fetch.WithMaxDownloadSize(64<<20),
		fetch.WithUntar(tar.WithMaxUntarSize(256<<20)))
	if err := f.FetchWithContext(ctx, art.URL, art.Digest, dir); err != nil {
		return nil, &ArtifactError{Err: fmt.Errorf("fetch artifact of GitRepository %s (revision %s): %w", repo.Name, art.Revision, err)}
	}
	stackDir := joinPath(dir, path)
	if fi, err := os.Stat(stackDir); err != nil || !fi.IsDir() {
		return nil, stack.Problems{{File: path + "/", Message: fmt.Sprintf("no such directory in the repository at %s", art.Revision)}}
	}
	s, err := stack.Load(stackDir)
	if err != nil {
		return nil, err
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]*cacheEntry{}
	}
	c.entries[key] = &cacheEntry{stack: s, used: c.tick}
	max := c.MaxEntries
	if max <= 0 {
		max = 256
	}
	for len(c.entries) > max {
		var oldest string
		var oldestUse uint64
		for k, e := range c.entries {
			if oldest == "" || e.used < oldestUse {
				oldest, oldestUse = k, e.used
			}
		}
		delete(c.entries, oldest)
	}
	return s, nil
}

func joinPath(dir, p string) string {
	if p == "" || p == "." {
		return dir
	}
	return dir + string(os.PathSeparator) + p
}
