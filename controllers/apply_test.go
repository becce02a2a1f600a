package controllers

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	csscheme "github.com/clusterstack-io/clusterstack-operator/internal/scheme"
	"github.com/clusterstack-io/clusterstack-operator/internal/testenv"
)

// TestApplierWritesOnlyChanges checks the applier's write decisions: a first apply writes, an
// unchanged desired state does not (also in a new process, i.e. after a restart), a changed one does.
func TestApplierWritesOnlyChanges(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	writes := 0
	c := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(countApplies(&writes)).Build()
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

// TestApplierCacheLag applies on a real API server through a reader that lags behind (as the
// manager's cache does for a moment after a write): an object this process just applied, exactly
// so, is read from the API server instead of applied again; one deleted since, or changed, is
// applied.
func TestApplierCacheLag(t *testing.T) {
	cfg := testenv.Start(t, testenv.CRDs{Operator: true})
	scheme := csscheme.New()
	live, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	writes, lagging := 0, false
	cached := interceptor.NewClient(live, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if lagging {
				return apierrors.NewNotFound(schema.GroupResource{}, key.Name)
			}
			return c.Get(ctx, key, obj, opts...)
		},
		Patch: countApplies(&writes).Patch,
	})
	ctx := context.Background()
	if err := live.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apply-lag"}}); err != nil {
		t.Fatal(err)
	}
	addon := func(value string) *csv1.ClusterAddon {
		return &csv1.ClusterAddon{TypeMeta: metav1.TypeMeta{APIVersion: csv1.GroupVersion.String(), Kind: "ClusterAddon"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "apply-lag", Name: "c1", Labels: map[string]string{"value": value}},
			Spec:       csv1.ClusterAddonSpec{ClusterName: "c1"}}
	}
	a := &Applier{Client: cached, Scheme: scheme, APIReader: live}
	steps := []struct {
		name      string
		lag       bool
		before    func()
		value     string
		wantWrite bool
	}{
		{"first apply creates", false, nil, "v1", true},
		{"not in the cache yet, unchanged: read, no write", true, nil, "v1", false},
		{"not in the cache yet, changed: write", true, nil, "v2", true},
		{"deleted since, the cache lagging: write", true, func() {
			if err := live.Delete(ctx, addon("v2")); err != nil {
				t.Fatal(err)
			}
		}, "v2", true},
		{"in the cache, unchanged: no write", false, nil, "v2", false},
	}
	for _, st := range steps {
		if st.before != nil {
			st.before()
		}
		lagging = st.lag
		before := writes
		desired := addon(st.value)
		wrote, err := a.Apply(ctx, nil, desired)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if wrote != st.wantWrite || (writes > before) != st.wantWrite {
			t.Errorf("%s: wrote=%v (API writes %d), want %v", st.name, wrote, writes-before, st.wantWrite)
		}
		got := &csv1.ClusterAddon{}
		if err := live.Get(ctx, client.ObjectKeyFromObject(desired), got); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		// A write, or a read from the API server, tells the generation (the cache has it otherwise).
		if got.Labels["value"] != st.value || (st.wantWrite || st.lag) && desired.Generation != got.Generation {
			t.Errorf("%s: stored label %q at generation %d, want %q; Apply said generation %d", st.name, got.Labels["value"], got.Generation, st.value, desired.Generation)
		}
	}
}

// countApplies counts the server-side applies made through a client in writes.
func countApplies(writes *int) interceptor.Funcs {
	return interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if patch.Type() == types.ApplyPatchType {
				*writes++
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	}
}
