package controllers_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// The identity a ClusterStack's Flux objects run as: a ClusterStack naming a ServiceAccount its
// namespace's owner has not labelled for it (a privileged CI account, say) is refused, nothing
// is created, and its releases are created once the account carries the label.
var _ = Describe("ClusterStack serviceAccountName", func() {
	It("refuses an account without the opt-in label, with a message naming the label, and creates nothing until it has it", func() {
		ns := newNamespace("stack-identity")
		st := newStack("demo", "ident", "1.36").WithHelmAddon("cni", "1.0.0")
		v1 := publishRelease(ns, st, "v1")
		ci := &corev1.ServiceAccount{ObjectMeta: objectMeta(ns, "ci-admin")}
		Expect(k8s.Create(ctx, ci)).To(Succeed())
		b := newClusterStack(ns, "ident", st).Versions("v1").Interval(10 * time.Second)
		b.cs.Spec.ServiceAccountName = "ci-admin"
		cs := b.Create()

		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, key(ns, cs.Name), cs)).To(Succeed())
			c := condition(cs.Status.Conditions, csv1.ReleasesResolvedCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(csv1.ReasonServiceAccountNotAllowed))
			g.Expect(c.Message).To(ContainSubstring("ServiceAccount " + ns + "/ci-admin is not labelled clusterstack.io/flux-identity=true"))
			g.Expect(c.Message).To(ContainSubstring("kubectl label serviceaccount -n " + ns + " ci-admin clusterstack.io/flux-identity=true"))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			var rels csv1.ClusterStackReleaseList
			g.Expect(k8s.List(ctx, &rels, client.InNamespace(ns))).To(Succeed())
			g.Expect(rels.Items).To(BeEmpty(), "no release is created for a refused account")
		}, 4*time.Second, 500*time.Millisecond).Should(Succeed())

		By("the namespace's owner labels the account: the release is created, running as it")
		ci.Labels = map[string]string{csv1.ServiceAccountOptInLabel: "true"}
		Expect(k8s.Update(ctx, ci)).To(Succeed())
		Eventually(func(g Gomega) {
			rel := &csv1.ClusterStackRelease{}
			g.Expect(k8s.Get(ctx, key(ns, v1), rel)).To(Succeed())
			g.Expect(rel.Spec.ServiceAccountName).To(Equal("ci-admin"))
			g.Expect(k8s.Get(ctx, key(ns, cs.Name), cs)).To(Succeed())
			g.Expect(condition(cs.Status.Conditions, csv1.ReleasesResolvedCondition).Status).To(Equal(metav1.ConditionTrue))
		}).WithTimeout(time.Minute).Should(Succeed(), "the label is not watched: seen within spec.interval")
	})
})
