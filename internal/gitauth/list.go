package gitauth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"golang.org/x/crypto/ssh"
)

// tagPrefix is the prefix of tag references.
const tagPrefix = "refs/tags/"

// The limits, as variables for tests.
var (
	maxRefs               = MaxRefs
	maxAdvertisementBytes = int64(MaxAdvertisementBytes)
)

// ErrTooManyRefs is returned (wrapped, as a *LimitError) when a listing exceeds one of its
// limits: more than MaxAdvertisementBytes of advertisement, more than MaxRefs references, or
// more than the query's MaxKept references of the form asked for.
var ErrTooManyRefs = errors.New("too many references")

// TagQuery says which of a remote's tags ListTags keeps: those whose name starts with Prefix,
// is at most MaxLength bytes long and is accepted by Keep. Every other reference is read,
// counted against the listing's limits and dropped at once.
type TagQuery struct {
	// Prefix of the kept tag names (without "refs/tags/"), e.g. "aws-base-1-36-".
	Prefix string
	// MaxLength bounds a kept tag's name (Prefix included); 0 means MaxRefNameBytes.
	MaxLength int
	// Keep, when set, decides whether a tag name with Prefix is kept.
	Keep func(tag string) bool
	// MaxKept bounds how many tags are kept; more fail the listing. 0 means MaxKeptRefs.
	MaxKept int
}

// TagList is what ListTags kept.
type TagList struct {
	// Tags maps every kept tag name (without "refs/tags/") to the full hex object name it
	// finally points to: for an annotated tag the peeled value (the commit, not the tag object),
	// for a lightweight tag its target.
	Tags map[string]string
	// Ignored counts the tags with the query's Prefix that were not kept (too long, or refused
	// by Keep).
	Ignored int
}

// ListTags lists the remote's tags that q selects (one ls-remote, no object is fetched). The
// advertisement is read as a stream, over https with Git's smart HTTP protocol and over ssh by
// running git-upload-pack, and never held whole: a listing holds the tags it keeps and a
// buffer, whatever the remote sends, and stops at the first limit exceeded. An empty repository
// has no tags. Errors are free of credentials.
func (r *Remote) ListTags(ctx context.Context, q TagQuery) (TagList, error) {
	maxName := MaxRefNameBytes
	if q.MaxLength > 0 {
		maxName = len(tagPrefix) + q.MaxLength
	}
	rq := RefQuery{Prefix: tagPrefix + q.Prefix, MaxNameBytes: maxName, MaxKept: q.MaxKept}
	if q.Keep != nil {
		rq.Keep = func(name string) bool { return q.Keep(strings.TrimPrefix(name, tagPrefix)) }
	}
	adv, err := r.ListRefs(ctx, rq)
	if err != nil {
		return TagList{}, err
	}
	out := TagList{Tags: make(map[string]string, len(adv.Refs)), Ignored: adv.Ignored}
	for name, id := range adv.Refs {
		out.Tags[strings.TrimPrefix(name, tagPrefix)] = id
	}
	return out, nil
}

// ListRefs reads the remote's reference advertisement (git ls-remote) and keeps the references
// q selects, with the remote's HEAD target. See ListTags for the bounds.
func (r *Remote) ListRefs(ctx context.Context, q RefQuery) (Advertisement, error) {
	lim := currentLimits(q)
	var (
		adv Advertisement
		err error
	)
	switch r.scheme {
	case "http", "https":
		adv, err = r.advertiseHTTP(ctx, q, lim)
	case "ssh":
		adv, err = r.advertiseSSH(ctx, q, lim)
	default:
		return Advertisement{}, fmt.Errorf("unsupported URL scheme %q", r.scheme)
	}
	if err != nil {
		if ctx.Err() != nil && !errors.Is(err, ErrTooManyRefs) {
			err = fmt.Errorf("listing the references of %s: %w", r.shown, ctx.Err())
		}
		return Advertisement{}, r.Redact(err)
	}
	return adv, nil
}

// userAgent is sent to Git servers over http(s); some serve the smart protocol only to "git/".
const userAgent = "git/clusterstack-operator"

// maxRedirects bounds the redirects followed to the advertisement.
const maxRedirects = 5

// advertiseHTTP reads the advertisement of Git's smart HTTP protocol:
// GET <url>/info/refs?service=git-upload-pack.
func (r *Remote) advertiseHTTP(ctx context.Context, q RefQuery, lim limits) (Advertisement, error) {
	u, err := url.Parse(r.url)
	if err != nil {
		return Advertisement{}, err
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/info/refs"
	u.RawPath = ""
	query := u.Query()
	query.Set("service", "git-upload-pack")
	u.RawQuery = query.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Advertisement{}, err
	}
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Accept", "application/x-git-upload-pack-advertisement")
	if a, ok := r.auth.(githttp.AuthMethod); ok {
		a.SetAuth(req)
	}
	var ht *http.Transport
	if base, ok := http.DefaultTransport.(*http.Transport); ok {
		ht = base.Clone()
	} else {
		ht = &http.Transport{Proxy: http.ProxyFromEnvironment}
	}
	if r.tlsConfig != nil {
		ht.TLSClientConfig = r.tlsConfig.Clone()
	}
	defer ht.CloseIdleConnections()
	c := &http.Client{Transport: ht, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxRedirects {
			return fmt.Errorf("more than %d redirects", maxRedirects)
		}
		if req.URL.Scheme != via[0].URL.Scheme {
			return fmt.Errorf("refusing a redirect from %s to %s", via[0].URL.Scheme, req.URL.Scheme)
		}
		return nil
	}}
	res, err := c.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error repeats the URL with its query
		}
		return Advertisement{}, fmt.Errorf("%s: %w", r.shown, err)
	}
	defer func() { _ = res.Body.Close() }()
	switch res.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized:
		return Advertisement{}, fmt.Errorf("%s: authentication required (HTTP %d)", r.shown, res.StatusCode)
	case http.StatusForbidden:
		return Advertisement{}, fmt.Errorf("%s: authorization failed (HTTP %d)", r.shown, res.StatusCode)
	case http.StatusNotFound:
		return Advertisement{}, fmt.Errorf("%s: repository not found (HTTP %d)", r.shown, res.StatusCode)
	default:
		return Advertisement{}, fmt.Errorf("%s: unexpected HTTP status %s", r.shown, res.Status)
	}
	if ct := res.Header.Get("Content-Type"); ct != "application/x-git-upload-pack-advertisement" {
		return Advertisement{}, fmt.Errorf("%s does not serve Git's smart HTTP protocol (Content-Type %q; dumb HTTP is not supported)", r.shown, printable([]byte(ct)))
	}
	p := newPktReader(res.Body, r.shown, lim)
	// "# service=git-upload-pack", then a flush-pkt, then the advertisement.
	line, err := p.next()
	if err != nil || !bytes.HasPrefix(line, []byte("# service=git-upload-pack")) {
		if err == nil {
			err = fmt.Errorf("malformed smart HTTP response from %s: %q", r.shown, printable(line))
		}
		return Advertisement{}, err
	}
	if _, err := p.next(); !errors.Is(err, errFlush) {
		if err == nil {
			err = fmt.Errorf("malformed smart HTTP response from %s: no flush-pkt after the service line", r.shown)
		}
		return Advertisement{}, err
	}
	return readAdvertisement(p, q)
}

// advertiseSSH runs git-upload-pack on the remote over ssh, reads its advertisement and tells
// it that nothing is wanted.
func (r *Remote) advertiseSSH(ctx context.Context, q RefQuery, lim limits) (Advertisement, error) {
	auth, ok := r.auth.(*sshAuth)
	if !ok {
		return Advertisement{}, fmt.Errorf("%s: no SSH credentials", r.shown)
	}
	cfg, err := auth.ClientConfig()
	if err != nil {
		return Advertisement{}, err
	}
	u, err := url.Parse(r.url)
	if err != nil {
		return Advertisement{}, err
	}
	port := u.Port()
	if port == "" {
		port = "22"
	}
	addr := net.JoinHostPort(u.Hostname(), port)
	d := net.Dialer{Timeout: sshDialTimeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return Advertisement{}, fmt.Errorf("%s: %w", r.shown, err)
	}
	defer func() { _ = conn.Close() }()
	// The connection closes when the caller gives up: reads below return at once.
	defer context.AfterFunc(ctx, func() { _ = conn.Close() })()
	_ = conn.SetDeadline(time.Now().Add(sshDialTimeout)) // the handshake
	cc, chans, reqs, err := ssh.NewClientConn(conn, addr, cfg)
	if err != nil {
		return Advertisement{}, fmt.Errorf("%s: ssh: handshake failed: %w", r.shown, unwrapSSH(err))
	}
	_ = conn.SetDeadline(time.Time{})
	client := ssh.NewClient(cc, chans, reqs)
	defer func() { _ = client.Close() }()
	sess, err := client.NewSession()
	if err != nil {
		return Advertisement{}, fmt.Errorf("%s: %w", r.shown, err)
	}
	defer func() { _ = sess.Close() }()
	stdout, err := sess.StdoutPipe()
	if err != nil {
		return Advertisement{}, err
	}
	stdin, err := sess.StdinPipe()
	if err != nil {
		return Advertisement{}, err
	}
	stderr := &headBuffer{max: 1024}
	sess.Stderr = stderr
	if err := sess.Start("git-upload-pack " + shellQuote(u.Path)); err != nil {
		return Advertisement{}, fmt.Errorf("%s: run git-upload-pack: %w", r.shown, err)
	}
	adv, err := readAdvertisement(newPktReader(stdout, r.shown, lim), q)
	if err == nil {
		_, _ = stdin.Write([]byte("0000")) // a flush-pkt: nothing is wanted
	}
	_ = stdin.Close()
	if err != nil {
		if said := strings.TrimSpace(stderr.String()); said != "" && !errors.Is(err, ErrTooManyRefs) {
			err = fmt.Errorf("%w (the server said: %s)", err, printable([]byte(said)))
		}
		return Advertisement{}, err
	}
	return adv, nil
}

// unwrapSSH drops the "ssh: handshake failed: " x/crypto/ssh prefixes so that the message says
// it once.
func unwrapSSH(err error) error {
	return errors.New(strings.TrimPrefix(err.Error(), "ssh: handshake failed: "))
}

// shellQuote quotes s for the remote shell that runs an SSH command, as Git does.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// headBuffer keeps the first max bytes written to it (a remote's stderr, for messages).
type headBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (b *headBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - len(b.buf); room > 0 {
		b.buf = append(b.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (b *headBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

var _ io.Writer = (*headBuffer)(nil)
