package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/proc"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
)

// Flux alone, the first phase of BenchmarkRealFlux: the real helm- and kustomize-controller
// delivering the addons of N Clusters with no operator at all, the floor writer writing what the
// operator would.

// fluxAloneWorkers is the concurrency of Flux alone's writer: it waits on Flux (a HelmRelease
// holds a helm-controller worker for the whole install), not on its own writes.
const fluxAloneWorkers = 32

// fluxAloneName is the name of Flux alone's i-th Cluster: as long as clusterName(i), so that
// every name, label and Helm release name is as long as in the operator's phase, and distinct
// from it, so that the operator's phase has Flux install new Helm releases into new namespaces,
// as Flux alone did.
func fluxAloneName(i int) string { return fmt.Sprintf("a-%04d", i) }

// fluxAgainName is the name of the i-th Cluster of Flux alone's second phase, after the
// operator's: as long as the others, distinct from both.
func fluxAgainName(i int) string { return fmt.Sprintf("z-%04d", i) }

// fluxAloneResult is what Flux alone measured.
type fluxAloneResult struct {
	objects int
	// written is how long until every object was written, ready until every HelmRelease and
	// Kustomization was Ready, removed how long their removal took afterwards.
	written, ready, removed time.Duration
	// usage is helm- and kustomize-controller's over the phase; peakRSS the same by name.
	usage   []procUsage
	peakRSS map[string]int64
	// speed is the machine's speed while the writer ran until every object was Ready.
	speed speedReading
	// servers is the CPU the management API server, its etcd, this benchmark and the workload
	// API servers spent over the same span.
	servers phaseCPU
	// account is what the phase cost the plane: every process's CPU and the API servers'
	// requests.
	account phaseAccount
}

// measureFluxAlone writes, for n Clusters of their own (named by nameOf), each with a kubeconfig
// Secret of its workload API server (the i-th's in works[i % len(works)], as in the operator's
// phase), the HelmReleases, Kustomizations and values ConfigMaps the operator generated for the
// template Cluster, into the bench namespace (where the release's sources are) in the order Flux
// needs, and waits until Flux reports every HelmRelease and Kustomization Ready. It checks the
// addons arrived in the workload API servers, removes the objects again and starts the Flux
// controllers' peak RSS afresh for the next phase.
// phase names it in the log.
func measureFluxAlone(ctx context.Context, b testing.TB, e *benchEnv, flux *fluxProcs, works []*workloadServer, templates []*unstructured.Unstructured,
	order []csv1.ReleaseComponent, n int, nameOf func(int) string, phase string, alive func() error, timeout time.Duration) fluxAloneResult {
	b.Helper()
	names := clusterNames(n, nameOf)
	indexes := make([]int, n)
	for i := range indexes {
		indexes[i] = i
	}
	concurrently(b, e, 16, indexes, func(i int) error {
		return createKubeconfigSecret(ctx, e.c, names[i], works[i%len(works)].kubeconfig)
	})
	var fluxTemplates []*unstructured.Unstructured
	for _, t := range templates {
		if t.GetKind() != "ClusterAddon" {
			fluxTemplates = append(fluxTemplates, t)
		}
	}
	w := newFloorWriter(b, e, templates)
	clusters, objects := floorFluxClusters(b, fluxTemplates, order, names, benchNS)
	procs := []struct {
		name string
		p    *proc.Process
	}{{"helm-controller", flux.helm}, {"kustomize-controller", flux.kustomize}}
	cpu0 := map[string]float64{}
	for _, p := range procs {
		cpu0[p.name], _ = procCPUSeconds(p.p.Pid())
	}

	logf("%s: %d objects for %d Clusters (%s), each Kustomization once its Cluster's HelmRelease is Ready", phase, objects, n, w.verbs(fluxTemplates))
	collectAPIServerGarbage(ctx, b, e)
	probe := startSpeedProbe(realFluxProbeInterval)
	meter := startPlaneMeter(ctx, b, e, works)
	run, err := runOrdered(ctx, b, e, w, clusters, objects, benchNS, fluxAloneWorkers, timeout, alive)
	servers, requests := meter.stop(ctx, b)
	speed := probe.Stop()
	must(b, err)
	res := fluxAloneResult{objects: objects, written: run.fanout, ready: run.ready, peakRSS: map[string]int64{}, speed: speed, servers: servers}
	logf("%s: every object written after %s, every HelmRelease and Kustomization Ready after %s", phase, res.written.Round(time.Second), res.ready.Round(time.Second))
	for _, p := range procs {
		st, err := readProcStats(p.p.Pid())
		res.usage = append(res.usage, procUsage{name: p.name, peakRSS: st.peakRSS, cpu: st.cpu.Seconds() - cpu0[p.name], err: err})
		res.peakRSS[p.name] = st.peakRSS
	}
	res.account = newPhaseAccount(servers, res.usage, requests)
	must(b, checkWorkloads(ctx, works, names))

	tRemove := time.Now()
	removeFluxAlone(ctx, b, e, w, clusters, names, alive)
	res.removed = time.Since(tRemove)
	for _, p := range procs {
		if err := resetPeakRSS(p.p.Pid()); err != nil {
			logf("the %s's peak RSS of the next phase includes Flux alone's: %v", p.name, err)
		}
	}
	return res
}

// removeFluxAlone removes Flux alone's objects: its HelmReleases and Kustomizations
// (removeFluxObjects), then the values ConfigMaps and kubeconfig Secrets.
func removeFluxAlone(ctx context.Context, b testing.TB, e *benchEnv, w *floorWriter, clusters map[string]*floorFluxCluster, names []string, alive func() error) {
	b.Helper()
	var configMaps []*unstructured.Unstructured
	for _, c := range clusters {
		for _, o := range c.first {
			if o.GetKind() == "ConfigMap" {
				configMaps = append(configMaps, o)
			}
		}
	}
	removeFluxObjects(ctx, b, e, w.c, names, alive)
	concurrently(b, e, fluxAloneWorkers, configMaps, func(o *unstructured.Unstructured) error {
		return client.IgnoreNotFound(w.c.Delete(ctx, o.DeepCopy()))
	})
	concurrently(b, e, fluxAloneWorkers, names, func(name string) error {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: benchNS, Name: fluxgen.KubeconfigSecretName(name)}}
		return client.IgnoreNotFound(w.c.Delete(ctx, s))
	})
}

// removeFluxObjects removes the HelmReleases and Kustomizations of the bench namespace labelled
// with one of the Clusters named, through c: each suspended, then deleted (Flux removes its
// finalizer without uninstalling a suspended object: no work that would run into the next
// phase), until Flux let go of every one.
func removeFluxObjects(ctx context.Context, b testing.TB, e *benchEnv, c client.Client, names []string, alive func() error) {
	b.Helper()
	mine := map[string]bool{}
	for _, n := range names {
		mine[n] = true
	}
	kinds := []schema.GroupVersionKind{helmv2.GroupVersion.WithKind(helmv2.HelmReleaseKind), kustomizev1.GroupVersion.WithKind(kustomizev1.KustomizationKind)}
	left := func() ([]*unstructured.Unstructured, error) {
		var out []*unstructured.Unstructured
		for _, gvk := range kinds {
			list := &metav1.PartialObjectMetadataList{}
			list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			if err := e.c.List(ctx, list, client.InNamespace(benchNS), client.HasLabels{csv1.ClusterNameLabel}); err != nil {
				return nil, err
			}
			for _, o := range list.Items {
				if mine[o.Labels[csv1.ClusterNameLabel]] {
					u := &unstructured.Unstructured{}
					u.SetGroupVersionKind(gvk)
					u.SetNamespace(o.Namespace)
					u.SetName(o.Name)
					out = append(out, u)
				}
			}
		}
		return out, nil
	}
	objs, err := left()
	must(b, err)
	suspend := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":true}}`))
	concurrently(b, e, fluxAloneWorkers, objs, func(o *unstructured.Unstructured) error {
		if err := c.Patch(ctx, o, suspend); err != nil {
			return client.IgnoreNotFound(err)
		}
		return client.IgnoreNotFound(c.Delete(ctx, o))
	})
	pollUntil(ctx, b, alive, e.logDir, time.Second, 10*time.Minute, "the phase's HelmReleases and Kustomizations gone", func() (bool, string, error) {
		objs, err := left()
		return len(objs) == 0, fmt.Sprintf("%d left", len(objs)), err
	})
}
