package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
	"github.com/clusterstack-io/clusterstack-operator/test/framework"
)

// workloadWatch hands every change of some kinds of objects in a workload cluster's kube-system
// namespace to a handler, from when it starts until Stop: first each object there as Added, then
// each event. A watch the API server ends early (its timeout, a restart) is started again from
// the last resourceVersion it delivered, which misses nothing; when that is not possible (the
// version is gone, or the API server cannot be reached), Stop fails the spec instead: a check of
// the events would pass for a window the watch did not see.
type workloadWatch struct {
	mu       sync.Mutex
	gaps     []string
	restarts int
	stop     context.CancelFunc
	done     sync.WaitGroup
}

// watchWorkload starts a workloadWatch of the kinds of lists in the workload cluster of Cluster
// ns/cluster. handle is called from one goroutine per kind.
func watchWorkload(ctx context.Context, ns, cluster string, lists []client.ObjectList, handle func(watch.Event)) *workloadWatch {
	GinkgoHelper()
	cfg, err := pl.WorkloadConfig(ctx, ns, cluster)
	Expect(err).NotTo(HaveOccurred())
	wc, err := client.NewWithWatch(cfg, client.Options{})
	Expect(err).NotTo(HaveOccurred())
	wctx, cancel := context.WithCancel(ctx)
	ww := &workloadWatch{stop: cancel}
	for _, list := range lists {
		Expect(wc.List(ctx, list, client.InNamespace("kube-system"))).To(Succeed())
		Expect(apimeta.EachListItem(list, func(o runtime.Object) error {
			handle(watch.Event{Type: watch.Added, Object: o})
			return nil
		})).To(Succeed())
		rv := list.(metav1.ListInterface).GetResourceVersion()
		kind := strings.TrimSuffix(fmt.Sprintf("%T", list), "List")
		ww.done.Add(1)
		go func() {
			defer GinkgoRecover()
			defer ww.done.Done()
			gap := func(format string, args ...any) {
				ww.mu.Lock()
				defer ww.mu.Unlock()
				ww.gaps = append(ww.gaps, fmt.Sprintf("%s: ", kind)+fmt.Sprintf(format, args...))
			}
			for {
				// From the last resourceVersion delivered, a few attempts a second apart (an API
				// server busy for a moment is no gap).
				var w watch.Interface
				var err error
				// failed is the last error of an attempt that Stop's cancellation did not cause.
				var failed error
				for attempt := 1; ; attempt++ {
					w, err = wc.Watch(wctx, list, client.InNamespace("kube-system"),
						&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
					if err != nil && wctx.Err() == nil {
						failed = err
					}
					if err == nil || wctx.Err() != nil || attempt == 5 {
						break
					}
					select {
					case <-wctx.Done():
					case <-time.After(time.Second):
					}
				}
				if err != nil {
					switch {
					case wctx.Err() == nil:
						gap("the watch could not be started again from resourceVersion %s: %v", rv, err)
					case failed != nil:
						// Stopped while it could not be started again: the time since the last
						// watch ended was not watched.
						gap("the watch was stopped while it could not be started again from resourceVersion %s: %v", rv, failed)
					}
					return
				}
				for ev := range w.ResultChan() {
					if ev.Type == watch.Error {
						err := apierrors.FromObject(ev.Object)
						if wctx.Err() != nil {
							w.Stop() // Stop's cancellation
							return
						}
						if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
							// The events since rv are gone: the watch cannot go on without a gap.
							gap("the watch from resourceVersion %s ended: %v", rv, err)
							w.Stop()
							return
						}
						break // the stream broke: started again from rv
					}
					if m, ok := ev.Object.(metav1.Object); ok {
						rv = m.GetResourceVersion()
					}
					if ev.Type != watch.Bookmark {
						handle(ev)
					}
				}
				w.Stop()
				if wctx.Err() != nil {
					return
				}
				ww.mu.Lock()
				ww.restarts++
				restarts := ww.restarts
				ww.mu.Unlock()
				if restarts > maxWatchRestarts {
					gap("the watch ended %d times", restarts)
					return
				}
			}
		}()
	}
	return ww
}

// maxWatchRestarts bounds how often a workloadWatch starts its watches again: a watch that keeps
// ending at once is no watch.
const maxWatchRestarts = 1000

// Stop ends the watch, and fails the spec when it missed events.
func (ww *workloadWatch) Stop() {
	GinkgoHelper()
	ww.stop()
	ww.done.Wait()
	ww.mu.Lock()
	defer ww.mu.Unlock()
	Expect(ww.gaps).To(BeEmpty(), "the watch of the workload cluster has gaps (it was started again %d times)", ww.restarts)
	if ww.restarts > 0 {
		GinkgoWriter.Printf("the watch of the workload cluster was started again %d times, from the last resourceVersion it delivered\n", ww.restarts)
	}
}

// deletionWatch records every object deleted in a workload cluster's kube-system while it runs.
type deletionWatch struct {
	mu      sync.Mutex
	deleted []string
	watch   *workloadWatch
}

// watchDeletions watches DaemonSets, Deployments and ConfigMaps in the workload cluster's
// kube-system namespace and records deletions: an uninstall or a prune shows up there.
func watchDeletions(ctx context.Context, ns, cluster string) *deletionWatch {
	GinkgoHelper()
	d := &deletionWatch{}
	d.watch = watchWorkload(ctx, ns, cluster, []client.ObjectList{&appsv1.DaemonSetList{}, &appsv1.DeploymentList{}, &corev1.ConfigMapList{}}, func(ev watch.Event) {
		if ev.Type == watch.Deleted {
			o := ev.Object.(client.Object)
			d.mu.Lock()
			defer d.mu.Unlock()
			d.deleted = append(d.deleted, fmt.Sprintf("%T %s", o, o.GetName()))
		}
	})
	return d
}

// Stop ends the watch and returns what was deleted; it fails the spec when the watch missed
// events.
func (d *deletionWatch) Stop() []string {
	GinkgoHelper()
	d.watch.Stop()
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.deleted
}

// kubectl runs kubectl against the management API server.
func kubectl(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", pl.Kubeconfig()}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// printStep prints a cluster's and its stack's status at a step of a scenario (for the record).
func printStep(ctx context.Context, ns, cluster, step string) {
	a := &csv1.ClusterAddon{}
	cs := &csv1.ClusterStack{}
	if k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster}, a) != nil || k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "aws-base-1-36"}, cs) != nil {
		return
	}
	GinkgoWriter.Printf("STEP %s: ClusterAddon %s desired=%s applied=%s\n", step, cluster, a.Status.DesiredRelease, a.Status.LastAppliedRelease)
	for _, t := range []string{csv1.AvailableCondition, csv1.ProgressingCondition, csv1.DegradedCondition} {
		if c := apimeta.FindStatusCondition(a.Status.Conditions, t); c != nil {
			GinkgoWriter.Printf("  %s=%s (%s) %s\n", t, c.Status, c.Reason, c.Message)
		}
	}
	GinkgoWriter.Printf("  ClusterStack: available version %q, clusters %s\n", cs.Status.Versions.Available, cs.Status.ClustersSummary)
	for _, r := range cs.Status.Releases {
		GinkgoWriter.Printf("  release %s kept: %v\n", r.Name, r.Reasons)
	}
}

func releaseReasons(ctx context.Context, g Gomega, ns string) map[string][]string {
	out := map[string][]string{}
	for _, r := range getStack(ctx, g, ns).Status.Releases {
		out[r.Name] = r.Reasons
	}
	return out
}

// The rollback lifecycle runs against both kinds of source: the stack's Git repository, and its
// releases published to the plane's OCI registry (with their charts beside them) as `stackctl
// push` publishes them.
var (
	_ = rollbackLifecycle("from Git", "rollback", newClusterStack)
	_ = rollbackLifecycle("from an OCI registry", "rollback-oci", newOCIClusterStack)
)

// rollbackLifecycle is the release lifecycle of a failed upgrade and its rollback, in namespace
// ns, with the ClusterStack newStack makes.
func rollbackLifecycle(source, ns string, newStack func(ns string, versions ...string) *csv1.ClusterStack) bool { //nolint:unparam // var _ = Describe(...), Ginkgo's idiom
	return Describe("Release lifecycle "+source+": rollback after a failed upgrade", Ordered, SpecPriority(6), func() {
		var counts *stackCounts

		BeforeAll(func(ctx SpecContext) {
			createNamespace(ctx, ns)
			Expect(k8s.Create(ctx, newStack(ns, "v1", "v2"))).To(Succeed())
			Expect(k8s.Create(ctx, newCluster(ns, "one", "v1", "10.31.0.0/16"))).To(Succeed())
			Expect(k8s.Create(ctx, newCluster(ns, "two", "v1", "10.32.0.0/16"))).To(Succeed())
			// Two workload clusters start here, after the release is validated and Flux delivered its
			// ClusterClass: over five minutes were seen while the fault suite's fleet of 20 was up.
			for _, c := range []string{"one", "two"} {
				Eventually(ctx, func(g Gomega) {
					a := getAddon(ctx, g, ns, c)
					g.Expect(a).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue))
					g.Expect(a.Status.LastAppliedRelease).To(Equal(tagPrefix + "v1"))
				}).WithTimeout(8 * time.Minute).Should(Succeed())
			}
		}, NodeTimeout(10*time.Minute))

		It("v1 -> v2 -> broken v3 -> back to v2: nothing removed, v2 kept and Available again, the cluster counted throughout", func(ctx SpecContext) {
			wd := watchDeletions(ctx, ns, "one")
			counts = watchStackCounts(ctx, ns)

			By("moving one to v2: delivered and Available")
			moveCluster(ctx, ns, "one", "v2")
			Eventually(ctx, func(g Gomega) {
				a := getAddon(ctx, g, ns, "one")
				g.Expect(a.Status.LastAppliedRelease).To(Equal(tagPrefix + "v2"))
				g.Expect(a).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue))
			}).Should(Succeed())
			var cniRevision int
			Eventually(ctx, func(g Gomega) { cniRevision = helmRevision(ctx, g, ns, fluxgen.AddonObjectName("one", "cni")) }).Should(Succeed())
			printStep(ctx, ns, "one", "one on v2")
			GinkgoWriter.Printf("  Helm revision of one-cni: %d\n", cniRevision)

			By("the newest release is now v10, whose cni values template is broken; v1 and v2 are no longer pinned")
			pinVersions(ctx, ns, "v10")
			moveCluster(ctx, ns, "one", "v10")
			Eventually(ctx, func(g Gomega) {
				a := getAddon(ctx, g, ns, "one")
				g.Expect(a).To(framework.HaveCondition(csv1.DegradedCondition, metav1.ConditionTrue, "cluster-addon/cni/overwrite.yaml", "missing from the data"))
				g.Expect(a).To(framework.HaveCondition(csv1.StalledCondition, metav1.ConditionTrue, "overwrite.yaml"))
			}).Should(Succeed())
			By("v2 is kept, and status says why: one's addons were applied from it and its Flux objects use it")
			Eventually(ctx, func(g Gomega) {
				rs := releaseReasons(ctx, g, ns)
				g.Expect(rs).To(HaveKeyWithValue(tagPrefix+"v2", ContainElements("Applied", "Referenced")))
				g.Expect(rs).To(HaveKeyWithValue(tagPrefix+"v1", ContainElements("InUse", "Applied", "Referenced")))
				g.Expect(rs).To(HaveKeyWithValue(tagPrefix+"v10", ContainElements("Pinned", "InUse")))
			}).Should(Succeed())
			printStep(ctx, ns, "one", "one moved to the broken v10")
			Consistently(ctx, func(g Gomega) {
				g.Expect(getRelease(ctx, g, ns, "v2")).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue))
				g.Expect(clusterClassPresence(ctx, ns, "v2")()).To(Equal(present))
				hr := &helmv2.HelmRelease{}
				g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: fluxgen.AddonObjectName("one", "cni")}, hr)).To(Succeed())
				g.Expect(hr.Spec.ChartRef.Name).To(Equal(fluxgen.AddonChartName(tagPrefix+"v2", "cni")))
			}, 2*stackInterval, time.Second).Should(Succeed(), "two intervals of the releases' reconciles")

			By("moving one back to v2 (admitted by the webhook): Available on v2 again")
			moveCluster(ctx, ns, "one", "v2")
			Eventually(ctx, func(g Gomega) {
				a := getAddon(ctx, g, ns, "one")
				g.Expect(a.Status.DesiredRelease).To(Equal(tagPrefix + "v2"))
				g.Expect(a.Status.LastAppliedRelease).To(Equal(tagPrefix + "v2"))
				g.Expect(a).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue))
				g.Expect(a).To(framework.HaveCondition(csv1.DegradedCondition, metav1.ConditionFalse))
				g.Expect(a).To(framework.HaveCondition(csv1.ReadyCondition, metav1.ConditionTrue))
				g.Expect(helmRevision(ctx, g, ns, fluxgen.AddonObjectName("one", "cni"))).To(Equal(cniRevision), "the cni chart did not change: no new Helm revision")
			}).Should(Succeed())
			printStep(ctx, ns, "one", "one moved back to v2")
			GinkgoWriter.Printf("  Helm revision of one-cni: %d\n", helmRevision(ctx, Default, ns, fluxgen.AddonObjectName("one", "cni")))
			Expect(wd.Stop()).To(BeEmpty(), "nothing is uninstalled or pruned in the workload cluster")
			Expect(counts.Stop()).To(HaveEach(Equal(2)), "the ClusterStack counts both clusters throughout")
			Eventually(ctx, func(g Gomega) {
				cs := getStack(ctx, g, ns)
				g.Expect(cs.Status.Clusters.Total).To(BeEquivalentTo(2))
				g.Expect(cs.Status.Clusters.Available).To(BeEquivalentTo(2))
			}).Should(Succeed())
		})

		It("rolls back from a chart that fails to install: Degraded after grace, recovers on v2 without an uninstall", func(ctx SpecContext) {
			wd := watchDeletions(ctx, ns, "one")
			pinVersions(ctx, ns, "v6")
			Eventually(ctx, func(g Gomega) {
				g.Expect(getRelease(ctx, g, ns, "v6")).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue))
			}).Should(Succeed())
			gw := watchGrace(ctx, "ClusterAddon "+ns+"/one", addonDegraded(ns, "one", "v6"))
			fault := moveCluster(ctx, ns, "one", "v6")
			Eventually(ctx, func(g Gomega) {
				g.Expect(getAddon(ctx, g, ns, "one")).To(framework.HaveCondition(csv1.DegradedCondition, metav1.ConditionTrue, "HelmRelease/"+fluxgen.AddonObjectName("one", "cni")))
			}).Should(Succeed())
			gw.Check(fault)
			// From the status that names v2 the desired release on, the rollout back is a new one with
			// its own grace period: v6's failure no longer makes the ClusterAddon Degraded (and it is
			// not Degraded before that grace period passed, if helm-controller is slow to act on it).
			stop := observe(ctx, ns, "one")
			moved := time.Now()
			moveCluster(ctx, ns, "one", "v2")
			Eventually(ctx, func(g Gomega) {
				a := getAddon(ctx, g, ns, "one")
				g.Expect(a.Status.LastAppliedRelease).To(Equal(tagPrefix + "v2"))
				g.Expect(a).To(framework.HaveCondition(csv1.ReadyCondition, metav1.ConditionTrue))
				g.Expect(a.Status.DesiredReleaseTime).NotTo(BeNil())
				g.Expect(a.Status.DesiredReleaseTime.Time).To(BeTemporally(">=", moved.Add(-time.Second)), "desiredReleaseTime is the move back")
			}).Should(Succeed())
			samples, afterMove := stop(), 0
			for _, s := range samples {
				if s.Desired != tagPrefix+"v2" || s.At.Sub(moved) >= grace-time.Second {
					continue
				}
				afterMove++
				Expect(s.Degraded).To(Equal(metav1.ConditionFalse), "Degraded after the move back to v2, within its grace period: %s", s.DegradedMsg)
			}
			Expect(afterMove).To(BeNumerically(">", 0))
			Expect(wd.Stop()).NotTo(ContainElement(ContainSubstring("DaemonSet cni")), "the cni DaemonSet is never uninstalled")
		})

		It("keeps the newest older working release as a rollback target once nothing uses it", func(ctx SpecContext) {
			moveCluster(ctx, ns, "two", "v2")
			pinVersions(ctx, ns, newestVersion)
			moveCluster(ctx, ns, "one", newestVersion)
			moveCluster(ctx, ns, "two", newestVersion)
			Eventually(ctx, func(g Gomega) {
				for _, c := range []string{"one", "two"} {
					g.Expect(getAddon(ctx, g, ns, c).Status.LastAppliedRelease).To(Equal(tagPrefix + newestVersion))
				}
				rs := releaseReasons(ctx, g, ns)
				g.Expect(rs).To(HaveKeyWithValue(tagPrefix+newestVersion, ConsistOf("InUse", "Applied", "Pinned", "Referenced")))
				// v10 went when v6 was pinned (newer than every wanted release, used by nothing);
				// of v2 and v6, v6 is the newest older release that is validated and Available.
				g.Expect(rs).To(HaveKeyWithValue(tagPrefix+"v6", ConsistOf("RollbackTarget")), "the newest older release that works")
				g.Expect(rs).NotTo(HaveKey(tagPrefix + "v1"))
				g.Expect(rs).NotTo(HaveKey(tagPrefix+"v2"), "rollbackReleases defaults to 1")
			}).Should(Succeed())
			Eventually(ctx, releasePresence(ctx, ns, "v1")).Should(Equal(absent))
			Eventually(ctx, releasePresence(ctx, ns, "v2")).Should(Equal(absent))
			Expect(releasePresence(ctx, ns, "v6")()).To(Equal(present))
		})

		It("leaves a paused Cluster alone and resumes when it is unpaused", func(ctx SpecContext) {
			c := &clusterv1.Cluster{}
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "two"}, c)).To(Succeed())
			patch := client.MergeFrom(c.DeepCopy())
			c.Spec.Paused = ptr.To(true)
			Expect(k8s.Patch(ctx, c, patch)).To(Succeed())
			Eventually(ctx, func(g Gomega) {
				g.Expect(getAddon(ctx, g, ns, "two")).To(framework.HaveCondition(csv1.PausedCondition, metav1.ConditionTrue, "paused"))
			}).Should(Succeed())
			hr := &helmv2.HelmRelease{}
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: fluxgen.AddonObjectName("two", "cni")}, hr)).To(Succeed())
			addon := getAddon(ctx, Default, ns, "two")

			// v6, the rollback target, still exists: Cluster API refuses to move a Cluster to a
			// ClusterClass that does not.
			moveCluster(ctx, ns, "two", "v6")
			Consistently(ctx, func(g Gomega) {
				now := &helmv2.HelmRelease{}
				g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(hr), now)).To(Succeed())
				g.Expect(now.ResourceVersion).To(Equal(hr.ResourceVersion), "no writes to a paused Cluster's Flux objects")
				g.Expect(getAddon(ctx, g, ns, "two").ResourceVersion).To(Equal(addon.ResourceVersion), "no writes to a paused Cluster's ClusterAddon")
			}, 10*time.Second, time.Second).Should(Succeed())

			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "two"}, c)).To(Succeed())
			patch = client.MergeFrom(c.DeepCopy())
			c.Spec.Paused = nil
			Expect(k8s.Patch(ctx, c, patch)).To(Succeed())
			Eventually(ctx, func(g Gomega) {
				a := getAddon(ctx, g, ns, "two")
				g.Expect(a).To(framework.HaveCondition(csv1.PausedCondition, metav1.ConditionFalse))
				g.Expect(a.Status.DesiredRelease).To(Equal(tagPrefix+"v6"), "the move was acted on once unpaused")
			}).Should(Succeed())
		})

		It("serves `kubectl get clusterstack NAME` and the cluster-stacks category", func(ctx SpecContext) {
			out, err := kubectl(ctx, "-n", ns, "get", "clusterstack", "aws-base-1-36")
			Expect(err).NotTo(HaveOccurred(), out)
			Expect(out).To(ContainSubstring("aws-base-1-36"))
			out, err = kubectl(ctx, "-n", ns, "get", "cluster-stacks")
			Expect(err).NotTo(HaveOccurred(), out)
			Expect(out).To(And(ContainSubstring("clusterstack.clusterstack.io/aws-base-1-36"), ContainSubstring("clusteraddon.clusterstack.io/one")))
		})
	})
}

// stackCounts samples the total number of Clusters a ClusterStack counts.
type stackCounts struct {
	mu     sync.Mutex
	totals []int
	stop   context.CancelFunc
	done   chan struct{}
}

func watchStackCounts(ctx context.Context, ns string) *stackCounts {
	cctx, cancel := context.WithCancel(ctx)
	s := &stackCounts{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-cctx.Done():
				return
			case <-t.C:
			}
			cs := &csv1.ClusterStack{}
			if k8s.Get(cctx, client.ObjectKey{Namespace: ns, Name: "aws-base-1-36"}, cs) == nil {
				s.mu.Lock()
				s.totals = append(s.totals, int(cs.Status.Clusters.Total))
				s.mu.Unlock()
			}
		}
	}()
	return s
}

func (s *stackCounts) Stop() []int {
	s.stop()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.totals
}

var _ = Describe("Release lifecycle: Clusters on releases that do not exist", Ordered, func() {
	const ns = "missing"

	BeforeAll(func(ctx SpecContext) { createNamespace(ctx, ns) })

	It("a Cluster created on an unpublished tag before its ClusterStack: Degraded naming the tag and the stack, then delivered once the tag is published", func(ctx SpecContext) {
		Expect(k8s.Create(ctx, newCluster(ns, "early", "v14", "10.41.0.0/16"))).To(Succeed())
		cs := newClusterStack(ns, "v1")
		Expect(k8s.Create(ctx, cs)).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			a := getAddon(ctx, g, ns, "early")
			g.Expect(a).To(framework.HaveCondition(csv1.ReleaseReadyCondition, metav1.ConditionFalse, tagPrefix+"v14", "aws-base-1-36", "does not exist"))
			g.Expect(a).To(framework.HaveCondition(csv1.DegradedCondition, metav1.ConditionTrue, tagPrefix+"v14", "aws-base-1-36"))
			g.Expect(getStack(ctx, g, ns).Status.MissingReleases).To(ContainElement(And(HaveField("Name", tagPrefix+"v14"), HaveField("Reason", csv1.ReasonTagNotFound))))
		}).Should(Succeed())
		Expect(releasePresence(ctx, ns, "v14")()).To(Equal(absent), "no release for a tag that does not exist")

		By("publishing the tag, the release is created because the Cluster uses it, and the addons are delivered")
		publishVersion(ctx, "v14", nil)
		Eventually(ctx, func(g Gomega) {
			a := getAddon(ctx, g, ns, "early")
			g.Expect(a.Status.LastAppliedRelease).To(Equal(tagPrefix + "v14"))
			g.Expect(a).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue))
			g.Expect(releaseReasons(ctx, g, ns)).To(HaveKeyWithValue(tagPrefix+"v14", ContainElement("InUse")))
		}).WithTimeout(4 * time.Minute).Should(Succeed())
	})

	It("the webhook refuses a move to a release-shaped ClusterClass whose tag is not published, naming what is", func(ctx SpecContext) {
		err := patchTopology(ctx, ns, "early", tagPrefix+"v404", "")
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(And(ContainSubstring(tagPrefix+"v404"), ContainSubstring("not published"), ContainSubstring("publish the tag"), ContainSubstring(tagPrefix+"v14")))
	})

	It("a Cluster moving to a published tag that has no release yet: the release is created (InUse) and delivered; nothing is deleted meanwhile (with CAPI: refused until the ClusterStack wants it)", func(ctx SpecContext) {
		Expect(releasePresence(ctx, ns, "v2")()).To(Equal(absent))
		wd := watchDeletions(ctx, ns, "early")
		if withCAPI {
			// Cluster API's webhook refuses a move to a ClusterClass that does not exist yet:
			// with CAPI, the release must be wanted by the ClusterStack before Clusters move.
			err := patchTopology(ctx, ns, "early", tagPrefix+"v2", "")
			Expect(err).To(HaveOccurred())
			Expect(err.Error()).To(And(ContainSubstring("validation.cluster.cluster.x-k8s.io"), ContainSubstring(tagPrefix+"v2"), ContainSubstring("not found")))
			pinVersions(ctx, ns, "v1", "v2")
			Eventually(ctx, func(g Gomega) {
				g.Expect(getRelease(ctx, g, ns, "v2")).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue))
			}).Should(Succeed())
		}
		// The ClusterAddon and its Flux objects stay from the move until v2 is delivered: sampled
		// all along.
		stay := sampleEvery(ctx, 200*time.Millisecond, func() (string, bool) {
			addon := presence(ctx, client.ObjectKey{Namespace: ns, Name: "early"}, &csv1.ClusterAddon{})()
			hr := presence(ctx, client.ObjectKey{Namespace: ns, Name: fluxgen.AddonObjectName("early", "cni")}, &helmv2.HelmRelease{})()
			return "ClusterAddon " + addon + ", HelmRelease " + hr, true
		})
		moveCluster(ctx, ns, "early", "v2")
		Eventually(ctx, func(g Gomega) {
			a := getAddon(ctx, g, ns, "early")
			g.Expect(a.Status.LastAppliedRelease).To(Equal(tagPrefix + "v2"))
			g.Expect(a).To(framework.HaveCondition(csv1.ReadyCondition, metav1.ConditionTrue))
		}).Should(Succeed())
		samples := stay()
		Expect(samples).NotTo(BeEmpty())
		Expect(samples).To(HaveEach(Equal("ClusterAddon present, HelmRelease present")), "the ClusterAddon and its Flux objects stay while the release is created and delivered")
		Expect(wd.Stop()).To(BeEmpty())
	})
})

var _ = Describe("Release lifecycle: values and charts switch together", Ordered, func() {
	const ns = "valueswitch"

	It("never runs a chart with another release's values when a value key is renamed", func(ctx SpecContext) {
		createNamespace(ctx, ns)
		Expect(k8s.Create(ctx, newClusterStack(ns, "v1", "v9"))).To(Succeed())
		Expect(k8s.Create(ctx, newCluster(ns, "vs", "v1", "10.51.0.0/16"))).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			g.Expect(getAddon(ctx, g, ns, "vs")).To(framework.HaveCondition(csv1.ReadyCondition, metav1.ConditionTrue))
		}).Should(Succeed())
		oldValues := getAddon(ctx, Default, ns, "vs").Status.ValuesConfigMap

		var history []map[string]string
		var hmu sync.Mutex
		w := watchWorkload(ctx, ns, "vs", []client.ObjectList{&corev1.ConfigMapList{}}, func(ev watch.Event) {
			if cm, ok := ev.Object.(*corev1.ConfigMap); ok && cm.Name == "cni-config" {
				hmu.Lock()
				defer hmu.Unlock()
				history = append(history, cm.Data)
			}
		})

		moveCluster(ctx, ns, "vs", "v9")
		Eventually(ctx, func(g Gomega) {
			a := getAddon(ctx, g, ns, "vs")
			g.Expect(a.Status.LastAppliedRelease).To(Equal(tagPrefix + "v9"))
			g.Expect(a).To(framework.HaveCondition(csv1.ReadyCondition, metav1.ConditionTrue))
			hmu.Lock()
			defer hmu.Unlock()
			g.Expect(history).To(ContainElement(HaveKeyWithValue("values-schema", "2")), "the v9 chart was installed")
		}).Should(Succeed())
		w.Stop()
		hmu.Lock()
		defer hmu.Unlock()
		for _, data := range history {
			Expect(data).To(HaveKeyWithValue("pod-cidr", "10.51.0.0/16"), "every version of cni-config carries the pod CIDR: %v", history)
		}
		By("the old release's values ConfigMap goes once nothing uses it")
		Eventually(ctx, func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: oldValues}, &corev1.ConfigMap{}))
		}).Should(BeTrue())
	})
})

// movedTagSource is a kind of source for the moved-tag lifecycle: how to publish v4 and create
// the ClusterStack, how to move v4's tag (returning what it points to then: a commit, or the
// hex of a digest), and what the release's source is pinned to and delivers.
type movedTagSource struct {
	create   func(ctx context.Context, ns string) *csv1.ClusterStack
	move     func(ctx context.Context) string
	pinnedTo func(g Gomega, ns string) (pin, revision string)
}

var (
	_ = movedTagLifecycle("in Git", "movedtag", movedTagSource{
		create: func(_ context.Context, ns string) *csv1.ClusterStack { return newClusterStack(ns, "v4") },
		move: func(ctx context.Context) string {
			publishVersion(ctx, "v4", withStackVersion("v4-moved"))
			moved, err := pl.Git().Head(ctx, stacksRepo, "refs/tags/"+tagPrefix+"v4")
			Expect(err).NotTo(HaveOccurred())
			return moved
		},
		pinnedTo: func(g Gomega, ns string) (string, string) {
			repo := &sourcev1.GitRepository{}
			g.Expect(k8s.Get(bg(), client.ObjectKey{Namespace: ns, Name: tagPrefix + "v4"}, repo)).To(Succeed())
			g.Expect(repo.Status.Artifact).NotTo(BeNil())
			return repo.Spec.Reference.Commit, repo.Status.Artifact.Revision
		},
	})
	// In a repository of its own: the tag is moved by pushing other content to it.
	_ = movedTagLifecycle("in an OCI registry", "movedtag-oci", movedTagSource{
		create: func(ctx context.Context, ns string) *csv1.ClusterStack {
			pushOCIVersion(ctx, "stacks/movedtag", "v4", withStackVersion("v4"))
			t := ociTarget("stacks/movedtag")
			return framework.OCIClusterStack(ns, t.URL, t.Insecure, stackInterval, "v4")
		},
		move: func(ctx context.Context) string {
			return strings.TrimPrefix(pushOCIVersion(ctx, "stacks/movedtag", "v4", withStackVersion("v4-moved")), "sha256:")
		},
		pinnedTo: func(g Gomega, ns string) (string, string) {
			repo := &sourcev1.OCIRepository{}
			g.Expect(k8s.Get(bg(), client.ObjectKey{Namespace: ns, Name: tagPrefix + "v4"}, repo)).To(Succeed())
			g.Expect(repo.Status.Artifact).NotTo(BeNil())
			return strings.TrimPrefix(repo.Spec.Reference.Digest, "sha256:"), repo.Status.Artifact.Revision
		},
	})
)

// pushOCIVersion publishes version v of the reference stack (mutated) to repository repo of the
// plane's registry, unsigned, and returns its digest.
func pushOCIVersion(ctx context.Context, repo, v string, mutate func(string)) string {
	GinkgoHelper()
	digests, err := framework.PushVersions(ctx, ociTarget(repo), repoRoot, GinkgoT().TempDir(), nil, versionOf(v, mutate))
	Expect(err).NotTo(HaveOccurred())
	return digests[v]
}

// movedTagLifecycle: a release pinned to what its tag pointed to when it was validated reports
// a moved tag, naming both, and keeps delivering what it validated; it follows on opt-in.
func movedTagLifecycle(where, ns string, src movedTagSource) bool { //nolint:unparam // var _ = Describe(...), Ginkgo's idiom
	return Describe("Release lifecycle: a tag moved "+where+" is not delivered silently", Ordered, func() {
		It("pins what was validated, reports a moved tag with both and keeps delivering; follows it on opt-in", func(ctx SpecContext) {
			createNamespace(ctx, ns)
			Expect(k8s.Create(ctx, src.create(ctx, ns))).To(Succeed())
			var validated string
			Eventually(ctx, func(g Gomega) {
				rel := getRelease(ctx, g, ns, "v4")
				g.Expect(rel).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue))
				g.Expect(rel.Status.Commit).NotTo(BeEmpty())
				validated = rel.Status.Commit
				pin, _ := src.pinnedTo(g, ns)
				g.Expect(pin).To(Equal(validated), "the source is pinned to what was validated")
			}).Should(Succeed())

			By("moving the tag")
			moved := src.move(ctx)
			Expect(moved).NotTo(Equal(validated))
			Eventually(ctx, func(g Gomega) {
				rel := getRelease(ctx, g, ns, "v4")
				g.Expect(rel).To(framework.HaveCondition(csv1.TagVerifiedCondition, metav1.ConditionFalse, tagPrefix+"v4", validated, moved))
				g.Expect(rel).To(framework.HaveCondition(csv1.DegradedCondition, metav1.ConditionTrue, "moved", validated, moved))
				g.Expect(rel).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue), "what was validated is still delivered")
				g.Expect(rel.Status.Commit).To(Equal(validated))
			}).WithTimeout(2 * time.Minute).Should(Succeed())
			_, revision := src.pinnedTo(Default, ns)
			Expect(revision).To(HaveSuffix(validated))

			By("opting in to follow moved tags")
			cs := &csv1.ClusterStack{}
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "aws-base-1-36"}, cs)).To(Succeed())
			patch := client.MergeFrom(cs.DeepCopy())
			cs.Spec.FollowMovedTags = true
			Expect(k8s.Patch(ctx, cs, patch)).To(Succeed())
			Eventually(ctx, func(g Gomega) {
				rel := getRelease(ctx, g, ns, "v4")
				g.Expect(rel.Status.Commit).To(Equal(moved))
				g.Expect(rel).To(framework.HaveCondition(csv1.DegradedCondition, metav1.ConditionFalse))
				g.Expect(rel).To(framework.HaveCondition(csv1.ReadyCondition, metav1.ConditionTrue))
			}).WithTimeout(2 * time.Minute).Should(Succeed())
		})
	})
}

var _ = Describe("Release lifecycle: a deleted pinned release is recreated at once", func() {
	It("hears about its releases (non-controller owner) and recreates a pinned one", func(ctx SpecContext) {
		const ns = "recreate"
		createNamespace(ctx, ns)
		cs := newClusterStack(ns, "v1")
		cs.Spec.Interval = &metav1.Duration{Duration: 30 * time.Minute} // no timed requeue helps
		Expect(k8s.Create(ctx, cs)).To(Succeed())
		var uid string
		Eventually(ctx, func(g Gomega) {
			rel := getRelease(ctx, g, ns, "v1")
			g.Expect(rel).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue))
			uid = string(rel.UID)
		}).Should(Succeed())
		Expect(k8s.Delete(ctx, &csv1.ClusterStackRelease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tagPrefix + "v1"}})).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			rel := getRelease(ctx, g, ns, "v1")
			g.Expect(string(rel.UID)).NotTo(Equal(uid))
		}).WithTimeout(30 * time.Second).Should(Succeed())
	})
})

var _ = Describe("Release lifecycle: persistent failures stay Degraded", Ordered, SpecPriority(9), func() {
	const ns = "persistent"

	BeforeAll(func(ctx SpecContext) {
		createNamespace(ctx, ns)
		Expect(k8s.Create(ctx, newClusterStack(ns, "v11", "v12", pinnedVersion))).To(Succeed())
	})

	// degradedThroughRetries waits until the cluster's addon is Degraded for the object's failure
	// (naming it, "not Ready for more than" the grace period), checks with gw (started before the
	// fault) that it was not Degraded within the grace period after the fault, then checks it
	// stays Degraded while Flux makes at least two more attempts (its Ready condition leaves False
	// and comes back to False twice), and returns the Degraded message.
	//
	// A Degraded for the object's wait in its Flux controller's queue (longer than the queue grace
	// period, which the suite sets as short as the grace period) rightly ends when the controller
	// picks the object up, so it does not count: on a busy machine helm-controller's workers can
	// all be in other specs' installs for that long.
	degradedThroughRetries := func(ctx context.Context, gw *graceWatch, fault time.Time, cluster, fluxObject string, ready func(g Gomega) metav1.ConditionStatus) string {
		GinkgoHelper()
		Eventually(ctx, func(g Gomega) {
			g.Expect(getAddon(ctx, g, ns, cluster)).To(framework.HaveCondition(csv1.DegradedCondition, metav1.ConditionTrue, fluxObject, "not Ready for more than "+grace.String()))
		}).WithTimeout(4 * time.Minute).Should(Succeed())
		gw.Check(fault)
		GinkgoWriter.Printf("%s Degraded %s after the fault\n", fluxObject, time.Since(fault).Round(time.Second))
		retries, last := 0, metav1.ConditionFalse
		var msg string
		Eventually(ctx, func(g Gomega) {
			a := getAddon(ctx, g, ns, cluster)
			c := framework.Condition(a, csv1.DegradedCondition)
			Expect(c.Status).To(Equal(metav1.ConditionTrue), "Degraded must hold through Flux's retries (after %d)", retries)
			Expect(framework.Condition(a, csv1.AvailableCondition).Status).To(Equal(metav1.ConditionFalse))
			msg = c.Message
			now := ready(g)
			if last != metav1.ConditionFalse && now == metav1.ConditionFalse {
				retries++
			}
			last = now
			g.Expect(retries).To(BeNumerically(">=", 2))
		}).WithPolling(250 * time.Millisecond).WithTimeout(6 * time.Minute).Should(Succeed())
		return msg
	}

	It("a HelmRelease whose Deployment never becomes available: Degraded after grace, through retries, with what Helm said", func(ctx SpecContext) {
		gw := watchGrace(ctx, "ClusterAddon "+ns+"/p1", addonDegraded(ns, "p1", "v11"))
		created := time.Now()
		Expect(k8s.Create(ctx, newCluster(ns, "p1", "v11", "10.61.0.0/16"))).To(Succeed())
		msg := degradedThroughRetries(ctx, gw, created, "p1", "HelmRelease/"+fluxgen.AddonObjectName("p1", "never-helm"), func(g Gomega) metav1.ConditionStatus {
			hr := &helmv2.HelmRelease{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: fluxgen.AddonObjectName("p1", "never-helm")}, hr)).To(Succeed())
			return readyStatus(hr.Status.Conditions)
		})
		Expect(msg).NotTo(ContainSubstring("has not observed its latest generation"))
		Expect(msg).To(ContainSubstring("never-helm"))
		GinkgoWriter.Printf("Degraded: %s\n", msg)
	})

	It("a Kustomization with wait over the same: Degraded through retries, naming the health check", func(ctx SpecContext) {
		gw := watchGrace(ctx, "ClusterAddon "+ns+"/p1", addonDegraded(ns, "p1", "v12"))
		moved := moveCluster(ctx, ns, "p1", "v12")
		msg := degradedThroughRetries(ctx, gw, moved, "p1", "Kustomization/"+fluxgen.AddonObjectName("p1", "never-ks"), func(g Gomega) metav1.ConditionStatus {
			ks := &kustomizev1.Kustomization{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: fluxgen.AddonObjectName("p1", "never-ks")}, ks)).To(Succeed())
			return readyStatus(ks.Status.Conditions)
		})
		Expect(msg).To(ContainSubstring("never-ks"))
		GinkgoWriter.Printf("Degraded: %s\n", msg)
	})

	It("a component that was healthy and fails at the same revision when its Deployment loses its node", func(ctx SpecContext) {
		wl, err := workloadClient(ctx, ns, "p1")
		Expect(err).NotTo(HaveOccurred())
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "special",
			Labels:      map[string]string{testPoolLabel: "special", "type": "kwok", "kubernetes.io/hostname": "special", "kubernetes.io/os": "linux"},
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"}}}
		Expect(wl.Create(ctx, node)).To(Succeed())
		moveCluster(ctx, ns, "p1", pinnedVersion)
		Eventually(ctx, func(g Gomega) {
			a := getAddon(ctx, g, ns, "p1")
			g.Expect(a.Status.LastAppliedRelease).To(Equal(tagPrefix + pinnedVersion))
			g.Expect(a).To(framework.HaveCondition(csv1.ReadyCondition, metav1.ConditionTrue))
			g.Expect(a.Status.Unhealthy).To(BeEmpty(), "ClusterAddon p1 still records unhealthy objects")
		}).WithTimeout(4 * time.Minute).Should(Succeed())

		By("deleting the node the Deployment runs on (and its pod, as a drain would), then asking Flux to check (as `flux reconcile` does)")
		gw := watchGrace(ctx, "ClusterAddon "+ns+"/p1", addonDegraded(ns, "p1", pinnedVersion))
		lost := time.Now()
		Expect(wl.Delete(ctx, node)).To(Succeed())
		Expect(wl.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace("kube-system"), client.MatchingLabels{"app": "pinned"}, client.GracePeriodSeconds(0))).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			g.Expect(apierrors.IsNotFound(wl.Get(ctx, client.ObjectKeyFromObject(node), &corev1.Node{}))).To(BeTrue(), "Node %s is gone", node.Name)
			d := &appsv1.Deployment{}
			g.Expect(wl.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "pinned"}, d)).To(Succeed())
			g.Expect(d.Status.AvailableReplicas).To(BeZero())
		}).Should(Succeed())
		ks := &kustomizev1.Kustomization{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: fluxgen.AddonObjectName("p1", "pinned")}, ks)).To(Succeed())
		patch := client.MergeFrom(ks.DeepCopy())
		if ks.Annotations == nil {
			ks.Annotations = map[string]string{}
		}
		ks.Annotations["reconcile.fluxcd.io/requestedAt"] = time.Now().Format(time.RFC3339Nano)
		Expect(k8s.Patch(ctx, ks, patch)).To(Succeed())
		msg := degradedThroughRetries(ctx, gw, lost, "p1", "Kustomization/"+fluxgen.AddonObjectName("p1", "pinned"), func(g Gomega) metav1.ConditionStatus {
			ks := &kustomizev1.Kustomization{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: fluxgen.AddonObjectName("p1", "pinned")}, ks)).To(Succeed())
			return readyStatus(ks.Status.Conditions)
		})
		Expect(msg).To(ContainSubstring("pinned"))
		a := getAddon(ctx, Default, ns, "p1")
		Expect(a.Status.Unhealthy).To(ContainElement(HaveField("Object", "Kustomization/"+fluxgen.AddonObjectName("p1", "pinned"))))
		GinkgoWriter.Printf("Degraded: %s\n", msg)
	})
})

// readyStatus is the status of the Ready condition in conds, Unknown without one.
func readyStatus(conds []metav1.Condition) metav1.ConditionStatus {
	if c := apimeta.FindStatusCondition(conds, "Ready"); c != nil {
		return c.Status
	}
	return metav1.ConditionUnknown
}

var _ = Describe("kstatus: Flux health checks understand ClusterStacks", Ordered, func() {
	const ns = "kstatus"
	const repo = "fleet-kstatus"

	commitStack := func(ctx context.Context, versions ...string) {
		GinkgoHelper()
		dir := GinkgoT().TempDir()
		cs := newClusterStack(ns, versions...)
		manifest := map[string]any{"apiVersion": csv1.GroupVersion.String(), "kind": "ClusterStack",
			"metadata": map[string]any{"name": cs.Name, "namespace": ns}, "spec": cs.Spec}
		b, err := yaml.Marshal(manifest)
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(filepath.Join(dir, "clusterstack.yaml"), b, 0o644)).To(Succeed())
		Expect(pl.Git().Publish(ctx, repo, dir, ".", "")).To(Succeed())
	}

	It("a Kustomization applying a ClusterStack is Ready only once the stack is Available, and fails its health check with the stack's message", func(ctx SpecContext) {
		createNamespace(ctx, ns)
		_, err := pl.Git().CreateRepo(repo)
		Expect(err).NotTo(HaveOccurred())
		commitStack(ctx, "v1")
		Expect(k8s.Create(ctx, &sourcev1.GitRepository{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fleet"},
			Spec:       sourcev1.GitRepositorySpec{URL: pl.Git().RepoURL(repo), Interval: metav1.Duration{Duration: 10 * time.Second}, Reference: &sourcev1.GitRepositoryRef{Branch: "main"}},
		})).To(Succeed())
		Expect(k8s.Create(ctx, &kustomizev1.Kustomization{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fleet"},
			Spec: kustomizev1.KustomizationSpec{
				SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "fleet"},
				Interval:  metav1.Duration{Duration: 10 * time.Second}, Prune: true, Timeout: &metav1.Duration{Duration: 45 * time.Second},
				HealthChecks: []meta.NamespacedObjectKindReference{{APIVersion: csv1.GroupVersion.String(), Kind: "ClusterStack", Name: "aws-base-1-36", Namespace: ns}},
			},
		})).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			ks := &kustomizev1.Kustomization{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fleet"}, ks)).To(Succeed())
			g.Expect(readyStatus(ks.Status.Conditions)).To(Equal(metav1.ConditionTrue))
			// Ready only once the stack is: the stack was Available when Flux said so.
			g.Expect(getStack(ctx, g, ns)).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue))
		}).Should(Succeed())

		By("committing a broken version of the stack")
		commitStack(ctx, "v1", "v8")
		Eventually(ctx, func(g Gomega) {
			g.Expect(getStack(ctx, g, ns)).To(framework.HaveCondition(csv1.StalledCondition, metav1.ConditionTrue, tagPrefix+"v8"))
			ks := &kustomizev1.Kustomization{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fleet"}, ks)).To(Succeed())
			c := apimeta.FindStatusCondition(ks.Status.Conditions, "Ready")
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Message).To(And(ContainSubstring("ClusterStack/"+ns+"/aws-base-1-36"), ContainSubstring("Failed")))
			GinkgoWriter.Printf("Flux says: %s\n", c.Message)
		}).WithTimeout(4 * time.Minute).Should(Succeed())
	})
})
