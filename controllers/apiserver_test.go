package controllers

import (
	"os"
	"path/filepath"
	"testing"

	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// startAPIServer starts a real kube-apiserver and etcd (bin/, built by `make tools`) for one
// test, with the operator's CRDs when withCRDs, and stops them when the test ends.
func startAPIServer(t *testing.T, withCRDs bool) *rest.Config {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "bin")
	for _, f := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(bin, f)); err != nil {
			t.Fatalf("this test runs a real API server: %s is missing; run `make tools` (make test does)", filepath.Join(bin, f))
		}
	}
	env := &envtest.Environment{BinaryAssetsDirectory: bin, Scheme: clientgoscheme.Scheme}
	if withCRDs {
		env.CRDDirectoryPaths = []string{filepath.Join(root, "config", "crd", "bases")}
		env.ErrorIfCRDPathMissing = true
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	return cfg
}
