package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/sigstore/sigstore/pkg/signature"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/plane"
	"github.com/clusterstack-io/clusterstack-operator/internal/ocistack"
	"github.com/clusterstack-io/clusterstack-operator/internal/opgen"
)

// A ManagementOperator published to the plane's OCI registry (CNCF Distribution, real) as
// artifacts in Flux's format, signed with a cosign key: Flux's OCIRepository verifies every
// version before anything of it is applied; the operator lists the repository's tags itself.
var _ = Describe("Management operators delivered from an OCI registry", Ordered, func() {
	const (
		name     = "demo-oci-operator"
		targetNS = "demo-oci-system"
		delivery = "oci-delivery"
	)
	var (
		key     = client.ObjectKey{Name: name}
		mgmt    = plane.OperatorNamespace
		digests = map[string]string{}
	)
	getOp := func(g Gomega) *csv1.ManagementOperator {
		mo := &csv1.ManagementOperator{}
		g.Expect(k8s.Get(bg(), key, mo)).To(Succeed())
		return mo
	}
	deployment := func(g Gomega) *appsv1.Deployment {
		d := &appsv1.Deployment{}
		g.Expect(k8s.Get(bg(), client.ObjectKey{Namespace: targetNS, Name: name}, d)).To(Succeed())
		return d
	}

	BeforeAll(func(ctx SpecContext) {
		reg := pl.OCIRegistry()
		Expect(reg).NotTo(BeNil(), "the plane runs its registry")
		target := ocistack.Target{URL: reg.URL("operators/" + name), Insecure: reg.Insecure()}
		signer, pub := cosignKeyPair()
		// v1.1.0 is published without a signature.
		for _, v := range []string{"v1.0.0", "v1.1.0", "v1.2.0"} {
			dir := GinkgoT().TempDir()
			Expect(os.WriteFile(filepath.Join(dir, "namespace.yaml"), []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "+targetNS+"\n"), 0o644)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(dir, "deployment.yaml"), []byte(ociOperatorDeployment(name, targetNS, v)), 0o644)).To(Succeed())
			desc, err := ocistack.Push(ctx, target, dir, v, ocistack.Origin{})
			Expect(err).NotTo(HaveOccurred())
			digests[v] = desc.Digest.String()
			if v != "v1.1.0" {
				Expect(ocistack.Sign(ctx, target, desc, signer)).To(Succeed())
			}
		}
		createVerifiedOCIOperator(ctx, name, target.URL, delivery, pub, nil)
	})

	It("delivers a signed version, verified by Flux and pinned to its digest", func(ctx SpecContext) {
		Eventually(ctx, func(g Gomega) {
			mo := getOp(g)
			g.Expect(delivered(mo)).To(Equal("v1.0.0"))
			g.Expect(mo).To(haveOperatorCondition(csv1.AvailableCondition, metav1.ConditionTrue))
			g.Expect(mo).To(haveOperatorCondition(csv1.DegradedCondition, metav1.ConditionFalse))
			g.Expect(mo.Status.History).NotTo(BeEmpty())
			g.Expect("sha256:" + mo.Status.History[0].Commit).To(Equal(digests["v1.0.0"]))
			tv := apimeta.FindStatusCondition(mo.Status.Conditions, csv1.TagVerifiedCondition)
			g.Expect(tv).NotTo(BeNil())
			g.Expect(tv.Status).To(Equal(metav1.ConditionTrue), tv.Message)
			g.Expect(tv.Message).To(ContainSubstring("points at digest " + digests["v1.0.0"]))
			g.Expect(mo.Status.AvailableUpdates).To(ContainElements("v1.1.0", "v1.2.0"))
		}).WithTimeout(3 * time.Minute).Should(Succeed())
		Expect(deployment(Default).Labels).To(HaveKeyWithValue("app.kubernetes.io/version", "v1.0.0"))

		repo := &sourcev1.OCIRepository{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: mgmt, Name: opgen.ObjectName(name)}, repo)).To(Succeed())
		Expect(repo.Labels).To(HaveKeyWithValue(csv1.ManagementOperatorLabel, name))
		Expect(repo.Spec.Reference.Tag).To(Equal("v1.0.0"))
		Expect(repo.Spec.Reference.Digest).To(Equal(digests["v1.0.0"]))
		Expect(repo.Spec.Verify).NotTo(BeNil())
		verified := apimeta.FindStatusCondition(repo.Status.Conditions, sourcev1.SourceVerifiedCondition)
		Expect(verified).NotTo(BeNil())
		Expect(verified.Status).To(Equal(metav1.ConditionTrue), verified.Message)
	})

	It("never delivers an unsigned version: Degraded with Flux's verification failure, the signed one kept running", func(ctx SpecContext) {
		patchOperator(ctx, name, func(mo *csv1.ManagementOperator) { mo.Spec.Version = "v1.1.0" })
		Eventually(ctx, func(g Gomega) {
			mo := getOp(g)
			g.Expect(mo).To(haveOperatorCondition(csv1.DegradedCondition, metav1.ConditionTrue))
			c := apimeta.FindStatusCondition(mo.Status.Conditions, csv1.DegradedCondition)
			g.Expect(c.Message).To(ContainSubstring("OCIRepository/" + opgen.ObjectName(name)))
			g.Expect(strings.ToLower(c.Message)).To(ContainSubstring("verif"))
			g.Expect(c.Message).To(ContainSubstring("v1.1.0"))
			g.Expect(delivered(mo)).To(Equal("v1.0.0"))
			g.Expect(mo).To(haveOperatorCondition(csv1.AvailableCondition, metav1.ConditionTrue))
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		mo := getOp(Default)
		GinkgoWriter.Printf("unsigned v1.1.0: Degraded: %s\n", apimeta.FindStatusCondition(mo.Status.Conditions, csv1.DegradedCondition).Message)
		d := deployment(Default)
		Expect(d.Labels).To(HaveKeyWithValue("app.kubernetes.io/version", "v1.0.0"), "the unsigned version was applied")
	})

	It("moves on to the next signed version", func(ctx SpecContext) {
		patchOperator(ctx, name, func(mo *csv1.ManagementOperator) { mo.Spec.Version = "v1.2.0" })
		Eventually(ctx, func(g Gomega) {
			mo := getOp(g)
			g.Expect(delivered(mo)).To(Equal("v1.2.0"))
			g.Expect(mo).To(haveOperatorCondition(csv1.AvailableCondition, metav1.ConditionTrue))
			g.Expect(mo).To(haveOperatorCondition(csv1.DegradedCondition, metav1.ConditionFalse))
			g.Expect("sha256:" + mo.Status.History[0].Commit).To(Equal(digests["v1.2.0"]))
			g.Expect(deployment(g).Labels).To(HaveKeyWithValue("app.kubernetes.io/version", "v1.2.0"))
		}).WithTimeout(3 * time.Minute).Should(Succeed())
	})
})

// A ManagementOperator whose versions are Helm charts pushed to the registry by Helm's own
// format (as `helm push` writes them), signed: the HelmRelease reads the chart through the
// OCIRepository, and the version is reported once helm-controller installed the chart of the
// pinned digest.
var _ = Describe("Management operators delivered as Helm charts from an OCI registry", Ordered, func() {
	const (
		name     = "demo-oci-chart-operator"
		targetNS = "demo-oci-chart-system"
		delivery = "oci-chart-delivery"
	)
	var (
		key     = client.ObjectKey{Name: name}
		mgmt    = plane.OperatorNamespace
		digests = map[string]string{}
	)

	BeforeAll(func(ctx SpecContext) {
		reg := pl.OCIRegistry()
		Expect(reg).NotTo(BeNil(), "the plane runs its registry")
		target := ocistack.Target{URL: reg.URL("charts/" + name), Insecure: reg.Insecure()}
		signer, pub := cosignKeyPair()
		for _, v := range []string{"v1.0.0", "v1.1.0"} {
			ch := &chart.Chart{
				Metadata:  &chart.Metadata{APIVersion: chart.APIVersionV2, Name: name, Version: strings.TrimPrefix(v, "v"), AppVersion: v},
				Values:    map[string]any{"replicas": 1},
				Templates: []*chart.File{{Name: "templates/deployment.yaml", Data: []byte(chartDeployment)}},
			}
			tgz, err := chartutil.Save(ch, GinkgoT().TempDir())
			Expect(err).NotTo(HaveOccurred())
			data, err := os.ReadFile(tgz)
			Expect(err).NotTo(HaveOccurred())
			// Tagged with the ManagementOperator's version ("v1.0.0"), the chart's version being 1.0.0.
			desc, err := ocistack.PushChart(ctx, target, data, v)
			Expect(err).NotTo(HaveOccurred())
			Expect(ocistack.Sign(ctx, target, desc, signer)).To(Succeed())
			digests[v] = desc.Digest.String()
		}
		createVerifiedOCIOperator(ctx, name, target.URL, delivery, pub, &csv1.OperatorChart{TargetNamespace: targetNS})
	})

	It("installs the chart of the pinned digest, upgrades to the next tag, and reports each version once it serves", func(ctx SpecContext) {
		for _, v := range []string{"v1.0.0", "v1.1.0"} {
			patchOperator(ctx, name, func(mo *csv1.ManagementOperator) { mo.Spec.Version = v })
			Eventually(ctx, func(g Gomega) {
				mo := &csv1.ManagementOperator{}
				g.Expect(k8s.Get(bg(), key, mo)).To(Succeed())
				g.Expect(delivered(mo)).To(Equal(v))
				g.Expect(mo).To(haveOperatorCondition(csv1.AvailableCondition, metav1.ConditionTrue))
				g.Expect(mo).To(haveOperatorCondition(csv1.DegradedCondition, metav1.ConditionFalse))
				g.Expect("sha256:" + mo.Status.History[0].Commit).To(Equal(digests[v]))
				d := &appsv1.Deployment{}
				g.Expect(k8s.Get(bg(), client.ObjectKey{Namespace: targetNS, Name: name}, d)).To(Succeed())
				g.Expect(d.Labels).To(HaveKeyWithValue("app.kubernetes.io/version", v))
			}).WithTimeout(3 * time.Minute).Should(Succeed())
		}
		hr := &helmv2.HelmRelease{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: mgmt, Name: opgen.ObjectName(name)}, hr)).To(Succeed())
		Expect(hr.Spec.ChartRef.Kind).To(Equal(sourcev1.OCIRepositoryKind))
		latest := hr.Status.History.Latest()
		Expect(latest).NotTo(BeNil())
		GinkgoWriter.Printf("chart version installed from the OCIRepository: %s\n", latest.ChartVersion)
		Expect(latest.ChartVersion).To(Equal("1.1.0+" + strings.TrimPrefix(digests["v1.1.0"], "sha256:")[:12]))
	})
})

// cosignKeyPair is a new cosign key pair: the signer and the PEM public key.
func cosignKeyPair() (signature.Signer, []byte) {
	GinkgoHelper()
	priv, pub, err := ocistack.GenerateKeyPair([]byte("e2e"))
	Expect(err).NotTo(HaveOccurred())
	signer, err := ocistack.LoadSigner(priv, []byte("e2e"))
	Expect(err).NotTo(HaveOccurred())
	return signer, pub
}

// createVerifiedOCIOperator creates ManagementOperator name at v1.0.0 from the loopback
// registry's repository url, verified with the cosign public key pub (a Secret of the
// management namespace), delivered by the ServiceAccount delivery (granted here), as chart when
// chart is set, else with kustomize.
func createVerifiedOCIOperator(ctx context.Context, name, url, delivery string, pub []byte, chart *csv1.OperatorChart) {
	GinkgoHelper()
	mgmt := plane.OperatorNamespace
	Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + "-cosign", Namespace: mgmt},
		Data: map[string][]byte{"cosign.pub": pub}})).To(Succeed())
	grantDelivery(ctx, delivery)
	Expect(k8s.Create(ctx, &csv1.ManagementOperator{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: csv1.ManagementOperatorSpec{
			Component: csv1.OperatorComponent{Type: csv1.AddonProvider, Name: name},
			Version:   "v1.0.0",
			Source: csv1.OperatorSource{OCI: &csv1.OperatorOCISource{OCISource: csv1.OCISource{
				URL: url, Insecure: true,
				Verify: &csv1.OCIVerification{SecretRef: meta.LocalObjectReference{Name: name + "-cosign"}},
			}}},
			Chart:              chart,
			ServiceAccountName: delivery,
			Interval:           &metav1.Duration{Duration: 10 * time.Second},
			Timeout:            &metav1.Duration{Duration: 30 * time.Second},
		},
	})).To(Succeed())
}

// ociOperatorDeployment is the Deployment of a version of the OCI-published operator.
func ociOperatorDeployment(name, namespace, version string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ` + name + `
  namespace: ` + namespace + `
  labels:
    app.kubernetes.io/name: ` + name + `
    app.kubernetes.io/version: ` + version + `
spec:
  replicas: 1
  selector:
    matchLabels:
      app.kubernetes.io/name: ` + name + `
  template:
    metadata:
      labels:
        app.kubernetes.io/name: ` + name + `
        app.kubernetes.io/version: ` + version + `
    spec:
      containers:
        - name: manager
          image: registry.example.com/` + name + `:` + version + `
`
}
