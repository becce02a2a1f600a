package e2e

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/fleet"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/gitea"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
	"github.com/clusterstack-io/clusterstack-operator/test/framework"
)

// fleetURLs are the plane's Git server and OCI registry, for the examples' placeholders.
func fleetURLs() fleet.URLs {
	return fleet.URLs{Git: pl.Git().URL(), OCI: "oci://" + pl.OCIRegistry().Host()}
}

// applyExamples commits the manifests in examples/, with ${GIT_URL} pointing at the local Git
// server, to the forge's fleet repository and has Flux apply it, exactly as `make demo` does
// (package fleet). It returns the commit once Flux applied it, health checks included.
func applyExamples(ctx context.Context) string {
	GinkgoHelper()
	dir := GinkgoT().TempDir()
	objs, err := fleet.Render(filepath.Join(repoRoot, "examples"), fleetURLs(), dir)
	Expect(err).NotTo(HaveOccurred())
	commit, err := fleet.Publish(ctx, pl.Forge(), dir, "Fleet: the examples")
	Expect(err).NotTo(HaveOccurred())
	Expect(fleet.Apply(ctx, k8s, pl.Forge(), objs)).To(Succeed())
	Expect(fleet.ProposalSecrets(ctx, k8s, pl.Forge(), objs)).To(Succeed())
	waitFleetApplied(ctx, commit)
	return commit
}

// waitFleetApplied waits until the fleet Kustomization is Ready on commit: Flux applied it and
// its health checks (the ClusterStacks) passed.
func waitFleetApplied(ctx context.Context, commit string) {
	GinkgoHelper()
	Eventually(ctx, func(g Gomega) {
		ks := &kustomizev1.Kustomization{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: fleet.FluxNamespace, Name: fleet.Name}, ks)).To(Succeed())
		g.Expect(ks.Status.LastAppliedRevision).To(Equal(gitea.DefaultBranch+"@sha1:"+commit), "Flux applied the published commit")
		ready := apimeta.FindStatusCondition(ks.Status.Conditions, meta.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "Kustomization %s Ready: %s", fleet.Name, ready.Message)
		g.Expect(ready.ObservedGeneration).To(Equal(ks.Generation))
	}).WithTimeout(6 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
}

// ownDelays is longer than the longest delay the operator imposes on itself: a ClusterAddon's
// held progress write and a large roll-up's counts wait up to --progress-status-interval (10 s
// by default), the ClusterStack reconcile 2 s after a change of its Clusters.
const ownDelays = 12 * time.Second

// operatorSettled succeeds when the operator (its first replica) has worked through everything
// it was told about since it started: its ClusterAddon and ClusterStack controllers reconciled at
// least once (so their caches had synced and filled their queues with every object), and no
// controller has a reconcile running or an object waiting in its queue (its metrics).
func operatorSettled(g Gomega) {
	resp, err := http.Get("http://" + pl.OperatorMetricsAddr() + "/metrics")
	g.Expect(err).NotTo(HaveOccurred())
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resp.Body.Close()).To(Succeed())
	reconciled := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		name, rest, ok := strings.Cut(line, "{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		_, ctrlName, _ := strings.Cut(labels, `controller="`)
		ctrlName, _, _ = strings.Cut(ctrlName, `"`)
		v, err := strconv.ParseFloat(value, 64)
		if ctrlName == "" || err != nil {
			continue
		}
		switch name {
		case "controller_runtime_reconcile_total":
			reconciled[ctrlName] += v
		case "controller_runtime_active_workers", "workqueue_depth":
			g.Expect(v).To(BeZero(), "%s of controller %s", name, ctrlName)
		}
	}
	for _, c := range []string{"clusteraddon", "clusterstack"} {
		g.Expect(reconciled[c]).To(BeNumerically(">", 0), "controller %s reconciled since the operator started", c)
	}
}

var _ = Describe("Walking skeleton: the examples on the local plane", Ordered, SpecPriority(2), func() {
	const ns = "demo"
	const release = "aws-base-1-36-v1"
	var commit string // the fleet commit Flux applied

	BeforeAll(func(ctx SpecContext) {
		commit = applyExamples(ctx)
	})

	It("applies the fleet repository with Flux: Kustomization Ready on the published commit, objects labelled", func(ctx SpecContext) {
		ks := &kustomizev1.Kustomization{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: fleet.FluxNamespace, Name: fleet.Name}, ks)).To(Succeed())
		Expect(ks.Status.LastAppliedRevision).To(Equal(gitea.DefaultBranch + "@sha1:" + commit))
		Expect(apimeta.IsStatusConditionTrue(ks.Status.Conditions, meta.ReadyCondition)).To(BeTrue(), "%v", ks.Status.Conditions)
		Expect(ks.Spec.HealthChecks).To(ConsistOf(
			And(HaveField("Name", "aws-base-1-36"), HaveField("Namespace", ns)),
			And(HaveField("Name", "aws-base-1-36"), HaveField("Namespace", "demo-oci"))))
		Expect(ks.Spec.HealthChecks[0].Kind).To(Equal("ClusterStack"))
		Expect(ks.Spec.HealthChecks[0].Namespace).To(Equal(ns))

		fluxLabels := And(HaveKeyWithValue("kustomize.toolkit.fluxcd.io/name", fleet.Name),
			HaveKeyWithValue("kustomize.toolkit.fluxcd.io/namespace", fleet.FluxNamespace))
		cs := &csv1.ClusterStack{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "aws-base-1-36"}, cs)).To(Succeed())
		Expect(cs.Labels).To(fluxLabels, "the ClusterStack comes from the fleet")
		for _, name := range []string{"alpha", "beta"} {
			c := &clusterv1.Cluster{}
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, c)).To(Succeed())
			Expect(c.Labels).To(fluxLabels, "Cluster %s comes from the fleet", name)
		}
		mo := &csv1.ManagementOperator{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: "demo-addon-operator"}, mo)).To(Succeed())
		Expect(mo.Labels).To(fluxLabels, "the ManagementOperator comes from the fleet")

		bot := &corev1.Secret{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: fleet.ProposalSecret}, bot)).To(Succeed())
		Expect(string(bot.Data[fleet.ProposalSecretKey])).To(Equal(pl.Forge().BotToken()), "the bot's token for proposals")
	})

	It("pins a Flux GitRepository to the release tag", func(ctx SpecContext) {
		repo := &sourcev1.GitRepository{}
		Eventually(ctx, func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: release}, repo)).To(Succeed())
			g.Expect(repo.Spec.Reference).NotTo(BeNil())
			g.Expect(repo.Spec.Reference.Tag).To(Equal(release))
			g.Expect(repo.Status.Artifact).NotTo(BeNil())
			// Once the release is validated its commit is pinned too (a moved tag is not
			// followed), and Flux then reports the bare commit.
			g.Expect(repo.Status.Artifact.Revision).To(Or(
				HavePrefix(release+"@sha1:"),
				And(Not(BeEmpty()), Equal("sha1:"+repo.Spec.Reference.Commit))))
		}).Should(Succeed())
		Expect(repo.Labels).To(HaveKeyWithValue(csv1.StackLabel, "aws-base-1-36"))
		Expect(repo.Labels).To(HaveKeyWithValue(csv1.ReleaseLabel, release))
	})

	It("delivers the same stack from the plane's OCI registry: sources pinned to digests, the ClusterClass applied", func(ctx SpecContext) {
		const ociNS = "demo-oci"
		Eventually(ctx, func(g Gomega) {
			rel := getRelease(ctx, g, ociNS, "v1")
			g.Expect(rel).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue))
			g.Expect(rel.Status.Commit).To(HaveLen(64), "pinned to the manifest's sha256 digest")
			g.Expect(clusterClassPresence(ctx, ociNS, "v1")()).To(Equal(present))
		}).Should(Succeed())
		repo := &sourcev1.OCIRepository{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ociNS, Name: release}, repo)).To(Succeed())
		Expect(repo.Spec.Reference.Digest).To(Equal("sha256:" + getRelease(ctx, Default, ociNS, "v1").Status.Commit))
		Expect(repo.Labels).To(HaveKeyWithValue(csv1.ReleaseLabel, release))
	})

	It("applies the stack's ClusterClass into the management cluster through Flux", func(ctx SpecContext) {
		cc := &unstructured.Unstructured{}
		cc.SetGroupVersionKind(schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "ClusterClass"})
		Eventually(ctx, func() error {
			return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: release}, cc)
		}).Should(Succeed(), "ClusterClass %s/%s", ns, release)
		hr := &helmv2.HelmRelease{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: release + "-cluster-class"}, hr)).To(Succeed())
		Expect(hr.Spec.ChartRef).NotTo(BeNil())
		Expect(hr.Spec.ChartRef.Kind).To(Equal(sourcev1.HelmChartKind))
		rel := &csv1.ClusterStackRelease{}
		Eventually(ctx, func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: release}, rel)).To(Succeed())
			g.Expect(rel.Status.KubernetesVersion).To(Equal("v1.36.3"))
			g.Expect(rel.Status.ClusterClassName).To(Equal(release))
			g.Expect(rel.Status.Components).To(HaveLen(2))
			g.Expect(framework.Condition(rel, csv1.AvailableCondition)).To(HaveField("Status", metav1.ConditionTrue))
		}).Should(Succeed())
	})

	for _, tc := range []struct{ cluster, podCIDR, region string }{
		{"alpha", "10.244.0.0/16", "eu-central-1"},
		{"beta", "10.245.0.0/16", "eu-west-1"},
	} {
		It("renders the runtime values of Cluster "+tc.cluster+" into its ConfigMap", func(ctx SpecContext) {
			cm := &corev1.ConfigMap{}
			Eventually(ctx, func(g Gomega) {
				cm = valuesOf(ctx, g, ns, tc.cluster)
				g.Expect(cm.Data).To(HaveKeyWithValue("cluster_name", tc.cluster))
				g.Expect(cm.Data).To(HaveKeyWithValue("cluster_namespace", ns))
				g.Expect(cm.Data).To(HaveKeyWithValue("cluster_pod_cidr", tc.podCIDR))
				g.Expect(cm.Data).To(HaveKeyWithValue("cluster_service_cidr", "10.96.0.0/12"))
				g.Expect(cm.Data).To(HaveKeyWithValue("control_plane_endpoint_host", "127.0.0.1"))
				g.Expect(cm.Data).To(HaveKey("control_plane_endpoint_port"))
				g.Expect(cm.Data).To(HaveKeyWithValue("infra_region", tc.region))
				g.Expect(cm.Data).To(HaveKeyWithValue("helm_values_cni", ContainSubstring(tc.podCIDR)))
			}).Should(Succeed())
			Expect(cm.Labels).To(HaveKeyWithValue("reconcile.fluxcd.io/watch", "Enabled"))
			Expect(cm.Labels).To(HaveKeyWithValue(csv1.ClusterNameLabel, tc.cluster))
		})

		It("installs the addons into workload cluster "+tc.cluster+" through its kubeconfig Secret", func(ctx SpecContext) {
			hr := &helmv2.HelmRelease{}
			ks := &kustomizev1.Kustomization{}
			Eventually(ctx, func(g Gomega) {
				g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: fluxgen.AddonObjectName(tc.cluster, "cni")}, hr)).To(Succeed())
				g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: fluxgen.AddonObjectName(tc.cluster, "cluster-info")}, ks)).To(Succeed())
			}).Should(Succeed())
			Expect(hr.Spec.KubeConfig.SecretRef.Name).To(Equal(tc.cluster + "-kubeconfig"))
			Expect(hr.Spec.ChartRef.Name).To(Equal(fluxgen.AddonChartName(release, "cni")), "one shared HelmChart per release and component")
			Expect(ks.Spec.KubeConfig.SecretRef.Name).To(Equal(tc.cluster + "-kubeconfig"))
			Expect(ks.Spec.SourceRef.Name).To(Equal(release))

			wl, err := workloadClient(ctx, ns, tc.cluster)
			Expect(err).NotTo(HaveOccurred())
			info := &corev1.ConfigMap{}
			Eventually(ctx, func(g Gomega) {
				g.Expect(wl.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "cluster-info"}, info)).To(Succeed())
				g.Expect(info.Data).To(HaveKeyWithValue("cluster-name", tc.cluster))
				g.Expect(info.Data).To(HaveKeyWithValue("pod-cidr", tc.podCIDR))
				g.Expect(info.Data).To(HaveKeyWithValue("region", tc.region))
				g.Expect(info.Data).To(HaveKeyWithValue("control-plane-endpoint-host", "127.0.0.1"))
			}).Should(Succeed())
			Eventually(ctx, func(g Gomega) {
				var dss appsv1.DaemonSetList
				g.Expect(wl.List(ctx, &dss, client.InNamespace("kube-system"))).To(Succeed())
				g.Expect(dss.Items).NotTo(BeEmpty())
				for _, ds := range dss.Items {
					g.Expect(ds.Status.DesiredNumberScheduled).To(BeNumerically(">=", 1), ds.Name)
					g.Expect(ds.Status.NumberReady).To(Equal(ds.Status.DesiredNumberScheduled), ds.Name)
				}
			}).Should(Succeed(), "the cni DaemonSet becomes Ready on the kwok node")
		})
	}

	It("reports the ClusterStack Available once Flux is Ready on all of it", func(ctx SpecContext) {
		cs := &csv1.ClusterStack{}
		Eventually(ctx, func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "aws-base-1-36"}, cs)).To(Succeed())
			g.Expect(framework.Condition(cs, csv1.AvailableCondition)).To(HaveField("Status", metav1.ConditionTrue))
			g.Expect(framework.Condition(cs, csv1.ReadyCondition)).To(HaveField("Status", metav1.ConditionTrue))
			g.Expect(cs.Status.Versions.Available).To(Equal("v1"))
			g.Expect(cs.Status.ClustersSummary).To(Equal("2/2"))
		}).Should(Succeed())

		for _, c := range []string{"alpha", "beta"} {
			addon := &csv1.ClusterAddon{}
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: c}, addon)).To(Succeed())
			Expect(addon.Status.LastAppliedRelease).To(Equal(release))
			Expect(framework.Condition(addon, csv1.AvailableCondition)).To(HaveField("Status", metav1.ConditionTrue))
		}

		By("kubectl get clusterstacks shows it, and kubectl wait agrees")
		out, err := exec.CommandContext(ctx, "kubectl", "--kubeconfig", pl.Kubeconfig(), "get", "clusterstacks", "-n", ns).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		GinkgoWriter.Printf("%s\n", out)
		Expect(string(out)).To(MatchRegexp(`aws-base-1-36\s+aws\s+base\s+1\.36\s+v1\s+aws-base-1-36-v1\s+2/2\s+(\S+\s+)?True\s+False\s+False`))
		out, err = exec.CommandContext(ctx, "kubectl", "--kubeconfig", pl.Kubeconfig(), "wait", "-n", ns, "clusterstack/aws-base-1-36",
			"--for=condition=Available", "--timeout=10s").CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
	})

	It("loses and repeats nothing when the operator restarts", func(ctx SpecContext) {
		// Every object the operator generated keeps its UID (not created again), its generation
		// and what the operator writes of it (not written again: for the objects only the
		// operator writes, their resourceVersion; for Flux objects, whose status Flux writes on
		// its own intervals, their labels, annotations, owners and spec), and none is lost or
		// added; the objects Flux delivered into the workload clusters keep their UIDs (nothing
		// was uninstalled and installed again).
		snapshot := func(g Gomega) map[string]objectState {
			out := generatedObjects(ctx, g, ns, nil)
			cs := &csv1.ClusterStack{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "aws-base-1-36"}, cs)).To(Succeed())
			out["ClusterStack/"+cs.Name] = objectState{UID: cs.UID, Generation: cs.Generation, Written: "resourceVersion " + cs.ResourceVersion}
			return out
		}
		workloads := map[string]client.Client{}
		for _, c := range []string{"alpha", "beta"} {
			wl, err := workloadClient(ctx, ns, c)
			Expect(err).NotTo(HaveOccurred())
			workloads[c] = wl
		}
		delivered := func(g Gomega) map[string]types.UID {
			out := map[string]types.UID{}
			for c, wl := range workloads {
				for k, uid := range deliveredObjects(ctx, g, wl) {
					out[c+": "+k] = uid
				}
			}
			return out
		}
		// What the operator still had due before the restart lands first: a held progress write,
		// the roll-ups, the ClusterStack reconcile delayed after its ClusterAddons changed. The
		// longest of its own delays is --progress-status-interval (10 s by default).
		var before map[string]objectState
		Eventually(ctx, func(g Gomega) {
			first := snapshot(g)
			time.Sleep(ownDelays)
			g.Expect(snapshot(g)).To(Equal(first), "the generated objects as the operator left them, unchanged for %s", ownDelays)
			before = first
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		deliveredBefore := delivered(Default)
		Expect(before).To(HaveLen(14), "2 ConfigMaps, 2 ClusterAddons, 1 release, 3 HelmReleases, 2 Kustomizations, 1 GitRepository, 2 HelmCharts and the ClusterStack: %v", before)
		Expect(deliveredBefore).To(And(HaveKey("alpha: DaemonSet kube-system/cni"), HaveKey("beta: ConfigMap kube-system/cluster-info")))

		Expect(pl.RestartOperator(ctx)).To(Succeed())
		// The restarted operator reconciles every object once its caches are synced; it has
		// done so when its queues are empty and no reconcile runs (operatorSettled). What it
		// writes then, and what Flux does about it, shows within its own delays (a held status
		// write, the roll-ups): watched for longer than the longest of them.
		Eventually(ctx, operatorSettled).WithTimeout(2 * time.Minute).Should(Succeed())
		Consistently(ctx, func(g Gomega) {
			g.Expect(snapshot(g)).To(Equal(before), "nothing created, lost or written again after the restart")
			g.Expect(delivered(g)).To(Equal(deliveredBefore), "nothing delivered into the workload clusters again")
		}, ownDelays, time.Second).Should(Succeed())
		By("the restarted operator is alive, reconciled everything without a panic, and still reconciles")
		resp, err := http.Get("http://" + pl.OperatorHealthAddr() + "/readyz")
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Body.Close()).To(Succeed())
		Expect(resp.StatusCode).To(Equal(http.StatusOK))
		resp, err = http.Get("http://" + pl.OperatorMetricsAddr() + "/metrics")
		Expect(err).NotTo(HaveOccurred())
		metrics, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Body.Close()).To(Succeed())
		Expect(string(metrics)).To(ContainSubstring("controller_runtime_reconcile_panics_total"))
		for _, line := range strings.Split(string(metrics), "\n") {
			if strings.HasPrefix(line, "controller_runtime_reconcile_panics_total{") {
				Expect(line).To(HaveSuffix(" 0"), "a reconciler panicked after the restart")
			}
		}
		c := &clusterv1.Cluster{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "alpha"}, c)).To(Succeed())
		patch := client.MergeFrom(c.DeepCopy())
		c.Spec.ClusterNetwork.ServiceDomain = "alpha.local"
		Expect(k8s.Patch(ctx, c, patch)).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			cm := valuesOf(ctx, g, ns, "alpha")
			g.Expect(cm.Data).To(HaveKeyWithValue("cluster_service_domain", "alpha.local"))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		cs := &csv1.ClusterStack{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "aws-base-1-36"}, cs)).To(Succeed())
		Expect(framework.Condition(cs, csv1.AvailableCondition)).To(HaveField("Status", metav1.ConditionTrue))
	})

	It("delivers the example ManagementOperator through Flux and reports it Available (Disabled: no stack requires it)", func(ctx SpecContext) {
		Eventually(ctx, func(g Gomega) {
			mo := &csv1.ManagementOperator{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "demo-addon-operator"}, mo)).To(Succeed())
			g.Expect(delivered(mo)).To(Equal("v1.0.0"))
			g.Expect(mo).To(haveOperatorCondition(csv1.AvailableCondition, metav1.ConditionTrue))
			g.Expect(mo).To(haveOperatorCondition(csv1.DisabledCondition, metav1.ConditionTrue))
			g.Expect(mo.Status.AvailableUpdates).To(ContainElement("v2.0.0"))
		}).WithTimeout(3 * time.Minute).Should(Succeed())
	})

	It("walkthrough: a commit to the fleet adding v2 is applied by Flux and delivered by the operator", func(ctx SpecContext) {
		const v2 = "aws-base-1-36-v2"
		By("a person commits v2 to the ClusterStack's versions in the fleet repository")
		dir := GinkgoT().TempDir()
		_, err := fleet.Render(filepath.Join(repoRoot, "examples"), fleetURLs(), dir)
		Expect(err).NotTo(HaveOccurred())
		file := filepath.Join(dir, "10-clusterstack.yaml")
		data, err := os.ReadFile(file)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(data)).To(ContainSubstring("  versions:\n    - v1\n"))
		edited := strings.Replace(string(data), "  versions:\n    - v1\n", "  versions:\n    - v1\n    - v2\n", 1)
		Expect(os.WriteFile(file, []byte(edited), 0o644)).To(Succeed())
		start := time.Now()
		next, err := fleet.Publish(ctx, pl.Forge(), dir, "demo: deliver v2")
		Expect(err).NotTo(HaveOccurred())
		Expect(next).NotTo(Equal(commit))

		By("Flux applies it: the ClusterStack's versions change and the release for v2 appears")
		Eventually(ctx, func(g Gomega) {
			cs := &csv1.ClusterStack{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "aws-base-1-36"}, cs)).To(Succeed())
			g.Expect(cs.Spec.Versions).To(Equal([]string{"v1", "v2"}))
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		GinkgoWriter.Printf("ClusterStack spec.versions = [v1 v2] %s after the commit\n", time.Since(start).Round(time.Second))
		Eventually(ctx, func(g Gomega) {
			rel := &csv1.ClusterStackRelease{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: v2}, rel)).To(Succeed())
			g.Expect(rel.Status.ClusterClassName).To(Equal(v2))
			g.Expect(framework.Condition(rel, csv1.AvailableCondition)).To(HaveField("Status", metav1.ConditionTrue))
			cc := &unstructured.Unstructured{}
			cc.SetGroupVersionKind(schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "ClusterClass"})
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: v2}, cc)).To(Succeed())
		}).WithTimeout(3 * time.Minute).Should(Succeed())
		GinkgoWriter.Printf("release %s Available %s after the commit\n", v2, time.Since(start).Round(time.Second))

		By("the Kustomization is Ready on the new commit, the ClusterStack stays Available, the Clusters stay on v1")
		waitFleetApplied(ctx, next)
		GinkgoWriter.Printf("Kustomization %s Ready on %s %s after the commit\n", fleet.Name, next, time.Since(start).Round(time.Second))
		cs := &csv1.ClusterStack{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "aws-base-1-36"}, cs)).To(Succeed())
		Expect(framework.Condition(cs, csv1.AvailableCondition)).To(HaveField("Status", metav1.ConditionTrue))
		for _, c := range []string{"alpha", "beta"} {
			addon := &csv1.ClusterAddon{}
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: c}, addon)).To(Succeed())
			Expect(addon.Status.LastAppliedRelease).To(Equal(release), "only the fleet moves Clusters")
		}
		for _, args := range [][]string{{"get", "kustomizations", "-A"}, {"get", "clusterstacks", "-A"}, {"get", "clusterstackreleases", "-n", ns}} {
			out, err := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", pl.Kubeconfig()}, args...)...).CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), string(out))
			GinkgoWriter.Printf("$ kubectl %s\n%s\n", strings.Join(args, " "), out)
		}
	})
})
