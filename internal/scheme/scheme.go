// Package scheme holds the one runtime.Scheme the operator, its kubectl plugin and its envtest
// suites read and write objects with.
package scheme

import (
	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// New returns a scheme with every type the operator reads or writes: Kubernetes' own, the
// CustomResourceDefinitions (for the Runtime Extension's and the requirements' checks), the
// operator's, Cluster API's (v1beta2) and Flux's source, kustomize and helm kinds.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(csv1.AddToScheme(s))
	utilruntime.Must(clusterv1.AddToScheme(s))
	utilruntime.Must(sourcev1.AddToScheme(s))
	utilruntime.Must(kustomizev1.AddToScheme(s))
	utilruntime.Must(helmv2.AddToScheme(s))
	return s
}
