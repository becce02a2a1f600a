package controllers

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/redact"
)

// TagLister lists a Git repository's tags, with the credentials of a Flux-style Secret. Results
// are kept for a while so that frequent reconciles do not each reach the remote.
type TagLister struct {
	// Reader reads credential Secrets (an uncached reader: Secrets are not cached).
	Reader client.Reader
	// List, when set, replaces the remote listing (for tests of the controller wiring).
	List func(ctx context.Context, url string, auth transport.AuthMethod) (map[string]string, error)

	mu    sync.Mutex
	cache map[string]tagCacheEntry
}

type tagCacheEntry struct {
	refs map[string]string
	at   time.Time
}

// Tags returns the repository's tag names, sorted. maxAge bounds how old a cached answer may be.
func (l *TagLister) Tags(ctx context.Context, ns string, src csv1.StackSource, maxAge time.Duration) ([]string, error) {
	refs, err := l.Refs(ctx, ns, src, maxAge)
	if err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(refs)), nil
}

// Refs returns every tag of the repository with the commit it points to (peeled for annotated
// tags). maxAge bounds how old a cached answer may be; Tags shares the cache.
func (l *TagLister) Refs(ctx context.Context, ns string, src csv1.StackSource, maxAge time.Duration) (map[string]string, error) {
	key := ns + "|" + src.URL
	if src.SecretRef != nil {
		key += "|" + src.SecretRef.Name
	}
	l.mu.Lock()
	if e, ok := l.cache[key]; ok && time.Since(e.at) < maxAge {
		l.mu.Unlock()
		return e.refs, nil
	}
	l.mu.Unlock()

	auth, err := l.auth(ctx, ns, src)
	if err != nil {
		return nil, err
	}
	list := l.List
	if list == nil {
		list = listRemoteTags
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	refs, err := list(ctx, src.URL, auth)
	if err != nil {
		return nil, fmt.Errorf("list tags of %s: %s", redact.URL(src.URL), redact.URLs(err.Error()))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cache == nil {
		l.cache = map[string]tagCacheEntry{}
	}
	l.cache[key] = tagCacheEntry{refs: refs, at: time.Now()}
	return refs, nil
}

// Forget drops the cached tags of a source so the next call lists them again.
func (l *TagLister) Forget(ns string, src csv1.StackSource) {
	key := ns + "|" + src.URL
	if src.SecretRef != nil {
		key += "|" + src.SecretRef.Name
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.cache, key)
}

// auth reads the credentials Secret in the ClusterStack's own namespace (never another's).
func (l *TagLister) auth(ctx context.Context, ns string, src csv1.StackSource) (transport.AuthMethod, error) {
	if src.SecretRef == nil {
		return nil, nil
	}
	var s corev1.Secret
	if err := l.Reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: src.SecretRef.Name}, &s); err != nil {
		return nil, fmt.Errorf("read credentials Secret %s/%s: %w", ns, src.SecretRef.Name, err)
	}
	switch {
	case len(s.Data["bearerToken"]) > 0:
		return &githttp.TokenAuth{Token: string(s.Data["bearerToken"])}, nil
	case len(s.Data["username"]) > 0 || len(s.Data["password"]) > 0:
		return &githttp.BasicAuth{Username: string(s.Data["username"]), Password: string(s.Data["password"])}, nil
	case len(s.Data["identity"]) > 0:
		return nil, fmt.Errorf("credentials Secret %s/%s holds an SSH identity: listing tags over SSH is not supported yet, use an HTTPS URL with username/password or bearerToken", ns, src.SecretRef.Name)
	default:
		return nil, fmt.Errorf("credentials Secret %s/%s has none of the keys username/password or bearerToken", ns, src.SecretRef.Name)
	}
}

// listRemoteTags lists a remote's tags with the commit each points to: for an annotated tag the
// peeled commit ("<tag>^{}"), not the tag object.
func listRemoteTags(ctx context.Context, url string, auth transport.AuthMethod) (map[string]string, error) {
	remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{url}})
	refs, err := remote.ListContext(ctx, &git.ListOptions{Auth: auth, PeelingOption: git.AppendPeeled})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	peeled := map[string]bool{}
	for _, r := range refs {
		if !r.Name().IsTag() {
			continue
		}
		name := r.Name().Short()
		if tag, ok := strings.CutSuffix(name, "^{}"); ok {
			out[tag], peeled[tag] = r.Hash().String(), true
		} else if !peeled[name] {
			out[name] = r.Hash().String()
		}
	}
	return out, nil
}
