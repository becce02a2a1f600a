package controllers_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/metrics"
	"github.com/clusterstack-io/clusterstack-operator/internal/render"
)

// A Cluster is reconciled several times on its way to Ready (each Flux object's Ready wakes
// it); its values are rendered again only when something the render reads changed (the Cluster,
// the objects it refers to, the overrides, the release), not at every reconcile.
var _ = Describe("ClusterAddon values renders", func() {
	It("renders once while the addons converge, and again when the Cluster changes", func() {
		ns := newNamespace("addon-render-memo")
		st := newStack("acme", "memo", "1.36").WithHelmAddon("cni", "1.0.0").WithKustomizeAddon("info")
		st.files["cluster-addon/cni/overwrite.yaml"] = "values: |\n  tier: {{ index .Cluster.metadata.annotations \"tier\" }}\n"
		v1 := publishRelease(ns, st, "v1")
		newClusterStack(ns, "memo", st).Versions("v1").Create()
		rel := releaseValidated(ns, v1)
		b := newCluster(ns, "c1").WithClass(st, v1).Initialized()
		b.c.Annotations = map[string]string{"tier": "gold"}
		c1 := b.Create()
		renders := func(outcome string) float64 { return metrics.Default.ValuesRenders(ns, outcome) }
		tier := func(g Gomega) string {
			cm := &corev1.ConfigMap{}
			g.Expect(k8s.Get(ctx, key(ns, fluxgen.ValuesConfigMapName("c1", v1)), cm)).To(Succeed())
			return cm.Data[render.HelmValuesKey("cni")]
		}
		Eventually(tier).Should(Equal("tier: gold\n"))
		rendered := renders(metrics.RenderRan)
		Expect(rendered).To(BeNumerically(">=", 1))

		By("the HelmRelease, then the Kustomization turn Ready: the ClusterAddon is reconciled, its values are not rendered again")
		cni, info := fluxgen.AddonObjectName("c1", "cni"), fluxgen.AddonObjectName("c1", "info")
		Eventually(func(g Gomega) {
			readyHelmRelease(g, ns, cni, "1.0.0")
			readyKustomization(g, ns, info, rel.Status.Revision)
			a := clusterAddon(g, ns, "c1")
			g.Expect(apimeta.IsStatusConditionTrue(a.Status.Conditions, csv1.ReadyCondition)).To(BeTrue())
		}).Should(Succeed())
		Expect(renders(metrics.RenderUnchanged)).To(BeNumerically(">=", 1), "a reconcile with the same inputs spared its render")
		Expect(renders(metrics.RenderRan)).To(Equal(rendered), "no render ran again")

		By("the Cluster's annotation the template reads changes: rendered again, the values follow")
		update(c1, func(c *clusterv1.Cluster) { c.Annotations["tier"] = "silver" })
		Eventually(tier).Should(Equal("tier: silver\n"))
		Expect(renders(metrics.RenderRan)).To(BeNumerically(">", rendered))
	})
})
