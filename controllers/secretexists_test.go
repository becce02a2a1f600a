package controllers

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// TestSecretExists checks the kubeconfig Secret's read: from the API server's watch cache
// (resourceVersion "0") first, and from etcd only when the watch cache does not have it, which
// may lag behind a Secret created a moment ago.
func TestSecretExists(t *testing.T) {
	key := client.ObjectKey{Namespace: "ns", Name: "c1-kubeconfig"}
	for _, tc := range []struct {
		name string
		// inWatchCache and inEtcd: where the Secret is.
		inWatchCache, inEtcd bool
		wantReads            []string // the resourceVersion of each read
		wantNotFound         bool
	}{
		{"in the watch cache: one read", true, true, []string{"0"}, false},
		{"created a moment ago, not in the watch cache yet: read from etcd", false, true, []string{"0", ""}, false},
		{"missing: NotFound after both", false, false, []string{"0", ""}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var reads []string
			c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(
				&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}},
			).WithInterceptorFuncs(interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, k client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					o := &client.GetOptions{}
					o.ApplyOptions(opts)
					rv := ""
					if o.Raw != nil {
						rv = o.Raw.ResourceVersion
					}
					reads = append(reads, rv)
					if (rv == "0" && !tc.inWatchCache) || !tc.inEtcd {
						return apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, k.Name)
					}
					return c.Get(ctx, k, obj, opts...)
				},
			}).Build()
			err := secretExists(context.Background(), c, key)
			if apierrors.IsNotFound(err) != tc.wantNotFound || err != nil && !tc.wantNotFound {
				t.Errorf("secretExists = %v; want NotFound: %v", err, tc.wantNotFound)
			}
			if len(reads) != len(tc.wantReads) {
				t.Fatalf("reads at resourceVersions %q; want %q", reads, tc.wantReads)
			}
			for i := range reads {
				if reads[i] != tc.wantReads[i] {
					t.Errorf("reads at resourceVersions %q; want %q", reads, tc.wantReads)
				}
			}
		})
	}
}
