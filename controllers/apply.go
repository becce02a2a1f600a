package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
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

	// seen remembers the generation each object had right after this process applied it. An
	// object whose generation moved on since was edited by someone else and is applied again
	// (drift correction). It is a cache: after a restart the hash annotation alone decides.
	mu   sync.Mutex
	seen map[string]int64
}

// Apply makes the object in the API match desired (its labels, annotations and spec), owned
// (as controller) by owner. desired must have its GVK set or be registered in the scheme.
// It returns true when it wrote.
func (a *Applier) Apply(ctx context.Context, owner client.Object, desired client.Object) (bool, error) {
	gvk, err := apiutil.GVKForObject(desired, a.Scheme)
	if err != nil {
		return false, err
	}
	if owner != nil {
		if err := controllerutil.SetControllerReference(owner, desired, a.Scheme); err != nil {
			return false, err
		}
	}
	hash, err := hashOf(desired)
	if err != nil {
		return false, err
	}
	key := gvk.Kind + "/" + desired.GetNamespace() + "/" + desired.GetName()

	existing := &unstructured.Unstructured{}
	existing.SetGroupVersionKind(gvk)
	err = a.Client.Get(ctx, client.ObjectKeyFromObject(desired), existing)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return false, fmt.Errorf("get %s: %w", key, err)
	case existing.GetDeletionTimestamp() != nil:
		return false, fmt.Errorf("%s is being deleted; waiting to recreate it", key)
	case existing.GetAnnotations()[appliedHashAnnotation] == hash && a.unchangedSinceApply(key, existing.GetGeneration()):
		return false, nil
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
	if err := a.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return false, fmt.Errorf("apply %s: %w", key, err)
	}
	a.remember(key, obj.GetGeneration())
	return true, nil
}

func (a *Applier) unchangedSinceApply(key string, generation int64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	g, ok := a.seen[key]
	if !ok {
		// First sight since this process started: trust the hash annotation.
		if a.seen == nil {
			a.seen = map[string]int64{}
		}
		a.seen[key] = generation
		return true
	}
	return g == generation
}

func (a *Applier) remember(key string, generation int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.seen == nil {
		a.seen = map[string]int64{}
	}
	if generation == 0 {
		delete(a.seen, key) // the apply response is not decoded into obj; learn it on the next read
		return
	}
	a.seen[key] = generation
}

// Forget drops what the applier remembers of a deleted object.
func (a *Applier) Forget(kind string, key types.NamespacedName) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.seen, kind+"/"+key.Namespace+"/"+key.Name)
}

func hashOf(obj client.Object) (string, error) {
	b, err := json.Marshal(struct {
		Labels      map[string]string `json:"l"`
		Annotations map[string]string `json:"a"`
		Owners      any               `json:"o"`
		Object      any               `json:"x"`
	}{obj.GetLabels(), withoutHash(obj.GetAnnotations()), obj.GetOwnerReferences(), specOf(obj)})
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

// specOf returns everything of an object but its metadata and status.
func specOf(obj client.Object) any {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil
	}
	delete(u, "metadata")
	delete(u, "status")
	return u
}
