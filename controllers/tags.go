package controllers

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/gitauth"
)

// tagListTimeout bounds one listing of a repository's tags.
const tagListTimeout = 60 * time.Second

// DefaultTagCacheEntries is the number of listings the TagLister keeps when MaxEntries is not
// set.
const DefaultTagCacheEntries = 1024

// TagLister lists a Git repository's tags, with the credentials of a Flux-format Secret in the
// ClusterStack's own namespace (internal/gitauth: basic auth, bearer token, CA, TLS client
// certificate, SSH identity with known_hosts; credentials over plain http are refused; Secret
// values larger than gitauth.MaxSecretValueBytes are refused). Results are kept for a while so
// that frequent reconciles do not each reach the remote: in an LRU cache with expiry
// (k8s.io/apimachinery's LRUExpireCache), each listing for the maxAge its caller gave, at most
// MaxEntries repositories. Every error names the repository (URL without credentials) and the
// Secret, says what to fix, and is free of credentials.
type TagLister struct {
	// Reader reads credential Secrets by name (an uncached reader: Secrets are not cached).
	Reader client.Reader
	// List, when set, replaces the remote listing (for tests of the controller wiring).
	List func(ctx context.Context, remote *gitauth.Remote) (map[string]string, error)
	// MaxEntries bounds the cache (DefaultTagCacheEntries when not positive); the least
	// recently used listing is dropped first. Read once, at the first call.
	MaxEntries int

	// clock is the cache's clock (tests); nil means the real one.
	clock cache.Clock
	once  sync.Once
	cache *cache.LRUExpireCache // cacheKey -> tagCacheEntry
	// mu orders the caching of a listing against Forget; forgets counts the Forget calls: a
	// listing during which Forget was called (for any source) is returned to its caller but
	// not cached, so that the call after Forget lists again. (Per source would need a mark
	// that outlives the listing in a cache that may drop it.)
	mu      sync.Mutex
	forgets uint64
}

// tagCacheEntry is a cached listing.
type tagCacheEntry struct {
	refs map[string]string
	at   time.Time // when the listing started
}

// tagConfirmAge is how recent a listing must be for a tag missing from it to be reported
// missing (Has).
const tagConfirmAge = 30 * time.Second

// Has reports whether the repository has tag. A cached listing without it is believed only if it
// started less than tagConfirmAge ago (it may predate the tag's push: the cache is shared by
// every ClusterStack of the namespace that reads the repository); otherwise the repository is
// listed again.
func (l *TagLister) Has(ctx context.Context, ns string, src csv1.StackSource, maxAge time.Duration, tag string) (bool, error) {
	refs, err := l.Refs(ctx, ns, src, maxAge)
	if err != nil || refs[tag] != "" {
		return err == nil, err
	}
	refs, err = l.RefsSince(ctx, ns, src, maxAge, l.now().Add(-tagConfirmAge))
	return err == nil && refs[tag] != "", err
}

// Tags returns the repository's tag names, sorted. maxAge bounds how old a cached answer may be.
func (l *TagLister) Tags(ctx context.Context, ns string, src csv1.StackSource, maxAge time.Duration) ([]string, error) {
	refs, err := l.Refs(ctx, ns, src, maxAge)
	if err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(refs)), nil
}

func cacheKey(ns string, src csv1.StackSource) string {
	key := ns + "|" + src.URL
	if src.SecretRef != nil {
		key += "|" + src.SecretRef.Name
	}
	return key
}

// entries returns the cache, made at the first call.
func (l *TagLister) entries() *cache.LRUExpireCache {
	l.once.Do(func() {
		size := l.MaxEntries
		if size <= 0 {
			size = DefaultTagCacheEntries
		}
		l.cache = cache.NewLRUExpireCacheWithClock(size, clockFunc(l.now))
	})
	return l.cache
}

// now is the cache's clock.
func (l *TagLister) now() time.Time {
	if l.clock != nil {
		return l.clock.Now()
	}
	return time.Now()
}

// cached returns the cache entry of key, if any.
func (l *TagLister) cached(key string) (tagCacheEntry, bool) {
	if v, ok := l.entries().Get(key); ok {
		return v.(tagCacheEntry), true
	}
	return tagCacheEntry{}, false
}

// Refs returns every tag of the repository with the commit it points to (peeled for annotated
// tags). maxAge bounds how old a cached answer may be; Tags shares the cache. The returned map
// is shared with the cache and must not be changed.
func (l *TagLister) Refs(ctx context.Context, ns string, src csv1.StackSource, maxAge time.Duration) (map[string]string, error) {
	return l.RefsSince(ctx, ns, src, maxAge, time.Time{})
}

// RefsSince is Refs from a listing that started at notBefore or later: an older cached listing
// is not used, the repository is listed again (and that listing cached). The cache is shared by
// every ClusterStack of a namespace that reads the same repository, so a listing may predate a
// tag pushed since: what the caller learned after notBefore (a commit validated at a tag, say)
// must not be contradicted by it.
func (l *TagLister) RefsSince(ctx context.Context, ns string, src csv1.StackSource, maxAge time.Duration, notBefore time.Time) (map[string]string, error) {
	key := cacheKey(ns, src)
	if e, ok := l.cached(key); ok && l.now().Sub(e.at) < maxAge && !e.at.Before(notBefore) {
		return e.refs, nil
	}
	l.mu.Lock()
	forgets := l.forgets
	l.mu.Unlock()
	start := l.now()

	remote, err := l.remote(ctx, ns, src)
	if err != nil {
		return nil, err
	}
	list := l.List
	if list == nil {
		list = func(ctx context.Context, r *gitauth.Remote) (map[string]string, error) { return r.ListTags(ctx) }
	}
	ctx, cancel := context.WithTimeout(ctx, tagListTimeout)
	defer cancel()
	refs, err := list(ctx, remote)
	if err != nil {
		with := "without credentials"
		if src.SecretRef != nil {
			with = "with credentials Secret " + ns + "/" + src.SecretRef.Name
		}
		return nil, fmt.Errorf("list tags of %s (%s): %w", remote.SafeURL(), with, remote.Redact(err))
	}
	if refs == nil {
		refs = map[string]string{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	// Not when Forget was called meanwhile, nor over a listing that started later.
	if cur, ok := l.cached(key); l.forgets == forgets && (!ok || !cur.at.After(start)) {
		l.entries().Add(key, tagCacheEntry{refs: refs, at: start}, maxAge)
	}
	return refs, nil
}

// Forget drops the cached tags of a source so the next call lists them again, and keeps the
// listings already under way (of any source) from caching what they find.
func (l *TagLister) Forget(ns string, src csv1.StackSource) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.forgets++
	l.entries().Remove(cacheKey(ns, src))
}

// remote resolves the source's URL and the credentials Secret in the ClusterStack's own
// namespace (never another's).
func (l *TagLister) remote(ctx context.Context, ns string, src csv1.StackSource) (*gitauth.Remote, error) {
	if src.SecretRef == nil {
		return gitauth.NewRemote(src.URL, "", nil)
	}
	name := ns + "/" + src.SecretRef.Name
	if l.Reader == nil {
		return nil, fmt.Errorf("cannot read credentials Secret %s: the tag lister has no Secret reader", name)
	}
	var s corev1.Secret
	if err := l.Reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: src.SecretRef.Name}, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("credentials Secret %s not found: create it in namespace %s (a ClusterStack uses Secrets of its own namespace only)", name, ns)
		}
		return nil, fmt.Errorf("read credentials Secret %s: %w", name, err)
	}
	return gitauth.NewRemote(src.URL, name, s.Data)
}
