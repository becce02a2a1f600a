package controllers_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
)

// A values ConfigMap whose data someone edits (a changed value, an added key) is put back as
// rendered: ConfigMaps have no generation, and the cache keeps no data, so the cache's digest of
// the data and a watch on the ConfigMaps tell the ClusterAddon controller.
var _ = Describe("ClusterAddon values ConfigMap drift", func() {
	It("reverts an edit of the data", func() {
		ns := newNamespace("addon-values-drift")
		st := newStack("acme", "drift", "1.36").WithHelmAddon("cni", "1.0.0")
		v1 := publishRelease(ns, st, "v1")
		newClusterStack(ns, "drift", st).Versions("v1").Create()
		releaseValidated(ns, v1)
		newCluster(ns, "c1").WithClass(st, v1).Initialized().Create()
		name := fluxgen.ValuesConfigMapName("c1", v1)
		cm := &corev1.ConfigMap{}
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, key(ns, name), cm)).To(Succeed())
			g.Expect(cm.Data).NotTo(BeEmpty())
		}).Should(Succeed())
		rendered := cm.Data

		By("someone edits a value and adds a key")
		edited := map[string]string{"injected": "postRenderers: evil"}
		for k := range rendered {
			edited[k] = "tampered: true\n"
		}
		cm.Data = edited
		Expect(k8s.Update(ctx, cm, client.FieldOwner("kubectl-edit"))).To(Succeed())

		Eventually(func(g Gomega) map[string]string {
			g.Expect(k8s.Get(ctx, key(ns, name), cm)).To(Succeed())
			return cm.Data
		}).Should(Equal(rendered), "the data is as rendered again, without the added key")
	})
})
