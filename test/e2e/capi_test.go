package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/hooks"
)

// Issue 15, point 4: with Cluster API's core manager in the plane, the operator's Cluster
// webhook and CAPI's answer side by side, and moving a Cluster to the next Kubernetes minor's
// release runs CAPI's real upgrade flow (control plane first) on localinfra's stand-in
// control plane, while the operator moves the addons.
var _ = Describe("Cluster API alongside the operator", Ordered, func() {
	const (
		ns      = "capi"
		repo    = "capi-stacks"
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
		// The reference stack for Kubernetes 1.36 and a copy of it for 1.35, in one tree.
		withMinor135 := func(dir string) {
			from, to := filepath.Join(dir, "aws/base/1-36"), filepath.Join(dir, "aws/base/1-35")
			Expect(os.CopyFS(to, os.DirFS(from))).To(Succeed())
			meta := filepath.Join(to, "stack.yaml")
			b, err := os.ReadFile(meta)
			Expect(err).NotTo(HaveOccurred())
			Expect(os.WriteFile(meta, []byte(strings.ReplaceAll(string(b), "kubernetesVersion: 1.36.3", "kubernetesVersion: 1.35.4")), 0o644)).To(Succeed())
		}
		publishTo(ctx, repo, oldTag, withMinor135)
		publishTo(ctx, repo, newTag, withMinor135)
		createNamespace(ctx, ns)
		for _, minor := range []string{"1.35", "1.36"} {
			name := "aws-base-" + strings.ReplaceAll(minor, ".", "-")
			Expect(k8s.Create(ctx, &csv1.ClusterStack{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Spec: csv1.ClusterStackSpec{
					Provider: "aws", Name: "base", KubernetesVersion: minor,
					Source:   csv1.StackSource{URL: pl.Git().RepoURL(repo), Path: "aws/base/" + strings.ReplaceAll(minor, ".", "-")},
					Versions: []string{"v1"},
					Interval: &metav1.Duration{Duration: 10 * time.Second},
				},
			})).To(Succeed())
		}
		Eventually(ctx, func(g Gomega) {
			for _, tag := range []string{oldTag, newTag} {
				rel := &csv1.ClusterStackRelease{}
				g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: tag}, rel)).To(Succeed())
				g.Expect(rel).To(haveCondition(csv1.AvailableCondition, metav1.ConditionTrue), "release %s", tag)
			}
		}).WithTimeout(3 * time.Minute).Should(Succeed())
	}, NodeTimeout(5*time.Minute))

	cluster := func(name, class, version string) *clusterv1.Cluster {
		c := newCluster(ns, name, "v1", "192.168.0.0/16")
		c.Spec.Topology.ClassRef.Name = class
		c.Spec.Topology.Version = version
		return c
	}

	It("answers with CAPI's message for what CAPI refuses and with ours for what we refuse", func(ctx SpecContext) {
		// CAPI's topology validation: no such MachineDeployment class in the ClusterClass.
		bad := cluster("capi-refuses", oldTag, oldKube)
		bad.Spec.Topology.Workers.MachineDeployments = []clusterv1.MachineDeploymentTopology{{Class: "no-such-class", Name: "md-0"}}
		err := k8s.Create(ctx, bad)
		Expect(err).To(HaveOccurred())
		GinkgoWriter.Printf("CAPI said: %v\n", err)
		Expect(err.Error()).To(ContainSubstring(`admission webhook "validation.cluster.cluster.x-k8s.io" denied the request`))
		Expect(err.Error()).To(ContainSubstring("no-such-class"))

		// Ours: the release was validated with another Kubernetes version.
		wrong := cluster("we-refuse", oldTag, "v1.35.1")
		err = k8s.Create(ctx, wrong)
		Expect(err).To(HaveOccurred())
		GinkgoWriter.Printf("the operator said: %v\n", err)
		Expect(err.Error()).To(ContainSubstring("clusterstack.io"))
		Expect(err.Error()).To(ContainSubstring(`must set spec.topology.version to "` + oldKube + `"`))
		Expect(err.Error()).NotTo(ContainSubstring("validation.cluster.cluster.x-k8s.io"))
	})

	It("moves a Cluster to the next minor's release: CAPI upgrades the control plane, the operator the addons", func(ctx SpecContext) {
		c := cluster("upgrade", oldTag, oldKube)
		Expect(k8s.Create(ctx, c)).To(Succeed())
		key := client.ObjectKeyFromObject(c)
		Eventually(ctx, func(g Gomega) {
			g.Expect(k8s.Get(ctx, key, c)).To(Succeed())
			g.Expect(c.Spec.ControlPlaneRef.Kind).To(Equal("KubeadmControlPlane"), "CAPI's topology controller made the control plane")
			g.Expect(ptr.Deref(c.Status.Initialization.ControlPlaneInitialized, false)).To(BeTrue())
			a := getAddon(ctx, g, ns, "upgrade")
			g.Expect(a).To(haveCondition(csv1.AvailableCondition, metav1.ConditionTrue, oldTag))
		}).WithTimeout(4 * time.Minute).Should(Succeed())

		Eventually(ctx, func() error {
			if err := k8s.Get(ctx, key, c); err != nil {
				return err
			}
			patch := client.MergeFrom(c.DeepCopy())
			c.Spec.Topology.ClassRef.Name = newTag
			c.Spec.Topology.Version = newKube
			return k8s.Patch(ctx, c, patch)
		}).WithTimeout(time.Minute).Should(Succeed())

		cp := &controlplanev1.KubeadmControlPlane{}
		// CAPI discovered the operator's Runtime Extension (its BeforeClusterUpgrade gates
		// this upgrade until the target release's before-upgrade addons are Ready).
		Eventually(ctx, func(g Gomega) {
			ec := &runtimev1.ExtensionConfig{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: hooks.ExtensionConfigName}, ec)).To(Succeed())
			var handlers []string
			for _, h := range ec.Status.Handlers {
				handlers = append(handlers, h.RequestHook.Hook)
			}
			g.Expect(handlers).To(ContainElements("BeforeClusterUpgrade", "AfterControlPlaneInitialized", "BeforeClusterDelete"))
		}).Should(Succeed())
		Eventually(ctx, func(g Gomega) {
			g.Expect(k8s.Get(ctx, key, c)).To(Succeed())
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: c.Spec.ControlPlaneRef.Name}, cp)).To(Succeed())
			g.Expect(cp.Spec.Version).To(Equal(newKube), "CAPI moved the control plane's version")
			g.Expect(cp.Status.Version).To(Equal(newKube))
			a := getAddon(ctx, g, ns, "upgrade")
			g.Expect(a).To(haveCondition(csv1.AvailableCondition, metav1.ConditionTrue, newTag))
		}).WithTimeout(4 * time.Minute).Should(Succeed())
	})
})
