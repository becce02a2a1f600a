package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/hooks"
	"github.com/clusterstack-io/clusterstack-operator/test/framework"
)

// Attacks on the Runtime Extension and on upgrades held without end (docs/multi-tenancy.md,
// "What the tests try"), with Cluster API's core manager in the plane:
//   - a BeforeClusterUpgrade component that never becomes Ready holds the upgrade, and after the
//     degraded grace period (not before) the ClusterAddon and its ClusterStack are Degraded
//     naming the component, its Flux object and the skip annotation, which lets the upgrade go;
//   - a request to the hook crafted for another namespace's Cluster gets no stage message;
//   - with the operator stopped, a Cluster of a ClusterClass that is no stack's, in a namespace
//     not labelled as a tenant's, upgrades: CAPI does not call the hook for it.
var _ = Describe("Attacks on the Runtime Extension", Ordered, ContinueOnFailure, func() {
	const (
		ns      = "hook-attacks"
		plainNS = "hook-plain"
		repo    = "hook-attack-stacks"
		oldTag  = "aws-base-1-35-v1"
		newTag  = "aws-base-1-36-v1"
		oldKube = "v1.35.4"
		newKube = "v1.36.3"
	)

	BeforeAll(func(ctx SpecContext) {
		if !withCAPI {
			Skip("E2E_WITH_CAPI=false: no Cluster API core manager in the plane")
		}
		_, err := pl.Git().CreateRepo(repo)
		Expect(err).NotTo(HaveOccurred())
		// 1.36 with a 1.35 copy; 1.36's cni (BeforeClusterUpgrade) is never Ready here: its
		// Deployment wants a Node labelled gateLabel=open, and no spec labels one.
		twoMinors := func(dir string) {
			from, to := filepath.Join(dir, "aws/base/1-36"), filepath.Join(dir, "aws/base/1-35")
			Expect(os.CopyFS(to, os.DirFS(from))).To(Succeed())
			editFile(to, "stack.yaml", func(s string) string {
				return strings.ReplaceAll(s, "kubernetesVersion: 1.36.3", "kubernetesVersion: 1.35.4")
			})
			Expect(os.WriteFile(filepath.Join(from, "cluster-addon/cni/templates/upgrade-gate.yaml"), []byte(upgradeGate), 0o644)).To(Succeed())
			editFile(from, "cluster-addon/cni/Chart.yaml", func(s string) string { return strings.Replace(s, "version: 1.0.0", "version: 1.0.1", 1) })
		}
		publishTo(ctx, repo, oldTag, twoMinors)
		publishTo(ctx, repo, newTag, twoMinors)
		createNamespace(ctx, ns)
		// A namespace of a team that does not use cluster stacks: not labelled as a tenant's.
		Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: plainNS}})).To(Succeed())
		finished.add(plainNS)
		for _, minor := range []string{"1.35", "1.36"} {
			Expect(k8s.Create(ctx, &csv1.ClusterStack{
				ObjectMeta: metav1.ObjectMeta{Name: "aws-base-" + strings.ReplaceAll(minor, ".", "-"), Namespace: ns},
				Spec: csv1.ClusterStackSpec{
					Provider: "aws", Name: "base", KubernetesVersion: minor,
					Source:   csv1.StackSource{URL: pl.Git().RepoURL(repo), Path: "aws/base/" + strings.ReplaceAll(minor, ".", "-")},
					Versions: []string{"v1"},
					Interval: &metav1.Duration{Duration: stackInterval},
				},
			})).To(Succeed())
		}
		Eventually(ctx, func(g Gomega) {
			for _, tag := range []string{oldTag, newTag} {
				g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: tag}, &clusterv1.ClusterClass{})).To(Succeed(), "ClusterClass %s", tag)
			}
		}).WithTimeout(3 * time.Minute).Should(Succeed())
	}, NodeTimeout(5*time.Minute))

	cluster := func(namespace, name, class, version, cidr string) *clusterv1.Cluster {
		c := newCluster(namespace, name, "v1", cidr)
		c.Spec.Topology.ClassRef.Name = class
		c.Spec.Topology.Version = version
		return c
	}
	controlPlaneVersion := func(g Gomega, namespace, name string) string {
		c := &clusterv1.Cluster{}
		g.Expect(k8s.Get(bg(), client.ObjectKey{Namespace: namespace, Name: name}, c)).To(Succeed())
		g.Expect(c.Spec.ControlPlaneRef.Name).NotTo(BeEmpty(), "CAPI made the control plane")
		cp := &controlplanev1.KubeadmControlPlane{}
		g.Expect(k8s.Get(bg(), client.ObjectKey{Namespace: namespace, Name: c.Spec.ControlPlaneRef.Name}, cp)).To(Succeed())
		return cp.Spec.Version
	}
	initialized := func(g Gomega, namespace, name string) {
		c := &clusterv1.Cluster{}
		g.Expect(k8s.Get(bg(), client.ObjectKey{Namespace: namespace, Name: name}, c)).To(Succeed())
		g.Expect(ptr.Deref(c.Status.Initialization.ControlPlaneInitialized, false)).To(BeTrue())
	}

	It("holds an upgrade only until the grace period says so: Degraded naming the component, its Flux object and the skip annotation, which lets it through", func(ctx SpecContext) {
		Expect(k8s.Create(ctx, cluster(ns, "held", oldTag, oldKube, "10.140.0.0/16"))).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			initialized(g, ns, "held")
			g.Expect(getAddon(ctx, g, ns, "held")).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue, oldTag))
		}).WithTimeout(4 * time.Minute).Should(Succeed())
		Eventually(ctx, func() error { return patchTopology(ctx, ns, "held", newTag, newKube) }).WithTimeout(time.Minute).Should(Succeed())

		var stage *csv1.AddonStageStatus
		Eventually(ctx, func(g Gomega) {
			a := getAddon(ctx, g, ns, "held")
			stage = stageOf(a, csv1.StageBeforeClusterUpgrade)
			g.Expect(stage).NotTo(BeNil(), "stages: %+v", a.Status.Stages)
			g.Expect(stage.Release).To(Equal(newTag))
			g.Expect(stage.Applied).To(BeTrue())
			g.Expect(stage.Ready).To(BeFalse())
		}).Should(Succeed())

		By("after the grace period, not before, the ClusterAddon is Degraded: UpgradeHeld")
		var degraded *metav1.Condition
		Eventually(ctx, func(g Gomega) {
			a := getAddon(ctx, g, ns, "held")
			degraded = framework.Condition(a, csv1.DegradedCondition)
			g.Expect(degraded).NotTo(BeNil())
			g.Expect(degraded.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(degraded.Reason).To(Equal(csv1.ReasonUpgradeHeld))
			stage = stageOf(a, csv1.StageBeforeClusterUpgrade)
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		GinkgoWriter.Printf("the operator said: %s\n", degraded.Message)
		Expect(degraded.Message).To(And(
			ContainSubstring("component cni"), ContainSubstring("HelmRelease/held-cni"),
			ContainSubstring("kubectl annotate cluster -n "+ns+" held "+csv1.SkipBeforeUpgradeGateAnnotation+"=")))
		Expect(degraded.LastTransitionTime.Sub(stage.LastTransitionTime.Time)).To(BeNumerically(">=", grace),
			"Degraded at %s, the hold began at %s: not before the grace period of %s", degraded.LastTransitionTime, stage.LastTransitionTime, grace)
		Expect(controlPlaneVersion(Default, ns, "held")).To(Equal(oldKube), "the hook still holds the upgrade")
		Eventually(ctx, func(g Gomega) {
			g.Expect(getStack(ctx, g, ns)).To(framework.HaveCondition(csv1.DegradedCondition, metav1.ConditionTrue, csv1.SkipBeforeUpgradeGateAnnotation))
		}).Should(Succeed(), "the ClusterStack's roll-up names the hold too")

		By("a request crafted for that Cluster gets no stage message; only the Cluster CAPI sends, uid and all, does")
		held := &clusterv1.Cluster{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "held"}, held)).To(Succeed())
		crafted := held.DeepCopy()
		crafted.UID = types.UID("00000000-0000-0000-0000-000000000000")
		code, _ := askHook(ctx, nil, crafted)
		Expect(code).To(Equal(http.StatusForbidden), "a client without CAPI's client certificate is refused")
		capi := pl.RuntimeExtensionClient()
		cert, err := tls.LoadX509KeyPair(capi.Cert, capi.Key)
		Expect(err).NotTo(HaveOccurred())
		code, resp := askHook(ctx, &cert, crafted)
		Expect(code).To(Equal(http.StatusOK))
		GinkgoWriter.Printf("crafted request: %+v\n", resp)
		Expect(resp.Message).NotTo(Or(ContainSubstring("cni"), ContainSubstring("waiting")), "no stage message for a Cluster the client has not read")
		Expect(resp.RetryAfterSeconds).To(BeZero())
		code, resp = askHook(ctx, &cert, held)
		Expect(code).To(Equal(http.StatusOK))
		Expect(resp.RetryAfterSeconds).NotTo(BeZero())
		Expect(resp.Message).To(And(ContainSubstring("cni"), ContainSubstring(csv1.SkipBeforeUpgradeGateAnnotation)), "the Cluster as CAPI sends it gets the stage")

		By("the skip annotation the message names lets the upgrade through")
		Eventually(ctx, func() error {
			c := &clusterv1.Cluster{}
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "held"}, c); err != nil {
				return err
			}
			patch := client.MergeFrom(c.DeepCopy())
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			c.Annotations[csv1.SkipBeforeUpgradeGateAnnotation] = ""
			return k8s.Patch(ctx, c, patch)
		}).WithTimeout(time.Minute).Should(Succeed())
		Eventually(ctx, func(g Gomega) string { return controlPlaneVersion(g, ns, "held") }).WithTimeout(3 * time.Minute).Should(Equal(newKube))
	})

	It("does not stand in the way of Clusters that use no stack: with the operator stopped, one in an unlabelled namespace upgrades", func(ctx SpecContext) {
		// A ClusterClass of a team that uses no cluster stack: a copy of the 1.35 release's
		// ClusterClass and templates under names of its own, in the unlabelled namespace.
		copyClusterClass(ctx, ns, oldTag, plainNS, "plain-class")
		Expect(k8s.Create(ctx, cluster(plainNS, "plain", "plain-class", oldKube, "10.141.0.0/16"))).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			initialized(g, plainNS, "plain")
			g.Expect(controlPlaneVersion(g, plainNS, "plain")).To(Equal(oldKube))
		}).WithTimeout(4 * time.Minute).Should(Succeed())

		By("the operator is stopped; the Cluster's Kubernetes version is raised")
		Expect(pl.StopOperator(false)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(pl.StartOperator(ctx)).To(Succeed()) }, NodeTimeout(3*time.Minute))
		Eventually(ctx, func() error { return patchTopology(ctx, plainNS, "plain", "plain-class", newKube) }).WithTimeout(time.Minute).Should(Succeed())
		Eventually(ctx, func(g Gomega) string { return controlPlaneVersion(g, plainNS, "plain") }).WithTimeout(3*time.Minute).Should(Equal(newKube),
			"CAPI's topology controller moves the control plane on: the hook is not called for a namespace without %s", csv1.TenantNamespaceLabel)
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: plainNS, Name: "plain"}, &csv1.ClusterAddon{})).To(
			WithTransform(apierrors.IsNotFound, BeTrue()), "nothing of the operator's for a Cluster of no stack")
	})
})

// askHook sends the operator's BeforeClusterUpgrade hook a request for Cluster c, as any client
// that reaches the webhook port can (with cert, a client certificate), and returns the HTTP
// status and the answer.
func askHook(ctx context.Context, cert *tls.Certificate, c *clusterv1.Cluster) (int, runtimehooksv1.BeforeClusterUpgradeResponse) {
	GinkgoHelper()
	var resp runtimehooksv1.BeforeClusterUpgradeResponse
	cfg := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12} //nolint:gosec // an attacker does not check whom it talks to
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	body, err := json.Marshal(&runtimehooksv1.BeforeClusterUpgradeRequest{Cluster: *c, FromKubernetesVersion: "v1.35.4", ToKubernetesVersion: "v1.36.3"})
	Expect(err).NotTo(HaveOccurred())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost,
		"https://"+pl.OperatorWebhookAddr()+hooks.Path("BeforeClusterUpgrade", hooks.BeforeClusterUpgradeHandler), bytes.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	r, err := (&http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}).Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	Expect(err).NotTo(HaveOccurred())
	if r.StatusCode == http.StatusOK {
		Expect(json.Unmarshal(b, &resp)).To(Succeed())
	}
	return r.StatusCode, resp
}

// copyClusterClass copies ClusterClass name of namespace from, with every template it refers to,
// into namespace to as ClusterClass as (the templates prefixed with it).
func copyClusterClass(ctx context.Context, from, name, to, as string) {
	GinkgoHelper()
	cc := &unstructured.Unstructured{}
	cc.SetGroupVersionKind(clusterv1.GroupVersion.WithKind("ClusterClass"))
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: from, Name: name}, cc)).To(Succeed())
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			if ref, ok := t["templateRef"].(map[string]any); ok {
				tmpl := &unstructured.Unstructured{}
				tmpl.SetAPIVersion(ref["apiVersion"].(string))
				tmpl.SetKind(ref["kind"].(string))
				Expect(k8s.Get(ctx, client.ObjectKey{Namespace: from, Name: ref["name"].(string)}, tmpl)).To(Succeed())
				copied := &unstructured.Unstructured{Object: map[string]any{"apiVersion": tmpl.GetAPIVersion(), "kind": tmpl.GetKind(), "spec": tmpl.Object["spec"]}}
				copied.SetNamespace(to)
				copied.SetName(as + "-" + tmpl.GetName())
				if err := k8s.Create(ctx, copied); !apierrors.IsAlreadyExists(err) {
					Expect(err).NotTo(HaveOccurred())
				}
				ref["name"] = copied.GetName()
			}
			for _, e := range t {
				walk(e)
			}
		case []any:
			for _, e := range t {
				walk(e)
			}
		}
	}
	spec := cc.Object["spec"]
	walk(spec)
	copied := &unstructured.Unstructured{Object: map[string]any{"apiVersion": cc.GetAPIVersion(), "kind": cc.GetKind(), "spec": spec}}
	copied.SetNamespace(to)
	copied.SetName(as)
	Expect(k8s.Create(ctx, copied)).To(Succeed())
}
