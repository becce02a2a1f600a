package controllers

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestRenderInputs(t *testing.T) {
	obj := func(name, rv string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("infrastructure.cluster.x-k8s.io/v1beta2")
		u.SetKind("AWSCluster")
		u.SetName(name)
		u.SetUID(types.UID("uid-" + name))
		u.SetResourceVersion(rv)
		return u
	}
	var none *unstructured.Unstructured
	base := renderInputs([]string{"addon", "sha256:1", "v1"}, obj("a", "1"), none)
	for _, c := range []struct {
		name string
		got  [16]byte
		same bool
	}{
		{"the same inputs", renderInputs([]string{"addon", "sha256:1", "v1"}, obj("a", "1"), none), true},
		{"a new resourceVersion", renderInputs([]string{"addon", "sha256:1", "v1"}, obj("a", "2"), none), false},
		{"the object in another place", renderInputs([]string{"addon", "sha256:1", "v1"}, none, obj("a", "1")), false},
		{"another artifact", renderInputs([]string{"addon", "sha256:2", "v1"}, obj("a", "1"), none), false},
		{"strings split elsewhere", renderInputs([]string{"addon", "sha256:1v", "1"}, obj("a", "1"), none), false},
		{"an object more", renderInputs([]string{"addon", "sha256:1", "v1"}, obj("a", "1"), none, obj("o", "1")), false},
		{"an untyped nil", renderInputs([]string{"addon", "sha256:1", "v1"}, obj("a", "1"), client.Object(nil)), true},
	} {
		if (c.got == base) != c.same {
			t.Errorf("%s: same digest %v, want %v", c.name, c.got == base, c.same)
		}
	}
}
