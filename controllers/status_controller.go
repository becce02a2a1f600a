package controllers

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxstatus"
	"github.com/clusterstack-io/clusterstack-operator/internal/lifecycle"
	"github.com/clusterstack-io/clusterstack-operator/internal/metrics"
	"github.com/clusterstack-io/clusterstack-operator/internal/stackstatus"
)

// StatusOptions configure the status aggregation.
type StatusOptions struct {
	// Grace is how long a Flux object may be not Ready, or a rollout unfinished, before the
	// subject is Degraded.
	Grace time.Duration
	// ProgressInterval is how long a ClusterAddon status write that only reports progress may
	// be held, so that the states passed through within it cost one write (progressPacer); 0
	// writes every change at once.
	ProgressInterval time.Duration
	// Now returns the current time (a clock for tests).
	Now func() time.Time
}

func (o StatusOptions) now() time.Time { return clockFunc(o.Now).Now() }

// ---------------------------------------------------------------------------------------------
// ClusterAddon

// addonJudge is the one place that computes a ClusterAddon's Available, Progressing, Degraded
// and Ready conditions, its components' readiness and its last applied release, from the Flux
// objects delivering its components. The ClusterAddon reconciler calls it in the same status
// write as its facts: one writer, one write per change, no conflicts between two writers.
type addonJudge struct {
	client.Reader
	Options StatusOptions
	// applied are the Flux objects the reconcile just wrote (by namespace/name), with the
	// generation the write gave them (Applier.Apply). One the cache does not have yet exists all
	// the same, as written, without status (Flux has not seen it): judged "does not exist" it
	// would be judged again, and written again, once the cache has it. One the cache has at an
	// older generation is judged at the written one, which Flux has not observed: its cached
	// status (Ready, the chart version of the release before) is not the new spec's.
	applied map[client.ObjectKey]client.Object
	// hold is the Kubernetes upgrade of the Cluster the BeforeClusterUpgrade hook holds on the
	// facts being written (upgradeHold), nil when none.
	hold *fluxstatus.Problem
}

// get reads a Flux object from the cache, or, when the cache has not seen this reconcile's write
// of it yet, as the reconcile just applied it.
func (r addonJudge) get(ctx context.Context, key client.ObjectKey, obj client.Object) error {
	err := r.Get(ctx, key, obj)
	written, ok := r.applied[key]
	if !ok || reflect.TypeOf(written) != reflect.TypeOf(obj) {
		return err
	}
	switch {
	case apierrors.IsNotFound(err):
		reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(written).Elem())
		obj.SetGeneration(max(obj.GetGeneration(), 1)) // the API server's generation of a new object
		return nil
	case err != nil:
		return err
	}
	atWrittenGeneration(obj, written)
	return nil
}

// atWrittenGeneration makes cached, the cache's copy of an object this reconcile wrote, no
// older than that write: when the cache has not seen it yet, cached is at the generation the
// write made (written's, see Applier.Apply), which its status (Flux's) has not observed.
func atWrittenGeneration(cached, written client.Object) {
	if cached.GetGeneration() < written.GetGeneration() {
		cached.SetGeneration(written.GetGeneration())
	}
}

// judge sets a's judged fields from its facts (already in a) and the Flux objects delivering
// its components: components' ready and message, progress, unhealthy, the last applied release,
// the aggregated conditions (docs/status-ownership.md). It returns the Events of the change and
// when to judge again (a grace period running out).
func (r addonJudge) judge(ctx context.Context, a *csv1.ClusterAddon) ([]statusEvent, time.Duration, error) {
	in, judged, err := r.input(ctx, a)
	if err != nil {
		return nil, 0, err
	}
	res := fluxstatus.Compute(in)
	a.Status.Unhealthy = res.Unhealthy
	for i := range a.Status.Components {
		c := &a.Status.Components[i]
		if j, ok := judged[c.Name]; ok && j.fluxObject == c.FluxObject && j.release == c.Release {
			c.Ready, c.Message = componentReadiness(*c, j.state)
		}
	}
	ready := 0
	for _, c := range a.Status.Components {
		if c.Ready {
			ready++
		}
	}
	a.Status.Progress = fmt.Sprintf("%d/%d", ready, len(a.Status.Components))
	firstDelivery := a.Status.LastAppliedRelease == ""
	if res.Healthy && a.Status.DesiredRelease != "" && allAtRelease(a.Status.Components, a.Status.DesiredRelease) &&
		a.Status.LastAppliedRelease != a.Status.DesiredRelease {
		a.Status.LastAppliedRelease = a.Status.DesiredRelease
		now := metav1.NewTime(r.Options.now())
		a.Status.LastAppliedTime = &now
	}
	events := transitionEvents(a.Status.Conditions, res)
	if firstDelivery {
		events = withoutQuietFirstDelivery(a.Status.Conditions, events)
	}
	fluxstatus.Apply(&a.Status.Conditions, a.Generation, res)
	a.Status.ObservedGeneration = a.Generation
	return events, res.RequeueAfter, nil
}

// withoutQuietFirstDelivery drops the AvailableTrue Event of a ClusterAddon's first delivery
// when nothing went wrong on the way (it was never Degraded): a new Cluster getting its addons is
// told by its conditions and lastAppliedTime, and an Event each would be one more API write per
// Cluster (ten thousand of them for a new fleet). A first delivery that recovers from Degraded,
// and every later change, still gets its Events.
func withoutQuietFirstDelivery(prev []metav1.Condition, events []statusEvent) []statusEvent {
	if apimeta.IsStatusConditionTrue(prev, csv1.DegradedCondition) {
		return events
	}
	var out []statusEvent
	for _, e := range events {
		if e.reason != csv1.AvailableCondition+string(metav1.ConditionTrue) {
			out = append(out, e)
		}
	}
	return out
}

// judgement is the state of a component's Flux object as addonJudge read it, and
// which object and release it judged.
type judgement struct {
	fluxObject, release string
	state               fluxstatus.ObjectState
}

// componentReadiness is a component's ready and message: whether its Flux object is healthy and
// what Flux said about it; while the object does not exist, why the ClusterAddon reconciler has
// not written it (waitingFor), when it says.
func componentReadiness(c csv1.AddonComponentStatus, o fluxstatus.ObjectState) (ready bool, message string) {
	if !o.Exists && c.WaitingFor != "" {
		return false, c.WaitingFor
	}
	return o.Healthy(), o.Describe()
}

// input gathers what the ClusterAddon's conditions are computed from, and the state of each
// component's Flux object by component name.
func (r addonJudge) input(ctx context.Context, addon *csv1.ClusterAddon) (fluxstatus.Input, map[string]judgement, error) {
	in := fluxstatus.Input{
		Subject:     fmt.Sprintf("cluster %s/%s", addon.Namespace, addon.Spec.ClusterName),
		Delivered:   addon.Status.LastAppliedRelease,
		Desired:     addon.Status.DesiredRelease,
		Previous:    addon.Status.Conditions,
		Unhealthy:   addon.Status.Unhealthy,
		Now:         r.Options.now(),
		Grace:       r.Options.Grace,
		UpgradeHold: r.hold,
	}
	judged := map[string]judgement{}
	for _, t := range []string{csv1.ValuesRenderedCondition, csv1.ObjectsOwnedCondition} {
		if p := problemIfFalse(addon.Status.Conditions, t); p != nil {
			in.Invalid = p
		}
	}
	if p := problemIfFalse(addon.Status.Conditions, csv1.ReleaseReadyCondition); p != nil {
		switch p.Reason {
		case csv1.ReasonTagNotFound, csv1.ReasonStackNotFound:
			in.Invalid = p // no retry fixes it: the tag or the ClusterStack must be created
		default:
			in.Waiting = p
		}
		return in, judged, nil
	}
	if c := apimeta.FindStatusCondition(addon.Status.Conditions, csv1.WorkloadClusterReadyCondition); c == nil || c.Status != metav1.ConditionTrue {
		p := &fluxstatus.Problem{Reason: csv1.ReasonUnknown, Message: "the cluster's addons have not been reconciled yet", Since: addon.CreationTimestamp.Time}
		if c != nil {
			p = &fluxstatus.Problem{Reason: c.Reason, Message: c.Message, Since: c.LastTransitionTime.Time}
		}
		in.Waiting = p
	}
	if addon.Status.DesiredRelease == "" {
		return in, judged, nil
	}
	rel := &csv1.ClusterStackRelease{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: addon.Namespace, Name: addon.Status.DesiredRelease}, rel); err != nil {
		if apierrors.IsNotFound(err) {
			in.Waiting = &fluxstatus.Problem{Reason: csv1.ReasonReleaseNotFound, Message: "release " + addon.Status.DesiredRelease + " does not exist", Since: addon.CreationTimestamp.Time}
			return in, judged, nil
		}
		return in, nil, err
	}
	heldAndStepStarted(&in, addon)
	if t := addon.Status.DesiredReleaseTime; t != nil {
		in.DesiredSince = t.Time
	}
	// Components are judged at the release they are at: while an upgrade holds some at the
	// release they were at (addon stages), that release's versions and revision.
	releases := map[string]*csv1.ClusterStackRelease{rel.Name: rel}
	for _, c := range addon.Status.Components {
		at := c.Release
		if at == "" {
			at = rel.Name
		}
		cr, ok := releases[at]
		if !ok {
			cr = &csv1.ClusterStackRelease{}
			if err := r.Get(ctx, client.ObjectKey{Namespace: addon.Namespace, Name: at}, cr); err != nil {
				if !apierrors.IsNotFound(err) {
					return in, nil, err
				}
				cr = nil
			}
			releases[at] = cr
		}
		version, revision := "", ""
		if cr != nil {
			revision = cr.Status.Revision
			for _, rc := range cr.Status.Components {
				if rc.Name == c.Name {
					version = rc.Version
				}
			}
		}
		var st fluxstatus.ObjectState
		name := strings.TrimPrefix(strings.TrimPrefix(c.FluxObject, helmv2.HelmReleaseKind+"/"), kustomizev1.KustomizationKind+"/")
		key := client.ObjectKey{Namespace: addon.Namespace, Name: name}
		switch c.Kind {
		case csv1.ComponentKindHelm:
			o := &helmv2.HelmRelease{}
			if err := r.get(ctx, key, o); err != nil {
				if !apierrors.IsNotFound(err) {
					return in, nil, err
				}
				st = fluxstatus.Missing(helmv2.HelmReleaseKind, name, c.Name)
			} else {
				st = fluxstatus.FromHelmRelease(o, version)
			}
		default:
			o := &kustomizev1.Kustomization{}
			if err := r.get(ctx, key, o); err != nil {
				if !apierrors.IsNotFound(err) {
					return in, nil, err
				}
				st = fluxstatus.Missing(kustomizev1.KustomizationKind, name, c.Name)
			} else {
				st = fluxstatus.FromKustomization(o, revision)
			}
		}
		st.Component = c.Name
		in.Objects = append(in.Objects, st)
		judged[c.Name] = judgement{fluxObject: c.FluxObject, release: c.Release, state: st}
	}
	return in, judged, nil
}

// heldAndStepStarted reads the addon stages: while the AfterClusterUpgrade stage of the desired
// release waits for the Cluster's upgrade (its control plane, then its workers), the rollout is
// held (Progressing, never Degraded for the wait alone); once it is applied, the rollout's grace
// period counts from then.
func heldAndStepStarted(in *fluxstatus.Input, addon *csv1.ClusterAddon) {
	for _, st := range addon.Status.Stages {
		if st.Name != csv1.StageAfterClusterUpgrade || st.Release != addon.Status.DesiredRelease {
			continue
		}
		if st.Applied {
			in.StepStarted = st.LastTransitionTime.Time
		} else if len(st.Components) > 0 {
			reason := csv1.ReasonWaitingForControlPlaneUpgrade
			if st.WaitingFor == csv1.StageWaitWorkers {
				reason = csv1.ReasonWaitingForWorkersUpgrade
			}
			in.Held = &fluxstatus.Problem{Reason: reason, Message: st.Message, Since: st.LastTransitionTime.Time}
		}
	}
}

// allAtRelease is true when every component is delivered at release (none held at another).
func allAtRelease(comps []csv1.AddonComponentStatus, release string) bool {
	for _, c := range comps {
		if c.Release != release {
			return false
		}
	}
	return true
}

// ---------------------------------------------------------------------------------------------
// ClusterStackRelease

// ClusterStackReleaseStatusReconciler computes a release's conditions from its Flux objects,
// and counts the Clusters using it.
type ClusterStackReleaseStatusReconciler struct {
	client.Client
	Recorder record.EventRecorder
	Options  StatusOptions
	// Fleets counts the Clusters by release as ClusterAddons change (NewAddonFleets).
	Fleets *AddonFleets

	pace rollupPacer
}

// Reconcile recomputes one release's status.
func (r *ClusterStackReleaseStatusReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if !r.Fleets.Synced() {
		return ctrl.Result{RequeueAfter: RollupDelay}, nil // the counts would miss Clusters
	}
	if d := r.pace.wait(req.NamespacedName); d > 0 {
		return ctrl.Result{RequeueAfter: d}, nil // written a moment ago (RollupInterval)
	}
	rel := &csv1.ClusterStackRelease{}
	if err := r.Get(ctx, req.NamespacedName, rel); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	defer r.pace.track(req.NamespacedName, rel)()
	in, err := r.input(ctx, rel)
	if err != nil {
		return ctrl.Result{}, err
	}
	// The ClusterAddons wanting the release (status.desiredRelease), counted as they changed.
	counts := r.Fleets.ReleaseClusters(rel.Namespace, rel.Name)
	delivered, err := deliveredPlane(ctx, r.Client, requiresContract(rel.Status.Requirements))
	if err != nil {
		return ctrl.Result{}, err
	}
	var res fluxstatus.Result
	err = updateStatusEmit(ctx, r.Client, r.Recorder, rel, func(rel *csv1.ClusterStackRelease) (bool, []statusEvent) {
		// The conditions and records this controller wrote last, as re-read here: the cache
		// may not have had that write yet, and judging from the ones before would take it back.
		in.Previous, in.Unhealthy = rel.Status.Conditions, rel.Status.Unhealthy
		res = fluxstatus.Compute(in)
		rel.Status.Clusters = counts
		rel.Status.Unhealthy = res.Unhealthy
		events := transitionEvents(rel.Status.Conditions, res)
		fluxstatus.Apply(&rel.Status.Conditions, rel.Generation, res)
		// RequirementsMet is computed from the release's own requirements as re-read here.
		met := requirementsMetCondition(rel, delivered)
		met.ObservedGeneration = rel.Generation
		if old := apimeta.FindStatusCondition(rel.Status.Conditions, met.Type); met.Status == metav1.ConditionFalse && (old == nil || old.Status != met.Status) {
			events = append(events, warningEvent(met.Reason, met.Message))
		}
		fluxstatus.SetCondition(&rel.Status.Conditions, met)
		return true, events
	})
	return ctrl.Result{RequeueAfter: res.RequeueAfter}, err
}

// input gathers what the release's status is judged from; the conditions and records this
// controller wrote last (Previous, Unhealthy) are taken from the object re-read for the write.
func (r *ClusterStackReleaseStatusReconciler) input(ctx context.Context, rel *csv1.ClusterStackRelease) (fluxstatus.Input, error) {
	in := fluxstatus.Input{
		Subject: "release " + rel.Name,
		Desired: rel.Spec.Version,
		Now:     r.Options.now(),
		Grace:   r.Options.Grace,
	}
	in.Alert, in.Unchecked = tagProblems(rel.Status.Conditions)
	repo := &sourcev1.GitRepository{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: rel.Namespace, Name: fluxgen.GitRepositoryName(rel.Name)}, repo); err != nil {
		if !apierrors.IsNotFound(err) {
			return in, err
		}
		in.Objects = append(in.Objects, fluxstatus.Missing(sourcev1.GitRepositoryKind, fluxgen.GitRepositoryName(rel.Name), "source"))
	} else {
		st := fluxstatus.FromGitRepository(repo)
		st.Component = "source"
		in.Objects = append(in.Objects, st)
	}
	if p := problemIfFalse(rel.Status.Conditions, csv1.StackValidCondition); p != nil {
		if p.Reason == csv1.ReasonInvalidStack {
			in.Invalid = p
		} else {
			in.Waiting = p
		}
	}
	if rel.Status.ClusterClass == nil {
		if in.Waiting == nil && in.Invalid == nil {
			in.Waiting = &fluxstatus.Problem{Reason: csv1.ReasonSourceNotReady, Message: fmt.Sprintf("waiting for the stack at tag %s to be fetched", rel.Name), Since: rel.CreationTimestamp.Time}
		}
		return in, nil
	}
	cc := *rel.Status.ClusterClass
	name := fluxgen.ClusterClassObjectName(rel.Name)
	if cc.Kind == csv1.ComponentKindKustomize {
		st, err := getState(ctx, r.Client, rel.Namespace, name, &kustomizev1.Kustomization{}, func(o *kustomizev1.Kustomization) fluxstatus.ObjectState {
			return fluxstatus.FromKustomization(o, rel.Status.Revision)
		})
		if err != nil {
			return in, err
		}
		in.Objects = append(in.Objects, withComponent(st, csv1.ClusterClassComponent))
	} else {
		st, err := getState(ctx, r.Client, rel.Namespace, name, &sourcev1.HelmChart{}, func(o *sourcev1.HelmChart) fluxstatus.ObjectState {
			return fluxstatus.FromHelmChart(o, cc.Version)
		})
		if err != nil {
			return in, err
		}
		in.Objects = append(in.Objects, withComponent(st, csv1.ClusterClassComponent))
		st, err = getState(ctx, r.Client, rel.Namespace, name, &helmv2.HelmRelease{}, func(o *helmv2.HelmRelease) fluxstatus.ObjectState {
			return fluxstatus.FromHelmRelease(o, cc.Version)
		})
		if err != nil {
			return in, err
		}
		in.Objects = append(in.Objects, withComponent(st, csv1.ClusterClassComponent))
	}
	for _, c := range rel.Status.Components {
		if c.Kind != csv1.ComponentKindHelm {
			continue
		}
		st, err := getState(ctx, r.Client, rel.Namespace, fluxgen.AddonChartName(rel.Name, c.Name), &sourcev1.HelmChart{}, func(o *sourcev1.HelmChart) fluxstatus.ObjectState {
			return fluxstatus.FromHelmChart(o, c.Version)
		})
		if err != nil {
			return in, err
		}
		in.Objects = append(in.Objects, withComponent(st, c.Name))
	}
	return in, nil
}

// tagProblems reads the release's TagVerified condition: a moved tag is an alert (Degraded at
// once; the validated commit keeps being delivered), and a tag that cannot be listed (Git server
// down, credentials revoked) a check not made, Degraded once it has lasted the grace period since
// the condition turned Unknown, whether or not Flux's own fetches of the source notice it.
func tagProblems(conds []metav1.Condition) (alert, unchecked *fluxstatus.Problem) {
	c := apimeta.FindStatusCondition(conds, csv1.TagVerifiedCondition)
	if c != nil && c.Status == metav1.ConditionUnknown && c.Reason == csv1.ReasonTagListFailed {
		return nil, &fluxstatus.Problem{Reason: c.Reason, Message: c.Message, Since: c.LastTransitionTime.Time}
	}
	return problemIfFalse(conds, csv1.TagVerifiedCondition), nil
}

// problemIfFalse turns a fact condition that is False into a Problem for the status aggregation;
// nil when the condition is absent or not False.
func problemIfFalse(conds []metav1.Condition, t string) *fluxstatus.Problem {
	c := apimeta.FindStatusCondition(conds, t)
	if c == nil || c.Status != metav1.ConditionFalse {
		return nil
	}
	return &fluxstatus.Problem{Reason: c.Reason, Message: c.Message, Since: c.LastTransitionTime.Time}
}

func withComponent(s fluxstatus.ObjectState, c string) fluxstatus.ObjectState {
	s.Component = c
	return s
}

// getState reads a Flux object and maps it, or reports it missing.
func getState[T client.Object](ctx context.Context, c client.Reader, ns, name string, obj T, fn func(T) fluxstatus.ObjectState) (fluxstatus.ObjectState, error) {
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			kind := strings.TrimPrefix(fmt.Sprintf("%T", obj), "*")
			kind = kind[strings.LastIndex(kind, ".")+1:]
			return fluxstatus.Missing(kind, name, ""), nil
		}
		return fluxstatus.ObjectState{}, err
	}
	return fn(obj), nil
}

// SetupWithManager watches releases, their Flux objects and the ClusterAddons using them.
func (r *ClusterStackReleaseStatusReconciler) SetupWithManager(mgr ctrl.Manager) error {
	owner := func() handler.EventHandler {
		return handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &csv1.ClusterStackRelease{}, handler.OnlyControllerOwner())
	}
	rv := builder.WithPredicates(predicate.ResourceVersionChangedPredicate{})
	return ctrl.NewControllerManagedBy(mgr).
		For(&csv1.ClusterStackRelease{}).
		Watches(&sourcev1.GitRepository{}, owner(), rv).
		Watches(&sourcev1.HelmChart{}, owner(), rv).
		Watches(&helmv2.HelmRelease{}, owner(), rv).
		Watches(&kustomizev1.Kustomization{}, owner(), rv).
		// ClusterAddons: once the index has counted the change, after RollupDelay (coalesced).
		WatchesRawSource(r.Fleets.Source(releasesOfAddonRequest)).
		// RequirementsMet: once an operator's new version is delivered, the releases requiring
		// it become usable by themselves; so do those requiring a contract the Cluster CRD serves.
		Watches(&csv1.ManagementOperator{}, releasesOfOperator(r.Client), builder.WithPredicates(deliveredVersionChanged())).
		Watches(&apiextensionsv1.CustomResourceDefinition{}, releasesOfClusterCRD(r.Client), rv).
		Named("clusterstackrelease-status").
		Complete(r)
}

// ---------------------------------------------------------------------------------------------
// ClusterStack

// ClusterStackStatusReconciler computes a ClusterStack's conditions, available version and
// counts from its releases and the ClusterAddons of its Clusters.
type ClusterStackStatusReconciler struct {
	client.Client
	Recorder record.EventRecorder
	// Fleets sums the ClusterAddons of each stack as they change (NewAddonFleets).
	Fleets *AddonFleets

	pace rollupPacer
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
	err = updateStatusEmit(ctx, r.Client, r.Recorder, cs, func(cs *csv1.ClusterStack) (bool, []statusEvent) {
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
		return true, events
	})
	if err == nil {
		// The same recount as status.clusters, so the metrics agree with the status.
		metrics.Default.SetStack(cs.Namespace, cs.Name, rels.Items, fleet.States)
	}
	return ctrl.Result{}, err
}

// relatedObjects lists the objects generated for the stack's releases.
func (r *ClusterStackStatusReconciler) relatedObjects(ctx context.Context, cs *csv1.ClusterStack) ([]csv1.RelatedObject, error) {
	sel := client.MatchingLabels{csv1.StackLabel: fluxgen.LabelValue(cs.Name), csv1.ManagedByLabel: csv1.ManagedByValue}
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
	var charts sourcev1.HelmChartList
	if err := r.List(ctx, &charts, client.InNamespace(cs.Namespace), sel); err != nil {
		return nil, err
	}
	for i := range charts.Items {
		add(sourcev1.GroupVersion.String(), sourcev1.HelmChartKind, &charts.Items[i])
	}
	// The releases' own HelmReleases and Kustomizations, through an index that leaves out the
	// clusters' (thousands): O(releases), not O(Clusters).
	own := client.MatchingFields{releaseFluxStackIndex: fluxgen.LabelValue(cs.Name)}
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

// transitionEvents are the Events of a subject whose Available or Degraded condition changes
// status from prev to res: on transitions only, never on every reconcile. Degraded True and a
// lost Available are Warnings.
func transitionEvents(prev []metav1.Condition, res fluxstatus.Result) []statusEvent {
	var out []statusEvent
	for _, c := range []metav1.Condition{res.Available, res.Degraded} {
		old := apimeta.FindStatusCondition(prev, c.Type)
		if old != nil && old.Status == c.Status {
			continue
		}
		if old == nil && c.Status == metav1.ConditionFalse {
			// "Not degraded" at birth is no news, nor "not available yet" while the first delivery
			// runs: an Event per new Cluster would be one more API write each for a fleet of thousands.
			continue
		}
		e := normalEvent(c.Type+string(c.Status), c.Message)
		if (c.Type == csv1.DegradedCondition && c.Status == metav1.ConditionTrue) || (c.Type == csv1.AvailableCondition && c.Status == metav1.ConditionFalse && old != nil) {
			e.eventType = corev1.EventTypeWarning
		}
		out = append(out, e)
	}
	return out
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
