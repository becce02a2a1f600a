package controllers

import (
	"context"
	"strings"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
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
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=gitrepositories;helmcharts;ocirepositories,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=helm.toolkit.fluxcd.io,resources=helmreleases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=kustomize.toolkit.fluxcd.io,resources=kustomizations,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=openstack.k-orc.cloud,resources=*,verbs=get;list;watch

// releaseScope carries one reconcile's facts between the phases.
type releaseScope struct {
	// read is the release as read, which the status write re-reads and changes.
	read *csv1.ClusterStackRelease
	// rel is the release as read, with what this reconcile learned of its stack applied to its
	// status (withStackFacts): the phases after validation act on what the write records.
	rel  *csv1.ClusterStackRelease
	repo fluxgen.SourceObject
	// stack is the stack at the tag once it is valid.
	stack *stack.Stack
	// charts are, for a release read from an OCI registry, the digests of its charts' artifacts
	// (component -> sha256:<hex>) its manifest names, once the stack is valid.
	charts map[string]string
	// stackValid is the StackValid condition learned (nil: nothing learned); tagVerified the
	// TagVerified condition to record (nil: leave it).
	stackValid, tagVerified *metav1.Condition
}

// Reconcile turns the release into its Flux objects: the deletion branch, or the phases in
// order; what they learned is written to the status once, at the end, whether they all ran or
// not.
func (r *ClusterStackReleaseReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
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
	return runPhasesThenStatus(ctx, &releaseScope{read: rel, rel: rel}, statusAlways, r.writeStatus,
		r.applySource,
		r.validate,
		r.applyObjects,
		r.verifyTag,
	)
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

// releaseClusterClass is the stack's cluster-class as the release reports it, with its chart's
// digest (charts, as releaseComponents) when it is a Helm chart read from an OCI registry.
func releaseClusterClass(st *stack.Stack, charts map[string]string) csv1.ReleaseComponent {
	cc := releaseComponent(st.ClusterClass, "")
	if st.ClusterClass.Kind == stack.KindHelm {
		cc.ChartDigest = charts[csv1.ClusterClassComponent]
	}
	return cc
}

// releaseComponents are the stack's addon components as the release reports them; charts are
// the digests of their chart artifacts for a release read from an OCI registry (component ->
// sha256:<hex>, chartDigests), nil otherwise.
func releaseComponents(rel *csv1.ClusterStackRelease, st *stack.Stack, charts map[string]string) []csv1.ReleaseComponent {
	out := make([]csv1.ReleaseComponent, 0, len(st.Components))
	for _, c := range st.Components {
		source := fluxgen.GitRepositoryName(rel.Name)
		if c.Kind == stack.KindHelm {
			source = fluxgen.AddonChartName(rel.Name, c.Name)
		}
		rc := releaseComponent(c, source)
		if c.Kind == stack.KindHelm {
			rc.ChartDigest = charts[c.Name]
		}
		out = append(out, rc)
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
		Owns(&sourcev1.OCIRepository{}, builder.WithPredicates(artifactChanged())).
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
