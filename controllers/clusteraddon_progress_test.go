package controllers_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/controllers"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
)

// Status writes that only report progress are held for up to --progress-status-interval
// (progressPacer; the suite runs with the default, as cmd/main.go does): a Cluster whose addons
// are Ready a moment after they were delivered costs one ClusterAddon status write, and a held
// write is still written when nothing else happens.
var _ = Describe("ClusterAddon progress writes", func() {
	const interval = controllers.DefaultProgressInterval

	// statusWrites watches the namespace's ClusterAddon name and returns the statuses it was
	// written with, in order (a write that changed anything else is not counted), and a stop.
	statusWrites := func(ns, name string) (func() []csv1.ClusterAddonStatus, func()) {
		w, err := k8s.Watch(ctx, &csv1.ClusterAddonList{}, client.InNamespace(ns))
		Expect(err).NotTo(HaveOccurred())
		seen := make(chan []csv1.ClusterAddonStatus, 1)
		seen <- nil
		go func() {
			defer GinkgoRecover()
			var last *csv1.ClusterAddonStatus
			for ev := range w.ResultChan() {
				a, ok := ev.Object.(*csv1.ClusterAddon)
				if !ok || a.Name != name || ev.Type != watch.Modified && ev.Type != watch.Added {
					continue
				}
				if last == nil || !equality.Semantic.DeepEqual(*last, a.Status) {
					writes := <-seen
					if last != nil {
						writes = append(writes, *a.Status.DeepCopy())
					}
					seen <- writes
				}
				last = a.Status.DeepCopy()
			}
		}()
		return func() []csv1.ClusterAddonStatus {
			writes := <-seen
			seen <- writes
			return writes
		}, w.Stop
	}

	It("writes a ClusterAddon whose addons are Ready within the interval once, and a held write when it is due", func() {
		ns := newNamespace("addon-progress")
		st := newStack("acme", "progress", "1.36").WithHelmAddon("cni", "1.0.0").WithHelmAddon("csi", "2.0.0")
		v1 := publishRelease(ns, st, "v1")
		newClusterStack(ns, "progress", st).Versions("v1").Create()
		releaseValidated(ns, v1)

		By("both HelmReleases Ready at once: one status write, Available")
		writes, stop := statusWrites(ns, "c1")
		defer stop()
		newCluster(ns, "c1").WithClass(st, v1).Initialized().Create()
		cni, csi := fluxgen.AddonObjectName("c1", "cni"), fluxgen.AddonObjectName("c1", "csi")
		Eventually(func(g Gomega) {
			g.Expect(exists(g, helmRelease(ns, cni))).To(BeTrue())
			g.Expect(exists(g, helmRelease(ns, csi))).To(BeTrue())
		}).Should(Succeed())
		delivered := time.Now()
		Eventually(func(g Gomega) { readyHelmRelease(g, ns, cni, "1.0.0") }).Should(Succeed())
		Eventually(func(g Gomega) { readyHelmRelease(g, ns, csi, "2.0.0") }).Should(Succeed())
		bothReady := time.Since(delivered)
		Eventually(func(g Gomega) {
			g.Expect(condition(clusterAddon(g, ns, "c1").Status.Conditions, csv1.AvailableCondition)).To(HaveField("Status", metav1.ConditionTrue))
		}).Should(Succeed())
		Consistently(func() int { return len(writes()) }, interval+time.Second).Should(BeNumerically("<=", 2), func() string { return fmt.Sprintf("status writes: %+v", writes()) })
		if bothReady < interval/2 {
			// Flux reported both within the interval: the states in between were never written.
			Expect(writes()).To(HaveLen(1), "one status write for a ClusterAddon whose addons were Ready %s after delivery", bothReady)
		} else {
			GinkgoWriter.Printf("both Ready %s after delivery (interval %s): the first status may have been due before\n", bothReady, interval)
		}
		Expect(writes()[len(writes())-1].LastAppliedRelease).To(Equal(v1))

		By("only the first HelmRelease Ready, then nothing: the held write is written when it is due")
		newCluster(ns, "c2").WithClass(st, v1).Initialized().Create()
		cni2, csi2 := fluxgen.AddonObjectName("c2", "cni"), fluxgen.AddonObjectName("c2", "csi")
		Eventually(func(g Gomega) { g.Expect(exists(g, helmRelease(ns, csi2))).To(BeTrue()) }).Should(Succeed())
		Eventually(func(g Gomega) { readyHelmRelease(g, ns, cni2, "1.0.0") }).Should(Succeed())
		Eventually(func(g Gomega) {
			a := clusterAddon(g, ns, "c2")
			g.Expect(condition(a.Status.Conditions, csv1.ProgressingCondition)).To(HaveField("Status", metav1.ConditionTrue))
			g.Expect(a.Status.Components).To(ConsistOf(
				And(HaveField("Name", "cni"), HaveField("Ready", true)),
				And(HaveField("Name", "csi"), HaveField("Ready", false)),
			))
		}, 3*interval).Should(Succeed())
	})
})
