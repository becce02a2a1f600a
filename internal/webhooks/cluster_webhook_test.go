package webhooks_test

import (
	"context"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/webhooks"
)

const denied = `admission webhook "vcluster.clusterstack.io" denied the request`

var _ = Describe("A Cluster using a ClusterStackRelease", func() {
	It("must set the release's Kubernetes version", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		createRelease(ctx, ns, "base", "1.36", "v1.36.3")

		err := k8s.Create(ctx, newCluster(ns, "wrong", "aws-base-1-36-v1", "v1.36.0"))
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
		Expect(err).To(MatchError(And(
			ContainSubstring(denied),
			ContainSubstring(`spec.topology.version: Invalid value: "v1.36.0"`),
			ContainSubstring(`ClusterStackRelease "aws-base-1-36-v1" was validated with Kubernetes v1.36.3: a Cluster using it must set spec.topology.version to "v1.36.3"`),
		)))

		Expect(k8s.Create(ctx, newCluster(ns, "right", "aws-base-1-36-v1", "v1.36.3"))).To(Succeed())
	})

	It("is admitted with a warning while the release has not been validated", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		createRelease(ctx, ns, "base", "1.37", "")

		Expect(k8s.Create(ctx, newCluster(ns, "early", "aws-base-1-37-v1", "v1.37.0"))).To(Succeed())
		Expect(warnings.all()).To(ContainElement(ContainSubstring(
			"ClusterStackRelease " + ns + "/aws-base-1-37-v1 has not been validated yet")))
	})

	It("may not use a release of another namespace", func(ctx SpecContext) {
		ns, other := newNamespace(ctx), newNamespace(ctx)
		createRelease(ctx, other, "base", "1.36", "v1.36.3")

		c := newCluster(ns, "foreign", "aws-base-1-36-v1", "v1.36.3")
		c.Spec.Topology.ClassRef.Namespace = other
		Expect(k8s.Create(ctx, c)).To(MatchError(And(
			ContainSubstring(denied),
			ContainSubstring("spec.topology.classRef.namespace"),
			ContainSubstring("ClusterStackRelease "+other+"/aws-base-1-36-v1, and a ClusterStack only serves Clusters of its own namespace"),
		)))
	})

	It("keeps its other fields writable when it no longer matches its release", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		rel := createRelease(ctx, ns, "base", "1.36", "v1.36.3")
		c := newCluster(ns, "old", "aws-base-1-36-v1", "v1.36.3")
		Expect(k8s.Create(ctx, c)).To(Succeed())

		By("validating the release again with another patch version")
		rel.Status.KubernetesVersion = "v1.36.4"
		Expect(k8s.Status().Update(ctx, rel)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(update(ctx, c, func(c *clusterv1.Cluster) { c.Spec.Topology.Version = "v1.36.5" })).
				To(MatchError(ContainSubstring(`must set spec.topology.version to "v1.36.4"`)))
		}).Should(Succeed(), "the webhook reads the release from its cache")

		By("changing labels and finalizers, as CAPI's controllers do")
		Expect(update(ctx, c, func(c *clusterv1.Cluster) {
			c.Labels = map[string]string{"team": "a"}
			c.Finalizers = []string{"test.clusterstack.io/keep"}
		})).To(Succeed())
		Expect(update(ctx, c, func(c *clusterv1.Cluster) { c.Finalizers = nil })).To(Succeed())

		By("moving to the release's version")
		Expect(update(ctx, c, func(c *clusterv1.Cluster) { c.Spec.Topology.Version = "v1.36.4" })).To(Succeed())
	})
})

var _ = Describe("A Cluster moving between releases", func() {
	var ns string
	var c *clusterv1.Cluster

	BeforeEach(func(ctx SpecContext) {
		ns = newNamespace(ctx)
		createRelease(ctx, ns, "base", "1.36", "v1.36.3")
		createRelease(ctx, ns, "base", "1.37", "v1.37.1")
		createRelease(ctx, ns, "base", "1.38", "v1.38.0")
		createRelease(ctx, ns, "other", "1.36", "v1.36.3")
		c = newCluster(ns, "mover", "aws-base-1-36-v1", "v1.36.3")
		Expect(k8s.Create(ctx, c)).To(Succeed())
	})

	It("moves to the next Kubernetes minor of its stack", func(ctx SpecContext) {
		Expect(moveTo(ctx, c, "aws-base-1-37-v1", "v1.37.1")).To(Succeed())
		Expect(c.Spec.Topology.ClassRef.Name).To(Equal("aws-base-1-37-v1"))
	})

	It("does not skip a Kubernetes minor", func(ctx SpecContext) {
		Expect(moveTo(ctx, c, "aws-base-1-38-v1", "v1.38.0")).To(MatchError(And(
			ContainSubstring(denied),
			ContainSubstring(`spec.topology.classRef.name: Invalid value: "aws-base-1-38-v1"`),
			ContainSubstring(`moving from ClusterStackRelease "aws-base-1-36-v1" (Kubernetes 1.36) to "aws-base-1-38-v1" (Kubernetes 1.38) skips a Kubernetes minor version`),
			ContainSubstring("it may move to a release of stack aws/base for Kubernetes 1.36 or 1.37"),
		)))
		expectUnchanged(ctx, c)
	})

	It("does not move to another stack", func(ctx SpecContext) {
		Expect(moveTo(ctx, c, "aws-other-1-36-v1", "v1.36.3")).To(MatchError(And(
			ContainSubstring(denied),
			ContainSubstring(`the Cluster uses ClusterStackRelease "aws-base-1-36-v1" of stack aws/base and cannot move to "aws-other-1-36-v1" of stack aws/other`),
		)))
		expectUnchanged(ctx, c)
	})

	It("moves to a ClusterClass that is not a release", func(ctx SpecContext) {
		Expect(moveTo(ctx, c, "my-own-class", "v1.40.0")).To(Succeed())
	})
})

var _ = Describe("Clusters that use no stack", func() {
	It("are not affected", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		createRelease(ctx, ns, "base", "1.36", "v1.36.3")

		for _, class := range []string{"quick-start", "aws-base-1-36-v9" /* shaped like a release, but none */} {
			c := newCluster(ns, "no-stack-"+strings.ReplaceAll(class, ".", "-"), class, "v1.30.0")
			Expect(k8s.Create(ctx, c)).To(Succeed())
			Expect(moveTo(ctx, c, class, "v1.32.1")).To(Succeed(), "skip minors")
			Expect(moveTo(ctx, c, class+"-2", "v1.31.0")).To(Succeed(), "downgrade")
		}
		noTopology := &clusterv1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: "no-topology", Namespace: ns},
			Spec:       clusterv1.ClusterSpec{ClusterNetwork: clusterv1.ClusterNetwork{ServiceDomain: "cluster.local"}},
		}
		Expect(k8s.Create(ctx, noTopology)).To(Succeed())
		Expect(update(ctx, noTopology, func(c *clusterv1.Cluster) { c.Labels = map[string]string{"a": "b"} })).To(Succeed())
	})
})

var _ = Describe("The failure policy, with the webhook unreachable", func() {
	It("refuses only what the rules are about", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		createRelease(ctx, ns, "base", "1.36", "v1.36.3")
		onStack := newCluster(ns, "on-stack", "aws-base-1-36-v1", "v1.36.3")
		Expect(k8s.Create(ctx, onStack)).To(Succeed())

		By("pointing the webhook configuration at a port nothing listens on")
		pointWebhookAt(ctx, "https://127.0.0.1:1"+webhooks.ClusterPath)
		DeferCleanup(func(ctx SpecContext) {
			pointWebhookAt(ctx, "")
			Eventually(func(g Gomega) {
				g.Expect(k8s.Create(ctx, newCluster(ns, "check", "aws-base-1-36-v1", "v1.36.0"))).To(MatchError(ContainSubstring(denied)))
			}).Should(Succeed(), "the webhook answers again")
		})
		Eventually(func(g Gomega) {
			g.Expect(moveTo(ctx, onStack, "aws-base-1-36-v1", "v1.36.0")).To(MatchError(And(
				ContainSubstring(`failed calling webhook "vcluster.clusterstack.io"`), Not(ContainSubstring(denied)))))
		}).Should(Succeed())

		By("creating a Cluster with a release's ClusterClass: refused")
		Expect(k8s.Create(ctx, newCluster(ns, "new-on-stack", "aws-base-1-36-v1", "v1.36.3"))).
			To(MatchError(ContainSubstring("failed calling webhook")))

		By("everything else: admitted")
		Expect(update(ctx, onStack, func(c *clusterv1.Cluster) {
			c.Labels = map[string]string{"team": "a"}
			c.Finalizers = []string{"test.clusterstack.io/keep"}
			c.Spec.Topology.ControlPlane.Replicas = ptr.To[int32](3)
		})).To(Succeed())
		Expect(update(ctx, onStack, func(c *clusterv1.Cluster) { c.Finalizers = nil })).To(Succeed())
		other := newCluster(ns, "other", "quick-start", "v1.30.0")
		Expect(k8s.Create(ctx, other)).To(Succeed())
		Expect(moveTo(ctx, other, "quick-start-2", "v1.33.0")).To(Succeed())
		Expect(k8s.Delete(ctx, onStack)).To(Succeed())
	})
})

// pointWebhookAt sets the URL of the installed webhook; "" restores envtest's.
var installedURL string

func pointWebhookAt(ctx context.Context, url string) {
	GinkgoHelper()
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	Expect(k8s.Get(ctx, client.ObjectKey{Name: "clusterstack-validating-webhook-configuration"}, vwc)).To(Succeed())
	if installedURL == "" {
		installedURL = *vwc.Webhooks[0].ClientConfig.URL
	}
	if url == "" {
		url = installedURL
	}
	vwc.Webhooks[0].ClientConfig.URL = &url
	Expect(k8s.Update(ctx, vwc)).To(Succeed())
}

func newNamespace(ctx context.Context) string {
	GinkgoHelper()
	n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "webhook-"}}
	Expect(k8s.Create(ctx, n)).To(Succeed())
	return n.Name
}

// createRelease creates release aws-<stack>-<k8s>-v1 in ns, validated with Kubernetes patch
// (not validated when patch is "").
func createRelease(ctx context.Context, ns, stack, k8sMinor, patch string) *csv1.ClusterStackRelease {
	GinkgoHelper()
	const provider, version = "aws", "v1"
	stackName := provider + "-" + stack + "-" + strings.ReplaceAll(k8sMinor, ".", "-")
	rel := &csv1.ClusterStackRelease{
		ObjectMeta: metav1.ObjectMeta{Name: stackName + "-" + version, Namespace: ns},
		Spec: csv1.ClusterStackReleaseSpec{
			ClusterStack: stackName, Provider: provider, StackName: stack, KubernetesVersion: k8sMinor, Version: version,
			Source: csv1.StackSource{URL: "https://git.example.com/stacks", Path: provider + "/" + stack},
		},
	}
	Expect(k8s.Create(ctx, rel)).To(Succeed())
	if patch != "" {
		rel.Status.KubernetesVersion = patch
		Expect(k8s.Status().Update(ctx, rel)).To(Succeed())
		// The webhook reads the release through the manager's cache, which sees the status a
		// moment later: a Cluster created before then is judged by the release without it.
		Eventually(ctx, func(g Gomega) {
			got := &csv1.ClusterStackRelease{}
			g.Expect(cached.Get(ctx, client.ObjectKeyFromObject(rel), got)).To(Succeed())
			g.Expect(got.Status.KubernetesVersion).To(Equal(patch))
		}).Should(Succeed())
	}
	return rel
}

func newCluster(ns, name, class, version string) *clusterv1.Cluster {
	return &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: clusterv1.ClusterSpec{Topology: clusterv1.Topology{
			ClassRef: clusterv1.ClusterClassRef{Name: class},
			Version:  version,
		}},
	}
}

// update re-reads c, applies mutate and writes it with a merge patch; c holds the result.
func update(ctx context.Context, c *clusterv1.Cluster, mutate func(*clusterv1.Cluster)) error {
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
		return err
	}
	patch := client.MergeFrom(c.DeepCopy())
	mutate(c)
	return k8s.Patch(ctx, c, patch)
}

func moveTo(ctx context.Context, c *clusterv1.Cluster, class, version string) error {
	return update(ctx, c, func(c *clusterv1.Cluster) {
		c.Spec.Topology.ClassRef.Name = class
		c.Spec.Topology.Version = version
	})
}

func expectUnchanged(ctx context.Context, c *clusterv1.Cluster) {
	GinkgoHelper()
	got := &clusterv1.Cluster{}
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(c), got)).To(Succeed())
	Expect(got.Spec.Topology.ClassRef.Name).To(Equal("aws-base-1-36-v1"))
	Expect(got.Spec.Topology.Version).To(Equal("v1.36.3"))
}
