package plane_test

import (
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterstack-io/clusterstack-operator/bootstrap/plane"
	"github.com/clusterstack-io/clusterstack-operator/internal/testenv"
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
			testenv.SkipOrFail(GinkgoT(), "bin/%s is missing: run `make tools`", plane.CAPIManagerBinary)
		}
		dir, err := os.MkdirTemp("", "plane-capi-")
		Expect(err).NotTo(HaveOccurred())
		started := time.Now()
		capi, err = plane.Start(ctx, plane.Options{StateDir: dir, RepoRoot: root, BinDir: bin, WithCAPI: true, StartTimeout: 5 * time.Minute, Logger: GinkgoLogr})
		Expect(err).NotTo(HaveOccurred(), "start plane with CAPI; logs in %s", filepath.Join(dir, "logs"))
		GinkgoWriter.Printf("plane with CAPI started in %s\n", time.Since(started).Round(time.Millisecond))
		DeferCleanup(func() { Expect(capi.Stop()).To(Succeed()) })
	}, NodeTimeout(6*time.Minute)) // the suite runs beside the end-to-end suite: a start may wait for the cores

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
	It("converts v1beta1 kubeadm and Docker templates with the providers' own conversion", func(ctx SpecContext) {
		c := capi.Client()
		kcpt := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "controlplane.cluster.x-k8s.io/v1beta1", "kind": "KubeadmControlPlaneTemplate",
			"metadata": map[string]any{"name": "cp", "namespace": "capi"},
			"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
				"kubeadmConfigSpec": map[string]any{"clusterConfiguration": map[string]any{
					"apiServer": map[string]any{"extraArgs": map[string]any{"cloud-provider": "external"}}}}}}},
		}}
		Expect(c.Create(ctx, kcpt)).To(Succeed())
		got := &controlplanev1.KubeadmControlPlaneTemplate{}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: "capi", Name: "cp"}, got)).To(Succeed())
		// v1beta1's extraArgs map is v1beta2's list of name/value pairs.
		Expect(got.Spec.Template.Spec.KubeadmConfigSpec.ClusterConfiguration.APIServer.ExtraArgs).To(ConsistOf(
			bootstrapv1.Arg{Name: "cloud-provider", Value: ptr.To("external")}))

		dct := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "DockerClusterTemplate",
			"metadata": map[string]any{"name": "docker", "namespace": "capi"},
			"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
				"failureDomains": map[string]any{"fd1": map[string]any{"controlPlane": true}}}}},
		}}
		Expect(c.Create(ctx, dct)).To(Succeed())
		v2 := &unstructured.Unstructured{}
		v2.SetAPIVersion("infrastructure.cluster.x-k8s.io/v1beta2")
		v2.SetKind("DockerClusterTemplate")
		Expect(c.Get(ctx, client.ObjectKey{Namespace: "capi", Name: "docker"}, v2)).To(Succeed())
		// v1beta1's failureDomains map is v1beta2's list with names.
		fds, found, err := unstructured.NestedSlice(v2.Object, "spec", "template", "spec", "failureDomains")
		Expect(err).NotTo(HaveOccurred())
		Expect(found).To(BeTrue(), "v1beta2 object: %v", v2.Object)
		Expect(fds).To(ConsistOf(HaveKeyWithValue("name", "fd1")))
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

	It("builds a Cluster from a v1beta1 ClusterClass with CAPI's topology controller, localinfra playing the providers, and upgrades it", func(ctx SpecContext) {
		c := capi.Client()
		ns := "topology"
		Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		for _, o := range dockerClassObjects(ns, "docker-class") {
			Expect(c.Create(ctx, o)).To(Succeed(), "create %s %s", o.GetKind(), o.GetName())
		}
		cluster := &clusterv1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: ns},
			Spec: clusterv1.ClusterSpec{
				ClusterNetwork: clusterv1.ClusterNetwork{Pods: clusterv1.NetworkRanges{CIDRBlocks: []string{"192.168.0.0/16"}}},
				Topology: clusterv1.Topology{
					ClassRef:     clusterv1.ClusterClassRef{Name: "docker-class"},
					Version:      "v1.35.2",
					ControlPlane: clusterv1.ControlPlaneTopology{Replicas: ptr.To[int32](1)},
					Workers: clusterv1.WorkersTopology{MachineDeployments: []clusterv1.MachineDeploymentTopology{
						{Class: "default-worker", Name: "md-0", Replicas: ptr.To[int32](2)},
					}},
				},
			},
		}
		Expect(c.Create(ctx, cluster)).To(Succeed())
		key := client.ObjectKeyFromObject(cluster)

		By("CAPI's topology controller creating the objects, localinfra provisioning them")
		Eventually(func(g Gomega) {
			got := &clusterv1.Cluster{}
			g.Expect(c.Get(ctx, key, got)).To(Succeed())
			g.Expect(got.Spec.InfrastructureRef.Kind).To(Equal("DockerCluster"))
			g.Expect(got.Spec.ControlPlaneRef.Kind).To(Equal("KubeadmControlPlane"))
			g.Expect(ptr.Deref(got.Status.Initialization.ControlPlaneInitialized, false)).To(BeTrue())
			g.Expect(ptr.Deref(got.Status.Initialization.InfrastructureProvisioned, false)).To(BeTrue())
			g.Expect(got.Spec.ControlPlaneEndpoint.IsValid()).To(BeTrue())
			machines := &clusterv1.MachineList{}
			g.Expect(c.List(ctx, machines, client.InNamespace(ns), client.MatchingLabels{clusterv1.ClusterNameLabel: "c1"})).To(Succeed())
			g.Expect(machines.Items).To(HaveLen(2))
			for _, m := range machines.Items {
				g.Expect(m.Status.NodeRef.IsDefined()).To(BeTrue(), "machine %s has no node", m.Name)
				g.Expect(m.Status.Phase).To(Equal(string(clusterv1.MachinePhaseRunning)), "machine %s", m.Name)
				g.Expect(m.Spec.Version).To(Equal("v1.35.2"))
			}
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		cp := &controlplanev1.KubeadmControlPlane{}
		got := &clusterv1.Cluster{}
		Expect(c.Get(ctx, key, got)).To(Succeed())
		Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: got.Spec.ControlPlaneRef.Name}, cp)).To(Succeed())
		// The ClusterClass's inline patch, applied by CAPI from the Cluster's topology.
		Expect(cp.Spec.KubeadmConfigSpec.ClusterConfiguration.APIServer.ExtraArgs).To(ContainElement(
			bootstrapv1.Arg{Name: "cloud-provider", Value: ptr.To("external")}))

		By("moving the topology version: CAPI upgrades the control plane, then rolls the workers")
		// CAPI's webhook refuses a version change while a MachineDeployment still rolls out
		// (its status catching up with the Machines): retried until accepted.
		Eventually(func() error {
			if err := c.Get(ctx, key, got); err != nil {
				return err
			}
			patch := client.MergeFrom(got.DeepCopy())
			got.Spec.Topology.Version = "v1.36.3"
			return c.Patch(ctx, got, patch)
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(cp), cp)).To(Succeed())
			g.Expect(cp.Spec.Version).To(Equal("v1.36.3"))
			g.Expect(cp.Status.Versions).To(ConsistOf(HaveField("Version", "v1.36.3")), "every control-plane replica at the new version")
			machines := &clusterv1.MachineList{}
			g.Expect(c.List(ctx, machines, client.InNamespace(ns), client.MatchingLabels{clusterv1.ClusterNameLabel: "c1"})).To(Succeed())
			g.Expect(machines.Items).To(HaveLen(2))
			for _, m := range machines.Items {
				g.Expect(m.Spec.Version).To(Equal("v1.36.3"), "machine %s", m.Name)
				g.Expect(m.Status.Phase).To(Equal(string(clusterv1.MachinePhaseRunning)), "machine %s", m.Name)
			}
		}).WithContext(ctx).WithTimeout(4 * time.Minute).WithPolling(time.Second).Should(Succeed())

		By("a second Cluster on the plane's stand-in OpenStack kinds (v1beta1 contract: status.ready)")
		for _, o := range classObjects(ns, "openstack-class", "OpenStackClusterTemplate", "OpenStackMachineTemplate") {
			Expect(c.Create(ctx, o)).To(Succeed(), "create %s %s", o.GetKind(), o.GetName())
		}
		osc := cluster.DeepCopy()
		osc.ObjectMeta = metav1.ObjectMeta{Name: "os1", Namespace: ns}
		osc.Spec.Topology.ClassRef.Name = "openstack-class"
		osc.Spec.Topology.Version = "v1.35.2"
		osc.Spec.Topology.Workers.MachineDeployments[0].Replicas = ptr.To[int32](1)
		Expect(c.Create(ctx, osc)).To(Succeed())
		Eventually(func(g Gomega) {
			got := &clusterv1.Cluster{}
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(osc), got)).To(Succeed())
			g.Expect(got.Spec.InfrastructureRef.Kind).To(Equal("OpenStackCluster"))
			g.Expect(ptr.Deref(got.Status.Initialization.InfrastructureProvisioned, false)).To(BeTrue())
			g.Expect(ptr.Deref(got.Status.Initialization.ControlPlaneInitialized, false)).To(BeTrue())
			machines := &clusterv1.MachineList{}
			g.Expect(c.List(ctx, machines, client.InNamespace(ns), client.MatchingLabels{clusterv1.ClusterNameLabel: "os1"})).To(Succeed())
			g.Expect(machines.Items).To(HaveLen(1))
			g.Expect(machines.Items[0].Status.Phase).To(Equal(string(clusterv1.MachinePhaseRunning)))
			g.Expect(machines.Items[0].Spec.InfrastructureRef.Kind).To(Equal("OpenStackMachine"))
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())

		By("deleting the Cluster: CAPI removes its objects, localinfra its workload cluster")
		Expect(c.Delete(ctx, got)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(c.Get(ctx, key, &clusterv1.Cluster{}))
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(BeTrue())
	}, SpecTimeout(10*time.Minute))
})

// dockerClassObjects are a ClusterClass in CAPI v1beta1 (as published SCS stacks write them)
// with CAPD and kubeadm templates, and a patch setting an API server argument.
func dockerClassObjects(ns, name string) []*unstructured.Unstructured {
	return classObjects(ns, name, "DockerClusterTemplate", "DockerMachineTemplate")
}

// classObjects are dockerClassObjects with other infrastructure template kinds (v1beta1).
func classObjects(ns, name, clusterTemplateKind, machineTemplateKind string) []*unstructured.Unstructured {
	obj := func(apiVersion, kind, n string, spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": apiVersion, "kind": kind,
			"metadata": map[string]any{"name": n, "namespace": ns},
			"spec":     spec,
		}}
	}
	tmpl := func(spec map[string]any) map[string]any {
		return map[string]any{"template": map[string]any{"spec": spec}}
	}
	ref := func(apiVersion, kind, n string) map[string]any {
		return map[string]any{"apiVersion": apiVersion, "kind": kind, "name": n}
	}
	const infra, cpv, bsv = "infrastructure.cluster.x-k8s.io/v1beta1", "controlplane.cluster.x-k8s.io/v1beta1", "bootstrap.cluster.x-k8s.io/v1beta1"
	return []*unstructured.Unstructured{
		obj(infra, clusterTemplateKind, name+"-cluster", tmpl(map[string]any{})),
		obj(infra, machineTemplateKind, name+"-machine", tmpl(map[string]any{})),
		obj(cpv, "KubeadmControlPlaneTemplate", name+"-control-plane", tmpl(map[string]any{
			// Not empty: an empty clusterConfiguration does not survive the conversion to
			// v1beta2 and back, and the patch below adds to it (CAPI reports exactly that).
			"kubeadmConfigSpec": map[string]any{"clusterConfiguration": map[string]any{
				"controllerManager": map[string]any{"extraArgs": map[string]any{"cloud-provider": "external"}},
			}},
		})),
		obj(bsv, "KubeadmConfigTemplate", name+"-worker", tmpl(map[string]any{})),
		obj("cluster.x-k8s.io/v1beta1", "ClusterClass", name, map[string]any{
			"infrastructure": map[string]any{"ref": ref(infra, clusterTemplateKind, name+"-cluster")},
			"controlPlane": map[string]any{
				"ref":                   ref(cpv, "KubeadmControlPlaneTemplate", name+"-control-plane"),
				"machineInfrastructure": map[string]any{"ref": ref(infra, machineTemplateKind, name+"-machine")},
			},
			"workers": map[string]any{"machineDeployments": []any{map[string]any{
				"class": "default-worker",
				"template": map[string]any{
					"bootstrap":      map[string]any{"ref": ref(bsv, "KubeadmConfigTemplate", name+"-worker")},
					"infrastructure": map[string]any{"ref": ref(infra, machineTemplateKind, name+"-machine")},
				},
			}}},
			"patches": []any{map[string]any{
				"name": "cloud-provider",
				"definitions": []any{map[string]any{
					"selector": map[string]any{
						"apiVersion": cpv, "kind": "KubeadmControlPlaneTemplate",
						"matchResources": map[string]any{"controlPlane": true},
					},
					"jsonPatches": []any{map[string]any{
						"op": "add", "path": "/spec/template/spec/kubeadmConfigSpec/clusterConfiguration/apiServer",
						"value": map[string]any{"extraArgs": map[string]any{"cloud-provider": "external"}},
					}},
				}},
			}},
		}),
	}
}
