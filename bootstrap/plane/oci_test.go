package plane_test

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterstack-io/clusterstack-operator/bootstrap/registry"
	"github.com/clusterstack-io/clusterstack-operator/internal/ocistack"
)

var _ = Describe("OCI releases on the local plane", Ordered, func() {
	const (
		signedTag   = "aws-base-1-36-v1"
		unsignedTag = "aws-base-1-36-v2"
	)
	var (
		ns       string
		src      ocistack.Target
		signed   ocistack.Copied
		unsigned ocistack.Copied
		pub      []byte
	)

	// ociRepository is an OCIRepository of url at ref, verified with the cosign key of the
	// Secret cosign-pub.
	ociRepository := func(name, url string, ref sourcev1.OCIRepositoryRef) *sourcev1.OCIRepository {
		return &sourcev1.OCIRepository{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: sourcev1.OCIRepositorySpec{
				URL:       url,
				Reference: &ref,
				Interval:  metav1.Duration{Duration: time.Hour},
				Timeout:   &metav1.Duration{Duration: 30 * time.Second},
				Verify:    &sourcev1.OCIRepositoryVerification{Provider: "cosign", SecretRef: &meta.LocalObjectReference{Name: "cosign-pub"}},
			},
		}
	}
	ready := func(ctx SpecContext, repo *sourcev1.OCIRepository) *metav1.Condition {
		var c *metav1.Condition
		Eventually(func(g Gomega) {
			g.Expect(pl.Client().Get(ctx, client.ObjectKeyFromObject(repo), repo)).To(Succeed())
			c = apimeta.FindStatusCondition(repo.Status.Conditions, meta.ReadyCondition)
			g.Expect(c).NotTo(BeNil(), "no Ready condition yet")
			g.Expect(c.ObservedGeneration).To(Equal(repo.Generation))
			g.Expect(c.Status).NotTo(Equal(metav1.ConditionUnknown), "Ready: %s: %s", c.Reason, c.Message)
			if c.Status == metav1.ConditionTrue {
				g.Expect(repo.Status.Artifact).NotTo(BeNil(), "Ready without an artifact yet")
			}
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		return c
	}

	BeforeAll(func(ctx SpecContext) {
		ns = createNamespace(ctx, "flux-oci")
		reg := pl.OCIRegistry()
		Expect(reg).NotTo(BeNil(), "the plane was started without its registry")
		src = ocistack.Target{URL: reg.URL("stacks/aws-base"), Insecure: reg.Insecure()}

		dir := filepath.Join(pl.RepoRoot(), "stacks", "aws", "base", "1-36")
		var priv []byte
		var err error
		priv, pub, err = ocistack.GenerateKeyPair([]byte("demo"))
		Expect(err).NotTo(HaveOccurred())
		signer, err := ocistack.LoadSigner(priv, []byte("demo"))
		Expect(err).NotTo(HaveOccurred())
		signed.Descriptor, err = ocistack.Push(ctx, src, dir, signedTag, ocistack.Origin{Source: pl.Git().URL() + "/stacks", Revision: signedTag + "@sha1:0000000000000000000000000000000000000000"})
		Expect(err).NotTo(HaveOccurred())
		Expect(ocistack.Sign(ctx, src, signed.Descriptor, signer)).To(Succeed())
		// Another directory, so another digest: published without a signature.
		other := GinkgoT().TempDir()
		Expect(os.CopyFS(other, os.DirFS(dir))).To(Succeed())
		Expect(os.WriteFile(filepath.Join(other, "NOTES"), []byte("unsigned\n"), 0o644)).To(Succeed())
		unsigned.Descriptor, err = ocistack.Push(ctx, src, other, unsignedTag, ocistack.Origin{})
		Expect(err).NotTo(HaveOccurred())

		Expect(pl.Client().Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "cosign-pub", Namespace: ns},
			Data:       map[string][]byte{"cosign.pub": pub},
		})).To(Succeed())
	})

	It("delivers a release signed with a cosign key at its digest, and refuses an unsigned one, naming its digest", func(ctx SpecContext) {
		c := pl.Client()
		good := ociRepository("signed", src.URL, sourcev1.OCIRepositoryRef{Tag: signedTag})
		good.Spec.Insecure = true
		// Pinned to its digest, as a validated release is: Flux's message names the digest (a
		// tag reference is named by its tag).
		bad := ociRepository("unsigned", src.URL, sourcev1.OCIRepositoryRef{Tag: unsignedTag, Digest: unsigned.Descriptor.Digest.String()})
		bad.Spec.Insecure = true
		badTag := ociRepository("unsigned-tag", src.URL, sourcev1.OCIRepositoryRef{Tag: unsignedTag})
		badTag.Spec.Insecure = true
		pinned := ociRepository("pinned", src.URL, sourcev1.OCIRepositoryRef{Tag: signedTag, Digest: signed.Descriptor.Digest.String()})
		pinned.Spec.Insecure = true
		for _, r := range []*sourcev1.OCIRepository{good, bad, badTag, pinned} {
			Expect(c.Create(ctx, r)).To(Succeed())
		}

		cond := ready(ctx, good)
		Expect(cond.Status).To(Equal(metav1.ConditionTrue), "signed release: %s: %s", cond.Reason, cond.Message)
		Expect(good.Status.Artifact.Revision).To(Equal(signedTag + "@" + signed.Descriptor.Digest.String()))
		verified := apimeta.FindStatusCondition(good.Status.Conditions, sourcev1.SourceVerifiedCondition)
		Expect(verified).NotTo(BeNil())
		Expect(verified.Status).To(Equal(metav1.ConditionTrue), "SourceVerified: %s", verified.Message)
		GinkgoWriter.Printf("signed release: Ready %s %s: %s; SourceVerified: %s\n", cond.Status, cond.Reason, cond.Message, verified.Message)

		cond = ready(ctx, pinned)
		Expect(cond.Status).To(Equal(metav1.ConditionTrue), "pinned release: %s: %s", cond.Reason, cond.Message)
		Expect(pinned.Status.Artifact.Revision).To(Equal(signed.Descriptor.Digest.String()))

		cond = ready(ctx, bad)
		Expect(cond.Status).To(Equal(metav1.ConditionFalse))
		Expect(cond.Reason).To(Equal(sourcev1.VerificationError))
		Expect(cond.Message).To(ContainSubstring(unsigned.Descriptor.Digest.String()))
		Expect(bad.Status.Artifact).To(BeNil(), "an unsigned release was delivered")
		GinkgoWriter.Printf("unsigned release: Ready %s %s: %s\n", cond.Status, cond.Reason, cond.Message)

		cond = ready(ctx, badTag)
		Expect(cond.Status).To(Equal(metav1.ConditionFalse))
		Expect(cond.Reason).To(Equal(sourcev1.VerificationError))
		Expect(cond.Message).To(ContainSubstring(":" + unsignedTag))
		Expect(badTag.Status.Artifact).To(BeNil(), "an unsigned release was delivered")
	}, SpecTimeout(3*time.Minute))

	It("reads a release from a mirror with credentials and a CA, with the source registry and the Git server stopped", func(ctx SpecContext) {
		c := pl.Client()
		mirrorReg, err := registry.Start(ctx, registry.Options{
			BinDir: filepath.Join(pl.RepoRoot(), "bin"), StateDir: GinkgoT().TempDir(), TLS: true,
			Users: map[string]string{"site": "air-gapped"},
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(mirrorReg.Stop)
		dst := ocistack.Target{URL: mirrorReg.URL("mirror/aws-base"), CA: mirrorReg.CA(), Username: "site", Password: "air-gapped"}
		copied, err := ocistack.Mirror(ctx, src, dst, signedTag)
		Expect(err).NotTo(HaveOccurred())
		Expect(copied.Descriptor.Digest).To(Equal(signed.Descriptor.Digest))
		Expect(copied.Signed).To(BeTrue(), "the signature was not copied")

		auth := base64.StdEncoding.EncodeToString([]byte("site:air-gapped"))
		config, err := json.Marshal(map[string]any{"auths": map[string]any{mirrorReg.Host(): map[string]string{"username": "site", "password": "air-gapped", "auth": auth}}})
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "mirror-credentials", Namespace: ns},
			Type:       corev1.SecretTypeDockerConfigJson,
			Data:       map[string][]byte{corev1.DockerConfigJsonKey: config},
		})).To(Succeed())
		Expect(c.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "mirror-ca", Namespace: ns},
			Data:       map[string][]byte{"ca.crt": mirrorReg.CA()},
		})).To(Succeed())

		// No other source reachable: the plane's registry and Git server are stopped while
		// Flux fetches and verifies the release from the mirror.
		Expect(pl.OCIRegistry().Stop()).To(Succeed())
		DeferCleanup(func(ctx SpecContext) error { return pl.OCIRegistry().Restart(ctx) })
		Expect(pl.StopGit()).To(Succeed())
		DeferCleanup(pl.StartGit)

		fromMirror := ociRepository("mirror", dst.URL, sourcev1.OCIRepositoryRef{Tag: signedTag})
		fromMirror.Spec.SecretRef = &meta.LocalObjectReference{Name: "mirror-credentials"}
		fromMirror.Spec.CertSecretRef = &meta.LocalObjectReference{Name: "mirror-ca"}
		Expect(c.Create(ctx, fromMirror)).To(Succeed())
		cond := ready(ctx, fromMirror)
		Expect(cond.Status).To(Equal(metav1.ConditionTrue), "release from the mirror: %s: %s", cond.Reason, cond.Message)
		Expect(fromMirror.Status.Artifact.Revision).To(Equal(signedTag + "@" + signed.Descriptor.Digest.String()))
		verified := apimeta.FindStatusCondition(fromMirror.Status.Conditions, sourcev1.SourceVerifiedCondition)
		Expect(verified).NotTo(BeNil())
		Expect(verified.Status).To(Equal(metav1.ConditionTrue), "SourceVerified: %s", verified.Message)
	}, SpecTimeout(3*time.Minute))
})
