package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fieldowners"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/sortedjson"
)

// FieldOwner is the server-side apply field manager of everything the operator writes.
const FieldOwner = "clusterstack-operator"

// appliedHashAnnotation records the hash of what the operator last applied to an object, so
// an unchanged desired state costs no API write.
const appliedHashAnnotation = "clusterstack.io/applied-hash"

// Applier writes generated objects with server-side apply, and only when they differ from what
// it applied last: reconciling an unchanged state makes no API writes.
type Applier struct {
	Client client.Client
	Scheme *runtime.Scheme
	// APIReader reads from the API server, uncached: used for objects of PartialKinds the cache
	// does not have. Nil reads them through Client.
	APIReader client.Reader
	// PartialKinds are the kinds the manager's cache holds only some objects of (a label or
	// field selector: see CacheOptions).
	PartialKinds map[schema.GroupKind]bool
	// Informers, when set (the manager's cache), give the cached objects the applier compares
	// with what it would apply: read in place, not copied as a Get through Client copies them.
	// The applier reads only their metadata and never changes them. Nil: read through Client.
	Informers cache.Informers

	// seen remembers the generation each object had right after this process applied it. An
	// object whose generation moved on since was edited by someone else and is applied again
	// (drift correction). It is a cache: after a restart the hash annotation alone decides.
	mu   sync.Mutex
	seen map[string]appliedObject
}

// appliedObject is what the applier remembers of an object: its generation, and what it applied
// (a digest of the hash annotation; 0 when the object was only read since this process started).
type appliedObject struct {
	generation int64
	digest     uint64
}

// digestOf shortens a hash annotation to what appliedObject keeps.
func digestOf(hash string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(hash))
	return h.Sum64()
}

// Apply makes the object in the API match desired (its labels, annotations and spec), owned
// (as controller) by owner. desired must have its GVK set or be registered in the scheme.
// It returns true when it wrote; then desired's generation is the one the API server gave the
// object for that write (0 when the response did not say).
//
// It never takes over an object the operator does not own: when the object exists with another
// controller, or without a controller and without the operator's marks, Apply writes nothing and
// returns an *OwnershipConflictError (see checkOwnership), which callers detect with errors.As
// to report the conflict (Degraded) instead of retrying blindly.
func (a *Applier) Apply(ctx context.Context, owner client.Object, desired client.Object) (bool, error) {
	wrote, _, err := a.ApplyHashed(ctx, owner, desired)
	return wrote, err
}

// ApplyHashed is Apply that also returns the hash it applied (or found applied): with the hash
// and, for a ConfigMap, its configMapDataHash, Unchanged tells later whether the same apply would
// write, without the desired object's content.
func (a *Applier) ApplyHashed(ctx context.Context, owner client.Object, desired client.Object) (bool, string, error) {
	gvk, err := a.owned(owner, desired)
	if err != nil {
		return false, "", err
	}
	hash, err := hashOf(desired)
	if err != nil {
		return false, "", err
	}
	wrote, err := a.apply(ctx, gvk, desired, hash)
	return wrote, hash, err
}

// owned makes owner (when not nil) desired's controller and returns desired's kind.
func (a *Applier) owned(owner client.Object, desired client.Object) (schema.GroupVersionKind, error) {
	gvk, err := apiutil.GVKForObject(desired, a.Scheme)
	if err != nil || owner == nil {
		return gvk, err
	}
	return gvk, controllerutil.SetControllerReference(owner, desired, a.Scheme)
}

// Unchanged reports whether applying an object that desired names, with the given hash (as
// ApplyHashed returned it) and, for a ConfigMap, data whose configMapDataHash is dataHash, would
// write nothing, judged from the cache alone: the object is cached, owned by owner, carries the
// hash and has not been edited since (as Apply judges it). Only desired's kind, name, namespace
// and labels are read; its content may be left out. False (never an error) when the cache cannot
// tell: the caller applies the whole object then.
func (a *Applier) Unchanged(ctx context.Context, owner client.Object, desired client.Object, hash, dataHash string) bool {
	gvk, err := a.owned(owner, desired)
	if err != nil {
		return false
	}
	key := gvk.Kind + "/" + desired.GetNamespace() + "/" + desired.GetName()
	o, err := a.Scheme.New(gvk)
	if err != nil {
		return false
	}
	obj, ok := o.(client.Object)
	if !ok {
		return false
	}
	existing, err := a.cached(ctx, gvk, obj, client.ObjectKeyFromObject(desired))
	if err != nil || existing.GetDeletionTimestamp() != nil {
		return false
	}
	why, err := a.whyApply(gvk.Kind, key, existing, desired, hash, dataHash)
	return err == nil && why == ""
}

// whyApply says why the object of kind, as existing (not being deleted), is applied again (""
// when it is not): what was applied differs (hash), or someone edited it since (a ConfigMap's
// data, whose digest dataHash is when desired is a ConfigMap; the Flux shard label; the
// generation). An object of someone else is an *OwnershipConflictError, judged first: a change
// of controller does not change the generation.
func (a *Applier) whyApply(kind, key string, existing, desired client.Object, hash, dataHash string) (string, error) {
	if err := checkOwnership(kind, existing, metav1.GetControllerOfNoCopy(desired)); err != nil {
		return "", err
	}
	switch {
	case existing.GetAnnotations()[appliedHashAnnotation] != hash:
		return "changed", nil
	case dataEdited(existing, dataHash):
		return "data edited since applied", nil
	case existing.GetLabels()[fluxgen.FluxShardLabel] != desired.GetLabels()[fluxgen.FluxShardLabel]:
		// Labels move no generation; this one picks the Flux controllers that apply the object.
		return "Flux shard label edited since applied", nil
	case !a.unchangedSinceApply(key, existing.GetGeneration()):
		return "edited since applied", nil
	}
	return "", nil
}

// apply is Apply with desired's kind (owned) and hash (hashOf).
func (a *Applier) apply(ctx context.Context, gvk schema.GroupVersionKind, desired client.Object, hash string) (bool, error) {
	key := gvk.Kind + "/" + desired.GetNamespace() + "/" + desired.GetName()

	existing, err := a.current(ctx, gvk, client.ObjectKeyFromObject(desired))
	why := "not found"
	switch {
	case apierrors.IsNotFound(err):
		// Applied by this process a moment ago, exactly so, and not in the cache yet (the
		// reconcile was woken by another of its writes): the API server says whether it is there,
		// a read instead of a second write.
		if gen, ok, err := a.appliedNotCached(ctx, gvk, key, client.ObjectKeyFromObject(desired), hash); err != nil || ok {
			desired.SetGeneration(gen)
			return false, err
		}
	case err != nil:
		return false, fmt.Errorf("get %s: %w", key, err)
	case existing.GetDeletionTimestamp() != nil:
		return false, fmt.Errorf("%s is being deleted; waiting to recreate it", key)
	default:
		// Never take over an object of someone else: whyApply reports it instead.
		if why, err = a.whyApply(gvk.Kind, key, existing, desired, hash, dataHashOf(desired)); err != nil || why == "" {
			return false, err
		}
	}
	if l := log.FromContext(ctx).V(1); l.Enabled() {
		l.Info("applying", "object", key, "why", why) // --zap-log-level=debug: why a generated object is written
	}
	if why != "not found" {
		if err := a.claimForeignFields(ctx, gvk, key, client.ObjectKeyFromObject(desired)); err != nil {
			return false, err
		}
	}

	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(desired)
	if err != nil {
		return false, err
	}
	obj := &unstructured.Unstructured{Object: u}
	obj.SetGroupVersionKind(gvk)
	unstructured.RemoveNestedField(obj.Object, "status")
	unstructured.RemoveNestedField(obj.Object, "metadata", "creationTimestamp")
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[appliedHashAnnotation] = hash
	obj.SetAnnotations(ann)
	body, err := json.Marshal(obj.Object)
	if err != nil {
		return false, err
	}
	// The apply's response is only read for the generation it made: asked for as metadata (the
	// metadata client's PartialObjectMetadata), not as the whole object decoded into a map.
	written := &metav1.PartialObjectMetadata{}
	written.SetGroupVersionKind(gvk)
	written.SetNamespace(obj.GetNamespace())
	written.SetName(obj.GetName())
	if err := a.Client.Patch(ctx, written, client.RawPatch(types.ApplyPatchType, body), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return false, fmt.Errorf("apply %s: %w", key, err)
	}
	a.remember(key, written.GetGeneration(), hash)
	// The caller learns the generation its write made: the cache may not have seen it yet.
	desired.SetGeneration(written.GetGeneration())
	return true, nil
}

// claimForeignFields makes the operator the field manager of every field of its domain that
// another manager owns in the object as the API server has it (fieldowners.Claim: fields
// someone added to the spec, a ConfigMap's data, labels and annotations, and the fields of an
// object adopted by its managed-by label), so that the apply that follows removes what the
// operator does not apply: an applied object holds exactly what the operator renders, whoever
// wrote to it before. It writes only the object's managedFields, and only when another manager
// owns such a field, guarded by the resourceVersion it read. Without an APIReader it does nothing.
func (a *Applier) claimForeignFields(ctx context.Context, gvk schema.GroupVersionKind, key string, objKey client.ObjectKey) error {
	if a.APIReader == nil {
		return nil
	}
	live := &metav1.PartialObjectMetadata{}
	live.SetGroupVersionKind(gvk)
	if err := a.APIReader.Get(ctx, objKey, live); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("get %s: %w", key, err))
	}
	managed, from, err := fieldowners.Claim(live.ManagedFields, FieldOwner, gvk.GroupVersion().String(), metav1.Now())
	if err != nil || len(from) == 0 {
		return err
	}
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/resourceVersion", "value": live.ResourceVersion},
		{"op": "replace", "path": "/metadata/managedFields", "value": managed},
	})
	if err != nil {
		return err
	}
	if err := a.Client.Patch(ctx, live, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		return fmt.Errorf("take over the fields %v own in %s: %w", from, key, err)
	}
	log.FromContext(ctx).Info("took over fields of other field managers before applying", "object", key, "managers", from)
	return nil
}

// appliedNotCached is true when key, which the cache does not have, was last applied by this
// process with hash and the API server has it so (not being deleted), with its generation.
func (a *Applier) appliedNotCached(ctx context.Context, gvk schema.GroupVersionKind, key string, objKey client.ObjectKey, hash string) (int64, bool, error) {
	a.mu.Lock()
	last, ok := a.seen[key]
	a.mu.Unlock()
	if !ok || last.digest != digestOf(hash) || a.APIReader == nil {
		return 0, false, nil
	}
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(gvk)
	if err := a.APIReader.Get(ctx, objKey, meta); err != nil {
		if apierrors.IsNotFound(err) {
			return 0, false, nil // deleted since: applied again
		}
		return 0, false, fmt.Errorf("get %s: %w", key, err)
	}
	if meta.DeletionTimestamp != nil || meta.Annotations[appliedHashAnnotation] != hash || meta.Generation != last.generation {
		return 0, false, nil
	}
	return meta.Generation, true, nil
}

// current reads the object as it is: from the manager's cache for the kinds it holds whole (a
// typed read: an unstructured one would bypass the cache and cost a request per apply), and, for
// kinds whose cache holds only part of the objects (PartialKinds) or that the scheme does not
// know, its metadata from the API server when the cache does not have it, so that an object
// made by someone else is still seen (and not taken over).
func (a *Applier) current(ctx context.Context, gvk schema.GroupVersionKind, key client.ObjectKey) (client.Object, error) {
	if o, err := a.Scheme.New(gvk); err == nil {
		if obj, ok := o.(client.Object); ok {
			existing, err := a.cached(ctx, gvk, obj, key)
			if !apierrors.IsNotFound(err) || !a.PartialKinds[gvk.GroupKind()] || a.APIReader == nil {
				return existing, err
			}
		}
	}
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(gvk)
	reader := a.APIReader
	if reader == nil {
		reader = a.Client
	}
	return meta, reader.Get(ctx, key, meta)
}

// cached is the object of kind gvk (obj, a new object of that kind) named key as the manager's
// cache has it: the informer's own object when a.Informers gives an informer with an indexer
// (read only: callers must not change it), otherwise read into obj through a.Client (a copy). A
// NotFound error when the cache does not have it.
func (a *Applier) cached(ctx context.Context, gvk schema.GroupVersionKind, obj client.Object, key client.ObjectKey) (client.Object, error) {
	if a.Informers != nil {
		inf, err := a.Informers.GetInformer(ctx, obj)
		if err != nil {
			return nil, err
		}
		if ii, ok := inf.(indexedInformer); ok {
			item, found, err := ii.GetIndexer().GetByKey(toolscache.ObjectName{Namespace: key.Namespace, Name: key.Name}.String())
			if err != nil {
				return nil, err
			}
			if cached, ok := item.(client.Object); found && ok {
				return cached, nil
			}
			return nil, apierrors.NewNotFound(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, key.Name)
		}
	}
	return obj, a.Client.Get(ctx, key, obj)
}

func (a *Applier) unchangedSinceApply(key string, generation int64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	last, ok := a.seen[key]
	if !ok {
		// First sight since this process started: trust the hash annotation.
		if a.seen == nil {
			a.seen = map[string]appliedObject{}
		}
		a.seen[key] = appliedObject{generation: generation}
		return true
	}
	return last.generation == generation
}

func (a *Applier) remember(key string, generation int64, hash string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.seen == nil {
		a.seen = map[string]appliedObject{}
	}
	if generation == 0 {
		delete(a.seen, key) // the apply response is not decoded into obj; learn it on the next read
		return
	}
	a.seen[key] = appliedObject{generation: generation, digest: digestOf(hash)}
}

// Forget drops what the applier remembers of a deleted object.
func (a *Applier) Forget(kind string, key types.NamespacedName) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.seen, kind+"/"+key.Namespace+"/"+key.Name)
}

// cachedDataHashAnnotation is set by the cache's ConfigMap transform (stripConfigMapData) on
// the cached copy of a ConfigMap, whose data the cache does not keep: configMapDataHash of the
// data the API server has. It is never written to the API server.
const cachedDataHashAnnotation = "clusterstack.io/cached-data-hash"

// configMapDataHash is a digest of a ConfigMap's data and binaryData.
func configMapDataHash(data map[string]string, binary map[string][]byte) string {
	b, _ := json.Marshal(struct {
		D map[string]string `json:"d"`
		B map[string][]byte `json:"b"`
	}{data, binary}) // maps marshal with sorted keys
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// dataHashOf is the configMapDataHash of desired's data when it is a ConfigMap, else "".
func dataHashOf(desired client.Object) string {
	if cm, ok := desired.(*corev1.ConfigMap); ok {
		return configMapDataHash(cm.Data, cm.BinaryData)
	}
	return ""
}

// dataEdited reports whether dataHash, the configMapDataHash of a ConfigMap's desired data, differs
// from the data of existing, its cached copy: someone edited the data, which moves no generation
// and no annotation of the operator's. Objects not read from the cache (no digest) and objects
// other than ConfigMaps (dataHash "") are not judged.
func dataEdited(existing client.Object, dataHash string) bool {
	if dataHash == "" {
		return false
	}
	got, ok := existing.GetAnnotations()[cachedDataHashAnnotation]
	return ok && got != dataHash
}

// hashOf is the digest of what applying obj would write: its labels, annotations (but the
// applied hash), owner references and everything but its metadata and status, encoded as
// encoding/json writes obj converted to an unstructured object (sortedjson), so that the hash of
// an object does not change with the operator's version.
func hashOf(obj client.Object) (string, error) {
	typed, err := json.Marshal(obj)
	if err != nil {
		return "", err
	}
	x, err := sortedjson.Object(make([]byte, 0, len(typed)), typed, "metadata", "status")
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(struct {
		Labels      map[string]string `json:"l"`
		Annotations map[string]string `json:"a"`
		Owners      any               `json:"o"`
		Object      json.RawMessage   `json:"x"`
	}{obj.GetLabels(), withoutHash(obj.GetAnnotations()), obj.GetOwnerReferences(), x})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16]), nil
}

func withoutHash(a map[string]string) map[string]string {
	if _, ok := a[appliedHashAnnotation]; !ok {
		return a
	}
	out := make(map[string]string, len(a))
	for k, v := range a {
		if k != appliedHashAnnotation {
			out[k] = v
		}
	}
	return out
}

// OwnershipConflictError reports an object the operator would have to take over to apply it: it
// exists and is controlled by another owner, or was not created by the operator. Apply returns
// it without writing anything. Callers detect it with errors.As and report it (Degraded, with
// Error() as the message, which names the object and its owner); it resolves only when someone
// deletes or hands over the object, so it is worth a periodic retry, not a hot loop.
type OwnershipConflictError struct {
	// Kind, Namespace and Name identify the existing object.
	Kind, Namespace, Name string
	// Owner describes the existing object's controller ("ClusterAddon demo/a-b"), or is empty
	// when it has none (the object was not created by the operator).
	Owner string
	// Want describes the owner the operator applies the object for ("ClusterAddon demo/a"), or
	// is empty when it applies it without an owner.
	Want string
}

// Error says which object exists, who controls it, and for whom the operator wanted it, e.g.
// "HelmRelease demo/a-b-c exists and is controlled by ClusterAddon demo/a-b, not by ClusterAddon
// demo/a: refusing to take it over", or "ConfigMap demo/x exists and is not managed by
// clusterstack-operator (no controller, no app.kubernetes.io/managed-by=clusterstack-operator
// label): refusing to take it over for ClusterAddon demo/a".
func (e *OwnershipConflictError) Error() string {
	obj := e.Kind + " " + objectKey(e.Namespace, e.Name)
	if e.Owner != "" {
		want := e.Want
		if want == "" {
			want = FieldOwner
		}
		return fmt.Sprintf("%s exists and is controlled by %s, not by %s: refusing to take it over", obj, e.Owner, want)
	}
	msg := fmt.Sprintf("%s exists and is not managed by %s (no controller, no %s=%s label): refusing to take it over",
		obj, FieldOwner, csv1.ManagedByLabel, csv1.ManagedByValue)
	if e.Want != "" {
		msg += " for " + e.Want
	}
	return msg
}

// checkOwnership decides whether the operator may apply an object of the given kind over
// existing, the object of that name already in the API; want is the controller reference the
// applied object carries (nil when it has none). It is the whole ownership decision, without I/O.
//
//   - existing has a controller: applying is allowed only when that controller is want (same
//     UID, API group, kind and name), whatever its labels (the apply restores them);
//   - existing has no controller: applying is allowed only when the operator made it, i.e. it
//     has the app.kubernetes.io/managed-by=clusterstack-operator label or the Applier's
//     applied-hash annotation (an object orphaned from its owner is adopted).
//
// Otherwise it returns an *OwnershipConflictError.
func checkOwnership(kind string, existing metav1.Object, want *metav1.OwnerReference) error {
	conflict := &OwnershipConflictError{Kind: kind, Namespace: existing.GetNamespace(), Name: existing.GetName()}
	if want != nil {
		conflict.Want = describeOwner(existing.GetNamespace(), *want, nil)
	}
	if ctrl := metav1.GetControllerOfNoCopy(existing); ctrl != nil {
		if want != nil && sameOwner(*ctrl, *want) {
			return nil
		}
		conflict.Owner = describeOwner(existing.GetNamespace(), *ctrl, want)
		if want != nil && conflict.Owner == conflict.Want {
			// Same kind and name, another UID (a deleted and recreated owner): tell them apart.
			conflict.Owner += " (uid " + string(ctrl.UID) + ")"
			conflict.Want += " (uid " + string(want.UID) + ")"
		}
		return conflict
	}
	if existing.GetLabels()[csv1.ManagedByLabel] == csv1.ManagedByValue {
		return nil
	}
	if _, ok := existing.GetAnnotations()[appliedHashAnnotation]; ok {
		return nil
	}
	return conflict
}

// sameOwner reports whether two owner references name the same object: same UID, API group
// (any version), kind and name.
func sameOwner(a, b metav1.OwnerReference) bool {
	return a.UID == b.UID && a.Kind == b.Kind && a.Name == b.Name && groupOf(a.APIVersion) == groupOf(b.APIVersion)
}

func groupOf(apiVersion string) string {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return apiVersion
	}
	return gv.Group
}

// describeOwner is "Kind namespace/name" of an owner reference: a namespaced object's owners are
// in its namespace (a cluster-scoped owner is shown with it too: the reference does not say).
// The API group is added when other has the same kind in another group.
func describeOwner(ns string, ref metav1.OwnerReference, other *metav1.OwnerReference) string {
	kind := ref.Kind
	if other != nil && other.Kind == ref.Kind && groupOf(other.APIVersion) != groupOf(ref.APIVersion) {
		if g := groupOf(ref.APIVersion); g != "" {
			kind += "." + g
		}
	}
	return kind + " " + objectKey(ns, ref.Name)
}

func objectKey(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}
