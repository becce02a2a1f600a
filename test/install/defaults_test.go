package install_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/clusterstack-io/clusterstack-operator/internal/manifests"
	"github.com/clusterstack-io/clusterstack-operator/test/install"
)

// TestDefaultsAreLockedDown: the shipped install (config/default, and the chart with its default
// values) runs every generated Flux object as the tenant ServiceAccount the examples create in
// each team namespace (examples/00-namespace.yaml, bound to config/tenant's ClusterRole), never as
// Flux's own identity, and checks Flux's lockdown (--flux-lockdown defaults to detect).
func TestDefaultsAreLockedDown(t *testing.T) {
	root := repoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "examples", "00-namespace.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tenantSA := ""
	for _, doc := range strings.Split(string(b), "\n---\n") {
		sa := &corev1.ServiceAccount{}
		if err := yaml.Unmarshal([]byte(doc), sa); err != nil {
			t.Fatal(err)
		}
		if sa.Kind == "ServiceAccount" {
			tenantSA = sa.Name
		}
	}
	if tenantSA == "" {
		t.Fatal("examples/00-namespace.yaml creates no ServiceAccount")
	}
	want := "--default-service-account=" + tenantSA

	kust, err := manifests.Build(filepath.Join(root, "config", "default"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := install.Render(filepath.Join(root, install.ChartDir), install.DefaultReleaseName, install.DefaultNamespace, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, objs := range map[string][]map[string]any{"config/default": objects(kust), "chart": objects(r.Objects)} {
		var args []string
		for _, o := range objs {
			if o["kind"] != "Deployment" {
				continue
			}
			cs, _ := o["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)
			for _, a := range cs[0].(map[string]any)["args"].([]any) {
				args = append(args, a.(string))
			}
		}
		if !slices.Contains(args, want) {
			t.Errorf("%s: the manager runs with %v, want %s: without it, a ClusterStack naming no ServiceAccount is applied as Flux's own identity wherever Flux runs without its lockdown", name, args, want)
		}
		if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--flux-lockdown=") }) {
			t.Errorf("%s: the manager runs with %v: the default install detects Flux's lockdown (--flux-lockdown=detect, the default)", name, args)
		}
	}
}

func objects[T interface{ UnstructuredContent() map[string]any }](in []T) []map[string]any {
	out := make([]map[string]any, 0, len(in))
	for _, o := range in {
		out = append(out, o.UnstructuredContent())
	}
	return out
}
