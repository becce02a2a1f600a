package framework

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func TestIsTransient(t *testing.T) {
	gr := schema.GroupResource{Group: "clusterstack.io", Resource: "clusteraddons"}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{apierrors.NewTimeoutError("request did not complete within the allotted timeout", 0), true},
		{apierrors.NewServerTimeout(gr, "list", 0), true},
		{apierrors.NewServiceUnavailable("etcd"), true},
		{apierrors.NewTooManyRequests("throttled", 1), true},
		{&url.Error{Op: "Get", URL: "https://127.0.0.1", Err: syscall.ECONNREFUSED}, true},
		{fmt.Errorf("read: %w", syscall.ECONNRESET), true},
		{apierrors.NewNotFound(gr, "a1"), false},
		{apierrors.NewForbidden(gr, "a1", errors.New("no")), false},
		{&url.Error{Op: "Get", URL: "https://127.0.0.1", Err: context.DeadlineExceeded}, false},
		{context.Canceled, false},
		{nil, false},
	} {
		if got := IsTransient(tc.err); got != tc.want {
			t.Errorf("IsTransient(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestRetryingReads(t *testing.T) {
	cm := &corev1.ConfigMap{}
	cm.Namespace, cm.Name = "ns", "cm"
	failures := 0
	calls := 0
	base := fake.NewClientBuilder().WithObjects(cm).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			calls++
			if calls <= failures {
				return apierrors.NewTimeoutError("request did not complete within the allotted timeout", 0)
			}
			if key.Name == "forbidden" {
				return apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, key.Name, errors.New("no"))
			}
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			calls++
			if calls <= failures {
				return apierrors.NewServerTimeout(schema.GroupResource{Resource: "configmaps"}, "list", 0)
			}
			return c.List(ctx, list, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			calls++
			return apierrors.NewTimeoutError("request did not complete within the allotted timeout", 0)
		},
	}).Build()
	c := RetryingReads(base)
	ctx := context.Background()

	// Two timeouts, then the answer: the read succeeds on its third attempt.
	failures, calls = 2, 0
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); err != nil || calls != 3 {
		t.Fatalf("Get after two timeouts: err %v after %d calls, want the object after 3", err, calls)
	}
	failures, calls = 1, 0
	var list corev1.ConfigMapList
	if err := c.List(ctx, &list); err != nil || calls != 2 || len(list.Items) != 1 {
		t.Fatalf("List after a timeout: err %v after %d calls with %d items, want 1 item after 2", err, calls, len(list.Items))
	}
	// An answer that is an error is returned at once.
	failures, calls = 0, 0
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "forbidden"}, &corev1.ConfigMap{}); !apierrors.IsForbidden(err) || calls != 1 {
		t.Fatalf("Get refused: err %v after %d calls, want Forbidden after 1", err, calls)
	}
	// A context that ends stops the retries.
	failures, calls = 100, 0
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.Get(cctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); !apierrors.IsTimeout(err) || calls != 1 {
		t.Fatalf("Get with an ended context: err %v after %d calls, want the timeout after 1", err, calls)
	}
	// Writes are not retried.
	calls = 0
	if err := c.Create(ctx, &corev1.ConfigMap{}); !apierrors.IsTimeout(err) || calls != 1 {
		t.Fatalf("Create that timed out: err %v after %d calls, want the timeout after 1", err, calls)
	}
	if testing.Short() {
		return
	}
	// At most readAttempts attempts (with 1+2+3 s of pauses).
	failures, calls = 100, 0
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); !apierrors.IsTimeout(err) || calls != readAttempts {
		t.Fatalf("Get that always times out: err %v after %d calls, want the timeout after %d", err, calls, readAttempts)
	}
}
