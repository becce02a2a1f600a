package controllers

import (
	"context"
	"maps"
	"sync"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/client-go/tools/record"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/forge"
	"github.com/clusterstack-io/clusterstack-operator/internal/rollout"
	"github.com/clusterstack-io/clusterstack-operator/internal/updates"
	"github.com/clusterstack-io/clusterstack-operator/internal/webhooks"
)

// ClusterStackUpdatesReconciler owns a ClusterStack's status.availableUpdates,
// status.conditionalUpdates, status.rollout and UpdatesProposed condition, and (with
// spec.updates.proposals) proposes the newest update as pull requests to the fleet repository,
// wave by wave. It never writes an object Flux applies from the fleet repository: a Cluster
// moves only when a person merges the pull request and Flux applies it. Everything it decides
// comes from the API (status timestamps, Flux objects) and the forge (pull requests, branches),
// so a restart neither repeats nor skips a step.
type ClusterStackUpdatesReconciler struct {
	client.Client
	// APIReader reads the proposal token Secret (Secrets are not cached).
	APIReader client.Reader
	// Cache, the manager's cache, hands the fleet-wide reads their objects without a copy
	// (eachCached); nil: they are listed from the Client.
	Cache    crcache.Informers
	Tags     *TagLister
	Recorder record.EventRecorder
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
	// NewForge builds a forge client; nil means forge.New with ForgeLimits and ForgePolicy.
	NewForge func(provider csv1.ForgeProvider, repo forge.Repository, token string) (forge.Client, error)
	// PushRetry is how long after a refused push the operator tries again; 0 means
	// DefaultPushRetry.
	PushRetry time.Duration
	// ForgeLimits bound every forge API call and Git operation of a proposal (deadlines, sizes);
	// zero fields take forge's defaults.
	ForgeLimits forge.Limits
	// ForgePolicy says where the proposal token may be sent (the API hosts the platform
	// allows besides the fleet repository's, plain http to loopback).
	ForgePolicy forge.Policy
	// ForgeHostConcurrency bounds how many ClusterStacks talk to one forge host at once; 0 means
	// DefaultForgeHostConcurrency. A stack whose host is busy computes its updates and takes its
	// turn with the forge within seconds: a slow or hostile forge holds at most this many
	// workers, for at most its deadlines.
	ForgeHostConcurrency int
	// Differ renders the diff each proposal's description shows (upgradediff.Isolated: a worker
	// process with bounded memory and time); nil proposes without one.
	Differ Differ
	// Stacks fetches the releases' artifacts the diff is rendered from.
	Stacks *StackCache

	// Memory of this process, in LRU caches with expiry (made once, by caches). Each is only an
	// optimisation or a throttle: after a restart, or for an entry dropped from a full cache, the
	// operator asks the forge once more.
	//   - refused: per ClusterStack, when the forge last refused a push: the push is retried
	//     after pushRetry, not at every event;
	//   - identities: per forge, API URL and token (hashed), the login of the token's user;
	//   - checkouts: per ClusterStack, the heads and the proposal of its last checkout: an
	//     unchanged proposal on unchanged heads needs no clone;
	//   - lookalikes: the look-alike pull requests already reported in an Event;
	//   - declined: per ClusterStack, the releases its last forge listing showed declined, kept
	//     while the forge is busy or cannot be read.
	//   - diffs: per set of inputs (releases, artifacts, Clusters' objects), the proposal's
	//     rendered diff or why it could not be rendered.
	refused, identities, checkouts, lookalikes, declined, diffs *cache.LRUExpireCache
	// diffSlots bounds the diffs rendered at once.
	diffSlots  chan struct{}
	hosts      *hostBudget
	cachesOnce sync.Once

	// writer writes the status: the manager's, shared by its reconcilers (Setup), or one of
	// this reconciler's own (SetupWithManager).
	writer *statusWriter
}

// Bounds of the reconciler's memory.
const (
	// maxRefusedPushes bounds the number of ClusterStacks whose refused push is remembered.
	maxRefusedPushes = 4096
	// maxRemembered bounds the other caches (entries).
	maxRemembered = 4096
	// identityTTL is how long the login of a token's user is remembered.
	identityTTL = time.Hour
	// checkoutTTL is how long the outcome of a checkout is remembered.
	checkoutTTL = time.Hour
	// lookalikeTTL is how long a reported look-alike pull request is not reported again.
	lookalikeTTL = 24 * time.Hour
	// DefaultForgeHostConcurrency is ForgeHostConcurrency when not set.
	DefaultForgeHostConcurrency = 2
	// forgeBusyRetry is when a stack whose forge host was busy tries again.
	forgeBusyRetry = 5 * time.Second
)

// caches makes the reconciler's caches, with its clock, at the first call.
func (r *ClusterStackUpdatesReconciler) caches() {
	r.cachesOnce.Do(func() {
		clock := clockFunc(r.now)
		r.refused = cache.NewLRUExpireCacheWithClock(maxRefusedPushes, clock)
		r.identities = cache.NewLRUExpireCacheWithClock(maxRemembered, clock)
		r.checkouts = cache.NewLRUExpireCacheWithClock(maxRemembered, clock)
		r.lookalikes = cache.NewLRUExpireCacheWithClock(maxRemembered, clock)
		r.declined = cache.NewLRUExpireCacheWithClock(maxRemembered, clock)
		r.diffs = cache.NewLRUExpireCacheWithClock(maxRemembered, clock)
		r.diffSlots = make(chan struct{}, diffSlots)
		n := r.ForgeHostConcurrency
		if n <= 0 {
			n = DefaultForgeHostConcurrency
		}
		r.hosts = newHostBudget(n)
	})
}

// DefaultPushRetry is how long after a refused push the operator tries again, unless
// PushRetry says otherwise (--push-retry-interval).
const DefaultPushRetry = time.Minute

// pushRetry is how long after a refused push the operator tries again.
func (r *ClusterStackUpdatesReconciler) pushRetry() time.Duration {
	if r.PushRetry > 0 {
		return r.PushRetry
	}
	return DefaultPushRetry
}

// refusal is a push the forge refused: when, and what the UpdatesProposed condition says of it.
type refusal struct {
	at  time.Time
	msg string
}

// refusedPushes returns the cache of refused pushes (ClusterStack key to its refusal).
func (r *ClusterStackUpdatesReconciler) refusedPushes() *cache.LRUExpireCache {
	r.caches()
	return r.refused
}

// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=gitrepositories,verbs=get;list;watch
// +kubebuilder:rbac:groups=kustomize.toolkit.fluxcd.io,resources=kustomizations,verbs=get;list;watch

// Defaults of spec.updates.proposals.
const (
	DefaultBranchPrefix = "clusterstack"
	DefaultAuthorName   = "clusterstack-operator"
	DefaultAuthorEmail  = "clusterstack-operator@users.noreply.local"
	// proposalTokenKey is the key of the token in spec.updates.proposals.secretRef.
	proposalTokenKey = "token"
	// forgePoll is the longest the operator goes without looking at the forge while a
	// rollout runs (merges are also noticed at once when Flux's GitRepository moves).
	forgePoll = time.Minute
)

// updatesScope carries one reconcile's facts between steps.
type updatesScope struct {
	cs *csv1.ClusterStack
	// clusters of the stack (those whose ClusterClass is one of its releases), by name.
	clusters map[string]*clusterv1.Cluster
	addons   map[string]*csv1.ClusterAddon
	releases map[string]*csv1.ClusterStackRelease
	inUse    map[string]bool
	lagging  []string
	tags     []string
	tagErr   error

	fleet  *fleetSource
	client forge.Client
	// prs are the stack's own pull requests (ownPullRequests); forgeRead says they were listed.
	prs       []forge.PullRequest
	forgeRead bool
	// forgeBusy: the forge host had no room for this stack; its UpdatesProposed condition and
	// rollout are kept as they were. release gives the host's room back.
	forgeBusy bool
	release   func()

	upd    updates.Result
	target string
	plan   *rollout.Plan
	// hold is who holds the rollout (rolloutHold), nil when nobody does.
	hold *csv1.RolloutHold

	cond    metav1.Condition
	requeue time.Duration
}

func (s *updatesScope) requeueAfter(d time.Duration) {
	if d > 0 && (s.requeue == 0 || d < s.requeue) {
		s.requeue = d
	}
}

func (s *updatesScope) fail(reason, msg string) {
	s.cond = metav1.Condition{Type: csv1.UpdatesProposedCondition, Status: metav1.ConditionFalse, Reason: reason, Message: msg}
}

func (r *ClusterStackUpdatesReconciler) now() time.Time { return clockFunc(r.Now).Now() }

// Reconcile computes the stack's updates and advances its rollout: the phases in order and, once
// they all ran, the status they found. A deleted stack has nothing to propose (the stack's own
// reconciler lets it go).
func (r *ClusterStackUpdatesReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cs := &csv1.ClusterStack{}
	if err := r.Get(ctx, req.NamespacedName, cs); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !cs.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	s := &updatesScope{cs: cs, cond: metav1.Condition{Type: csv1.UpdatesProposedCondition, Status: metav1.ConditionTrue, Reason: csv1.ReasonNothingToPropose, Message: "no update to propose"}}
	defer func() {
		if s.release != nil {
			s.release()
		}
	}()
	return runPhasesThenStatus(ctx, s, statusAfterWholePass, r.writeStatus,
		r.gather,
		r.openForge,
		r.computeUpdates,
		r.rolloutHold,
		r.planRollout,
		r.propose,
		r.addonUpgrades,
		r.schedule,
	)
}

// proposals returns the stack's proposal policy, nil without one.
func proposals(cs *csv1.ClusterStack) *csv1.ProposalPolicy {
	if cs.Spec.Updates == nil {
		return nil
	}
	return cs.Spec.Updates.Proposals
}

// branchPrefix is the start of every proposal branch of the stack: <prefix>/<namespace>/<name>.
func branchPrefix(cs *csv1.ClusterStack) string {
	p := DefaultBranchPrefix
	if pp := proposals(cs); pp != nil && pp.BranchPrefix != "" {
		p = pp.BranchPrefix
	}
	return p + "/" + cs.Namespace + "/" + cs.Name
}

// SetupWithManager watches ClusterStacks (spec changes), their Clusters and ClusterAddons, their
// releases, and Flux's Kustomizations and GitRepositories (a merged pull request moves them):
// a change of a GitRepository, or of a Kustomization applying one, wakes only the proposing
// stacks applied from that GitRepository (fleetSourceIndex). Cluster and ClusterAddon events
// are coalesced over RollupDelay: a wave moves on when its Clusters are done, which a reconcile
// per Cluster change would not see sooner.
func (r *ClusterStackUpdatesReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.writer = managerStatusWriter(r.writer, mgr)
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &kustomizev1.Kustomization{}, fleetSourceIndex, kustomizationSource); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("clusterstack-updates").
		// The hold annotation changes no generation: it is watched for itself.
		For(&csv1.ClusterStack{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, holdAnnotationChanged()))).
		Watches(&csv1.ClusterStackRelease{}, handler.EnqueueRequestsFromMapFunc(stackOfReleaseObject), builder.WithPredicates(releaseLifecycleChanged())).
		Watches(&csv1.ClusterAddon{}, coalesced(handler.EnqueueRequestsFromMapFunc(stackOfAddon)), builder.WithPredicates(addonRolloutChanged())).
		Watches(&clusterv1.Cluster{}, coalesced(handler.EnqueueRequestsFromMapFunc(r.stacksInNamespace)), builder.WithPredicates(clusterWaveChanged())).
		Watches(&sourcev1.GitRepository{}, handler.EnqueueRequestsFromMapFunc(r.stacksOfFleet), builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(e event.UpdateEvent) bool { return artifactRevision(e.ObjectOld) != artifactRevision(e.ObjectNew) },
		})).
		Watches(&kustomizev1.Kustomization{}, handler.EnqueueRequestsFromMapFunc(r.stacksOfFleet), builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(e event.UpdateEvent) bool {
				return e.ObjectOld.(*kustomizev1.Kustomization).Status.LastAppliedRevision != e.ObjectNew.(*kustomizev1.Kustomization).Status.LastAppliedRevision
			},
		})).
		Complete(r)
}

func artifactRevision(o client.Object) string {
	if g, ok := o.(*sourcev1.GitRepository); ok && g.Status.Artifact != nil {
		return g.Status.Artifact.Revision
	}
	return ""
}

// stacksInNamespace maps a Cluster to the ClusterStacks of its namespace.
func (r *ClusterStackUpdatesReconciler) stacksInNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	var list csv1.ClusterStackList
	if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, cs := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&cs)})
	}
	return reqs
}

// fleetSourceIndex indexes Kustomizations by the GitRepository they apply, "namespace/name".
const fleetSourceIndex = "clusterstack.io/updates-git-source"

// kustomizationSource is the fleetSourceIndex value of a Kustomization.
func kustomizationSource(o client.Object) []string {
	ks, ok := o.(*kustomizev1.Kustomization)
	if !ok || ks.Spec.SourceRef.Kind != sourcev1.GitRepositoryKind || ks.Spec.SourceRef.Name == "" {
		return nil
	}
	ns := ks.Spec.SourceRef.Namespace
	if ns == "" {
		ns = ks.Namespace
	}
	return []string{ns + "/" + ks.Spec.SourceRef.Name}
}

// stacksOfFleet maps a GitRepository, or a Kustomization applying one, to the proposing
// ClusterStacks applied from that GitRepository: those labelled by a Kustomization that
// applies it (findFleetSource checks the label against the Kustomization's inventory; here a
// label only wakes a stack). Changes of every other Flux object wake none.
func (r *ClusterStackUpdatesReconciler) stacksOfFleet(ctx context.Context, o client.Object) []reconcile.Request {
	if o.GetLabels()[csv1.ManagedByLabel] == csv1.ManagedByValue {
		return nil // the operator's own Flux objects carry no fleet
	}
	var repo string
	switch t := o.(type) {
	case *sourcev1.GitRepository:
		repo = t.Namespace + "/" + t.Name
	case *kustomizev1.Kustomization:
		src := kustomizationSource(t)
		if len(src) == 0 {
			return nil
		}
		repo = src[0]
	default:
		return nil
	}
	var kss kustomizev1.KustomizationList
	if err := r.List(ctx, &kss, client.MatchingFields{fleetSourceIndex: repo}); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, ks := range kss.Items {
		var list csv1.ClusterStackList
		if err := r.List(ctx, &list, client.MatchingLabels{kustomizeNameLabel: ks.Name, kustomizeNamespaceLabelKey: ks.Namespace}); err != nil {
			continue
		}
		for _, cs := range list.Items {
			if proposals(&cs) != nil {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&cs)})
			}
		}
	}
	return reqs
}

// holdAnnotationChanged passes ClusterStack updates that set, change or remove the
// clusterstack.io/hold annotation.
func holdAnnotationChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, okO := e.ObjectOld.GetAnnotations()[csv1.HoldAnnotation]
		n, okN := e.ObjectNew.GetAnnotations()[csv1.HoldAnnotation]
		return okO != okN || o != n
	}}
}

// addonRolloutChanged passes ClusterAddon updates that change what the rollout reads: the
// applied release and its time, Available or Degraded.
func addonRolloutChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, okO := e.ObjectOld.(*csv1.ClusterAddon)
		n, okN := e.ObjectNew.(*csv1.ClusterAddon)
		if !okO || !okN {
			return false
		}
		status := func(a *csv1.ClusterAddon, t string) metav1.ConditionStatus {
			if c := apimeta.FindStatusCondition(a.Status.Conditions, t); c != nil {
				return c.Status
			}
			return ""
		}
		return o.Status.LastAppliedRelease != n.Status.LastAppliedRelease || o.Status.DesiredRelease != n.Status.DesiredRelease ||
			status(o, csv1.AvailableCondition) != status(n, csv1.AvailableCondition) ||
			status(o, csv1.DegradedCondition) != status(n, csv1.DegradedCondition) ||
			o.Status.ClusterStack != n.Status.ClusterStack
	}}
}

// clusterWaveChanged passes Cluster updates that change its wave (labels), its release or
// whether it is paused.
func clusterWaveChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, okO := e.ObjectOld.(*clusterv1.Cluster)
		n, okN := e.ObjectNew.(*clusterv1.Cluster)
		if !okO || !okN {
			return false
		}
		_, oc := webhooks.ClassRef(o)
		_, nc := webhooks.ClassRef(n)
		return oc != nc || !maps.Equal(o.Labels, n.Labels) || isPaused(o) != isPaused(n)
	}}
}
