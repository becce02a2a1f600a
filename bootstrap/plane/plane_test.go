package plane_test

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterstack-io/clusterstack-operator/bootstrap/localinfra"
)

var _ = Describe("Flux on the local plane", func() {
	It("makes a GitRepository Ready from a repository published to the local Git server", func(ctx SpecContext) {
		c := pl.Client()
		ns := createNamespace(ctx, "flux-git")

		_, err := pl.Git().CreateRepo("demo")
		Expect(err).NotTo(HaveOccurred())
		url := pl.Git().URL() + "/demo" // the form the examples use, without ".git"
		src := GinkgoT().TempDir()
		Expect(os.WriteFile(filepath.Join(src, "configmap.yaml"), []byte(
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\ndata:\n  k: v\n"), 0o644)).To(Succeed())
		Expect(pl.Git().Publish(ctx, "demo", src, "apps/demo", "demo-v1.0.0")).To(Succeed())
		commit, err := pl.Git().Head(ctx, "demo", "demo-v1.0.0")
		Expect(err).NotTo(HaveOccurred())

		repo := &sourcev1.GitRepository{
			ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: ns},
			Spec: sourcev1.GitRepositorySpec{
				URL:       url,
				Interval:  metav1.Duration{Duration: time.Minute},
				Timeout:   &metav1.Duration{Duration: 30 * time.Second},
				Reference: &sourcev1.GitRepositoryRef{Tag: "demo-v1.0.0"},
			},
		}
		Expect(c.Create(ctx, repo)).To(Succeed())

		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(repo), repo)).To(Succeed())
			ready := apimeta.FindStatusCondition(repo.Status.Conditions, meta.ReadyCondition)
			g.Expect(ready).NotTo(BeNil(), "no Ready condition yet")
			g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "Ready: %s: %s", ready.Reason, ready.Message)
			g.Expect(ready.Message).To(ContainSubstring(commit))
			g.Expect(repo.Status.Artifact).NotTo(BeNil())
			g.Expect(repo.Status.Artifact.Revision).To(Equal("demo-v1.0.0@sha1:" + commit))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
	}, SpecTimeout(90*time.Second))
})

var _ = Describe("localinfra on the local plane", func() {
	It("provisions a workload cluster for a topology Cluster and tears it down on deletion", func(ctx SpecContext) {
		c := pl.Client()
		ns := createNamespace(ctx, "workload")

		By("creating a ClusterClass with CAPA and kubeadm control plane templates and a Cluster")
		for _, tpl := range []*unstructured.Unstructured{
			template("infrastructure.cluster.x-k8s.io/v1beta2", "AWSClusterTemplate", "aws-cluster", ns,
				map[string]any{"region": "eu-central-1"}),
			template("infrastructure.cluster.x-k8s.io/v1beta2", "AWSMachineTemplate", "aws-control-plane", ns,
				map[string]any{"instanceType": "t3.large"}),
			template("controlplane.cluster.x-k8s.io/v1beta2", "KubeadmControlPlaneTemplate", "kubeadm-control-plane", ns,
				map[string]any{"kubeadmConfigSpec": map[string]any{"format": "cloud-config"}}),
		} {
			Expect(c.Create(ctx, tpl)).To(Succeed(), "create %s", tpl.GetKind())
		}
		class := &clusterv1.ClusterClass{
			ObjectMeta: metav1.ObjectMeta{Name: "aws-test-v1", Namespace: ns},
			Spec: clusterv1.ClusterClassSpec{
				Infrastructure: clusterv1.InfrastructureClass{TemplateRef: clusterv1.ClusterClassTemplateReference{
					APIVersion: "infrastructure.cluster.x-k8s.io/v1beta2", Kind: "AWSClusterTemplate", Name: "aws-cluster",
				}},
				ControlPlane: clusterv1.ControlPlaneClass{
					TemplateRef: clusterv1.ClusterClassTemplateReference{
						APIVersion: "controlplane.cluster.x-k8s.io/v1beta2", Kind: "KubeadmControlPlaneTemplate", Name: "kubeadm-control-plane",
					},
					MachineInfrastructure: clusterv1.ControlPlaneClassMachineInfrastructureTemplate{TemplateRef: clusterv1.ClusterClassTemplateReference{
						APIVersion: "infrastructure.cluster.x-k8s.io/v1beta2", Kind: "AWSMachineTemplate", Name: "aws-control-plane",
					}},
				},
				Variables: []clusterv1.ClusterClassVariable{{
					Name: "region", Required: ptr.To(true),
					Schema: clusterv1.VariableSchema{OpenAPIV3Schema: clusterv1.JSONSchemaProps{Type: "string"}},
				}},
				Patches: []clusterv1.ClusterClassPatch{{
					Name: "region",
					Definitions: []clusterv1.PatchDefinition{{
						Selector: clusterv1.PatchSelector{
							APIVersion: "infrastructure.cluster.x-k8s.io/v1beta2", Kind: "AWSClusterTemplate",
							MatchResources: clusterv1.PatchSelectorMatch{InfrastructureCluster: ptr.To(true)},
						},
						JSONPatches: []clusterv1.JSONPatch{{
							Op: "replace", Path: "/spec/template/spec/region",
							ValueFrom: &clusterv1.JSONPatchValue{Variable: "region"},
						}},
					}},
				}},
			},
		}
		Expect(c.Create(ctx, class)).To(Succeed())
		cluster := &clusterv1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: "wl1", Namespace: ns},
			Spec: clusterv1.ClusterSpec{Topology: clusterv1.Topology{
				ClassRef: clusterv1.ClusterClassRef{Name: class.Name},
				Version:  "v1.36.0",
				Variables: []clusterv1.ClusterVariable{{
					Name: "region", Value: apiextensionsv1.JSON{Raw: []byte(`"eu-west-1"`)},
				}},
			}},
		}
		Expect(c.Create(ctx, cluster)).To(Succeed())

		By("waiting for the kubeconfig Secret and the provisioned status")
		secret := &corev1.Secret{}
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "wl1-kubeconfig"}, secret)).To(Succeed())
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		Expect(secret.Type).To(Equal(clusterv1.ClusterSecretType))
		Expect(secret.Labels).To(HaveKeyWithValue(clusterv1.ClusterNameLabel, "wl1"))
		Expect(secret.Data).To(HaveKey("value"))

		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(cluster), cluster)).To(Succeed())
			g.Expect(cluster.Status.Phase).To(Equal(string(clusterv1.ClusterPhaseProvisioned)))
			g.Expect(apimeta.IsStatusConditionTrue(cluster.Status.Conditions, clusterv1.ClusterControlPlaneInitializedCondition)).To(BeTrue())
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
		Expect(cluster.Finalizers).To(ContainElement(localinfra.Finalizer))
		Expect(cluster.Status.Initialization.InfrastructureProvisioned).To(HaveValue(BeTrue()))
		Expect(cluster.Status.Initialization.ControlPlaneInitialized).To(HaveValue(BeTrue()))
		Expect(cluster.Spec.ControlPlaneEndpoint.Host).To(Equal("127.0.0.1"))
		Expect(cluster.Spec.InfrastructureRef).To(Equal(clusterv1.ContractVersionedObjectReference{
			APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "AWSCluster", Name: "wl1"}))
		Expect(cluster.Spec.ControlPlaneRef).To(Equal(clusterv1.ContractVersionedObjectReference{
			APIGroup: "controlplane.cluster.x-k8s.io", Kind: "KubeadmControlPlane", Name: "wl1"}))

		By("checking the topology objects")
		awsCluster := get(ctx, "infrastructure.cluster.x-k8s.io/v1beta2", "AWSCluster", ns, "wl1")
		Expect(field(awsCluster, "spec", "region")).To(Equal("eu-west-1"))
		Expect(field(awsCluster, "spec", "controlPlaneEndpoint", "port")).
			To(BeEquivalentTo(cluster.Spec.ControlPlaneEndpoint.Port))
		kcp := get(ctx, "controlplane.cluster.x-k8s.io/v1beta2", "KubeadmControlPlane", ns, "wl1")
		Expect(field(kcp, "spec", "version")).To(Equal("v1.36.0"))
		Expect(field(kcp, "spec", "machineTemplate", "spec", "infrastructureRef", "name")).
			To(Equal("wl1-control-plane"))
		machineTpl := get(ctx, "infrastructure.cluster.x-k8s.io/v1beta2", "AWSMachineTemplate", ns, "wl1-control-plane")
		Expect(machineTpl.GetOwnerReferences()).To(ContainElement(HaveField("UID", cluster.UID)))

		By("using the workload cluster through its kubeconfig Secret")
		wc, err := pl.WorkloadClient(ctx, ns, "wl1")
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			nodes := &corev1.NodeList{}
			g.Expect(wc.List(ctx, nodes)).To(Succeed())
			g.Expect(nodes.Items).To(HaveLen(1))
			g.Expect(nodes.Items[0].Status.Conditions).To(ContainElement(And(
				HaveField("Type", corev1.NodeReady), HaveField("Status", corev1.ConditionTrue))))
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())

		deploy := webDeployment("default")
		Expect(wc.Create(ctx, deploy)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(wc.Get(ctx, client.ObjectKeyFromObject(deploy), deploy)).To(Succeed())
			g.Expect(deploy.Status.ReadyReplicas).To(Equal(int32(2)), "Deployment status: %+v", deploy.Status)
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())

		By("deleting the Cluster")
		Expect(c.Delete(ctx, cluster)).To(Succeed())
		Eventually(func(g Gomega) {
			err := c.Get(ctx, client.ObjectKeyFromObject(cluster), &clusterv1.Cluster{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Cluster still there: %v", err)
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		for _, key := range []struct{ apiVersion, kind, name string }{
			{"v1", "Secret", "wl1-kubeconfig"},
			{"infrastructure.cluster.x-k8s.io/v1beta2", "AWSCluster", "wl1"},
			{"controlplane.cluster.x-k8s.io/v1beta2", "KubeadmControlPlane", "wl1"},
			{"infrastructure.cluster.x-k8s.io/v1beta2", "AWSMachineTemplate", "wl1-control-plane"},
		} {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(schema.FromAPIVersionAndKind(key.apiVersion, key.kind))
			err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: key.name}, u)
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%s %s still there: %v", key.kind, key.name, err)
		}
		// The workload API server is gone.
		Expect(wc.List(ctx, &corev1.NodeList{})).NotTo(Succeed())
	}, SpecTimeout(150*time.Second))
})

// webDeployment is a Deployment "web" of two replicas labelled app=web, whose image is never
// pulled (kwok runs its Pods).
func webDeployment(ns string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: webLabels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: webLabels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.invalid/web:1"}}},
			},
		},
	}
}

// webLabels select webDeployment's Pods.
var webLabels = map[string]string{"app": "web"}

func createNamespace(ctx SpecContext, prefix string) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	Expect(pl.Client().Create(ctx, ns)).To(Succeed())
	return ns.Name
}

func template(apiVersion, kind, name, ns string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"template": map[string]any{"spec": spec}},
	}}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetName(name)
	u.SetNamespace(ns)
	return u
}

func get(ctx SpecContext, apiVersion, kind, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.FromAPIVersionAndKind(apiVersion, kind))
	ExpectWithOffset(1, pl.Client().Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, u)).
		To(Succeed(), "get %s %s/%s", kind, ns, name)
	return u
}

// field returns the value at path in u, failing the spec when it is missing.
func field(u *unstructured.Unstructured, path ...string) any {
	v, found, err := unstructured.NestedFieldNoCopy(u.Object, path...)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	ExpectWithOffset(1, found).To(BeTrue(), "%s %s has no %s", u.GetKind(), u.GetName(), strings.Join(path, "."))
	return v
}
