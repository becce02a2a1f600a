package plane_test

import (
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterstack-io/clusterstack-operator/bootstrap/plane"
)

// A plane of its own with Cluster API's core manager (Options.WithCAPI): its webhooks and its
// CRD conversion answer, so a v1beta1 ClusterClass (the published SCS stacks' version) is
// converted by CAPI, not stored with only its apiVersion changed.
var _ = Describe("Cluster API core on the local plane", Ordered, func() {
	var capi *plane.Plane

	BeforeAll(func(ctx SpecContext) {
		root, err := plane.FindRepoRoot(".")
		Expect(err).NotTo(HaveOccurred())
		bin := filepath.Join(root, "bin")
		if d := os.Getenv("PLANE_BIN_DIR"); d != "" {
			bin = d // a directory of other builds of the tools
		}
		if _, err := os.Stat(filepath.Join(bin, plane.CAPIManagerBinary)); err != nil {
			Skip("bin/" + plane.CAPIManagerBinary + " is missing: run `make tools`")
		}
		dir, err := os.MkdirTemp("", "plane-capi-")
		Expect(err).NotTo(HaveOccurred())
		started := time.Now()
		capi, err = plane.Start(ctx, plane.Options{StateDir: dir, RepoRoot: root, BinDir: bin, WithCAPI: true, StartTimeout: 3 * time.Minute, Logger: GinkgoLogr})
		Expect(err).NotTo(HaveOccurred(), "start plane with CAPI; logs in %s", filepath.Join(dir, "logs"))
		GinkgoWriter.Printf("plane with CAPI started in %s\n", time.Since(started).Round(time.Millisecond))
		DeferCleanup(func() { Expect(capi.Stop()).To(Succeed()) })
	}, NodeTimeout(4*time.Minute))

	It("converts a v1beta1 ClusterClass with CAPI's conversion webhook", func(ctx SpecContext) {
		c := capi.Client()
		Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "capi"}})).To(Succeed())
		cc := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "ClusterClass",
			"metadata": map[string]any{"name": "old-style", "namespace": "capi"},
			"spec": map[string]any{
				"infrastructure": map[string]any{"ref": map[string]any{
					"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AWSClusterTemplate", "name": "infra"}},
				"controlPlane": map[string]any{"ref": map[string]any{
					"apiVersion": "controlplane.cluster.x-k8s.io/v1beta1", "kind": "KubeadmControlPlaneTemplate", "name": "cp"}},
			},
		}}
		Expect(c.Create(ctx, cc)).To(Succeed())
		got := &clusterv1.ClusterClass{}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: "capi", Name: "old-style"}, got)).To(Succeed())
		// v1beta1's spec.infrastructure.ref became v1beta2's spec.infrastructure.templateRef:
		// only a real conversion moves it.
		Expect(got.Spec.Infrastructure.TemplateRef.Kind).To(Equal("AWSClusterTemplate"))
		Expect(got.Spec.Infrastructure.TemplateRef.Name).To(Equal("infra"))
		Expect(got.Spec.ControlPlane.TemplateRef.Name).To(Equal("cp"))
	})
	It("answers for Clusters with CAPI's own webhooks", func(ctx SpecContext) {
		c := capi.Client()
		cluster := &clusterv1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: "bad-version", Namespace: "capi"},
			Spec: clusterv1.ClusterSpec{Topology: clusterv1.Topology{
				ClassRef: clusterv1.ClusterClassRef{Name: "old-style"},
				Version:  "not-a-version",
			}},
		}
		err := c.Create(ctx, cluster)
		Expect(err).To(HaveOccurred())
		GinkgoWriter.Printf("CAPI said: %v\n", err)
		Expect(err.Error()).To(ContainSubstring(`admission webhook "validation.cluster.cluster.x-k8s.io" denied the request`))
		Expect(err.Error()).To(ContainSubstring("spec.topology.version"))
	})
})
