package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxstatus"
	"github.com/clusterstack-io/clusterstack-operator/internal/metrics"
	"github.com/clusterstack-io/clusterstack-operator/internal/overrides"
	"github.com/clusterstack-io/clusterstack-operator/internal/render"
	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
	"github.com/clusterstack-io/clusterstack-operator/internal/stageplan"
)

// ClusterAddonReconciler keeps, for every CAPI Cluster whose topology uses the ClusterClass of a
// ClusterStackRelease in its namespace, a ClusterAddon, the generated values ConfigMap and the
// Flux objects installing the release's addons into the workload cluster. Reconcile keys are
// Clusters (the ClusterAddon has the Cluster's name).
type ClusterAddonReconciler struct {
	client.Client
	// APIReader reads the API server directly: the kubeconfig Secret's metadata, by name.
	APIReader client.Reader
	Applier   *Applier
	Stacks    *StackCache
	Recorder  record.EventRecorder
	// AddonTimeout is the Flux timeout of the generated objects (0: fluxgen's default).
	AddonTimeout time.Duration
	// MachinePools is true when the API server serves CAPI's MachinePools: the addon stages
	// then wait for them as for MachineDeployments (see clusteraddon_workers.go).
	MachinePools bool
	// Shard is the share of the Clusters this instance serves (--watch-label-selector); nil:
	// every Cluster.
	Shard *Shard
	// Status configures how the ClusterAddon's conditions are judged (the degraded grace period).
	Status StatusOptions
	// Renders bounds the values renders running at once, in all and per namespace; nil: none.
	Renders *RenderGate
	// FluxShards are the values of a Cluster's sharding.fluxcd.io/key label that are copied onto
	// its Flux objects (--allowed-flux-shards); any other value is left out, and the objects go
	// to Flux's main shard.
	FluxShards map[string]bool

	ctrl    controller.Controller
	cache   cache.Cache
	mu      sync.Mutex
	watched map[schema.GroupVersionKind]bool
	// pace holds back status writes that only report progress (Status.ProgressInterval).
	pace progressPacer

	// writer writes the status: the manager's, shared by its reconcilers (Setup), or one of
	// this reconciler's own (SetupWithManager).
	writer *statusWriter
}

// +kubebuilder:rbac:groups=clusterstack.io,resources=clusteraddons,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=clusterstack.io,resources=clusteraddons/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=clusterstack.io,resources=clusteraddons/finalizers,verbs=update
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=machinedeployments;machinepools,verbs=get;list;watch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io;controlplane.cluster.x-k8s.io,resources=*,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch;delete

// Reconcile brings one Cluster's addons to the release its topology uses.
func (r *ClusterAddonReconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	// Another shard's Cluster (or one that moved there) is left alone, its ClusterAddon too.
	if mine, err := r.Shard.owns(ctx, r.Client, req.NamespacedName); err != nil || !mine {
		return ctrl.Result{}, err
	}
	addon := &csv1.ClusterAddon{}
	if err := r.Get(ctx, req.NamespacedName, addon); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		addon = nil
	}
	if addon != nil && !addon.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.reconcileDelete(ctx, addon)
	}

	cluster := &clusterv1.Cluster{}
	if err := r.Get(ctx, req.NamespacedName, cluster); err != nil {
		if apierrors.IsNotFound(err) {
			return r.clusterGone(ctx, req.NamespacedName, addon)
		}
		return ctrl.Result{}, err
	}
	if !cluster.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.deleteAddon(ctx, addon)
	}
	if isPaused(cluster) {
		return ctrl.Result{}, r.setPaused(ctx, addon, true)
	}
	rel, err := r.releaseOf(ctx, cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	if rel == nil {
		again, err := r.reconcileMissingRelease(ctx, cluster, addon)
		return ctrl.Result{RequeueAfter: again}, err
	}

	if addon, err = r.ensureAddon(ctx, cluster); err != nil {
		return ctrl.Result{}, err
	}
	s := &addonScope{cluster: cluster, addon: addon, release: rel, stackName: rel.Spec.ClusterStack, desired: rel.Name}
	defer func() {
		// What the phases found is recorded once, whether they all ran, one stopped (waiting,
		// refused, in conflict) or one failed.
		if err := r.recordFacts(ctx, s); err != nil && retErr == nil {
			retErr = err
		}
		if retErr != nil {
			res = ctrl.Result{}
			return
		}
		res = lowestRequeue(res, requeueIn(s.again()))
	}()
	return runPhases(ctx, s,
		r.checkPrerequisites,
		r.renderValues,
		r.planStages,
		r.applyFluxObjects,
		r.observeStages,
		r.pruneValues,
		ownsEverything,
	)
}

// ownsEverything records, once every phase ran, that every generated object is this
// ClusterAddon's (a conflict stops the phases before, ownershipConflict).
func ownsEverything(_ context.Context, s *addonScope) (ctrl.Result, error) {
	s.owned = &metav1.Condition{Type: csv1.ObjectsOwnedCondition, Status: metav1.ConditionTrue, Reason: csv1.ReasonAsExpected,
		Message: "every generated object is controlled by this ClusterAddon"}
	return ctrl.Result{}, nil
}

// again is when the reconcile must come back for the status: a grace period runs out, or a held
// write is due.
func (s *addonScope) again() time.Duration {
	return soonest(s.judgeAgain, s.held)
}

// ownershipConflict turns an object another owner holds into the ObjectsOwned fact (the
// ClusterAddon is Degraded, naming the object and its owner; nothing is taken over) and passes
// other errors on. The conflict is checked again after conflictRecheck: the other owner's
// object is not watched.
func (s *addonScope) ownershipConflict(err error) (ctrl.Result, error) {
	var c *OwnershipConflictError
	if !errors.As(err, &c) {
		return ctrl.Result{}, err
	}
	s.owned = &metav1.Condition{Type: csv1.ObjectsOwnedCondition, Status: metav1.ConditionFalse, Reason: csv1.ReasonOwnershipConflict,
		Message: fmt.Sprintf("Cluster %s: %s; rename or remove that object", s.cluster.Name, c.Error())}
	return requeueIn(conflictRecheck), errPhasesDone
}

// conflictRecheck is how often an ownership conflict is looked at again.
const conflictRecheck = time.Minute

// kubeconfigRecheck is how often a missing kubeconfig Secret is looked for (Secrets are not watched).
const kubeconfigRecheck = 10 * time.Second

// isPaused is true when CAPI's pause applies to the Cluster: spec.paused or the paused annotation.
func isPaused(c *clusterv1.Cluster) bool {
	if c.Spec.Paused != nil && *c.Spec.Paused {
		return true
	}
	_, ok := c.Annotations[clusterv1.PausedAnnotation]
	return ok
}

// setPaused records whether the Cluster is paused; while it is, this is the only write made for it.
func (r *ClusterAddonReconciler) setPaused(ctx context.Context, addon *csv1.ClusterAddon, paused bool) error {
	if addon == nil {
		return nil // a Cluster never served: nothing to say, nothing to write
	}
	c := metav1.Condition{Type: csv1.PausedCondition, Status: metav1.ConditionFalse, Reason: csv1.ReasonNotPaused, Message: "the Cluster is not paused"}
	if paused {
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, csv1.ReasonClusterPaused,
			fmt.Sprintf("Cluster %s is paused (spec.paused or the %s annotation): the operator changes nothing for it until it is resumed", addon.Spec.ClusterName, clusterv1.PausedAnnotation)
	}
	return updateStatus(ctx, r.writer, addon, func(a *csv1.ClusterAddon) {
		c.ObservedGeneration = a.Generation
		if !paused && apimeta.FindStatusCondition(a.Status.Conditions, csv1.PausedCondition) == nil {
			return // never paused: no condition to clear
		}
		fluxstatus.SetCondition(&a.Status.Conditions, c)
	})
}

// reconcileMissingRelease handles a Cluster whose ClusterClass is no release in its namespace.
// When the name is a release tag of a ClusterStack of the namespace, the release is missing (the
// ClusterStack creates it if its tag is published): the ClusterAddon waits or is Degraded, and
// nothing delivered is touched. Otherwise the Cluster uses no stack (any more).
func (r *ClusterAddonReconciler) reconcileMissingRelease(ctx context.Context, cluster *clusterv1.Cluster, addon *csv1.ClusterAddon) (time.Duration, error) {
	class := ClusterClassOf(cluster)
	key := releaseStackKey(class)
	if key == "" {
		// Not a release: nothing of ours should exist for the Cluster.
		return 0, r.deleteAddon(ctx, addon)
	}
	var stacks csv1.ClusterStackList
	if err := r.List(ctx, &stacks, client.InNamespace(cluster.Namespace)); err != nil {
		return 0, err
	}
	var cs *csv1.ClusterStack
	for i := range stacks.Items {
		if stackKey(&stacks.Items[i]) == key {
			cs = &stacks.Items[i]
		}
	}
	if cs == nil && addon == nil {
		return 0, nil // a release-shaped ClusterClass of no stack here, never served: not ours
	}
	var err error
	if addon, err = r.ensureAddon(ctx, cluster); err != nil {
		return 0, err
	}
	s := &addonScope{cluster: cluster, addon: addon, desired: class}
	cond := metav1.Condition{Type: csv1.ReleaseReadyCondition, Status: metav1.ConditionFalse, Reason: csv1.ReasonReleaseNotFound}
	if cs == nil {
		cond.Reason, cond.Message = csv1.ReasonStackNotFound, fmt.Sprintf(
			"the Cluster uses ClusterClass %s, a release of stack %s, but no ClusterStack in namespace %s delivers that stack: create one, or move the Cluster to a release of an existing ClusterStack; its addons are left as they are",
			class, key, cluster.Namespace)
	} else {
		s.stackName = cs.Name
		cond.Message = fmt.Sprintf("release %s of ClusterStack %s does not exist yet: it is created because the Cluster uses it; the addons are left as they are until then", class, cs.Name)
		for _, m := range cs.Status.MissingReleases {
			if m.Name == class {
				cond.Reason, cond.Message = m.Reason, m.Message+"; the addons are left as they are"
			}
		}
	}
	s.releaseReady = &cond
	s.rendered = &metav1.Condition{Type: csv1.ValuesRenderedCondition, Status: metav1.ConditionUnknown, Reason: cond.Reason,
		Message: fmt.Sprintf("values are rendered once release %s exists", class)}
	err = r.recordFacts(ctx, s)
	return s.again(), err
}

// addonScope carries one reconcile's facts between steps.
type addonScope struct {
	cluster *clusterv1.Cluster
	addon   *csv1.ClusterAddon
	release *csv1.ClusterStackRelease // nil when it does not exist
	// stackName and desired name the ClusterStack and the release the Cluster uses.
	stackName, desired string
	stack              *stack.Stack
	values             string

	releaseReady *metav1.Condition // ReleaseReady
	owned        *metav1.Condition // ObjectsOwned
	waiting      *metav1.Condition // WorkloadClusterReady, when not ready
	rendered     *metav1.Condition // ValuesRendered
	// components as applied (nil when the step did not get that far: keep what was recorded).
	components []csv1.AddonComponentStatus

	// controlPlane is the Cluster's control plane object as rendered (nil when it has none).
	controlPlane map[string]any
	// existing are the Cluster's Flux objects by component, as listed before writing.
	existing map[string]client.Object
	// applied are the Flux objects written (or found unchanged) for the desired release, by component.
	applied map[string]client.Object
	// plan says which components move now (nil until planStages ran: then all move).
	plan *stageplan.Plan
	// stages is status.stages as observed (valid when stagesKnown).
	stages      []csv1.AddonStageStatus
	stagesKnown bool
	// stagesBase is the last applied release the plan (and so stages) was computed from: the
	// cached status's, which may be behind the API server's.
	stagesBase string
	// judgeAgain is when the judged status changes by itself (a grace period runs out); 0: never.
	judgeAgain time.Duration
	// held is how long the status write this reconcile computed is held back (progressPacer):
	// the reconcile comes again then, to write it; 0: nothing held.
	held time.Duration
}

// releaseOf returns the ClusterStackRelease whose ClusterClass the Cluster uses, in the
// Cluster's own namespace, or nil.
func (r *ClusterAddonReconciler) releaseOf(ctx context.Context, cluster *clusterv1.Cluster) (*csv1.ClusterStackRelease, error) {
	class := ClusterClassOf(cluster)
	if class == "" {
		return nil, nil
	}
	rel := &csv1.ClusterStackRelease{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: class}, rel); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return rel, nil
}

func (r *ClusterAddonReconciler) ensureAddon(ctx context.Context, cluster *clusterv1.Cluster) (*csv1.ClusterAddon, error) {
	addon := &csv1.ClusterAddon{ObjectMeta: metav1.ObjectMeta{Name: cluster.Name, Namespace: cluster.Namespace}}
	mutate := func() error {
		if addon.Labels == nil {
			addon.Labels = map[string]string{}
		}
		addon.Labels[csv1.ManagedByLabel] = csv1.ManagedByValue
		addon.Labels[csv1.ClusterNameLabel] = cluster.Name
		addon.Spec.ClusterName = cluster.Name
		controllerutil.AddFinalizer(addon, csv1.ClusterAddonFinalizer)
		return controllerutil.SetControllerReference(cluster, addon, r.Scheme())
	}
	key := client.ObjectKeyFromObject(addon)
	err := r.Get(ctx, key, addon)
	if apierrors.IsNotFound(err) {
		if err = mutate(); err == nil {
			err = r.Create(ctx, addon)
		}
		if apierrors.IsAlreadyExists(err) {
			// Created a moment ago (by this reconciler) and not in the cache yet: read it from the
			// API server and patch what differs, instead of failing and waiting for a retry.
			err = r.APIReader.Get(ctx, key, addon)
		}
	}
	// Every reconcile but the first finds it as generated: no conversion, no diff, no write.
	if err == nil && !addonAsGenerated(addon, cluster) {
		before := addon.DeepCopy()
		if err = mutate(); err == nil {
			err = r.Patch(ctx, addon, client.MergeFrom(before))
		}
	}
	if err != nil {
		return nil, fmt.Errorf("create or update ClusterAddon %s/%s: %w", cluster.Namespace, cluster.Name, err)
	}
	return addon, nil
}

// addonAsGenerated tells whether addon already has what ensureAddon gives it for cluster.
func addonAsGenerated(addon *csv1.ClusterAddon, cluster *clusterv1.Cluster) bool {
	return addon.Labels[csv1.ManagedByLabel] == csv1.ManagedByValue && addon.Labels[csv1.ClusterNameLabel] == cluster.Name &&
		addon.Spec.ClusterName == cluster.Name && controllerutil.ContainsFinalizer(addon, csv1.ClusterAddonFinalizer) &&
		metav1.IsControlledBy(addon, cluster)
}

// checkPrerequisites: the release is ready to deliver, the control plane is initialized and the
// kubeconfig Secret exists. Until then nothing is created and the ClusterAddon says what it waits for.
func (r *ClusterAddonReconciler) checkPrerequisites(ctx context.Context, s *addonScope) (ctrl.Result, error) {
	wait := func(reason, msg string) {
		s.waiting = &metav1.Condition{Type: csv1.WorkloadClusterReadyCondition, Status: metav1.ConditionFalse, Reason: reason, Message: msg}
	}
	rel := s.release
	if c := apimeta.FindStatusCondition(rel.Status.Conditions, csv1.StackValidCondition); c == nil || c.Status != metav1.ConditionTrue || rel.Status.Revision == "" {
		why := "its stack has not been fetched and checked yet"
		if c != nil && c.Status == metav1.ConditionFalse {
			why = c.Message
		}
		from, err := r.lastAppliedRelease(ctx, s)
		if err != nil {
			return ctrl.Result{}, err
		}
		s.releaseReady = &metav1.Condition{Type: csv1.ReleaseReadyCondition, Status: metav1.ConditionFalse, Reason: csv1.ReasonWaitingForRelease,
			Message: fluxstatus.Truncate(fmt.Sprintf("waiting for release %s: %s", rel.Name, why) + upgradeHeldHint(rel, from, s.cluster))}
		return ctrl.Result{}, errPhasesDone
	}
	// A release whose requirements on the management plane (operator versions, Cluster API
	// contract) are not delivered is treated as not ready: nothing moves to it. When the release
	// the addons are at excludes every version the new one needs, that is a cycle, named so.
	if gate := requirementsGate(rel, s.addon.Status.LastAppliedRelease); gate != nil {
		from, err := r.lastAppliedRelease(ctx, s)
		if err != nil {
			return ctrl.Result{}, err
		}
		if c := cycleGate(rel, from); c != nil {
			gate = c
		}
		gate.Message = fluxstatus.Truncate(gate.Message + upgradeHeldHint(rel, from, s.cluster))
		s.releaseReady = gate
		return ctrl.Result{}, errPhasesDone
	}
	s.releaseReady = &metav1.Condition{Type: csv1.ReleaseReadyCondition, Status: metav1.ConditionTrue, Reason: csv1.ReasonAsExpected,
		Message: fmt.Sprintf("release %s of ClusterStack %s is validated at %s", rel.Name, rel.Spec.ClusterStack, rel.Status.Revision)}
	if !controlPlaneInitialized(s.cluster) {
		wait(csv1.ReasonWaitingForControlPlane, waitingForControlPlane(s.cluster))
		return ctrl.Result{}, errPhasesDone
	}
	// The kubeconfig Secret is read by name, metadata only, from the API server: the operator
	// neither lists nor watches Secrets, and never reads their data. CAPI writes it before it
	// marks the control plane initialized, so the Cluster's status change brings us here; while
	// it is missing, look again after kubeconfigRecheck. Once seen it is not read again (CAPI
	// keeps it for the Cluster's life; Flux reports it should it go): a request per reconcile of
	// every Cluster would be most of what a converged fleet costs the API server.
	if c := apimeta.FindStatusCondition(s.addon.Status.Conditions, csv1.WorkloadClusterReadyCondition); c != nil && c.Status == metav1.ConditionTrue {
		s.waiting = c.DeepCopy()
		return ctrl.Result{}, nil
	}
	// A first status held back (progressPacer) that says so counts as well.
	if len(s.addon.Status.Conditions) == 0 && r.pace.heldKubeconfigSeen(client.ObjectKeyFromObject(s.addon)) {
		s.waiting = kubeconfigPresent()
		return ctrl.Result{}, nil
	}
	secret := &metav1.PartialObjectMetadata{}
	secret.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: s.cluster.Namespace, Name: fluxgen.KubeconfigSecretName(s.cluster.Name)}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			wait(csv1.ReasonWaitingForKubeconfig, fmt.Sprintf("waiting for Secret %s", fluxgen.KubeconfigSecretName(s.cluster.Name)))
			return requeueIn(kubeconfigRecheck), errPhasesDone
		}
		return ctrl.Result{}, err
	}
	s.waiting = kubeconfigPresent()
	return ctrl.Result{}, nil
}

// kubeconfigPresent is the WorkloadClusterReady condition of a Cluster whose control plane is
// initialized and whose kubeconfig Secret exists.
func kubeconfigPresent() *metav1.Condition {
	return &metav1.Condition{Type: csv1.WorkloadClusterReadyCondition, Status: metav1.ConditionTrue, Reason: csv1.ReasonAsExpected,
		Message: "control plane initialized and kubeconfig Secret present"}
}

// waitingForControlPlane says that the Cluster's control plane is not initialized yet and, when
// Cluster API reports that it cannot build the Cluster's topology, what it said: then the wait
// is not one that passes on its own (a template CAPI's webhooks refuse, a ClusterClass it has
// not reconciled), and the Degraded this turns into after the grace period names the cause.
func waitingForControlPlane(c *clusterv1.Cluster) string {
	msg := fmt.Sprintf("waiting for the control plane of Cluster %s to be initialized", c.Name)
	if problem := topologyProblem(c); problem != "" {
		msg += "; Cluster API cannot build its topology: " + problem
	}
	return fluxstatus.Truncate(msg)
}

// topologyProblem is what Cluster API says, in the Cluster's TopologyReconciled condition, when
// that condition is False for one of the two reasons CAPI itself counts as issues (its
// reconciliation failed; the ClusterClass is not reconciled), and "" otherwise (no condition, or
// a topology that is only on its way: creating, upgrading, ...).
func topologyProblem(c *clusterv1.Cluster) string {
	cond := apimeta.FindStatusCondition(c.Status.Conditions, clusterv1.ClusterTopologyReconciledCondition)
	if cond == nil || cond.Status != metav1.ConditionFalse ||
		cond.Reason != clusterv1.ClusterTopologyReconciledFailedReason && cond.Reason != clusterv1.ClusterTopologyReconciledClusterClassNotReconciledReason {
		return ""
	}
	return fmt.Sprintf("TopologyReconciled is False (%s): %s", cond.Reason, oneLineText(strings.TrimSpace(cond.Message)))
}

func controlPlaneInitialized(c *clusterv1.Cluster) bool {
	if p := c.Status.Initialization.ControlPlaneInitialized; p != nil && *p {
		return true
	}
	cond := apimeta.FindStatusCondition(c.Status.Conditions, clusterv1.ClusterControlPlaneInitializedCondition)
	return cond != nil && cond.Status == metav1.ConditionTrue
}

// renderValues renders the release's value templates for the cluster into its ConfigMap. A
// failure leaves the ConfigMap and the Flux objects as they are.
func (r *ClusterAddonReconciler) renderValues(ctx context.Context, s *addonScope) (ctrl.Result, error) {
	repo := &sourcev1.GitRepository{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: s.release.Namespace, Name: fluxgen.GitRepositoryName(s.release.Name)}, repo); err != nil {
		return ctrl.Result{}, err
	}
	if repo.Status.Artifact == nil || fluxstatus.CommitOf(repo.Status.Artifact.Revision) != fluxstatus.CommitOf(s.release.Status.Revision) {
		s.releaseReady = &metav1.Condition{Type: csv1.ReleaseReadyCondition, Status: metav1.ConditionFalse, Reason: csv1.ReasonWaitingForRelease,
			Message: fmt.Sprintf("waiting for GitRepository %s to serve revision %s", repo.Name, s.release.Status.Revision)}
		return ctrl.Result{}, errPhasesDone
	}
	st, err := r.Stacks.Get(ctx, repo, s.release.Spec.Source.Path)
	if err != nil {
		return ctrl.Result{}, err
	}
	s.stack = st

	in, err := r.renderInput(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	s.controlPlane = in.ControlPlane
	ovs, err := r.overridesFor(ctx, s.cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	if in.Overrides, err = overrides.ToRender(ovs); err != nil {
		s.rendered = &metav1.Condition{Type: csv1.ValuesRenderedCondition, Status: metav1.ConditionFalse, Reason: csv1.ReasonOverrideFailed,
			Message: fluxstatus.Truncate(fmt.Sprintf("release %s: %s", s.release.Name, err.Error()))}
		return ctrl.Result{}, errPhasesDone
	}
	release, ok, err := r.Renders.Acquire(ctx, s.cluster.Namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !ok {
		// The namespace has its share of renders running: come back rather than wait in a worker
		// every namespace shares. Everything recorded stays as it is.
		log.FromContext(ctx).V(1).Info("render deferred: the namespace has its share of renders running", "retryAfter", renderRetry)
		return requeueIn(renderRetry), errPhasesDone
	}
	data, err := func() (map[string]string, error) {
		defer release()
		return render.Render(in, st.RenderComponents())
	}()
	if err != nil {
		var rerr *render.Error
		if errors.As(err, &rerr) {
			reason := csv1.ReasonRenderFailed
			switch {
			case rerr.Override != "":
				reason = csv1.ReasonOverrideFailed
			case errors.Is(err, render.ErrLimitExceeded):
				reason = csv1.ReasonRenderLimitExceeded
			}
			s.rendered = &metav1.Condition{Type: csv1.ValuesRenderedCondition, Status: metav1.ConditionFalse, Reason: reason,
				Message: fluxstatus.Truncate(fmt.Sprintf("release %s: %s", s.release.Name, err.Error()))}
			return ctrl.Result{}, errPhasesDone
		}
		return ctrl.Result{}, err
	}
	// One ConfigMap per release: the Flux objects switch to it in the same write as their chart
	// or source, so old charts never run with the new release's values.
	cm := &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name: fluxgen.ValuesConfigMapName(s.cluster.Name, s.release.Name), Namespace: s.cluster.Namespace,
			Labels: fluxgen.ClusterLabels(s.release.Spec.ClusterStack, s.release.Name, s.cluster.Name, ""),
		},
		Data: data,
	}
	cm.Labels[meta.LabelKeyWatch] = meta.LabelValueWatchEnabled // Flux reconciles its users at once on change
	with := ""
	if len(ovs) > 0 {
		// Which overrides the data holds, in order: the plugin's provenance and people read it.
		cm.Annotations = map[string]string{csv1.OverridesAnnotation: overrides.Names(ovs)}
		with = fmt.Sprintf(" with ClusterAddonOverrides %s", strings.ReplaceAll(overrides.Names(ovs), ",", ", "))
	}
	if _, err := r.Applier.Apply(ctx, s.addon, cm); err != nil {
		return s.ownershipConflict(err)
	}
	s.values = cm.Name
	s.rendered = &metav1.Condition{Type: csv1.ValuesRenderedCondition, Status: metav1.ConditionTrue, Reason: csv1.ReasonAsExpected,
		Message: fluxstatus.Truncate(fmt.Sprintf("values of release %s rendered into ConfigMap %s%s", s.release.Name, cm.Name, with))}
	return ctrl.Result{}, nil
}

// renderInput gathers the Cluster, its control plane and infrastructure objects as maps.
func (r *ClusterAddonReconciler) renderInput(ctx context.Context, s *addonScope) (render.Input, error) {
	clusterMap, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s.cluster)
	if err != nil {
		return render.Input{}, err
	}
	in := render.Input{
		Cluster: render.Clean(clusterMap),
		Release: render.Release{Name: s.release.Name, Version: s.release.Spec.Version, KubernetesVersion: s.release.Status.KubernetesVersion},
	}
	if in.ControlPlane, err = r.referenced(ctx, s.cluster, s.cluster.Spec.ControlPlaneRef); err != nil {
		return in, err
	}
	if in.InfraCluster, err = r.referenced(ctx, s.cluster, s.cluster.Spec.InfrastructureRef); err != nil {
		return in, err
	}
	return in, nil
}

// referenced reads an object the Cluster refers to (in the Cluster's namespace) and makes sure
// changes to objects of its kind trigger a re-render.
func (r *ClusterAddonReconciler) referenced(ctx context.Context, cluster *clusterv1.Cluster, ref clusterv1.ContractVersionedObjectReference) (map[string]any, error) {
	if ref.Name == "" || ref.Kind == "" {
		return nil, nil
	}
	mapping, err := r.RESTMapper().RESTMapping(schema.GroupKind{Group: ref.APIGroup, Kind: ref.Kind})
	if err != nil {
		return nil, fmt.Errorf("resolve %s.%s referenced by Cluster %s: %w", ref.Kind, ref.APIGroup, cluster.Name, err)
	}
	if err := r.watchKind(mapping.GroupVersionKind); err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(mapping.GroupVersionKind)
	if err := r.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: ref.Name}, u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return render.Clean(u.Object), nil
}

// watchKind starts watching objects of a referenced kind (once per kind), mapping them to the
// Cluster named by their cluster-name label or Cluster owner.
func (r *ClusterAddonReconciler) watchKind(gvk schema.GroupVersionKind) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.watched[gvk] || r.ctrl == nil {
		return nil
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := r.ctrl.Watch(source.Kind[client.Object](r.cache, u, handler.EnqueueRequestsFromMapFunc(clusterOfObject), predicate.ResourceVersionChangedPredicate{})); err != nil {
		return fmt.Errorf("watch %s: %w", gvk, err)
	}
	if r.watched == nil {
		r.watched = map[schema.GroupVersionKind]bool{}
	}
	r.watched[gvk] = true
	return nil
}

// clusterOfObject maps an object to its Cluster: by CAPI's cluster-name label, else by a Cluster owner.
func clusterOfObject(_ context.Context, o client.Object) []reconcile.Request {
	if name := o.GetLabels()[csv1.ClusterNameLabel]; name != "" {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: name}}}
	}
	for _, ref := range o.GetOwnerReferences() {
		if ref.Kind == "Cluster" {
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: ref.Name}}}
		}
	}
	return nil
}

// applyFluxObjects applies one HelmRelease or Kustomization per component the plan moves to the
// desired release (all of them, unless an upgrade holds some: see clusteraddon_stages.go), leaves
// the held ones as they are, and removes those of components the release no longer has once
// nothing holds them (Flux uninstalls or prunes them from the workload cluster).
func (r *ClusterAddonReconciler) applyFluxObjects(ctx context.Context, s *addonScope) (ctrl.Result, error) {
	comps := s.release.Status.Components
	if s.plan != nil {
		comps = s.plan.Apply
	}
	objs := fluxgen.AddonObjects(fluxgen.ClusterInput{
		Cluster: s.cluster.Name, Namespace: s.cluster.Namespace, Stack: s.release.Spec.ClusterStack,
		Release: s.release, Components: comps, Timeout: r.AddonTimeout, FluxShard: fluxShardOf(s.cluster, r.FluxShards),
	})
	want := map[string]bool{}
	written := make(map[string]csv1.AddonComponentStatus, len(comps))
	s.applied = map[string]client.Object{}
	var prev client.Object
	for i, obj := range objs {
		c := comps[i]
		kind := obj.GetObjectKind().GroupVersionKind().Kind
		want[kind+"/"+obj.GetName()] = true
		status := csv1.AddonComponentStatus{Name: c.Name, Kind: c.Kind, Release: s.release.Name, Version: c.Version, FluxObject: kind + "/" + obj.GetName()}
		// Flux orders only within a kind: a component after one of another kind is created only
		// once its predecessor is Ready.
		if prev != nil && prev.GetObjectKind().GroupVersionKind().Kind != kind {
			exists, err := r.exists(ctx, obj)
			if err != nil {
				return ctrl.Result{}, err
			}
			ready, err := r.fluxReady(ctx, prev)
			if err != nil {
				return ctrl.Result{}, err
			}
			if !exists && !ready {
				status.WaitingFor = fmt.Sprintf("waiting for %s/%s to be Ready before creating it", prev.GetObjectKind().GroupVersionKind().Kind, prev.GetName())
				written[c.Name] = status
				prev = obj
				continue
			}
		}
		replaced, err := r.removeOtherKind(ctx, s, obj, c.Name)
		if err != nil {
			return ctrl.Result{}, err
		}
		if replaced != "" {
			status.WaitingFor = fmt.Sprintf("waiting for %s, which release %s replaces with a %s, to be removed before creating it", replaced, s.release.Name, kind)
			written[c.Name] = status
			prev = obj
			continue
		}
		if _, err := r.Applier.Apply(ctx, s.addon, obj); err != nil {
			return s.ownershipConflict(err)
		}
		written[c.Name] = status
		s.applied[c.Name] = obj
		prev = obj
	}
	s.components = s.componentStatuses(written, want)
	return ctrl.Result{}, r.pruneStale(ctx, s, want)
}

// fluxShardOf is the Flux shard a Cluster's Flux objects are labelled for: the value of its
// sharding.fluxcd.io/key label when the platform allows it (allowed, --allowed-flux-shards),
// else none (Flux's main shard). The label is the tenant's input: Flux's shards may run with
// other identities or without the lockdown, and a tenant must not pick one the platform did not
// offer.
func fluxShardOf(c *clusterv1.Cluster, allowed map[string]bool) string {
	if v := c.Labels[fluxgen.FluxShardLabel]; allowed[v] {
		return v
	}
	return ""
}

// removeOtherKind deletes the cluster's Flux object of the other kind for a component whose kind
// the release changed (a Helm chart that became a kustomize directory, or the reverse; both
// objects have the same name), and names it until it is gone. Flux uninstalls or prunes what the
// old object installed before the new one applies the component: created side by side, an
// uninstall ending after the new object's apply would remove what that object had just reported
// Ready, and nothing would put it back before the next interval. "" when there is no such object.
func (r *ClusterAddonReconciler) removeOtherKind(ctx context.Context, s *addonScope, obj client.Object, component string) (string, error) {
	var other client.Object
	switch obj.(type) {
	case *helmv2.HelmRelease:
		other = &kustomizev1.Kustomization{}
	case *kustomizev1.Kustomization:
		other = &helmv2.HelmRelease{}
	default:
		return "", nil
	}
	if err := r.Get(ctx, client.ObjectKeyFromObject(obj), other); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	if !metav1.IsControlledBy(other, s.addon) || other.GetLabels()[csv1.ComponentLabel] != fluxgen.LabelValue(component) {
		return "", nil
	}
	ref, kind := kindOf(other)+"/"+other.GetName(), kindOf(obj)
	if other.GetDeletionTimestamp().IsZero() {
		uid := other.GetUID()
		if err := r.Delete(ctx, other, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
			return "", fmt.Errorf("delete %s, which release %s replaces with a %s: %w", ref, s.release.Name, kind, err)
		}
		r.Recorder.Eventf(s.addon, corev1.EventTypeNormal, "ComponentReplaced",
			"%s is removed from Cluster %s before %s/%s replaces it: release %s delivers component %s as a %s",
			ref, s.cluster.Name, kind, obj.GetName(), s.release.Name, component, kind)
	}
	return ref, nil
}

// pruneValues deletes the cluster's values ConfigMaps of other releases. It runs only after
// applyFluxObjects succeeded: then every Flux object of the cluster that exists refers to the
// desired release's ConfigMap (objects of components the release dropped, or renamed, were
// deleted; a component gated on its predecessor has no object yet), except the objects an
// upgrade holds at their release, whose ConfigMaps are kept. It waits until Flux has acted on
// what was written (valuesInUse).
func (r *ClusterAddonReconciler) pruneValues(ctx context.Context, s *addonScope) (ctrl.Result, error) {
	if inUse, err := r.valuesInUse(ctx, s); err != nil || inUse != "" {
		if inUse != "" {
			log.FromContext(ctx).V(1).Info("values ConfigMaps of other releases kept until Flux acts on the current spec", "fluxObject", inUse)
		}
		return ctrl.Result{}, err
	}
	var cms corev1.ConfigMapList
	if err := r.List(ctx, &cms, client.InNamespace(s.addon.Namespace),
		client.MatchingFields{generatedClusterIndex: fluxgen.LabelValue(s.addon.Spec.ClusterName)}); err != nil {
		return ctrl.Result{}, err
	}
	keep := map[string]bool{s.values: true}
	if s.plan != nil {
		for _, rel := range s.plan.Hold {
			keep[fluxgen.ValuesConfigMapName(s.cluster.Name, rel)] = true // a held object's values
		}
	}
	for i := range cms.Items {
		cm := &cms.Items[i]
		if keep[cm.Name] || !metav1.IsControlledBy(cm, s.addon) || !cm.DeletionTimestamp.IsZero() {
			continue
		}
		if err := r.Delete(ctx, cm, client.Preconditions{UID: &cm.UID}); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("delete values ConfigMap %s no Flux object uses: %w", cm.Name, err)
		}
		log.FromContext(ctx).V(1).Info("values ConfigMap of another release removed", "configMap", cm.Name)
	}
	return ctrl.Result{}, nil
}

// valuesInUse names a Flux object of the cluster whose controller has not observed its current
// generation yet (written by this reconcile when the cache has not seen the write), or "" when
// there is none. Such an object may still be reconciled from the spec before: Flux controllers
// act on the spec they have cached, and helm-controller, woken at once by the deletion of a
// values ConfigMap it watches, would read a HelmRelease whose switch to the new release's
// ConfigMap it has not seen yet, and fail with "ConfigMap not found" (Ready False until it sees
// the new spec). The ConfigMaps of other releases go once Flux has acted on every current spec:
// that status change brings the reconcile back. Objects being deleted are not counted (an
// uninstall or prune does not read values).
func (r *ClusterAddonReconciler) valuesInUse(ctx context.Context, s *addonScope) (string, error) {
	objs, err := r.ownedFluxObjects(ctx, s.addon)
	if err != nil {
		return "", err
	}
	written := map[string]client.Object{}
	for _, o := range s.applied {
		written[kindOf(o)+"/"+o.GetName()] = o
	}
	for _, o := range objs {
		if !o.GetDeletionTimestamp().IsZero() {
			continue
		}
		ref := kindOf(o) + "/" + o.GetName()
		if w, ok := written[ref]; ok {
			atWrittenGeneration(o, w)
		}
		if observedGeneration(o) < o.GetGeneration() {
			return ref, nil
		}
	}
	return "", nil
}

// observedGeneration is the generation a HelmRelease's or Kustomization's controller last acted
// on (status.observedGeneration).
func observedGeneration(o client.Object) int64 {
	switch t := o.(type) {
	case *helmv2.HelmRelease:
		return t.Status.ObservedGeneration
	case *kustomizev1.Kustomization:
		return t.Status.ObservedGeneration
	}
	return o.GetGeneration()
}

// exists reads the object through the typed cache the controller already keeps for its kind
// (a metadata-only read would start a second informer for the same objects).
func (r *ClusterAddonReconciler) exists(ctx context.Context, obj client.Object) (bool, error) {
	cur := obj.DeepCopyObject().(client.Object)
	err := r.Get(ctx, client.ObjectKeyFromObject(obj), cur)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// fluxReady tells whether the Flux object obj (a HelmRelease or Kustomization the reconcile is
// about to order another kind after) is Ready for its current spec: Ready, at the generation
// Flux observed, and that generation not older than this reconcile's write of obj (obj's
// generation, when it wrote it) should the cache not have seen that write yet.
func (r *ClusterAddonReconciler) fluxReady(ctx context.Context, obj client.Object) (bool, error) {
	var st fluxstatus.ObjectState
	switch o := obj.(type) {
	case *helmv2.HelmRelease:
		cur := &helmv2.HelmRelease{}
		if err := r.Get(ctx, client.ObjectKeyFromObject(o), cur); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		atWrittenGeneration(cur, obj)
		st = fluxstatus.FromHelmRelease(cur, "")
	case *kustomizev1.Kustomization:
		cur := &kustomizev1.Kustomization{}
		if err := r.Get(ctx, client.ObjectKeyFromObject(o), cur); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		atWrittenGeneration(cur, obj)
		st = fluxstatus.FromKustomization(cur, "")
	default:
		return false, nil
	}
	return st.Ready == metav1.ConditionTrue && st.Current, nil
}

// pruneStale deletes the cluster's Flux objects that no component of the release wants, and
// those of the components a delete step of the release's BeforeClusterUpgrade stage removes
// during an upgrade (the plan's Remove), as fluxgen.PruneDecision decides.
func (r *ClusterAddonReconciler) pruneStale(ctx context.Context, s *addonScope, want map[string]bool) error {
	objs, err := r.ownedFluxObjects(ctx, s.addon)
	if err != nil {
		return err
	}
	in := fluxgen.PruneInput{Cluster: s.cluster.Name, Want: want, Components: s.release.Status.Components}
	if s.plan != nil {
		in.Removing = s.plan.Remove
	}
	existing := make([]fluxgen.ExistingObject, len(objs))
	for i, o := range objs {
		existing[i] = fluxgen.ExistingObject{Kind: o.GetObjectKind().GroupVersionKind().Kind, Name: o.GetName(), Component: o.GetLabels()[csv1.ComponentLabel]}
	}
	for i, action := range fluxgen.PruneDecision(in, existing) {
		o := objs[i]
		switch action {
		case fluxgen.PruneKeep:
		case fluxgen.PruneForStage:
			if err := r.removeForStage(ctx, s, o); err != nil {
				return err
			}
		case fluxgen.PruneSuspendThenDelete:
			if err := r.suspend(ctx, o); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("suspend renamed %s before deleting it: %w", o.GetName(), err)
			}
			if err := r.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("delete renamed %s: %w", o.GetName(), err)
			}
		case fluxgen.PruneDelete:
			if err := r.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("delete %s no longer in release %s: %w", o.GetName(), s.release.Name, err)
			}
			r.Recorder.Eventf(s.addon, corev1.EventTypeNormal, "ComponentRemoved", "%s is not part of release %s: removed from the cluster", o.GetName(), s.release.Name)
		}
	}
	return nil
}

// ownedFluxObjects lists the HelmReleases and Kustomizations the ClusterAddon controls, with
// their kinds set.
func (r *ClusterAddonReconciler) ownedFluxObjects(ctx context.Context, addon *csv1.ClusterAddon) ([]client.Object, error) {
	sel := client.MatchingFields{generatedClusterIndex: fluxgen.LabelValue(addon.Spec.ClusterName)}
	var hrs helmv2.HelmReleaseList
	if err := r.List(ctx, &hrs, client.InNamespace(addon.Namespace), sel); err != nil {
		return nil, err
	}
	var kss kustomizev1.KustomizationList
	if err := r.List(ctx, &kss, client.InNamespace(addon.Namespace), sel); err != nil {
		return nil, err
	}
	var out []client.Object
	for i := range hrs.Items {
		if o := &hrs.Items[i]; metav1.IsControlledBy(o, addon) {
			o.SetGroupVersionKind(helmv2.GroupVersion.WithKind(helmv2.HelmReleaseKind))
			out = append(out, o)
		}
	}
	for i := range kss.Items {
		if o := &kss.Items[i]; metav1.IsControlledBy(o, addon) {
			o.SetGroupVersionKind(kustomizev1.GroupVersion.WithKind(kustomizev1.KustomizationKind))
			out = append(out, o)
		}
	}
	return out, nil
}

// recordFacts writes the ClusterAddon's status in one write (docs/status-ownership.md): what this
// reconcile found (the stack and desired release, the ReleaseReady, WorkloadClusterReady,
// ValuesRendered, ObjectsOwned and Paused conditions, the values ConfigMap, the stages, which
// components are listed with what is delivered of each) and, judged from those facts and the
// Flux objects (addonJudge), the components' readiness, the last applied release and the
// aggregated conditions. It sets s.judgeAgain to when the judgement changes by itself (a grace
// period running out).
func (r *ClusterAddonReconciler) recordFacts(ctx context.Context, s *addonScope) error {
	renderFailed := false // a new render failure is recorded (counted once written)
	var judgeErr error
	judge := addonJudge{Reader: r.Client, Options: r.Status, applied: map[client.ObjectKey]client.Object{}}
	for _, o := range s.applied {
		judge.applied[client.ObjectKeyFromObject(o)] = o
	}
	key := client.ObjectKeyFromObject(s.addon)
	err := updateStatusEmit(ctx, r.writer, r.Recorder, s.addon, func(a *csv1.ClusterAddon) (bool, []statusEvent) {
		var events []statusEvent
		renderFailed, judgeErr, s.judgeAgain, s.held = false, nil, 0, 0
		stored := a.Status.DeepCopy()
		if s.stackName != "" {
			a.Status.ClusterStack = s.stackName
		}
		if a.Status.DesiredRelease != s.desired {
			a.Status.DesiredRelease = s.desired
			now := metav1.NewTime(r.Status.now())
			a.Status.DesiredReleaseTime = &now
		}
		if c := apimeta.FindStatusCondition(a.Status.Conditions, csv1.PausedCondition); c != nil && c.Status == metav1.ConditionTrue {
			fluxstatus.SetCondition(&a.Status.Conditions, metav1.Condition{Type: csv1.PausedCondition, Status: metav1.ConditionFalse,
				Reason: csv1.ReasonNotPaused, Message: "the Cluster is not paused", ObservedGeneration: a.Generation})
		}
		for _, c := range []*metav1.Condition{s.releaseReady, s.owned, s.waiting} {
			if c != nil {
				c.ObservedGeneration = a.Generation
				fluxstatus.SetCondition(&a.Status.Conditions, *c)
			}
		}
		if s.rendered != nil {
			s.rendered.ObservedGeneration = a.Generation
			if fluxstatus.SetCondition(&a.Status.Conditions, *s.rendered) && s.rendered.Status == metav1.ConditionFalse {
				renderFailed = true
				events = append(events, warningEvent(s.rendered.Reason, s.rendered.Message))
			}
		}
		if s.values != "" {
			a.Status.ValuesConfigMap = s.values
		}
		if s.components != nil {
			a.Status.Components = mergeComponents(a.Status.Components, s.components)
		}
		if stages, ok := s.stagesFor(a.Status); ok {
			if skipped := stageSkipped(a.Status.Stages, stages); skipped != nil {
				events = append(events, skipEvent(s.cluster, skipped))
			}
			a.Status.Stages = stages
		}
		judge.hold = upgradeHold(s, a.Status.Stages)
		appliedBefore := a.Status.LastAppliedRelease
		judged, again, err := judge.judge(ctx, a)
		if err != nil {
			judgeErr = err // the facts are written; the judgement is tried again
			return true, events
		}
		s.judgeAgain = again
		if a.Status.LastAppliedRelease != appliedBefore {
			// The release is delivered: its addon stages are over (stageplan plans none once the
			// applied release is the target), in this write rather than one more.
			a.Status.Stages = nil
		}
		if !equality.Semantic.DeepEqual(stored, &a.Status) {
			if s.held = r.pace.hold(key, r.Status.ProgressInterval, stored, &a.Status); s.held > 0 {
				a.Status = *stored // written when the interval is over, or with the next change that may not wait
				return true, nil
			}
		}
		return true, append(events, judged...)
	})
	if err == nil && s.held == 0 {
		r.pace.done(key)
	}
	if err == nil && renderFailed {
		metrics.Default.RenderFailed(s.cluster.Namespace, s.stackName, s.desired)
	}
	if err == nil && judgeErr != nil {
		err = fmt.Errorf("judge the status of ClusterAddon %s/%s: %w", s.addon.Namespace, s.addon.Name, judgeErr)
	}
	return err
}

// stagesFor returns the stages to write over cur, the API server's status: those observed this
// reconcile, unless they were planned from a last applied release cur no longer has. A delivery
// this process wrote (which ends the stages) that the cache had not seen yet would otherwise be
// followed by a write of the stages planned before it, and one more to end them again. ok is
// false when cur's stages stand.
func (s *addonScope) stagesFor(cur csv1.ClusterAddonStatus) (stages []csv1.AddonStageStatus, ok bool) {
	if !s.stagesKnown || cur.LastAppliedRelease != s.stagesBase {
		return nil, false
	}
	return s.stages, true
}

// mergeComponents is the components list as the ClusterAddon reconciler writes it: the
// components of want, in its order, with the delivery fields (name, kind, release, version,
// fluxObject, waitingFor) from want and the judged ones (ready, message) kept from the entry of
// the same name in cur. A component new to the list has no readiness
// yet; addonJudge, in the same write, judges it.
func mergeComponents(cur, want []csv1.AddonComponentStatus) []csv1.AddonComponentStatus {
	old := make(map[string]csv1.AddonComponentStatus, len(cur))
	for _, c := range cur {
		old[c.Name] = c
	}
	out := make([]csv1.AddonComponentStatus, len(want))
	for i, c := range want {
		o := old[c.Name]
		c.Ready, c.Message = o.Ready, o.Message
		c.WaitingFor = fluxstatus.Truncate(c.WaitingFor)
		out[i] = c
	}
	return out
}

// clusterGone deletes the ClusterAddon of a Cluster the cache no longer holds, once the API
// server confirms that the Cluster is gone: a cache that lags behind (a Cluster just created, an
// instance just started) must never cost a Cluster its addons.
func (r *ClusterAddonReconciler) clusterGone(ctx context.Context, key client.ObjectKey, addon *csv1.ClusterAddon) (ctrl.Result, error) {
	if addon == nil {
		return ctrl.Result{}, nil
	}
	if r.APIReader != nil {
		err := r.APIReader.Get(ctx, key, &clusterv1.Cluster{})
		if err == nil {
			return ctrl.Result{RequeueAfter: time.Second}, nil // the cache catches up; its event requeues too
		}
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("confirm that Cluster %s is gone: %w", key, err)
		}
	}
	return ctrl.Result{}, r.deleteAddon(ctx, addon)
}

// deleteAddon deletes the ClusterAddon of a Cluster that no longer uses a stack or is going away.
func (r *ClusterAddonReconciler) deleteAddon(ctx context.Context, addon *csv1.ClusterAddon) error {
	if addon == nil {
		return nil
	}
	if err := r.Delete(ctx, addon); client.IgnoreNotFound(err) != nil {
		return err
	}
	return nil
}

// reconcileDelete suspends the cluster's Flux objects, so that Flux does not try to uninstall
// from a workload cluster that may be gone or unreachable, deletes them and the ConfigMap, and
// lets the ClusterAddon go.
func (r *ClusterAddonReconciler) reconcileDelete(ctx context.Context, addon *csv1.ClusterAddon) error {
	r.pace.done(client.ObjectKeyFromObject(addon))
	objs, err := r.ownedFluxObjects(ctx, addon)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if err := r.suspend(ctx, o); client.IgnoreNotFound(err) != nil {
			return err
		}
		if err := r.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	log.FromContext(ctx).V(1).Info("cluster addon objects suspended and deleted", "count", len(objs))
	if controllerutil.RemoveFinalizer(addon, csv1.ClusterAddonFinalizer) {
		return client.IgnoreNotFound(r.Update(ctx, addon))
	}
	return nil
}

// suspend sets spec.suspend on a HelmRelease or Kustomization: Flux then deletes it without
// uninstalling from, or pruning in, the workload cluster.
func (r *ClusterAddonReconciler) suspend(ctx context.Context, o client.Object) error {
	return suspendFlux(ctx, r.Client, o)
}

// suspendFlux sets spec.suspend on a HelmRelease or Kustomization (other kinds are left alone):
// Flux then deletes it without uninstalling or pruning what it applied.
func suspendFlux(ctx context.Context, c client.Client, o client.Object) error {
	patch := client.MergeFrom(o.DeepCopyObject().(client.Object))
	switch t := o.(type) {
	case *helmv2.HelmRelease:
		if t.Spec.Suspend {
			return nil
		}
		t.Spec.Suspend = true
	case *kustomizev1.Kustomization:
		if t.Spec.Suspend {
			return nil
		}
		t.Spec.Suspend = true
	default:
		return nil
	}
	return c.Patch(ctx, o, patch)
}

// SetupWithManager wires the watches.
func (r *ClusterAddonReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.writer = managerStatusWriter(r.writer, mgr)
	r.cache = mgr.GetCache()
	if err := r.setupOverrides(mgr); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&clusterv1.Cluster{}, builder.WithPredicates(clusterInputChanged(), r.Shard.predicate())).
		// A change of the applied release ends the addon stages of an upgrade (status.stages).
		// Its creation passes only with a status: this reconciler created it and went on (createdWithStatus).
		Owns(&csv1.ClusterAddon{}, builder.WithPredicates(predicate.Funcs{CreateFunc: createdWithStatus},
			predicate.Or(predicate.GenerationChangedPredicate{}, deletingPredicate(), appliedReleaseChanged()))).
		// A ClusterAddon nobody owns (made by hand) is looked at too: without a Cluster of its
		// name in its namespace it is removed, and it never reaches another namespace.
		Watches(&csv1.ClusterAddon{}, handler.EnqueueRequestsFromMapFunc(unownedAddon)).
		Watches(&csv1.ClusterStackRelease{}, handler.EnqueueRequestsFromMapFunc(r.clustersOfRelease), builder.WithPredicates(predicate.Or(releaseFactsChanged(), requirementsMetChanged()))).
		Watches(&helmv2.HelmRelease{}, handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &csv1.ClusterAddon{}), builder.WithPredicates(predicate.Or(fluxStatusChanged(), fluxShardLabelChanged()))).
		Watches(&kustomizev1.Kustomization{}, handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &csv1.ClusterAddon{}), builder.WithPredicates(predicate.Or(fluxStatusChanged(), fluxShardLabelChanged()))).
		// A values ConfigMap whose data, labels or annotations someone edited is applied again
		// (the cache keeps a digest of its data: stripConfigMapData).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &csv1.ClusterAddon{}), builder.WithPredicates(configMapEdited())).
		Watches(&sourcev1.GitRepository{}, handler.EnqueueRequestsFromMapFunc(r.clustersOfRepository), builder.WithPredicates(artifactChanged())).
		Watches(&csv1.ClusterStack{}, handler.EnqueueRequestsFromMapFunc(r.clustersOfStack), builder.WithPredicates(missingReleasesChanged())).
		// A ClusterAddonOverride re-renders the Clusters it selects, before and after a change.
		Watches(&csv1.ClusterAddonOverride{}, r.overrideHandler()).
		// The AfterClusterUpgrade stage waits for the workers' rollout (addon stages).
		Watches(&clusterv1.MachineDeployment{}, handler.EnqueueRequestsFromMapFunc(clusterOfObject), builder.WithPredicates(workerFactsChanged()))
	if r.MachinePools {
		b = b.Watches(&clusterv1.MachinePool{}, handler.EnqueueRequestsFromMapFunc(clusterOfObject), builder.WithPredicates(workerFactsChanged()))
	}
	c, err := b.Named("clusteraddon").Build(r)
	if err != nil {
		return err
	}
	r.ctrl = c
	return nil
}

// unownedAddon maps a ClusterAddon without a controller owner to the Cluster of its name.
func unownedAddon(_ context.Context, o client.Object) []reconcile.Request {
	if metav1.GetControllerOf(o) != nil {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(o)}}
}

// clustersOfRelease maps a release to the Clusters using its ClusterClass.
func (r *ClusterAddonReconciler) clustersOfRelease(ctx context.Context, o client.Object) []reconcile.Request {
	clusters, err := clustersUsing(ctx, r.Client, o.GetNamespace(), o.GetName())
	if err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(clusters))
	for _, c := range clusters {
		if r.Shard.selects(&c) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&c)})
		}
	}
	return reqs
}

// clustersOfStack maps a ClusterStack to the Clusters of its namespace whose ClusterClass would
// be one of its releases (those on a missing release learn from its status why).
func (r *ClusterAddonReconciler) clustersOfStack(ctx context.Context, o client.Object) []reconcile.Request {
	cs, ok := o.(*csv1.ClusterStack)
	if !ok {
		return nil
	}
	var list clusterv1.ClusterList
	if err := r.List(ctx, &list, client.InNamespace(cs.Namespace), client.MatchingFields{clusterStackKeyIndex: stackKey(cs)}); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		if r.Shard.selects(&list.Items[i]) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}

// missingReleasesChanged passes ClusterStack creations and changes of its missing releases.
func missingReleasesChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*csv1.ClusterStack)
		n, ok2 := e.ObjectNew.(*csv1.ClusterStack)
		return !ok1 || !ok2 || !equality.Semantic.DeepEqual(o.Status.MissingReleases, n.Status.MissingReleases)
	}}
}

// clustersOfRepository maps a release's GitRepository (controlled by the release) to its Clusters.
func (r *ClusterAddonReconciler) clustersOfRepository(ctx context.Context, o client.Object) []reconcile.Request {
	owner := metav1.GetControllerOf(o)
	if o.GetLabels()[csv1.ManagedByLabel] != csv1.ManagedByValue || owner == nil || owner.Kind != "ClusterStackRelease" {
		return nil
	}
	rel := &csv1.ClusterStackRelease{}
	rel.Namespace, rel.Name = o.GetNamespace(), owner.Name
	return r.clustersOfRelease(ctx, rel)
}
