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
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/forge"
	"github.com/clusterstack-io/clusterstack-operator/internal/redact"
	"github.com/clusterstack-io/clusterstack-operator/internal/releasename"
	"github.com/clusterstack-io/clusterstack-operator/internal/rollout"
	"github.com/clusterstack-io/clusterstack-operator/internal/updates"
	"github.com/clusterstack-io/clusterstack-operator/internal/webhooks"
	"github.com/clusterstack-io/clusterstack-operator/internal/window"
)

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
	if c := apimeta.FindStatusCondition(rel.Status.Conditions, csv1.ProviderObjectsReadyCondition); c != nil && c.Status != metav1.ConditionUnknown {
		ok := c.Status == metav1.ConditionTrue
		out.ProviderObjectsReady, out.ProviderObjectsMessage = &ok, c.Message
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
