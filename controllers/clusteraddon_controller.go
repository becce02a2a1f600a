package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
	// renderTimeouts spaces the renders again of Clusters whose values render ran out of time
	// (renderBackoff).
	renderTimeouts renderBackoff
	// valuesMemo spares the values render of a Cluster whose render inputs have not changed
	// since its last one (renderMemo).
	valuesMemo renderMemo
	// awaited orders the queue: the Flux objects whose Ready a next component waits for
	// (fluxEventHandler).
	awaited awaitedObjects

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
func (r *ClusterAddonReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
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
	return runPhasesThenStatus(ctx, s, statusAlways, r.writeStatus,
		r.observeFluxObjects,
		r.checkPrerequisites,
		r.renderValues,
		r.planStages,
		r.applyFluxObjects,
		r.observeStages,
		r.pruneValues,
		ownsEverything,
	)
}

// again is when the reconcile must come back for the status: a grace period runs out, or a held
// write is due.
func (s *addonScope) again() time.Duration {
	return soonest(s.judgeAgain, s.held)
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
	// flux is what the reconcile observed of the Cluster's Flux objects (observeFluxObjects),
	// and what it wrote.
	flux *fluxObservation
	// existing are the Cluster's Flux objects by component, as listed before writing.
	existing map[string]client.Object
	// applied are the Flux objects written (or found unchanged) for the desired release, by
	// component, and appliedHashes the hash each carries (its applied-hash annotation).
	applied       map[string]client.Object
	appliedHashes map[string]string
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
	r.renderTimeouts.forget(client.ObjectKeyFromObject(addon))
	r.valuesMemo.forget(client.ObjectKeyFromObject(addon))
	r.awaited.forget(client.ObjectKeyFromObject(addon))
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
		Watches(&helmv2.HelmRelease{}, fluxEventHandler{EventHandler: handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &csv1.ClusterAddon{}), awaited: &r.awaited, pace: &r.pace, interval: r.Status.ProgressInterval}, builder.WithPredicates(predicate.Or(fluxStatusChanged(), fluxShardLabelChanged()))).
		Watches(&kustomizev1.Kustomization{}, fluxEventHandler{EventHandler: handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &csv1.ClusterAddon{}), awaited: &r.awaited, pace: &r.pace, interval: r.Status.ProgressInterval}, builder.WithPredicates(predicate.Or(fluxStatusChanged(), fluxShardLabelChanged()))).
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
