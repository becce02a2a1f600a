package controllers

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/gitauth"
	"github.com/clusterstack-io/clusterstack-operator/internal/opstatus"
	"github.com/clusterstack-io/clusterstack-operator/internal/releasename"
)

// tagListTimeout bounds one listing of a repository's tags.
const tagListTimeout = 60 * time.Second

// Defaults of the TagLister's bounds (--tag-cache-bytes, --tag-listings).
const (
	// DefaultTagCacheBytes bounds the memory of every cached listing together. A listing keeps
	// only the tags its caller can use (a stack's release tags, an operator's versions), a few
	// KiB per source, so this holds thousands of sources.
	DefaultTagCacheBytes = 16 << 20
	// DefaultTagListings bounds the listings under way at once, whoever asked for them.
	DefaultTagListings = 4
)

// maxKeptTags bounds the tags one listing keeps: more tags of the form a stack or an operator
// uses fail the listing (gitauth.ErrTooManyRefs), naming the limit.
const maxKeptTags = 1000

// TagForm is the form of the part of a tag after a TagSelector's prefix.
type TagForm uint8

const (
	// StackVersionTags: a stack version ("v3", or a channel version such as "v1-alpha.0";
	// releasename.ParseVersion), so that prefix + version is a release tag.
	StackVersionTags TagForm = iota + 1
	// OperatorVersionTags: a ManagementOperator version ("v1.10.3", with an optional pre-release
	// and build metadata) of at most csv1.MaxVersionLength characters (opstatus.IsVersion).
	OperatorVersionTags
)

// TagSelector says which of a repository's tags a caller uses: those starting with Prefix whose
// rest is of Form, at most csv1.MaxVersionLength characters. A listing keeps only those (at most
// maxKeptTags), so that a repository advertising megabytes of other references costs the cache
// what its usable tags cost, and tags with the prefix but not of the form are only counted
// (TagListing.Ignored).
type TagSelector struct {
	Prefix string
	Form   TagForm
}

// ReleaseTags selects the release tags of a stack for a Kubernetes minor:
// "<provider>-<name>-<major>-<minor>-<version>".
func ReleaseTags(provider, name, kubernetesMinor string) TagSelector {
	return TagSelector{Prefix: releasename.Format(provider, name, kubernetesMinor, ""), Form: StackVersionTags}
}

// StackTags selects the release tags of a ClusterStack.
func StackTags(cs *csv1.ClusterStack) TagSelector {
	return ReleaseTags(cs.Spec.Provider, cs.Spec.Name, cs.Spec.KubernetesVersion)
}

// OperatorTags selects the version tags of a ManagementOperator: tagPrefix + version.
func OperatorTags(op *csv1.ManagementOperator) TagSelector {
	return TagSelector{Prefix: op.Tag(""), Form: OperatorVersionTags}
}

// keeps reports whether tag is of the selector's form.
func (s TagSelector) keeps(tag string) bool {
	rest, ok := strings.CutPrefix(tag, s.Prefix)
	if !ok || len(rest) > csv1.MaxVersionLength {
		return false
	}
	switch s.Form {
	case StackVersionTags:
		_, err := releasename.ParseVersion(rest)
		return err == nil
	case OperatorVersionTags:
		return opstatus.IsVersion(rest)
	}
	return false
}

// query is the gitauth query of the selector.
func (s TagSelector) query() gitauth.TagQuery {
	return gitauth.TagQuery{Prefix: s.Prefix, MaxLength: len(s.Prefix) + csv1.MaxVersionLength, Keep: s.keeps, MaxKept: maxKeptTags}
}

// filter applies the selector to a whole listing (TagLister.List's answer), as gitauth applies
// it while it reads.
func (s TagSelector) filter(url string, all map[string]string) (TagListing, error) {
	out := TagListing{Refs: map[string]string{}}
	for tag, commit := range all {
		switch {
		case !strings.HasPrefix(tag, s.Prefix):
		case !s.keeps(tag):
			out.Ignored++
		case len(out.Refs) >= maxKeptTags:
			return TagListing{}, &gitauth.LimitError{URL: url, What: "references of the form asked for (refs/tags/" + s.Prefix + "...)", Limit: maxKeptTags}
		default:
			out.Refs[tag] = commit
		}
	}
	return out, nil
}

// TagListing is what a listing kept of a repository's tags for one selector.
type TagListing struct {
	// Refs maps every tag of the selector's form to the commit it points to (peeled for
	// annotated tags). Shared with the cache: never change it.
	Refs map[string]string
	// Ignored counts the tags with the selector's prefix that are not of its form (or longer
	// than csv1.MaxVersionLength after the prefix).
	Ignored int
}

// TagLister lists a Git repository's tags, with the credentials of a Flux-format Secret in the
// ClusterStack's own namespace (internal/gitauth: basic auth, bearer token, CA, TLS client
// certificate, SSH identity with known_hosts; credentials over plain http are refused; Secret
// values larger than gitauth.MaxSecretValueBytes are refused). What it holds is bounded whatever
// the remote sends:
//   - a listing reads the advertisement as a stream and keeps only the tags of the caller's
//     TagSelector, within gitauth's limits of bytes and references (a repository beyond them is
//     an error naming the limit, for the stacks reading it alone);
//   - at most Listings listings run at once; the others wait (or give up at their caller's
//     deadline);
//   - results are kept for the maxAge their caller gave, per namespace, source and selector, in an
//     LRU cache of at most MaxBytes bytes (an estimate of what the entries hold): the least
//     recently used listing is dropped first. A listing stopped by a limit is kept as such (the
//     repository is read again after maxAge, not at every reconcile); other errors are not kept.
//
// Every error names the repository (URL without credentials) and the Secret, says what to fix,
// and is free of credentials.
type TagLister struct {
	// Reader reads credential Secrets by name (an uncached reader: Secrets are not cached).
	Reader client.Reader
	// List, when set, replaces the remote listing (for tests of the controller wiring): it
	// returns every tag, and the selector is applied to its answer.
	List func(ctx context.Context, remote *gitauth.Remote) (map[string]string, error)
	// MaxBytes bounds the cache (DefaultTagCacheBytes when not positive). Read once, at the
	// first call.
	MaxBytes int64
	// Listings bounds the listings under way at once (DefaultTagListings when not positive).
	// Read once, at the first call.
	Listings int

	// clock is the cache's clock (tests); nil means the real one.
	clock interface{ Now() time.Time }
	once  sync.Once
	slots chan struct{} // one per listing under way
	// mu guards the cache and orders the caching of a listing against Forget; forgets counts
	// the Forget calls: a listing during which Forget was called (for any source) is returned
	// to its caller but not cached, so that the call after Forget lists again. (Per source
	// would need a mark that outlives the listing in a cache that may drop it.)
	mu      sync.Mutex
	forgets uint64
	cache   *tagCache
}

// tagCacheEntry is a cached listing, or a listing stopped by one of its limits (err, which
// wraps gitauth.ErrTooManyRefs): that is what the repository is, not a passing failure, so it
// is answered from the cache like a listing, and a hostile repository is read once per maxAge
// whatever the number of reconciles asking.
type tagCacheEntry struct {
	TagListing
	err error
	at  time.Time // when the listing started
}

// tagConfirmAge is how recent a listing must be for a tag missing from it to be reported
// missing (Has).
const tagConfirmAge = 30 * time.Second

// Has reports whether the repository has tag, a tag sel selects. A cached listing without it is
// believed only if it started less than tagConfirmAge ago (it may predate the tag's push: the
// cache is shared by every ClusterStack of the namespace that reads the repository); otherwise
// the repository is listed again.
func (l *TagLister) Has(ctx context.Context, ns string, src csv1.StackSource, sel TagSelector, maxAge time.Duration, tag string) (bool, error) {
	refs, err := l.Refs(ctx, ns, src, sel, maxAge)
	if _, ok := refs[tag]; err != nil || ok {
		return err == nil, err
	}
	refs, err = l.RefsSince(ctx, ns, src, sel, maxAge, l.now().Add(-tagConfirmAge))
	_, ok := refs[tag]
	return err == nil && ok, err
}

// Tags returns the repository's tags sel selects, sorted. maxAge bounds how old a cached answer
// may be.
func (l *TagLister) Tags(ctx context.Context, ns string, src csv1.StackSource, sel TagSelector, maxAge time.Duration) ([]string, error) {
	refs, err := l.Refs(ctx, ns, src, sel, maxAge)
	if err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(refs)), nil
}

// ReleaseTags returns the release tags of a ClusterStack's repository (StackTags), sorted: the
// Cluster webhook's listing.
func (l *TagLister) ReleaseTags(ctx context.Context, cs *csv1.ClusterStack, maxAge time.Duration) ([]string, error) {
	return l.Tags(ctx, cs.Namespace, cs.Spec.Source, StackTags(cs), maxAge)
}

// sourceKey identifies a source: the namespace, the URL and the credentials Secret (and for
// an OCI source its CA Secret).
func sourceKey(ns string, src csv1.StackSource) string {
	if src.OCI != nil {
		return ociSourceKey(ns, *src.OCI)
	}
	key := ns + "|" + src.URL
	if src.SecretRef != nil {
		key += "|" + src.SecretRef.Name
	}
	return key
}

// tagCacheKey identifies a cached listing: the source and the selector.
func tagCacheKey(ns string, src csv1.StackSource, sel TagSelector) string {
	return fmt.Sprintf("%s|%d|%s", sourceKey(ns, src), sel.Form, sel.Prefix)
}

// now is the cache's clock.
func (l *TagLister) now() time.Time {
	if l.clock != nil {
		return l.clock.Now()
	}
	return time.Now()
}

// init makes the cache and the listing slots at the first call.
func (l *TagLister) init() {
	l.once.Do(func() {
		size := l.MaxBytes
		if size <= 0 {
			size = DefaultTagCacheBytes
		}
		n := l.Listings
		if n <= 0 {
			n = DefaultTagListings
		}
		l.cache = newTagCache(size)
		l.slots = make(chan struct{}, n)
	})
}

// Refs returns every tag of the repository sel selects with the commit it points to (peeled for
// annotated tags). maxAge bounds how old a cached answer may be; Tags shares the cache. The
// returned map is shared with the cache and must not be changed.
func (l *TagLister) Refs(ctx context.Context, ns string, src csv1.StackSource, sel TagSelector, maxAge time.Duration) (map[string]string, error) {
	out, err := l.Listing(ctx, ns, src, sel, maxAge, time.Time{})
	return out.Refs, err
}

// RefsSince is Refs from a listing that started at notBefore or later: an older cached listing
// is not used, the repository is listed again (and that listing cached). The cache is shared by
// every ClusterStack of a namespace that reads the same repository, so a listing may predate a
// tag pushed since: what the caller learned after notBefore (a commit validated at a tag, say)
// must not be contradicted by it.
func (l *TagLister) RefsSince(ctx context.Context, ns string, src csv1.StackSource, sel TagSelector, maxAge time.Duration, notBefore time.Time) (map[string]string, error) {
	out, err := l.Listing(ctx, ns, src, sel, maxAge, notBefore)
	return out.Refs, err
}

// Resolve is RefsSince that also maps tag to what it points to with an OCI source: the hex
// of its manifest's digest (a registry's tag list names no digests, so only that tag is
// resolved). With a Git source every tag maps to its commit anyway.
func (l *TagLister) Resolve(ctx context.Context, ns string, src csv1.StackSource, sel TagSelector, maxAge time.Duration, notBefore time.Time, tag string) (map[string]string, error) {
	if src.OCI != nil {
		out, err := l.OCIListing(ctx, ns, *src.OCI, sel, maxAge, notBefore, tag)
		return out.Refs, err
	}
	out, err := l.Listing(ctx, ns, src, sel, maxAge, notBefore)
	return out.Refs, err
}

// Listing is RefsSince with the count of the tags the selector ignored. With an OCI source
// (OCIListing) the tags map to "".
func (l *TagLister) Listing(ctx context.Context, ns string, src csv1.StackSource, sel TagSelector, maxAge time.Duration, notBefore time.Time) (TagListing, error) {
	if src.OCI != nil {
		return l.OCIListing(ctx, ns, *src.OCI, sel, maxAge, notBefore, "")
	}
	with := "without credentials"
	if src.SecretRef != nil {
		with = "with credentials Secret " + ns + "/" + src.SecretRef.Name
	}
	var remote *gitauth.Remote
	return l.cached(ctx, sourceKey(ns, src), tagCacheKey(ns, src, sel), maxAge, notBefore,
		func(ctx context.Context) (string, error) {
			var err error
			remote, err = l.remote(ctx, ns, src)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("list tags of %s (%s)", remote.SafeURL(), with), nil
		},
		func(ctx context.Context) (TagListing, error) {
			out, err := l.list(ctx, remote, sel)
			return out, remote.Redact(err)
		})
}

// cached answers a listing from the cache when it holds one at most maxAge old that started at
// notBefore or later; else it runs prepare (credentials: not counted against --tag-listings,
// failures not cached; it returns the words that start every error of the listing) and then
// list, in one of the listing slots, and caches what it returns, or its error when that wraps
// gitauth.ErrTooManyRefs.
func (l *TagLister) cached(ctx context.Context, source, key string, maxAge time.Duration, notBefore time.Time,
	prepare func(context.Context) (string, error), list func(context.Context) (TagListing, error)) (TagListing, error) {
	l.init()
	l.mu.Lock()
	e, ok := l.cache.get(key, l.now())
	forgets := l.forgets
	l.mu.Unlock()
	if ok && l.now().Sub(e.at) < maxAge && !e.at.Before(notBefore) {
		return e.TagListing, e.err
	}

	what, err := prepare(ctx)
	if err != nil {
		return TagListing{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, tagListTimeout)
	defer cancel()
	select {
	case l.slots <- struct{}{}:
		defer func() { <-l.slots }()
	case <-ctx.Done():
		return TagListing{}, fmt.Errorf("%s: %d listings of repositories are under way, the most the operator runs at once (--tag-listings); gave up waiting: %w",
			what, cap(l.slots), ctx.Err())
	}
	start := l.now()
	out, err := list(ctx)
	if err != nil {
		err = fmt.Errorf("%s: %w", what, err)
		if !errors.Is(err, gitauth.ErrTooManyRefs) {
			return TagListing{}, err // not cached: the next call tries again
		}
		out, err = TagListing{}, fmt.Errorf("%w: keep the repository within these limits (delete branches and tags it no longer needs), or publish from a repository of its own", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	// Not when Forget was called meanwhile, nor over a listing that started later.
	if cur, ok := l.cache.get(key, l.now()); l.forgets == forgets && (!ok || !cur.at.After(start)) {
		l.cache.add(key, source, tagCacheEntry{TagListing: out, err: err, at: start}, start.Add(maxAge))
	}
	return out, err
}

// list runs one listing: gitauth's, or the List hook's answer filtered by the selector.
func (l *TagLister) list(ctx context.Context, remote *gitauth.Remote, sel TagSelector) (TagListing, error) {
	if l.List == nil {
		got, err := remote.ListTags(ctx, sel.query())
		return TagListing{Refs: got.Tags, Ignored: got.Ignored}, err
	}
	all, err := l.List(ctx, remote)
	if err != nil {
		return TagListing{}, err
	}
	return sel.filter(remote.SafeURL(), all)
}

// Forget drops the cached tags of a source (for every selector) so the next call lists them
// again, and keeps the listings already under way (of any source) from caching what they find.
func (l *TagLister) Forget(ns string, src csv1.StackSource) {
	l.init()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.forgets++
	l.cache.removeSource(sourceKey(ns, src))
}

// remote resolves the source's URL and the credentials Secret in the ClusterStack's own
// namespace (never another's).
func (l *TagLister) remote(ctx context.Context, ns string, src csv1.StackSource) (*gitauth.Remote, error) {
	if src.SecretRef == nil {
		return gitauth.NewRemote(src.URL, "", nil)
	}
	s, err := l.readSecret(ctx, "credentials", ns, src.SecretRef.Name)
	if err != nil {
		return nil, err
	}
	return gitauth.NewRemote(src.URL, ns+"/"+src.SecretRef.Name, s.Data)
}

// readSecret reads the Secret name of namespace ns that a ClusterStack's source refers to, for
// what ("credentials", "CA"). Its errors name the Secret and say what to do; a value larger than
// gitauth.MaxSecretValueBytes is refused (a tenant's Secret is bounded like the rest of its
// input).
func (l *TagLister) readSecret(ctx context.Context, what, ns, name string) (*corev1.Secret, error) {
	desc := what + " Secret " + ns + "/" + name
	if l.Reader == nil {
		return nil, fmt.Errorf("cannot read %s: the tag lister has no Secret reader", desc)
	}
	var s corev1.Secret
	if err := l.Reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%s not found: create it in namespace %s (a source reads Secrets of its own namespace only)", desc, ns)
		}
		return nil, fmt.Errorf("read %s: %w", desc, err)
	}
	for k, v := range s.Data {
		if len(v) > gitauth.MaxSecretValueBytes {
			return nil, fmt.Errorf("%s: key %q holds %d bytes, more than the %d allowed", desc, k, len(v), gitauth.MaxSecretValueBytes)
		}
	}
	return &s, nil
}

// tagCache is an LRU cache of listings with expiry, bounded by an estimate of the bytes its
// entries hold. It is not safe for concurrent use (TagLister.mu guards it).
type tagCache struct {
	maxBytes, bytes int64
	lru             *list.List // of *tagCacheItem, most recently used first
	items           map[string]*list.Element
	bySource        map[string]map[string]struct{} // source key -> keys
}

type tagCacheItem struct {
	key, source string
	entry       tagCacheEntry
	expires     time.Time
	size        int64
}

func newTagCache(maxBytes int64) *tagCache {
	return &tagCache{maxBytes: maxBytes, lru: list.New(), items: map[string]*list.Element{}, bySource: map[string]map[string]struct{}{}}
}

// entryBytes estimates what an entry holds: its key, and per tag the name, the commit and the
// map's share.
func entryBytes(key string, e tagCacheEntry) int64 {
	n := int64(len(key)) + 256
	if e.err != nil {
		n += int64(len(e.err.Error()))
	}
	for tag, commit := range e.Refs {
		n += int64(len(tag)+len(commit)) + 64
	}
	return n
}

// get returns the entry of key unless it expired, and marks it used.
func (c *tagCache) get(key string, now time.Time) (tagCacheEntry, bool) {
	el, ok := c.items[key]
	if !ok {
		return tagCacheEntry{}, false
	}
	it := el.Value.(*tagCacheItem)
	if !now.Before(it.expires) {
		c.drop(el)
		return tagCacheEntry{}, false
	}
	c.lru.MoveToFront(el)
	return it.entry, true
}

// add caches e under key until expires, dropping the least recently used entries beyond the
// budget. An entry larger than the whole budget is not cached.
func (c *tagCache) add(key, source string, e tagCacheEntry, expires time.Time) {
	if el, ok := c.items[key]; ok {
		c.drop(el)
	}
	it := &tagCacheItem{key: key, source: source, entry: e, expires: expires, size: entryBytes(key, e)}
	if it.size > c.maxBytes {
		return
	}
	c.items[key] = c.lru.PushFront(it)
	c.bytes += it.size
	if c.bySource[source] == nil {
		c.bySource[source] = map[string]struct{}{}
	}
	c.bySource[source][key] = struct{}{}
	for c.bytes > c.maxBytes {
		c.drop(c.lru.Back())
	}
}

// removeSource drops the entries of a source.
func (c *tagCache) removeSource(source string) {
	for key := range c.bySource[source] {
		c.drop(c.items[key])
	}
}

func (c *tagCache) drop(el *list.Element) {
	it := c.lru.Remove(el).(*tagCacheItem)
	delete(c.items, it.key)
	c.bytes -= it.size
	if keys := c.bySource[it.source]; keys != nil {
		delete(keys, it.key)
		if len(keys) == 0 {
			delete(c.bySource, it.source)
		}
	}
}
