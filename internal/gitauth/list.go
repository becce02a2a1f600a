package gitauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
)

// tagPrefix is the prefix of tag references.
const tagPrefix = "refs/tags/"

// The limits, as variables for tests.
var (
	maxRefs               = MaxRefs
	maxAdvertisementBytes = int64(MaxAdvertisementBytes)
)

// ErrTooManyRefs is returned (wrapped) when a remote advertises more than MaxRefs tags or more
// than MaxAdvertisementBytes of references.
var ErrTooManyRefs = errors.New("too many references")

// ListTags lists the remote's tags (one ls-remote, no object is fetched) and returns, for every
// tag name (without "refs/tags/"), the full hex SHA-1 of the object it finally points to: for an
// annotated tag the peeled value (the commit, not the tag object), for a lightweight tag its
// target. An empty repository has no tags. Errors are free of credentials.
func (r *Remote) ListTags(ctx context.Context) (map[string]string, error) {
	ep, err := transport.NewEndpoint(r.url)
	if err != nil {
		return nil, r.Redact(err)
	}
	var (
		tr       transport.Transport
		exceeded atomic.Bool
	)
	switch r.scheme {
	case "http", "https":
		base, ok := http.DefaultTransport.(*http.Transport)
		var ht *http.Transport
		if ok {
			ht = base.Clone()
		} else {
			ht = &http.Transport{Proxy: http.ProxyFromEnvironment}
		}
		if r.tlsConfig != nil {
			ht.TLSClientConfig = r.tlsConfig.Clone()
		}
		defer ht.CloseIdleConnections()
		tr = githttp.NewClient(&http.Client{Transport: &limitedTransport{next: ht, max: maxAdvertisementBytes, exceeded: &exceeded}})
	case "ssh":
		tr = gitssh.DefaultClient
	default:
		return nil, fmt.Errorf("unsupported URL scheme %q", r.scheme)
	}
	sess, err := tr.NewUploadPackSession(ep, r.auth)
	if err != nil {
		return nil, r.Redact(err)
	}
	defer func() { _ = sess.Close() }()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if exceeded.Load() {
		return nil, fmt.Errorf("%w: %s advertises more than %d bytes of references", ErrTooManyRefs, r.shown, maxAdvertisementBytes)
	}
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, r.Redact(err)
	}
	return tagsOf(r.shown, ar.References, ar.Peeled)
}

// tagsOf maps the tags among the advertised references to the objects they finally point to,
// preferring the peeled value.
func tagsOf(url string, refs, peeled map[string]plumbing.Hash) (map[string]string, error) {
	tags := map[string]string{}
	for name, h := range refs {
		if !strings.HasPrefix(name, tagPrefix) {
			continue
		}
		if len(tags) >= maxRefs {
			return nil, fmt.Errorf("%w: %s has more than %d tags", ErrTooManyRefs, url, maxRefs)
		}
		if p, ok := peeled[name]; ok {
			h = p
		}
		tags[strings.TrimPrefix(name, tagPrefix)] = h.String()
	}
	return tags, nil
}

// limitedTransport fails the reading of a response body beyond max bytes.
type limitedTransport struct {
	next     http.RoundTripper
	max      int64
	exceeded *atomic.Bool
}

func (t *limitedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := t.next.RoundTrip(req)
	if err != nil || res.Body == nil {
		return res, err
	}
	res.Body = &limitedBody{rc: res.Body, left: t.max, exceeded: t.exceeded}
	return res, nil
}

type limitedBody struct {
	rc       io.ReadCloser
	left     int64
	exceeded *atomic.Bool
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// Probe for one more byte to tell a body of exactly the limit from a longer one.
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			b.exceeded.Store(true)
			return 0, ErrTooManyRefs
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }
