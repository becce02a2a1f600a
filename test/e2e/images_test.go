package e2e

import (
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/localinfra"
	"github.com/clusterstack-io/clusterstack-operator/test/framework"
)

// withNodeImage makes the cluster-class create its nodes' machine image as an OpenStack Resource
// Controller Image, as the Sovereign Cloud Stack's OpenStack cluster-classes do; the plane's
// stand-in controller (localinfra.ImageReconciler) uploads it after readyAfter, or fails it with
// failure when that is not empty.
func withNodeImage(readyAfter time.Duration, failure string) func(string) {
	return func(sd string) {
		annotation := localinfra.ImageReadyAfterAnnotation + `: "` + readyAfter.String() + `"`
		if failure != "" {
			annotation = localinfra.ImageFailAnnotation + `: "` + failure + `"`
		}
		Expect(os.WriteFile(filepath.Join(sd, "cluster-class", "templates", "node-image.yaml"), []byte(`apiVersion: openstack.k-orc.cloud/v1alpha1
kind: Image
metadata:
  name: {{ include "cluster-class.name" . }}-node-image
  annotations:
    `+annotation+`
spec:
  managementPolicy: managed
  resource:
    content:
      diskFormat: qcow2
      download:
        url: https://images.example.invalid/ubuntu-2404-kube-v1.36.3.qcow2
`), 0o644)).To(Succeed())
	}
}

// A release whose cluster-class creates a machine image (the stand-in ORC Image, uploaded by the
// plane's stand-in controller: no cloud) is Available, and may be used by Clusters, only once the
// image is ready by its own status; one whose image fails is Degraded naming it.
var _ = Describe("Release lifecycle: node images before Available", Ordered, func() {
	const (
		ns   = "node-images"
		repo = "node-images"
	)
	BeforeAll(func(ctx SpecContext) {
		_, err := pl.Git().CreateRepo(repo)
		Expect(err).NotTo(HaveOccurred())
		Expect(framework.PublishVersions(ctx, pl.Git(), repoRoot, GinkgoT().TempDir(), repo,
			versionOf("v1", withNodeImage(45*time.Second, "")),
			versionOf("v2", withNodeImage(0, "image download failed: 404 Not Found")),
		)).To(Succeed())
		createNamespace(ctx, ns)
		Expect(k8s.Create(ctx, framework.ClusterStack(ns, pl.Git().RepoURL(repo), stackInterval, "v1", "v2"))).To(Succeed())
	})
	admit := func(ctx SpecContext, v string) error {
		return k8s.Create(ctx, newCluster(ns, "would-be-"+v, v, "10.92.0.0/16"), client.DryRunAll)
	}

	It("waits for the image while it is uploaded: not Available, Clusters refused; then Available and admitted", func(ctx SpecContext) {
		Eventually(ctx, func(g Gomega) {
			rel := getRelease(ctx, g, ns, "v1")
			g.Expect(rel.Status.ProviderKinds).To(ContainElement(csv1.ObjectKind{APIVersion: "openstack.k-orc.cloud/v1alpha1", Kind: "Image"}))
			g.Expect(rel).To(framework.HaveCondition(csv1.ProviderObjectsReadyCondition, metav1.ConditionFalse, "Image/", "not ready yet", "Uploading the image"))
			g.Expect(rel).NotTo(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue))
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		err := admit(ctx, "v1")
		Expect(err).To(HaveOccurred(), "a Cluster on a release whose node image is being uploaded")
		Expect(err.Error()).To(And(ContainSubstring("cannot be used by a Cluster yet"), ContainSubstring("Image/")))
		GinkgoWriter.Printf("uploading: %s\n", err)

		Eventually(ctx, func(g Gomega) {
			rel := getRelease(ctx, g, ns, "v1")
			g.Expect(rel).To(framework.HaveCondition(csv1.ProviderObjectsReadyCondition, metav1.ConditionTrue))
			g.Expect(rel).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue))
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		Expect(admit(ctx, "v1")).To(Succeed(), "the image is ready")
	})

	It("reports an image that fails: Degraded naming it and its controller's reason; Clusters refused", func(ctx SpecContext) {
		Eventually(ctx, func(g Gomega) {
			rel := getRelease(ctx, g, ns, "v2")
			g.Expect(rel).To(framework.HaveCondition(csv1.ProviderObjectsReadyCondition, metav1.ConditionFalse, "Image/"+tagPrefix+"v2-", "-node-image", "failed", "404 Not Found"))
			g.Expect(rel).To(framework.HaveCondition(csv1.DegradedCondition, metav1.ConditionTrue, "Image/"+tagPrefix+"v2-", "404 Not Found"))
			g.Expect(rel).NotTo(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue))
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		err := admit(ctx, "v2")
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("404 Not Found"))
		Expect(getRelease(ctx, Default, ns, "v1")).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue), "v1 is not affected")
	})
})
