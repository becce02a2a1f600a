package controllers

import (
	"context"
	"fmt"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxstatus"
	"github.com/clusterstack-io/clusterstack-operator/internal/redact"
)

// ClusterStackReleaseStatusReconciler computes a release's conditions from its Flux objects,
// and counts the Clusters using it.
type ClusterStackReleaseStatusReconciler struct {
	client.Client
	Recorder record.EventRecorder
	Options  StatusOptions
	// Fleets counts the Clusters by release as ClusterAddons change (NewAddonFleets).
	Fleets *AddonFleets

	pace rollupPacer

	// writer writes the status: the manager's, shared by its reconcilers (Setup), or one of
	// this reconciler's own (SetupWithManager).
	writer *statusWriter
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
	in, providers, err := r.input(ctx, rel)
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
	var later time.Duration
	err = updateStatusEmit(ctx, r.writer, r.Recorder, rel, func(rel *csv1.ClusterStackRelease) (bool, []statusEvent) {
		was := rel.Status.DeepCopy()
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
		// ProviderObjectsReady, once the release knows what its cluster-class creates.
		if rel.Status.ClusterClass != nil {
			pr := providerObjectsReady(rel, providers)
			pr.ObservedGeneration = rel.Generation
			if old := apimeta.FindStatusCondition(rel.Status.Conditions, pr.Type); pr.Status == metav1.ConditionFalse && (old == nil || old.Status != pr.Status) {
				events = append(events, warningEvent(pr.Reason, pr.Message))
			}
			fluxstatus.SetCondition(&rel.Status.Conditions, pr)
		}
		// Only the counts changed, and a write went a moment ago: later.
		if later = r.pace.countsOnly(req.NamespacedName, counts.Total, r.Fleets.NamespaceAddons(rel.Namespace), was.Conditions, rel.Status.Conditions,
			equality.Semantic.DeepEqual(was.Unhealthy, rel.Status.Unhealthy)); later > 0 {
			rel.Status = *was
			return true, nil
		}
		return true, events
	})
	requeue := soonest(res.RequeueAfter, later)
	for _, p := range providers {
		// Their kinds are not watched: look again while one is not ready.
		if !p.Healthy() && (requeue == 0 || requeue > providerObjectRecheck) {
			requeue = providerObjectRecheck
		}
	}
	return ctrl.Result{RequeueAfter: requeue}, err
}

// waitingForStack says what a release whose stack has not been validated yet waits for, naming
// the tag and the repository: its source repo (nil when it does not exist) to fetch the tag,
// with what Flux last said of it (st, the source's state), or, once it has, the release
// controller to validate what was fetched.
func waitingForStack(rel *csv1.ClusterStackRelease, repo fluxgen.SourceObject, st fluxstatus.ObjectState) string {
	where := fmt.Sprintf("tag %s of %s", rel.Name, redact.URLs(rel.Spec.Source.Location()))
	if repo != nil && artifactOfRelease(rel, repo) {
		return fmt.Sprintf("the stack at %s is fetched (%s): waiting for it to be validated", where, repo.GetArtifact().Revision)
	}
	msg := fmt.Sprintf("waiting for the stack at %s to be fetched", where)
	if repo != nil && st.Message != "" {
		msg += fmt.Sprintf(" (%s: %s)", st.Ref(), redact.URLs(st.Message))
	}
	return msg
}

// input gathers what the release's status is judged from; the conditions and records this
// controller wrote last (Previous, Unhealthy) are taken from the object re-read for the write.
// The provider objects the release's cluster-class created are returned too (providerObjects).
func (r *ClusterStackReleaseStatusReconciler) input(ctx context.Context, rel *csv1.ClusterStackRelease) (fluxstatus.Input, []fluxstatus.ObjectState, error) {
	in := fluxstatus.Input{
		Subject:    "release " + rel.Name,
		Desired:    rel.Spec.Version,
		Now:        r.Options.now(),
		Grace:      r.Options.Grace,
		QueueGrace: r.Options.QueueGrace,
	}
	in.Alert, in.Unchecked = tagProblems(rel.Status.Conditions)
	repo := fluxgen.NewReleaseSource(rel)
	var source fluxstatus.ObjectState
	if err := r.Get(ctx, client.ObjectKey{Namespace: rel.Namespace, Name: fluxgen.GitRepositoryName(rel.Name)}, repo); err != nil {
		if !apierrors.IsNotFound(err) {
			return in, nil, err
		}
		repo = nil
		source = fluxstatus.Missing(fluxgen.SourceKind(rel), fluxgen.GitRepositoryName(rel.Name), "source")
	} else {
		source = sourceState(repo)
		source.Component = "source"
	}
	in.Objects = append(in.Objects, source)
	if p := problemIfFalse(rel.Status.Conditions, csv1.StackValidCondition); p != nil {
		if p.Reason == csv1.ReasonInvalidStack {
			in.Invalid = p
		} else {
			in.Waiting = p
		}
	}
	if rel.Status.ClusterClass == nil {
		if in.Waiting == nil && in.Invalid == nil {
			in.Waiting = &fluxstatus.Problem{Reason: csv1.ReasonSourceNotReady, Message: waitingForStack(rel, repo, source), Since: rel.CreationTimestamp.Time}
		}
		return in, nil, nil
	}
	cc := *rel.Status.ClusterClass
	name := fluxgen.ClusterClassObjectName(rel.Name)
	if cc.Kind == csv1.ComponentKindKustomize {
		st, err := getState(ctx, r.Client, rel.Namespace, name, &kustomizev1.Kustomization{}, func(o *kustomizev1.Kustomization) fluxstatus.ObjectState {
			return fluxstatus.FromKustomization(o, rel.Status.Revision)
		})
		if err != nil {
			return in, nil, err
		}
		in.Objects = append(in.Objects, withComponent(st, csv1.ClusterClassComponent))
	} else {
		st, err := chartState(ctx, r.Client, rel, name, cc)
		if err != nil {
			return in, nil, err
		}
		in.Objects = append(in.Objects, withComponent(st, csv1.ClusterClassComponent))
		st, err = getState(ctx, r.Client, rel.Namespace, name, &helmv2.HelmRelease{}, func(o *helmv2.HelmRelease) fluxstatus.ObjectState {
			vs := fluxgen.ChartVersions(cc)
			return fluxstatus.FromHelmRelease(o, vs[0], vs[1:]...)
		})
		if err != nil {
			return in, nil, err
		}
		in.Objects = append(in.Objects, withComponent(st, csv1.ClusterClassComponent))
	}
	providers, err := providerObjects(ctx, r.Client, rel)
	if err != nil {
		return in, nil, err
	}
	in.Objects = append(in.Objects, providers...)
	for _, c := range rel.Status.Components {
		if c.Kind != csv1.ComponentKindHelm {
			continue
		}
		st, err := chartState(ctx, r.Client, rel, fluxgen.AddonChartName(rel.Name, c.Name), c)
		if err != nil {
			return in, nil, err
		}
		in.Objects = append(in.Objects, withComponent(st, c.Name))
	}
	return in, providers, nil
}

// sourceState reads a release's source, a GitRepository or an OCIRepository.
func sourceState(o fluxgen.SourceObject) fluxstatus.ObjectState {
	if oci, ok := o.(*sourcev1.OCIRepository); ok {
		return fluxstatus.FromOCIRepository(oci)
	}
	return fluxstatus.FromGitRepository(o.(*sourcev1.GitRepository))
}

// chartState reads the chart source of the release's Helm component c: its HelmChart, at the
// chart version the stack declares, or for a release read from an OCI registry the chart's
// OCIRepository, at the digest the release names.
func chartState(ctx context.Context, c client.Reader, rel *csv1.ClusterStackRelease, name string, comp csv1.ReleaseComponent) (fluxstatus.ObjectState, error) {
	if rel.Spec.Source.IsOCI() {
		return getState(ctx, c, rel.Namespace, name, &sourcev1.OCIRepository{}, fluxstatus.FromOCIRepository)
	}
	return getState(ctx, c, rel.Namespace, name, &sourcev1.HelmChart{}, func(o *sourcev1.HelmChart) fluxstatus.ObjectState {
		return fluxstatus.FromHelmChart(o, comp.Version)
	})
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
	r.writer = managerStatusWriter(r.writer, mgr)
	owner := func() handler.EventHandler {
		return handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &csv1.ClusterStackRelease{}, handler.OnlyControllerOwner())
	}
	rv := builder.WithPredicates(predicate.ResourceVersionChangedPredicate{})
	return ctrl.NewControllerManagedBy(mgr).
		For(&csv1.ClusterStackRelease{}).
		Watches(&sourcev1.GitRepository{}, owner(), rv).
		Watches(&sourcev1.OCIRepository{}, owner(), rv).
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

// writeStatus records what the phases learned, in one write: StackValid with the stack's facts,
// and TagVerified. Events follow the write.
func (r *ClusterStackReleaseReconciler) writeStatus(ctx context.Context, s *releaseScope) (ctrl.Result, error) {
	if s.stackValid == nil && s.tagVerified == nil {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, updateStatusEmit(ctx, r.writer, r.Recorder, s.read, func(rel *csv1.ClusterStackRelease) (bool, []statusEvent) {
		events := s.withStackFacts(rel)
		if c := s.tagVerified; c != nil {
			c.ObservedGeneration = rel.Generation
			old := apimeta.FindStatusCondition(rel.Status.Conditions, c.Type)
			if fluxstatus.SetCondition(&rel.Status.Conditions, *c) && (old == nil || old.Status != c.Status) && c.Status == metav1.ConditionFalse {
				events = append(events, warningEvent(c.Reason, c.Message))
			}
		}
		return true, events
	})
}

// withStackFacts sets on rel what this reconcile learned of its stack (nothing when it learned
// nothing): the StackValid condition, this controller's, and from a valid stack the facts of the
// status it owns (revision, commit, versions, components); an invalid stack keeps what was
// learned from the last valid revision. It returns the Events of a change of StackValid.
func (s *releaseScope) withStackFacts(rel *csv1.ClusterStackRelease) []statusEvent {
	if s.stackValid == nil {
		return nil
	}
	var events []statusEvent
	c := *s.stackValid
	c.ObservedGeneration = rel.Generation
	old := apimeta.FindStatusCondition(rel.Status.Conditions, csv1.StackValidCondition)
	fluxstatus.SetCondition(&rel.Status.Conditions, c)
	if old == nil || old.Status != c.Status {
		e := normalEvent(c.Reason, c.Message)
		if c.Status != metav1.ConditionTrue {
			e.eventType = corev1.EventTypeWarning
		}
		events = append(events, e)
	}
	st := s.stack
	if st == nil {
		return events
	}
	rel.Status.Revision = s.repo.GetArtifact().Revision
	if commit := pinOf(fluxstatus.CommitOf(rel.Status.Revision)); commit != "" && !fluxgen.Pinned(rel) {
		rel.Status.Commit = commit
	}
	rel.Status.KubernetesVersion = st.KubernetesVersion
	rel.Status.ClusterClassName = rel.Name
	cc := releaseClusterClass(st, s.charts)
	rel.Status.ClusterClass = &cc
	rel.Status.Components = releaseComponents(rel, st, s.charts)
	rel.Status.Stages = releaseStages(st)
	rel.Status.Requirements = releaseRequirements(st)
	rel.Status.ProviderKinds = releaseProviderKinds(st)
	rel.Status.ObservedGeneration = rel.Generation
	return events
}
