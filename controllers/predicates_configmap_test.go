package controllers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// TestConfigMapEdited: a generated ConfigMap's update wakes its ClusterAddon when its data (the
// cache's digest, stripConfigMapData), labels or annotations change, and not for a write that
// changes nothing of that; the cache's digest follows the data.
func TestConfigMapEdited(t *testing.T) {
	cached := func(data map[string]string, labels map[string]string) *corev1.ConfigMap {
		o, err := stripConfigMapData(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c1-values", Labels: labels, ResourceVersion: "1"}, Data: data})
		if err != nil {
			t.Fatal(err)
		}
		return o.(*corev1.ConfigMap)
	}
	p := configMapEdited()
	base := cached(map[string]string{"a": "1"}, map[string]string{"l": "x"})
	if base.Data != nil || base.Annotations[cachedDataHashAnnotation] != configMapDataHash(map[string]string{"a": "1"}, nil) {
		t.Fatalf("cached copy: data %v, annotations %v", base.Data, base.Annotations)
	}
	same := base.DeepCopy()
	same.ResourceVersion = "2"
	for name, tc := range map[string]struct {
		next *corev1.ConfigMap
		want bool
	}{
		"a write that changes nothing the operator renders": {same, false},
		"the data edited": {cached(map[string]string{"a": "2"}, map[string]string{"l": "x"}), true},
		"a key added":     {cached(map[string]string{"a": "1", "b": "2"}, map[string]string{"l": "x"}), true},
		"a label changed": {cached(map[string]string{"a": "1"}, map[string]string{"l": "y"}), true},
	} {
		if got := p.Update(event.UpdateEvent{ObjectOld: base, ObjectNew: tc.next}); got != tc.want {
			t.Errorf("%s: %v, want %v", name, got, tc.want)
		}
	}
	if p.Create(event.CreateEvent{Object: base}) {
		t.Error("a creation wakes the ClusterAddon: the reconcile that applied it made it")
	}
}
