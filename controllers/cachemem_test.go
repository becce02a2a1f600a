package controllers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// cachedKinds are the objects the operator caches per Cluster, with a sample of each as the
// benchmark's API server serves it (testdata/cached: what the operator generated for the
// benchmark's template Cluster, and that Cluster and its AWSCluster).
var cachedKinds = []struct {
	file string
	new  func() client.Object
}{
	{"cluster.json", func() client.Object { return &clusterv1.Cluster{} }},
	{"awscluster.json", func() client.Object { return &unstructured.Unstructured{} }},
	{"clusteraddon.json", func() client.Object { return &csv1.ClusterAddon{} }},
	{"configmap.json", func() client.Object { return &corev1.ConfigMap{} }},
	{"helmrelease.json", func() client.Object { return &helmv2.HelmRelease{} }},
	{"kustomization.json", func() client.Object { return &kustomizev1.Kustomization{} }},
}

// cacheTransform is the transform CacheOptions gives obj's kind.
func cacheTransform(obj client.Object) toolscache.TransformFunc {
	opts := CacheOptions("")
	for o, by := range opts.ByObject {
		if reflect.TypeOf(o) == reflect.TypeOf(obj) && by.Transform != nil {
			return by.Transform
		}
	}
	return opts.DefaultTransform
}

// decodeCached decodes data as the informer does and applies transform, the cache's for obj's
// kind (cacheTransform).
func decodeCached(tb testing.TB, data []byte, obj client.Object, transform toolscache.TransformFunc) any {
	decode(tb, data, obj)
	out, err := transform(obj)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// decode decodes data into obj as the informer does.
func decode(tb testing.TB, data []byte, obj client.Object) {
	var err error
	if u, ok := obj.(*unstructured.Unstructured); ok {
		err = u.UnmarshalJSON(data)
	} else {
		err = json.Unmarshal(data, obj)
	}
	if err != nil {
		tb.Fatal(err)
	}
}

var (
	uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	hexRE  = regexp.MustCompile(`\b[0-9a-f]{64}\b|\b[0-9a-f]{32}\b|\b[0-9a-f]{12}\b`)
	rvRE   = regexp.MustCompile(`"resourceVersion": "[0-9]+"`)
)

// vary makes the sample the i-th Cluster's: its own name, UIDs, resource versions and hashes
// (of values, of applied objects), as ten thousand Clusters' objects differ in a real cache.
func vary(data []byte, i int) []byte {
	r := rand.New(rand.NewPCG(uint64(i), 1))
	hex := func(n int) []byte {
		b := make([]byte, n)
		for j := range b {
			b[j] = "0123456789abcdef"[r.IntN(16)]
		}
		return b
	}
	data = bytes.ReplaceAll(data, []byte("template-cluster"), fmt.Appendf(nil, "c-%05d", i))
	data = uuidRE.ReplaceAllFunc(data, func(u []byte) []byte {
		return fmt.Appendf(nil, "%s-%s-%s-%s-%s", hex(8), hex(4), hex(4), hex(4), hex(12))
	})
	data = rvRE.ReplaceAllFunc(data, func([]byte) []byte { return fmt.Appendf(nil, `"resourceVersion": "%d"`, r.IntN(1e7)) })
	return hexRE.ReplaceAllFunc(data, func(h []byte) []byte { return hex(len(h)) })
}

// sample reads a kind's sample file and names it for the benchmarks' metrics.
func sample(tb testing.TB, file string) (data []byte, name string) {
	data, err := os.ReadFile(filepath.Join("testdata", "cached", file))
	if err != nil {
		tb.Fatal(err)
	}
	return data, strings.TrimSuffix(file, ".json")
}

// heapInUse is the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkCachedObjectBytes prints the heap one cached object of each per-Cluster kind holds
// once decoded and transformed as the cache stores it (bytes per object, and their sum: the
// cache's share of the operator's memory per Cluster, without the informers' indexes).
//
//	go test ./controllers -run '^$' -bench CachedObjectBytes
func BenchmarkCachedObjectBytes(b *testing.B) {
	const n = 2000
	total := 0.0
	for _, k := range cachedKinds {
		data, name := sample(b, k.file)
		transform := cacheTransform(k.new())
		keep := make([]any, n)
		before := heapInUse()
		for i := range keep {
			keep[i] = decodeCached(b, vary(data, i), k.new(), transform)
		}
		per := float64(heapInUse()-before) / n
		runtime.KeepAlive(keep)
		total += per
		b.ReportMetric(per, name+"-B/obj")
	}
	b.ReportMetric(total, "B/Cluster")
}

// BenchmarkCacheTransform prints what the cache's transform (intern.Strings among it) costs per
// object of each kind, beside the cost of decoding it.
//
//	go test ./controllers -run '^$' -bench CacheTransform
func BenchmarkCacheTransform(b *testing.B) {
	for _, k := range cachedKinds {
		data, name := sample(b, k.file)
		data = vary(data, 1)
		transform := cacheTransform(k.new())
		b.Run(name+"/decode", func(b *testing.B) {
			for b.Loop() {
				decode(b, data, k.new())
			}
		})
		b.Run(name+"/decode+transform", func(b *testing.B) {
			for b.Loop() {
				decodeCached(b, data, k.new(), transform)
			}
		})
	}
}

// BenchmarkIndexBytes prints the heap an informer's indexer holds per object of a Cluster's
// generated ConfigMaps: without the index by Cluster, with it as SetupIndexes files it (under the
// namespace alone, namespacedIndexFunc), and as controller-runtime's IndexField files it (also
// under an all-namespaces key).
//
//	go test ./controllers -run '^$' -bench IndexBytes
func BenchmarkIndexBytes(b *testing.B) {
	const n = 10000
	namespaced := namespacedIndexFunc(generatedClusterIndex, generatedCluster)
	both := func(o any) ([]string, error) { // controller-runtime's indexByField, for a namespaced object
		keys, err := namespaced(o)
		for _, v := range generatedCluster(o.(client.Object)) {
			keys = append(keys, fieldIndexKey("", v))
		}
		return keys, err
	}
	objs := make([]*corev1.ConfigMap, n)
	for i := range objs {
		cluster := fmt.Sprintf("cluster-%d", i)
		objs[i] = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: cluster + "-values",
			Labels: map[string]string{csv1.ClusterNameLabel: cluster, csv1.ManagedByLabel: csv1.ManagedByValue}}}
	}
	for _, tc := range []struct {
		name  string
		index toolscache.IndexFunc
	}{{"no-index", nil}, {"namespaced", namespaced}, {"controller-runtime", both}} {
		indexers := toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}
		if tc.index != nil {
			indexers[fieldIndexName(generatedClusterIndex)] = tc.index
		}
		before := heapInUse()
		store := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, indexers)
		for _, o := range objs {
			if err := store.Add(o); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(heapInUse()-before)/n, tc.name+"-B/obj")
		runtime.KeepAlive(store)
	}
}
