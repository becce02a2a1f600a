package stack

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProviderKinds: the SCS-like OpenStack stack's cluster-class creates an ORC Image besides
// its ClusterClass and templates; the reference stack creates nothing else; groups the reader
// cannot read, templated kinds and subcharts' objects are left out; nothing is rendered.
func TestProviderKinds(t *testing.T) {
	all := func(string) bool { return true }
	kinds := func(dir string, readable func(string) bool) []ProviderKind {
		t.Helper()
		s, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		return ProviderKinds(dir, s, readable)
	}
	scs := filepath.Join("testdata", "scs", "providers", "openstack", "scs")
	if got := kinds(scs, all); len(got) != 1 || got[0] != (ProviderKind{APIVersion: "openstack.k-orc.cloud/v1alpha1", Kind: "Image"}) {
		t.Errorf("openstack/scs: %+v", got)
	}
	if got := kinds(scs, func(g string) bool { return strings.HasSuffix(g, ".cluster.x-k8s.io") }); len(got) != 0 {
		t.Errorf("openstack/scs without the ORC group: %+v", got)
	}
	ref := filepath.Join("..", "..", "stacks", "aws", "base", "1-36")
	if got := kinds(ref, all); len(got) != 0 {
		t.Errorf("the reference stack: %+v", got)
	}

	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(ref)); err != nil {
		t.Fatal(err)
	}
	write := func(rel, content string) {
		t.Helper()
		p := filepath.Join(dir, "cluster-class", filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("templates/image.yaml", `{{- if .Values.image }}
apiVersion: openstack.k-orc.cloud/v1alpha1
kind: Image  # the node image
metadata:
  name: {{ include "cluster-class.name" . }}-image
  labels:
    kind: not-this
{{- end }}
---
apiVersion: "infrastructure.cluster.x-k8s.io/v1beta2"
kind: {{ .Values.kind }}
---
apiVersion: v1
kind: ConfigMap
`)
	write("charts/sub/templates/thing.yaml", "apiVersion: infrastructure.cluster.x-k8s.io/v1beta2\nkind: AWSThing\n")
	got := kinds(dir, func(g string) bool { return g != "" })
	if len(got) != 1 || got[0] != (ProviderKind{APIVersion: "openstack.k-orc.cloud/v1alpha1", Kind: "Image"}) {
		t.Errorf("a conditional Image, a templated kind, a core kind and a subchart's object: %+v", got)
	}
}
