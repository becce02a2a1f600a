package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "clusterstack.io", Version: "v1alpha1"}

	// SchemeBuilder collects the API's types (each types file registers its own) and adds them
	// to a scheme.
	SchemeBuilder = &schemeBuilder{}

	// AddToScheme adds the API's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// schemeBuilder does what controller-runtime's deprecated scheme.Builder did, with apimachinery
// alone: an API package should be cheap to import.
type schemeBuilder struct {
	objects []runtime.Object
}

// Register adds objects to the types AddToScheme adds.
func (b *schemeBuilder) Register(objects ...runtime.Object) {
	b.objects = append(b.objects, objects...)
}

// AddToScheme adds the registered types and the group version's meta types to s.
func (b *schemeBuilder) AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, b.objects...)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
