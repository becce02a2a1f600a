package fluxgen

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// TestSelectorsMatchGeneratedLabels: the selectors the controllers list with match the labels
// the generated objects carry, for names that are label values and for names too long to be,
// and never the objects of another stack or Cluster.
func TestSelectorsMatchGeneratedLabels(t *testing.T) {
	long := "a-" + strings.Repeat("x", 70)
	for _, n := range []struct{ stack, other, cluster string }{
		{stack: "acme", other: "acme2", cluster: "c1"},
		{stack: long, other: long + "y", cluster: long},
	} {
		rel := &csv1.ClusterStackRelease{ObjectMeta: metav1.ObjectMeta{Name: "rel"}, Spec: csv1.ClusterStackReleaseSpec{ClusterStack: n.stack}}
		matches := func(sel map[string]string, l map[string]string) bool {
			return labels.SelectorFromSet(sel).Matches(labels.Set(l))
		}
		if !matches(StackSelector(n.stack), ReleaseLabels(rel, "cni")) || !matches(StackSelector(n.stack), ClusterLabels(n.stack, "rel", n.cluster, "cni")) ||
			!matches(StackSelector(n.stack), StackReleaseLabels(n.stack, "rel")) {
			t.Errorf("StackSelector(%q) misses the stack's generated objects", n.stack)
		}
		if matches(StackSelector(n.other), ClusterLabels(n.stack, "rel", n.cluster, "cni")) {
			t.Errorf("StackSelector(%q) matches stack %q's objects", n.other, n.stack)
		}
		if !matches(ClusterSelector(n.cluster), ClusterLabels(n.stack, "rel", n.cluster, "cni")) || matches(ClusterSelector(n.cluster+"z"), ClusterLabels(n.stack, "rel", n.cluster, "cni")) {
			t.Errorf("ClusterSelector(%q) does not select exactly the Cluster's objects", n.cluster)
		}
	}
}
