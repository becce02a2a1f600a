// Package controllers holds the operator's reconcilers. They do I/O and wiring only: the
// translation into Flux objects lives in internal/fluxgen, value rendering in internal/render,
// and status computation in internal/fluxstatus and internal/stackstatus. Each status field has
// one writer (docs/status-ownership.md); Events follow successful status writes
// (updateStatusEmit).
//
//   - ClusterStackReconciler: ClusterStack -> ClusterStackReleases (pinned and discovered
//     versions; garbage collection of unused releases).
//   - ClusterStackReleaseReconciler: ClusterStackRelease -> GitRepository, cluster-class
//     HelmRelease/Kustomization, shared addon HelmCharts.
//   - ClusterAddonReconciler: CAPI Cluster -> ClusterAddon, values ConfigMap, per-cluster
//     HelmReleases/Kustomizations.
//   - StatusReconcilers: Flux readiness -> Available/Progressing/Degraded/Ready on all three kinds.
package controllers

import (
	"context"
	"errors"
	"fmt"
	"sync"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
)

// Field index names.
const (
	// generatedClusterIndex indexes the operator's generated HelmReleases, Kustomizations and
	// ConfigMaps by the (label value of the) Cluster they are generated for.
	generatedClusterIndex = "metadata.labels.cluster"
	// clusterClassIndex indexes CAPI Clusters by the name of the ClusterClass their topology
	// uses, counting only references within the Cluster's own namespace.
	clusterClassIndex = "spec.topology.classRef.name"
	// releaseStackIndex indexes ClusterStackReleases by their ClusterStack.
	releaseStackIndex = "spec.clusterStack"
	// addonReleaseIndex indexes ClusterAddons by their desired release.
	addonReleaseIndex = "status.desiredRelease"
	// addonStackIndex indexes ClusterAddons by their ClusterStack.
	addonStackIndex = "status.clusterStack"
	// clusterFluxStackIndex indexes the clusters' generated HelmReleases and Kustomizations by
	// their ClusterStack label.
	clusterFluxStackIndex = "metadata.labels.clusterstack.io/stack"
	// releaseFluxStackIndex indexes the releases' own generated HelmReleases and Kustomizations
	// (the ClusterClass's, not the clusters') by their ClusterStack label: the stack's related
	// objects, read without a walk over every cluster's.
	releaseFluxStackIndex = "metadata.labels.clusterstack.io/stack.release"
	// clusterStackKeyIndex indexes CAPI Clusters by the stack their ClusterClass would be a
	// release of ("aws-base-1-36"), whether or not the release exists.
	clusterStackKeyIndex = "spec.topology.classRef.stack"
)

// ClusterClassOf returns the name of the ClusterClass a Cluster's topology uses, or "" when it
// uses none in its own namespace. A reference into another namespace is never followed: one
// namespace's stack must not reach another namespace's clusters.
func ClusterClassOf(c *clusterv1.Cluster) string {
	ref := c.Spec.Topology.ClassRef
	if ref.Name == "" || (ref.Namespace != "" && ref.Namespace != c.Namespace) {
		return ""
	}
	return ref.Name
}

// generatedCluster is the generatedClusterIndex value of an object: the Cluster (label value)
// the operator generated it for. A reconcile lists its own objects in O(their number) instead of
// matching the labels of every object in the namespace.
func generatedCluster(o client.Object) []string {
	l := o.GetLabels()
	if name := l[csv1.ClusterNameLabel]; name != "" && l[csv1.ManagedByLabel] == csv1.ManagedByValue {
		return []string{name}
	}
	return nil
}

// byGeneratedCluster selects, through generatedClusterIndex, the objects generated for a Cluster.
// The index is filed per namespace (indexInNamespace): a list through it names the Cluster's.
func byGeneratedCluster(cluster string) client.MatchingFields {
	return client.MatchingFields{generatedClusterIndex: fluxgen.LabelValue(cluster)}
}

// byReleaseFluxStack selects, through releaseFluxStackIndex, the Flux objects generated for a
// ClusterStack's releases themselves (not for its clusters).
func byReleaseFluxStack(stack string) client.MatchingFields {
	return client.MatchingFields{releaseFluxStackIndex: fluxgen.LabelValue(stack)}
}

// fluxByStack indexes the operator's Flux objects by their stack label: those generated for a
// Cluster (with a cluster-name label) when perCluster, else those of a release (without one).
func fluxByStack(perCluster bool) client.IndexerFunc {
	return func(o client.Object) []string {
		l := o.GetLabels()
		if _, forCluster := l[csv1.ClusterNameLabel]; forCluster != perCluster || l[csv1.ManagedByLabel] != csv1.ManagedByValue || l[csv1.StackLabel] == "" {
			return nil
		}
		return []string{l[csv1.StackLabel]}
	}
}

// SetupIndexes registers the field indexes the reconcilers use.
func SetupIndexes(ctx context.Context, mgr ctrl.Manager) error {
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &clusterv1.Cluster{}, clusterClassIndex, func(o client.Object) []string {
		if cc := ClusterClassOf(o.(*clusterv1.Cluster)); cc != "" {
			return []string{cc}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &clusterv1.Cluster{}, clusterStackKeyIndex, func(o client.Object) []string {
		if key := releaseStackKey(ClusterClassOf(o.(*clusterv1.Cluster))); key != "" {
			return []string{key}
		}
		return nil
	}); err != nil {
		return err
	}
	for _, obj := range []client.Object{&helmv2.HelmRelease{}, &kustomizev1.Kustomization{}, &corev1.ConfigMap{}} {
		if err := indexInNamespace(ctx, mgr.GetCache(), obj, generatedClusterIndex, generatedCluster); err != nil {
			return err
		}
	}
	for _, obj := range []client.Object{&helmv2.HelmRelease{}, &kustomizev1.Kustomization{}} {
		if err := idx.IndexField(ctx, obj, clusterFluxStackIndex, fluxByStack(true)); err != nil {
			return err
		}
		if err := idx.IndexField(ctx, obj, releaseFluxStackIndex, fluxByStack(false)); err != nil {
			return err
		}
	}
	if err := idx.IndexField(ctx, &csv1.ClusterStackRelease{}, releaseStackIndex, func(o client.Object) []string {
		return []string{o.(*csv1.ClusterStackRelease).Spec.ClusterStack}
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &csv1.ClusterAddon{}, addonReleaseIndex, func(o client.Object) []string {
		if r := o.(*csv1.ClusterAddon).Status.DesiredRelease; r != "" {
			return []string{r}
		}
		return nil
	}); err != nil {
		return err
	}
	return idx.IndexField(ctx, &csv1.ClusterAddon{}, addonStackIndex, func(o client.Object) []string {
		if s := o.(*csv1.ClusterAddon).Status.ClusterStack; s != "" {
			return []string{s}
		}
		return nil
	})
}

// indexInNamespace registers the field index name of obj's kind in c, as the manager's
// IndexField does but under each object's namespace alone. IndexField also files every value
// under an all-namespaces key, for lists across namespaces; of an index whose every value is one
// Cluster's, each key costs the informer a set of its own, about 330 bytes per object. A list
// through this index must name a namespace (client.InNamespace, as byGeneratedCluster's callers
// do): across namespaces it finds nothing. The index's name and keys are those
// controller-runtime's cache reader looks up for client.MatchingFields (fieldIndexName,
// fieldIndexKey); TestEachCachedAgreesWithTheCacheReader lists through it on a real API server.
func indexInNamespace(ctx context.Context, c cache.Cache, obj client.Object, name string, extract client.IndexerFunc) error {
	informer, err := c.GetInformer(ctx, obj)
	if err != nil {
		return err
	}
	return informer.AddIndexers(toolscache.Indexers{fieldIndexName(name): namespacedIndexFunc(name, extract)})
}

// namespacedIndexFunc files an object under the key of each of extract's values in its
// namespace (fieldIndexKey).
func namespacedIndexFunc(name string, extract client.IndexerFunc) toolscache.IndexFunc {
	return func(o any) ([]string, error) {
		obj, ok := o.(client.Object)
		if !ok {
			return nil, fmt.Errorf("index %s: object of type %T is not an Object", name, o)
		}
		vals := extract(obj)
		keys := make([]string, 0, len(vals))
		for _, v := range vals {
			keys = append(keys, fieldIndexKey(obj.GetNamespace(), v))
		}
		return keys, nil
	}
}

// clustersUsing lists the Clusters in ns whose topology uses the ClusterClass (release) name.
func clustersUsing(ctx context.Context, c client.Reader, ns, release string) ([]clusterv1.Cluster, error) {
	var list clusterv1.ClusterList
	if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingFields{clusterClassIndex: release}); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// statusWriter writes the status of the operator's objects for the reconcilers of one manager,
// which share it (each holds it): it reads from the manager's client (its cache) and falls back
// to the API server (live) where the cache is known to lag behind this process's own writes.
type statusWriter struct {
	client client.Client
	// live reads from the API server directly (the manager's API reader); nil: the client only.
	live client.Reader
	// own remembers the versions this writer's writes replaced (writtenVersions).
	own *writtenVersions
}

// newStatusWriter returns the status writer of a manager's reconcilers: c is the manager's
// client, live its API reader (nil: read through c only).
func newStatusWriter(c client.Client, live client.Reader) *statusWriter {
	return &statusWriter{client: c, live: live, own: &writtenVersions{replaced: map[string]string{}}}
}

// managerStatusWriter is w, or when w is nil a new status writer of mgr's client and API reader.
func managerStatusWriter(w *statusWriter, mgr ctrl.Manager) *statusWriter {
	if w != nil {
		return w
	}
	return newStatusWriter(mgr.GetClient(), mgr.GetAPIReader())
}

// statusObject is an API object of ours with a status.
type statusObject interface {
	client.Object
	*csv1.ClusterStack | *csv1.ClusterStackRelease | *csv1.ClusterAddon | *csv1.ManagementOperator
}

// updateStatus re-reads obj, lets mutate change the fields of status its caller owns, and writes
// the status only when it changed. Several controllers write the same status, each its own
// fields (the API documents the writer of each field, docs/status-ownership.md has the table):
// each re-reads and retries on conflict, and mutate sets only its caller's fields, so none
// overwrites another's. mutate may run several times, once per attempt.
func updateStatus[T statusObject](ctx context.Context, w *statusWriter, obj T, mutate func(T)) error {
	return updateStatusIf(ctx, w, obj, func(o T) bool { mutate(o); return true })
}

// errStaleStatus is returned by updateStatusIf when mutate gave up: the object changed since
// the caller computed the status (for example its desired release moved).
var errStaleStatus = errors.New("status was computed from a stale object")

// updateStatusIf is updateStatus whose mutate may give up (return false) after seeing the
// re-read object; nothing is written then and errStaleStatus is returned.
func updateStatusIf[T statusObject](ctx context.Context, w *statusWriter, obj T, mutate func(T) bool) error {
	_, err := writeStatus(ctx, w, obj, func(o T) (bool, []statusEvent) { return mutate(o), nil })
	return err
}

// updateStatusEmit is updateStatusIf whose mutate also returns the Events its change means (a
// condition's transition, say): they are recorded on obj once, after the write that made the
// change succeeded; never from inside the retried mutation, and never for a write that failed,
// was given up or found nothing to change.
func updateStatusEmit[T statusObject](ctx context.Context, w *statusWriter, rec record.EventRecorder, obj T, mutate func(T) (bool, []statusEvent)) error {
	events, err := writeStatus(ctx, w, obj, mutate)
	return emitAfter(rec, obj, events, err)
}

// writeStatus is the one status write: re-read, mutate, write when changed, retry on conflict.
// It returns the events mutate decided on the attempt whose write succeeded (none when nothing
// was written).
func writeStatus[T statusObject](ctx context.Context, w *statusWriter, obj T, mutate func(T) (bool, []statusEvent)) ([]statusEvent, error) {
	var reader client.Reader = w.client
	live := w.live
	var written []statusEvent
	// retry.DefaultRetry: the retry reads the API server, not the cache, so a second attempt
	// rarely conflicts again; DefaultBackoff's growing pauses (up to a quarter second) would hold
	// a worker for nothing while a fleet converges.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		written = nil
		err := reader.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if live != nil && reader != live &&
			(apierrors.IsNotFound(err) || (err == nil && w.own.behind(obj))) {
			// Created a moment ago and not in the cache yet, or the cache has not seen this
			// process's last status write yet: the API server has it (a read now, not a
			// conflicting write).
			err = live.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		}
		if live != nil {
			reader = live // after a conflict the cache may lag behind: read the API
		}
		if err != nil {
			return client.IgnoreNotFound(err)
		}
		before := obj.DeepCopyObject()
		ok, events := mutate(obj)
		if !ok {
			return errStaleStatus
		}
		if equality.Semantic.DeepEqual(before, runtime.Object(obj)) {
			return nil
		}
		if l := log.FromContext(ctx).V(1); l.Enabled() {
			// Why a status is written (--zap-log-level=debug): to find writes that change nothing
			// a user would see.
			l.Info("writing status", "diff", cmp.Diff(before, runtime.Object(obj)))
		}
		replaced := obj.GetResourceVersion()
		if err := w.client.Status().Update(ctx, obj); err != nil {
			return err
		}
		w.own.wrote(obj, replaced)
		written = events
		return nil
	})
	return written, err
}

// writtenVersions remembers, per object, the resourceVersion a writer's last status write
// replaced: while the cache still shows that version, it is behind the write, and a status
// computed from it would conflict. At thousands of Clusters, reconciles woken right after a
// write made about one conflict (and a retry) per Cluster.
type writtenVersions struct {
	mu       sync.Mutex
	replaced map[string]string
}

func writtenKey(obj client.Object) string {
	return fmt.Sprintf("%T/%s/%s", obj, obj.GetNamespace(), obj.GetName())
}

func (w *writtenVersions) wrote(obj client.Object, replaced string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.replaced[writtenKey(obj)] = replaced
}

// behind reports whether obj, as read from the cache, is the version a write of this process
// replaced; once the cache has caught up, it forgets the object.
func (w *writtenVersions) behind(obj client.Object) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := writtenKey(obj)
	rv, ok := w.replaced[key]
	if !ok {
		return false
	}
	if rv == obj.GetResourceVersion() {
		return true
	}
	delete(w.replaced, key)
	return false
}

// statusEvent is an Event decided while a status is computed, recorded only once the status
// write succeeded (updateStatusEmit).
type statusEvent struct {
	// eventType is corev1.EventTypeNormal or corev1.EventTypeWarning.
	eventType, reason, message string
}

// normalEvent and warningEvent make statusEvents.
func normalEvent(reason, message string) statusEvent {
	return statusEvent{eventType: corev1.EventTypeNormal, reason: reason, message: message}
}

func warningEvent(reason, message string) statusEvent {
	return statusEvent{eventType: corev1.EventTypeWarning, reason: reason, message: message}
}

// emitAfter records events on obj when err is nil (the write they describe succeeded) and
// returns err.
func emitAfter(rec record.EventRecorder, obj runtime.Object, events []statusEvent, err error) error {
	if err != nil || rec == nil {
		return err
	}
	for _, e := range events {
		rec.Event(obj, e.eventType, e.reason, e.message)
	}
	return nil
}
