package controllers

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxstatus"
	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
)

// Reasons a release is kept, as listed in the ClusterStack's status.
const (
	KeepPinned = "Pinned"
	KeepLatest = "Latest"
	KeepInUse  = "InUse"
)

// ClusterStackReconciler turns a ClusterStack into ClusterStackReleases: one per pinned version,
// plus the newest published release with autoSubscribe. Releases no longer wanted are deleted
// unless a Cluster uses them.
type ClusterStackReconciler struct {
	client.Client
	Tags     *TagLister
	Recorder record.EventRecorder
}

// +kubebuilder:rbac:groups=clusterstack.io,resources=clusterstacks,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=clusterstack.io,resources=clusterstacks/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=clusterstack.io,resources=clusterstacks/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

// Reconcile resolves the wanted releases and makes the ClusterStackReleases match.
func (r *ClusterStackReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cs := &csv1.ClusterStack{}
	if err := r.Get(ctx, req.NamespacedName, cs); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !cs.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, cs)
	}
	if controllerutil.AddFinalizer(cs, csv1.ClusterStackFinalizer) {
		if err := r.Update(ctx, cs); err != nil {
			return ctrl.Result{}, err
		}
	}

	wanted, latest, resolveErr := r.wantedVersions(ctx, cs)
	existing, err := r.releasesOf(ctx, cs)
	if err != nil {
		return ctrl.Result{}, err
	}

	// Create or update the wanted releases.
	for _, v := range slices.Sorted(maps.Keys(wanted)) {
		if err := r.ensureRelease(ctx, cs, v); err != nil {
			return ctrl.Result{}, err
		}
	}

	// Delete the releases no longer wanted, unless a Cluster uses them. When the wanted set
	// could not be resolved, delete nothing: a failure to list tags must not remove releases.
	reasons := map[string][]string{}
	for v, rs := range wanted {
		reasons[stack.ReleaseName(cs.Spec.Provider, cs.Spec.Name, cs.Spec.KubernetesVersion, v)] = rs
	}
	for i := range existing {
		rel := &existing[i]
		users, err := clustersUsing(ctx, r.Client, rel.Namespace, rel.Name)
		if err != nil {
			return ctrl.Result{}, err
		}
		if len(users) > 0 {
			reasons[rel.Name] = append(reasons[rel.Name], KeepInUse)
		}
		if _, keep := reasons[rel.Name]; keep || resolveErr != nil || !rel.DeletionTimestamp.IsZero() {
			continue
		}
		if err := r.Delete(ctx, rel); err != nil && !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("delete unused release %s: %w", rel.Name, err)
		}
		r.Recorder.Eventf(cs, "Normal", "ReleaseRemoved", "release %s is neither pinned, latest nor used by any Cluster: removed", rel.Name)
	}

	if err := r.setResolved(ctx, cs, reasons, latest, resolveErr); err != nil {
		return ctrl.Result{}, err
	}
	if cs.Spec.AutoSubscribe {
		return ctrl.Result{RequeueAfter: interval(cs)}, nil
	}
	return ctrl.Result{}, nil
}

func interval(cs *csv1.ClusterStack) time.Duration {
	if cs.Spec.Interval != nil && cs.Spec.Interval.Duration > 0 {
		return cs.Spec.Interval.Duration
	}
	return 5 * time.Minute
}

// wantedVersions returns the versions to deliver with the reasons to keep each, and the newest
// published version (with autoSubscribe).
func (r *ClusterStackReconciler) wantedVersions(ctx context.Context, cs *csv1.ClusterStack) (map[string][]string, string, error) {
	wanted := map[string][]string{}
	for _, v := range cs.Spec.Versions {
		wanted[v] = append(wanted[v], KeepPinned)
	}
	latest := ""
	for _, v := range cs.Spec.Versions {
		if latest == "" || stack.CompareVersions(v, latest) > 0 {
			latest = v
		}
	}
	if !cs.Spec.AutoSubscribe {
		return wanted, latest, nil
	}
	tags, err := r.Tags.Tags(ctx, cs.Namespace, cs.Spec.Source, interval(cs))
	if err != nil {
		return wanted, latest, err
	}
	rel, ok := stack.LatestRelease(tags, cs.Spec.Provider, cs.Spec.Name, cs.Spec.KubernetesVersion, false)
	if !ok {
		return wanted, latest, fmt.Errorf("no tag in %s matches %s-*: publish a release tag or pin spec.versions",
			cs.Spec.Source.URL, strings.TrimSuffix(stack.ReleaseName(cs.Spec.Provider, cs.Spec.Name, cs.Spec.KubernetesVersion, ""), "-"))
	}
	wanted[rel.Version] = append(wanted[rel.Version], KeepLatest)
	if latest == "" || stack.CompareVersions(rel.Version, latest) > 0 {
		latest = rel.Version
	}
	return wanted, latest, nil
}

func (r *ClusterStackReconciler) releasesOf(ctx context.Context, cs *csv1.ClusterStack) ([]csv1.ClusterStackRelease, error) {
	var list csv1.ClusterStackReleaseList
	if err := r.List(ctx, &list, client.InNamespace(cs.Namespace), client.MatchingFields{releaseStackIndex: cs.Name}); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// ensureRelease creates the release of a version, or updates its spec from the ClusterStack.
func (r *ClusterStackReconciler) ensureRelease(ctx context.Context, cs *csv1.ClusterStack, version string) error {
	name := stack.ReleaseName(cs.Spec.Provider, cs.Spec.Name, cs.Spec.KubernetesVersion, version)
	rel := &csv1.ClusterStackRelease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cs.Namespace}}
	err := r.Get(ctx, client.ObjectKeyFromObject(rel), rel)
	if err == nil && rel.Spec.ClusterStack != cs.Name {
		return reconcile.TerminalError(fmt.Errorf("release %s belongs to ClusterStack %s; two ClusterStacks in one namespace cannot deliver the same stack", name, rel.Spec.ClusterStack))
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	op, err := controllerutil.CreateOrPatch(ctx, r.Client, rel, func() error {
		if rel.Labels == nil {
			rel.Labels = map[string]string{}
		}
		rel.Labels[csv1.ManagedByLabel] = csv1.ManagedByValue
		rel.Labels[csv1.StackLabel] = cs.Name
		rel.Labels[csv1.ReleaseLabel] = name
		rel.Spec = csv1.ClusterStackReleaseSpec{
			ClusterStack:      cs.Name,
			Provider:          cs.Spec.Provider,
			StackName:         cs.Spec.Name,
			KubernetesVersion: cs.Spec.KubernetesVersion,
			Version:           version,
			Source:            cs.Spec.Source,
			Interval:          metav1.Duration{Duration: interval(cs)},
		}
		// Owned, but not as controller of its lifecycle: an in-use release outlives edits to
		// the ClusterStack; its own finalizer keeps it while Clusters use it.
		return controllerutil.SetOwnerReference(cs, rel, r.Scheme())
	})
	if err != nil {
		return fmt.Errorf("create or update release %s: %w", name, err)
	}
	if op == controllerutil.OperationResultCreated {
		r.Recorder.Eventf(cs, "Normal", "ReleaseCreated", "release %s created", name)
	}
	return nil
}

// setResolved records the releases and the ReleasesResolved condition (facts this controller owns).
func (r *ClusterStackReconciler) setResolved(ctx context.Context, cs *csv1.ClusterStack, reasons map[string][]string, latest string, resolveErr error) error {
	return updateStatus(ctx, r.Client, cs, func(cs *csv1.ClusterStack) {
		old := map[string]csv1.ReleaseSummary{}
		for _, s := range cs.Status.Releases {
			old[s.Name] = s
		}
		var summaries []csv1.ReleaseSummary
		for name, rs := range reasons {
			s := old[name] // keeps the aggregation's fields
			s.Name = name
			if r, err := stack.ParseReleaseName(name); err == nil {
				s.Version = r.Version
			}
			rs = slices.Compact(slices.Sorted(slices.Values(rs)))
			s.Reasons = rs
			summaries = append(summaries, s)
		}
		sort.Slice(summaries, func(i, j int) bool { return stack.CompareVersions(summaries[i].Version, summaries[j].Version) < 0 })
		cs.Status.Releases = summaries
		if latest != "" {
			cs.Status.LatestRelease = stack.ReleaseName(cs.Spec.Provider, cs.Spec.Name, cs.Spec.KubernetesVersion, latest)
			cs.Status.Versions.Desired = latest
		}
		c := metav1.Condition{Type: csv1.ReleasesResolvedCondition, Status: metav1.ConditionTrue, Reason: csv1.ReasonAsExpected,
			Message: fmt.Sprintf("%d release(s) wanted", len(summaries)), ObservedGeneration: cs.Generation}
		if resolveErr != nil {
			c.Status, c.Reason, c.Message = metav1.ConditionFalse, csv1.ReasonTagListFailed, resolveErr.Error()
		}
		if fluxstatus.SetCondition(&cs.Status.Conditions, c) && resolveErr != nil {
			r.Recorder.Event(cs, "Warning", c.Reason, c.Message)
		}
		if resolveErr == nil {
			cs.Status.ObservedGeneration = cs.Generation
		}
	})
}

// reconcileDelete removes the releases no Cluster uses and waits for the others.
func (r *ClusterStackReconciler) reconcileDelete(ctx context.Context, cs *csv1.ClusterStack) (ctrl.Result, error) {
	existing, err := r.releasesOf(ctx, cs)
	if err != nil {
		return ctrl.Result{}, err
	}
	var blocked []string
	for i := range existing {
		rel := &existing[i]
		users, err := clustersUsing(ctx, r.Client, rel.Namespace, rel.Name)
		if err != nil {
			return ctrl.Result{}, err
		}
		if len(users) > 0 {
			names := make([]string, 0, len(users))
			for _, u := range users {
				names = append(names, u.Name)
			}
			blocked = append(blocked, fmt.Sprintf("%s (used by %s)", rel.Name, strings.Join(names, ", ")))
			continue
		}
		if rel.DeletionTimestamp.IsZero() {
			if err := r.Delete(ctx, rel); err != nil && !apierrors.IsNotFound(err) {
				return ctrl.Result{}, err
			}
		}
	}
	if len(blocked) > 0 {
		msg := "deletion waits until no Cluster uses the stack's releases: " + strings.Join(blocked, "; ")
		err := updateStatus(ctx, r.Client, cs, func(cs *csv1.ClusterStack) {
			fluxstatus.SetCondition(&cs.Status.Conditions, metav1.Condition{Type: csv1.ReleasesResolvedCondition, Status: metav1.ConditionFalse,
				Reason: csv1.ReasonInUse, Message: msg, ObservedGeneration: cs.Generation})
		})
		log.FromContext(ctx).Info("ClusterStack deletion blocked", "releases", blocked)
		return ctrl.Result{}, err
	}
	if controllerutil.RemoveFinalizer(cs, csv1.ClusterStackFinalizer) {
		return ctrl.Result{}, r.Update(ctx, cs)
	}
	return ctrl.Result{}, nil
}

// SetupWithManager watches ClusterStacks, their releases (for garbage collection), and Clusters
// moving between ClusterClasses (a release may become unused).
func (r *ClusterStackReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&csv1.ClusterStack{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, deletingPredicate()))).
		Owns(&csv1.ClusterStackRelease{}, builder.WithPredicates(predicate.Funcs{UpdateFunc: func(event.UpdateEvent) bool { return false }})).
		Watches(&clusterv1.Cluster{}, clusterClassHandler(r.stackOfRelease)).
		Named("clusterstack").
		Complete(r)
}

// stackOfRelease maps a release (ClusterClass) name to the ClusterStack it belongs to.
func (r *ClusterStackReconciler) stackOfRelease(ctx context.Context, ns, release string) []reconcile.Request {
	rel := &csv1.ClusterStackRelease{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: release}, rel); err != nil {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: ns, Name: rel.Spec.ClusterStack}}}
}
