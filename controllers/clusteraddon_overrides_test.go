package controllers_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/yaml"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/render"
)

// ClusterAddonOverrides: merged over the release's rendered values for the Clusters they
// select, in precedence order, kept when a Cluster moves to another release, named in the
// values ConfigMap; one that cannot be merged degrades only the Clusters it selects.
var _ = Describe("ClusterAddon with ClusterAddonOverrides", func() {
	newOverride := func(ns, name, cluster string, sel map[string]string, comp, values string) *csv1.ClusterAddonOverride {
		j, err := yaml.YAMLToJSON([]byte(values))
		Expect(err).NotTo(HaveOccurred())
		o := &csv1.ClusterAddonOverride{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		o.Spec.ClusterName = cluster
		if sel != nil {
			o.Spec.ClusterSelector = &metav1.LabelSelector{MatchLabels: sel}
		}
		o.Spec.Components = []csv1.ComponentOverride{{Name: comp, Values: apiextensionsv1.JSON{Raw: j}}}
		Expect(k8s.Create(ctx, o)).To(Succeed())
		return o
	}
	cniValues := func(g Gomega, ns, cluster, release string) (map[string]any, string) {
		cm := &corev1.ConfigMap{}
		g.Expect(k8s.Get(ctx, key(ns, fluxgen.ValuesConfigMapName(cluster, release)), cm)).To(Succeed())
		v := map[string]any{}
		g.Expect(yaml.Unmarshal([]byte(cm.Data[render.HelmValuesKey("cni")]), &v)).To(Succeed())
		return v, cm.Annotations[csv1.OverridesAnnotation]
	}

	It("merges them in precedence order, keeps them across releases, and degrades only the Cluster a failing one selects", func() {
		ns := newNamespace("addon-overrides")
		st := newStack("acme", "ovr", "1.36").WithHelmAddon("cni", "1.0.0")
		st.files["cluster-addon/cni/overwrite.yaml"] = "values: |\n  mtu: 1400\n  podCIDR: from-overwrite\n"
		v1 := publishRelease(ns, st, "v1")
		newClusterStack(ns, "ovr", st).Versions("v1").Create()
		releaseValidated(ns, v1)
		prod := newCluster(ns, "prod-1").WithClass(st, v1).Initialized()
		prod.c.Labels = map[string]string{"env": "prod"}
		c1 := prod.Create()
		newCluster(ns, "dev-1").WithClass(st, v1).Initialized().Create()

		By("an override by label and one by name: the one by name wins, both over overwrite.yaml")
		newOverride(ns, "prod-mtu", "", map[string]string{"env": "prod"}, "cni", "mtu: 8000\npodCIDR: 10.50.0.0/16")
		newOverride(ns, "prod-1-mtu", "prod-1", nil, "cni", "mtu: 9000")
		Eventually(func(g Gomega) {
			v, ann := cniValues(g, ns, "prod-1", v1)
			g.Expect(v).To(HaveKeyWithValue("mtu", BeNumerically("==", 9000)))
			g.Expect(v).To(HaveKeyWithValue("podCIDR", "10.50.0.0/16"))
			g.Expect(ann).To(Equal("prod-mtu,prod-1-mtu"))
			a := clusterAddon(g, ns, "prod-1")
			g.Expect(condition(a.Status.Conditions, csv1.ValuesRenderedCondition)).To(HaveField("Message", ContainSubstring("with ClusterAddonOverrides prod-mtu, prod-1-mtu")))
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			v, ann := cniValues(g, ns, "dev-1", v1)
			g.Expect(v).To(HaveKeyWithValue("mtu", BeNumerically("==", 1400)), "a Cluster no override selects keeps the release's values")
			g.Expect(ann).To(BeEmpty())
		}).Should(Succeed())

		By("an override naming a component the release lacks: only the Cluster it selects is Degraded, naming the override and the component")
		broken := newOverride(ns, "ghost", "dev-1", nil, "csi", "replicas: 2")
		Eventually(func(g Gomega) {
			a := clusterAddon(g, ns, "dev-1")
			c := condition(a.Status.Conditions, csv1.ValuesRenderedCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(csv1.ReasonOverrideFailed))
			g.Expect(c.Message).To(ContainSubstring(`component csi: ClusterAddonOverride/ghost: the release has no component "csi"`))
			g.Expect(condition(a.Status.Conditions, csv1.DegradedCondition)).To(HaveField("Status", metav1.ConditionTrue))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			a := clusterAddon(g, ns, "prod-1")
			g.Expect(condition(a.Status.Conditions, csv1.ValuesRenderedCondition)).To(HaveField("Status", metav1.ConditionTrue))
		}, "3s", "500ms").Should(Succeed(), "prod-1 is not affected")
		Expect(k8s.Delete(ctx, broken)).To(Succeed())
		Eventually(func(g Gomega) {
			a := clusterAddon(g, ns, "dev-1")
			g.Expect(condition(a.Status.Conditions, csv1.ValuesRenderedCondition)).To(HaveField("Status", metav1.ConditionTrue))
		}).Should(Succeed())

		By("the Cluster moves to v2: the overrides are merged into v2's values too")
		v2 := publishRelease(ns, st, "v2")
		update(&csv1.ClusterStack{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ovr"}}, func(cs *csv1.ClusterStack) { cs.Spec.Versions = []string{"v1", "v2"} })
		releaseValidated(ns, v2)
		moveCluster(c1, v2)
		Eventually(func(g Gomega) {
			v, ann := cniValues(g, ns, "prod-1", v2)
			g.Expect(v).To(HaveKeyWithValue("mtu", BeNumerically("==", 9000)))
			g.Expect(ann).To(Equal("prod-mtu,prod-1-mtu"))
		}).Should(Succeed())

		By("a label change that deselects the Cluster drops the label's override")
		update(c1, func(c *clusterv1.Cluster) { c.Labels = map[string]string{"env": "staging"} })
		Eventually(func(g Gomega) {
			v, ann := cniValues(g, ns, "prod-1", v2)
			g.Expect(v).To(HaveKeyWithValue("podCIDR", "from-overwrite"))
			g.Expect(ann).To(Equal("prod-1-mtu"))
		}).Should(Succeed())
	})
})
