package opstatus

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/requirements"
)

const (
	grace   = 5 * time.Minute
	subject = "management operator cluster-api: "
)

// c is a condition without times and generation.
type c struct{ Status, Reason, Message string }

func at(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }
func atp(d time.Duration) *metav1.Time {
	t := at(d)
	return &t
}

// progressingSince are previous conditions of a rollout that started d ago.
func progressingSince(d time.Duration) []metav1.Condition {
	return []metav1.Condition{
		{Type: "Available", Status: metav1.ConditionTrue, Reason: "AsExpected", LastTransitionTime: at(-24 * time.Hour)},
		{Type: "Progressing", Status: metav1.ConditionTrue, Reason: "Upgrading", LastTransitionTime: at(-d)},
		{Type: "Degraded", Status: metav1.ConditionFalse, Reason: "AsExpected", LastTransitionTime: at(-24 * time.Hour)},
	}
}

func completed(version string, started, done time.Duration) csv1.OperatorHistoryEntry {
	return csv1.OperatorHistoryEntry{Version: version, State: csv1.UpdateCompleted, StartedTime: at(started), CompletionTime: atp(done)}
}

func partial(version string, started time.Duration) csv1.OperatorHistoryEntry {
	return csv1.OperatorHistoryEntry{Version: version, State: csv1.UpdatePartial, StartedTime: at(started)}
}

var (
	inUse = []requirements.Release{
		{Name: "stacks/aws-base-1-36-v1", Requirements: []csv1.StackRequirement{{Operator: "cluster-api", Versions: ">=1.9.0 <1.11.0"}}},
	}
	required = []string{"stacks/aws-base-1-36-v1"}
)

// observed are the Flux objects: the source written for specVersion's tag, both having fetched
// and applied appliedVersion's tag, with deployments in the inventory.
func observed(op *csv1.ManagementOperator, specVersion, appliedVersion string) Observed {
	return Observed{
		GitRepository: fetchedRepo(op, specVersion, op.Tag(appliedVersion)),
		Kustomization: appliedKustomization(op, op.Tag(appliedVersion), "capi-system/capi-manager"),
	}
}

type want struct {
	// Conds are the conditions checked, by type.
	Conds            map[string]c
	Versions         string
	Desired          string
	Delivered        bool
	History          []csv1.OperatorHistoryEntry
	AvailableUpdates []string
	RequeueAfter     time.Duration
}

func TestCompute(t *testing.T) {
	const (
		healthDeadline = "health check failed after 10m0s: timeout waiting for: [Deployment/capi-system/capi-manager status: 'InProgress']"
		moving         = "moving from v1.10.3 to v1.11.0: "
	)
	type tcase struct {
		name        string
		op          *csv1.ManagementOperator
		inUse       []requirements.Release
		obs         func(op *csv1.ManagementOperator) Observed
		deployments []Deployment
		requiredBy  []string
		tags        []string
		want        want
	}
	steadyHistory := []csv1.OperatorHistoryEntry{completed("v1.10.3", -48*time.Hour, -47*time.Hour)}
	steady := func(mut ...func(*csv1.ManagementOperator)) *csv1.ManagementOperator {
		return operator("v1.10.3", "v1.10.3", "v1.10.3", append([]func(*csv1.ManagementOperator){func(op *csv1.ManagementOperator) {
			op.Status.History = steadyHistory
			op.Status.Conditions = []metav1.Condition{
				{Type: "Available", Status: metav1.ConditionTrue, Reason: "AsExpected", LastTransitionTime: at(-24 * time.Hour)},
				{Type: "Progressing", Status: metav1.ConditionFalse, Reason: "AsExpected", LastTransitionTime: at(-24 * time.Hour)},
			}
		}}, mut...)...)
	}
	upgrading := func(since time.Duration, mut ...func(*csv1.ManagementOperator)) *csv1.ManagementOperator {
		return operator("v1.11.0", "v1.10.3", "v1.11.0", append([]func(*csv1.ManagementOperator){func(op *csv1.ManagementOperator) {
			op.Status.History = append([]csv1.OperatorHistoryEntry{partial("v1.11.0", -since)}, steadyHistory...)
			op.Status.Conditions = progressingSince(since)
		}}, mut...)...)
	}
	tests := []tcase{
		{
			name:        "steady state: the delivered version available, nothing moving",
			op:          steady(),
			obs:         func(op *csv1.ManagementOperator) Observed { return observed(op, "v1.10.3", "v1.10.3") },
			deployments: []Deployment{dep("capi-manager", "v1.10.3")},
			requiredBy:  required,
			want: want{
				Conds: map[string]c{
					"Available":   {"True", "AsExpected", subject + "v1.10.3 is available"},
					"Progressing": {"False", "AsExpected", subject + "v1.10.3 is applied"},
					"Degraded":    {"False", "AsExpected", subject + "desired state is met or converging"},
					"Ready":       {"True", "AsExpected", subject + "v1.10.3 is available"},
					"Upgradeable": {"True", "AsExpected", subject + "spec.version v1.10.3 is the delivered version; no upgrade is pending"},
					"Disabled":    {"False", "Required", subject + "required by release stacks/aws-base-1-36-v1"},
				},
				Versions: "v1.10.3", Desired: "v1.10.3", Delivered: true, History: steadyHistory,
			},
		},
		{
			name:       "first install begins: nothing exists yet; a Partial history entry",
			op:         operator("v1.10.3", "", ""),
			obs:        func(*csv1.ManagementOperator) Observed { return Observed{} },
			requiredBy: required,
			want: want{
				Conds: map[string]c{
					"Available":   {"False", "Reconciling", subject + "GitRepository/cluster-api-operator does not exist yet"},
					"Progressing": {"True", "Reconciling", subject + "GitRepository/cluster-api-operator does not exist yet"},
					"Degraded":    {"False", "AsExpected", subject + "desired state is met or converging"},
					"Reconciling": {"True", "Reconciling", subject + "GitRepository/cluster-api-operator does not exist yet"},
				},
				Desired: "v1.10.3", History: []csv1.OperatorHistoryEntry{partial("v1.10.3", 0)}, RequeueAfter: grace,
			},
		},
		{
			name: "first install done: every Deployment rolled out; the version is reported and the entry Completed",
			op: operator("v1.10.3", "", "v1.10.3", func(op *csv1.ManagementOperator) {
				op.Status.History = []csv1.OperatorHistoryEntry{partial("v1.10.3", -3*time.Minute)}
				op.Status.Conditions = progressingSince(3 * time.Minute)
			}),
			obs:         func(op *csv1.ManagementOperator) Observed { return observed(op, "v1.10.3", "v1.10.3") },
			deployments: []Deployment{dep("capi-manager", "v1.10.3")},
			requiredBy:  required,
			want: want{
				Conds: map[string]c{
					"Available":   {"True", "AsExpected", subject + "v1.10.3 is available"},
					"Progressing": {"False", "AsExpected", subject + "v1.10.3 is applied"},
				},
				Versions: "v1.10.3", Desired: "v1.10.3", Delivered: true,
				History: []csv1.OperatorHistoryEntry{{Version: "v1.10.3", State: csv1.UpdateCompleted, StartedTime: at(-3 * time.Minute), CompletionTime: atp(0)}},
			},
		},
		{
			name:        "upgrade begins (the cache still shows the old tag): moving from X to Y, the old version still reported and Available",
			op:          operator("v1.11.0", "v1.10.3", "v1.10.3", func(op *csv1.ManagementOperator) { op.Status.History = steadyHistory }),
			obs:         func(op *csv1.ManagementOperator) Observed { return observed(op, "v1.10.3", "v1.10.3") },
			deployments: []Deployment{dep("capi-manager", "v1.10.3")},
			requiredBy:  required,
			want: want{
				Conds: map[string]c{
					"Available":   {"True", "AsExpected", subject + "v1.10.3 is available"},
					"Progressing": {"True", "Upgrading", subject + moving + `Deployment/capi-system/capi-manager is at revision "v1.10.3", expected "v1.11.0"`},
					"Degraded":    {"False", "AsExpected", subject + "desired state is met or converging"},
					"Upgradeable": {"True", "AsExpected", subject + "no release in use by Clusters excludes spec.version v1.11.0"},
				},
				Versions: "v1.10.3", Desired: "v1.11.0",
				History: append([]csv1.OperatorHistoryEntry{partial("v1.11.0", 0)}, steadyHistory...), RequeueAfter: grace,
			},
		},
		{
			name: "upgrade: applied, one Deployment still rolling out: the old version stays reported",
			op:   upgrading(2 * time.Minute),
			obs:  func(op *csv1.ManagementOperator) Observed { return observed(op, "v1.11.0", "v1.11.0") },
			deployments: []Deployment{
				dep("capi-manager", "v1.11.0"),
				dep("capi-webhook", "v1.11.0", func(d *Deployment) { d.Replicas, d.Updated, d.Available, d.Total = 2, 1, 2, 3 }),
			},
			requiredBy: required,
			want: want{
				Conds: map[string]c{
					"Available":   {"True", "AsExpected", subject + "v1.10.3 is available"},
					"Progressing": {"True", "Upgrading", subject + moving + "Deployment/capi-system/capi-webhook: rolling out: 1 of 2 replicas updated, 2 available, 3 in total"},
				},
				Versions: "v1.10.3", Desired: "v1.11.0",
				History: append([]csv1.OperatorHistoryEntry{partial("v1.11.0", -2*time.Minute)}, steadyHistory...), RequeueAfter: 3 * time.Minute,
			},
		},
		{
			name: "upgrade: a Deployment the new version adds is not available yet: the old version still serves",
			op:   upgrading(2 * time.Minute),
			obs:  func(op *csv1.ManagementOperator) Observed { return observed(op, "v1.11.0", "v1.11.0") },
			deployments: []Deployment{
				dep("capi-manager", "v1.11.0"),
				dep("capi-new", "v1.11.0", func(d *Deployment) {
					d.Created, d.Available, d.AvailableCondition = t0.Add(-time.Minute), 0, metav1.ConditionFalse
				}),
			},
			requiredBy: required,
			want: want{
				Conds: map[string]c{
					"Available":   {"True", "AsExpected", subject + "v1.10.3 is available"},
					"Progressing": {"True", "Upgrading", subject + moving + "Deployment/capi-system/capi-new: rolling out: 1 of 1 replicas updated, 0 available, 1 in total"},
				},
				Versions: "v1.10.3", Desired: "v1.11.0",
				History: append([]csv1.OperatorHistoryEntry{partial("v1.11.0", -2*time.Minute)}, steadyHistory...), RequeueAfter: 3 * time.Minute,
			},
		},
		{
			name:        "upgrade done: every Deployment of the new version Available: the version moves, the entry is Completed",
			op:          upgrading(4 * time.Minute),
			obs:         func(op *csv1.ManagementOperator) Observed { return observed(op, "v1.11.0", "v1.11.0") },
			deployments: []Deployment{dep("capi-manager", "v1.11.0"), dep("capi-webhook", "v1.11.0")},
			requiredBy:  required,
			want: want{
				Conds: map[string]c{
					"Available":   {"True", "AsExpected", subject + "v1.11.0 is available"},
					"Progressing": {"False", "AsExpected", subject + "v1.11.0 is applied"},
					"Ready":       {"True", "AsExpected", subject + "v1.11.0 is available"},
				},
				Versions: "v1.11.0", Desired: "v1.11.0", Delivered: true,
				History: append([]csv1.OperatorHistoryEntry{{Version: "v1.11.0", State: csv1.UpdateCompleted, StartedTime: at(-4 * time.Minute), CompletionTime: atp(0)}}, steadyHistory...),
			},
		},
		{
			name: "upgrade failed beyond the grace period: Degraded with what failed; Available while the old pods serve",
			op: upgrading(12*time.Minute, func(op *csv1.ManagementOperator) {
				op.Status.Unhealthy = []csv1.UnhealthyObject{{Object: "Kustomization/cluster-api-operator", Since: at(-12 * time.Minute)}}
			}),
			obs: func(op *csv1.ManagementOperator) Observed {
				o := observed(op, "v1.11.0", "v1.10.3")
				o.GitRepository = fetchedRepo(op, "v1.11.0", "v1.11.0")
				o.Kustomization.Status.LastAttemptedRevision = "v1.11.0@sha1:" + commit("v1.11.0")
				o.Kustomization.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "HealthCheckFailed", Message: healthDeadline, LastTransitionTime: at(-2 * time.Minute)}}
				return o
			},
			deployments: []Deployment{dep("capi-manager", "v1.11.0", func(d *Deployment) {
				d.Replicas, d.Updated, d.Available, d.Total = 1, 1, 1, 2
				d.Failure, d.FailureReason, d.FailedSince = `ReplicaSet "capi-manager-7c9" has timed out progressing.`, "ProgressDeadlineExceeded", t0.Add(-2*time.Minute)
			})},
			requiredBy: required,
			want: want{
				Conds: map[string]c{
					"Available":   {"True", "AsExpected", subject + "v1.10.3 is available"},
					"Progressing": {"True", "Upgrading", subject + moving + `Deployment/capi-system/capi-manager: rollout failed: ReplicaSet "capi-manager-7c9" has timed out progressing.`},
					"Degraded":    {"True", "FluxObjectNotReady", subject + "Kustomization/cluster-api-operator: " + healthDeadline + " (not Ready for more than 5m0s)"},
					"Ready":       {"False", "FluxObjectNotReady", subject + "Kustomization/cluster-api-operator: " + healthDeadline + " (not Ready for more than 5m0s)"},
					"Stalled":     {"True", "FluxObjectNotReady", subject + "Kustomization/cluster-api-operator: " + healthDeadline + " (not Ready for more than 5m0s)"},
				},
				Versions: "v1.10.3", Desired: "v1.11.0",
				History: append([]csv1.OperatorHistoryEntry{partial("v1.11.0", -12*time.Minute)}, steadyHistory...),
				// The Deployment's own grace (failed 2 minutes ago) runs out in 3 minutes.
				RequeueAfter: 3 * time.Minute,
			},
		},
		{
			name: "the delivered version does not serve: a Deployment is not available",
			op:   steady(),
			obs:  func(op *csv1.ManagementOperator) Observed { return observed(op, "v1.10.3", "v1.10.3") },
			deployments: []Deployment{dep("capi-manager", "v1.10.3", func(d *Deployment) {
				d.Available, d.AvailableCondition, d.AvailableMessage = 0, metav1.ConditionFalse, "Deployment does not have minimum availability."
			})},
			requiredBy: required,
			want: want{
				Conds: map[string]c{
					"Available":   {"False", "DeploymentUnavailable", subject + "Deployment capi-system/capi-manager is not available: Deployment does not have minimum availability."},
					"Progressing": {"True", "Reconciling", subject + "Deployment/capi-system/capi-manager: rolling out: 1 of 1 replicas updated, 0 available, 1 in total"},
					"Degraded":    {"False", "AsExpected", subject + "desired state is met or converging"},
				},
				Versions: "v1.10.3", Desired: "v1.10.3", History: steadyHistory, RequeueAfter: grace,
			},
		},
		{
			name:        "minor downgrade refused: Degraded DowngradeNotSupported, nothing moves, the delivered version stays Available",
			op:          steady(func(op *csv1.ManagementOperator) { op.Spec.Version = "v1.9.0" }),
			obs:         func(op *csv1.ManagementOperator) Observed { return observed(op, "v1.10.3", "v1.10.3") },
			deployments: []Deployment{dep("capi-manager", "v1.10.3")},
			requiredBy:  required,
			want: want{
				Conds: map[string]c{
					"Available":   {"True", "AsExpected", subject + "v1.10.3 is available"},
					"Progressing": {"False", "AsExpected", subject + "v1.10.3 is applied"},
					"Degraded": {"True", "DowngradeNotSupported", subject + "spec.version v1.9.0 is a downgrade from the delivered v1.10.3 to a lower minor version, which operators do not support " +
						"(their CRDs and stored objects may already use the newer version's schema): nothing is applied; set spec.version to v1.10.x or later"},
					"Stalled":     {"True", "DowngradeNotSupported", ""},
					"Upgradeable": {"Unknown", "DowngradeNotSupported", subject + "spec.version v1.9.0 is refused (see Degraded), so whether the releases in use by Clusters allow it was not checked"},
				},
				Versions: "v1.10.3", Desired: "v1.10.3", Delivered: true, History: steadyHistory,
			},
		},
		{
			name:        "upgrade beyond an in-use release's range: held, Upgradeable False, Progressing names the hold, never Degraded for it",
			op:          steady(func(op *csv1.ManagementOperator) { op.Spec.Version = "v1.11.0" }),
			inUse:       inUse,
			obs:         func(op *csv1.ManagementOperator) Observed { return observed(op, "v1.10.3", "v1.10.3") },
			deployments: []Deployment{dep("capi-manager", "v1.10.3")},
			requiredBy:  required,
			want: want{
				Conds: map[string]c{
					"Available": {"True", "AsExpected", subject + "v1.10.3 is available"},
					"Progressing": {"True", "RequirementsNotMet", subject + "spec.version v1.11.0 is held back because releases in use by Clusters exclude it (release stacks/aws-base-1-36-v1 requires cluster-api >=1.9.0 <1.11.0): " +
						"v1.10.3 stays delivered; move those Clusters to releases that allow v1.11.0, or set spec.overrideStackRequirements to apply it anyway"},
					"Degraded": {"False", "AsExpected", subject + "desired state is met or converging"},
					"Upgradeable": {"False", "RequirementsNotMet", subject + "spec.version v1.11.0 is held back because releases in use by Clusters exclude it (release stacks/aws-base-1-36-v1 requires cluster-api >=1.9.0 <1.11.0): " +
						"v1.10.3 stays delivered; move those Clusters to releases that allow v1.11.0, or set spec.overrideStackRequirements to apply it anyway"},
				},
				Versions: "v1.10.3", Desired: "v1.10.3", Delivered: true, History: steadyHistory,
			},
		},
		{
			name: "upgrade beyond an in-use release's range with the override: applied, Upgradeable False (overridden), the risk in the history",
			op: steady(func(op *csv1.ManagementOperator) {
				op.Spec.Version, op.Spec.OverrideStackRequirements = "v1.11.0", true
			}),
			inUse:       inUse,
			obs:         func(op *csv1.ManagementOperator) Observed { return observed(op, "v1.11.0", "v1.10.3") },
			deployments: []Deployment{dep("capi-manager", "v1.10.3")},
			requiredBy:  required,
			want: want{
				Conds: map[string]c{
					"Available": {"True", "AsExpected", subject + "v1.10.3 is available"},
					"Upgradeable": {"False", "RequirementsOverridden", subject + "spec.version v1.11.0 is applied although releases in use by Clusters exclude it " +
						"(release stacks/aws-base-1-36-v1 requires cluster-api >=1.9.0 <1.11.0), because spec.overrideStackRequirements is true"},
				},
				Versions: "v1.10.3", Desired: "v1.11.0",
				History: append([]csv1.OperatorHistoryEntry{{Version: "v1.11.0", State: csv1.UpdatePartial, StartedTime: at(0),
					AcceptedRisks: "release stacks/aws-base-1-36-v1 requires cluster-api >=1.9.0 <1.11.0"}}, steadyHistory...),
				RequeueAfter: grace,
			},
		},
		{
			name: "no release requires it while it installs: Disabled and Available",
			op:   operator("v1.10.3", "", ""),
			obs:  func(*csv1.ManagementOperator) Observed { return Observed{} },
			want: want{
				Conds: map[string]c{
					"Available":   {"True", "NotRequired", subject + "no stack release in the cluster requires cluster-api; it is Disabled and nothing depends on it"},
					"Disabled":    {"True", "NotRequired", subject + "no stack release in the cluster requires cluster-api (no release's stack.yaml lists it under requires:); it is still delivered"},
					"Progressing": {"True", "Reconciling", subject + "GitRepository/cluster-api-operator does not exist yet"},
					"Ready":       {"False", "Reconciling", subject + "GitRepository/cluster-api-operator does not exist yet"},
				},
				Desired: "v1.10.3", History: []csv1.OperatorHistoryEntry{partial("v1.10.3", 0)}, RequeueAfter: grace,
			},
		},
		{
			name:        "no release requires it, delivered: Disabled, Available and Ready",
			op:          steady(),
			obs:         func(op *csv1.ManagementOperator) Observed { return observed(op, "v1.10.3", "v1.10.3") },
			deployments: []Deployment{dep("capi-manager", "v1.10.3")},
			want: want{
				Conds: map[string]c{
					"Available":   {"True", "NotRequired", subject + "no stack release in the cluster requires cluster-api; it is Disabled and nothing depends on it"},
					"Disabled":    {"True", "NotRequired", subject + "no stack release in the cluster requires cluster-api (no release's stack.yaml lists it under requires:); it is still delivered"},
					"Ready":       {"True", "NotRequired", subject + "no stack release in the cluster requires cluster-api; it is Disabled and nothing depends on it"},
					"Reconciling": {"False", "NotRequired", subject + "no stack release in the cluster requires cluster-api; it is Disabled and nothing depends on it"},
				},
				Versions: "v1.10.3", Desired: "v1.10.3", Delivered: true, History: steadyHistory,
			},
		},
		{
			name:        "a channel that does not parse: Degraded InvalidChannel, the delivered version unaffected, no updates listed",
			op:          steady(func(op *csv1.ManagementOperator) { op.Spec.Channel = "1.2.3.4" }),
			obs:         func(op *csv1.ManagementOperator) Observed { return observed(op, "v1.10.3", "v1.10.3") },
			deployments: []Deployment{dep("capi-manager", "v1.10.3")},
			requiredBy:  required,
			tags:        []string{"v1.10.3", "v1.11.0"},
			want: want{
				Conds: map[string]c{
					"Available": {"True", "AsExpected", subject + "v1.10.3 is available"},
					"Degraded": {"True", "InvalidChannel", subject + `spec.channel "1.2.3.4" is not a semantic version range (e.g. ">=1.10.0 <1.12.0", "~1.10" or "1.10.x || 1.11.x"): ` +
						`improper constraint: "1.2.3.4"; availableUpdates cannot be computed (the delivered version is not affected)`},
				},
				Versions: "v1.10.3", Desired: "v1.10.3", Delivered: true, History: steadyHistory,
			},
		},
		{
			name: "rollback of a failed upgrade to the delivered version: the failed entry closed as Partial",
			op: upgrading(20*time.Minute, func(op *csv1.ManagementOperator) {
				op.Spec.Version = "v1.10.3"
				// The upgrade's Deployment failed its health check 15 minutes ago: a failure of
				// the version left behind, not of the rollback.
				op.Status.Unhealthy = []csv1.UnhealthyObject{{
					Object: "Deployment/capi-system/capi-manager", Since: at(-15 * time.Minute),
					LastFailure: healthDeadline, LastFailureReason: "HealthCheckFailed",
				}}
			}),
			obs:         func(op *csv1.ManagementOperator) Observed { return observed(op, "v1.11.0", "v1.11.0") },
			deployments: []Deployment{dep("capi-manager", "v1.11.0")},
			requiredBy:  required,
			want: want{
				Conds: map[string]c{
					"Available":   {"True", "AsExpected", subject + "v1.10.3 is available"},
					"Progressing": {"True", "RevisionPending", subject + `Deployment/capi-system/capi-manager is at revision "v1.11.0", expected "v1.10.3"`},
					// The rollback has its own grace period, not the failed upgrade's 20 minutes,
					// and the upgrade's failed Deployment is not the rollback's failure.
					"Degraded": {"False", "AsExpected", subject + "desired state is met or converging"},
				},
				Versions: "v1.10.3", Desired: "v1.10.3",
				History: append([]csv1.OperatorHistoryEntry{
					partial("v1.10.3", 0),
					{Version: "v1.11.0", State: csv1.UpdatePartial, StartedTime: at(-20 * time.Minute), CompletionTime: atp(0)},
				}, steadyHistory...),
				RequeueAfter: grace,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(tt.op, tt.inUse)
			r := Compute(Input{
				Operator: tt.op, Namespace: testNS, Decision: d,
				Objects:     States(tt.op, d.Target, PinnedCommit(tt.op, d.Target), tt.obs(tt.op)),
				Deployments: tt.deployments, RequiredBy: tt.requiredBy, Tags: tagCommits(tt.tags...),
				Now: t0, Grace: grace,
			})
			got := want{Conds: map[string]c{}, Desired: r.DesiredVersion, Delivered: r.Delivered, History: r.History,
				AvailableUpdates: r.AvailableUpdates, RequeueAfter: r.RequeueAfter}
			got.Versions = versionIn(r.Versions)
			for typ, w := range tt.want.Conds {
				cond := apimeta.FindStatusCondition(r.Conditions, typ)
				if cond == nil {
					t.Errorf("no %s condition", typ)
					continue
				}
				got.Conds[typ] = c{string(cond.Status), cond.Reason, cond.Message}
				if w.Message == "" { // only status and reason asked for
					got.Conds[typ] = c{string(cond.Status), cond.Reason, ""}
				}
			}
			// The commits history records are TestPinning's.
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(csv1.OperatorHistoryEntry{}, "Commit")); diff != "" {
				t.Errorf("Compute (-want +got):\n%s", diff)
			}
			checkInvariants(t, r)
		})
	}
}

// checkInvariants: the conditions a reader relies on hold together in every result.
func checkInvariants(t *testing.T, r Result) {
	t.Helper()
	cond := func(typ string) metav1.Condition {
		c := apimeta.FindStatusCondition(r.Conditions, typ)
		if c == nil {
			t.Fatalf("no %s condition", typ)
		}
		return *c
	}
	for i, typ := range []string{"Available", "Progressing", "Degraded", "Ready", "Stalled", "Reconciling", "Upgradeable", "Disabled", "TagVerified"} {
		if r.Conditions[i].Type != typ {
			t.Errorf("condition %d is %s, want %s", i, r.Conditions[i].Type, typ)
		}
		if !r.Conditions[i].LastTransitionTime.Time.Equal(t0) {
			t.Errorf("%s transitions at %v, want the input's clock %v", typ, r.Conditions[i].LastTransitionTime, t0)
		}
	}
	wantReady := cond("Available").Status == "True" && cond("Progressing").Status != "True" && cond("Degraded").Status != "True"
	if (cond("Ready").Status == "True") != wantReady {
		t.Errorf("Ready = %s, inconsistent with Available=%s Progressing=%s Degraded=%s", cond("Ready").Status, cond("Available").Status, cond("Progressing").Status, cond("Degraded").Status)
	}
	if cond("Stalled").Status != cond("Degraded").Status {
		t.Errorf("Stalled = %s, want it to mirror Degraded = %s", cond("Stalled").Status, cond("Degraded").Status)
	}
	if cond("Disabled").Status == "True" && cond("Available").Status != "True" {
		t.Errorf("Disabled without Available")
	}
	if len(r.History) > csv1.MaxOperatorHistory {
		t.Errorf("history has %d entries, more than %d", len(r.History), csv1.MaxOperatorHistory)
	}
	if r.Delivered && versionIn(r.Versions) != r.DesiredVersion {
		t.Errorf("delivered, but versions[operator] = %q, want %q", versionIn(r.Versions), r.DesiredVersion)
	}
}

func TestAvailableUpdates(t *testing.T) {
	tags := []string{"v1.9.0", "v1.10.3", "v1.10.4", "v1.11.0", "v1.11.0", "v1.12.0-rc.1", "1.13.0", "latest", "capi/v2.0.0", "capi/v2.1.0"}
	tests := []struct {
		name      string
		channel   string
		prefix    string
		delivered string
		tags      []string
		prev      []string
		want      []string
	}{
		{name: "no channel: every newer stable version, newest first", delivered: "v1.10.3", tags: tags, want: []string{"v1.11.0", "v1.10.4"}},
		{name: "a channel of the delivered minor", channel: "~1.10", delivered: "v1.10.3", tags: tags, want: []string{"v1.10.4"}},
		{name: "a channel with pre-releases", channel: ">=1.11.0-0", delivered: "v1.10.3", tags: tags, want: []string{"v1.12.0-rc.1", "v1.11.0"}},
		{name: "a tag prefix: only its tags", prefix: "capi/", delivered: "v1.10.3", tags: tags, want: []string{"v2.1.0", "v2.0.0"}},
		{name: "nothing delivered yet: every version of the channel", channel: "1.10.x", tags: tags, want: []string{"v1.10.4", "v1.10.3"}},
		{name: "nothing newer", delivered: "v1.11.0", tags: tags},
		{name: "tags not listed this time: the previous list is kept", delivered: "v1.10.3", prev: []string{"v1.10.9"}, want: []string{"v1.10.9"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			op := operator("v1.10.3", tt.delivered, "v1.10.3", func(op *csv1.ManagementOperator) {
				op.Spec.Channel, op.Spec.Source.Git.TagPrefix, op.Status.AvailableUpdates = tt.channel, tt.prefix, tt.prev
			})
			if tt.delivered == "" {
				op.Status.Versions = nil
			}
			r := Compute(Input{Operator: op, Namespace: testNS, Decision: Decide(op, nil), Tags: tagCommits(tt.tags...), RequiredBy: required, Now: t0, Grace: grace})
			if diff := cmp.Diff(tt.want, r.AvailableUpdates); diff != "" {
				t.Errorf("availableUpdates (-want +got):\n%s", diff)
			}
		})
	}
	many := make([]string, 0, 40)
	for i := 0; i < 40; i++ {
		many = append(many, "v1.10."+string(rune('a'+i%26))) // not versions: ignored
		many = append(many, "v2."+itoa(i)+".0")
	}
	op := operator("v1.10.3", "v1.10.3", "v1.10.3")
	r := Compute(Input{Operator: op, Namespace: testNS, Decision: Decide(op, nil), Tags: tagCommits(many...), RequiredBy: required, Now: t0, Grace: grace})
	if len(r.AvailableUpdates) != csv1.MaxAvailableUpdates || r.AvailableUpdates[0] != "v2.39.0" {
		t.Errorf("availableUpdates = %v: want the %d newest, v2.39.0 first", r.AvailableUpdates, csv1.MaxAvailableUpdates)
	}
}

// tagCommits maps tags to their fake commits (commit); nil for none: not listed.
func tagCommits(tags ...string) map[string]string {
	if tags == nil {
		return nil
	}
	out := make(map[string]string, len(tags))
	for _, t := range tags {
		out[t] = commit(t)
	}
	return out
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

func TestHistoryIsCapped(t *testing.T) {
	prev := make([]csv1.OperatorHistoryEntry, 0, csv1.MaxOperatorHistory)
	for i := 0; i < csv1.MaxOperatorHistory; i++ {
		prev = append(prev, completed("v1.0."+itoa(csv1.MaxOperatorHistory-i), -time.Duration(i+2)*time.Hour, -time.Duration(i+1)*time.Hour))
	}
	op := operator("v1.0.11", "v1.0.10", "v1.0.10", func(op *csv1.ManagementOperator) { op.Status.History = prev })
	r := Compute(Input{Operator: op, Namespace: testNS, Decision: Decide(op, nil), RequiredBy: required, Now: t0, Grace: grace})
	if len(r.History) != csv1.MaxOperatorHistory {
		t.Fatalf("history has %d entries, want %d", len(r.History), csv1.MaxOperatorHistory)
	}
	if r.History[0].Version != "v1.0.11" || r.History[len(r.History)-1].Version != "v1.0.2" {
		t.Errorf("history = %s ... %s, want the newest first and the oldest dropped", r.History[0].Version, r.History[len(r.History)-1].Version)
	}
	if op.Status.History[0].Version != "v1.0.10" {
		t.Errorf("Compute changed the input's history")
	}
}

func TestRelatedObjects(t *testing.T) {
	op := operator("v1.10.3", "v1.10.3", "v1.10.3")
	r := Compute(Input{Operator: op, Namespace: testNS, Decision: Decide(op, nil), RequiredBy: required, Now: t0, Grace: grace,
		Deployments: []Deployment{dep("b", "v1.10.3"), dep("a", "v1.10.3")}})
	want := []csv1.ResourceReference{
		{Group: "source.toolkit.fluxcd.io", Resource: "gitrepositories", Namespace: testNS, Name: "cluster-api-operator"},
		{Group: "kustomize.toolkit.fluxcd.io", Resource: "kustomizations", Namespace: testNS, Name: "cluster-api-operator"},
		{Group: "apps", Resource: "deployments", Namespace: "capi-system", Name: "a"},
		{Group: "apps", Resource: "deployments", Namespace: "capi-system", Name: "b"},
	}
	if diff := cmp.Diff(want, r.RelatedObjects); diff != "" {
		t.Errorf("relatedObjects (-want +got):\n%s", diff)
	}
}

// TestApplyTo: writing the same result twice is no change; transition times of unchanged
// conditions are kept, so nothing moves when nothing changed.
func TestApplyTo(t *testing.T) {
	op := operator("v1.10.3", "", "")
	obs := observed(op, "v1.10.3", "v1.10.3")
	compute := func(now time.Time) Result {
		d := Decide(op, nil)
		return Compute(Input{Operator: op, Namespace: testNS, Decision: d, Objects: States(op, d.Target, PinnedCommit(op, d.Target), obs),
			Deployments: []Deployment{dep("capi-manager", "v1.10.3")}, RequiredBy: required, Tags: tagCommits("v1.10.3", "v1.11.0"), Now: now, Grace: grace})
	}
	if !compute(t0).ApplyTo(&op.Status, 1) {
		t.Fatal("the first write changed nothing")
	}
	first := op.Status.DeepCopy()
	if versionIn(op.Status.Versions) != "v1.10.3" || op.Status.ObservedGeneration != 1 || len(op.Status.History) != 1 ||
		op.Status.History[0].State != csv1.UpdateCompleted || !cmp.Equal(op.Status.AvailableUpdates, []string{"v1.11.0"}) {
		t.Fatalf("status after the first write: %+v", op.Status)
	}
	if compute(t0.Add(time.Hour)).ApplyTo(&op.Status, 1) {
		t.Errorf("the same state an hour later was written again:\n%s", cmp.Diff(first, &op.Status))
	}
	if diff := cmp.Diff(first, &op.Status); diff != "" {
		t.Errorf("status moved although nothing changed (-first +now):\n%s", diff)
	}
	if !compute(t0.Add(time.Hour)).ApplyTo(&op.Status, 2) || op.Status.Conditions[0].ObservedGeneration != 2 {
		t.Errorf("a new generation was not recorded")
	}
}

func TestSubjectMessagesAreBounded(t *testing.T) {
	op := operator("v1.11.0", "v1.10.3", "v1.10.3")
	var many []requirements.Release
	for i := 0; i < 200; i++ {
		many = append(many, requirements.Release{Name: strings.Repeat("r", 200) + itoa(i), Requirements: []csv1.StackRequirement{{Operator: "cluster-api", Versions: "<1.11.0"}}})
	}
	d := Decide(op, many)
	r := Compute(Input{Operator: op, Namespace: testNS, Decision: d, RequiredBy: required, Now: t0, Grace: grace})
	for _, cond := range r.Conditions {
		if len(cond.Message) > 2048 {
			t.Errorf("%s message has %d bytes", cond.Type, len(cond.Message))
		}
	}
	if !strings.Contains(d.Held.Message, "and 195 more") {
		t.Errorf("the hold does not say how many more releases exclude the version: %s", d.Held.Message)
	}
}
