package controllers

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
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
	t.Run("reads the informers' objects in place", func(t *testing.T) { testApplierInformers(t, cfg, scheme, live) })
}

// testApplierInformers applies through an Applier whose Informers are a real cache of the API
// server: it decides from the informer's own object (no read through its Client, no copy) and
// still sees an edit by someone else.
func testApplierInformers(t *testing.T, cfg *rest.Config, scheme *runtime.Scheme, live client.WithWatch) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// As the manager's cache: over all namespaces (an informer with an indexer), ConfigMaps
	// without their data but its digest (stripConfigMapData).
	informers, err := cache.New(cfg, cache.Options{Scheme: scheme, ByObject: map[client.Object]cache.ByObject{&corev1.ConfigMap{}: {Transform: stripConfigMapData}}})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = informers.Start(ctx) }()
	writes, reads := 0, 0
	c := interceptor.NewClient(live, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			reads++
			return c.Get(ctx, key, obj, opts...)
		},
		Patch: countApplies(&writes).Patch,
	})
	a := &Applier{Client: c, Scheme: scheme, APIReader: live, Informers: informers}
	cm := func(value string) *corev1.ConfigMap {
		return &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "apply-lag", Name: "values", Labels: map[string]string{"value": value}},
			Data:       map[string]string{"k": value}}
	}
	key := client.ObjectKey{Namespace: "apply-lag", Name: "values"}
	cmKind := corev1.SchemeGroupVersion.WithKind("ConfigMap")
	// cachedAt waits until the cache has the object at the label value, and returns it.
	cachedAt := func(value string) client.Object {
		t.Helper()
		var got client.Object
		deadline := time.Now().Add(10 * time.Second)
		for got == nil || got.GetLabels()["value"] != value {
			if time.Now().After(deadline) {
				t.Fatalf("the cache did not show ConfigMap %s with value %q", key, value)
			}
			time.Sleep(20 * time.Millisecond)
			got, err = a.cached(ctx, cmKind, &corev1.ConfigMap{}, key)
			if err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
		}
		return got
	}
	apply := func(name, value string, wantWrite bool) {
		t.Helper()
		before := writes
		if wrote, err := a.Apply(ctx, nil, cm(value)); err != nil || wrote != wantWrite || (writes > before) != wantWrite {
			t.Errorf("%s: wrote=%v (API writes %d), err %v; want a write: %v", name, wrote, writes-before, err, wantWrite)
		}
	}
	apply("first apply creates", "v1", true)
	first := cachedAt("v1")
	if again, err := a.cached(ctx, cmKind, &corev1.ConfigMap{}, key); err != nil || again != first {
		t.Errorf("two reads gave %p and %p (err %v): want the informer's one object, not copies", first, again, err)
	}
	reads = 0
	apply("in the cache, unchanged: no write", "v1", false)
	if reads != 0 {
		t.Errorf("the unchanged apply read through the client %d times; want the informer's object only", reads)
	}
	if !a.Unchanged(ctx, nil, cm("v1"), first.GetAnnotations()[appliedHashAnnotation], "") {
		t.Error("Unchanged: false for the object as applied")
	}
	// Someone else edits the data: the cache shows it, and the next apply puts it back.
	edited := &corev1.ConfigMap{}
	if err := live.Get(ctx, key, edited); err != nil {
		t.Fatal(err)
	}
	edited.Data["k"], edited.Labels["value"] = "edited", "edited"
	if err := live.Update(ctx, edited); err != nil {
		t.Fatal(err)
	}
	cachedAt("edited")
	apply("edited by someone else: applied again", "v1", true)
	if first.GetLabels()["value"] != "v1" || first.GetAnnotations()[cachedDataHashAnnotation] != configMapDataHash(map[string]string{"k": "v1"}, nil) {
		t.Errorf("the informer's object was changed: %v", first)
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
