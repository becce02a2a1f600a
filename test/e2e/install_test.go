package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"path/filepath"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterstack-io/clusterstack-operator/internal/manifests"
	"github.com/clusterstack-io/clusterstack-operator/test/install"
)

// Install paths: the operator's Helm chart and the documented Flux install
// (config/flux, docs/installing.md) against the plane's management API server. The chart is
// rendered and every object applied with a server-side dry run; then the chart is published to
// the plane's Git server and installed for real by Flux's helm-controller from the documented
// GitRepository and HelmRelease, next to the plane's own operator: the release gets its own
// names (fullnameOverride) and the webhook is scoped to the install's namespace, so nothing the
// other specs do passes through it. kwok runs the two manager Pods, so Helm's wait sees the
// Deployment Available. Deleting the HelmRelease uninstalls it all.
var _ = Describe("Installing the operator", Ordered, func() {
	const (
		chartRepo = "clusterstack-operator" // the repository on the plane's Git server
		installer = "installer"             // the ServiceAccount helm-controller installs as
		fullname  = "e2e-install"           // fullnameOverride of the release
		fieldMgr  = "e2e-install"
	)
	var (
		ns      string
		version string
	)

	BeforeAll(func(ctx SpecContext) {
		var err error
		version, err = install.Version(repoRoot)
		Expect(err).NotTo(HaveOccurred())
		ns = "install"
		Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))).To(Succeed())
		})
	})

	It("renders the chart and applies every object with a server-side dry run", func(ctx SpecContext) {
		for _, tc := range []struct {
			name     string
			values   map[string]any
			unserved []string // kinds whose CRDs the plane does not have
		}{
			{"default values: cert-manager", nil, []string{"Certificate", "Issuer"}},
			{"provided certificate, ServiceMonitor and ExtensionConfig", map[string]any{
				"webhook": map[string]any{
					"certManager": map[string]any{"enabled": false},
					"certificate": map[string]any{"secretName": "webhook-cert", "caBundle": testCABundle()},
				},
				"metrics":          map[string]any{"serviceMonitor": map[string]any{"enabled": true}},
				"runtimeExtension": map[string]any{"extensionConfig": map[string]any{"create": true}},
			}, []string{"ServiceMonitor"}},
		} {
			By(tc.name)
			values := map[string]any{"fullnameOverride": "dry-run", "tenant": map[string]any{"clusterRoleName": ns + "-dry-run-tenant"}}
			for k, v := range tc.values {
				values[k] = v
			}
			r, err := install.Render(filepath.Join(repoRoot, install.ChartDir), "dry-run", ns, values)
			Expect(err).NotTo(HaveOccurred())
			var unserved []string
			for _, o := range append(r.CRDs, r.Objects...) {
				gvk := o.GroupVersionKind()
				if _, err := k8s.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); apimeta.IsNoMatchError(err) {
					unserved = append(unserved, gvk.Kind)
					continue
				}
				Expect(k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.DryRunAll,
					client.FieldOwner(fieldMgr), client.ForceOwnership)).To(Succeed(), "dry run of %s %s", gvk.Kind, o.GetName())
			}
			Expect(unserved).To(ConsistOf(tc.unserved))
		}
		// A dry run leaves nothing behind.
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dry-run"}, &appsv1.Deployment{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Deployment dry-run: %v", err)

		By("the documented Kustomization of config/default")
		objs, err := manifests.Build(filepath.Join(repoRoot, install.FluxDir, "kustomize"))
		Expect(err).NotTo(HaveOccurred())
		Expect(objs).To(HaveLen(2))
		for _, o := range objs {
			o.SetNamespace(ns)
			Expect(k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.DryRunAll,
				client.FieldOwner(fieldMgr), client.ForceOwnership)).To(Succeed(), "dry run of %s %s", o.GetKind(), o.GetName())
		}
	})

	It("is installed by Flux from the documented GitRepository and HelmRelease, and uninstalled with it", func(ctx SpecContext) {
		By("publishing the chart to the plane's Git server at the release tag")
		_, err := pl.Git().CreateRepo(chartRepo)
		Expect(err).NotTo(HaveOccurred())
		Expect(pl.Git().Publish(ctx, chartRepo, filepath.Join(repoRoot, install.ChartDir), install.ChartDir, "v"+version)).To(Succeed())

		By("an identity that may install cluster-scoped objects (Flux runs in the multi-tenancy lockdown)")
		Expect(k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: installer, Namespace: ns}})).To(Succeed())
		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "e2e-" + ns + "-" + installer},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: installer, Namespace: ns}},
		}
		Expect(k8s.Create(ctx, crb)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(k8s.Delete(ctx, crb))).To(Succeed()) })

		By("applying the documented objects, pointed at the plane")
		objs, err := manifests.Build(filepath.Join(repoRoot, install.FluxDir, "helm"))
		Expect(err).NotTo(HaveOccurred())
		Expect(objs).To(HaveLen(2))
		repo, hr := &sourcev1.GitRepository{}, &helmv2.HelmRelease{}
		Expect(runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(objs[0].Object, repo, true)).To(Succeed())
		Expect(runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(objs[1].Object, hr, true)).To(Succeed())
		// The documented source follows the release tag the chart was published at.
		Expect(repo.Spec.Reference.Tag).To(Equal("v" + version))
		repo.Namespace, repo.Spec.URL = ns, pl.Git().RepoURL(chartRepo)
		hr.Namespace, hr.Spec.TargetNamespace, hr.Spec.StorageNamespace = ns, ns, ns
		hr.Spec.ServiceAccountName = installer
		// The plane has the CRDs (and its operator uses them): leave them alone.
		hr.Spec.Install.CRDs, hr.Spec.Upgrade.CRDs = helmv2.Skip, helmv2.Skip
		values, err := json.Marshal(map[string]any{
			// The plane's operator owns the default names (config/rbac, config/tenant).
			"fullnameOverride": fullname,
			"tenant":           map[string]any{"clusterRoleName": ns + "-tenant"},
			// No cert-manager here; the webhook sees only Clusters of this namespace (none), and
			// would let them through anyway.
			"webhook": map[string]any{
				"certManager":       map[string]any{"enabled": false},
				"certificate":       map[string]any{"secretName": fullname + "-cert", "caBundle": testCABundle()},
				"failurePolicy":     "Ignore",
				"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": ns}},
			},
		})
		Expect(err).NotTo(HaveOccurred())
		hr.Spec.Values = &apiextensionsv1.JSON{Raw: values}
		started := time.Now()
		Expect(k8s.Create(ctx, repo)).To(Succeed())
		Expect(k8s.Create(ctx, hr)).To(Succeed())

		Eventually(ctx, func(g Gomega) {
			got := &helmv2.HelmRelease{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(hr), got)).To(Succeed())
			g.Expect(got.Status.Conditions).To(ContainElement(And(
				HaveField("Type", "Ready"), HaveField("Status", metav1.ConditionTrue))), "HelmRelease %s/%s: %v", ns, hr.Name, got.Status.Conditions)
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		GinkgoWriter.Printf("HelmRelease Ready %s after creating it\n", time.Since(started).Round(time.Second))

		By("the installed objects, labelled by Helm and Flux")
		release := hr.Spec.ReleaseName
		labelled := func(o client.Object) {
			GinkgoHelper()
			Expect(o.GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/name", "clusterstack-operator"))
			Expect(o.GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/instance", release))
			Expect(o.GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "Helm"))
			Expect(o.GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/version", "v"+version))
			Expect(o.GetLabels()).To(HaveKeyWithValue("helm.toolkit.fluxcd.io/name", hr.Name))
			Expect(o.GetLabels()).To(HaveKeyWithValue("helm.toolkit.fluxcd.io/namespace", ns))
		}
		d := &appsv1.Deployment{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: fullname}, d)).To(Succeed())
		labelled(d)
		Expect(*d.Spec.Replicas).To(BeEquivalentTo(2))
		Expect(d.Status.AvailableReplicas).To(BeEquivalentTo(2), "Helm waited for the Deployment")
		Expect(d.Spec.Template.Spec.ServiceAccountName).To(Equal(fullname))
		Expect(d.Spec.Template.Spec.Containers[0].Args).To(ContainElements("--leader-elect", "--enable-webhooks"))

		// The ClusterRole grants exactly config/rbac's rules, to the release's ServiceAccount.
		rbacObjs, err := manifests.Build(filepath.Join(repoRoot, "config", "rbac"))
		Expect(err).NotTo(HaveOccurred())
		var want rbacv1.ClusterRole
		for _, o := range rbacObjs {
			if o.GetKind() == "ClusterRole" {
				Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &want)).To(Succeed())
			}
		}
		Expect(want.Rules).NotTo(BeEmpty())
		cr := &rbacv1.ClusterRole{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: fullname}, cr)).To(Succeed())
		labelled(cr)
		Expect(cr.Rules).To(Equal(want.Rules))
		sa := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: fullname, Namespace: ns}
		binding := &rbacv1.ClusterRoleBinding{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: fullname}, binding)).To(Succeed())
		Expect(binding.RoleRef.Name).To(Equal(fullname))
		Expect(binding.Subjects).To(ConsistOf(sa))
		roleBinding := &rbacv1.RoleBinding{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: fullname + "-leader-election"}, roleBinding)).To(Succeed())
		Expect(roleBinding.Subjects).To(ConsistOf(sa))

		pdb := &policyv1.PodDisruptionBudget{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: fullname}, pdb)).To(Succeed())
		labelled(pdb)
		Expect(pdb.Spec.MinAvailable.IntValue()).To(Equal(1))
		vwc := &admissionv1.ValidatingWebhookConfiguration{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: fullname}, vwc)).To(Succeed())
		labelled(vwc)
		Expect(vwc.Webhooks).To(HaveLen(1))
		Expect(vwc.Webhooks[0].NamespaceSelector.MatchLabels).To(Equal(map[string]string{"kubernetes.io/metadata.name": ns}))
		Expect(vwc.Webhooks[0].ClientConfig.Service.Name).To(Equal(fullname + "-webhook"))

		installed := []client.Object{
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fullname}},
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fullname + "-webhook"}},
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fullname + "-metrics"}},
			&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fullname + "-leader-election"}},
			&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ns + "-tenant"}},
			d, cr, binding, roleBinding, pdb, vwc,
		}
		for _, o := range installed {
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(o), o)).To(Succeed(), "%T %s", o, o.GetName())
			labelled(o)
		}

		By("deleting the HelmRelease, which uninstalls the release")
		Expect(k8s.Delete(ctx, hr)).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			var left []string
			for _, o := range append(installed, hr) {
				err := k8s.Get(ctx, client.ObjectKeyFromObject(o), o)
				if err == nil && o.GetDeletionTimestamp() == nil {
					left = append(left, fmt.Sprintf("%T %s", o, o.GetName()))
				} else if err == nil || !apierrors.IsNotFound(err) {
					left = append(left, fmt.Sprintf("%T %s (being deleted: %v)", o, o.GetName(), err))
				}
			}
			g.Expect(left).To(BeEmpty())
		}).WithTimeout(time.Minute).Should(Succeed())
		// Helm never deletes the CRDs of crds/; this install skipped them anyway.
		Expect(k8s.Get(ctx, client.ObjectKey{Name: "clusterstacks.clusterstack.io"}, &apiextensionsv1.CustomResourceDefinition{})).To(Succeed())
		awaitGone(ctx, repo, time.Minute)
	})
})

// testCABundle returns the base64 PEM of a fresh self-signed CA certificate: a caBundle the API
// server accepts. Nothing serves a certificate it signed.
func testCABundle() string {
	GinkgoHelper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "e2e-install-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	Expect(err).NotTo(HaveOccurred())
	return base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}
