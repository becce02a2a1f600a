package controllers

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/fluxcd/pkg/http/fetch"
	"github.com/fluxcd/pkg/tar"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/apimachinery/pkg/util/cache"

	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
)

// Bounds of the StackCache.
const (
	// DefaultStackCacheEntries is the number of stacks kept when MaxEntries is not set.
	DefaultStackCacheEntries = 256
	// stackCacheTTL is how long a loaded stack is kept. A stack is keyed by its artifact's
	// digest and never changes: the TTL only makes a stack that is used again load again.
	stackCacheTTL = time.Hour
)

// StackCache fetches the artifact of a release's GitRepository from source-controller, loads
// the stack in it and keeps the result by artifact digest and path, in an LRU cache with expiry
// (k8s.io/apimachinery's LRUExpireCache: at most MaxEntries stacks, each for an hour). It holds
// no state of its own that matters: after a restart the stacks are fetched again.
type StackCache struct {
	// HostnameOverride replaces the host of artifact URLs (like Flux's SOURCE_CONTROLLER_LOCALHOST)
	// when the operator does not run inside the cluster.
	HostnameOverride string
	// MaxEntries bounds the cache (DefaultStackCacheEntries when not positive); the least
	// recently used stack is dropped first. Read once, at the first Get.
	MaxEntries int

	// clock is the cache's clock (tests); nil means the real one.
	clock   cache.Clock
	once    sync.Once
	entries *cache.LRUExpireCache // artifact digest + "/" + path -> *stack.Stack
}

// ArtifactError is a failure to fetch a source artifact.
type ArtifactError struct{ Err error }

func (e *ArtifactError) Error() string { return e.Err.Error() }
func (e *ArtifactError) Unwrap() error { return e.Err }

// Get returns the stack at path in the current artifact of a release's source (GitRepository
// or OCIRepository).
func (c *StackCache) Get(ctx context.Context, repo fluxgen.SourceObject, path string) (*stack.Stack, error) {
	art := repo.GetArtifact()
	if art == nil {
		return nil, &ArtifactError{Err: fmt.Errorf("%s %s has no artifact yet", sourceKindOf(repo), repo.GetName())}
	}
	key := art.Digest + "/" + path
	c.once.Do(func() {
		size := c.MaxEntries
		if size <= 0 {
			size = DefaultStackCacheEntries
		}
		var clock cache.Clock = clockFunc(time.Now)
		if c.clock != nil {
			clock = c.clock
		}
		c.entries = cache.NewLRUExpireCacheWithClock(size, clock)
	})
	if s, ok := c.entries.Get(key); ok {
		return s.(*stack.Stack), nil
	}

	root, stackDir, err := c.Fetch(ctx, repo, path)
	if root != "" {
		defer func() { _ = os.RemoveAll(root) }()
	}
	if err != nil {
		return nil, err
	}
	s, err := stack.Load(stackDir)
	if err != nil {
		return nil, err
	}
	s.ProviderKinds = stack.ProviderKinds(stackDir, s, providerObjectGroup)

	c.entries.Add(key, s, stackCacheTTL)
	return s, nil
}

// Fetch downloads the current artifact of a release's source (at most 64 MiB, unpacked to at
// most 256 MiB) into a new temporary directory, root, which the caller removes, and returns the
// directory of the stack at path in it. root is set whenever something was made to remove.
func (c *StackCache) Fetch(ctx context.Context, repo fluxgen.SourceObject, path string) (root, stackDir string, err error) {
	art := repo.GetArtifact()
	if art == nil {
		return "", "", &ArtifactError{Err: fmt.Errorf("%s %s has no artifact yet", sourceKindOf(repo), repo.GetName())}
	}
	dir, err := os.MkdirTemp("", "stack-")
	if err != nil {
		return "", "", err
	}
	f := fetch.New(fetch.WithRetries(3), fetch.WithHostnameOverwrite(c.HostnameOverride), fetch.WithMaxDownloadSize(64<<20),
		fetch.WithUntar(tar.WithMaxUntarSize(256<<20)))
	if err := f.FetchWithContext(ctx, art.URL, art.Digest, dir); err != nil {
		return dir, "", &ArtifactError{Err: fmt.Errorf("fetch artifact of %s %s (revision %s): %w", sourceKindOf(repo), repo.GetName(), art.Revision, err)}
	}
	stackDir = joinPath(dir, path)
	if fi, err := os.Stat(stackDir); err != nil || !fi.IsDir() {
		return dir, "", stack.Problems{{File: path + "/", Message: fmt.Sprintf("no such directory in the repository at %s", art.Revision)}}
	}
	return dir, stackDir, nil
}

// sourceKindOf is the kind of a release's source, for messages.
func sourceKindOf(o fluxgen.SourceObject) string {
	if _, ok := o.(*sourcev1.OCIRepository); ok {
		return sourcev1.OCIRepositoryKind
	}
	return sourcev1.GitRepositoryKind
}

// clockFunc is a replaceable clock (tests set a fixed one): the clock of an LRUExpireCache, of
// the pacers and of the reconcilers with a Now field.
type clockFunc func() time.Time

// Now returns f(), or time.Now() when f is nil.
func (f clockFunc) Now() time.Time {
	if f == nil {
		return time.Now()
	}
	return f()
}

func joinPath(dir, p string) string {
	if p == "" || p == "." {
		return dir
	}
	return dir + string(os.PathSeparator) + p
}
