package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/ocistack"
	"github.com/clusterstack-io/clusterstack-operator/test/framework"
)

// createNamespace creates a tenant namespace for one group of specs: the namespace, the
// ServiceAccount Flux applies its stacks as, and its RoleBinding to config/tenant's ClusterRole.
func createNamespace(ctx context.Context, name string) {
	GinkgoHelper()
	Expect(pl.CreateTenantNamespace(ctx, name)).To(Succeed())
	finished.add(name)
}

// finished holds the namespaces the current top-level container created. When the suite moves
// on to the next container, the Clusters and ClusterStacks in them are deleted (not waited
// for). Each Cluster is a workload cluster of the plane (an API server, etcd, a
// controller-manager, a scheduler and kwok, about 3% of a core even when idle), and the
// containers before would otherwise keep twenty of them running to the end of the suite. Ginkgo runs a top-level container's specs one after
// another unless told to randomize all specs, which turns this off.
var finished containerNamespaces

type containerNamespaces struct {
	container  string
	namespaces []string
}

func topContainer() string {
	if h := CurrentSpecReport().ContainerHierarchyTexts; len(h) > 0 {
		return h[0]
	}
	return ""
}

func (f *containerNamespaces) add(ns string) {
	f.container = topContainer()
	f.namespaces = append(f.namespaces, ns)
}

// Before the first spec of another top-level container: the Clusters and ClusterStacks of the
// namespaces the previous container created are deleted.
var _ = BeforeEach(func(ctx SpecContext) {
	if suite, _ := GinkgoConfiguration(); suite.RandomizeAllSpecs || finished.container == "" || finished.container == topContainer() {
		return
	}
	expectNoSecretLeaked(ctx, false) // the objects about to go
	for _, ns := range finished.namespaces {
		clusters := &clusterv1.ClusterList{}
		Expect(k8s.List(ctx, clusters, client.InNamespace(ns))).To(Succeed())
		for i := range clusters.Items {
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, &clusters.Items[i]))).To(Succeed())
		}
		// Its ClusterStacks, and the Flux objects the specs made themselves, go too: each
		// stack's sources and cluster-class HelmRelease reconcile every stackInterval, and the
		// containers before would otherwise keep that load on the API server to the end of the
		// suite. The operator deletes each stack's releases once no Cluster uses them.
		Expect(k8s.DeleteAllOf(ctx, &csv1.ClusterStack{}, client.InNamespace(ns))).To(Succeed())
		for _, o := range []client.Object{&kustomizev1.Kustomization{}, &helmv2.HelmRelease{}, &sourcev1.GitRepository{}} {
			Expect(k8s.DeleteAllOf(ctx, o, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: notGenerated})).To(Succeed())
		}
		GinkgoWriter.Printf("deleted %d Clusters and the ClusterStacks of namespace %s (container %q finished)\n", len(clusters.Items), ns, finished.container)
	}
	finished = containerNamespaces{}
})

// notGenerated selects the objects the operator did not generate.
var notGenerated = func() labels.Selector {
	r, err := labels.NewRequirement(csv1.ManagedByLabel, selection.DoesNotExist, nil)
	if err != nil {
		panic(err)
	}
	return labels.NewSelector().Add(*r)
}()

// stackInterval is the spec.interval of the ClusterStacks of newClusterStack: how often the
// operator lists their repositories' tags and looks at their releases again.
const stackInterval = 10 * time.Second

// newClusterStack returns the reference stack's ClusterStack in ns, pinned to versions.
func newClusterStack(ns string, versions ...string) *csv1.ClusterStack {
	return framework.ClusterStack(ns, gitURL(), stackInterval, versions...)
}

// ociStacksRepo is the plane registry's repository the suite publishes the reference stack's
// releases to (BeforeSuite), as `stackctl push` publishes them.
const ociStacksRepo = "stacks/aws-base"

// ociTarget is repository repo of the plane's registry (plain http on loopback).
func ociTarget(repo string) ocistack.Target {
	reg := pl.OCIRegistry()
	return ocistack.Target{URL: reg.URL(repo), Insecure: reg.Insecure()}
}

// newOCIClusterStack returns the reference stack's ClusterStack in ns reading its releases from
// the plane's registry (ociStacksRepo) instead of Git, pinning versions.
func newOCIClusterStack(ns string, versions ...string) *csv1.ClusterStack {
	t := ociTarget(ociStacksRepo)
	return framework.OCIClusterStack(ns, t.URL, t.Insecure, stackInterval, versions...)
}

// newCluster returns a Cluster in ns using the ClusterClass of version v of the reference stack.
func newCluster(ns, name, v, podCIDR string) *clusterv1.Cluster {
	return framework.Cluster(ns, name, tagPrefix+v, podCIDR)
}

// moveCluster points a Cluster's topology at version v of the reference stack, and returns when
// it asked for the move (the patch was sent). With CAPI in the plane it first waits for that
// release's ClusterClass: CAPI's webhook refuses a move to a ClusterClass that does not exist
// (yet).
func moveCluster(ctx context.Context, ns, name, v string) time.Time {
	GinkgoHelper()
	if withCAPI {
		Eventually(ctx, func() error {
			return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: tagPrefix + v}, &clusterv1.ClusterClass{})
		}).WithTimeout(3*time.Minute).Should(Succeed(), "ClusterClass %s/%s%s, before moving Cluster %s to it", ns, tagPrefix, v, name)
	}
	sent := time.Now()
	Expect(patchTopology(ctx, ns, name, tagPrefix+v, "")).To(Succeed(), fmt.Sprintf("move %s/%s to %s", ns, name, v))
	return sent
}

// patchTopology points Cluster ns/name at ClusterClass class and, unless version is empty,
// sets its topology version; it returns what the API server (and its webhooks) answered.
func patchTopology(ctx context.Context, ns, name, class, version string) error {
	c := &clusterv1.Cluster{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
		return err
	}
	patch := client.MergeFrom(c.DeepCopy())
	c.Spec.Topology.ClassRef.Name = class
	if version != "" {
		c.Spec.Topology.Version = version
	}
	return k8s.Patch(ctx, c, patch)
}

func getAddon(ctx context.Context, g Gomega, ns, name string) *csv1.ClusterAddon {
	a := &csv1.ClusterAddon{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, a)).To(Succeed())
	return a
}

func getRelease(ctx context.Context, g Gomega, ns, v string) *csv1.ClusterStackRelease {
	r := &csv1.ClusterStackRelease{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: tagPrefix + v}, r)).To(Succeed())
	return r
}

func getStack(ctx context.Context, g Gomega, ns string) *csv1.ClusterStack {
	cs := &csv1.ClusterStack{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "aws-base-1-36"}, cs)).To(Succeed())
	return cs
}

// valuesOf returns a cluster's current values ConfigMap (the desired release's, named in its
// ClusterAddon's status).
func valuesOf(ctx context.Context, g Gomega, ns, cluster string) *corev1.ConfigMap {
	a := getAddon(ctx, g, ns, cluster)
	g.Expect(a.Status.ValuesConfigMap).NotTo(BeEmpty(), "ClusterAddon %s/%s names no values ConfigMap yet", ns, cluster)
	cm := &corev1.ConfigMap{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: a.Status.ValuesConfigMap}, cm)).To(Succeed())
	return cm
}

// pinVersions sets the versions of the reference stack's ClusterStack in ns.
func pinVersions(ctx context.Context, ns string, versions ...string) {
	GinkgoHelper()
	cs := &csv1.ClusterStack{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "aws-base-1-36"}, cs)).To(Succeed())
	patch := client.MergeFrom(cs.DeepCopy())
	cs.Spec.Versions = versions
	Expect(k8s.Patch(ctx, cs, patch)).To(Succeed())
}

// objectState is what a spec compares of an object to tell that nothing recreated or rewrote
// it: its UID, its generation, and what its writers wrote.
type objectState struct {
	UID        types.UID
	Generation int64
	// Written is, for an object only the operator writes (values ConfigMaps, ClusterAddons,
	// ClusterStackReleases), its resourceVersion: any write changes it. For a Flux object, whose
	// status Flux writes (at every reconcile, on its own interval), it is what the operator writes
	// of it (labels, annotations, owner references and spec, as JSON): the operator writing it
	// again with a different content changes this, Flux reporting its status does not.
	Written string
}

// generatedObjects maps the objects the operator generated in ns whose labels match sel
// ("Kind/name"), values ConfigMaps, ClusterAddons, ClusterStackReleases and Flux objects, to
// their objectState.
func generatedObjects(ctx context.Context, g Gomega, ns string, sel client.MatchingLabels) map[string]objectState {
	labels := client.MatchingLabels{csv1.ManagedByLabel: csv1.ManagedByValue}
	for k, v := range sel {
		labels[k] = v
	}
	out := map[string]objectState{}
	for _, l := range []struct {
		kind     string
		list     client.ObjectList
		fluxSpec func(client.Object) any // nil: only the operator writes it
	}{
		{"ConfigMap", &corev1.ConfigMapList{}, nil},
		{"ClusterAddon", &csv1.ClusterAddonList{}, nil},
		{"ClusterStackRelease", &csv1.ClusterStackReleaseList{}, nil},
		{"HelmRelease", &helmv2.HelmReleaseList{}, func(o client.Object) any { return o.(*helmv2.HelmRelease).Spec }},
		{"Kustomization", &kustomizev1.KustomizationList{}, func(o client.Object) any { return o.(*kustomizev1.Kustomization).Spec }},
		{"GitRepository", &sourcev1.GitRepositoryList{}, func(o client.Object) any { return o.(*sourcev1.GitRepository).Spec }},
		{"HelmChart", &sourcev1.HelmChartList{}, func(o client.Object) any { return o.(*sourcev1.HelmChart).Spec }},
	} {
		g.Expect(k8s.List(ctx, l.list, client.InNamespace(ns), labels)).To(Succeed())
		g.Expect(apimeta.EachListItem(l.list, func(o runtime.Object) error {
			m := o.(client.Object)
			s := objectState{UID: m.GetUID(), Generation: m.GetGeneration(), Written: "resourceVersion " + m.GetResourceVersion()}
			if l.fluxSpec != nil {
				b, err := json.Marshal(map[string]any{"labels": m.GetLabels(), "annotations": m.GetAnnotations(),
					"ownerReferences": m.GetOwnerReferences(), "spec": l.fluxSpec(m)})
				if err != nil {
					return err
				}
				s.Written = string(b)
			}
			out[l.kind+"/"+m.GetName()] = s
			return nil
		})).To(Succeed())
	}
	return out
}

// deliveredObjects maps the DaemonSets, Deployments and ConfigMaps Flux delivered into a
// workload cluster (labelled by helm-controller or kustomize-controller) to their UIDs: an
// uninstall and install again, or a prune and apply again, gives an object a new one.
func deliveredObjects(ctx context.Context, g Gomega, wl client.Client) map[string]types.UID {
	out := map[string]types.UID{}
	for _, label := range []string{"helm.toolkit.fluxcd.io/name", "kustomize.toolkit.fluxcd.io/name"} {
		for kind, list := range map[string]client.ObjectList{
			"DaemonSet": &appsv1.DaemonSetList{}, "Deployment": &appsv1.DeploymentList{}, "ConfigMap": &corev1.ConfigMapList{},
		} {
			g.Expect(wl.List(ctx, list, client.HasLabels{label})).To(Succeed())
			g.Expect(apimeta.EachListItem(list, func(o runtime.Object) error {
				m := o.(client.Object)
				out[kind+" "+m.GetNamespace()+"/"+m.GetName()] = m.GetUID()
				return nil
			})).To(Succeed())
		}
	}
	return out
}
