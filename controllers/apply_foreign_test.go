package controllers_test

import (
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/controllers"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/scheme"
)

// Fields other field managers wrote into a generated object: adopting an object by its
// managed-by label, or applying over one someone edited, leaves exactly what the operator
// applies, while Flux's finalizer, a person's spec.suspend and Flux's reconcile requests stay.
var _ = Describe("Applier and other field managers", func() {
	managed := map[string]string{csv1.ManagedByLabel: csv1.ManagedByValue}
	applier := func() *controllers.Applier {
		return &controllers.Applier{Client: k8s, Scheme: scheme.New(), APIReader: k8s}
	}

	It("adopts a ConfigMap by its label without the data and labels another manager added", func() {
		ns := newNamespace("apply-foreign")
		planted := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c1-values", Labels: map[string]string{csv1.ManagedByLabel: csv1.ManagedByValue, fluxgen.FluxShardLabel: "privileged"},
				Annotations: map[string]string{"reconcile.fluxcd.io/requestedAt": "now"}},
			Data: map[string]string{"values.yaml": "replicas: 9\n", "injected": "evil"},
		}
		Expect(k8s.Create(ctx, planted, client.FieldOwner("kubectl-create"))).To(Succeed())

		desired := &corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c1-values", Labels: managed},
			Data:       map[string]string{"values.yaml": "replicas: 1\n"},
		}
		wrote, err := applier().Apply(ctx, nil, desired)
		Expect(err).NotTo(HaveOccurred())
		Expect(wrote).To(BeTrue())
		got := &corev1.ConfigMap{}
		Expect(k8s.Get(ctx, key(ns, "c1-values"), got)).To(Succeed())
		Expect(got.Data).To(Equal(map[string]string{"values.yaml": "replicas: 1\n"}), "the planted key is removed")
		Expect(got.Labels).NotTo(HaveKey(fluxgen.FluxShardLabel), "the planted Flux shard label is removed")
		Expect(got.Annotations).To(HaveKeyWithValue("reconcile.fluxcd.io/requestedAt", "now"), "Flux's reconcile request stays")
		for _, m := range got.ManagedFields {
			if m.Manager == "kubectl-create" {
				Expect(m.FieldsV1.GetRawString()).NotTo(Or(ContainSubstring("injected"), ContainSubstring("values.yaml")), "kubectl-create owns no data key any more")
			}
		}
	})

	It("applies over a HelmRelease someone gave a post-renderer, keeping Flux's finalizer and a suspend", func() {
		ns := newNamespace("apply-foreign")
		desired := func() *helmv2.HelmRelease {
			return &helmv2.HelmRelease{
				TypeMeta:   metav1.TypeMeta{APIVersion: helmv2.GroupVersion.String(), Kind: helmv2.HelmReleaseKind},
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c1-cni", Labels: managed},
				Spec: helmv2.HelmReleaseSpec{
					ChartRef: &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.HelmChartKind, Name: "cni"},
					Interval: metav1.Duration{Duration: 10 * time.Minute},
				},
			}
		}
		_, err := applier().Apply(ctx, nil, desired())
		Expect(err).NotTo(HaveOccurred())

		By("a tenant adds a post-renderer and suspends it; Flux adds its finalizer")
		hr := &helmv2.HelmRelease{}
		Expect(k8s.Get(ctx, key(ns, "c1-cni"), hr)).To(Succeed())
		hr.Spec.PostRenderers = []helmv2.PostRenderer{{Kustomize: &helmv2.Kustomize{Images: nil}}}
		hr.Spec.Suspend = true
		Expect(k8s.Update(ctx, hr, client.FieldOwner("kubectl-edit"))).To(Succeed())
		Expect(k8s.Get(ctx, key(ns, "c1-cni"), hr)).To(Succeed())
		controllerutil.AddFinalizer(hr, helmv2.HelmReleaseFinalizer)
		Expect(k8s.Update(ctx, hr, client.FieldOwner("helm-controller"))).To(Succeed())

		By("the next apply (a changed spec) removes the post-renderer only")
		d := desired()
		d.Spec.Interval = metav1.Duration{Duration: 5 * time.Minute}
		_, err = applier().Apply(ctx, nil, d)
		Expect(err).NotTo(HaveOccurred())
		Expect(k8s.Get(ctx, key(ns, "c1-cni"), hr)).To(Succeed())
		Expect(hr.Spec.PostRenderers).To(BeEmpty(), "the post-renderer someone added is removed")
		Expect(hr.Spec.Interval.Duration).To(Equal(5 * time.Minute))
		Expect(hr.Spec.Suspend).To(BeTrue(), "a person's suspend stays")
		Expect(hr.Finalizers).To(ContainElement(helmv2.HelmReleaseFinalizer), "Flux's finalizer stays")
	})
})
