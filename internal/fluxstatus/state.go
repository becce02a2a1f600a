// Package fluxstatus reads the readiness of the Flux objects the operator generated and turns
// it into Available, Progressing, Degraded and Ready conditions. Everything here is a pure
// function of objects and time, table-tested without a client.
package fluxstatus

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ObjectState is what the status aggregation needs to know of one Flux object.
type ObjectState struct {
	// Kind and Name identify the object ("HelmRelease", "c1-cni").
	Kind, Name string
	// Component is the stack component the object delivers, for messages.
	Component string
	// Exists is false when the object was expected but not found.
	Exists bool
	// Created is the object's creation time.
	Created time.Time
	// Ready is the status of its Ready condition (Unknown when absent).
	Ready metav1.ConditionStatus
	// ReadySince is the last transition time of the Ready condition.
	ReadySince time.Time
	// ReadyStale is true when Flux set the Ready condition for an older generation of the
	// object: its status and message speak of the spec before the last change (helm-controller
	// leaves a failed release's Ready False until it acts on the new spec).
	ReadyStale bool
	// Message is what Flux said in the Ready condition (or Stalled, when stalled).
	Message string
	// Reason is the reason of the Ready (or Stalled) condition.
	Reason string
	// Stalled is true when Flux reports the Stalled condition True.
	Stalled bool
	// Reconciling is true when Flux reports the Reconciling condition True.
	Reconciling bool
	// Current is true when Flux has observed the object's current generation.
	Current bool
	// Revision is what the object last applied or produced: the artifact revision of a source,
	// the last applied revision of a Kustomization, the chart version of a HelmRelease's
	// current release.
	Revision string
	// ExpectedRevision is the revision it must have; empty when any revision will do.
	ExpectedRevision string
	// AlsoExpected are other revisions that count as the expected one (a chart version as the
	// chart has it, where helm-controller may append a digest, or may not).
	AlsoExpected []string
}

// Ref is "<Kind>/<name>".
func (s ObjectState) Ref() string { return s.Kind + "/" + s.Name }

// Same is true when s and o say the same of their object: every field equal, the times as
// instants (whatever their location).
func (s ObjectState) Same(o ObjectState) bool {
	if !s.Created.Equal(o.Created) || !s.ReadySince.Equal(o.ReadySince) {
		return false
	}
	s.Created, s.ReadySince, o.Created, o.ReadySince = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	return reflect.DeepEqual(s, o)
}

// AtRevision is true when the object applied the expected revision.
func (s ObjectState) AtRevision() bool {
	if s.ExpectedRevision == "" {
		return s.Revision != ""
	}
	if s.Revision == s.ExpectedRevision || strings.HasPrefix(s.Revision, s.ExpectedRevision+"@") || slices.Contains(s.AlsoExpected, s.Revision) {
		return true
	}
	d := CommitOf(s.ExpectedRevision)
	return d != "" && d == CommitOf(s.Revision)
}

// CommitOf returns the Git commit digest of a Flux source revision ("sha1:<hex>" of
// "v1@sha1:<hex>", "main@sha1:<hex>" or "sha1:<hex>"), or "" when the revision names none.
// A release pinned to a commit has artifacts named by the commit alone, so revisions are
// compared by commit.
func CommitOf(rev string) string {
	if i := strings.LastIndex(rev, "@"); i >= 0 {
		rev = rev[i+1:]
	}
	if strings.HasPrefix(rev, "sha1:") || strings.HasPrefix(rev, "sha256:") {
		return rev
	}
	return ""
}

// Healthy is true when the object is Ready at its current generation and expected revision.
//
// A routine reconcile of an unchanged object is healthy too: kustomize-controller marks Ready
// Unknown (reason Progressing) at the start of every reconcile, interval ones included. When
// the object has observed its generation and already applied the expected revision, nothing
// is moving, and reporting Progressing for it would make every object's status churn at every
// Flux interval. A reconcile that then fails turns Ready False, which is not healthy.
func (s ObjectState) Healthy() bool {
	if !s.Exists || !s.Current || s.Stalled || !s.AtRevision() {
		return false
	}
	return s.Ready == metav1.ConditionTrue || s.routineReconcile()
}

// RoutineReconcile is true while Flux reconciles an object that is healthy and stays so
// (Healthy): kustomize-controller marks Ready Unknown, "Reconciliation in progress", at the start
// of every reconcile, the interval's drift checks included, with nothing moving.
func (s ObjectState) RoutineReconcile() bool {
	return s.Healthy() && s.routineReconcile()
}

func (s ObjectState) routineReconcile() bool {
	return s.Ready == metav1.ConditionUnknown && s.Reason == meta.ProgressingReason && s.Revision != ""
}

// queued is true while the object waits for its Flux controller to pick up its current spec:
// it exists, the controller has not observed its current generation and has set no Ready
// condition for it yet (a controller at work sets Ready Unknown, "Running 'install' action", before
// it records the generation it observed).
func (s ObjectState) queued() bool {
	return s.Exists && !s.Current && !s.Stalled && (s.ReadySince.IsZero() || s.ReadyStale)
}

// workingSince is when the object's Flux controller last moved the object on, at its current
// spec: the last transition of the Ready condition it set for that spec (the start of an
// attempt, its failure, or its success, which helm-controller and kustomize-controller may report
// a moment before they record the generation they observed). Zero when the controller has set
// none (queued, or a Ready of an older spec) or the object is stalled.
func (s ObjectState) workingSince() time.Time {
	if !s.Exists || s.Stalled || s.ReadyStale {
		return time.Time{}
	}
	return s.ReadySince
}

// Missing returns the state of an expected object that does not exist.
func Missing(kind, name, component string) ObjectState {
	return ObjectState{Kind: kind, Name: name, Component: component, Ready: metav1.ConditionUnknown}
}

func fromConditions(kind string, obj metav1.Object, conds []metav1.Condition, observed int64) ObjectState {
	s := ObjectState{
		Kind:    kind,
		Name:    obj.GetName(),
		Exists:  true,
		Created: obj.GetCreationTimestamp().Time,
		Ready:   metav1.ConditionUnknown,
		Current: observed == obj.GetGeneration(),
	}
	if c := apimeta.FindStatusCondition(conds, meta.ReadyCondition); c != nil {
		s.Ready, s.Reason, s.Message, s.ReadySince = c.Status, c.Reason, elideObjects(c.Message), c.LastTransitionTime.Time
		s.ReadyStale = ofOlderGeneration(c, obj)
	}
	// A stall of an older generation is over: Flux tries a changed spec again (helm-controller
	// resets its failure counts), the stall just has not been cleared yet.
	if c := apimeta.FindStatusCondition(conds, meta.StalledCondition); c != nil && c.Status == metav1.ConditionTrue && !ofOlderGeneration(c, obj) {
		s.Stalled, s.Reason, s.Message = true, c.Reason, elideObjects(c.Message)
	}
	if c := apimeta.FindStatusCondition(conds, meta.ReconcilingCondition); c != nil && c.Status == metav1.ConditionTrue {
		s.Reconciling = true
	}
	return s
}

// ofOlderGeneration is true when Flux set condition c for a generation of obj before its
// current one (Flux's condition setters record the object's generation in every condition; zero
// when it was not recorded).
func ofOlderGeneration(c *metav1.Condition, obj metav1.Object) bool {
	return c.ObservedGeneration != 0 && c.ObservedGeneration < obj.GetGeneration()
}

// FromGitRepository reads a GitRepository; the expected revision is its tag.
func FromGitRepository(o *sourcev1.GitRepository) ObjectState {
	s := fromConditions(sourcev1.GitRepositoryKind, o, o.Status.Conditions, o.Status.ObservedGeneration)
	if o.Status.Artifact != nil {
		s.Revision = o.Status.Artifact.Revision
	}
	switch ref := o.Spec.Reference; {
	case ref != nil && ref.Commit != "":
		s.ExpectedRevision = "sha1:" + ref.Commit
	case ref != nil && ref.Tag != "":
		s.ExpectedRevision = ref.Tag
	}
	if ref := o.Spec.Reference; ref != nil && ref.Commit != "" && s.Ready == metav1.ConditionFalse && strings.Contains(s.Message, unreachableCommit) {
		s.Message += fmt.Sprintf(" (source-controller fetches a pinned commit from the repository's branches, and commit %s is on none of them: push it to a branch, for example the one the tag was made on)", ref.Commit)
	}
	return s
}

// FromOCIRepository reads an OCIRepository: its artifact's revision ("<tag>@sha256:<hex>", or
// "sha256:<hex>" when pinned to a digest), expected at the digest it is pinned to, else at its tag.
// A failed verification's message (Flux's, naming the digest) is kept as it is.
func FromOCIRepository(o *sourcev1.OCIRepository) ObjectState {
	s := fromConditions(sourcev1.OCIRepositoryKind, o, o.Status.Conditions, o.Status.ObservedGeneration)
	if o.Status.Artifact != nil {
		s.Revision = o.Status.Artifact.Revision
	}
	switch ref := o.Spec.Reference; {
	case ref != nil && ref.Digest != "":
		s.ExpectedRevision = ref.Digest
	case ref != nil && ref.Tag != "":
		s.ExpectedRevision = ref.Tag
	}
	return s
}

// unreachableCommit is in source-controller's message when the commit a GitRepository is pinned to
// is not among the objects it fetched: its clone of a commit fetches every branch, not tags, so a
// tag on a commit that no branch contains cannot be delivered pinned.
const unreachableCommit = "unable to resolve commit object for"

// FromHelmChart reads a HelmChart; expected is the chart version the stack declares.
func FromHelmChart(o *sourcev1.HelmChart, expectedVersion string) ObjectState {
	s := fromConditions(sourcev1.HelmChartKind, o, o.Status.Conditions, o.Status.ObservedGeneration)
	if o.Status.Artifact != nil {
		s.Revision = o.Status.Artifact.Revision
	}
	s.ExpectedRevision = expectedVersion
	return s
}

// FromHelmRelease reads a HelmRelease; expected is the chart version it must have deployed, and
// also the versions that count as it (AlsoExpected).
func FromHelmRelease(o *helmv2.HelmRelease, expectedVersion string, also ...string) ObjectState {
	s := fromConditions(helmv2.HelmReleaseKind, o, o.Status.Conditions, o.Status.ObservedGeneration)
	if latest := o.Status.History.Latest(); latest != nil && latest.Status == "deployed" {
		s.Revision = latest.ChartVersion
	}
	s.ExpectedRevision = expectedVersion
	s.AlsoExpected = also
	// After a remediation or a stall, helm-controller's Ready (or Stalled) message says what it
	// did about a failure ("Helm rollback to previous release kube-system/cni.v15 with chart
	// cni@1.0.0 succeeded", "Failed to upgrade after 3 attempt(s)"); the failure itself is in the
	// condition of the failed action. The remediation is said in fixed words, without the Helm
	// revision that grows at every retry, so that a failure retried for hours reads the same.
	cause := helmFailure(o.Status.Conditions)
	switch {
	case cause == "" || cause == s.Message:
	case s.Stalled && releaseStalls[s.Reason]:
		s.Message = fmt.Sprintf("%s (%s)", cause, s.Message)
	case s.Ready == metav1.ConditionFalse && s.Reason == helmv2.RollbackSucceededReason:
		s.Message = cause + " (rolled back to the previous release)"
	case s.Ready == metav1.ConditionFalse && s.Reason == helmv2.UninstallSucceededReason:
		s.Message = cause + " (the failed release was uninstalled)"
	}
	return s
}

// releaseStalls are the reasons of a HelmRelease's Stalled condition that a failed Helm action
// caused (helm-controller does not export them): its retries ran out, or it has no release to roll
// back to. Its other stalls (an invalid CEL expression, denied access) are about the object, not
// the last action, so an older failure in Released does not explain them.
var releaseStalls = map[string]bool{"RetriesExceeded": true, "MissingRollbackTarget": true}

// helmFailure returns what failed in a HelmRelease's last Helm action (its Released condition, or
// TestSuccess for failed tests), or "" when neither is False.
func helmFailure(conds []metav1.Condition) string {
	for _, t := range []string{helmv2.ReleasedCondition, helmv2.TestSuccessCondition} {
		if c := apimeta.FindStatusCondition(conds, t); c != nil && c.Status == metav1.ConditionFalse && c.Message != "" {
			return elideObjects(c.Message)
		}
	}
	return ""
}

// quoted matches a double-quoted string with backslash escapes; matches are paired from the left.
var quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// elideAbove is the length above which a quoted string in a Flux message is taken for a dump of
// an object and elided.
const elideAbove = 200

// elideObjects shortens a Flux message by replacing each double-quoted string longer than 200
// characters with "…". The API server quotes the whole object in some errors (`Invalid value:
// "{\"apiVersion\":…}": json: cannot unmarshal string into Go struct field
// DeploymentSpec.spec.replicas of type int32`), which buries the cause at the end of a message
// several kilobytes long, past where a condition's message is truncated.
func elideObjects(msg string) string {
	if len(msg) <= elideAbove {
		return msg
	}
	return quoted.ReplaceAllStringFunc(msg, func(q string) string {
		if len(q) > elideAbove {
			return `"…"`
		}
		return q
	})
}

// FromKustomization reads a Kustomization; expected is the source revision it must have applied.
func FromKustomization(o *kustomizev1.Kustomization, expectedRevision string) ObjectState {
	s := fromConditions(kustomizev1.KustomizationKind, o, o.Status.Conditions, o.Status.ObservedGeneration)
	s.Revision = o.Status.LastAppliedRevision
	s.ExpectedRevision = expectedRevision
	return s
}

// controllerOf names the Flux controller that reconciles objects of kind.
func controllerOf(kind string) string {
	switch kind {
	case helmv2.HelmReleaseKind:
		return "helm-controller"
	case kustomizev1.KustomizationKind:
		return "kustomize-controller"
	default:
		return "source-controller"
	}
}

// Describe says in a few words what is wrong with an object, for messages.
func (s ObjectState) Describe() string {
	switch {
	case !s.Exists:
		return fmt.Sprintf("%s does not exist yet", s.Ref())
	case s.Stalled:
		return fmt.Sprintf("%s stalled: %s", s.Ref(), s.Message)
	case s.Ready == metav1.ConditionFalse && s.Message != "":
		return fmt.Sprintf("%s: %s", s.Ref(), s.Message)
	case !s.Current && s.Ready == metav1.ConditionUnknown && s.Message != "":
		return fmt.Sprintf("%s: %s", s.Ref(), s.Message)
	case !s.Current:
		// Names the controller: when it lasts, that controller is not running or not keeping up.
		return fmt.Sprintf("%s has not observed its latest generation yet (waiting for %s)", s.Ref(), controllerOf(s.Kind))
	case s.Ready == metav1.ConditionTrue && !s.AtRevision():
		return fmt.Sprintf("%s is at revision %q, expected %q", s.Ref(), s.Revision, s.ExpectedRevision)
	case s.Ready == metav1.ConditionTrue:
		return fmt.Sprintf("%s is Ready", s.Ref())
	case s.Message != "":
		return fmt.Sprintf("%s: %s", s.Ref(), s.Message)
	default:
		return fmt.Sprintf("%s is not Ready", s.Ref())
	}
}
