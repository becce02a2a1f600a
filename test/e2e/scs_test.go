package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/chartrepo"
	"github.com/clusterstack-io/clusterstack-operator/test/framework"
)

// Stacks laid out like the three stacks of the Sovereign Cloud Stack
// cluster-stacks repository (fixtures in internal/stack/testdata/scs that mimic them; none of
// SCS's files) are published unchanged, their v1beta1 and stand-in ClusterClasses are built
// into Clusters by Cluster API's topology controller, and their addons are delivered:
//
//   - providers/openstack/scs: subcharts vendored under charts/, values in overwrite.yaml
//     templated with the Cluster, OpenStack kinds and an ORC Image (the plane's stand-in CRDs);
//   - providers/docker/scs: a v1beta1 ClusterClass on CAPD's Docker kinds with a worker class,
//     per-component wrapper charts and SCS's own cluster-addon-values.yaml, keyed by the
//     wrapped chart's alias as for an umbrella chart;
//   - providers/openstack/scs2: chart dependencies not vendored, fetched by source-controller
//     from a chart repository (bootstrap/chartrepo, on loopback) the Chart.yaml names.
var _ = Describe("Stacks in the SCS cluster-stacks layouts", Ordered, func() {
	const (
		ns   = "scs"
		repo = "scs-stacks"
		// fixtures holds the three layouts, relative to the repository root.
		fixtures = "internal/stack/testdata/scs"
		// greeter is the chart the SCS-like addons depend on (vendored or fetched).
		greeter = "internal/stack/testdata/charts/greeter"
		// fetchFrom is the placeholder repository URL in the scs2-like Chart.yamls.
		fetchFrom = "http://127.0.0.1:1/charts"
	)
	type scsStack struct {
		provider, name, minor, kube, path string
		// workers: the ClusterClass has the worker class default-worker.
		workers bool
	}
	stacks := []scsStack{
		{provider: "openstack", name: "scs", minor: "1.32", kube: "v1.32.5", path: "providers/openstack/scs"},
		{provider: "docker", name: "scs", minor: "1.30", kube: "v1.30.10", path: "providers/docker/scs", workers: true},
		{provider: "openstack", name: "scs2", minor: "1.34", kube: "v1.34.7", path: "providers/openstack/scs2"},
	}
	dashed := func(s scsStack) string {
		return s.provider + "-" + s.name + "-" + strings.ReplaceAll(s.minor, ".", "-")
	}
	tag := func(s scsStack) string { return dashed(s) + "-v1" }
	clusterName := func(s scsStack) string { return s.provider + "-" + s.name }

	BeforeAll(func(ctx SpecContext) {
		if !withCAPI {
			Skip("E2E_WITH_CAPI=false: the SCS layouts need Cluster API's topology controller and conversion webhooks")
		}
		// The chart repository the scs2-like stack's dependencies are fetched from.
		// It serves until the container's cleanup: the spec context ends with BeforeAll.
		url, stop, err := chartrepo.ServeDirs(context.Background(), filepath.Join(repoRoot, greeter))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(stop)

		tree := GinkgoT().TempDir()
		Expect(os.CopyFS(tree, os.DirFS(filepath.Join(repoRoot, fixtures)))).To(Succeed())
		// openstack/scs vendors its subcharts, as `helm dependency build` leaves them.
		ch, err := loader.LoadDir(filepath.Join(repoRoot, greeter))
		Expect(err).NotTo(HaveOccurred())
		for _, c := range []string{"ccm", "metrics-server"} {
			_, err := chartutil.Save(ch, filepath.Join(tree, "providers/openstack/scs/cluster-addon", c, "charts"))
			Expect(err).NotTo(HaveOccurred())
		}
		// scs2 names the chart repository; only its URL (a free port) is filled in.
		for _, c := range []string{"ccm", "cni"} {
			f := filepath.Join(tree, "providers/openstack/scs2/cluster-addon", c, "Chart.yaml")
			b, err := os.ReadFile(f)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(b)).To(ContainSubstring(fetchFrom))
			Expect(os.WriteFile(f, []byte(strings.ReplaceAll(string(b), fetchFrom, url)), 0o644)).To(Succeed())
		}
		_, err = pl.Git().CreateRepo(repo)
		Expect(err).NotTo(HaveOccurred())
		for _, s := range stacks {
			Expect(pl.Git().Publish(ctx, repo, tree, ".", tag(s))).To(Succeed())
		}

		createNamespace(ctx, ns)
		for _, s := range stacks {
			Expect(k8s.Create(ctx, &csv1.ClusterStack{
				ObjectMeta: metav1.ObjectMeta{Name: dashed(s), Namespace: ns},
				Spec: csv1.ClusterStackSpec{
					Provider: s.provider, Name: s.name, KubernetesVersion: s.minor,
					Source:   csv1.StackSource{URL: pl.Git().RepoURL(repo), Path: s.path},
					Versions: []string{"v1"},
					Interval: &metav1.Duration{Duration: 10 * time.Second},
				},
			})).To(Succeed())
		}
	}, NodeTimeout(5*time.Minute))

	It("validates each release and lets CAPI serve its ClusterClass", func(ctx SpecContext) {
		Eventually(ctx, func(g Gomega) {
			for _, s := range stacks {
				rel := &csv1.ClusterStackRelease{}
				g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: tag(s)}, rel)).To(Succeed())
				g.Expect(rel).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue), "release %s", tag(s))
				g.Expect(rel.Status.KubernetesVersion).To(Equal(s.kube))
				cc := &clusterv1.ClusterClass{}
				g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: tag(s)}, cc)).To(Succeed())
				g.Expect(cc.Spec.ControlPlane.TemplateRef.Kind).To(Equal("KubeadmControlPlaneTemplate"))
			}
		}).WithTimeout(4 * time.Minute).Should(Succeed())

		// The docker stack's ClusterClass is written in v1beta1 with `ref`s: CAPI's conversion
		// webhook serves it as v1beta2 with `templateRef`s and the worker class.
		cc := &clusterv1.ClusterClass{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: tag(stacks[1])}, cc)).To(Succeed())
		Expect(cc.Spec.Infrastructure.TemplateRef.Kind).To(Equal("DockerClusterTemplate"))
		Expect(cc.Spec.Workers.MachineDeployments).To(HaveLen(1))
		Expect(cc.Spec.Workers.MachineDeployments[0].Class).To(Equal("default-worker"))
	})

	It("builds a Cluster of each with CAPI and delivers its addons with the layout's values", func(ctx SpecContext) {
		for _, s := range stacks {
			c := newCluster(ns, clusterName(s), "v1", "192.168.0.0/16")
			c.Spec.Topology.ClassRef.Name = tag(s)
			c.Spec.Topology.Version = s.kube
			c.Spec.Topology.Variables = nil // each class defaults its own variables
			if s.workers {
				c.Spec.Topology.Workers.MachineDeployments = []clusterv1.MachineDeploymentTopology{
					{Class: "default-worker", Name: "md-0", Replicas: ptr.To[int32](1)},
				}
			}
			Expect(k8s.Create(ctx, c)).To(Succeed(), "Cluster for %s", tag(s))
		}
		Eventually(ctx, func(g Gomega) {
			for _, s := range stacks {
				c := &clusterv1.Cluster{}
				g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: clusterName(s)}, c)).To(Succeed())
				g.Expect(c.Spec.ControlPlaneRef.Kind).To(Equal("KubeadmControlPlane"), "CAPI's topology controller built %s", c.Name)
				a := getAddon(ctx, g, ns, clusterName(s))
				g.Expect(a).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue, tag(s)), "Cluster %s", c.Name)
			}
		}).WithTimeout(6 * time.Minute).Should(Succeed())

		for _, s := range stacks {
			By("reading what Cluster " + clusterName(s) + " got")
			c := &clusterv1.Cluster{}
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: clusterName(s)}, c)).To(Succeed())
			host := c.Spec.ControlPlaneEndpoint.Host
			Expect(host).NotTo(BeEmpty())
			cfg, err := pl.WorkloadConfig(ctx, ns, c.Name)
			Expect(err).NotTo(HaveOccurred())
			wc, err := client.New(cfg, client.Options{})
			Expect(err).NotTo(HaveOccurred())
			data := func(name string) map[string]string {
				cm := &corev1.ConfigMap{}
				Expect(wc.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: name}, cm)).To(Succeed(), "ConfigMap kube-system/%s in Cluster %s", name, c.Name)
				return cm.Data
			}
			switch s.path {
			case "providers/openstack/scs":
				// Vendored subcharts (named by their alias), values.yaml under overwrite.yaml
				// templated with the Cluster.
				Expect(data("openstack-cloud-controller-manager-ccm")).To(Equal(map[string]string{"greeting": "hello " + c.Name, "replicas": "2"}))
				Expect(data("metrics-server-metrics-server")).To(Equal(map[string]string{"greeting": "hello " + host, "replicas": "1"}))
			case "providers/docker/scs":
				// cluster-addon-values.yaml, as SCS wrote it, keys its values by the subchart
				// alias metrics-server: its commonLabels reach the Deployment the wrapped
				// metrics-server chart renders, next to the wrapper's own values.yaml.
				deploy := &appsv1.Deployment{}
				Expect(wc.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "metrics-server"}, deploy)).To(Succeed(), "Deployment kube-system/metrics-server in Cluster %s", c.Name)
				Expect(deploy.Labels).To(HaveKeyWithValue("domain", host))
				Expect(deploy.Spec.Template.Spec.Containers[0].Args).To(Equal([]string{"--kubelet-insecure-tls"}))
				Expect(data("cni")).To(HaveKey("kubernetes"))
				// The ClusterClass patch set the Docker machines' image; the worker Machine runs.
				Eventually(ctx, func(g Gomega) {
					mds := &clusterv1.MachineDeploymentList{}
					g.Expect(k8s.List(ctx, mds, client.InNamespace(ns), client.MatchingLabels{clusterv1.ClusterNameLabel: c.Name})).To(Succeed())
					g.Expect(mds.Items).To(HaveLen(1))
					md := mds.Items[0]
					g.Expect(ptr.Deref(md.Status.AvailableReplicas, 0)).To(Equal(int32(1)))
					dmt := &unstructured.Unstructured{}
					dmt.SetGroupVersionKind(schema.GroupVersionKind{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta1", Kind: "DockerMachineTemplate"})
					g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: md.Spec.Template.Spec.InfrastructureRef.Name}, dmt)).To(Succeed())
					img, _, _ := unstructured.NestedString(dmt.Object, "spec", "template", "spec", "customImage")
					g.Expect(img).To(Equal("kindest/node:v1.30.10"))
				}).WithTimeout(2 * time.Minute).Should(Succeed())
			case "providers/openstack/scs2":
				// Dependencies fetched from the chart repository by source-controller.
				Expect(data("openstack-cloud-controller-manager-ccm")).To(Equal(map[string]string{"greeting": "hello " + c.Name, "replicas": "2"}))
				Expect(data("cilium-cni")).To(HaveKeyWithValue("greeting", "hello kube-system"))
			}
		}
	})

	It("removes the Clusters it built", func(ctx SpecContext) {
		for _, s := range stacks {
			Expect(k8s.Delete(ctx, &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: clusterName(s)}})).To(Succeed())
		}
		Eventually(ctx, func(g Gomega) {
			cs := &clusterv1.ClusterList{}
			g.Expect(k8s.List(ctx, cs, client.InNamespace(ns))).To(Succeed())
			g.Expect(cs.Items).To(BeEmpty())
			as := &csv1.ClusterAddonList{}
			g.Expect(k8s.List(ctx, as, client.InNamespace(ns))).To(Succeed())
			g.Expect(as.Items).To(BeEmpty())
		}).WithTimeout(3 * time.Minute).Should(Succeed())
	})
})
