package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
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
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/forge"
	"github.com/clusterstack-io/clusterstack-operator/internal/redact"
	"github.com/clusterstack-io/clusterstack-operator/internal/releasename"
	"github.com/clusterstack-io/clusterstack-operator/internal/rollout"
	"github.com/clusterstack-io/clusterstack-operator/internal/updates"
	"github.com/clusterstack-io/clusterstack-operator/internal/webhooks"
	"github.com/clusterstack-io/clusterstack-operator/internal/window"
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
func (r *ClusterStackUpdatesReconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
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
	defer func() {
		// The status says what a whole pass found: after an error the reconcile is retried, and
		// the status stays as the last whole pass left it.
		if retErr == nil {
			if err := r.writeStatus(ctx, s); err != nil {
				res, retErr = ctrl.Result{}, err
			}
		}
	}()
	return runPhases(ctx, s,
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

// schedule is when the stack is looked at again: the soonest any phase asked for, its interval,
// and while a rollout proposes through a forge, the forge's poll.
func (r *ClusterStackUpdatesReconciler) schedule(_ context.Context, s *updatesScope) (ctrl.Result, error) {
	if s.fleet != nil && s.target != "" {
		s.requeueAfter(min(interval(s.cs), forgePoll))
	}
	s.requeueAfter(interval(s.cs))
	return requeueIn(s.requeue), nil
}

// gather reads the stack's Clusters, their ClusterAddons, its releases and the published tags.
func (r *ClusterStackUpdatesReconciler) gather(ctx context.Context, s *updatesScope) (ctrl.Result, error) {
	cs := s.cs
	s.clusters, s.addons, s.releases, s.inUse = map[string]*clusterv1.Cluster{}, map[string]*csv1.ClusterAddon{}, map[string]*csv1.ClusterStackRelease{}, map[string]bool{}
	// The namespace's Clusters and ClusterAddons are the cache's own objects (eachCached), without
	// a copy of each (at 10,000 Clusters a copy of both was 35 MB per reconcile, while a fleet
	// converges every 2 s): nothing changes them here, and a ClusterAddon whose status is
	// written is copied first (addonUpgrades).
	major, minor, _ := strings.Cut(cs.Spec.KubernetesVersion, ".")
	if err := eachCached(ctx, r.Cache, r.Client, &clusterv1.ClusterList{}, cs.Namespace, "", "", func(c *clusterv1.Cluster) {
		ns, class := webhooks.ClassRef(c)
		rel, err := releasename.Parse(class)
		if ns != cs.Namespace || err != nil || rel.Provider != cs.Spec.Provider || rel.Name != cs.Spec.Name {
			return
		}
		if rel.KubernetesMinor() != cs.Spec.KubernetesVersion {
			if lagsBehind(rel, major, minor) {
				s.lagging = append(s.lagging, c.Name)
			}
			return
		}
		s.clusters[c.Name] = c
		s.inUse[class] = true
	}); err != nil {
		return ctrl.Result{}, err
	}
	if err := eachCached(ctx, r.Cache, r.Client, &csv1.ClusterAddonList{}, cs.Namespace, "", "", func(a *csv1.ClusterAddon) {
		if _, ok := s.clusters[a.Spec.ClusterName]; ok {
			s.addons[a.Spec.ClusterName] = a
		}
	}); err != nil {
		return ctrl.Result{}, err
	}
	var rels csv1.ClusterStackReleaseList
	if err := r.List(ctx, &rels, client.InNamespace(cs.Namespace), client.MatchingFields{releaseStackIndex: cs.Name}); err != nil {
		return ctrl.Result{}, err
	}
	for i := range rels.Items {
		s.releases[rels.Items[i].Name] = &rels.Items[i]
	}
	s.tags, s.tagErr = r.Tags.Tags(ctx, cs.Namespace, cs.Spec.Source, StackTags(cs), interval(cs))
	return ctrl.Result{}, nil
}

// lagsBehind reports whether rel's Kubernetes minor is more than one below major.minor.
func lagsBehind(rel releasename.Release, major, minor string) bool {
	var ma, mi int
	if _, err := fmt.Sscanf(major+" "+minor, "%d %d", &ma, &mi); err != nil {
		return false
	}
	return rel.Major == ma && rel.Minor < mi-1
}

// openForge finds the fleet repository, takes a turn with its forge host, and lists the
// stack's own pull requests, when proposals are asked for.
func (r *ClusterStackUpdatesReconciler) openForge(ctx context.Context, s *updatesScope) (ctrl.Result, error) {
	p := proposals(s.cs)
	if p == nil {
		return ctrl.Result{}, nil
	}
	r.caches()
	fleet, err := findFleetSource(ctx, r.Client, s.cs)
	if err != nil {
		s.fail(csv1.ReasonFleetSourceNotFound, err.Error())
		return ctrl.Result{}, nil
	}
	token, err := r.token(ctx, s.cs)
	if err != nil {
		s.fail(csv1.ReasonInvalidProposalConfig, err.Error())
		return ctrl.Result{}, nil
	}
	from := fmt.Sprintf("Secret %s/%s", s.cs.Namespace, p.SecretRef.Name)
	where := fmt.Sprintf("GitRepository %s (%s)", fleet.Repo, redact.URL(fleet.URL))
	repo, err := forge.ParseRepository(fleet.URL, p.APIURL, from, r.ForgePolicy)
	if err != nil {
		s.fail(csv1.ReasonInvalidProposalConfig, fmt.Sprintf("%s: %s", where, oneLine(err)))
		return ctrl.Result{}, nil
	}
	host := forge.HostKey(fleet.URL)
	if !r.hosts.acquire(host) {
		s.forgeBusy = true
		if c := apimeta.FindStatusCondition(s.cs.Status.Conditions, csv1.UpdatesProposedCondition); c != nil {
			s.cond = *c
		} else {
			s.cond = metav1.Condition{Type: csv1.UpdatesProposedCondition, Status: metav1.ConditionUnknown, Reason: csv1.ReasonForgeBusy,
				Message: fmt.Sprintf("%d other ClusterStacks are talking to %s (the manager's --forge-host-concurrency); this one takes its turn", r.hosts.capacity, host)}
		}
		s.requeueAfter(forgeBusyRetry)
		return ctrl.Result{}, nil
	}
	s.release = func() { r.hosts.release(host) }
	newForge := r.NewForge
	if newForge == nil {
		newForge = func(pr csv1.ForgeProvider, repo forge.Repository, token string) (forge.Client, error) {
			return forge.New(pr, repo, token, forge.Options{Limits: r.ForgeLimits, Policy: r.ForgePolicy})
		}
	}
	c, err := newForge(p.Provider, repo, token)
	if err != nil {
		s.fail(csv1.ReasonForgeError, fmt.Sprintf("%s: %s", where, forgeText(err, token)))
		return ctrl.Result{}, nil
	}
	me, err := r.forgeUser(ctx, p.Provider, repo, token, c)
	if err != nil {
		s.fail(csv1.ReasonForgeError, fmt.Sprintf("%s: %s", where, forgeText(err, token)))
		return ctrl.Result{}, nil
	}
	prefix := branchPrefix(s.cs)
	prs, err := c.PullRequests(ctx, prefix+"/")
	if err != nil {
		s.fail(csv1.ReasonForgeError, fmt.Sprintf("%s: %s", where, forgeText(err, token)))
		return ctrl.Result{}, nil
	}
	own, lookalikes := ownPullRequests(prs, me, prefix)
	r.reportLookalikes(s.cs, lookalikes, me, repo)
	fleet.Token, fleet.TokenFrom = token, from
	s.fleet, s.client, s.prs, s.forgeRead = fleet, c, own, true
	return ctrl.Result{}, nil
}

// forgeUser returns the login of the forge user the token belongs to: asked once per forge,
// API URL and token, then remembered for identityTTL.
func (r *ClusterStackUpdatesReconciler) forgeUser(ctx context.Context, provider csv1.ForgeProvider, repo forge.Repository, token string, c forge.Client) (string, error) {
	sum := sha256.Sum256([]byte(token))
	key := string(provider) + "\x00" + repo.APIURL + "\x00" + hex.EncodeToString(sum[:])
	if v, ok := r.identities.Get(key); ok {
		return v.(string), nil
	}
	me, err := c.Me(ctx)
	if err != nil {
		return "", err
	}
	if me == "" {
		return "", fmt.Errorf("%s did not say which user the token belongs to", redact.URL(repo.APIURL))
	}
	r.identities.Add(key, me, identityTTL)
	return me, nil
}

// forgeText is an error of the forge or of the fleet repository as a status, an Event or a log
// line may carry it: one line, without URL credentials or the token (redact.Secrets).
func forgeText(err error, token string) string {
	return redact.Secrets(oneLine(err), token)
}

// token reads the proposal token from the stack's own namespace.
func (r *ClusterStackUpdatesReconciler) token(ctx context.Context, cs *csv1.ClusterStack) (string, error) {
	ref := proposals(cs).SecretRef.Name
	sec := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: cs.Namespace, Name: ref}, sec); err != nil {
		return "", fmt.Errorf("spec.updates.proposals.secretRef: Secret %s/%s: %s", cs.Namespace, ref, oneLine(err))
	}
	t := strings.TrimSpace(string(sec.Data[proposalTokenKey]))
	if t == "" {
		return "", fmt.Errorf("spec.updates.proposals.secretRef: Secret %s/%s has no key %q with a token that may push branches and open pull requests", cs.Namespace, ref, proposalTokenKey)
	}
	return t, nil
}

// computeUpdates lists the available and conditional updates and picks the rollout target:
// the newest available update, or the newest release a Cluster already moved to while others
// have not.
func (r *ClusterStackUpdatesReconciler) computeUpdates(_ context.Context, s *updatesScope) (ctrl.Result, error) {
	cs := s.cs
	facts := updates.Facts{
		Provider: cs.Spec.Provider, Name: cs.Spec.Name, KubernetesMinor: cs.Spec.KubernetesVersion,
		Tags: s.tags, InUse: s.inUse, Releases: map[string]updates.Release{}, Discovered: map[string]metav1.Time{},
		Now: r.now(), Declined: map[string]string{}, Lagging: s.lagging,
	}
	if u := cs.Spec.Updates; u != nil {
		facts.Channel = u.Channel
		if u.MinReleaseAge != nil {
			facts.MinReleaseAge = u.MinReleaseAge.Duration
		}
	}
	for name := range s.inUse {
		if rel, err := releasename.Parse(name); err == nil && (facts.Baseline == "" || releasename.CompareVersions(rel.Version, facts.Baseline) > 0) {
			facts.Baseline = rel.Version
		}
	}
	if facts.Baseline == "" {
		for _, v := range cs.Spec.Versions {
			if facts.Baseline == "" || releasename.CompareVersions(v, facts.Baseline) > 0 {
				facts.Baseline = v
			}
		}
	}
	for name, rel := range s.releases {
		facts.Releases[name] = releaseFacts(rel)
	}
	for _, u := range cs.Status.AvailableUpdates {
		if u.DiscoveredAt != nil {
			facts.Discovered[u.Release] = *u.DiscoveredAt
		}
	}
	for _, u := range cs.Status.ConditionalUpdates {
		if u.DiscoveredAt != nil {
			facts.Discovered[u.Release] = *u.DiscoveredAt
		}
	}
	facts.Declined = r.declinedReleases(s)
	if s.tagErr != nil {
		// The tags could not be listed (ReleasesResolved says why): keep what was known rather
		// than report no updates, and propose nothing new.
		s.upd = updates.Result{Available: cs.Status.AvailableUpdates, Conditional: cs.Status.ConditionalUpdates}
		s.target = ""
		return ctrl.Result{}, nil //nolint:nilerr // ReleasesResolved reports the tag error; the updates keep what was known
	}
	s.upd = updates.Compute(facts)
	s.requeueAfter(s.upd.RequeueAfter)
	// The target: the newest available update, or the newest release in use when some Clusters
	// are not on it yet (a rollout under way: once a wave moved, its release is in use).
	s.target = updates.Target(s.upd)
	newestInUse := ""
	for name := range s.inUse {
		if newestInUse == "" || compareReleases(name, newestInUse) > 0 {
			newestInUse = name
		}
	}
	if s.target == "" {
		s.target = newestInUse
	}
	return ctrl.Result{}, nil
}

// declinedReleases maps each release the stack's own closed pull requests proposed to the
// pull request's URL. While the forge cannot be read (busy, failing), the last listing's answer
// is kept, so that a declined release does not come back as available in the meantime.
func (r *ClusterStackUpdatesReconciler) declinedReleases(s *updatesScope) map[string]string {
	key := client.ObjectKeyFromObject(s.cs).String()
	if !s.forgeRead {
		if proposals(s.cs) != nil && r.declined != nil {
			if d, ok := r.declined.Get(key); ok {
				return maps.Clone(d.(map[string]string))
			}
		}
		return map[string]string{}
	}
	out := map[string]string{}
	for _, pr := range s.prs {
		if m, ok := parseMarker(pr.Body); ok && pr.State == forge.StateClosed {
			out[m.target] = pr.URL
		}
	}
	r.declined.Add(key, maps.Clone(out), checkoutTTL)
	return out
}

func compareReleases(a, b string) int {
	ra, errA := releasename.Parse(a)
	rb, errB := releasename.Parse(b)
	if errA != nil || errB != nil {
		return strings.Compare(a, b)
	}
	return releasename.CompareVersions(ra.Version, rb.Version)
}

// releaseFacts is what the update computation needs of a release.
func releaseFacts(rel *csv1.ClusterStackRelease) updates.Release {
	out := updates.Release{Name: rel.Name}
	if c := apimeta.FindStatusCondition(rel.Status.Conditions, csv1.StackValidCondition); c != nil && c.Status != metav1.ConditionUnknown {
		ok := c.Status == metav1.ConditionTrue
		out.Validated, out.ValidationMessage = &ok, c.Message
	}
	if c := apimeta.FindStatusCondition(rel.Status.Conditions, csv1.RequirementsMetCondition); c != nil && c.Status != metav1.ConditionUnknown {
		ok := c.Status == metav1.ConditionTrue
		out.RequirementsMet, out.RequirementsMessage = &ok, c.Message
	}
	return out
}

// planRollout decides the waves' phases and the pull request that should be open now.
func (r *ClusterStackUpdatesReconciler) planRollout(_ context.Context, s *updatesScope) (ctrl.Result, error) {
	if s.fleet == nil || s.target == "" {
		return ctrl.Result{}, nil
	}
	facts := rollout.Facts{Target: s.target, PullRequests: map[string][]rollout.PullRequest{}, Now: r.now()}
	if s.hold != nil {
		facts.Hold = rollout.HoldText(s.hold)
	}
	u := s.cs.Spec.Updates
	for i, w := range u.Waves {
		sel, err := metav1.LabelSelectorAsSelector(&w.Selector)
		if err != nil {
			s.fail(csv1.ReasonInvalidProposalConfig, fmt.Sprintf("spec.updates.waves[%s].selector: %s", w.Name, err))
			return ctrl.Result{}, nil
		}
		ws, err := window.ParseAll(rollout.WindowsOf(u, &u.Waves[i]))
		if err != nil {
			s.fail(csv1.ReasonInvalidProposalConfig, fmt.Sprintf("maintenance windows of wave %s: %s", w.Name, err))
			return ctrl.Result{}, nil
		}
		wave := rollout.Wave{Name: w.Name, Selector: sel, Windows: ws}
		if w.SoakTime != nil {
			wave.Soak = w.SoakTime.Duration
		}
		if w.MaxConcurrent != nil {
			wave.MaxConcurrent = int(*w.MaxConcurrent)
		}
		facts.Waves = append(facts.Waves, wave)
	}
	remaining, err := window.ParseAll(rollout.WindowsOf(u, nil))
	if err != nil {
		s.fail(csv1.ReasonInvalidProposalConfig, fmt.Sprintf("spec.updates.windows (the windows of wave %s and of every wave without its own): %s", rollout.Remaining, err))
		return ctrl.Result{}, nil
	}
	facts.RemainingWindows = remaining
	for _, name := range slices.Sorted(maps.Keys(s.clusters)) {
		facts.Clusters = append(facts.Clusters, rolloutCluster(s.clusters[name], s.addons[name]))
	}
	for _, pr := range s.prs {
		m, ok := parseMarker(pr.Body)
		if !ok || m.target != s.target {
			continue
		}
		facts.PullRequests[m.wave] = append(facts.PullRequests[m.wave], rollout.PullRequest{
			Number: pr.Number, URL: pr.URL, Title: pr.Title, Branch: pr.Head, State: pr.State, Target: m.target, Clusters: m.clusters,
		})
	}
	plan := rollout.Decide(facts)
	s.plan = &plan
	s.requeueAfter(plan.RequeueAfter)
	switch {
	case plan.Halted != nil:
		s.fail(csv1.ReasonRolloutHalted, fmt.Sprintf("rollout of %s halted in wave %s: %s", s.target, plan.Halted.Wave, plan.Halted.Message))
	case s.hold != nil:
		s.fail(csv1.ReasonRolloutHeld, fmt.Sprintf("rollout of %s held by %s; %s", s.target, rollout.HoldText(s.hold), waitingMessage(s.target, plan.Status)))
	case plan.Propose == nil && waitingForWindow(plan.Status) != nil:
		s.cond = metav1.Condition{Type: csv1.UpdatesProposedCondition, Status: metav1.ConditionTrue, Reason: csv1.ReasonWaitingForWindow, Message: waitingMessage(s.target, plan.Status)}
	case plan.Propose == nil:
		s.cond = metav1.Condition{Type: csv1.UpdatesProposedCondition, Status: metav1.ConditionTrue, Reason: csv1.ReasonWaitingForWave, Message: waitingMessage(s.target, plan.Status)}
	}
	return ctrl.Result{}, nil
}

// waitingForWindow is the first wave that waits for its maintenance window, nil if none does.
func waitingForWindow(st csv1.RolloutStatus) *csv1.WaveStatus {
	for i := range st.Waves {
		if st.Waves[i].Phase == csv1.WaveWaitingForWindow {
			return &st.Waves[i]
		}
	}
	return nil
}

// rolloutHold finds who holds the rollout: the clusterstack.io/hold annotation, else the hold
// label on one of the stack's own pull requests (open or merged) for the rollout's target. The
// time it was first seen is kept from status.hold while the hold stays the same; who set it is
// asked of the API (the annotation's last writer) or the forge (the label's) only when the hold
// is new.
func (r *ClusterStackUpdatesReconciler) rolloutHold(ctx context.Context, s *updatesScope) (ctrl.Result, error) {
	prev := s.cs.Status.Hold
	now := metav1.NewTime(r.now())
	if v, ok := s.cs.Annotations[csv1.HoldAnnotation]; ok {
		by, reason := rollout.ParseHold(v)
		h := &csv1.RolloutHold{Source: csv1.HoldFromAnnotation, By: by, Reason: reason, Since: now}
		if prev != nil && prev.Source == csv1.HoldFromAnnotation {
			h.Since = prev.Since
			if by == "" && prev.Reason == reason {
				h.By = prev.By
			}
		}
		if h.By == "" {
			// The cache drops managed fields: read them once, for a new hold.
			latest := &csv1.ClusterStack{}
			if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(s.cs), latest); err == nil {
				if m := rollout.AnnotationWriter(latest.ManagedFields, csv1.HoldAnnotation); m != "" {
					h.By = "manager " + m
				}
			}
		}
		s.hold = h
		return ctrl.Result{}, nil
	}
	if proposals(s.cs) == nil {
		return ctrl.Result{}, nil
	}
	if !s.forgeRead {
		// The forge cannot be read now: a label hold stays as it was.
		if prev != nil && prev.Source == csv1.HoldFromPullRequestLabel {
			s.hold = prev
		}
		return ctrl.Result{}, nil
	}
	label := holdLabel(s.cs)
	for _, pr := range s.prs {
		m, ok := parseMarker(pr.Body)
		if !ok || m.target != s.target || pr.State == forge.StateClosed || !slices.Contains(pr.Labels, label) {
			continue
		}
		h := &csv1.RolloutHold{Source: csv1.HoldFromPullRequestLabel, PullRequest: pr.URL, Since: now,
			Reason: fmt.Sprintf("pull request #%d carries the label %q", pr.Number, label)}
		if prev != nil && prev.Source == csv1.HoldFromPullRequestLabel && prev.PullRequest == pr.URL {
			h.Since, h.By = prev.Since, prev.By
		} else if lh, ok := s.client.(forge.LabelHistory); ok {
			if who, _, err := lh.LabelAddedBy(ctx, pr.Number, label); err == nil && who != "" {
				h.By = who
			}
		}
		s.hold = h
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, nil
}

// holdLabel is the pull request label that holds the stack's rollout.
func holdLabel(cs *csv1.ClusterStack) string {
	if p := proposals(cs); p != nil && p.HoldLabel != "" {
		return p.HoldLabel
	}
	return csv1.DefaultHoldLabel
}

// waitingMessage says what the rollout waits for.
func waitingMessage(target string, st csv1.RolloutStatus) string {
	for _, w := range st.Waves {
		if w.Phase != csv1.WaveDone {
			return fmt.Sprintf("rolling out %s: wave %s is %s: %s", target, w.Name, w.Phase, w.Message)
		}
	}
	return fmt.Sprintf("every Cluster is on %s", target)
}

// rolloutCluster is what the wave decision needs of a Cluster and its ClusterAddon.
func rolloutCluster(c *clusterv1.Cluster, a *csv1.ClusterAddon) rollout.Cluster {
	_, class := webhooks.ClassRef(c)
	out := rollout.Cluster{Name: c.Name, Labels: c.Labels, Release: class}
	if a == nil {
		return out
	}
	out.Applied = a.Status.LastAppliedRelease
	if av := apimeta.FindStatusCondition(a.Status.Conditions, csv1.AvailableCondition); av != nil && av.Status == metav1.ConditionTrue {
		out.Available = true
		since := av.LastTransitionTime.Time
		if t := a.Status.LastAppliedTime; t != nil && t.After(since) {
			since = t.Time
		}
		out.AvailableSince = &since
	}
	if d := apimeta.FindStatusCondition(a.Status.Conditions, csv1.DegradedCondition); d != nil && d.Status == metav1.ConditionTrue {
		out.Degraded, out.DegradedMessage = true, d.Message
	}
	return out
}

// propose makes the pull request the plan asks for exist, with exactly the plan's content.
func (r *ClusterStackUpdatesReconciler) propose(ctx context.Context, s *updatesScope) (ctrl.Result, error) {
	if s.plan == nil || s.plan.Propose == nil {
		return ctrl.Result{}, nil
	}
	rel := s.releases[s.target]
	if rel == nil || rel.Status.KubernetesVersion == "" {
		s.cond = metav1.Condition{Type: csv1.UpdatesProposedCondition, Status: metav1.ConditionTrue, Reason: csv1.ReasonWaitingForWave,
			Message: fmt.Sprintf("waiting for release %s to be validated before proposing it (its Kubernetes version goes into the Clusters' spec.topology.version)", s.target)}
		s.requeueAfter(10 * time.Second)
		return ctrl.Result{}, nil
	}
	key := client.ObjectKeyFromObject(s.cs).String()
	if v, ok := r.refusedPushes().Get(key); ok {
		// The forge refused the last push: do not retry at every event (no retry storm). The
		// refusal is reported as it was from memory, not from the cached ClusterStack: the
		// status that reports it may not have reached the cache when the next event comes.
		if last, ok := v.(refusal); ok && r.now().Sub(last.at) < r.pushRetry() {
			s.fail(csv1.ReasonPushRefused, last.msg)
			s.requeueAfter(r.pushRetry() - r.now().Sub(last.at))
			return ctrl.Result{}, nil
		}
	}
	res, err := r.proposeWave(ctx, s, rel)
	if errors.Is(err, forge.ErrPushRefused) || errors.Is(err, forge.ErrProtectedTarget) {
		r.refusedPushes().Add(key, refusal{at: r.now(), msg: forgeText(err, s.fleet.Token)}, r.pushRetry())
		s.requeueAfter(r.pushRetry())
	} else {
		r.refusedPushes().Remove(key)
	}
	switch {
	case errors.Is(err, forge.ErrForeignCommits):
		s.fail(csv1.ReasonBranchModified, err.Error())
	case errors.Is(err, forge.ErrPushRefused), errors.Is(err, forge.ErrProtectedTarget):
		s.fail(csv1.ReasonPushRefused, forgeText(err, s.fleet.Token))
		r.Recorder.Event(s.cs, corev1.EventTypeWarning, csv1.ReasonPushRefused, forgeText(err, s.fleet.Token))
	case errors.Is(err, errAlreadyOnBase):
		s.cond = metav1.Condition{Type: csv1.UpdatesProposedCondition, Status: metav1.ConditionTrue, Reason: csv1.ReasonWaitingForWave, Message: oneLine(err)}
		s.requeueAfter(10 * time.Second)
	case errors.Is(err, errFleetFile):
		s.fail(csv1.ReasonFleetSourceNotFound, oneLine(err))
	case err != nil:
		// The error as the status says it: the log line carries no credential either.
		msg := forgeText(err, s.fleet.Token)
		s.fail(csv1.ReasonForgeError, msg)
		log.FromContext(ctx).Error(errors.New(msg), "propose")
		s.requeueAfter(15 * time.Second)
	default:
		s.cond = metav1.Condition{Type: csv1.UpdatesProposedCondition, Status: metav1.ConditionTrue, Reason: csv1.ReasonProposed,
			Message: fmt.Sprintf("pull request %s proposes %s for wave %s", res.pr.URL, s.target, s.plan.Propose.Wave)}
		if res.event != "" {
			r.Recorder.Eventf(s.cs, corev1.EventTypeNormal, res.event, "%s: pull request #%d %s (%s)", res.event, res.pr.Number, res.pr.URL, res.pr.Title)
		}
		for i := range s.plan.Status.Waves {
			w := &s.plan.Status.Waves[i]
			if w.Name != s.plan.Propose.Wave {
				continue
			}
			w.PullRequest = &csv1.PullRequestRef{Number: res.pr.Number, URL: res.pr.URL, Title: res.pr.Title, Branch: res.pr.Head, State: res.pr.State}
			if w.Phase == csv1.WaveWaitingForWindow {
				// Open, and may be merged; the Clusters move in the window.
				s.cond.Reason = csv1.ReasonWaitingForWindow
				s.cond.Message = fmt.Sprintf("pull request %s proposes %s for wave %s, which waits for its maintenance window: %s", res.pr.URL, s.target, w.Name, w.Message)
				continue
			}
			w.Message = fmt.Sprintf("pull request #%d open: %s", res.pr.Number, res.pr.URL)
		}
		s.plan.Status.OpenPullRequest = res.pr.URL
	}
	return ctrl.Result{}, nil
}

// addonUpgrades records, in each of the stack's ClusterAddons, the releases its Cluster may
// move to next (the only field of a ClusterAddon this controller writes). A paused Cluster's
// ClusterAddon is left alone, as every controller leaves it; it is brought up to date on resume.
func (r *ClusterStackUpdatesReconciler) addonUpgrades(ctx context.Context, s *updatesScope) (ctrl.Result, error) {
	var rels csv1.ClusterStackReleaseList
	if err := r.List(ctx, &rels, client.InNamespace(s.cs.Namespace)); err != nil {
		return ctrl.Result{}, err
	}
	var validated []string
	for _, rel := range rels.Items {
		if apimeta.IsStatusConditionTrue(rel.Status.Conditions, csv1.StackValidCondition) {
			validated = append(validated, rel.Name)
		}
	}
	for name, a := range s.addons {
		if isPaused(s.clusters[name]) {
			continue
		}
		_, class := webhooks.ClassRef(s.clusters[name])
		want := updates.Upgrades(class, validated)
		if slices.Equal(want, a.Status.AvailableUpgrades) {
			continue
		}
		// a is the cache's (gather): the status write reads and changes a copy.
		if err := updateStatus(ctx, r.writer, a.DeepCopy(), func(a *csv1.ClusterAddon) { a.Status.AvailableUpgrades = want }); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}

// writeStatus records the updates, the rollout and the UpdatesProposed condition.
func (r *ClusterStackUpdatesReconciler) writeStatus(ctx context.Context, s *updatesScope) error {
	return updateStatusEmit(ctx, r.writer, r.Recorder, s.cs, func(cs *csv1.ClusterStack) (bool, []statusEvent) {
		var events []statusEvent
		cs.Status.AvailableUpdates = s.upd.Available
		cs.Status.ConditionalUpdates = s.upd.Conditional
		cs.Status.Hold = s.hold
		var prev *csv1.RolloutStatus
		if cs.Status.Rollout != nil {
			prev = cs.Status.Rollout.DeepCopy()
		}
		switch {
		case s.plan != nil:
			st := s.plan.Status
			cs.Status.Rollout = &st
			events = waveEvents(prev, &st)
		case proposals(cs) != nil && (s.forgeBusy || s.cond.Status == metav1.ConditionFalse):
			// Keep the last known rollout while the forge or the fleet cannot be read.
		default:
			cs.Status.Rollout = nil
		}
		if proposals(cs) == nil {
			apimeta.RemoveStatusCondition(&cs.Status.Conditions, csv1.UpdatesProposedCondition)
			return true, events
		}
		c := s.cond
		if !s.forgeBusy || c.ObservedGeneration == 0 {
			c.ObservedGeneration = cs.Generation
		}
		apimeta.SetStatusCondition(&cs.Status.Conditions, c)
		return true, events
	})
}

// waveEvents returns one Event per wave whose phase changed.
func waveEvents(prev, cur *csv1.RolloutStatus) []statusEvent {
	old := map[string]csv1.WavePhase{}
	if prev != nil && prev.Target == cur.Target {
		for _, w := range prev.Waves {
			old[w.Name] = w.Phase
		}
	}
	var out []statusEvent
	for _, w := range cur.Waves {
		if old[w.Name] == w.Phase || (prev == nil && w.Phase == csv1.WavePending) {
			continue
		}
		e := normalEvent("Wave"+string(w.Phase), fmt.Sprintf("wave %s of the rollout of %s is %s: %s", w.Name, cur.Target, w.Phase, w.Message))
		if w.Phase == csv1.WaveHalted {
			e.eventType = corev1.EventTypeWarning
		}
		out = append(out, e)
	}
	return out
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
