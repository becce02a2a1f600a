package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"strings"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/registry"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/ocistack"
	"github.com/clusterstack-io/clusterstack-operator/internal/ocistack/ocitest"
	"github.com/clusterstack-io/clusterstack-operator/test/framework"
)

// Releases of the reference stack published to OCI registries (CNCF Distribution, real) as
// `stackctl push` publishes them, read by Flux's OCIRepositories (real source-controller):
// a signed release is verified and delivered, an unsigned one never is; and a release mirrored
// (`ocistack.Mirror`, what `stackctl mirror` runs) into a second registry, served over https
// with a private CA and credentials as an air-gapped site's would be, builds a Cluster with that
// registry as its only source.
var _ = Describe("Releases from OCI registries: signatures and mirrors", Ordered, func() {
	const (
		repo     = "stacks/signed"
		signedNS = "signed-oci"
		mirrorNS = "mirror-oci"
	)
	var (
		pub     []byte
		digests map[string]string
		mirror  *registry.Server
	)

	BeforeAll(func(ctx SpecContext) {
		signer, p := cosignKeyPair()
		pub = p
		// v1 is signed, v2 is not.
		var err error
		digests, err = framework.PushVersions(ctx, ociTarget(repo), repoRoot, GinkgoT().TempDir(), signer, versionOf("v1", nil))
		Expect(err).NotTo(HaveOccurred())
		d2, err := framework.PushVersions(ctx, ociTarget(repo), repoRoot, GinkgoT().TempDir(), nil, versionOf("v2", withStackVersion("v2")))
		Expect(err).NotTo(HaveOccurred())
		digests["v2"] = d2["v2"]

		mirror, err = registry.Start(ctx, registry.Options{BinDir: filepath.Join(repoRoot, "bin"), StateDir: GinkgoT().TempDir(), TLS: true,
			Users: map[string]string{"site": "site-password"}})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(mirror.Stop)
	})

	It("delivers a signed release, verified by Flux and pinned to its digest, and never an unsigned one", func(ctx SpecContext) {
		createNamespace(ctx, signedNS)
		Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cosign", Namespace: signedNS},
			Data: map[string][]byte{"cosign.pub": pub}})).To(Succeed())
		t := ociTarget(repo)
		cs := framework.OCIClusterStack(signedNS, t.URL, t.Insecure, stackInterval, "v1", "v2")
		cs.Spec.Source.OCI.Verify = &csv1.OCIVerification{SecretRef: meta.LocalObjectReference{Name: "cosign"}}
		Expect(k8s.Create(ctx, cs)).To(Succeed())

		Eventually(ctx, func(g Gomega) {
			rel := getRelease(ctx, g, signedNS, "v1")
			g.Expect(rel).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue))
			g.Expect("sha256:" + rel.Status.Commit).To(Equal(digests["v1"]))
			g.Expect(clusterClassPresence(ctx, signedNS, "v1")()).To(Equal(present))
		}).WithTimeout(3 * time.Minute).Should(Succeed())
		rel := getRelease(ctx, Default, signedNS, "v1")
		// The release's source and every chart's: pinned, verified.
		sources := []string{fluxgen.GitRepositoryName(rel.Name), fluxgen.ClusterClassObjectName(rel.Name)}
		for _, c := range rel.Status.Components {
			if c.Kind == csv1.ComponentKindHelm {
				Expect(c.ChartDigest).To(HavePrefix("sha256:"))
				sources = append(sources, fluxgen.AddonChartName(rel.Name, c.Name))
			}
		}
		for _, name := range sources {
			repo := &sourcev1.OCIRepository{}
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: signedNS, Name: name}, repo)).To(Succeed())
			Expect(repo.Spec.Reference.Digest).To(HavePrefix("sha256:"), "OCIRepository %s is pinned", name)
			verified := apimeta.FindStatusCondition(repo.Status.Conditions, sourcev1.SourceVerifiedCondition)
			Expect(verified).NotTo(BeNil(), "OCIRepository %s", name)
			Expect(verified.Status).To(Equal(metav1.ConditionTrue), "OCIRepository %s: %s", name, verified.Message)
		}
		GinkgoWriter.Printf("signed v1: Available: %s\n", apimeta.FindStatusCondition(rel.Status.Conditions, csv1.AvailableCondition).Message)

		Eventually(ctx, func(g Gomega) {
			rel := getRelease(ctx, g, signedNS, "v2")
			g.Expect(rel).To(framework.HaveCondition(csv1.DegradedCondition, metav1.ConditionTrue, "OCIRepository/"+tagPrefix+"v2"))
			c := apimeta.FindStatusCondition(rel.Status.Conditions, csv1.DegradedCondition)
			g.Expect(strings.ToLower(c.Message)).To(ContainSubstring("verif"))
			g.Expect(rel.Status.ClusterClass).To(BeNil(), "nothing of the unsigned release is validated")
		}).WithTimeout(3 * time.Minute).Should(Succeed())
		rel = getRelease(ctx, Default, signedNS, "v2")
		GinkgoWriter.Printf("unsigned v2 (%s): Degraded: %s\n", digests["v2"], apimeta.FindStatusCondition(rel.Status.Conditions, csv1.DegradedCondition).Message)
		Expect(clusterClassPresence(ctx, signedNS, "v2")()).To(Equal(absent), "the unsigned release's ClusterClass is never applied")
		Expect(getRelease(ctx, Default, signedNS, "v1")).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue))
	})

	It("builds a Cluster from a mirror in another registry (https, private CA, credentials), digests and signatures preserved", func(ctx SpecContext) {
		dst := ocistack.Target{URL: mirror.URL("site/aws-base"), Username: "site", Password: "site-password", CA: mirror.CA()}
		copied, err := ocistack.Mirror(ctx, ociTarget(repo), dst, tagPrefix+"v1")
		Expect(err).NotTo(HaveOccurred())
		Expect(copied.Descriptor.Digest.String()).To(Equal(digests["v1"]), "the mirror preserves the digest")
		Expect(copied.Signed).To(BeTrue(), "the signature is mirrored")

		createNamespace(ctx, mirrorNS)
		auth := base64.StdEncoding.EncodeToString([]byte("site:site-password"))
		config, err := json.Marshal(map[string]any{"auths": map[string]any{mirror.Host(): map[string]string{"username": "site", "password": "site-password", "auth": auth}}})
		Expect(err).NotTo(HaveOccurred())
		for _, s := range []*corev1.Secret{
			{ObjectMeta: metav1.ObjectMeta{Name: "site-registry", Namespace: mirrorNS}, Type: corev1.SecretTypeDockerConfigJson,
				Data: map[string][]byte{corev1.DockerConfigJsonKey: config}},
			{ObjectMeta: metav1.ObjectMeta{Name: "site-ca", Namespace: mirrorNS}, Data: map[string][]byte{"ca.crt": mirror.CA()}},
			{ObjectMeta: metav1.ObjectMeta{Name: "cosign", Namespace: mirrorNS}, Data: map[string][]byte{"cosign.pub": pub}},
		} {
			Expect(k8s.Create(ctx, s)).To(Succeed())
		}
		cs := framework.OCIClusterStack(mirrorNS, dst.URL, false, stackInterval, "v1")
		cs.Spec.Source.OCI.SecretRef = &meta.LocalObjectReference{Name: "site-registry"}
		cs.Spec.Source.OCI.CertSecretRef = &meta.LocalObjectReference{Name: "site-ca"}
		cs.Spec.Source.OCI.Verify = &csv1.OCIVerification{SecretRef: meta.LocalObjectReference{Name: "cosign"}}
		Expect(k8s.Create(ctx, cs)).To(Succeed())
		Expect(k8s.Create(ctx, newCluster(mirrorNS, "site", "v1", "10.91.0.0/16"))).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			a := getAddon(ctx, g, mirrorNS, "site")
			g.Expect(a).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue))
			g.Expect(a.Status.LastAppliedRelease).To(Equal(tagPrefix + "v1"))
		}).WithTimeout(8 * time.Minute).Should(Succeed())
		rel := getRelease(ctx, Default, mirrorNS, "v1")
		Expect("sha256:"+rel.Status.Commit).To(Equal(digests["v1"]), "the release is pinned to the digest published upstream")
		var repos sourcev1.OCIRepositoryList
		Expect(k8s.List(ctx, &repos, client.InNamespace(mirrorNS))).To(Succeed())
		Expect(repos.Items).NotTo(BeEmpty())
		for _, r := range repos.Items {
			Expect(r.Spec.URL).To(Equal(dst.URL), "OCIRepository %s reads the mirror, and nothing else", r.Name)
			Expect(r.Spec.Verify).NotTo(BeNil())
		}
		var gits sourcev1.GitRepositoryList
		Expect(k8s.List(ctx, &gits, client.InNamespace(mirrorNS))).To(Succeed())
		Expect(gits.Items).To(BeEmpty(), "no Git source")
	})
})

// Stacks whose registry is hostile (internal/ocistack/ocitest, served from this process on
// loopback to the operator and to Flux's real source-controller): each gets a clear Degraded on
// its own ClusterStack or release, nothing of it is delivered, and a stack of another namespace
// reading the plane's registry meanwhile is delivered as usual.
var _ = Describe("Releases from hostile OCI registries", Ordered, func() {
	hostile := func(mode ocitest.Mode, mut func(*ocitest.Registry)) *ocitest.Registry {
		GinkgoHelper()
		r := &ocitest.Registry{Mode: mode}
		if mut != nil {
			mut(r)
		}
		Expect(r.Start()).To(Succeed())
		DeferCleanup(r.Close)
		return r
	}
	stackOn := func(ctx context.Context, ns string, r *ocitest.Registry, versions ...string) {
		GinkgoHelper()
		createNamespace(ctx, ns)
		cs := framework.OCIClusterStack(ns, r.URL("stacks/aws-base"), true, stackInterval, versions...)
		cs.Spec.AutoSubscribe = len(versions) == 0
		Expect(k8s.Create(ctx, cs)).To(Succeed())
	}

	It("a registry listing millions of tags: TagListTooLarge on that stack, no release; another stack is delivered", func(ctx SpecContext) {
		r := hostile(ocitest.HugeTagList, nil)
		stackOn(ctx, "hostile-tags", r)
		createNamespace(ctx, "hostile-control")
		Expect(k8s.Create(ctx, newOCIClusterStack("hostile-control", "v1"))).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			cs := getStack(ctx, g, "hostile-tags")
			g.Expect(cs).To(framework.HaveCondition(csv1.ReleasesResolvedCondition, metav1.ConditionFalse))
			g.Expect(apimeta.FindStatusCondition(cs.Status.Conditions, csv1.ReleasesResolvedCondition).Reason).To(Equal(csv1.ReasonTagListTooLarge))
			g.Expect(cs).To(framework.HaveCondition(csv1.DegradedCondition, metav1.ConditionTrue, r.Host()))
			g.Expect(cs.Status.Releases).To(BeEmpty())
			g.Expect(getRelease(ctx, g, "hostile-control", "v1")).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue))
		}).WithTimeout(3 * time.Minute).Should(Succeed())
		GinkgoWriter.Printf("huge tag list: %s\n", apimeta.FindStatusCondition(getStack(ctx, Default, "hostile-tags").Status.Conditions, csv1.DegradedCondition).Message)
	})

	DescribeTable("a registry serving a broken release: the release Degraded with Flux's message, nothing delivered",
		func(ctx SpecContext, ns string, mode ocitest.Mode, mut func(*ocitest.Registry)) {
			r := hostile(mode, mut)
			stackOn(ctx, ns, r, "v1")
			Eventually(ctx, func(g Gomega) {
				rel := getRelease(ctx, g, ns, "v1")
				g.Expect(rel).To(framework.HaveCondition(csv1.DegradedCondition, metav1.ConditionTrue, "OCIRepository/"+tagPrefix+"v1"))
				g.Expect(rel).NotTo(framework.HaveCondition(csv1.StackValidCondition, metav1.ConditionTrue))
				g.Expect(rel.Status.ClusterClass).To(BeNil())
				g.Expect(rel.Status.Commit).To(BeEmpty())
			}).WithTimeout(4 * time.Minute).Should(Succeed())
			rel := getRelease(ctx, Default, ns, "v1")
			GinkgoWriter.Printf("%s: %s\n", mode, apimeta.FindStatusCondition(rel.Status.Conditions, csv1.DegradedCondition).Message)
			Expect(clusterClassPresence(ctx, ns, "v1")()).To(Equal(absent))
		},
		Entry("layers that do not match their digests", "hostile-digest", ocitest.BadLayerDigest, nil),
		Entry("a huge manifest", "hostile-manifest", ocitest.HugeManifest, func(r *ocitest.Registry) { r.ManifestBytes = 16 << 20 }),
		Entry("a stream of one byte a second", "hostile-slow", ocitest.SlowStream, nil),
	)
})
