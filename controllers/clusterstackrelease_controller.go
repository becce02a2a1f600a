package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxstatus"
	"github.com/clusterstack-io/clusterstack-operator/internal/redact"
	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
)

// ReleaseFinalizer keeps a ClusterStackRelease (and so its Flux objects and ClusterClass) while
// any Cluster uses its ClusterClass, whoever deletes it.
const ReleaseFinalizer = "clusterstack.io/release-in-use"

// ClusterStackReleaseReconciler turns a ClusterStackRelease into its Flux objects: the
// GitRepository pinned to the tag, the objects applying the cluster-class into the management
// cluster, and the shared HelmCharts of the addon components. It records what it learned from
// the stack (versions, components) and the StackValid condition; the status aggregation
// computes the rest of the status.
type ClusterStackReleaseReconciler struct {
	client.Client
	// APIReader reads the API server directly, for the decision to let a release go.
	APIReader client.Reader
	Applier   *Applier
	Stacks    *StackCache
	// Tags checks that a pinned release's tag still points at the validated commit.
	Tags     *TagLister
	Recorder record.EventRecorder

	// writer writes the status: the manager's, shared by its reconcilers (Setup), or one of
	// this reconciler's own (SetupWithManager).
	writer *statusWriter
}

// +kubebuilder:rbac:groups=clusterstack.io,resources=clusterstackreleases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=clusterstack.io,resources=clusterstackreleases/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=clusterstack.io,resources=clusterstackreleases/finalizers,verbs=update
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=gitrepositories;helmcharts,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=helm.toolkit.fluxcd.io,resources=helmreleases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=kustomize.toolkit.fluxcd.io,resources=kustomizations,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// releaseScope carries one reconcile's facts between the phases.
type releaseScope struct {
	// rel is the release as read, with what this reconcile learned of its stack applied to its
	// status (withStackFacts): the phases after validation act on what the write records.
	rel  *csv1.ClusterStackRelease
	repo *sourcev1.GitRepository
	// stack is the stack at the tag once it is valid.
	stack *stack.Stack
	// stackValid is the StackValid condition learned (nil: nothing learned); tagVerified the
	// TagVerified condition to record (nil: leave it).
	stackValid, tagVerified *metav1.Condition
}

// Reconcile turns the release into its Flux objects: the deletion branch, or the phases in
// order; what they learned is written to the status once, at the end, whether they all ran or
// not.
func (r *ClusterStackReleaseReconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	rel := &csv1.ClusterStackRelease{}
	if err := r.Get(ctx, req.NamespacedName, rel); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !rel.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, rel)
	}
	if controllerutil.AddFinalizer(rel, ReleaseFinalizer) {
		if err := r.Update(ctx, rel); err != nil {
			return ctrl.Result{}, err
		}
	}
	s := &releaseScope{rel: rel}
	defer func() {
		if err := r.writeStatus(ctx, rel, s); err != nil && retErr == nil {
			res, retErr = ctrl.Result{}, err
		}
	}()
	return runPhases(ctx, s,
		r.applySource,
		r.validate,
		r.applyObjects,
		r.verifyTag,
	)
}

// applySource applies the release's one source, the GitRepository, and waits until Flux has
// fetched the release's tag: the GitRepository watch brings the reconcile back; the status
// aggregation reports what Flux says meanwhile.
func (r *ClusterStackReleaseReconciler) applySource(ctx context.Context, s *releaseScope) (ctrl.Result, error) {
	repo := fluxgen.GitRepository(s.rel)
	if _, err := r.Applier.Apply(ctx, s.rel, repo); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.Get(ctx, client.ObjectKeyFromObject(repo), repo); err != nil {
		return ctrl.Result{}, err
	}
	if !artifactOfRelease(s.rel, repo) {
		return ctrl.Result{}, errPhasesDone
	}
	s.repo = repo
	return ctrl.Result{}, nil
}

// validate reads the stack at the tag and checks it is the one the release names. An invalid
// stack stops the phases: nothing already delivered is touched; a new tag or revision brings
// the reconcile back. An artifact that cannot be read is an error (retried with back-off).
func (r *ClusterStackReleaseReconciler) validate(ctx context.Context, s *releaseScope) (ctrl.Result, error) {
	st, err := r.Stacks.Get(ctx, s.repo, s.rel.Spec.Source.Path)
	if err == nil {
		err = validateStack(s.rel, st)
	}
	if err != nil {
		var artErr *ArtifactError
		if errors.As(err, &artErr) {
			s.stackValid = &metav1.Condition{Type: csv1.StackValidCondition, Status: metav1.ConditionFalse, Reason: csv1.ReasonArtifactUnavailable, Message: err.Error()}
			return ctrl.Result{}, err
		}
		s.stackValid = &metav1.Condition{Type: csv1.StackValidCondition, Status: metav1.ConditionFalse, Reason: csv1.ReasonInvalidStack,
			Message: fmt.Sprintf("stack %q at tag %s is invalid: %s", s.rel.Spec.Source.Path, s.rel.Name, oneLine(err))}
		return ctrl.Result{}, errPhasesDone
	}
	s.stack = st
	s.stackValid = &metav1.Condition{Type: csv1.StackValidCondition, Status: metav1.ConditionTrue, Reason: csv1.ReasonAsExpected,
		Message: fmt.Sprintf("stack %q at %s is valid", s.rel.Spec.Source.Path, s.repo.Status.Artifact.Revision)}
	// What the status write records is what the next phases act on (the commit the release is
	// pinned to, once it is first validated).
	view := s.rel.DeepCopy()
	s.withStackFacts(view)
	s.rel = view
	return ctrl.Result{}, nil
}

// applyObjects applies, as the validation leaves the release: its source (pinned to the validated
// commit from the first validation on: in this reconcile, not in one that the objects created
// here set off and that may read the release from a cache without this reconcile's status
// write), the objects that apply the cluster-class into the management cluster, and the shared
// sources of the addon components.
func (r *ClusterStackReleaseReconciler) applyObjects(ctx context.Context, s *releaseScope) (ctrl.Result, error) {
	if _, err := r.Applier.Apply(ctx, s.rel, fluxgen.GitRepository(s.rel)); err != nil {
		return ctrl.Result{}, err
	}
	cc := releaseComponent(s.stack.ClusterClass, "")
	for _, obj := range fluxgen.ClusterClassObjects(s.rel, cc) {
		if _, err := r.Applier.Apply(ctx, s.rel, obj); err != nil {
			return ctrl.Result{}, err
		}
	}
	for _, chart := range fluxgen.AddonCharts(s.rel, releaseComponents(s.rel, s.stack)) {
		if _, err := r.Applier.Apply(ctx, s.rel, chart); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}

// artifactOfRelease is true when the GitRepository's artifact is the release's: at the
// validated commit once the release is pinned, else at the release tag.
func artifactOfRelease(rel *csv1.ClusterStackRelease, repo *sourcev1.GitRepository) bool {
	if repo.Status.Artifact == nil {
		return false
	}
	rev := repo.Status.Artifact.Revision
	if fluxgen.Pinned(rel) {
		return fluxstatus.CommitOf(rev) == "sha1:"+rel.Status.Commit
	}
	return strings.HasPrefix(rev, rel.Name+"@")
}

// verifyTag checks, every interval, that a pinned release's tag still points at the validated
// commit (tags cannot be watched). A moved tag is reported and not delivered.
func (r *ClusterStackReleaseReconciler) verifyTag(ctx context.Context, s *releaseScope) (ctrl.Result, error) {
	rel := s.rel
	if !fluxgen.Pinned(rel) || r.Tags == nil {
		// Following the tag: nothing to verify; clear a TagMoved reported before the opt-in.
		if c := apimeta.FindStatusCondition(rel.Status.Conditions, csv1.TagVerifiedCondition); c != nil && c.Status != metav1.ConditionTrue {
			s.tagVerified = &metav1.Condition{Type: csv1.TagVerifiedCondition, Status: metav1.ConditionTrue,
				Reason: csv1.ReasonAsExpected, Message: fmt.Sprintf("release %s follows its tag (followMovedTags)", rel.Name)}
		}
		return ctrl.Result{}, nil
	}
	every := fluxgen.ReleaseInterval(rel).Duration
	c := metav1.Condition{Type: csv1.TagVerifiedCondition, Status: metav1.ConditionTrue, Reason: csv1.ReasonAsExpected,
		Message: fmt.Sprintf("tag %s points at the validated commit %s", rel.Name, rel.Status.Commit)}
	sel := ReleaseTags(rel.Spec.Provider, rel.Spec.StackName, rel.Spec.KubernetesVersion)
	refs, err := r.Tags.Refs(ctx, rel.Namespace, rel.Spec.Source, sel, every)
	if err == nil && refs[rel.Name] != rel.Status.Commit {
		// The cached listing may be older than the tag (another ClusterStack of the namespace
		// listed the repository before it was pushed): only a listing that started after the
		// commit was validated can tell that the tag moved since.
		refs, err = r.Tags.RefsSince(ctx, rel.Namespace, rel.Spec.Source, sel, every, validatedSince(rel))
	}
	switch {
	case err != nil:
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, csv1.ReasonTagListFailed,
			fmt.Sprintf("cannot check where tag %s points: %s", rel.Name, redact.URLs(oneLine(err)))
	case refs[rel.Name] == "":
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, csv1.ReasonTagMoved, fmt.Sprintf(
			"tag %s was validated at commit %s and no longer exists; the release keeps delivering %s. Publish a new version and move the Clusters to it",
			rel.Name, rel.Status.Commit, rel.Status.Commit)
	case refs[rel.Name] != rel.Status.Commit:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, csv1.ReasonTagMoved, fmt.Sprintf(
			"tag %s moved from the validated commit %s to %s; the release keeps delivering %s. Publish the change as a new version, move the tag back, or set spec.followMovedTags on ClusterStack %s to deliver %s",
			rel.Name, rel.Status.Commit, refs[rel.Name], rel.Status.Commit, rel.Spec.ClusterStack, refs[rel.Name])
	}
	s.tagVerified = &c
	return requeueIn(every), nil
}

// writeStatus records what the phases learned, in one write: StackValid with the stack's facts,
// and TagVerified. Events follow the write.
func (r *ClusterStackReleaseReconciler) writeStatus(ctx context.Context, rel *csv1.ClusterStackRelease, s *releaseScope) error {
	if s.stackValid == nil && s.tagVerified == nil {
		return nil
	}
	return updateStatusEmit(ctx, r.writer, r.Recorder, rel, func(rel *csv1.ClusterStackRelease) (bool, []statusEvent) {
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

// validatedSince is the earliest start of a tag listing that can contradict the release's
// validated commit: the last transition of StackValid (the validation; a Condition's time keeps
// whole seconds, so one is added), and not before the release was created.
func validatedSince(rel *csv1.ClusterStackRelease) time.Time {
	t := rel.CreationTimestamp.Time
	if c := apimeta.FindStatusCondition(rel.Status.Conditions, csv1.StackValidCondition); c != nil && c.LastTransitionTime.After(t) {
		t = c.LastTransitionTime.Time
	}
	return t.Add(time.Second)
}

// validateStack checks that the stack at the tag is the one the release names.
func validateStack(rel *csv1.ClusterStackRelease, st *stack.Stack) error {
	var ps stack.Problems
	if st.Provider != rel.Spec.Provider || st.Name != rel.Spec.StackName {
		ps = append(ps, stack.Problem{File: st.MetadataFile, Message: fmt.Sprintf("stack is %s/%s, but the release is for %s/%s", st.Provider, st.Name, rel.Spec.Provider, rel.Spec.StackName)})
	}
	if st.KubernetesMinor != rel.Spec.KubernetesVersion {
		ps = append(ps, stack.Problem{File: st.MetadataFile, Message: fmt.Sprintf("kubernetesVersion %s is not of the release's Kubernetes minor %s", st.KubernetesVersion, rel.Spec.KubernetesVersion)})
	}
	if st.ClusterClass.Kind == stack.KindHelm && st.ClusterClass.Version != rel.Spec.Version {
		ps = append(ps, stack.Problem{File: st.ClusterClass.Path + "/Chart.yaml", Message: fmt.Sprintf("version %q does not match the release version %q", st.ClusterClass.Version, rel.Spec.Version)})
	}
	return ps.Err()
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
	rel.Status.Revision = s.repo.Status.Artifact.Revision
	if commit := strings.TrimPrefix(fluxstatus.CommitOf(rel.Status.Revision), "sha1:"); commit != "" && (rel.Status.Commit == "" || rel.Spec.FollowMovedTags) {
		rel.Status.Commit = commit
	}
	rel.Status.KubernetesVersion = st.KubernetesVersion
	rel.Status.ClusterClassName = rel.Name
	cc := releaseComponent(st.ClusterClass, "")
	rel.Status.ClusterClass = &cc
	rel.Status.Components = releaseComponents(rel, st)
	rel.Status.Stages = releaseStages(st)
	rel.Status.Requirements = releaseRequirements(st)
	rel.Status.ObservedGeneration = rel.Generation
	return events
}

func releaseComponent(c stack.Component, source string) csv1.ReleaseComponent {
	return csv1.ReleaseComponent{
		Name:      c.Name,
		Kind:      csv1.ComponentKind(c.Kind),
		Version:   c.Version,
		Digest:    c.Digest,
		Path:      c.Path,
		Namespace: c.Namespace,
		Source:    source,
	}
}

func releaseComponents(rel *csv1.ClusterStackRelease, st *stack.Stack) []csv1.ReleaseComponent {
	out := make([]csv1.ReleaseComponent, 0, len(st.Components))
	for _, c := range st.Components {
		source := fluxgen.GitRepositoryName(rel.Name)
		if c.Kind == stack.KindHelm {
			source = fluxgen.AddonChartName(rel.Name, c.Name)
		}
		out = append(out, releaseComponent(c, source))
	}
	return out
}

// releaseRequirements are the stack's `requires:` entries as the release reports them.
func releaseRequirements(st *stack.Stack) []csv1.StackRequirement {
	var out []csv1.StackRequirement
	for _, r := range st.Requirements {
		out = append(out, csv1.StackRequirement(r))
	}
	return out
}

// releaseStages are the stack's addon stages as the release reports them.
func releaseStages(st *stack.Stack) []csv1.ReleaseStage {
	if len(st.Stages) == 0 {
		return nil
	}
	out := make([]csv1.ReleaseStage, 0, len(st.Stages))
	for _, stage := range st.Stages {
		rs := csv1.ReleaseStage{Name: csv1.AddonStage(stage.Name)}
		for _, step := range stage.Steps {
			rs.Steps = append(rs.Steps, csv1.ReleaseStageStep{Component: step.Component, Action: csv1.StageAction(step.Action)})
		}
		out = append(out, rs)
	}
	return out
}

// reconcileDelete lets the release go only when no Cluster uses its ClusterClass; its Flux
// objects (and with them the ClusterClass) are garbage-collected through owner references.
func (r *ClusterStackReleaseReconciler) reconcileDelete(ctx context.Context, rel *csv1.ClusterStackRelease) (ctrl.Result, error) {
	// Decided on a live read: a cache that lags behind must never let a release in use go.
	users, err := liveUsesOfRelease(ctx, r.APIReader, rel)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(users) > 0 {
		// The watches on Clusters, ClusterAddons and Flux objects bring us back when they move off.
		log.FromContext(ctx).V(1).Info("release in use: deletion waits", "users", users)
		return ctrl.Result{}, nil
	}
	if controllerutil.RemoveFinalizer(rel, ReleaseFinalizer) {
		return ctrl.Result{}, r.Update(ctx, rel)
	}
	return ctrl.Result{}, nil
}

func oneLine(err error) string {
	return oneLineText(err.Error())
}

// oneLineText joins the lines of a message with "; ", for a condition message.
func oneLineText(s string) string {
	return strings.ReplaceAll(s, "\n", "; ")
}

// SetupWithManager wires the watches: the release, the Flux objects it owns, and the Clusters
// using its ClusterClass (for deletion).
func (r *ClusterStackReleaseReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.writer = managerStatusWriter(r.writer, mgr)
	return ctrl.NewControllerManagedBy(mgr).
		For(&csv1.ClusterStackRelease{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, deletingPredicate()))).
		Owns(&sourcev1.GitRepository{}, builder.WithPredicates(artifactChanged())).
		Owns(&sourcev1.HelmChart{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&helmv2.HelmRelease{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&kustomizev1.Kustomization{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// Who uses the release (Clusters of its class, ClusterAddons, their Flux objects): one
		// event per Cluster while a fleet converges, merged over StackReconcileDelay.
		Watches(&clusterv1.Cluster{}, coalesced(clusterClassHandler(func(_ context.Context, ns, class string) []reconcile.Request {
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: ns, Name: class}}}
		}))).
		Watches(&csv1.ClusterAddon{}, coalesced(handler.EnqueueRequestsFromMapFunc(releasesOfAddon)), builder.WithPredicates(appliedReleaseChanged())).
		Watches(&helmv2.HelmRelease{}, coalesced(handler.EnqueueRequestsFromMapFunc(releaseOfLabel)), builder.WithPredicates(releaseLabelChanged())).
		Watches(&kustomizev1.Kustomization{}, coalesced(handler.EnqueueRequestsFromMapFunc(releaseOfLabel)), builder.WithPredicates(releaseLabelChanged())).
		Named("clusterstackrelease").
		Complete(r)
}

// releasesOfAddon maps a ClusterAddon to the releases it wants and last applied.
func releasesOfAddon(_ context.Context, o client.Object) []reconcile.Request {
	a, ok := o.(*csv1.ClusterAddon)
	if !ok {
		return nil
	}
	var reqs []reconcile.Request
	for _, rel := range []string{a.Status.DesiredRelease, a.Status.LastAppliedRelease} {
		if rel != "" {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: a.Namespace, Name: rel}})
		}
	}
	return reqs
}

// releaseOfLabel maps a generated object to the release its label names.
func releaseOfLabel(_ context.Context, o client.Object) []reconcile.Request {
	l := o.GetLabels()
	if l[csv1.ManagedByLabel] != csv1.ManagedByValue || l[csv1.ReleaseLabel] == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: l[csv1.ReleaseLabel]}}}
}
