package controllers_test

import (
	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
)

// Flux's sharding key on a Cluster is the tenant's input: the suite's manager allows no Flux
// shard (--allowed-flux-shards empty), so a Cluster labelled for one gets Flux objects without
// the label (Flux's main shard), and a label someone puts on a generated object is taken off.
var _ = Describe("ClusterAddon Flux shard label", func() {
	It("copies no Flux shard the platform does not allow, and takes one put on a generated object off", func() {
		ns := newNamespace("addon-fluxshard")
		st := newStack("acme", "fshard", "1.36").WithHelmAddon("cni", "1.0.0")
		v1 := publishRelease(ns, st, "v1")
		newClusterStack(ns, "fshard", st).Versions("v1").Create()
		releaseValidated(ns, v1)
		b := newCluster(ns, "c1").WithClass(st, v1).Initialized()
		b.c.Labels = map[string]string{fluxgen.FluxShardLabel: "privileged"}
		b.Create()
		name := fluxgen.AddonObjectName("c1", "cni")
		Eventually(func(g Gomega) map[string]string { return helmReleaseLabels(g, ns, name) }).Should(
			And(HaveKeyWithValue(csv1.ManagedByLabel, csv1.ManagedByValue), Not(HaveKey(fluxgen.FluxShardLabel))))

		By("someone labels the generated HelmRelease for a Flux shard")
		hr := &helmv2.HelmRelease{}
		Expect(k8s.Get(ctx, key(ns, name), hr)).To(Succeed())
		hr.Labels[fluxgen.FluxShardLabel] = "privileged"
		Expect(k8s.Update(ctx, hr, client.FieldOwner("kubectl-label"))).To(Succeed())
		Eventually(func(g Gomega) map[string]string { return helmReleaseLabels(g, ns, name) }).Should(
			And(HaveKeyWithValue(csv1.ManagedByLabel, csv1.ManagedByValue), Not(HaveKey(fluxgen.FluxShardLabel))), "the label is taken off again")
	})
})
