package plane_test

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterstack-io/clusterstack-operator/bootstrap/plane"
)

// process returns the plane's process name.
func process(name string) plane.ProcessInfo {
	for _, p := range pl.Processes() {
		if p.Name == name {
			return p
		}
	}
	Fail("no process " + name)
	return plane.ProcessInfo{}
}

// refused tells whether a TCP connection to addr is refused.
func refused(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return true
	}
	_ = c.Close()
	return false
}

var _ = Describe("Faults injected into the local plane", Ordered, func() {
	var ns string
	var repo *sourcev1.GitRepository

	BeforeAll(func(ctx SpecContext) {
		ns = createNamespace(ctx, "faults")
	})

	gitRepoReady := func(ctx SpecContext, wantRevision string) {
		GinkgoHelper()
		Eventually(func(g Gomega) {
			g.Expect(pl.Client().Get(ctx, client.ObjectKeyFromObject(repo), repo)).To(Succeed())
			ready := apimeta.FindStatusCondition(repo.Status.Conditions, meta.ReadyCondition)
			g.Expect(ready).NotTo(BeNil(), "no Ready condition yet")
			g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "Ready: %s: %s", ready.Reason, ready.Message)
			g.Expect(ready.ObservedGeneration).To(Equal(repo.Generation))
			g.Expect(repo.Status.Artifact).NotTo(BeNil(), "Ready without an artifact yet")
			g.Expect(repo.Status.Artifact.Revision).To(HavePrefix(wantRevision + "@sha1:"))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
	}

	It("stops source-controller and the Git server, and a GitRepository made meanwhile becomes Ready once both are back", func(ctx SpecContext) {
		_, err := pl.Git().CreateRepo("faults")
		Expect(err).NotTo(HaveOccurred())
		src := GinkgoT().TempDir()
		Expect(os.WriteFile(filepath.Join(src, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: f\n"), 0o644)).To(Succeed())
		Expect(pl.Git().Publish(ctx, "faults", src, ".", "v1")).To(Succeed())
		gitURL := pl.Git().RepoURL("faults")
		gitAddr := strings.TrimPrefix(pl.Git().URL(), "http://")

		By("stopping source-controller")
		before := process("source-controller")
		Expect(before.Running).To(BeTrue())
		Expect(pl.StopFlux("source-controller")).To(Succeed())
		Expect(pl.StopFlux("source-controller")).To(Succeed(), "stopping a stopped controller does nothing")
		Expect(process("source-controller").Running).To(BeFalse())
		Expect(refused(pl.SourceControllerStorageAddr())).To(BeTrue(), "source-controller's storage server is down")
		Expect(pl.StopFlux("no-such-controller")).To(MatchError(ContainSubstring("no Flux controller")))

		repo = &sourcev1.GitRepository{
			ObjectMeta: metav1.ObjectMeta{Name: "faults", Namespace: ns},
			Spec: sourcev1.GitRepositorySpec{
				URL:       gitURL,
				Interval:  metav1.Duration{Duration: time.Minute},
				Timeout:   &metav1.Duration{Duration: 10 * time.Second},
				Reference: &sourcev1.GitRepositoryRef{Tag: "v1"},
			},
		}
		Expect(pl.Client().Create(ctx, repo)).To(Succeed())

		By("stopping the Git server: its address refuses connections")
		Expect(pl.StopGit()).To(Succeed())
		Expect(pl.StopGit()).To(Succeed())
		Expect(refused(gitAddr)).To(BeTrue())

		By("starting source-controller again: it sees the repository, but cannot reach Git")
		Expect(pl.StartFlux(ctx, "source-controller")).To(Succeed())
		after := process("source-controller")
		Expect(after.Running).To(BeTrue())
		Expect(after.Pid).NotTo(Equal(before.Pid))
		Expect(after.LogFile).To(Equal(before.LogFile))
		Expect(after.Restarts).To(BeZero(), "a start asked for is no restart")
		Eventually(func(g Gomega) {
			g.Expect(pl.Client().Get(ctx, client.ObjectKeyFromObject(repo), repo)).To(Succeed())
			ready := apimeta.FindStatusCondition(repo.Status.Conditions, meta.ReadyCondition)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(ready.Message).To(ContainSubstring(gitAddr))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())

		By("starting the Git server again on the same address")
		Expect(pl.StartGit()).To(Succeed())
		Expect(pl.Git().RepoURL("faults")).To(Equal(gitURL))
		gitRepoReady(ctx, "v1")
	}, SpecTimeout(2*time.Minute))

	It("starts a Flux controller that crashed again, as a kubelet would", func(ctx SpecContext) {
		crashed := process("helm-controller")
		Expect(syscall.Kill(crashed.Pid, syscall.SIGKILL)).To(Succeed())
		Eventually(func(g Gomega) {
			p := process("helm-controller")
			g.Expect(p.Pid).NotTo(Equal(crashed.Pid))
			g.Expect(p.Running).To(BeTrue())
			g.Expect(p.Restarts).To(Equal(crashed.Restarts + 1))
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
		// It becomes ready: StartFlux only waits for that.
		Expect(pl.StartFlux(ctx, "helm-controller")).To(Succeed())
		Expect(process("helm-controller").Restarts).To(Equal(crashed.Restarts + 1))
	}, SpecTimeout(time.Minute))

	It("restarts the management API server with etcd kept: old clients, kubeconfigs and Flux keep working", func(ctx SpecContext) {
		c := pl.Client()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept", Namespace: ns}, Data: map[string]string{"k": "v"}}
		Expect(c.Create(ctx, cm)).To(Succeed())
		pid := pl.APIServerPid()
		Expect(pid).NotTo(BeZero())
		host := pl.Config().Host

		Expect(pl.RestartAPIServer(ctx)).To(Succeed())
		Expect(pl.APIServerPid()).NotTo(BeZero())
		Expect(pl.APIServerPid()).NotTo(Equal(pid), "a new kube-apiserver process")
		Expect(pl.Config().Host).To(Equal(host))

		By("the plane's client and a client of the kubeconfig file (admin client certificate) read what was there")
		got := &corev1.ConfigMap{}
		Eventually(func() error { return c.Get(ctx, client.ObjectKeyFromObject(cm), got) }).
			WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		Expect(got.Data).To(Equal(cm.Data))
		cfg, err := clientcmd.BuildConfigFromFlags("", pl.Kubeconfig())
		Expect(err).NotTo(HaveOccurred())
		fresh, err := client.New(cfg, client.Options{Scheme: pl.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		Expect(fresh.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})).To(Succeed())

		By("source-controller reconnects: it reconciles a change made after the restart")
		Expect(pl.Git().Publish(ctx, "faults", GinkgoT().TempDir(), "empty", "v2")).To(Succeed())
		Expect(c.Get(ctx, client.ObjectKeyFromObject(repo), repo)).To(Succeed())
		repo.Spec.Reference.Tag = "v2"
		Expect(c.Update(ctx, repo)).To(Succeed())
		gitRepoReady(ctx, "v2")
		for _, name := range []string{"source-controller", "kustomize-controller", "helm-controller", "kube-controller-manager", "kube-scheduler", "kwok"} {
			Expect(process(name).Running).To(BeTrue(), "%s runs", name)
		}
	}, SpecTimeout(2*time.Minute))

	It("stops a workload cluster's API server and starts it again with its data, and deletes a Cluster whose API server is down", func(ctx SpecContext) {
		c := pl.Client()
		cluster := &clusterv1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: "down", Namespace: ns},
			Spec: clusterv1.ClusterSpec{ClusterNetwork: clusterv1.ClusterNetwork{
				Pods: clusterv1.NetworkRanges{CIDRBlocks: []string{"10.244.0.0/16"}},
			}},
		}
		Expect(c.Create(ctx, cluster)).To(Succeed())
		secretKey := types.NamespacedName{Namespace: ns, Name: "down-kubeconfig"}
		secret := &corev1.Secret{}
		Eventually(func() error { return c.Get(ctx, secretKey, secret) }).
			WithContext(ctx).WithTimeout(90 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
		wc, err := pl.WorkloadClient(ctx, ns, "down")
		Expect(err).NotTo(HaveOccurred())
		data := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"}, Data: map[string]string{"k": "v"}}
		Expect(wc.Create(ctx, data)).To(Succeed())

		By("stopping its API server: localinfra keeps the cluster as it is")
		Expect(pl.StopWorkloadAPIServer(ns, "down")).To(Succeed())
		Expect(pl.StopWorkloadAPIServer(ns, "down")).To(Succeed())
		Expect(wc.Get(ctx, client.ObjectKeyFromObject(data), &corev1.ConfigMap{})).NotTo(Succeed())
		// A reconcile of the Cluster sees the API server down and starts nothing afresh.
		Expect(c.Get(ctx, client.ObjectKeyFromObject(cluster), cluster)).To(Succeed())
		endpoint := cluster.Spec.ControlPlaneEndpoint
		Expect(endpoint.Port).NotTo(BeZero())
		cluster.Annotations = map[string]string{"test": "reconcile"}
		Expect(c.Update(ctx, cluster)).To(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(cluster), cluster)).To(Succeed())
			g.Expect(cluster.Spec.ControlPlaneEndpoint).To(Equal(endpoint))
			g.Expect(wc.Get(ctx, client.ObjectKeyFromObject(data), &corev1.ConfigMap{})).NotTo(Succeed())
		}).WithContext(ctx).WithTimeout(3 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())

		By("starting it again: the same kubeconfig Secret reaches it, and the data is there")
		Expect(pl.StartWorkloadAPIServer(ctx, ns, "down")).To(Succeed())
		again, err := pl.WorkloadClient(ctx, ns, "down")
		Expect(err).NotTo(HaveOccurred())
		for _, wcl := range []client.Client{wc, again} {
			got := &corev1.ConfigMap{}
			Expect(wcl.Get(ctx, client.ObjectKeyFromObject(data), got)).To(Succeed())
			Expect(got.Data).To(Equal(data.Data))
		}
		after := &corev1.Secret{}
		Expect(c.Get(ctx, secretKey, after)).To(Succeed())
		Expect(after.Data).To(Equal(secret.Data), "the kubeconfig Secret is unchanged")

		By("deleting the Cluster while its API server is down")
		Expect(pl.StopWorkloadAPIServer(ns, "down")).To(Succeed())
		Expect(c.Delete(ctx, cluster)).To(Succeed())
		Eventually(func(g Gomega) {
			err := c.Get(ctx, client.ObjectKeyFromObject(cluster), &clusterv1.Cluster{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Cluster still there: %v", err)
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		Expect(pl.StartWorkloadAPIServer(ctx, ns, "down")).To(MatchError(ContainSubstring("no workload cluster")))
	}, SpecTimeout(3*time.Minute))
})
