package hooks

import (
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"

	"github.com/clusterstack-io/clusterstack-operator/internal/manifests"
)

// tenantSelector is the namespaceSelector every ExtensionConfig of the operator carries: CAPI
// calls the hooks only for Clusters of tenant namespaces.
var tenantSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"clusterstack.io/tenant": "true"}}

func TestExtensionConfig(t *testing.T) {
	ca := []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
	tests := []struct {
		url     string
		ca      []byte
		wantErr string
	}{
		{url: "https://127.0.0.1:9443", ca: ca},
		{url: "https://operator.example.com/prefix", ca: ca},
		{url: "http://127.0.0.1:9443", ca: ca, wantErr: "must be https://host"},
		{url: "https://user:pw@127.0.0.1:9443", ca: ca, wantErr: "without user, query or fragment"},
		{url: "https://127.0.0.1:9443?x=1", ca: ca, wantErr: "without user, query or fragment"},
		{url: "https:///path", ca: ca, wantErr: "must be https://host"},
		{url: "https://127.0.0.1:9443", wantErr: "the CA bundle is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			ec, err := ExtensionConfig(tt.url, tt.ca)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ec.Name != ExtensionConfigName || ec.APIVersion != "runtime.cluster.x-k8s.io/v1beta2" || ec.Kind != "ExtensionConfig" ||
				ec.Spec.ClientConfig.URL != tt.url || string(ec.Spec.ClientConfig.CABundle) != string(ca) ||
				ec.Spec.ClientConfig.Service.IsDefined() || !equality.Semantic.DeepEqual(ec.Spec.NamespaceSelector, tenantSelector) {
				t.Errorf("ExtensionConfig = %+v", ec)
			}
		})
	}
}

// TestExtensionConfigManifest: config/runtimeextension points CAPI at the webhook Service of
// config/webhook and has CAPI inject the CA of the serving certificate's Secret.
func TestExtensionConfigManifest(t *testing.T) {
	root := filepath.Join("..", "..", "config")
	objs, err := manifests.Build(filepath.Join(root, "runtimeextension"))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 || objs[0].GetKind() != "ExtensionConfig" {
		t.Fatalf("config/runtimeextension has %d objects, want one ExtensionConfig", len(objs))
	}
	ec := &runtimev1.ExtensionConfig{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(objs[0].Object, ec, true); err != nil {
		t.Fatal(err)
	}
	svc, err := manifests.Build(filepath.Join(root, "webhook"))
	if err != nil {
		t.Fatal(err)
	}
	var service string
	var port int32
	for _, o := range svc {
		if o.GetKind() == "Service" {
			s := &corev1.Service{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, s); err != nil {
				t.Fatal(err)
			}
			service = s.Namespace + "/" + s.Name
			if len(s.Spec.Ports) == 1 {
				port = s.Spec.Ports[0].Port
			}
		}
	}
	certs, err := manifests.Build(filepath.Join(root, "webhook", "certmanager"))
	if err != nil {
		t.Fatal(err)
	}
	secret := ""
	for _, o := range certs {
		if o.GetKind() == "Certificate" {
			name, _, _ := unstructured.NestedString(o.Object, "spec", "secretName")
			secret = o.GetNamespace() + "/" + name
		}
	}
	s := ec.Spec.ClientConfig.Service
	if got := s.Namespace + "/" + s.Name; got != service || s.Port == nil || *s.Port != port {
		t.Errorf("ExtensionConfig calls %s port %v, the webhook Service is %s port %d", got, s.Port, service, port)
	}
	if got := ec.Annotations[runtimev1.InjectCAFromSecretAnnotation]; got != secret || secret == "/" {
		t.Errorf("CA injected from %q, the serving certificate's Secret is %q", got, secret)
	}
	if ec.Name != ExtensionConfigName || ec.Spec.ClientConfig.URL != "" {
		t.Errorf("ExtensionConfig = %+v", ec)
	}
	if !equality.Semantic.DeepEqual(ec.Spec.NamespaceSelector, tenantSelector) {
		t.Errorf("config/runtimeextension's namespaceSelector = %v, want %v: an operator outage would hold the upgrade of Clusters outside tenant namespaces", ec.Spec.NamespaceSelector, tenantSelector)
	}
}
