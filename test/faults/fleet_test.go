package faults

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/render"
	"github.com/clusterstack-io/clusterstack-operator/test/framework"
)

// fleet is the Clusters the scenarios roll out, and what the suite expects of each: the
// version they are at, the Helm revision each of their releases must be at (one install plus
// one upgrade per move), and the objects delivered into their workload clusters (whose UIDs
// must never change: an object removed and created again was pruned or reinstalled).
type fleet struct {
	clusters []string
	// version is the version every Cluster is at once converged; next is the index of the next
	// version to roll out.
	version string
	next    int
	// helmRev: cluster -> component -> the Helm revision its release must be at.
	helmRev map[string]map[string]int
	// uids: cluster -> "<group>/<kind> <namespace>/<name>" -> UID of a delivered object.
	uids map[string]map[string]types.UID
	// movedAt: when each Cluster was last moved to another version.
	movedAt map[string]time.Time
	status  *statusSampler

	mu sync.Mutex
	wl map[string]client.Client
}

// stackInterval is the fleet's ClusterStack's spec.interval: how often the operator lists the
// stack's tags and checks its releases' tags.
const stackInterval = 10 * time.Second

func newFleet(n int) *fleet {
	f := &fleet{
		helmRev: map[string]map[string]int{},
		uids:    map[string]map[string]types.UID{},
		movedAt: map[string]time.Time{},
		wl:      map[string]client.Client{},
	}
	for i := range n {
		f.clusters = append(f.clusters, fmt.Sprintf("f%02d", i))
	}
	return f
}

// create creates the ClusterStack at version 1 and the Clusters, waits until every ClusterAddon
// is Ready, records what was delivered and starts sampling status.
func (f *fleet) create(ctx context.Context) {
	GinkgoHelper()
	f.version, f.next = version(1), 2
	Expect(k8s.Create(ctx, framework.ClusterStack(ns, pl.Git().RepoURL(stacksRepo), stackInterval, f.version))).To(Succeed())
	f.waitRelease(ctx, f.version)
	for i, c := range f.clusters {
		Expect(k8s.Create(ctx, newCluster(c, f.version, fmt.Sprintf("10.%d.0.0/16", i+1)))).To(Succeed())
		f.helmRev[c] = map[string]int{}
		f.movedAt[c] = time.Now()
	}
	took := f.waitConverged(ctx, 6*time.Minute+time.Duration(len(f.clusters))*20*time.Second)
	fmt.Fprintf(GinkgoWriter, "fleet of %d Clusters Ready at %s in %s\n", len(f.clusters), f.version, took.Round(time.Second))
	rel := f.getRelease(ctx, f.version)
	for _, c := range f.clusters {
		for _, comp := range rel.Status.Components {
			if comp.Kind == csv1.ComponentKindHelm {
				f.helmRev[c][comp.Name] = 1
			}
		}
	}
	f.check(ctx)
	f.status = startSampler(context.Background(), time.Second)
}

// newCluster returns a Cluster of the fleet using the ClusterClass of version v.
func newCluster(name, v, podCIDR string) *clusterv1.Cluster {
	return framework.Cluster(ns, name, releaseOf(v), podCIDR)
}

// nextVersion is the version the next rollout goes to.
func (f *fleet) nextVersion() string {
	GinkgoHelper()
	Expect(f.next).To(BeNumerically("<=", versions), "the suite publishes %d versions; raise versions for more rollouts", versions)
	return version(f.next)
}

// pin sets the versions of the fleet's ClusterStack.
func pin(ctx context.Context, vs ...string) {
	GinkgoHelper()
	Eventually(ctx, func() error {
		cs := &csv1.ClusterStack{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: stackName}, cs); err != nil {
			return err
		}
		patch := client.MergeFrom(cs.DeepCopy())
		cs.Spec.Versions = vs
		return k8s.Patch(ctx, cs, patch)
	}).Should(Succeed())
}

// addVersion adds version v next to the fleet's version and waits until its release is Ready
// and its ClusterClass exists.
func (f *fleet) addVersion(ctx context.Context, v string) {
	GinkgoHelper()
	pin(ctx, f.version, v)
	f.waitRelease(ctx, v)
}

// waitRelease waits until the release of version v is Ready and its ClusterClass exists.
func (f *fleet) waitRelease(ctx context.Context, v string) {
	GinkgoHelper()
	Eventually(ctx, func(g Gomega) {
		rel := &csv1.ClusterStackRelease{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: releaseOf(v)}, rel)).To(Succeed())
		g.Expect(apimeta.IsStatusConditionTrue(rel.Status.Conditions, csv1.ReadyCondition)).To(BeTrue(), "release %s is not Ready: %v", rel.Name, rel.Status.Conditions)
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: releaseOf(v)}, &clusterv1.ClusterClass{})).To(Succeed())
	}).WithTimeout(5*time.Minute).Should(Succeed(), "release %s", releaseOf(v))
}

// waitReleasesReady waits until every release of the fleet's ClusterStack is Ready (after an
// outage of the Git server, each GitRepository recovers at its next fetch).
func (f *fleet) waitReleasesReady(ctx context.Context) {
	GinkgoHelper()
	Eventually(ctx, func(g Gomega) {
		list := &csv1.ClusterStackReleaseList{}
		g.Expect(k8s.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		for _, r := range list.Items {
			g.Expect(apimeta.IsStatusConditionTrue(r.Status.Conditions, csv1.ReadyCondition)).To(BeTrue(), "release %s is not Ready: %s", r.Name, framework.ConditionMessage(r.Status.Conditions, csv1.ReadyCondition))
		}
	}).WithTimeout(5 * time.Minute).Should(Succeed())
}

// waitStackSettled waits until the fleet's ClusterStack no longer reports a problem (Degraded)
// left from before: it rolls its releases up a moment after they change, and a scenario's next
// phase judges the status from its own start, so it must not begin while the roll-up still
// says what the previous phase's fault did.
func (f *fleet) waitStackSettled(ctx context.Context) {
	GinkgoHelper()
	Eventually(ctx, func(g Gomega) {
		cs := &csv1.ClusterStack{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: stackName}, cs)).To(Succeed())
		g.Expect(apimeta.IsStatusConditionTrue(cs.Status.Conditions, csv1.DegradedCondition)).To(BeFalse(),
			"ClusterStack %s is still Degraded: %s", stackName, framework.ConditionMessage(cs.Status.Conditions, csv1.DegradedCondition))
	}).WithTimeout(2 * time.Minute).Should(Succeed())
}

// move points the given Clusters at version v, recording when and the Helm upgrade each move
// must cause.
func (f *fleet) move(ctx context.Context, clusters []string, v string) {
	GinkgoHelper()
	for _, c := range clusters {
		f.movedAt[c] = time.Now()
		Eventually(ctx, func() error {
			cl := &clusterv1.Cluster{}
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: c}, cl); err != nil {
				return err
			}
			patch := client.MergeFrom(cl.DeepCopy())
			cl.Spec.Topology.ClassRef.Name = releaseOf(v)
			return k8s.Patch(ctx, cl, patch)
		}).Should(Succeed(), "move Cluster %s to %s", c, v)
		for comp := range f.helmRev[c] {
			f.helmRev[c][comp]++
		}
	}
}

// moveAll moves every Cluster of the fleet to version v in an order chosen by r, calling mid
// (when set) once half of them have moved; it returns when the last one was moved.
func (f *fleet) moveAll(ctx context.Context, v string, r interface{ Shuffle(int, func(int, int)) }, mid func()) {
	GinkgoHelper()
	order := slices.Clone(f.clusters)
	r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	half := len(order) / 2
	f.move(ctx, order[:half], v)
	if mid != nil {
		mid()
	}
	f.move(ctx, order[half:], v)
	f.version = v
	f.next++
}

// waitConverged waits until every Cluster's addons are Ready at the fleet's version and
// returns how long that took.
func (f *fleet) waitConverged(ctx context.Context, timeout time.Duration) time.Duration {
	GinkgoHelper()
	return f.waitConvergedOf(ctx, f.clusters, timeout)
}

// waitConvergedOf is waitConverged for some of the fleet's Clusters.
func (f *fleet) waitConvergedOf(ctx context.Context, clusters []string, timeout time.Duration) time.Duration {
	GinkgoHelper()
	start := time.Now()
	want := releaseOf(f.version)
	Eventually(ctx, func(g Gomega) {
		list := &csv1.ClusterAddonList{}
		g.Expect(k8s.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		byName := map[string]*csv1.ClusterAddon{}
		for i := range list.Items {
			byName[list.Items[i].Name] = &list.Items[i]
		}
		var waiting []string
		for _, c := range clusters {
			a := byName[c]
			switch {
			case a == nil:
				waiting = append(waiting, c+": no ClusterAddon")
			case a.Status.LastAppliedRelease != want:
				waiting = append(waiting, fmt.Sprintf("%s: last applied %q; %s", c, a.Status.LastAppliedRelease, addonState(a)))
			case !apimeta.IsStatusConditionTrue(a.Status.Conditions, csv1.ReadyCondition):
				waiting = append(waiting, fmt.Sprintf("%s: not Ready; %s", c, addonState(a)))
			}
		}
		g.Expect(waiting).To(BeEmpty(), "%d of %d Clusters not converged at %s", len(waiting), len(clusters), want)
	}).WithTimeout(timeout).WithPolling(time.Second).Should(Succeed())
	return time.Since(start)
}

// addonState says what a ClusterAddon that has not converged reports, for the failure message
// of a wait (CI keeps nothing else of a run): the release it is moving to, its generation and
// the one its status observed, its conditions and the components that are not Ready.
func addonState(a *csv1.ClusterAddon) string {
	var b strings.Builder
	fmt.Fprintf(&b, "desired %q, generation %d observed %d, progress %s", a.Status.DesiredRelease, a.Generation, a.Status.ObservedGeneration, a.Status.Progress)
	for _, c := range a.Status.Conditions {
		fmt.Fprintf(&b, "; %s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)
	}
	for _, c := range a.Status.Components {
		if !c.Ready {
			fmt.Fprintf(&b, "; component %s (%s at %s): %s", c.Name, c.FluxObject, c.Release, c.Message)
		}
	}
	return b.String()
}

// dropVersion removes version old from the ClusterStack (the fleet has left it) and waits
// until exactly the releases of the fleet's version and of old (kept as the rollback target,
// the ClusterStack's default of one) exist: every older one is removed.
func (f *fleet) dropVersion(ctx context.Context, old string) {
	GinkgoHelper()
	pin(ctx, f.version)
	Eventually(ctx, func(g Gomega) {
		list := &csv1.ClusterStackReleaseList{}
		g.Expect(k8s.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		var names []string
		for _, r := range list.Items {
			names = append(names, r.Name)
		}
		g.Expect(names).To(ConsistOf(releaseOf(f.version), releaseOf(old)))
	}).WithTimeout(3*time.Minute).Should(Succeed(), "the releases of %s and of the rollback target %s, and no other", f.version, old)
}

// shrink deletes Clusters until n are left (the last ones created go first) and waits until
// every object the operator generated for them is gone.
func (f *fleet) shrink(ctx context.Context, n int) {
	GinkgoHelper()
	if len(f.clusters) <= n {
		return
	}
	gone := slices.Clone(f.clusters[n:])
	for _, c := range gone {
		Expect(k8s.Delete(ctx, &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: c, Namespace: ns}})).To(Succeed())
	}
	for _, c := range gone {
		expectClusterGone(ctx, c, 5*time.Minute)
		f.remove(c)
	}
}

// expectClusterGone waits until Cluster c, its ClusterAddon and every object generated for it
// are gone.
func expectClusterGone(ctx context.Context, c string, timeout time.Duration) {
	GinkgoHelper()
	Eventually(ctx, func(g Gomega) {
		for _, o := range []client.Object{&clusterv1.Cluster{}, &csv1.ClusterAddon{}} {
			err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: c}, o)
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T %s is gone", o, c)
		}
		sel := client.MatchingLabels{csv1.ClusterNameLabel: c}
		for _, l := range []client.ObjectList{&helmv2.HelmReleaseList{}, &kustomizev1.KustomizationList{}, &corev1.ConfigMapList{}} {
			g.Expect(k8s.List(ctx, l, client.InNamespace(ns), sel)).To(Succeed())
			g.Expect(l).To(HaveField("Items", BeEmpty()), "%T of Cluster %s", l, c)
		}
	}).WithTimeout(timeout).Should(Succeed())
}

// remove takes a deleted Cluster out of the fleet.
func (f *fleet) remove(c string) {
	f.clusters = slices.DeleteFunc(f.clusters, func(s string) bool { return s == c })
	delete(f.helmRev, c)
	delete(f.uids, c)
	f.mu.Lock()
	delete(f.wl, c)
	f.mu.Unlock()
}

func (f *fleet) getRelease(ctx context.Context, v string) *csv1.ClusterStackRelease {
	GinkgoHelper()
	rel := &csv1.ClusterStackRelease{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: releaseOf(v)}, rel)).To(Succeed())
	return rel
}

func (f *fleet) workload(ctx context.Context, c string) client.Client {
	GinkgoHelper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if w, ok := f.wl[c]; ok {
		return w
	}
	w, err := pl.WorkloadClient(ctx, ns, c)
	Expect(err).NotTo(HaveOccurred())
	f.wl[c] = w
	return w
}

// checked is what one check looked at.
type checked struct {
	// objects counts each object checked once: the generated HelmReleases, Kustomizations and
	// values ConfigMap compared with what the operator must generate, and the objects delivered
	// into the workload cluster (the Kustomizations' inventories, the Helm releases' objects)
	// found with their UID unchanged.
	objects int
	// helmRevisions: Helm release revisions (Secrets of Helm's storage) checked.
	helmRevisions int
}

func (c *checked) add(o checked) { c.objects += o.objects; c.helmRevisions += o.helmRevisions }

// check asserts that nothing was lost or done twice: for every Cluster, each generated object
// exists exactly once with the content the operator generates for the fleet's version (and no
// other generated object exists; the values ConfigMap holds what the release renders for the
// Cluster), each Helm release of its workload cluster has exactly the
// revisions the moves caused (one install, one upgrade per move: no extra upgrade, failure or
// reinstall), every object the Kustomizations list in their inventories exists, and no
// delivered object was removed and created again (UIDs unchanged).
func (f *fleet) check(ctx context.Context) checked {
	GinkgoHelper()
	var total checked
	rel := f.getRelease(ctx, f.version)
	for _, c := range f.clusters {
		var got checked
		Eventually(ctx, func(g Gomega) {
			got = f.checkCluster(ctx, g, c, rel)
		}).WithTimeout(2*time.Minute).Should(Succeed(), "Cluster %s at %s", c, f.version)
		total.add(got)
	}
	fmt.Fprintf(GinkgoWriter, "checked %d Clusters at %s: %d objects, %d Helm revisions\n", len(f.clusters), f.version, total.objects, total.helmRevisions)
	return total
}

// upgradesInFlight returns the HelmReleases (by "<cluster>/<component>") whose Helm action
// helm-controller was in the middle of when it stopped, read right after it stopped: Helm's
// storage in the workload cluster holds a revision the HelmRelease's status does not record (the
// upgrade ran, its result was not written back), or the status says an action is running.
func (f *fleet) upgradesInFlight(ctx context.Context) map[string]bool {
	GinkgoHelper()
	out := map[string]bool{}
	for _, c := range f.clusters {
		hrs := &helmv2.HelmReleaseList{}
		Expect(k8s.List(ctx, hrs, client.InNamespace(ns), client.MatchingLabels{csv1.ClusterNameLabel: c, csv1.ManagedByLabel: csv1.ManagedByValue})).To(Succeed())
		for _, hr := range hrs.Items {
			recorded := framework.HelmRevision(&hr)
			secrets := &corev1.SecretList{}
			Expect(f.workload(ctx, c).List(ctx, secrets, client.InNamespace(hr.Spec.StorageNamespace), client.MatchingLabels{"owner": "helm", "name": hr.Spec.ReleaseName})).To(Succeed())
			stored := 0
			for _, s := range secrets.Items {
				if v, err := strconv.Atoi(s.Labels["version"]); err == nil {
					stored = max(stored, v)
				}
			}
			if helmActionInFlight(recorded, stored, apimeta.FindStatusCondition(hr.Status.Conditions, "Ready")) {
				out[c+"/"+hr.Labels[csv1.ComponentLabel]] = true
			}
		}
	}
	return out
}

// acceptInterruptedUpgrades allows one Helm revision more than the moves made for the
// HelmReleases whose upgrade helm-controller was stopped in (SIGTERM; inFlight, recorded at the
// stop): an upgrade it ran but had not recorded in the HelmRelease's status when it stopped, it
// runs once more when it returns ("release not observed to be made for object"), which is Flux's
// recovery and no churn of the operator's. Any other HelmRelease with an extra revision, and two
// or more revisions more, are still a failure (in check). It returns the releases that took the
// extra revision.
func (f *fleet) acceptInterruptedUpgrades(ctx context.Context, inFlight map[string]bool) []string {
	GinkgoHelper()
	var took []string
	for _, c := range f.clusters {
		hrs := &helmv2.HelmReleaseList{}
		Expect(k8s.List(ctx, hrs, client.InNamespace(ns), client.MatchingLabels{csv1.ClusterNameLabel: c, csv1.ManagedByLabel: csv1.ManagedByValue})).To(Succeed())
		for _, hr := range hrs.Items {
			comp := hr.Labels[csv1.ComponentLabel]
			if rev := framework.HelmRevision(&hr); rev > 0 && acceptsExtraRevision(inFlight, c+"/"+comp, rev, f.helmRev[c][comp]) {
				f.helmRev[c][comp]++
				took = append(took, c+"/"+comp)
			}
		}
	}
	return took
}

// helmActionInFlight tells whether helm-controller was in the middle of a Helm action on a
// HelmRelease whose status records revision recorded, whose release has revisions up to stored
// in Helm's storage, and whose Ready condition is ready: the action ran and its result was not
// written back, or helm-controller had announced it ("Running 'upgrade' action ...": Ready
// Unknown, reason Progressing).
func helmActionInFlight(recorded, stored int, ready *metav1.Condition) bool {
	running := ready != nil && ready.Status == metav1.ConditionUnknown && ready.Reason == "Progressing"
	return stored > recorded || running
}

// acceptsExtraRevision tells whether the HelmRelease key ("<cluster>/<component>"), at Helm
// revision latest where the moves made expected, took the one extra revision of an upgrade in
// flight when helm-controller stopped: only one, and only on a HelmRelease in inFlight.
func acceptsExtraRevision(inFlight map[string]bool, key string, latest, expected int) bool {
	return inFlight[key] && latest == expected+1
}

// valuesData returns the data of every Cluster's values ConfigMaps, by ConfigMap name.
func (f *fleet) valuesData(ctx context.Context) map[string]map[string]string {
	GinkgoHelper()
	cms := &corev1.ConfigMapList{}
	Expect(k8s.List(ctx, cms, client.InNamespace(ns), client.MatchingLabels{csv1.ManagedByLabel: csv1.ManagedByValue}, client.HasLabels{csv1.ClusterNameLabel})).To(Succeed())
	out := map[string]map[string]string{}
	for _, cm := range cms.Items {
		out[cm.Name] = cm.Data
	}
	return out
}

// renderedValues is the data the values ConfigMap of Cluster c must hold for release rel: the
// release's value templates (as published) rendered over the Cluster and the control plane and
// infrastructure objects it refers to, as read from the API server now.
func renderedValues(ctx context.Context, g Gomega, c string, rel *csv1.ClusterStackRelease) map[string]string {
	comps, ok := components[rel.Spec.Version]
	g.Expect(ok).To(BeTrue(), "the suite published version %s", rel.Spec.Version)
	cl := &clusterv1.Cluster{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: c}, cl)).To(Succeed())
	clusterMap, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cl)
	g.Expect(err).NotTo(HaveOccurred())
	in := render.Input{
		Cluster: render.Clean(clusterMap),
		Release: render.Release{Name: rel.Name, Version: rel.Spec.Version, KubernetesVersion: rel.Status.KubernetesVersion},
	}
	for _, r := range []struct {
		ref clusterv1.ContractVersionedObjectReference
		dst *map[string]any
	}{{cl.Spec.ControlPlaneRef, &in.ControlPlane}, {cl.Spec.InfrastructureRef, &in.InfraCluster}} {
		if r.ref.Name == "" {
			continue
		}
		mapping, err := k8s.RESTMapper().RESTMapping(schema.GroupKind{Group: r.ref.APIGroup, Kind: r.ref.Kind})
		g.Expect(err).NotTo(HaveOccurred())
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(mapping.GroupVersionKind)
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: r.ref.Name}, u)).To(Succeed())
		*r.dst = render.Clean(u.Object)
	}
	data, err := render.Render(in, comps)
	g.Expect(err).NotTo(HaveOccurred(), "render the values of Cluster %s for %s", c, rel.Name)
	return data
}

func (f *fleet) checkCluster(ctx context.Context, g Gomega, c string, rel *csv1.ClusterStackRelease) checked {
	var n checked
	objs := objectSet{}
	a := &csv1.ClusterAddon{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: c}, a)).To(Succeed())
	g.Expect(a.Status.LastAppliedRelease).To(Equal(rel.Name))
	g.Expect(a.Status.DesiredRelease).To(Equal(rel.Name))
	g.Expect(apimeta.IsStatusConditionTrue(a.Status.Conditions, csv1.ReadyCondition)).To(BeTrue(), "ClusterAddon %s Ready: %v", c, a.Status.Conditions)

	want := fluxgen.AddonObjects(fluxgen.ClusterInput{
		Cluster: c, Namespace: ns, Stack: rel.Spec.ClusterStack, Release: rel,
		Components: rel.Status.Components, Timeout: addonTimeout,
	})
	sel := client.MatchingLabels{csv1.ClusterNameLabel: c, csv1.ManagedByLabel: csv1.ManagedByValue}
	hrs := &helmv2.HelmReleaseList{}
	g.Expect(k8s.List(ctx, hrs, client.InNamespace(ns), sel)).To(Succeed())
	kss := &kustomizev1.KustomizationList{}
	g.Expect(k8s.List(ctx, kss, client.InNamespace(ns), sel)).To(Succeed())
	cms := &corev1.ConfigMapList{}
	g.Expect(k8s.List(ctx, cms, client.InNamespace(ns), sel)).To(Succeed())

	live := map[string]client.Object{}
	for i := range hrs.Items {
		live["HelmRelease/"+hrs.Items[i].Name] = &hrs.Items[i]
	}
	for i := range kss.Items {
		live["Kustomization/"+kss.Items[i].Name] = &kss.Items[i]
	}
	var wantKeys []string
	for _, w := range want {
		wantKeys = append(wantKeys, w.GetObjectKind().GroupVersionKind().Kind+"/"+w.GetName())
	}
	g.Expect(slices.Sorted(maps.Keys(live))).To(Equal(slices.Sorted(slices.Values(wantKeys))), "the generated Flux objects of Cluster %s: exactly one per component", c)
	var cmNames []string
	for _, cm := range cms.Items {
		cmNames = append(cmNames, cm.Name)
	}
	g.Expect(cmNames).To(ConsistOf(fluxgen.ValuesConfigMapName(c, rel.Name)), "the values ConfigMaps of Cluster %s: exactly the one of release %s", c, rel.Name)
	g.Expect(cms.Items[0].Data).To(Equal(renderedValues(ctx, g, c, rel)), "the data of ConfigMap %s is what release %s renders for Cluster %s", cmNames[0], rel.Name, c)
	objs.add("ConfigMap " + ns + "/" + cmNames[0])

	wl := f.workload(ctx, c)
	for _, w := range want {
		key := w.GetObjectKind().GroupVersionKind().Kind + "/" + w.GetName()
		l := live[key]
		g.Expect(containsSpec(w, l)).To(Succeed(), "%s of Cluster %s has the content the operator generates for %s", key, c, rel.Name)
		g.Expect(l.GetLabels()).To(HaveKeyWithValue(csv1.ReleaseLabel, fluxgen.LabelValue(rel.Name)))
		objs.add(key + " " + ns)
		switch o := l.(type) {
		case *helmv2.HelmRelease:
			comp := o.Labels[csv1.ComponentLabel]
			rev := f.helmRev[c][comp]
			latest := o.Status.History.Latest()
			g.Expect(latest).NotTo(BeNil(), "%s has a release history", key)
			g.Expect(latest.Version).To(Equal(rev), "%s: Helm revision (1 install + 1 upgrade per move)", key)
			g.Expect(latest.Status).To(Equal("deployed"))
			n.helmRevisions += checkHelmStorage(ctx, g, wl, o.Spec.StorageNamespace, o.Spec.ReleaseName, rev)
		case *kustomizev1.Kustomization:
			g.Expect(o.Status.Inventory).NotTo(BeNil(), "%s has an inventory", key)
			for _, e := range o.Status.Inventory.Entries {
				u, err := inventoryObject(e)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(wl.Get(ctx, client.ObjectKeyFromObject(u), u)).To(Succeed(), "%s lists %s, which must exist in the workload cluster", key, e.ID)
			}
		}
	}
	for k := range f.checkUIDs(ctx, g, c, wl, kss.Items, hrs.Items) {
		objs.add("workload cluster " + c + ": " + k)
	}
	n.objects = len(objs)
	return n
}

// checkHelmStorage checks the release's revisions in Helm's storage (Secrets) in the workload
// cluster: the newest is rev and deployed, the others superseded, without gaps.
func checkHelmStorage(ctx context.Context, g Gomega, wl client.Client, storageNS, release string, rev int) int {
	secrets := &corev1.SecretList{}
	g.Expect(wl.List(ctx, secrets, client.InNamespace(storageNS), client.MatchingLabels{"owner": "helm", "name": release})).To(Succeed())
	got := map[int]string{}
	for _, s := range secrets.Items {
		v, err := strconv.Atoi(s.Labels["version"])
		g.Expect(err).NotTo(HaveOccurred(), "Helm storage Secret %s", s.Name)
		got[v] = s.Labels["status"]
	}
	g.Expect(got).To(HaveKeyWithValue(rev, "deployed"), "Helm release %s/%s: revision %d deployed (all: %v)", storageNS, release, rev, got)
	for v, st := range got {
		g.Expect(v).To(BeNumerically("<=", rev), "Helm release %s/%s: no revision after %d (all: %v)", storageNS, release, rev, got)
		if v < rev {
			g.Expect(st).To(Equal("superseded"), "Helm release %s/%s revision %d (all: %v)", storageNS, release, v, got)
		}
	}
	for v := rev; v > rev-len(got); v-- {
		g.Expect(got).To(HaveKey(v), "Helm release %s/%s: revisions without gaps (all: %v)", storageNS, release, got)
	}
	return len(got)
}

// inventoryObject is the object an inventory entry of a Kustomization names
// ("<namespace>_<name>_<group>_<kind>", version in v).
func inventoryObject(e kustomizev1.ResourceRef) (*unstructured.Unstructured, error) {
	parts := strings.Split(e.ID, "_")
	if len(parts) != 4 {
		return nil, fmt.Errorf("inventory entry %q is not <namespace>_<name>_<group>_<kind>", e.ID)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: parts[2], Version: e.Version, Kind: parts[3]})
	u.SetNamespace(parts[0])
	u.SetName(parts[1])
	return u, nil
}

// deliveredKinds are the kinds whose delivered objects' UIDs are tracked.
var deliveredKinds = []schema.GroupVersionKind{
	{Version: "v1", Kind: "ConfigMap"}, {Version: "v1", Kind: "Service"}, {Version: "v1", Kind: "ServiceAccount"},
	{Group: "apps", Version: "v1", Kind: "Deployment"}, {Group: "apps", Version: "v1", Kind: "DaemonSet"},
}

// checkUIDs finds the objects delivered into the workload cluster (the Kustomizations' inventories
// and the objects Helm annotates as its releases') and checks that each seen before still has
// its UID; new ones are remembered. It returns them, by objectKey.
func (f *fleet) checkUIDs(ctx context.Context, g Gomega, c string, wl client.Client, kss []kustomizev1.Kustomization, hrs []helmv2.HelmRelease) map[string]types.UID {
	now := map[string]types.UID{}
	for _, ks := range kss {
		if ks.Status.Inventory == nil {
			continue
		}
		for _, e := range ks.Status.Inventory.Entries {
			u, err := inventoryObject(e)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(wl.Get(ctx, client.ObjectKeyFromObject(u), u)).To(Succeed())
			now[objectKey(u)] = u.GetUID()
		}
	}
	releases := map[string]bool{}
	for _, hr := range hrs {
		releases[hr.Spec.StorageNamespace+"/"+hr.Spec.ReleaseName] = true
	}
	for _, gvk := range deliveredKinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		g.Expect(wl.List(ctx, list)).To(Succeed())
		for i := range list.Items {
			u := &list.Items[i]
			an := u.GetAnnotations()
			if releases[an["meta.helm.sh/release-namespace"]+"/"+an["meta.helm.sh/release-name"]] {
				now[objectKey(u)] = u.GetUID()
			}
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	seen := f.uids[c]
	if seen == nil {
		seen = map[string]types.UID{}
		f.uids[c] = seen
	}
	g.Expect(framework.LostUIDs(seen, now)).To(BeEmpty(), "objects delivered into workload cluster %s", c)
	for k, uid := range now {
		seen[k] = uid
	}
	return now
}

// objectSet is the objects one check looked at, each named once however many checks it went
// through (an object of a Kustomization's inventory is checked to exist and to keep its UID).
type objectSet map[string]bool

func (s objectSet) add(key string) { s[key] = true }

func objectKey(u *unstructured.Unstructured) string {
	gvk := u.GroupVersionKind()
	return gvk.Group + "/" + gvk.Kind + " " + u.GetNamespace() + "/" + u.GetName()
}

// containsSpec checks that live's spec has every field want's spec sets, with the same value
// (fields the API server or Flux default are allowed besides).
func containsSpec(want, live client.Object) error {
	w, err := runtime.DefaultUnstructuredConverter.ToUnstructured(want)
	if err != nil {
		return err
	}
	l, err := runtime.DefaultUnstructuredConverter.ToUnstructured(live)
	if err != nil {
		return err
	}
	return contains("spec", w["spec"], l["spec"])
}

func contains(path string, want, live any) error {
	switch w := want.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: want an object, got %v", path, live)
		}
		for k, v := range w {
			if err := contains(path+"."+k, v, l[k]); err != nil {
				return err
			}
		}
	case []any:
		l, ok := live.([]any)
		if !ok || len(l) != len(w) {
			return fmt.Errorf("%s: want %v, got %v", path, w, live)
		}
		for i := range w {
			if err := contains(fmt.Sprintf("%s[%d]", path, i), w[i], l[i]); err != nil {
				return err
			}
		}
	default:
		if fmt.Sprint(want) != fmt.Sprint(live) {
			return fmt.Errorf("%s: want %v, got %v", path, want, live)
		}
	}
	return nil
}
