package controllers

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/testenv"
)

// TestEachCachedAgreesWithTheCacheReader reads ConfigMaps of a real API server (bin/, built by
// `make tools`) through eachCached and checks it finds what controller-runtime's cache reader
// lists for the same namespace and field index (the index names and keys eachCached reads are
// controller-runtime's own), that it hands out the cache's objects rather than copies, and that
// it lists through the reader where the cache gives no indexer (a cache over several namespaces)
// or there is no cache.
func TestEachCachedAgreesWithTheCacheReader(t *testing.T) {
	cfg := testenv.Start(t, testenv.CRDs{})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	generated := func(cluster string) map[string]string {
		return map[string]string{csv1.ClusterNameLabel: cluster, csv1.ManagedByLabel: csv1.ManagedByValue}
	}
	objects := []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "cached-a", Name: "c1-values", Labels: generated("c1")}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "cached-a", Name: "c1-more", Labels: generated("c1")}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "cached-a", Name: "c2-values", Labels: generated("c2")}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "cached-a", Name: "unlabelled"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "cached-b", Name: "c1-values", Labels: generated("c1")}},
	}
	for _, ns := range []string{"cached-a", "cached-b"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range objects {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}

	const inNamespace = generatedClusterIndex + "-in-namespace"
	newCache := func(opts cache.Options) cache.Cache {
		t.Helper()
		opts.Scheme = clientgoscheme.Scheme
		ca, err := cache.New(cfg, opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := ca.IndexField(ctx, &corev1.ConfigMap{}, generatedClusterIndex, generatedCluster); err != nil {
			t.Fatal(err)
		}
		// The manager's own registration of the index (SetupIndexes), under another name.
		if err := indexInNamespace(ctx, ca, &corev1.ConfigMap{}, inNamespace, generatedCluster); err != nil {
			t.Fatal(err)
		}
		go func() { _ = ca.Start(ctx) }()
		if !ca.WaitForCacheSync(ctx) {
			t.Fatal("the cache did not sync")
		}
		return ca
	}
	whole := newCache(cache.Options{})
	several := newCache(cache.Options{DefaultNamespaces: map[string]cache.Config{"cached-a": {}, "cached-b": {}}})

	read := func(inf cache.Informers, r client.Reader, ns, field, value string) (names []string, objs []*corev1.ConfigMap) {
		t.Helper()
		if err := eachCached(ctx, inf, r, &corev1.ConfigMapList{}, ns, field, value, func(cm *corev1.ConfigMap) {
			names = append(names, cm.Namespace+"/"+cm.Name)
			objs = append(objs, cm)
		}); err != nil {
			t.Fatal(err)
		}
		slices.Sort(names)
		return names, objs
	}
	listed := func(r client.Reader, ns, field, value string) []string {
		t.Helper()
		var opts []client.ListOption
		if ns != "" {
			opts = append(opts, client.InNamespace(ns))
		}
		if field != "" {
			opts = append(opts, client.MatchingFields{field: value})
		}
		var list corev1.ConfigMapList
		if err := r.List(ctx, &list, opts...); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, cm := range list.Items {
			names = append(names, cm.Namespace+"/"+cm.Name)
		}
		slices.Sort(names)
		return names
	}

	for _, tc := range []struct {
		ns, field, value string
		want             []string // nil: every ConfigMap there is, as the cache reader lists them
	}{
		{ns: "cached-a", field: generatedClusterIndex, value: "c1", want: []string{"cached-a/c1-more", "cached-a/c1-values"}},
		{ns: "cached-a", field: generatedClusterIndex, value: "c2", want: []string{"cached-a/c2-values"}},
		{ns: "cached-a", field: generatedClusterIndex, value: "c3", want: []string{}},
		{field: generatedClusterIndex, value: "c1", want: []string{"cached-a/c1-more", "cached-a/c1-values", "cached-b/c1-values"}},
		{ns: "cached-a", want: []string{"cached-a/c1-more", "cached-a/c1-values", "cached-a/c2-values", "cached-a/unlabelled"}},
		{ns: "cached-b", want: []string{"cached-b/c1-values"}},
		{},
	} {
		want := tc.want
		if want == nil {
			want = listed(whole, tc.ns, tc.field, tc.value)
			if len(want) < len(objects) {
				t.Fatalf("the cache lists %v, not every ConfigMap", want)
			}
		}
		if got := listed(whole, tc.ns, tc.field, tc.value); !slices.Equal(got, want) {
			t.Errorf("ns %q, %s=%q: the cache reader lists %v, want %v", tc.ns, tc.field, tc.value, got, want)
		}
		got, first := read(whole, whole, tc.ns, tc.field, tc.value)
		if !slices.Equal(got, want) {
			t.Errorf("ns %q, %s=%q: eachCached from the cache's indexer found %v, want %v", tc.ns, tc.field, tc.value, got, want)
		}
		// The cache's own objects: a second read hands out the very same ones.
		_, second := read(whole, whole, tc.ns, tc.field, tc.value)
		for _, o := range first {
			if !slices.Contains(second, o) {
				t.Errorf("ns %q, %s=%q: %s/%s came as a different object each time: copies, not the cache's own", tc.ns, tc.field, tc.value, o.Namespace, o.Name)
			}
		}
		if got, _ := read(nil, whole, tc.ns, tc.field, tc.value); !slices.Equal(got, want) {
			t.Errorf("ns %q, %s=%q: eachCached without informers found %v, want %v", tc.ns, tc.field, tc.value, got, want)
		}
		if tc.field == generatedClusterIndex {
			// indexInNamespace lists what IndexField lists in a namespace, and nothing across.
			wantIn := want
			if tc.ns == "" {
				wantIn = nil
			}
			for name, ca := range map[string]cache.Cache{"a cache": whole, "a cache over several namespaces": several} {
				if got := listed(ca, tc.ns, inNamespace, tc.value); !slices.Equal(got, wantIn) {
					t.Errorf("ns %q, %s=%q: %s lists %v through indexInNamespace, want %v", tc.ns, tc.field, tc.value, name, got, wantIn)
				}
			}
		}
		if tc.ns == "" && tc.field == "" {
			continue // a cache over two namespaces has only theirs
		}
		if got, _ := read(several, several, tc.ns, tc.field, tc.value); !slices.Equal(got, want) {
			t.Errorf("ns %q, %s=%q: eachCached from a cache over several namespaces found %v, want %v", tc.ns, tc.field, tc.value, got, want)
		}
	}
}
