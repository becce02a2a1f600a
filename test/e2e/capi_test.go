package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/hooks"
	"github.com/clusterstack-io/clusterstack-operator/test/framework"
)

// With Cluster API's core manager in the plane, the operator's Cluster
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
			// 1.36's cni (a BeforeClusterUpgrade component) is Ready only once the test opens
			// the gate: a Deployment that runs only on Nodes labelled gateLabel=open.
			Expect(os.WriteFile(filepath.Join(from, "cluster-addon/cni/templates/upgrade-gate.yaml"), []byte(upgradeGate), 0o644)).To(Succeed())
			// A changed chart needs a new chart version: helm-controller does not upgrade a
			// release whose chart version and values are unchanged.
			chart := filepath.Join(from, "cluster-addon/cni/Chart.yaml")
			b, err = os.ReadFile(chart)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(b)).To(ContainSubstring("version: 1.0.0"))
			Expect(os.WriteFile(chart, []byte(strings.Replace(string(b), "version: 1.0.0", "version: 1.0.1", 1)), 0o644)).To(Succeed())
			// 1.35 has a component 1.36 drops with a delete step before the upgrade; 1.36 moves
			// cluster-info only after the upgrade (control plane and workers).
			legacy := filepath.Join(to, "cluster-addon/legacy")
			Expect(os.MkdirAll(legacy, 0o755)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(legacy, "kustomization.yaml"), []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - configmap.yaml\n"), 0o644)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(legacy, "configmap.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: legacy\n  namespace: kube-system\ndata:\n  from: "+oldTag+"\n"), 0o644)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(from, "clusteraddon.yaml"), []byte(stagesOf136), 0o644)).To(Succeed())
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
				g.Expect(rel).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue), "release %s", tag)
			}
		}).WithTimeout(3 * time.Minute).Should(Succeed())
	}, NodeTimeout(8*time.Minute))

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
		// A worker pool whose upgrade CAPI defers until the test lets it go: the
		// AfterClusterUpgrade components wait for the workers too.
		c.Spec.Topology.Workers.MachineDeployments = []clusterv1.MachineDeploymentTopology{{
			Class: "default-worker", Name: "md-0", Replicas: ptr.To[int32](1),
			Metadata: clusterv1.ObjectMeta{Annotations: map[string]string{clusterv1.ClusterTopologyDeferUpgradeAnnotation: ""}},
		}}
		Expect(k8s.Create(ctx, c)).To(Succeed())
		key := client.ObjectKeyFromObject(c)
		Eventually(ctx, func(g Gomega) {
			g.Expect(k8s.Get(ctx, key, c)).To(Succeed())
			g.Expect(c.Spec.ControlPlaneRef.Kind).To(Equal("KubeadmControlPlane"), "CAPI's topology controller made the control plane")
			g.Expect(ptr.Deref(c.Status.Initialization.ControlPlaneInitialized, false)).To(BeTrue())
			a := getAddon(ctx, g, ns, "upgrade")
			g.Expect(a).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue, oldTag))
			g.Expect(componentOf(a, "legacy")).NotTo(BeNil())
			md := workerPool(ctx, g, ns, "upgrade")
			g.Expect(ptr.Deref(md.Status.AvailableReplicas, 0)).To(Equal(int32(1)))
		}).WithTimeout(4 * time.Minute).Should(Succeed())
		wcfg, err := pl.WorkloadConfig(ctx, ns, "upgrade")
		Expect(err).NotTo(HaveOccurred())
		wc, err := client.New(wcfg, client.Options{})
		Expect(err).NotTo(HaveOccurred())
		Expect(wc.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "legacy"}, &corev1.ConfigMap{})).To(Succeed())

		Eventually(ctx, func() error {
			return patchTopology(ctx, ns, "upgrade", newTag, newKube)
		}).WithTimeout(time.Minute).Should(Succeed())

		// CAPI discovered the operator's Runtime Extension.
		Eventually(ctx, func(g Gomega) {
			ec := &runtimev1.ExtensionConfig{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: hooks.ExtensionConfigName}, ec)).To(Succeed())
			var handlers []string
			for _, h := range ec.Status.Handlers {
				handlers = append(handlers, h.RequestHook.Hook)
			}
			g.Expect(handlers).To(ContainElements("BeforeClusterUpgrade", "AfterControlPlaneInitialized", "BeforeClusterDelete"))
		}).Should(Succeed())

		cp := &controlplanev1.KubeadmControlPlane{}
		cpVersion := func(g Gomega) string {
			g.Expect(k8s.Get(ctx, key, c)).To(Succeed())
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: c.Spec.ControlPlaneRef.Name}, cp)).To(Succeed())
			return cp.Spec.Version
		}
		By("the hook holds the upgrade while 1.36's before-upgrade addons are not Ready")
		Eventually(ctx, func(g Gomega) {
			a := getAddon(ctx, g, ns, "upgrade")
			st := stageOf(a, csv1.StageBeforeClusterUpgrade)
			g.Expect(st).NotTo(BeNil(), "stages: %+v", a.Status.Stages)
			g.Expect(st.Release).To(Equal(newTag))
			g.Expect(st.Removes).To(Equal([]string{"legacy"}))
			g.Expect(st.Applied).To(BeTrue(), "cni written at %s and legacy's Kustomization gone: %s", newTag, st.Message)
			g.Expect(st.Ready).To(BeFalse())
		}).Should(Succeed())
		// The delete step removed legacy from the workload cluster before the control plane moved.
		Eventually(ctx, func() bool {
			return apierrors.IsNotFound(wc.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "legacy"}, &corev1.ConfigMap{}))
		}).Should(BeTrue(), "the legacy ConfigMap is pruned with its Kustomization")
		Expect(cpVersion(Default)).To(Equal(oldKube))
		// CAPI asks the hook again every hookRetry: three of them.
		Consistently(ctx, func(g Gomega) string { return cpVersion(g) }, 3*hookRetry, 500*time.Millisecond).Should(Equal(oldKube),
			"CAPI does not upgrade the control plane while BeforeClusterUpgrade answers retry")

		By("killing the operator (SIGKILL) while the hook holds: nothing in memory, the answer is the same")
		Expect(pl.KillOperator(ctx)).To(Succeed())
		Consistently(ctx, func(g Gomega) string { return cpVersion(g) }, 3*hookRetry, 500*time.Millisecond).Should(Equal(oldKube))

		By("opening the gate: the addons become Ready, the hook lets CAPI upgrade the control plane")
		nodes := &corev1.NodeList{}
		Expect(wc.List(ctx, nodes)).To(Succeed())
		Expect(nodes.Items).NotTo(BeEmpty())
		for i := range nodes.Items {
			n := &nodes.Items[i]
			patch := client.MergeFrom(n.DeepCopy())
			if n.Labels == nil {
				n.Labels = map[string]string{}
			}
			n.Labels[gateLabel] = "open"
			Expect(wc.Patch(ctx, n, patch)).To(Succeed())
		}
		Eventually(ctx, func(g Gomega) {
			g.Expect(cpVersion(g)).To(Equal(newKube), "CAPI moved the control plane's version")
			g.Expect(cp.Status.Versions).To(ConsistOf(HaveField("Version", newKube)), "every control-plane replica at the new version")
		}).WithTimeout(4 * time.Minute).Should(Succeed())

		By("the workers' upgrade is deferred: cluster-info (AfterClusterUpgrade) stays at the old release")
		afterStage := func(g Gomega) *csv1.AddonStageStatus {
			a := getAddon(ctx, g, ns, "upgrade")
			g.Expect(componentOf(a, "cluster-info")).NotTo(BeNil())
			g.Expect(componentOf(a, "cluster-info").Release).To(Equal(oldTag))
			st := stageOf(a, csv1.StageAfterClusterUpgrade)
			g.Expect(st).NotTo(BeNil(), "stages: %+v", a.Status.Stages)
			return st
		}
		Eventually(ctx, func(g Gomega) {
			st := afterStage(g)
			g.Expect(st.WaitingFor).To(Equal(csv1.StageWaitWorkers))
			g.Expect(st.Message).To(ContainSubstring("MachineDeployment " + workerPool(ctx, g, ns, "upgrade").Name + " runs " + oldKube))
		}).Should(Succeed())
		Consistently(ctx, func(g Gomega) {
			g.Expect(afterStage(g).WaitingFor).To(Equal(csv1.StageWaitWorkers))
		}, 8*time.Second, time.Second).Should(Succeed())

		By("letting the workers go: CAPI rolls them, then cluster-info moves")
		Eventually(ctx, func() error {
			cur := &clusterv1.Cluster{}
			if err := k8s.Get(ctx, key, cur); err != nil {
				return err
			}
			patch := client.MergeFrom(cur.DeepCopy())
			cur.Spec.Topology.Workers.MachineDeployments[0].Metadata.Annotations = nil
			return k8s.Patch(ctx, cur, patch)
		}).WithTimeout(time.Minute).Should(Succeed())
		Eventually(ctx, func(g Gomega) {
			md := workerPool(ctx, g, ns, "upgrade")
			g.Expect(md.Spec.Template.Spec.Version).To(Equal(newKube))
			a := getAddon(ctx, g, ns, "upgrade")
			g.Expect(a).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue, newTag))
			g.Expect(a.Status.LastAppliedRelease).To(Equal(newTag))
			g.Expect(componentOf(a, "cluster-info").Release).To(Equal(newTag))
			g.Expect(componentOf(a, "legacy")).To(BeNil())
		}).WithTimeout(4 * time.Minute).Should(Succeed())
	})
})

// gateLabel opens the upgrade gate of the 1.36 stack in "Cluster API alongside the operator".
const gateLabel = "e2e.clusterstack.io/upgrade-gate"

// upgradeGate is a cni chart template that is Ready only on a Node labelled gateLabel=open.
const upgradeGate = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: upgrade-gate
  namespace: {{ .Release.Namespace }}
spec:
  replicas: 1
  selector:
    matchLabels:
      app: upgrade-gate
  template:
    metadata:
      labels:
        app: upgrade-gate
    spec:
      nodeSelector:
        ` + gateLabel + `: open
      tolerations:
        - operator: Exists
      containers:
        - name: gate
          image: {{ .Values.image }}
`

// stagesOf136 are the addon stages of the 1.36 release in "Cluster API alongside the
// operator": cni moves before the upgrade, legacy (1.35 only) is removed before it, and
// cluster-info moves after it.
const stagesOf136 = `apiVersion: clusteraddonconfig.x-k8s.io/v1alpha1
clusterAddonVersion: clusteraddons.clusterstack.x-k8s.io/v1alpha1
addonStages:
  AfterControlPlaneInitialized:
    - name: cni
      action: apply
    - name: cluster-info
      action: apply
  BeforeClusterUpgrade:
    - name: cni
      action: apply
    - name: legacy
      action: delete
  AfterClusterUpgrade:
    - name: cluster-info
      action: apply
`

// componentOf returns the ClusterAddon's status of component name, or nil.
func componentOf(a *csv1.ClusterAddon, name string) *csv1.AddonComponentStatus {
	for i := range a.Status.Components {
		if a.Status.Components[i].Name == name {
			return &a.Status.Components[i]
		}
	}
	return nil
}

// workerPool returns the one MachineDeployment of Cluster ns/cluster.
func workerPool(ctx context.Context, g Gomega, ns, cluster string) *clusterv1.MachineDeployment {
	mds := &clusterv1.MachineDeploymentList{}
	g.Expect(k8s.List(ctx, mds, client.InNamespace(ns), client.MatchingLabels{clusterv1.ClusterNameLabel: cluster})).To(Succeed())
	g.Expect(mds.Items).To(HaveLen(1))
	return &mds.Items[0]
}

// stageOf returns the ClusterAddon's status of stage name, or nil.
func stageOf(a *csv1.ClusterAddon, name csv1.AddonStage) *csv1.AddonStageStatus {
	for i := range a.Status.Stages {
		if a.Status.Stages[i].Name == name {
			return &a.Status.Stages[i]
		}
	}
	return nil
}
