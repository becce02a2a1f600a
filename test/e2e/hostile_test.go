package e2e

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/plane"
	"github.com/clusterstack-io/clusterstack-operator/test/framework"
)

// operatorProcess is the operator's process as the plane lists it, found by its exact name (the
// suite runs one replica): its pid changes when the operator restarts or crashes, and Restarts
// counts the plane's restarts of it. It fails the spec unless exactly one such process runs.
func operatorProcess() plane.ProcessInfo {
	GinkgoHelper()
	var found []plane.ProcessInfo
	for _, p := range pl.Processes() {
		if p.Name == plane.OperatorProcessName {
			found = append(found, p)
		}
	}
	Expect(found).To(HaveLen(1), "processes named %q among %+v", plane.OperatorProcessName, pl.Processes())
	p := found[0]
	Expect(p.Running).To(BeTrue(), "the operator process %+v runs", p)
	Expect(pl.OperatorReplicaPids()).To(Equal([]int{p.Pid}), "process %q is the operator's only replica", p.Name)
	return p
}

// rss returns the resident memory of the running process pid in KiB, and fails the spec when
// the process is gone.
func rss(pid int) int {
	GinkgoHelper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	Expect(err).NotTo(HaveOccurred(), "process %d is gone", pid)
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			n, err := strconv.Atoi(f[1])
			Expect(err).NotTo(HaveOccurred(), "/proc/%d/status: %s", pid, l)
			return n
		}
	}
	Fail(fmt.Sprintf("/proc/%d/status has no VmRSS: the process %d exited", pid, pid))
	return 0
}

var _ = Describe("Hostile input: a value template that asks for gigabytes", Ordered, func() {
	const ns = "hostile"

	It("makes only its own ClusterAddon Degraded (a limit was hit), and the operator keeps serving every other cluster", func(ctx SpecContext) {
		before := operatorProcess()
		createNamespace(ctx, ns)
		Expect(k8s.Create(ctx, newClusterStack(ns, "v1", hostileVersion))).To(Succeed())
		Expect(k8s.Create(ctx, newCluster(ns, "bad", hostileVersion, "10.71.0.0/16"))).To(Succeed())
		Expect(k8s.Create(ctx, newCluster(ns, "good", "v1", "10.72.0.0/16"))).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			a := getAddon(ctx, g, ns, "bad")
			g.Expect(a).To(framework.HaveCondition(csv1.ValuesRenderedCondition, metav1.ConditionFalse, "repeat", "limit"))
			g.Expect(framework.Condition(a, csv1.ValuesRenderedCondition).Reason).To(Equal(csv1.ReasonRenderLimitExceeded))
			g.Expect(a).To(framework.HaveCondition(csv1.DegradedCondition, metav1.ConditionTrue, "cluster-addon/cni/overwrite.yaml"))
			g.Expect(getAddon(ctx, g, ns, "good")).To(framework.HaveCondition(csv1.ReadyCondition, metav1.ConditionTrue))
		}).Should(Succeed())
		after := operatorProcess()
		Expect(after.Pid).To(Equal(before.Pid), "the operator did not restart")
		Expect(after.Restarts).To(Equal(before.Restarts), "the operator did not crash")
		kib := rss(after.Pid)
		GinkgoWriter.Printf("operator (pid %d) RSS after the hostile template: %d KiB\n", after.Pid, kib)
		Expect(kib).To(BeNumerically("<", 512*1024), "the operator did not balloon")
	})
})

var _ = Describe("Hostile input: generated names that would collide or overflow", Ordered, func() {
	const ns = "names"
	const long = "cluster-with-a-sixty-character-name-for-the-safe-name-spec-x"

	It("delivers every component to Clusters a, a-b and a 60-character one, each object its own", func(ctx SpecContext) {
		Expect(namesComponents[2]).To(HaveLen(40))
		Expect(long).To(HaveLen(60))
		createNamespace(ctx, ns)
		Expect(k8s.Create(ctx, newClusterStack(ns, namesVersion))).To(Succeed())
		clusters := []string{"a", "a-b", long}
		for i, c := range clusters {
			Expect(k8s.Create(ctx, newCluster(ns, c, namesVersion, fmt.Sprintf("10.8%d.0.0/16", i)))).To(Succeed())
		}
		for _, c := range clusters {
			Eventually(ctx, func(g Gomega) {
				a := getAddon(ctx, g, ns, c)
				g.Expect(a).To(framework.HaveCondition(csv1.ReadyCondition, metav1.ConditionTrue))
				g.Expect(a).To(framework.HaveCondition(csv1.ObjectsOwnedCondition, metav1.ConditionTrue))
				g.Expect(a.Status.Components).To(HaveLen(2 + len(namesComponents)))
			}).WithTimeout(6 * time.Minute).Should(Succeed())
			wl, err := workloadClient(ctx, ns, c)
			Expect(err).NotTo(HaveOccurred())
			for _, comp := range namesComponents {
				cm := &corev1.ConfigMap{}
				Expect(wl.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: comp}, cm)).To(Succeed(), "component %s in cluster %s", comp, c)
				Expect(cm.Data).To(HaveKeyWithValue("cluster", c), "each cluster's own object delivered it")
			}
		}
		var kss kustomizev1.KustomizationList
		Expect(k8s.List(ctx, &kss, client.InNamespace(ns))).To(Succeed())
		names := map[string]bool{}
		for _, ks := range kss.Items {
			Expect(len(ks.Name)).To(BeNumerically("<=", 63), ks.Name)
			Expect(names).NotTo(HaveKey(ks.Name))
			names[ks.Name] = true
		}
		Expect(names).To(HaveLen(len(clusters)*(1+len(namesComponents))), "one Kustomization per cluster and kustomize component")
	})
})
