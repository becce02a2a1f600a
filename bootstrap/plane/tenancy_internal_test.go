package plane

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/clusterstack-io/clusterstack-operator/internal/hooks"
)

// TestTenantNamespacesAreSelected: the namespaces the plane (TenantObjects) and the demo
// (examples/00-namespace.yaml) create for teams are selected by the ExtensionConfig's
// namespaceSelector, so that Cluster API calls the Runtime Extension for their Clusters, and a
// namespace without the label is not.
func TestTenantNamespacesAreSelected(t *testing.T) {
	sel, err := metav1.LabelSelectorAsSelector(hooks.NamespaceSelector())
	if err != nil {
		t.Fatal(err)
	}
	var nss []*corev1.Namespace
	for _, o := range TenantObjects("team-a", DefaultFluxServiceAccount) {
		if ns, ok := o.(*corev1.Namespace); ok {
			nss = append(nss, ns)
		}
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", "00-namespace.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(b), "\n---\n") {
		ns := &corev1.Namespace{}
		if err := yaml.Unmarshal([]byte(doc), ns); err != nil {
			t.Fatal(err)
		}
		if ns.Kind == "Namespace" {
			nss = append(nss, ns)
		}
	}
	if len(nss) != 2 {
		t.Fatalf("found %d namespaces, want TenantObjects' and the example's", len(nss))
	}
	for _, ns := range nss {
		if !sel.Matches(labels.Set(ns.Labels)) {
			t.Errorf("namespace %s (labels %v) is not selected by the Runtime Extension's namespaceSelector %s", ns.Name, ns.Labels, sel)
		}
	}
	if sel.Matches(labels.Set{}) {
		t.Errorf("namespaceSelector %s selects an unlabelled namespace", sel)
	}
}
