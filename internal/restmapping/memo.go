// Package restmapping keeps the REST mappings of fully qualified kinds once they are found.
//
// controller-runtime asks its REST mapper for a mapping on every request of its clients and on
// every event its owner handlers map (handler.EnqueueRequestForOwner checks the owner kind's
// scope), always with a group, a kind and one version. Its dynamic mapper answers from a
// MultiRESTMapper of every API group it has discovered, which builds an error for each group that
// does not hold the kind: a few kilobytes of garbage per call, and more the more API groups the
// management cluster serves. While a fleet converges that is one call per watch event.
package restmapping

import (
	"net/http"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Memo wraps a REST mapper and keeps the mapping of each group, version and kind it found, so
// that the next request for the same one is a map read.
//
// Only found mappings of a single, named version are kept: a lookup without a version (whose
// answer is the preferred version, which may change as the wrapped mapper learns of new ones), with
// several, or that failed (a kind not installed yet, which the wrapped mapper looks for again) is
// always passed on. What is kept is bounded by the kinds the API server serves, whatever
// version an object's owner reference names. A kept mapping is shared by every caller and must
// not be changed.
//
// A mapping of one version of a kind stays what it was while its CustomResourceDefinition exists:
// the resource name and the scope of a served version do not change. The wrapped mapper keeps
// what it discovered in the same way (controller-runtime's dynamic mapper looks an API group up
// again only for a kind it does not know).
func Memo(m meta.RESTMapper) meta.RESTMapper {
	return &memo{RESTMapper: m, found: map[schema.GroupVersionKind]*meta.RESTMapping{}}
}

type memo struct {
	meta.RESTMapper

	mu    sync.RWMutex
	found map[schema.GroupVersionKind]*meta.RESTMapping
}

// RESTMapping implements meta.RESTMapper.
func (m *memo) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if len(versions) != 1 || versions[0] == "" {
		return m.RESTMapper.RESTMapping(gk, versions...)
	}
	gvk := gk.WithVersion(versions[0])
	m.mu.RLock()
	mapping, ok := m.found[gvk]
	m.mu.RUnlock()
	if ok {
		return mapping, nil
	}
	mapping, err := m.RESTMapper.RESTMapping(gk, versions...)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.found[gvk] = mapping
	m.mu.Unlock()
	return mapping, nil
}

// NewDynamic is controller-runtime's dynamic REST mapper behind a Memo: the manager's
// MapperProvider.
func NewDynamic(c *rest.Config, httpClient *http.Client) (meta.RESTMapper, error) {
	m, err := apiutil.NewDynamicRESTMapper(c, httpClient)
	if err != nil {
		return nil, err
	}
	return Memo(m), nil
}
