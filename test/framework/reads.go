package framework

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// readAttempts is how many times RetryingReads sends a read that failed transiently, and
// readRetryPause the pause before the second attempt (it grows by as much before each next one).
const (
	readAttempts   = 4
	readRetryPause = time.Second
)

// RetryingReads wraps c so that a Get or List that fails with an error of an API server short
// of CPU or restarting (IsTransient) is sent again, up to readAttempts times with a growing
// pause, while ctx lasts. A suite's reads answer "what is the state now"; a read that got no
// answer observed nothing, and Consistently, which fails at its first failed poll, must not take
// it for a broken product. Writes are passed through as they are: whether a write that timed out
// took effect is for the test to find out.
func RetryingReads(c client.Client) client.Client {
	return &retryingReads{Client: c}
}

type retryingReads struct {
	client.Client
}

func (r *retryingReads) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return retryRead(ctx, func() error { return r.Client.Get(ctx, key, obj, opts...) })
}

func (r *retryingReads) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return retryRead(ctx, func() error { return r.Client.List(ctx, list, opts...) })
}

// retryRead runs read until it succeeds, fails otherwise than transiently, has run readAttempts
// times or ctx ends, and returns its last error.
func retryRead(ctx context.Context, read func() error) error {
	var err error
	for attempt := 1; ; attempt++ {
		if err = read(); err == nil || !IsTransient(err) || attempt == readAttempts {
			return err
		}
		t := time.NewTimer(time.Duration(attempt) * readRetryPause)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// IsTransient reports whether err is what an API server returns when it is short of CPU, busy or
// restarting, rather than an answer: a timeout (the server's 504 "request did not complete
// within the allotted timeout", or the client's own), 503, 429, or a connection refused, reset
// or cut short.
func IsTransient(err error) bool {
	if err == nil {
		return false
	}
	if apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsTooManyRequests(err) {
		return true
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false // the caller's context ended: nothing to retry for
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
