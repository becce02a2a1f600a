package controllers

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxlockdown"
)

// TestServiceAccountRefusal: a ClusterStack may name the operator's default account, or one its
// namespace's owner labelled; any other account, or one that does not exist, is refused with a
// message saying how to allow it.
func TestServiceAccountRefusal(t *testing.T) {
	cs := func(sa string) *csv1.ClusterStack {
		return &csv1.ClusterStack{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "aws-base"}, Spec: csv1.ClusterStackSpec{ServiceAccountName: sa}}
	}
	account := func(labels map[string]string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "ci-admin", Labels: labels}}
	}
	for _, tc := range []struct {
		name, sa, def string
		account       *metav1.PartialObjectMetadata
		want          string // "" when allowed
	}{
		{name: "none named", def: "clusterstack-flux"},
		{name: "the default account", sa: "clusterstack-flux", def: "clusterstack-flux"},
		{name: "a labelled account", sa: "ci-admin", def: "clusterstack-flux", account: account(map[string]string{csv1.ServiceAccountOptInLabel: "true"})},
		{name: "an unlabelled account", sa: "ci-admin", def: "clusterstack-flux", account: account(nil),
			want: "ServiceAccount team-a/ci-admin is not labelled clusterstack.io/flux-identity=true"},
		{name: "a label with another value", sa: "ci-admin", account: account(map[string]string{csv1.ServiceAccountOptInLabel: "yes"}),
			want: "no --default-service-account is set"},
		{name: "an account that does not exist", sa: "ci-admin", def: "clusterstack-flux",
			want: "ServiceAccount team-a/ci-admin does not exist"},
	} {
		got := serviceAccountRefusal(cs(tc.sa), tc.def, tc.account)
		switch {
		case tc.want == "" && got != nil:
			t.Errorf("%s: refused %+v", tc.name, got)
		case tc.want != "" && (got == nil || got.Reason != csv1.ReasonServiceAccountNotAllowed || got.Status != metav1.ConditionFalse ||
			got.Type != csv1.ReleasesResolvedCondition || !strings.Contains(got.Message, tc.want) ||
			!strings.Contains(got.Message, "kubectl label serviceaccount -n team-a ci-admin clusterstack.io/flux-identity=true")):
			t.Errorf("%s: %+v, want ServiceAccountNotAllowed naming %q and the label", tc.name, got, tc.want)
		}
	}
}

// TestFluxLockdownProbe: the probe reads Flux's Deployments, serves the answer for lockdownTTL,
// reads again after it, says Unknown when it cannot read them, and reads nothing when assumed.
func TestFluxLockdownProbe(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := appsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	dep := func(name string, args ...string) *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: name}}
		d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "manager", Args: args}}
		return d
	}
	reads := 0
	var fail error
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(dep("kustomize-controller"), dep("helm-controller")).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			reads++
			if fail != nil {
				return fail
			}
			return c.Get(ctx, key, obj, opts...)
		},
	}).Build()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	p := &FluxLockdownProbe{Mode: fluxlockdown.ModeDetect, Reader: c, Now: func() time.Time { return now }}
	if s := p.State(context.Background()); s.Status != metav1.ConditionFalse || s.Reason != csv1.ReasonFluxNotLockedDown || reads != 2 {
		t.Errorf("Flux without the lockdown: %+v after %d reads", s, reads)
	}
	if s := p.State(context.Background()); s.Status != metav1.ConditionFalse || reads != 2 {
		t.Errorf("within the TTL: %+v after %d reads, want the answer without reading", s, reads)
	}
	now = now.Add(lockdownTTL)
	fail = errors.New("deployments.apps is forbidden")
	if s := p.State(context.Background()); s.Status != metav1.ConditionUnknown || !strings.Contains(s.Detail, "forbidden") || reads != 3 {
		t.Errorf("after the TTL, not readable: %+v after %d reads", s, reads)
	}
	fail = nil
	if s := p.State(context.Background()); s.Status != metav1.ConditionFalse || reads != 5 {
		t.Errorf("a failed read is not served again: %+v after %d reads", s, reads)
	}
	assumed := &FluxLockdownProbe{Mode: fluxlockdown.ModeAssumed, Reader: c}
	if s := assumed.State(context.Background()); s.Status != metav1.ConditionTrue || s.Reason != csv1.ReasonFluxLockdownAssumed || reads != 5 {
		t.Errorf("assumed: %+v after %d reads", s, reads)
	}
	if assumed.recheck() != 0 || p.recheck() != lockdownRecheck || (*FluxLockdownProbe)(nil).recheck() != 0 {
		t.Error("recheck: ClusterStacks are reconciled again only while the lockdown is checked")
	}
}
