package controllers_test

import (
	"strings"

	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/ocistack"
)

// A ClusterStack moved from its Git repository to an OCI registry (a mirror, say): each release
// gets an OCIRepository and OCIRepositories of its charts, pinned to the digests it validates,
// and its Git sources are deleted. The test plays source-controller, as the others here do.
var _ = Describe("A ClusterStack moved from Git to an OCI registry", func() {
	It("re-creates each release's sources from the registry, pinned to digests, and deletes its Git sources", func() {
		ns := newNamespace("to-oci")
		st := newStack("acme", "mv", "1.36").WithHelmAddon("cni", "1.0.0").WithKustomizeAddon("info")
		v1 := publishRelease(ns, st, "v1")
		cs := newClusterStack(ns, "acme-mv", st).Versions("v1").Create()
		releaseWorks(ns, v1)
		gitCommit := getRel(ns, v1).Status.Commit
		Expect(gitCommit).To(HaveLen(40))

		update(cs, func(cs *csv1.ClusterStack) {
			cs.Spec.Source = csv1.StackSource{OCI: &csv1.OCISource{URL: "oci://registry.example.test/stacks/acme-mv"}, Path: st.Path()}
		})
		digest := strings.Repeat("d", 64)
		chart := "sha256:" + strings.Repeat("c", 64)
		Eventually(func(g Gomega) {
			repo := &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fluxgen.GitRepositoryName(v1)}}
			g.Expect(k8s.Get(ctx, key(ns, repo.Name), repo)).To(Succeed())
			// source-controller fetched the tag: the same content, its manifest naming the chart.
			art := artifacts.of(ns, v1)
			art.Revision = v1 + "@sha256:" + digest
			art.Metadata = map[string]string{ocistack.ChartAnnotationPrefix + "cni": chart}
			setStatus(g, repo, func(r *sourcev1.OCIRepository) {
				r.Status.ObservedGeneration = r.Generation
				r.Status.Artifact = art.DeepCopy()
				setReady(&r.Status.Conditions, r.Generation, meta.SucceededReason, "stored artifact for digest 'sha256:"+digest+"'")
			})
			rel := getRel(ns, v1)
			g.Expect(rel.Status.Commit).To(Equal(digest), "the release is pinned to the validated digest, not the Git commit")
			g.Expect(repo.Spec.Reference).NotTo(BeNil())
			g.Expect(repo.Spec.Reference.Digest).To(Equal("sha256:" + digest))

			chartRepo := &sourcev1.OCIRepository{}
			g.Expect(k8s.Get(ctx, key(ns, fluxgen.AddonChartName(v1, "cni")), chartRepo)).To(Succeed())
			g.Expect(chartRepo.Spec.Reference.Digest).To(Equal(chart))
			g.Expect(rel.Status.Components).To(ContainElement(And(HaveField("Name", "cni"), HaveField("ChartDigest", chart))))

			g.Expect(apierrors.IsNotFound(k8s.Get(ctx, key(ns, fluxgen.GitRepositoryName(v1)), &sourcev1.GitRepository{}))).To(BeTrue(), "the Git source is deleted")
			g.Expect(apierrors.IsNotFound(k8s.Get(ctx, key(ns, fluxgen.AddonChartName(v1, "cni")), &sourcev1.HelmChart{}))).To(BeTrue(), "the HelmChart is deleted")
		}).Should(Succeed())
	})
})

func getRel(ns, name string) *csv1.ClusterStackRelease {
	GinkgoHelper()
	rel := &csv1.ClusterStackRelease{}
	Expect(k8s.Get(ctx, key(ns, name), rel)).To(Succeed())
	return rel
}
