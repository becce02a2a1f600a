package controllers

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// TestApplierWritesOnlyChanges checks the applier's write decisions: a first apply writes, an
// unchanged desired state does not (also in a new process, i.e. after a restart), a changed one does.
func TestApplierWritesOnlyChanges(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	writes := 0
	c := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			writes++
			return c.Apply(ctx, obj, opts...)
		},
	}).Build()
	ctx := context.Background()
	cm := func(v string) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "c1-stack-values", Namespace: "ns", Labels: map[string]string{"a": "b"}},
			Data:       map[string]string{"cluster_name": v},
		}
	}
	steps := []struct {
		name      string
		applier   *Applier
		value     string
		wantWrite bool
	}{
		{"first apply creates", &Applier{Client: c, Scheme: scheme}, "c1", true},
		{"unchanged: no write", nil, "c1", false},
		{"unchanged after a restart: no write", &Applier{Client: c, Scheme: scheme}, "c1", false},
		{"changed: write", nil, "c2", true},
	}
	var a *Applier
	for _, st := range steps {
		if st.applier != nil {
			a = st.applier
		}
		before := writes
		wrote, err := a.Apply(ctx, nil, cm(st.value))
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if wrote != st.wantWrite || (writes > before) != st.wantWrite {
			t.Errorf("%s: wrote=%v (API writes %d), want %v", st.name, wrote, writes-before, st.wantWrite)
		}
	}
	got := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "c1-stack-values"}, got); err != nil {
		t.Fatal(err)
	}
	if got.Data["cluster_name"] != "c2" || got.Annotations[appliedHashAnnotation] == "" {
		t.Errorf("stored object = %+v", got)
	}
}
