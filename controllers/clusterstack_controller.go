package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxstatus"
	"github.com/clusterstack-io/clusterstack-operator/internal/gitauth"
	"github.com/clusterstack-io/clusterstack-operator/internal/lifecycle"
	"github.com/clusterstack-io/clusterstack-operator/internal/redact"
	"github.com/clusterstack-io/clusterstack-operator/internal/releasename"
)

// Reasons a release is kept, as listed in the ClusterStack's status (see internal/lifecycle).
const (
	KeepPinned = lifecycle.Pinned
	KeepLatest = lifecycle.Latest
	KeepInUse  = lifecycle.InUse
)

// DefaultRollbackReleases is how many older validated releases a ClusterStack keeps when
// spec.rollbackReleases is not set.
const DefaultRollbackReleases = 1

// ClusterStackReconciler turns a ClusterStack into ClusterStackReleases: one per pinned version,
// the newest published release with autoSubscribe, and every release something still runs
// (Clusters, their applied addons, generated Flux objects) plus rollback targets. Other releases
// are deleted, after a live read confirms nothing uses them.
type ClusterStackReconciler struct {
	client.Client
	// APIReader reads the API server directly, for deletion decisions.
	APIReader client.Reader
	// Cache, the manager's cache, hands the fleet-wide reads their objects without a copy
	// (eachCached); nil: they are listed from the Client.
	Cache    cache.Informers
	Tags     *TagLister
	Recorder record.EventRecorder
	// DefaultServiceAccount is the identity of a stack's Flux objects when its
	// spec.serviceAccountName is empty (the operator's --default-service-account).
	DefaultServiceAccount string
	// Lockdown says whether Flux runs with its multi-tenancy lockdown (the FluxLockdown condition
	// and, with --flux-lockdown=required, whether releases are created); nil checks nothing.
	Lockdown *FluxLockdownProbe

	// writer writes the status: the manager's, shared by its reconcilers (Setup), or one of
	// this reconciler's own (SetupWithManager).
	writer *statusWriter
}

// +kubebuilder:rbac:groups=clusterstack.io,resources=clusterstacks,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=clusterstack.io,resources=clusterstacks/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=clusterstack.io,resources=clusterstacks/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

// stackScope carries one reconcile's facts between steps.
type stackScope struct {
	cs *csv1.ClusterStack
	// wanted are the release names asked for (Pinned, Latest) with their reasons; latest is the
	// newest version known; resolveErr is set when the wanted set could not be determined.
	wanted     map[string][]string
	latest     string
	resolveErr error
	existing   []csv1.ClusterStackRelease
	keep       map[string][]string
	missing    []csv1.MissingRelease
	requeue    bool
	// refused is the ReleasesResolved condition of a stack whose releases may not be created or
	// changed (checkIdentity); lockdown its FluxLockdown condition (nil: not checked).
	refused, lockdown *metav1.Condition
}

// Reconcile resolves the wanted releases and makes the ClusterStackReleases match: the deletion
// branch, or the phases in order and, once they all ran, the status they found.
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
	return runPhasesThenStatus(ctx, &stackScope{cs: cs}, statusAfterWholePass, r.setResolved,
		r.resolveWanted,
		r.checkIdentity,
		r.decideKeep,
		r.ensureReleases,
		r.removeUnused,
		r.schedule,
	)
}

func interval(cs *csv1.ClusterStack) time.Duration {
	if cs.Spec.Interval != nil && cs.Spec.Interval.Duration > 0 {
		return cs.Spec.Interval.Duration
	}
	return 5 * time.Minute
}

func (r *ClusterStackReconciler) releaseName(cs *csv1.ClusterStack, version string) string {
	return releasename.Format(cs.Spec.Provider, cs.Spec.Name, cs.Spec.KubernetesVersion, version)
}

// stackKey is the tag prefix of a ClusterStack's releases without the version, e.g. "aws-base-1-36".
func stackKey(cs *csv1.ClusterStack) string {
	return strings.TrimSuffix(releasename.Format(cs.Spec.Provider, cs.Spec.Name, cs.Spec.KubernetesVersion, ""), "-")
}

// setResolved records the releases, the missing ones and the ReleasesResolved condition (facts
// this controller owns).
func (r *ClusterStackReconciler) setResolved(ctx context.Context, s *stackScope) (ctrl.Result, error) {
	return ctrl.Result{}, updateStatusEmit(ctx, r.writer, r.Recorder, s.cs, func(cs *csv1.ClusterStack) (bool, []statusEvent) {
		old := map[string]csv1.ReleaseSummary{}
		for _, sum := range cs.Status.Releases {
			old[sum.Name] = sum
		}
		var summaries []csv1.ReleaseSummary
		for name, rs := range s.keep {
			if slices.ContainsFunc(s.missing, func(m csv1.MissingRelease) bool { return m.Name == name }) {
				continue
			}
			sum := old[name] // keeps the aggregation's fields
			sum.Name = name
			if rel, err := releasename.Parse(name); err == nil {
				sum.Version = rel.Version
			}
			sum.Reasons = rs
			summaries = append(summaries, sum)
		}
		sort.Slice(summaries, func(i, j int) bool {
			return releasename.CompareVersions(summaries[i].Version, summaries[j].Version) < 0
		})
		cs.Status.Releases = summaries
		sort.Slice(s.missing, func(i, j int) bool { return s.missing[i].Name < s.missing[j].Name })
		cs.Status.MissingReleases = s.missing
		if s.latest != "" {
			cs.Status.LatestRelease = r.releaseName(cs, s.latest)
			cs.Status.Versions.Desired = s.latest
		}
		c := metav1.Condition{Type: csv1.ReleasesResolvedCondition, Status: metav1.ConditionTrue, Reason: csv1.ReasonAsExpected,
			Message: fmt.Sprintf("%d release(s) kept", len(summaries)), ObservedGeneration: cs.Generation}
		if s.resolveErr != nil {
			c.Status, c.Reason, c.Message = metav1.ConditionFalse, tagListReason(s.resolveErr), redact.URLs(oneLine(s.resolveErr))
		}
		if s.refused != nil {
			c.Status, c.Reason, c.Message = s.refused.Status, s.refused.Reason, s.refused.Message
		}
		var events []statusEvent
		if fluxstatus.SetCondition(&cs.Status.Conditions, c) && c.Status == metav1.ConditionFalse {
			events = append(events, warningEvent(c.Reason, c.Message))
		}
		if s.lockdown != nil {
			s.lockdown.ObservedGeneration = cs.Generation
			if fluxstatus.SetCondition(&cs.Status.Conditions, *s.lockdown) && s.lockdown.Status == metav1.ConditionFalse {
				events = append(events, warningEvent(s.lockdown.Reason, s.lockdown.Message))
			}
		}
		// The spec was observed; what came of it is in the conditions (kstatus needs this to
		// report a broken stack as Failed rather than not yet observed).
		cs.Status.ObservedGeneration = cs.Generation
		return true, events
	})
}

// tagListReason is the reason of a condition reporting err, an error of the tag listing:
// TagListTooLarge when the repository exceeds a limit of the listing, else TagListFailed.
func tagListReason(err error) string {
	if errors.Is(err, gitauth.ErrTooManyRefs) {
		return csv1.ReasonTagListTooLarge
	}
	return csv1.ReasonTagListFailed
}

// reconcileDelete removes the releases nothing uses and waits for the others.
func (r *ClusterStackReconciler) reconcileDelete(ctx context.Context, cs *csv1.ClusterStack) (ctrl.Result, error) {
	existing, err := r.releasesOf(ctx, cs)
	if err != nil {
		return ctrl.Result{}, err
	}
	live, err := releaseUses(ctx, r.APIReader, cs)
	if err != nil {
		return ctrl.Result{}, err
	}
	var blocked []string
	for i := range existing {
		rel := &existing[i]
		if users := live.of(rel.Name); len(users) > 0 {
			blocked = append(blocked, fmt.Sprintf("%s (used by %s)", rel.Name, strings.Join(users, ", ")))
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
		err := updateStatus(ctx, r.writer, cs, func(cs *csv1.ClusterStack) {
			fluxstatus.SetCondition(&cs.Status.Conditions, metav1.Condition{Type: csv1.ReleasesResolvedCondition, Status: metav1.ConditionFalse,
				Reason: csv1.ReasonInUse, Message: fluxstatus.Truncate(msg), ObservedGeneration: cs.Generation})
		})
		log.FromContext(ctx).Info("ClusterStack deletion blocked", "releases", blocked)
		return ctrl.Result{}, err
	}
	if controllerutil.RemoveFinalizer(cs, csv1.ClusterStackFinalizer) {
		return ctrl.Result{}, r.Update(ctx, cs)
	}
	return ctrl.Result{}, nil
}

// SetupWithManager watches ClusterStacks; their releases (created, deleted, validated: they carry
// a non-controller owner reference, so Owns would not map them); Clusters moving between
// ClusterClasses; ClusterAddons whose applied release changes; and cluster Flux objects that go
// or move to another release (a release may become unused). The per-Cluster events (Clusters,
// ClusterAddons, their Flux objects) are coalesced over StackReconcileDelay: each reconcile reads every
// user of the stack's releases, so one per Cluster change would cost O(N) each while a fleet of
// N Clusters is created or upgraded.
func (r *ClusterStackReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.writer = managerStatusWriter(r.writer, mgr)
	return ctrl.NewControllerManagedBy(mgr).
		For(&csv1.ClusterStack{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, deletingPredicate(), candidateChanged()))).
		Watches(&csv1.ClusterStackRelease{}, handler.EnqueueRequestsFromMapFunc(stackOfReleaseObject), builder.WithPredicates(releaseLifecycleChanged())).
		Watches(&clusterv1.Cluster{}, coalesced(clusterClassHandler(r.stacksOfClass))).
		Watches(&csv1.ClusterAddon{}, coalesced(handler.EnqueueRequestsFromMapFunc(stackOfAddon)), builder.WithPredicates(appliedReleaseChanged())).
		Watches(&helmv2.HelmRelease{}, coalesced(handler.EnqueueRequestsFromMapFunc(stackOfLabel)), builder.WithPredicates(releaseLabelChanged())).
		Watches(&kustomizev1.Kustomization{}, coalesced(handler.EnqueueRequestsFromMapFunc(stackOfLabel)), builder.WithPredicates(releaseLabelChanged())).
		Named("clusterstack").
		Complete(r)
}

// stacksOfClass maps a ClusterClass name to the ClusterStacks of its namespace it would be a
// release of (whether or not the release exists).
func (r *ClusterStackReconciler) stacksOfClass(ctx context.Context, ns, class string) []reconcile.Request {
	parsed, err := releasename.Parse(class)
	if err != nil {
		return nil
	}
	var list csv1.ClusterStackList
	if err := r.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		if cs := &list.Items[i]; stackKey(cs) == parsed.HelmReleaseName() {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(cs)})
		}
	}
	return reqs
}

func stackOfReleaseObject(_ context.Context, o client.Object) []reconcile.Request {
	rel, ok := o.(*csv1.ClusterStackRelease)
	if !ok || rel.Spec.ClusterStack == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: rel.Namespace, Name: rel.Spec.ClusterStack}}}
}

func stackOfAddon(_ context.Context, o client.Object) []reconcile.Request {
	a, ok := o.(*csv1.ClusterAddon)
	if !ok || a.Status.ClusterStack == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: a.Namespace, Name: a.Status.ClusterStack}}}
}

func stackOfLabel(_ context.Context, o client.Object) []reconcile.Request {
	l := o.GetLabels()
	if l[csv1.ManagedByLabel] != csv1.ManagedByValue || l[csv1.StackLabel] == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: l[csv1.StackLabel]}}}
}

// releaseLifecycleChanged passes release creations, deletions, deletion marks and changes of
// StackValid or Available (which make a release a rollback target).
func releaseLifecycleChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*csv1.ClusterStackRelease)
		n, ok2 := e.ObjectNew.(*csv1.ClusterStackRelease)
		if !ok1 || !ok2 {
			return true
		}
		return o.DeletionTimestamp.IsZero() != n.DeletionTimestamp.IsZero() ||
			conditionStatus(o.Status.Conditions, csv1.StackValidCondition) != conditionStatus(n.Status.Conditions, csv1.StackValidCondition) ||
			conditionStatus(o.Status.Conditions, csv1.AvailableCondition) != conditionStatus(n.Status.Conditions, csv1.AvailableCondition) ||
			conditionStatus(o.Status.Conditions, csv1.ProviderObjectsReadyCondition) != conditionStatus(n.Status.Conditions, csv1.ProviderObjectsReadyCondition)
	}}
}

// appliedReleaseChanged passes ClusterAddon updates that change the applied or desired release.
func appliedReleaseChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*csv1.ClusterAddon)
		n, ok2 := e.ObjectNew.(*csv1.ClusterAddon)
		if !ok1 || !ok2 {
			return true
		}
		return o.Status.LastAppliedRelease != n.Status.LastAppliedRelease || o.Status.DesiredRelease != n.Status.DesiredRelease
	}}
}

// releaseLabelChanged passes updates of objects whose release label changed.
func releaseLabelChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetLabels()[csv1.ReleaseLabel] != e.ObjectNew.GetLabels()[csv1.ReleaseLabel]
		},
	}
}

// serviceAccountOf is the identity a stack's Flux objects run as: its own
// spec.serviceAccountName, else the operator's default (which may be empty: then Flux decides).
func serviceAccountOf(cs *csv1.ClusterStack, def string) string {
	if cs.Spec.ServiceAccountName != "" {
		return cs.Spec.ServiceAccountName
	}
	return def
}

// candidate is the release a ClusterStack that proposes updates creates before proposing it, so
// that it is validated and its requirements checked first: the newest update its status lists
// as available, or as conditional only for risks that need the release to exist to be known or
// lifted (validation, requirements, a skipped minor). Too young or declined releases are not
// created.
func candidate(cs *csv1.ClusterStack) string {
	if proposals(cs) == nil {
		return ""
	}
	best := ""
	consider := func(name string) {
		if best == "" || compareReleases(name, best) > 0 {
			best = name
		}
	}
	for _, u := range cs.Status.AvailableUpdates {
		consider(u.Release)
	}
	for _, u := range cs.Status.ConditionalUpdates {
		if !slices.ContainsFunc(u.Risks, func(r csv1.UpdateRisk) bool {
			return r.Type == csv1.RiskMinimumAgeNotReached || r.Type == csv1.RiskDeclined
		}) {
			consider(u.Release)
		}
	}
	return best
}

// candidateChanged passes updates that change the candidate release (status.availableUpdates
// and status.conditionalUpdates, written by the updates controller).
func candidateChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return false },
		DeleteFunc: func(event.DeleteEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, okO := e.ObjectOld.(*csv1.ClusterStack)
			n, okN := e.ObjectNew.(*csv1.ClusterStack)
			return okO && okN && candidate(o) != candidate(n)
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}
