package controllers_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/metrics"
)

// The roll-ups (ClusterStack and ClusterStackRelease status.clusters, the ClusterStack's
// conditions and the clusterstack_clusters gauge) are read from an index the ClusterAddon
// informer keeps up to date (AddonFleets), not from a list of every ClusterAddon: they follow
// Clusters being created, delivered and deleted.
var _ = Describe("ClusterStack roll-up from the ClusterAddon index", func() {
	It("counts the Clusters as their ClusterAddons change, in the stack, the release and the metrics", func() {
		ns := newNamespace("rollup")
		st := newStack("acme", "rollup", "1.35").WithHelmAddon("cni", "0.9.0")
		v1 := publishRelease(ns, st, "v1")
		newClusterStack(ns, "rollup", st).Versions("v1").Create()
		releaseWorks(ns, v1)
		clusters := []string{"c1", "c2", "c3"}
		for _, name := range clusters {
			newCluster(ns, name).WithClass(st, v1).Initialized().Create()
		}
		counts := func(g Gomega) (stack, inRelease, release csv1.ClusterCounts) {
			cs := &csv1.ClusterStack{}
			g.Expect(k8s.Get(ctx, key(ns, "rollup"), cs)).To(Succeed())
			for _, r := range cs.Status.Releases {
				if r.Name == v1 {
					inRelease = r.Clusters
				}
			}
			rel := &csv1.ClusterStackRelease{}
			g.Expect(k8s.Get(ctx, key(ns, v1), rel)).To(Succeed())
			return cs.Status.Clusters, inRelease, rel.Status.Clusters
		}
		expectCounts := func(want csv1.ClusterCounts) {
			EventuallyWithOffset(1, func(g Gomega) {
				stack, inRelease, release := counts(g)
				g.Expect(stack).To(Equal(want), "ClusterStack status.clusters")
				g.Expect(inRelease).To(Equal(want), "ClusterStack status.releases[%s].clusters", v1)
				g.Expect(release).To(Equal(want), "ClusterStackRelease status.clusters")
			}).Should(Succeed())
		}

		By("three Clusters, none delivered yet")
		expectCounts(csv1.ClusterCounts{Total: 3})
		Eventually(func(g Gomega) {
			cs := &csv1.ClusterStack{}
			g.Expect(k8s.Get(ctx, key(ns, "rollup"), cs)).To(Succeed())
			g.Expect(cs.Status.ClustersSummary).To(Equal("0/3"))
		}).Should(Succeed())

		By("two are delivered: up to date and Available; the stack says only 2/3 are")
		for _, name := range clusters[:2] {
			Eventually(func(g Gomega) { readyHelmRelease(g, ns, fluxgen.AddonObjectName(name, "cni"), "0.9.0") }).Should(Succeed())
		}
		expectCounts(csv1.ClusterCounts{Total: 3, UpToDate: 2, Available: 2})
		Eventually(func(g Gomega) {
			cs := &csv1.ClusterStack{}
			g.Expect(k8s.Get(ctx, key(ns, "rollup"), cs)).To(Succeed())
			g.Expect(cs.Status.ClustersSummary).To(Equal("2/3"))
			g.Expect(gauge(g, ns, "rollup", v1, metrics.StateAvailable)).To(Equal(2.0))
		}).Should(Succeed())

		By("the third too: the stack is Available on every Cluster")
		Eventually(func(g Gomega) { readyHelmRelease(g, ns, fluxgen.AddonObjectName("c3", "cni"), "0.9.0") }).Should(Succeed())
		expectCounts(csv1.ClusterCounts{Total: 3, UpToDate: 3, Available: 3})
		Eventually(func(g Gomega) {
			cs := &csv1.ClusterStack{}
			g.Expect(k8s.Get(ctx, key(ns, "rollup"), cs)).To(Succeed())
			c := condition(cs.Status.Conditions, csv1.AvailableCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Message).To(Equal("ClusterStack rollup: v1 is available on 3/3 clusters"))
			// The release's own Flux objects, none of the clusters' (read through an index that
			// leaves those out).
			var related []string
			for _, o := range cs.Status.RelatedObjects {
				related = append(related, o.Kind+"/"+o.Name)
			}
			g.Expect(related).To(ContainElements("Kustomization/"+fluxgen.ClusterClassObjectName(v1), "GitRepository/"+fluxgen.GitRepositoryName(v1)))
			g.Expect(related).NotTo(ContainElement("HelmRelease/" + fluxgen.AddonObjectName("c1", "cni")))
			g.Expect(gauge(g, ns, "rollup", v1, metrics.StateAvailable)).To(Equal(3.0))
		}).Should(Succeed())

		By("a Cluster is deleted: its ClusterAddon goes and the counts drop")
		Expect(k8s.Delete(ctx, &clusterv1.Cluster{ObjectMeta: objectMeta(ns, "c3")})).To(Succeed())
		Eventually(gone(&csv1.ClusterAddon{ObjectMeta: objectMeta(ns, "c3")})).Should(Succeed())
		expectCounts(csv1.ClusterCounts{Total: 2, UpToDate: 2, Available: 2})
		Eventually(func(g Gomega) {
			g.Expect(gauge(g, ns, "rollup", v1, metrics.StateAvailable)).To(Equal(2.0))
		}).Should(Succeed())
	})
})

// gauge reads clusterstack_clusters{namespace,stack,release,state} from the registry the manager
// serves; -1 when the series does not exist.
func gauge(g Gomega, ns, stack, release, state string) float64 {
	families, err := ctrlmetrics.Registry.Gather()
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	want := map[string]string{"namespace": ns, "stack": stack, "release": release, "state": state}
	for _, f := range families {
		if f.GetName() != metrics.ClustersMetric {
			continue
		}
		for _, m := range f.GetMetric() {
			match := len(m.GetLabel()) == len(want)
			for _, l := range m.GetLabel() {
				match = match && want[l.GetName()] == l.GetValue()
			}
			if match {
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}
