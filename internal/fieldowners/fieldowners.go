// Package fieldowners decides which server-side apply field ownerships of a generated object the
// operator takes over before it applies the object: every field of its domain (the spec, a
// ConfigMap's data, labels and annotations) that another field manager owns. Applied with
// force, the operator then owns exactly what it applies, and a field that someone else added
// (an extra key in a values ConfigMap, spec.postRenderers on a HelmRelease, a
// sharding.fluxcd.io/key label) is removed by the apply instead of surviving it. It has no
// client: the Applier reads the object's managedFields and writes the result.
//
// Left to their owners: Flux's finalizers, the status, owner references, spec.suspend (Flux's
// documented way for a person to pause an object) and Flux's reconcile.fluxcd.io/ request
// annotations.
package fieldowners

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// domainRoots are the top-level fields whose every descendant the operator owns.
var domainRoots = map[string]bool{"spec": true, "data": true, "binaryData": true}

// keptAnnotationPrefixes are the annotations a person or Flux's CLI sets on generated objects
// that stay with whoever set them.
var keptAnnotationPrefixes = []string{"reconcile.fluxcd.io/"}

// inDomain reports whether the operator takes p over from another manager: a field under a
// domain root, or a label or annotation key (the maps themselves, which several managers own
// together, stay as they are).
func inDomain(p fieldpath.Path) bool {
	if len(p) < 2 || p[0].FieldName == nil {
		return false
	}
	root := *p[0].FieldName
	switch {
	case domainRoots[root]:
		return root != "spec" || p[1].FieldName == nil || *p[1].FieldName != "suspend"
	case root != "metadata" || len(p) < 3 || p[1].FieldName == nil || p[2].FieldName == nil:
		return false
	}
	switch *p[1].FieldName {
	case "labels":
		return true
	case "annotations":
		for _, prefix := range keptAnnotationPrefixes {
			if strings.HasPrefix(*p[2].FieldName, prefix) {
				return false
			}
		}
		return true
	}
	return false
}

// Claim returns managedFields with every field of the operator's domain that a manager other
// than owner owns (on the main resource: status is a subresource of its own) moved into owner's
// Apply entry, which is created (for apiVersion, at now) when there is none; entries left empty
// are dropped. claimedFrom names the managers fields were taken from, sorted; empty when
// nothing moved (then out is managedFields).
func Claim(managedFields []metav1.ManagedFieldsEntry, owner, apiVersion string, now metav1.Time) (out []metav1.ManagedFieldsEntry, claimedFrom []string, err error) {
	claimed := &fieldpath.Set{}
	var rest []metav1.ManagedFieldsEntry
	ours := -1
	for _, e := range managedFields {
		if e.Manager == owner && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == "" {
			ours = len(rest)
			rest = append(rest, e)
			continue
		}
		if e.Manager == owner || e.Subresource != "" || e.FieldsV1 == nil {
			rest = append(rest, e)
			continue
		}
		set, err := decode(e.FieldsV1)
		if err != nil {
			return nil, nil, fmt.Errorf("managedFields of %s: %w", e.Manager, err)
		}
		take := &fieldpath.Set{}
		set.Iterate(func(p fieldpath.Path) {
			if inDomain(p) {
				take.Insert(p)
			}
		})
		if take.Empty() {
			rest = append(rest, e)
			continue
		}
		claimedFrom = append(claimedFrom, e.Manager)
		claimed = claimed.Union(take)
		left := set.Difference(take)
		if left.Empty() {
			continue
		}
		if e.FieldsV1, err = encode(left); err != nil {
			return nil, nil, err
		}
		rest = append(rest, e)
	}
	if len(claimedFrom) == 0 {
		return managedFields, nil, nil
	}
	sort.Strings(claimedFrom)
	if ours < 0 {
		rest = append(rest, metav1.ManagedFieldsEntry{Manager: owner, Operation: metav1.ManagedFieldsOperationApply,
			APIVersion: apiVersion, Time: &now, FieldsType: "FieldsV1"})
		ours = len(rest) - 1
	}
	e := &rest[ours]
	mine := &fieldpath.Set{}
	if e.FieldsV1 != nil {
		if mine, err = decode(e.FieldsV1); err != nil {
			return nil, nil, fmt.Errorf("managedFields of %s: %w", owner, err)
		}
	}
	if e.FieldsV1, err = encode(mine.Union(claimed)); err != nil {
		return nil, nil, err
	}
	return rest, claimedFrom, nil
}

func decode(f *metav1.FieldsV1) (*fieldpath.Set, error) {
	s := &fieldpath.Set{}
	if err := s.FromJSON(bytes.NewReader(f.GetRawBytes())); err != nil {
		return nil, err
	}
	return s, nil
}

func encode(s *fieldpath.Set) (*metav1.FieldsV1, error) {
	b, err := s.ToJSON()
	if err != nil {
		return nil, err
	}
	f := &metav1.FieldsV1{}
	f.SetRawBytes(b)
	return f, nil
}
