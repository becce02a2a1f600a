package forge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// Bounds of one forge API response body.
const (
	// maxAPIBody bounds a successful response (a page of 50 or 100 pull requests with their
	// descriptions).
	maxAPIBody = 16 << 20
	// maxAPIErrorBody bounds an error response: the SDKs read it whole for a message.
	maxAPIErrorBody = 64 << 10
)

// errAPIDeadline: a forge API request ran out of its deadline.
var errAPIDeadline = errors.New("forge API deadline exceeded")

// ErrTooLarge is returned (wrapped) when a response or a checkout exceeds its size limit.
var ErrTooLarge = errors.New("size limit exceeded")

// apiTransport gives every request to the forge API its own deadline, which also bounds the
// reading of the response body, and bounds the body's size.
type apiTransport struct {
	next    http.RoundTripper
	timeout time.Duration
}

func (t *apiTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(req.Context(), t.timeout)
	res, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		deadline := ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded)
		cancel()
		if deadline {
			return nil, fmt.Errorf("%w: %v", errAPIDeadline, err)
		}
		return nil, err
	}
	limit := int64(maxAPIBody)
	if res.StatusCode >= 300 {
		limit = maxAPIErrorBody
	}
	res.Body = &boundedBody{rc: res.Body, left: limit, ctx: ctx, cancel: cancel}
	return res, nil
}

// boundedBody fails the reading of a body beyond its limit, says when its deadline ran out,
// and releases the request's context when closed.
type boundedBody struct {
	rc     io.ReadCloser
	left   int64
	ctx    context.Context
	cancel context.CancelFunc
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var one [1]byte
		if n, _ := b.rc.Read(one[:]); n > 0 {
			return 0, fmt.Errorf("%w: the forge's response is larger than the operator reads", ErrTooLarge)
		}
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if err != nil && !errors.Is(err, io.EOF) && errors.Is(b.ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("%w: %v", errAPIDeadline, err)
	}
	return n, err
}

func (b *boundedBody) Close() error {
	err := b.rc.Close()
	b.cancel()
	return err
}

// Git operations run through go-git's http(s) transport, which go-git looks up by scheme in
// a process-wide table. The package installs, once, a transport that bounds the bytes a Git
// operation reads when its context carries a budget (withBudget) and behaves as go-git's
// default otherwise.
var installOnce sync.Once

func installGitTransport() {
	installOnce.Do(func() {
		c := githttp.NewClient(&http.Client{Transport: &gitTransport{next: http.DefaultTransport}})
		client.InstallProtocol("http", c)
		client.InstallProtocol("https", c)
	})
}

// budget is what one checkout may still read from the fleet repository.
type budget struct {
	left     atomic.Int64
	max      int64
	exceeded atomic.Bool
}

// mark returns err as ErrTooLarge when the budget ran out (go-git does not always keep the
// transport's error in its chain).
func (b *budget) mark(err error) error {
	if err != nil && b.exceeded.Load() && !errors.Is(err, ErrTooLarge) {
		return fmt.Errorf("%w: %v", ErrTooLarge, err)
	}
	return err
}

type budgetKey struct{}

func withBudget(ctx context.Context, b *budget) context.Context {
	return context.WithValue(ctx, budgetKey{}, b)
}

// gitTransport counts the response bytes of requests whose context carries a budget.
type gitTransport struct{ next http.RoundTripper }

func (t *gitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := t.next.RoundTrip(req)
	if err != nil || res.Body == nil {
		return res, err
	}
	if b, ok := req.Context().Value(budgetKey{}).(*budget); ok {
		res.Body = &countedBody{rc: res.Body, b: b}
	}
	return res, nil
}

type countedBody struct {
	rc io.ReadCloser
	b  *budget
}

func (c *countedBody) Read(p []byte) (int, error) {
	if c.b.left.Load() < 0 {
		c.b.exceeded.Store(true)
		return 0, fmt.Errorf("%w: more than %d bytes fetched", ErrTooLarge, c.b.max)
	}
	n, err := c.rc.Read(p)
	if c.b.left.Add(-int64(n)) < 0 {
		c.b.exceeded.Store(true)
		return 0, fmt.Errorf("%w: more than %d bytes fetched", ErrTooLarge, c.b.max)
	}
	return n, err
}

func (c *countedBody) Close() error { return c.rc.Close() }
