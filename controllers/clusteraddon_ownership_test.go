package controllers_test

import (
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
)

// Ownership conflicts (Applier.Apply, checkOwnership): an object with the name the operator
// would generate that it did not create, or that another owner controls, is never overwritten;
// the ClusterAddon reports ObjectsOwned False (and so Degraded), naming the object and its owner.
var _ = Describe("ClusterAddon ownership conflicts", func() {
	It("does not take over a Flux object it did not create, and names it until it is removed", func() {
		ns := newNamespace("addon-ownership")
		st := newStack("acme", "own", "1.36").WithHelmAddon("cni", "1.0.0")
		v1 := publishRelease(ns, st, "v1")
		newClusterStack(ns, "own", st).Versions("v1").Create()
		releaseValidated(ns, v1)
		name := fluxgen.AddonObjectName("c1", "cni")
		// Someone's HelmRelease with the name the operator would give c1's cni.
		foreign := &helmv2.HelmRelease{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"team": "platform"}},
			Spec: helmv2.HelmReleaseSpec{
				ChartRef: &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.HelmChartKind, Name: "their-cni"},
				Interval: metav1.Duration{Duration: time.Hour},
			},
		}
		Expect(k8s.Create(ctx, foreign)).To(Succeed())
		c := newCluster(ns, "c1").WithClass(st, v1).Initialized().Create()

		owned := func(status metav1.ConditionStatus, reason, msg string) func(g Gomega) {
			return func(g Gomega) {
				a := clusterAddon(g, ns, "c1")
				cond := condition(a.Status.Conditions, csv1.ObjectsOwnedCondition)
				g.Expect(cond).NotTo(BeNil())
				g.Expect(cond.Status).To(Equal(status))
				g.Expect(cond.Reason).To(Equal(reason))
				g.Expect(cond.Message).To(Equal(msg))
			}
		}
		untouched := func(rv string) {
			cur := helmRelease(ns, name)
			ExpectWithOffset(1, k8s.Get(ctx, key(ns, name), cur)).To(Succeed())
			ExpectWithOffset(1, cur.ResourceVersion).To(Equal(rv), "the operator wrote to %s", name)
			ExpectWithOffset(1, cur.Spec.ChartRef.Name).To(Equal("their-cni"))
			ExpectWithOffset(1, cur.Labels).To(Equal(map[string]string{"team": "platform"}))
		}

		By("an object without a controller or the operator's label: not managed by the operator")
		unmanaged := "Cluster c1: HelmRelease " + ns + "/" + name + " exists and is not managed by clusterstack-operator " +
			"(no controller, no app.kubernetes.io/managed-by=clusterstack-operator label): refusing to take it over for ClusterAddon " + ns + "/c1; rename or remove that object"
		Eventually(owned(metav1.ConditionFalse, csv1.ReasonOwnershipConflict, unmanaged)).Should(Succeed())
		untouched(foreign.ResourceVersion)
		Eventually(func(g Gomega) {
			degraded := condition(clusterAddon(g, ns, "c1").Status.Conditions, csv1.DegradedCondition)
			g.Expect(degraded).NotTo(BeNil())
			g.Expect(degraded.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(degraded.Message).To(ContainSubstring("HelmRelease " + ns + "/" + name + " exists and is not managed by clusterstack-operator"))
		}).Should(Succeed())

		By("an object another owner controls: named with that owner")
		update(foreign, func(hr *helmv2.HelmRelease) {
			hr.OwnerReferences = []metav1.OwnerReference{{APIVersion: csv1.GroupVersion.String(), Kind: "ClusterAddon", Name: "other",
				UID: "4b2c7d0e-0000-4000-8000-000000000001", Controller: ptr.To(true)}}
		})
		touch(c) // the other owner's object is not watched: a change of the Cluster looks again
		controlled := "Cluster c1: HelmRelease " + ns + "/" + name + " exists and is controlled by ClusterAddon " + ns + "/other, not by ClusterAddon " +
			ns + "/c1: refusing to take it over; rename or remove that object"
		Eventually(owned(metav1.ConditionFalse, csv1.ReasonOwnershipConflict, controlled)).Should(Succeed())
		untouched(foreign.ResourceVersion)

		By("the object is removed: the ClusterAddon creates its own and owns every object")
		Expect(k8s.Delete(ctx, foreign)).To(Succeed())
		touch(c)
		Eventually(owned(metav1.ConditionTrue, csv1.ReasonAsExpected, "every generated object is controlled by this ClusterAddon")).Should(Succeed())
		hr := helmRelease(ns, name)
		Expect(k8s.Get(ctx, key(ns, name), hr)).To(Succeed())
		Expect(hr.Labels).To(HaveKeyWithValue(csv1.ManagedByLabel, csv1.ManagedByValue))
		ref := metav1.GetControllerOf(hr)
		Expect(ref).NotTo(BeNil())
		Expect(ref.Kind + "/" + ref.Name).To(Equal("ClusterAddon/c1"))
		Expect(hr.Spec.ChartRef.Name).To(Equal(fluxgen.AddonChartName(v1, "cni")))
	})
})

// touch changes a label of the Cluster, which makes the ClusterAddon controller look at it again.
func touch(c *clusterv1.Cluster) {
	update(c, func(c *clusterv1.Cluster) {
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		c.Labels["test.clusterstack.io/touched"] = time.Now().Format("150405.000000")
	})
}
