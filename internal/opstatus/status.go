package opstatus

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxstatus"
	"github.com/clusterstack-io/clusterstack-operator/internal/opgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/requirements"
)

// MaxUnhealthy bounds status.unhealthy (the API's MaxItems).
const MaxUnhealthy = 64

// versionRE is the form of spec.version (the API's rule): tags of this form after the tag
// prefix are versions of the operator.
var versionRE = regexp.MustCompile(`^v(0|[1-9][0-9]*)[.](0|[1-9][0-9]*)[.](0|[1-9][0-9]*)(-[0-9A-Za-z-]+([.][0-9A-Za-z-]+)*)?([+][0-9A-Za-z-]+([.][0-9A-Za-z-]+)*)?$`)

// IsVersion reports whether v (a tag without the tag prefix) is a version of the operator as
// the status can hold it: of spec.version's form and at most csv1.MaxVersionLength characters
// (the API's bound of every status field a version is written to), so that a tag with a long
// pre-release or build metadata never reaches a status write the API server would refuse.
func IsVersion(v string) bool { return len(v) <= csv1.MaxVersionLength && versionRE.MatchString(v) }

// Input is everything a ManagementOperator's status is computed from.
type Input struct {
	// Operator is the ManagementOperator, with its previous status.
	Operator *csv1.ManagementOperator
	// Namespace is the management namespace its Flux objects are in.
	Namespace string
	// Decision is what Decide returned for this reconcile.
	Decision Decision
	// Objects are the states of its Flux objects for Decision.Target (States).
	Objects []fluxstatus.ObjectState
	// Deployments are the Deployments its manifests created (FromDeployment of those
	// InventoryDeployments or HelmReleaseSelector find).
	Deployments []Deployment
	// RequiredBy names the releases that require the operator (requirements.Requiring over the
	// releases of every ClusterStack); empty makes it Disabled.
	RequiredBy []string
	// Tags are the version tags of the source repository (tag prefix + a version) with the
	// commits they point to, for availableUpdates and the check of the pinned commit
	// (TagVerified); nil when they were not listed this time (the previous availableUpdates are
	// kept).
	Tags map[string]string
	// IgnoredTags counts the tags with the tag prefix that the listing left out: not of
	// spec.version's form, or longer than csv1.MaxVersionLength after the prefix.
	IgnoredTags int
	// TagsError says why the tags could not be listed this time (reason TagListFailed or
	// TagListTooLarge); nil when they were, or were not asked for.
	TagsError *fluxstatus.Problem
	// Now and Grace: a failure, or a rollout not done, for longer than Grace is Degraded.
	Now   time.Time
	Grace time.Duration
	// QueueGrace: how long an object may wait for its Flux controller to pick it up
	// (fluxstatus.Input.QueueGrace).
	QueueGrace time.Duration
}

// Result is the computed status.
type Result struct {
	// Conditions are Available, Progressing, Degraded, Ready, Stalled and Reconciling (from
	// fluxstatus.Compute), Upgradeable, Disabled and TagVerified, in that order.
	Conditions []metav1.Condition
	// Versions are status.versions: versions[name=operator] is Decision.Target once delivered,
	// else the version delivered before.
	Versions []csv1.OperandVersion
	// DesiredVersion is status.desiredVersion: Decision.Target.
	DesiredVersion string
	// Delivered is true when Decision.Target is delivered: every Flux object is Ready at its
	// revision and every Deployment of it is rolled out and Available.
	Delivered bool
	// History is status.history, newest first.
	History []csv1.OperatorHistoryEntry
	// AvailableUpdates is status.availableUpdates.
	AvailableUpdates []string
	// RelatedObjects is status.relatedObjects.
	RelatedObjects []csv1.ResourceReference
	// Unhealthy is status.unhealthy.
	Unhealthy []csv1.UnhealthyObject
	// RequeueAfter is when a grace period runs out and the result may change without any watch
	// event; zero when no timer is needed.
	RequeueAfter time.Duration
}

// Subject prefixes the ManagementOperator's condition messages.
func Subject(op *csv1.ManagementOperator) string { return "management operator " + op.Name }

// Compute computes a ManagementOperator's status.
func Compute(in Input) Result {
	op, d := in.Operator, in.Decision
	delivered := op.DeliveredVersion()
	// Deployments first: a rollout that does not finish is described by the Deployment that
	// is stuck ("rolling out: 1 of 1 replicas updated, 0 available") rather than by the
	// Kustomization waiting for it ("Reconciliation in progress").
	objects := make([]fluxstatus.ObjectState, 0, len(in.Deployments)+len(in.Objects))
	for _, dep := range in.Deployments {
		objects = append(objects, dep.state(d.Target, delivered))
	}
	objects = append(objects, in.Objects...)
	channel, channelErr := parseChannel(op.Spec.Channel)
	hist := history(op, d, fetchedCommit(in.Objects), in.Now)
	pinned := commitOf(op, hist, d.Target)
	tagCheck := tagVerified(op, d.Target, pinned, in)

	fin := fluxstatus.Input{
		Subject:    Subject(op),
		Objects:    objects,
		Delivered:  delivered,
		Desired:    d.Target,
		Previous:   op.Status.Conditions,
		Now:        in.Now,
		Grace:      in.Grace,
		QueueGrace: in.QueueGrace,
		Unhealthy:  op.Status.Unhealthy,
		Held:       d.Held,
		MoveVerb:   "moving",
	}
	// Each rollout has its own grace period, as a ClusterAddon's move to another release has: a
	// rollback that follows a failed upgrade is not Degraded for the time the upgrade took, nor by
	// the upgrade's failures (the objects' records start again at the rollback, unhealthy until
	// Flux reports them Ready; an object that fails again is Degraded once the grace period passed).
	fin.DesiredSince = rolloutStart(op, d, in.Now)
	switch {
	case d.Target == "":
		// Nothing was ever accepted: the refusal or the hold is all there is to say.
		fin.Objects = nil
		if d.Refused != nil {
			fin.Invalid = d.Refused
		} else if d.Held == nil {
			fin.Waiting = &fluxstatus.Problem{Reason: csv1.ReasonUnknown, Message: "no version has been accepted yet", Since: op.CreationTimestamp.Time}
		}
	case d.Refused != nil:
		fin.Alert = d.Refused
	case channelErr != nil:
		fin.Alert = &fluxstatus.Problem{Reason: csv1.ReasonInvalidChannel, Message: fmt.Sprintf("spec.channel %v; availableUpdates cannot be computed (the delivered version is not affected)", channelErr)}
	case tagCheck.Status == metav1.ConditionFalse:
		fin.Alert = &fluxstatus.Problem{Reason: tagCheck.Reason, Message: tagCheck.Message}
	}
	if delivered != "" {
		// Whether the delivered version serves is observed on its Deployments: Available stays
		// True while they are available, also when a failed upgrade makes it Degraded.
		// Deployments created since the rollout of another version began are not the delivered
		// version's: a new one that is not available yet does not make the delivered one unavailable.
		fin.Unavailable, fin.AvailabilityObserved = unavailable(in.Deployments, fin.DesiredSince), len(in.Deployments) > 0
	}
	fr := fluxstatus.Compute(fin)

	r := Result{DesiredVersion: d.Target, RequeueAfter: fr.RequeueAfter}
	r.Delivered = d.Target != "" && len(in.Objects) > 0 && allHealthy(objects) && len(fr.Unhealthy) == 0
	r.Versions = versions(op.Status.Versions, d.Target, r.Delivered)
	if len(in.RequiredBy) == 0 {
		// Nothing needs it: Available, as cluster-baremetal-operator on platforms it does not serve.
		fr.Available = condition(csv1.AvailableCondition, metav1.ConditionTrue, csv1.ReasonNotRequired,
			fmt.Sprintf("%s: no stack release in the cluster requires %s; it is Disabled and nothing depends on it", Subject(op), op.Spec.Component.Name), in.Now)
		fr.Ready = fluxstatus.ReadyFrom(fr.Available, fr.Progressing, fr.Degraded)
		fr.Stalled, fr.Reconciling = fluxstatus.KstatusFrom(fr.Ready, fr.Degraded)
		if !in.Now.IsZero() {
			for _, c := range []*metav1.Condition{&fr.Ready, &fr.Stalled, &fr.Reconciling} {
				c.LastTransitionTime = metav1.NewTime(in.Now)
			}
		}
	}
	r.Conditions = []metav1.Condition{fr.Available, fr.Progressing, fr.Degraded, fr.Ready, fr.Stalled, fr.Reconciling,
		upgradeable(op, d, versionIn(r.Versions), in.Now), disabled(op, in.RequiredBy, in.Now), tagCheck}
	r.Unhealthy = boundedUnhealthy(fr.Unhealthy)
	r.History = markCompleted(hist, d, r.Delivered, in.Now)
	r.AvailableUpdates = op.Status.AvailableUpdates
	if in.Tags != nil {
		r.AvailableUpdates, _ = availableUpdates(in.Tags, op.Tag(""), versionIn(r.Versions), channel, channelErr)
	}
	r.RelatedObjects = relatedObjects(op, in.Namespace, in.Deployments)
	return r
}

// ApplyTo writes the result into a status, keeping the transition times of unchanged
// conditions, and reports whether anything changed. observedGeneration is set to generation.
func (r Result) ApplyTo(st *csv1.ManagementOperatorStatus, generation int64) bool {
	changed := false
	for _, c := range r.Conditions {
		c.ObservedGeneration = generation
		if fluxstatus.SetCondition(&st.Conditions, c) {
			changed = true
		}
	}
	if !equality.Semantic.DeepEqual(st.Versions, r.Versions) || st.DesiredVersion != r.DesiredVersion ||
		!equality.Semantic.DeepEqual(st.History, r.History) || !equality.Semantic.DeepEqual(st.AvailableUpdates, r.AvailableUpdates) ||
		!equality.Semantic.DeepEqual(st.RelatedObjects, r.RelatedObjects) || !equality.Semantic.DeepEqual(st.Unhealthy, r.Unhealthy) {
		changed = true
	}
	st.Versions, st.DesiredVersion, st.History = r.Versions, r.DesiredVersion, r.History
	st.AvailableUpdates, st.RelatedObjects, st.Unhealthy = r.AvailableUpdates, r.RelatedObjects, r.Unhealthy
	if st.ObservedGeneration != generation {
		st.ObservedGeneration, changed = generation, true
	}
	return changed
}

func allHealthy(objs []fluxstatus.ObjectState) bool {
	for _, o := range objs {
		if !o.Healthy() {
			return false
		}
	}
	return true
}

// versions moves versions[name=operator] to target once it is delivered and keeps the other entries.
func versions(prev []csv1.OperandVersion, target string, delivered bool) []csv1.OperandVersion {
	out := make([]csv1.OperandVersion, 0, len(prev)+1)
	found := false
	for _, v := range prev {
		if v.Name == csv1.OperatorVersionName {
			found = true
			if delivered {
				v.Version = target
			}
		}
		out = append(out, v)
	}
	if !found && delivered {
		out = append(out, csv1.OperandVersion{Name: csv1.OperatorVersionName, Version: target})
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func versionIn(vs []csv1.OperandVersion) string {
	for _, v := range vs {
		if v.Name == csv1.OperatorVersionName {
			return v.Version
		}
	}
	return ""
}

// rolloutStart is when the rollout of the decision's target began: now when it begins now, the
// start of its Partial history entry while it rolls out, zero when none rolls out.
func rolloutStart(op *csv1.ManagementOperator, d Decision, now time.Time) time.Time {
	h := op.Status.History
	switch {
	case d.Target == "":
		return time.Time{}
	case d.Apply && (len(h) == 0 || h[0].Version != d.Target):
		return now
	case len(h) > 0 && h[0].Version == d.Target && h[0].State == csv1.UpdatePartial:
		return h[0].StartedTime.Time
	}
	return time.Time{}
}

// unavailable is set when a Deployment of the delivered version (one that existed before the
// rollout that began at since, if any) is not available (its Available condition is False):
// the delivered version does not serve.
func unavailable(deps []Deployment, since time.Time) *fluxstatus.Problem {
	var down []string
	for _, d := range deps {
		if !since.IsZero() && !d.Created.Before(since) {
			continue
		}
		if d.AvailableCondition == metav1.ConditionFalse {
			msg := "Deployment " + d.Ref() + " is not available"
			if d.AvailableMessage != "" {
				msg += ": " + d.AvailableMessage
			}
			down = append(down, msg)
		}
	}
	if len(down) == 0 {
		return nil
	}
	return &fluxstatus.Problem{Reason: csv1.ReasonDeploymentUnavailable, Message: fluxstatus.JoinLimited(down, 3)}
}

// upgradeable is False while spec.version is held back by in-use releases' requirements, and
// False (reason RequirementsOverridden) while it is applied despite them; Unknown while
// spec.version is refused (the requirements were not checked). delivered is the delivered
// version as this computation reports it.
func upgradeable(op *csv1.ManagementOperator, d Decision, delivered string, now time.Time) metav1.Condition {
	subject := Subject(op)
	switch {
	case d.Refused != nil:
		return condition(csv1.UpgradeableCondition, metav1.ConditionUnknown, d.Refused.Reason, fmt.Sprintf(
			"%s: spec.version %s is refused (see Degraded), so whether the releases in use by Clusters allow it was not checked", subject, op.Spec.Version), now)
	case d.Held != nil:
		return condition(csv1.UpgradeableCondition, metav1.ConditionFalse, d.Held.Reason, subject+": "+d.Held.Message, now)
	case d.Overridden != "":
		return condition(csv1.UpgradeableCondition, metav1.ConditionFalse, csv1.ReasonRequirementsOverridden, fmt.Sprintf(
			"%s: spec.version %s is applied although releases in use by Clusters exclude it (%s), because spec.overrideStackRequirements is true", subject, op.Spec.Version, d.Overridden), now)
	case op.Spec.Version == delivered:
		return condition(csv1.UpgradeableCondition, metav1.ConditionTrue, csv1.ReasonAsExpected, fmt.Sprintf(
			"%s: spec.version %s is the delivered version; no upgrade is pending", subject, op.Spec.Version), now)
	default:
		return condition(csv1.UpgradeableCondition, metav1.ConditionTrue, csv1.ReasonAsExpected, fmt.Sprintf(
			"%s: no release in use by Clusters excludes spec.version %s", subject, op.Spec.Version), now)
	}
}

// disabled is True when no release in the cluster requires the operator.
func disabled(op *csv1.ManagementOperator, requiredBy []string, now time.Time) metav1.Condition {
	if len(requiredBy) == 0 {
		return condition(csv1.DisabledCondition, metav1.ConditionTrue, csv1.ReasonNotRequired, fmt.Sprintf(
			"%s: no stack release in the cluster requires %s (no release's stack.yaml lists it under requires:); it is still delivered", Subject(op), op.Spec.Component.Name), now)
	}
	return condition(csv1.DisabledCondition, metav1.ConditionFalse, csv1.ReasonRequired, fmt.Sprintf(
		"%s: required by release %s", Subject(op), fluxstatus.JoinLimited(requiredBy, 5)), now)
}

func condition(t string, s metav1.ConditionStatus, reason, msg string, now time.Time) metav1.Condition {
	c := metav1.Condition{Type: t, Status: s, Reason: reason, Message: fluxstatus.Truncate(msg)}
	if !now.IsZero() {
		c.LastTransitionTime = metav1.NewTime(now)
	}
	return c
}

// history records the rollout of target: a Partial entry when it starts (closing a Partial
// entry it supersedes), at most MaxOperatorHistory entries; and the commit of target's entry:
// taken over from an older entry of the same version (a move back to a version stays pinned
// to the commit delivered before), else the commit Flux fetched at target's tag (fetched, ""
// when not fetched yet), which spec.followMovedTags replaces whenever Flux fetches another.
func history(op *csv1.ManagementOperator, d Decision, fetched string, now time.Time) []csv1.OperatorHistoryEntry {
	prev := op.Status.History
	out := make([]csv1.OperatorHistoryEntry, 0, len(prev)+1)
	for _, h := range prev {
		out = append(out, *h.DeepCopy())
	}
	at := metav1.NewTime(now)
	if d.Apply && d.Target != "" && (len(out) == 0 || out[0].Version != d.Target) {
		if len(out) > 0 && out[0].State == csv1.UpdatePartial && out[0].CompletionTime == nil {
			out[0].CompletionTime = &at
		}
		out = append([]csv1.OperatorHistoryEntry{{Version: d.Target, State: csv1.UpdatePartial, StartedTime: at,
			AcceptedRisks: fluxstatus.Truncate(d.Overridden), Commit: earlierCommit(op, out, d.Target)}}, out...)
	}
	if len(out) > 0 && out[0].Version == d.Target && fetched != "" && (out[0].Commit == "" || op.Spec.FollowMovedTags || !pinFits(op, out[0].Commit)) {
		out[0].Commit = fetched
	}
	if len(out) > csv1.MaxOperatorHistory {
		out = out[:csv1.MaxOperatorHistory]
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// markCompleted marks target's entry Completed once it is delivered.
func markCompleted(h []csv1.OperatorHistoryEntry, d Decision, delivered bool, now time.Time) []csv1.OperatorHistoryEntry {
	if delivered && len(h) > 0 && h[0].Version == d.Target && h[0].State == csv1.UpdatePartial {
		at := metav1.NewTime(now)
		h[0].State, h[0].CompletionTime = csv1.UpdateCompleted, &at
	}
	return h
}

// earlierCommit is the commit of the newest entry of version in h that has one the source can
// be pinned to (pinFits).
func earlierCommit(op *csv1.ManagementOperator, h []csv1.OperatorHistoryEntry, version string) string {
	for _, e := range h {
		if e.Version == version && e.Commit != "" && pinFits(op, e.Commit) {
			return e.Commit
		}
	}
	return ""
}

// commitOf is the commit version is pinned to in h: the newest entry's of that version, ""
// when none is known yet or spec.followMovedTags is set.
func commitOf(op *csv1.ManagementOperator, h []csv1.OperatorHistoryEntry, version string) string {
	if op.Spec.FollowMovedTags || version == "" {
		return ""
	}
	return earlierCommit(op, h, version)
}

// pinFits reports whether a recorded pin can pin the operator's source: an OCI source is pinned
// to a sha256 digest (64 hex digits), so a Git commit recorded before the source moved to a
// registry (40 hex digits) is not its pin, and the digest Flux fetches is recorded instead. (A
// Git source accepts both lengths, SHA-1 and SHA-256 repositories: a digest recorded from a
// registry before the source moved back to Git is taken for a commit, which Flux then reports
// as not found; move to another version or set spec.followMovedTags.)
func pinFits(op *csv1.ManagementOperator, pin string) bool {
	return op.Spec.Source.OCI == nil || len(pin) == 64
}

// PinnedCommit is the commit the GitRepository of version is pinned to (the hex of
// status.history[].commit), "" when none is known yet or spec.followMovedTags is set.
func PinnedCommit(op *csv1.ManagementOperator, version string) string {
	return commitOf(op, op.Status.History, version)
}

// fetchedCommit is the commit of the GitRepository (the digest of the OCIRepository) among
// objects (States) when it is at the tag it is expected at: full hex, without the "sha1:" (or
// "sha256:") prefix; "" otherwise.
func fetchedCommit(objects []fluxstatus.ObjectState) string {
	for _, o := range objects {
		if (o.Kind != sourcev1.GitRepositoryKind && o.Kind != sourcev1.OCIRepositoryKind) || !o.Exists || !o.AtRevision() {
			continue
		}
		c := fluxstatus.CommitOf(o.Revision)
		c = strings.TrimPrefix(strings.TrimPrefix(c, "sha1:"), "sha256:")
		if commitRE.MatchString(c) {
			return c
		}
	}
	return ""
}

// commitRE is a full SHA-1 or SHA-256 commit in hex (status.history[].commit holds at most 64).
var commitRE = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)

// pinKind is what a version is pinned to: a Git commit, or an OCI artifact's digest.
func pinKind(op *csv1.ManagementOperator) string {
	if op.Spec.Source.OCI != nil {
		return "digest"
	}
	return "commit"
}

// pinName names a pin (the hex of status.history[].commit) for messages: "commit <hex>", or
// "digest sha256:<hex>" for an OCI source.
func pinName(op *csv1.ManagementOperator, hex string) string {
	if op.Spec.Source.OCI != nil {
		return "digest sha256:" + hex
	}
	return "commit " + hex
}

// tagVerified is the TagVerified condition: whether the tag of target still points at the commit
// target is pinned to, as the listing in shows.
func tagVerified(op *csv1.ManagementOperator, target, pinned string, in Input) metav1.Condition {
	subject, tag := Subject(op), op.Tag(target)
	at := func(hex string) string { return pinName(op, hex) }
	bare := func(hex string) string {
		if op.Spec.Source.OCI != nil {
			return "sha256:" + hex
		}
		return hex
	}
	c := condition(csv1.TagVerifiedCondition, metav1.ConditionTrue, csv1.ReasonAsExpected, "", in.Now)
	switch {
	case target == "":
		c.Message = fmt.Sprintf("%s: no version has been accepted yet; there is no tag to verify", subject)
	case op.Spec.FollowMovedTags:
		c.Message = fmt.Sprintf("%s: %s follows its tag %s (spec.followMovedTags)", subject, target, tag)
	case in.TagsError != nil:
		c.Status, c.Reason = metav1.ConditionUnknown, in.TagsError.Reason
		c.Message = fmt.Sprintf("%s: cannot check where tag %s points: %s", subject, tag, in.TagsError.Message)
	case pinned == "":
		c.Message = fmt.Sprintf("%s: tag %s has not been fetched yet; %s is pinned to the %s Flux first fetches", subject, tag, target, pinKind(op))
	case in.Tags == nil:
		if prev := apimeta.FindStatusCondition(op.Status.Conditions, csv1.TagVerifiedCondition); prev != nil {
			return condition(prev.Type, prev.Status, prev.Reason, prev.Message, in.Now)
		}
		c.Message = fmt.Sprintf("%s: %s is pinned to %s; its tag %s has not been listed yet", subject, target, at(pinned), tag)
	case in.Tags[tag] == "":
		c.Status, c.Reason = metav1.ConditionFalse, csv1.ReasonTagMoved
		c.Message = fmt.Sprintf("%s: tag %s was fetched at %s and no longer exists; %s keeps being delivered at %s. Publish the change as a new version, or push the tag again",
			subject, tag, at(pinned), target, bare(pinned))
	case in.Tags[tag] != pinned:
		c.Status, c.Reason = metav1.ConditionFalse, csv1.ReasonTagMoved
		c.Message = fmt.Sprintf("%s: tag %s moved from %s, which %s is pinned to, to %s; %s keeps being delivered. Publish the change as a new version, move the tag back, or set spec.followMovedTags to deliver %s",
			subject, tag, at(pinned), target, bare(in.Tags[tag]), bare(pinned), bare(in.Tags[tag]))
	default:
		c.Message = fmt.Sprintf("%s: tag %s points at %s, which %s is pinned to", subject, tag, at(pinned), target)
	}
	if in.Tags != nil {
		if _, ignored := availableUpdates(in.Tags, op.Tag(""), "", nil, nil); ignored+in.IgnoredTags > 0 {
			c.Message += fmt.Sprintf("; %d tag(s) with the tag prefix %q are not versions of at most %d characters of the form v1.2.3 and are not listed in availableUpdates",
				ignored+in.IgnoredTags, op.Tag(""), csv1.MaxVersionLength)
		}
	}
	c.Message = fluxstatus.Truncate(c.Message)
	return c
}

// boundedUnhealthy keeps at most MaxUnhealthy records, each object reference within the API's
// 320 characters (a Deployment's "<namespace>/<name>" may be longer).
func boundedUnhealthy(us []csv1.UnhealthyObject) []csv1.UnhealthyObject {
	if len(us) > MaxUnhealthy {
		us = us[:MaxUnhealthy]
	}
	for i := range us {
		if len(us[i].Object) > maxObjectRef {
			us[i].Object = us[i].Object[:maxObjectRef]
		}
	}
	return us
}

// maxObjectRef is the API's bound of status.unhealthy[].object.
const maxObjectRef = 320

func parseChannel(ch string) (*semver.Constraints, error) {
	if ch == "" {
		return nil, nil
	}
	return requirements.ParseRange(ch)
}

// availableUpdates are the versions of the tags (with the tag prefix) newer than the delivered
// version, within the channel when there is one, or stable ones without a channel; newest
// first, at most csv1.MaxAvailableUpdates. None while the channel does not parse. ignored counts
// the tags with the prefix that are not versions the status can hold (IsVersion).
func availableUpdates(tags map[string]string, prefix, delivered string, channel *semver.Constraints, channelErr error) (out []string, ignored int) {
	var base *semver.Version
	if delivered != "" {
		base, _ = requirements.ParseVersion(delivered)
	}
	type cand struct {
		name string
		v    *semver.Version
	}
	var cands []cand
	for t := range tags {
		name, ok := strings.CutPrefix(t, prefix)
		if !ok {
			continue
		}
		if !IsVersion(name) {
			ignored++
			continue
		}
		v, err := requirements.ParseVersion(name)
		if err != nil || (base != nil && !v.GreaterThan(base)) {
			continue
		}
		if channel != nil && !channel.Check(v) || channel == nil && v.Prerelease() != "" {
			continue
		}
		cands = append(cands, cand{name, v})
	}
	if channelErr != nil {
		return nil, ignored
	}
	sort.Slice(cands, func(i, j int) bool {
		if c := cands[i].v.Compare(cands[j].v); c != 0 {
			return c > 0
		}
		return cands[i].name > cands[j].name // equal precedence (build metadata): a fixed order
	})
	if len(cands) > csv1.MaxAvailableUpdates {
		cands = cands[:csv1.MaxAvailableUpdates]
	}
	if len(cands) == 0 {
		return nil, ignored
	}
	out = make([]string, len(cands))
	for i, c := range cands {
		out[i] = c.name
	}
	return out, ignored
}

// relatedObjects are the Flux objects and the Deployments, sorted, at most 64.
func relatedObjects(op *csv1.ManagementOperator, namespace string, deps []Deployment) []csv1.ResourceReference {
	out := opgen.RelatedObjects(op, namespace)
	sorted := append([]Deployment(nil), deps...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Ref() < sorted[j].Ref() })
	for _, d := range sorted {
		out = append(out, csv1.ResourceReference{Group: "apps", Resource: "deployments", Namespace: d.Namespace, Name: d.Name})
	}
	if len(out) > 64 {
		out = out[:64]
	}
	return out
}
