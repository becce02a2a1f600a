package stack

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestProviderKinds: the SCS-like OpenStack stack's cluster-class creates an ORC Image besides
// its ClusterClass and templates; the reference stack creates nothing else; groups the reader
// cannot read are left out.
func TestProviderKinds(t *testing.T) {
	all := func(string) bool { return true }
	got := ProviderKinds(filepath.Join("testdata", "scs", "providers", "openstack", "scs"), all)
	if len(got) != 1 || got[0] != (ProviderKind{APIVersion: "openstack.k-orc.cloud/v1alpha1", Kind: "Image"}) {
		t.Errorf("openstack/scs: %+v", got)
	}
	if got := ProviderKinds(filepath.Join("testdata", "scs", "providers", "openstack", "scs"), func(g string) bool { return strings.HasSuffix(g, ".cluster.x-k8s.io") }); len(got) != 0 {
		t.Errorf("openstack/scs without the ORC group: %+v", got)
	}
	if got := ProviderKinds(filepath.Join("..", "..", "stacks", "aws", "base", "1-36"), all); len(got) != 0 {
		t.Errorf("the reference stack: %+v", got)
	}
}
