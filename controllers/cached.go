package controllers

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// indexedInformer is an informer that gives its indexer: controller-runtime's informers for one
// namespace or all namespaces are client-go SharedIndexInformers. A cache over several
// namespaces gives a multi-namespace informer without one.
type indexedInformer interface {
	GetIndexer() toolscache.Indexer
}

// eachCached calls f with each object of list's kind in namespace ns (all namespaces when "")
// that the field index field maps to value, or with each object of the namespace when field is
// "". It hands f the cache's own objects: without a list of copies, which for typed lists
// costs a copy of every object's struct even with client.UnsafeDisableDeepCopy (at 10,000
// Clusters, four such lists were 45 MB per call). f must not change an object; it may keep it to
// read during the reconcile (an informer replaces an object that changed, never changes it).
//
// The objects come from the informer's indexer when informers gives one (the manager's cache);
// otherwise (informers nil, as in tests of one reconciler, or a cache over several namespaces)
// r lists them with client.UnsafeDisableDeepCopy, with the same rules for f.
func eachCached[T client.Object](ctx context.Context, informers cache.Informers, r client.Reader, list client.ObjectList, ns, field, value string, f func(T)) error {
	if informers != nil {
		obj := reflect.New(reflect.TypeFor[T]().Elem()).Interface().(T)
		inf, err := informers.GetInformer(ctx, obj)
		if err != nil {
			return fmt.Errorf("get the %T informer: %w", obj, err)
		}
		if ii, ok := inf.(indexedInformer); ok {
			items, err := indexed(ii.GetIndexer(), ns, field, value)
			if err != nil {
				return fmt.Errorf("read the %T cache: %w", obj, err)
			}
			for _, it := range items {
				if o, ok := it.(T); ok {
					f(o)
				}
			}
			return nil
		}
	}
	opts := []client.ListOption{client.UnsafeDisableDeepCopy}
	if ns != "" {
		opts = append(opts, client.InNamespace(ns))
	}
	if field != "" {
		opts = append(opts, client.MatchingFields{field: value})
	}
	if err := r.List(ctx, list, opts...); err != nil {
		return err
	}
	return meta.EachListItem(list, func(o runtime.Object) error {
		if t, ok := o.(T); ok {
			f(t)
		}
		return nil
	})
}

// indexed reads the objects of namespace ns (all when "") that the field index field maps to
// value, or all of ns when field is "", from a controller-runtime informer's indexer.
func indexed(idx toolscache.Indexer, ns, field, value string) ([]any, error) {
	switch {
	case field != "":
		return idx.ByIndex(fieldIndexName(field), fieldIndexKey(ns, value))
	case ns != "":
		return idx.ByIndex(toolscache.NamespaceIndex, ns)
	default:
		return idx.List(), nil
	}
}

// fieldIndexName and fieldIndexKey are the name of a field index in an informer's indexer and
// the key it files value under in namespace ns (all namespaces when ""), as controller-runtime's
// cache reader looks them up for client.MatchingFields and client.InNamespace (cache/internal:
// FieldIndexName, KeyToNamespacedKey); TestEachCachedAgreesWithTheCacheReader checks they still
// agree.
func fieldIndexName(field string) string { return "field:" + field }

func fieldIndexKey(ns, value string) string {
	if ns == "" {
		ns = "__all_namespaces"
	}
	return ns + "/" + value
}
