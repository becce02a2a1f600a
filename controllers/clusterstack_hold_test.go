package controllers_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// The clusterstack.io/hold annotation holds a stack's rollout: status.hold says who (the
// annotation's "<who>: ", else the field manager that wrote it), why and since when, and the
// time stays while the hold does.
var _ = Describe("ClusterStack rollout hold", func() {
	It("records who holds the rollout and since when, and forgets it when the annotation goes", func() {
		ns := newNamespace("stack-hold")
		st := newStack("acme", "hold", "1.36").WithHelmAddon("cni", "1.0.0")
		v1 := publishRelease(ns, st, "v1")
		cs := newClusterStack(ns, "hold", st).Versions("v1").Create()
		releaseValidated(ns, v1)
		read := func(g Gomega) *csv1.ClusterStack {
			got := &csv1.ClusterStack{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cs), got)).To(Succeed())
			return got
		}
		annotate := func(value *string, manager string) {
			Eventually(func() error {
				latest := &csv1.ClusterStack{}
				if err := k8s.Get(ctx, client.ObjectKeyFromObject(cs), latest); err != nil {
					return err
				}
				patch := client.MergeFrom(latest.DeepCopy())
				if latest.Annotations == nil {
					latest.Annotations = map[string]string{}
				}
				if value == nil {
					delete(latest.Annotations, csv1.HoldAnnotation)
				} else {
					latest.Annotations[csv1.HoldAnnotation] = *value
				}
				return k8s.Patch(ctx, latest, patch, client.FieldOwner(manager))
			}).Should(Succeed())
		}
		str := func(s string) *string { return &s }

		By("the annotation names who: status.hold says so, with the time it was first seen")
		before := time.Now().Add(-time.Second)
		annotate(str("alice: waiting for the CVE fix"), "kubectl-annotate")
		var since time.Time
		Eventually(func(g Gomega) {
			h := read(g).Status.Hold
			g.Expect(h).NotTo(BeNil())
			g.Expect(h.Source).To(Equal(csv1.HoldFromAnnotation))
			g.Expect(h.By).To(Equal("alice"))
			g.Expect(h.Reason).To(Equal("waiting for the CVE fix"))
			g.Expect(h.Since.Time).To(BeTemporally(">=", before.Truncate(time.Second)))
			since = h.Since.Time
		}).Should(Succeed())

		By("a value without who: the field manager that wrote it; the hold's time stays")
		annotate(str("freeze for the audit"), "kubectl-edit")
		Eventually(func(g Gomega) {
			h := read(g).Status.Hold
			g.Expect(h).NotTo(BeNil())
			g.Expect(h.By).To(Equal("manager kubectl-edit"))
			g.Expect(h.Reason).To(Equal("freeze for the audit"))
			g.Expect(h.Since.Time).To(Equal(since))
		}).Should(Succeed())

		By("the annotation removed: no hold")
		annotate(nil, "kubectl-annotate")
		Eventually(func(g Gomega) { g.Expect(read(g).Status.Hold).To(BeNil()) }).Should(Succeed())
	})
})
