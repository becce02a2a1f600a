package controllers

import (
	"context"
	"fmt"
	"sort"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxstatus"
	"github.com/clusterstack-io/clusterstack-operator/internal/lifecycle"
	"github.com/clusterstack-io/clusterstack-operator/internal/metrics"
	"github.com/clusterstack-io/clusterstack-operator/internal/stackstatus"
)

// ClusterStackStatusReconciler computes a ClusterStack's conditions, available version and
// counts from its releases and the ClusterAddons of its Clusters.
type ClusterStackStatusReconciler struct {
	client.Client
	Recorder record.EventRecorder
	// Fleets sums the ClusterAddons of each stack as they change (NewAddonFleets).
	Fleets *AddonFleets

	pace rollupPacer

	// writer writes the status: the manager's, shared by its reconcilers (Setup), or one of
	// this reconciler's own (SetupWithManager).
	writer *statusWriter
}

// Reconcile recomputes one ClusterStack's status.
func (r *ClusterStackStatusReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if !r.Fleets.Synced() {
		return ctrl.Result{RequeueAfter: RollupDelay}, nil // the roll-up would miss Clusters
	}
	if d := r.pace.wait(req.NamespacedName); d > 0 {
		return ctrl.Result{RequeueAfter: d}, nil // written a moment ago (RollupInterval)
	}
	cs := &csv1.ClusterStack{}
	if err := r.Get(ctx, req.NamespacedName, cs); err != nil {
		if apierrors.IsNotFound(err) {
			metrics.Default.DeleteStack(req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	defer r.pace.track(req.NamespacedName, cs)()
	var rels csv1.ClusterStackReleaseList
	if err := r.List(ctx, &rels, client.InNamespace(cs.Namespace), client.MatchingFields{releaseStackIndex: cs.Name}); err != nil {
		return ctrl.Result{}, err
	}
	// The ClusterAddons of the stack's Clusters (status.clusterStack), summed as they changed.
	fleet := r.Fleets.Fleet(cs.Namespace, cs.Name)
	related, err := r.relatedObjects(ctx, cs)
	if err != nil {
		return ctrl.Result{}, err
	}
	// A release kept only as the candidate of a proposal is not delivered: its failures are
	// conditional-update risks (status.conditionalUpdates), not the stack's Degraded.
	delivered := make([]csv1.ClusterStackRelease, 0, len(rels.Items))
	for _, rel := range rels.Items {
		if !candidateOnly(cs, rel.Name) {
			delivered = append(delivered, rel)
		}
	}
	f := stackstatus.Facts{Releases: delivered, Fleet: fleet, Resolved: apimeta.FindStatusCondition(cs.Status.Conditions, csv1.ReleasesResolvedCondition)}
	var later time.Duration
	err = updateStatusEmit(ctx, r.writer, r.Recorder, cs, func(cs *csv1.ClusterStack) (bool, []statusEvent) {
		was := cs.Status.DeepCopy()
		f.PreviousAvailable = cs.Status.Versions.Available // as re-read: this controller's last write
		res := stackstatus.Compute(cs.Name, f)
		cs.Status.Versions.Available = res.AvailableVersion
		cs.Status.Clusters = res.Clusters
		cs.Status.ClustersSummary = fmt.Sprintf("%d/%d", res.Clusters.Available, res.Clusters.Total)
		cs.Status.RelatedObjects = related
		// status.releases lists what the ClusterStack reconciler keeps; these two fields are ours.
		for i := range cs.Status.Releases {
			s := &cs.Status.Releases[i]
			s.Available = res.ReleaseAvailable[s.Name]
			s.Clusters = res.ReleaseClusters[s.Name]
		}
		events := transitionEvents(cs.Status.Conditions, res.Result)
		fluxstatus.Apply(&cs.Status.Conditions, cs.Generation, res.Result)
		up := stackUpgradeable(cs.Name, rels.Items)
		up.ObservedGeneration = cs.Generation
		fluxstatus.SetCondition(&cs.Status.Conditions, up)
		if later = r.pace.countsOnly(req.NamespacedName, fleet.Clusters.Total, r.Fleets.NamespaceAddons(cs.Namespace), was.Conditions, cs.Status.Conditions, sameStackFacts(was, &cs.Status)); later > 0 {
			cs.Status = *was // only counts changed, and a write went a moment ago: later
			return true, nil
		}
		return true, events
	})
	if err == nil {
		// The same recount as status.clusters, so the metrics agree with the status.
		metrics.Default.SetStack(cs.Namespace, cs.Name, rels.Items, fleet.States)
	}
	return ctrl.Result{RequeueAfter: later}, err
}

// sameStackFacts is true when a ClusterStack status differs from was at most in its counts
// (status.clusters, the summary, each release's clusters) and condition messages: the available
// version, each release's availability and the related objects are the same.
func sameStackFacts(was, now *csv1.ClusterStackStatus) bool {
	if was.Versions.Available != now.Versions.Available || len(was.Releases) != len(now.Releases) ||
		!equality.Semantic.DeepEqual(was.RelatedObjects, now.RelatedObjects) {
		return false
	}
	for i := range was.Releases {
		if was.Releases[i].Name != now.Releases[i].Name || was.Releases[i].Available != now.Releases[i].Available {
			return false
		}
	}
	return true
}

// relatedObjects lists the objects generated for the stack's releases.
func (r *ClusterStackStatusReconciler) relatedObjects(ctx context.Context, cs *csv1.ClusterStack) ([]csv1.RelatedObject, error) {
	sel := client.MatchingLabels(fluxgen.StackSelector(cs.Name))
	var out []csv1.RelatedObject
	add := func(apiVersion, kind string, o metav1.Object) {
		if _, perCluster := o.GetLabels()[csv1.ClusterNameLabel]; perCluster {
			return
		}
		out = append(out, csv1.RelatedObject{APIVersion: apiVersion, Kind: kind, Namespace: o.GetNamespace(), Name: o.GetName()})
	}
	var repos sourcev1.GitRepositoryList
	if err := r.List(ctx, &repos, client.InNamespace(cs.Namespace), sel); err != nil {
		return nil, err
	}
	for i := range repos.Items {
		add(sourcev1.GroupVersion.String(), sourcev1.GitRepositoryKind, &repos.Items[i])
	}
	var ocis sourcev1.OCIRepositoryList
	if err := r.List(ctx, &ocis, client.InNamespace(cs.Namespace), sel); err != nil {
		return nil, err
	}
	for i := range ocis.Items {
		add(sourcev1.GroupVersion.String(), sourcev1.OCIRepositoryKind, &ocis.Items[i])
	}
	var charts sourcev1.HelmChartList
	if err := r.List(ctx, &charts, client.InNamespace(cs.Namespace), sel); err != nil {
		return nil, err
	}
	for i := range charts.Items {
		add(sourcev1.GroupVersion.String(), sourcev1.HelmChartKind, &charts.Items[i])
	}
	// The releases' own HelmReleases and Kustomizations, through an index that leaves out the
	// clusters' (thousands): O(releases), not O(Clusters).
	own := byReleaseFluxStack(cs.Name)
	var hrs helmv2.HelmReleaseList
	if err := r.List(ctx, &hrs, client.InNamespace(cs.Namespace), own); err != nil {
		return nil, err
	}
	for i := range hrs.Items {
		add(helmv2.GroupVersion.String(), helmv2.HelmReleaseKind, &hrs.Items[i])
	}
	var kss kustomizev1.KustomizationList
	if err := r.List(ctx, &kss, client.InNamespace(cs.Namespace), own); err != nil {
		return nil, err
	}
	for i := range kss.Items {
		add(kustomizev1.GroupVersion.String(), kustomizev1.KustomizationKind, &kss.Items[i])
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// SetupWithManager watches ClusterStacks, their releases and (through Fleets) their clusters'
// ClusterAddons.
func (r *ClusterStackStatusReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.writer = managerStatusWriter(r.writer, mgr)
	toStack := func(label string) handler.EventHandler {
		return handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			var name string
			switch t := o.(type) {
			case *csv1.ClusterStackRelease:
				name = t.Spec.ClusterStack
			default:
				name = o.GetLabels()[label]
			}
			if name == "" {
				return nil
			}
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: name}}}
		})
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&csv1.ClusterStack{}).
		Watches(&csv1.ClusterStackRelease{}, toStack(csv1.StackLabel)).
		// ClusterAddons: once the index has summed the change, after RollupDelay (coalesced).
		WatchesRawSource(r.Fleets.Source(stackOfAddonRequest)).
		Named("clusterstack-status").
		Complete(r)
}

// candidateOnly reports whether the ClusterStack keeps release name only as the candidate of a
// proposal (lifecycle.Candidate).
func candidateOnly(cs *csv1.ClusterStack, name string) bool {
	for _, r := range cs.Status.Releases {
		if r.Name == name {
			return len(r.Reasons) == 1 && r.Reasons[0] == lifecycle.Candidate
		}
	}
	return false
}
