package controllers_test

import (
	"fmt"
	"sync"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/watch"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
)

// Suspend before delete (ClusterAddonReconciler.reconcileDelete) and the ClusterAddon's
// finalizer: when a Cluster is deleted, its ClusterAddon's Flux objects are suspended before
// they are deleted, so that Flux lets them go without uninstalling from a workload cluster that
// is going away; the ClusterAddon's finalizer is removed after that.
var _ = Describe("ClusterAddon deletion", func() {
	It("suspends the Cluster's Flux objects before deleting them, then lets the ClusterAddon go", func() {
		ns := newNamespace("addon-delete")
		st := newStack("acme", "del", "1.35").WithHelmAddon("cni", "0.9.0").WithKustomizeAddon("dns")
		v1 := publishRelease(ns, st, "v1")
		newClusterStack(ns, "del", st).Versions("v1").Create()
		rel := releaseValidated(ns, v1)
		// CAPI's finalizer: the deleted Cluster stays, being deleted, while its parts go.
		const capiFinalizer = clusterv1.ClusterFinalizer
		c := newCluster(ns, "doomed").WithClass(st, v1).Initialized().WithFinalizer(capiFinalizer).Create()
		cni, dns := helmRelease(ns, fluxgen.AddonObjectName("doomed", "cni")), kustomization(ns, fluxgen.AddonObjectName("doomed", "dns"))
		refs := []string{"HelmRelease/" + cni.Name, "Kustomization/" + dns.Name}

		By("the ClusterAddon is controlled by the Cluster and carries its finalizer")
		Eventually(func(g Gomega) {
			a := clusterAddon(g, ns, "doomed")
			g.Expect(a.Finalizers).To(ConsistOf(csv1.ClusterAddonFinalizer))
			g.Expect(a.OwnerReferences).To(HaveLen(1))
			g.Expect(a.OwnerReferences[0].Kind + "/" + a.OwnerReferences[0].Name).To(Equal("Cluster/doomed"))
		}).Should(Succeed())

		By("both components are delivered; Flux puts its finalizer on their objects")
		Eventually(func(g Gomega) {
			readyHelmRelease(g, ns, cni.Name, "0.9.0")
			readyKustomization(g, ns, dns.Name, rel.Status.Revision)
		}).Should(Succeed())
		for _, o := range []client.Object{cni, dns} {
			update(o, func(o client.Object) { controllerutil.AddFinalizer(o, helmv2.HelmReleaseFinalizer) })
		}

		By("the Cluster is deleted: each object is suspended, then marked for deletion")
		seen, stop := watchFlux(ns)
		defer stop()
		Expect(k8s.Delete(ctx, c)).To(Succeed())
		Eventually(func(g Gomega) {
			for _, o := range []client.Object{cni, dns} {
				g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(o), o)).To(Succeed())
				g.Expect(o.GetDeletionTimestamp()).NotTo(BeNil(), "%s is not being deleted", o.GetName())
			}
		}).Should(Succeed())
		Expect(cni.Spec.Suspend).To(BeTrue())
		Expect(dns.Spec.Suspend).To(BeTrue())
		Eventually(func() error {
			for _, ref := range refs {
				if err := suspendedBeforeDeleted(seen(), ref); err != nil {
					return err
				}
			}
			return nil
		}).Should(Succeed())

		By("the ClusterAddon's finalizer is removed: it goes")
		Eventually(gone(&csv1.ClusterAddon{ObjectMeta: objectMeta(ns, "doomed")})).Should(Succeed())

		By("Flux lets the suspended objects go, CAPI the Cluster")
		for _, o := range []client.Object{cni, dns} {
			update(o, func(o client.Object) { controllerutil.RemoveFinalizer(o, helmv2.HelmReleaseFinalizer) })
			Eventually(gone(o)).Should(Succeed())
		}
		update(c, func(c *clusterv1.Cluster) { controllerutil.RemoveFinalizer(c, capiFinalizer) })
		Eventually(gone(c)).Should(Succeed())
	})
})

// fluxEvent is one watch event of a HelmRelease or Kustomization.
type fluxEvent struct {
	// Ref is "<Kind>/<name>".
	Ref      string
	Type     watch.EventType
	Suspend  bool
	Deleting bool
}

// watchFlux records the watch events of the namespace's HelmReleases and Kustomizations, in the
// order the API server sends them (per kind), until stop is called.
func watchFlux(ns string) (seen func() []fluxEvent, stop func()) {
	var mu sync.Mutex
	var out []fluxEvent
	var ws []watch.Interface
	for _, list := range []client.ObjectList{&helmv2.HelmReleaseList{}, &kustomizev1.KustomizationList{}} {
		w, err := k8s.Watch(ctx, list, client.InNamespace(ns))
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		ws = append(ws, w)
		go func() {
			for e := range w.ResultChan() {
				ev := fluxEvent{Type: e.Type}
				switch o := e.Object.(type) {
				case *helmv2.HelmRelease:
					ev.Ref, ev.Suspend, ev.Deleting = helmv2.HelmReleaseKind+"/"+o.Name, o.Spec.Suspend, o.DeletionTimestamp != nil
				case *kustomizev1.Kustomization:
					ev.Ref, ev.Suspend, ev.Deleting = kustomizev1.KustomizationKind+"/"+o.Name, o.Spec.Suspend, o.DeletionTimestamp != nil
				default:
					continue
				}
				mu.Lock()
				out = append(out, ev)
				mu.Unlock()
			}
		}()
	}
	seen = func() []fluxEvent {
		mu.Lock()
		defer mu.Unlock()
		return append([]fluxEvent(nil), out...)
	}
	stop = func() {
		for _, w := range ws {
			w.Stop()
		}
	}
	return seen, stop
}

// suspendedBeforeDeleted checks the watch events of one object: it was seen suspended, not yet
// being deleted, before it was first seen being deleted (or deleted), and it was suspended in
// every event from then on.
func suspendedBeforeDeleted(events []fluxEvent, ref string) error {
	suspended, deleting := -1, -1
	var history []string
	for i, e := range events {
		if e.Ref != ref {
			continue
		}
		history = append(history, fmt.Sprintf("%s(suspend=%t, deleting=%t)", e.Type, e.Suspend, e.Deleting))
		if e.Suspend && !e.Deleting && suspended < 0 {
			suspended = i
		}
		if e.Deleting || e.Type == watch.Deleted {
			if deleting < 0 {
				deleting = i
			}
			if !e.Suspend {
				return fmt.Errorf("%s was being deleted while not suspended: %v", ref, history)
			}
		}
	}
	switch {
	case deleting < 0:
		return fmt.Errorf("%s was not seen being deleted yet: %v", ref, history)
	case suspended < 0 || suspended > deleting:
		return fmt.Errorf("%s was not seen suspended before it was deleted: %v", ref, history)
	}
	return nil
}
