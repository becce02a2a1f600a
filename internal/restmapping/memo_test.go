package restmapping

import (
	"fmt"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// counting is a REST mapper that counts the RESTMapping calls it answers.
type counting struct {
	meta.RESTMapper
	mu    sync.Mutex
	calls int
}

func (c *counting) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	c.mu.Lock()
	c.calls++
	c.mu.Unlock()
	return c.RESTMapper.RESTMapping(gk, versions...)
}

func (c *counting) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

var (
	addonV1  = schema.GroupVersionKind{Group: "clusterstack.io", Version: "v1alpha1", Kind: "ClusterAddon"}
	clusterB = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Cluster"}
	clusterA = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta1", Kind: "Cluster"}
)

// groups is a MultiRESTMapper of one DefaultRESTMapper per API group, as controller-runtime's
// dynamic mapper builds it, with n groups besides the test's kinds.
func groups(n int) (meta.MultiRESTMapper, *meta.DefaultRESTMapper) {
	capi := meta.NewDefaultRESTMapper([]schema.GroupVersion{clusterB.GroupVersion(), clusterA.GroupVersion()})
	capi.Add(clusterB, meta.RESTScopeNamespace)
	capi.Add(clusterA, meta.RESTScopeNamespace)
	cs := meta.NewDefaultRESTMapper([]schema.GroupVersion{addonV1.GroupVersion()})
	cs.Add(addonV1, meta.RESTScopeNamespace)
	multi := meta.MultiRESTMapper{capi, cs}
	for i := range n {
		gv := schema.GroupVersion{Group: fmt.Sprintf("g%d.example.com", i), Version: "v1"}
		m := meta.NewDefaultRESTMapper([]schema.GroupVersion{gv})
		m.Add(gv.WithKind(fmt.Sprintf("Kind%d", i)), meta.RESTScopeNamespace)
		multi = append(multi, m)
	}
	return multi, cs
}

func TestMemoKeepsFoundMappings(t *testing.T) {
	multi, _ := groups(3)
	inner := &counting{RESTMapper: multi}
	m := Memo(inner)

	first, err := m.RESTMapping(addonV1.GroupKind(), addonV1.Version)
	if err != nil {
		t.Fatal(err)
	}
	if first.Resource.Resource != "clusteraddons" || first.Scope.Name() != meta.RESTScopeNameNamespace {
		t.Fatalf("mapping of %s: got %s, scope %s", addonV1, first.Resource, first.Scope.Name())
	}
	for range 5 {
		again, err := m.RESTMapping(addonV1.GroupKind(), addonV1.Version)
		if err != nil {
			t.Fatal(err)
		}
		if again != first {
			t.Fatalf("a second lookup of %s returned another mapping: %+v", addonV1, again)
		}
	}
	if got := inner.count(); got != 1 {
		t.Fatalf("six lookups of one kind asked the wrapped mapper %d times, want 1", got)
	}

	// Each version is a mapping of its own.
	b, err := m.RESTMapping(clusterB.GroupKind(), clusterB.Version)
	if err != nil {
		t.Fatal(err)
	}
	a, err := m.RESTMapping(clusterA.GroupKind(), clusterA.Version)
	if err != nil {
		t.Fatal(err)
	}
	if b.GroupVersionKind != clusterB || a.GroupVersionKind != clusterA {
		t.Fatalf("versions mixed up: %s for %s, %s for %s", b.GroupVersionKind, clusterB, a.GroupVersionKind, clusterA)
	}
	if got := inner.count(); got != 3 {
		t.Fatalf("two more versions asked the wrapped mapper %d times in all, want 3", got)
	}
}

func TestMemoPassesOnWhatItDoesNotKeep(t *testing.T) {
	multi, cs := groups(3)
	inner := &counting{RESTMapper: multi}
	m := Memo(inner)

	// The preferred version (no version named) and a choice of versions are asked each time.
	for range 2 {
		mapping, err := m.RESTMapping(clusterB.GroupKind())
		if err != nil {
			t.Fatal(err)
		}
		if mapping.GroupVersionKind != clusterB {
			t.Fatalf("preferred version of Cluster: got %s, want %s", mapping.GroupVersionKind, clusterB)
		}
		if _, err := m.RESTMapping(clusterB.GroupKind(), clusterA.Version, clusterB.Version); err != nil {
			t.Fatal(err)
		}
	}
	if got := inner.count(); got != 4 {
		t.Fatalf("lookups without one version asked the wrapped mapper %d times, want 4", got)
	}

	// A kind not installed yet is looked for again, and kept once it is found.
	later := schema.GroupVersionKind{Group: "clusterstack.io", Version: "v1alpha1", Kind: "Later"}
	for range 2 {
		if _, err := m.RESTMapping(later.GroupKind(), later.Version); !meta.IsNoMatchError(err) {
			t.Fatalf("kind not installed: want a no-match error, got %v", err)
		}
	}
	if got := inner.count(); got != 6 {
		t.Fatalf("two failed lookups asked the wrapped mapper %d times in all, want 6", got)
	}
	cs.Add(later, meta.RESTScopeRoot)
	for range 3 {
		mapping, err := m.RESTMapping(later.GroupKind(), later.Version)
		if err != nil {
			t.Fatalf("kind installed since: %v", err)
		}
		if mapping.Scope.Name() != meta.RESTScopeNameRoot {
			t.Fatalf("kind installed since: scope %s, want root", mapping.Scope.Name())
		}
	}
	if got := inner.count(); got != 7 {
		t.Fatalf("three lookups of a kind found on the first asked the wrapped mapper %d times in all, want 7", got)
	}
}

func TestMemoConcurrentLookups(t *testing.T) {
	multi, _ := groups(3)
	m := Memo(multi)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			gvk := []schema.GroupVersionKind{addonV1, clusterA, clusterB}[i%3]
			for range 100 {
				mapping, err := m.RESTMapping(gvk.GroupKind(), gvk.Version)
				if err != nil || mapping.GroupVersionKind != gvk {
					t.Errorf("lookup of %s: %v, %v", gvk, mapping, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkRESTMapping prints the cost of the lookup controller-runtime makes per request and per
// owner-mapped event, on a mapper of 40 API groups, with and without the memo.
func BenchmarkRESTMapping(b *testing.B) {
	multi, _ := groups(40)
	for _, c := range []struct {
		name   string
		mapper meta.RESTMapper
	}{{"groups-40", multi}, {"memo", Memo(multi)}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.mapper.RESTMapping(addonV1.GroupKind(), addonV1.Version); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
