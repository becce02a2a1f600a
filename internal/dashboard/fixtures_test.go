package dashboard

import (
	"fmt"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/plugin"
)

// Literal objects for the table tests, as the operator and Flux write them.

const ns = "team-a"

// t0 is the fixtures' clock: conditions changed at t0, pages are read at now.
var (
	t0  = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	now = t0.Add(10 * time.Minute)
)

// hostile is a message of Flux's that quotes a chart's output: markup, a terminal colour and
// a bidirectional override.
const hostile = "install failed: <script>alert(1)</script> \x1b[31mimage \"\" rejected\x1b[0m \u202Egnp.exe\x07"

func cond(t string, s metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(t0)}
}

func ready() []metav1.Condition {
	return []metav1.Condition{
		cond(csv1.AvailableCondition, "True", csv1.ReasonAsExpected, "available"),
		cond(csv1.ProgressingCondition, "False", csv1.ReasonAsExpected, "up to date"),
		cond(csv1.DegradedCondition, "False", csv1.ReasonAsExpected, "fine"),
		cond(csv1.ReadyCondition, "True", csv1.ReasonAsExpected, "ready"),
	}
}

func degraded(msg string) []metav1.Condition {
	return []metav1.Condition{
		cond(csv1.AvailableCondition, "False", csv1.ReasonFluxNotReady, msg),
		cond(csv1.ProgressingCondition, "False", csv1.ReasonAsExpected, "not moving"),
		cond(csv1.DegradedCondition, "True", csv1.ReasonFluxNotReady, msg),
		cond(csv1.ReadyCondition, "False", csv1.ReasonFluxNotReady, msg),
	}
}

func progressing(msg string) []metav1.Condition {
	return []metav1.Condition{
		cond(csv1.AvailableCondition, "False", csv1.ReasonReconciling, msg),
		cond(csv1.ProgressingCondition, "True", csv1.ReasonReconciling, msg),
		cond(csv1.DegradedCondition, "False", csv1.ReasonAsExpected, "fine"),
		cond(csv1.ReadyCondition, "False", csv1.ReasonReconciling, msg),
	}
}

const (
	stackName = "aws-base-1-36"
	relV1     = "aws-base-1-36-v1"
	relV2     = "aws-base-1-36-v2"
)

func stackObj() csv1.ClusterStack {
	soak := metav1.Duration{Duration: time.Hour}
	return csv1.ClusterStack{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: stackName},
		Spec: csv1.ClusterStackSpec{Provider: "aws", Name: "base", KubernetesVersion: "1.36",
			Updates: &csv1.UpdatePolicy{Waves: []csv1.RolloutWave{{Name: "canary", SoakTime: &soak}, {Name: "prod"}}}},
		Status: csv1.ClusterStackStatus{
			Conditions: degraded("cluster team-a/broken: component cni: HelmRelease/broken-cni failed"),
			Versions:   csv1.StackVersions{Available: "v1", Desired: "v2"},
			Releases: []csv1.ReleaseSummary{
				{Name: relV1, Version: "v1", Reasons: []string{"Pinned", "InUse"}, Available: true},
				{Name: relV2, Version: "v2", Reasons: []string{"Latest", "InUse"}, Available: true},
			},
			MissingReleases:    []csv1.MissingRelease{{Name: "aws-base-1-36-v9", Reason: "TagNotFound", Message: "tag aws-base-1-36-v9 is not published"}},
			AvailableUpdates:   []csv1.StackUpdate{{Release: "aws-base-1-36-v3", Version: "v3"}},
			ConditionalUpdates: []csv1.ConditionalUpdate{{StackUpdate: csv1.StackUpdate{Release: "aws-base-1-36-v4", Version: "v4"}, Risks: []csv1.UpdateRisk{{Type: csv1.RiskRequirementsNotMet, Message: "requires cluster-api >=1.12.0"}}}},
			Rollout: &csv1.RolloutStatus{Target: relV2, Waves: []csv1.WaveStatus{
				{Name: "canary", Phase: csv1.WaveDone, Clusters: []string{"healthy"}, Updated: 1, SoakingSince: &metav1.Time{Time: t0},
					PullRequest: &csv1.PullRequestRef{Number: 7, URL: "https://forge.example/fleet/pulls/7", State: "merged"}},
				{Name: "prod", Phase: csv1.WaveHalted, Clusters: []string{"broken", "upgrading"}, Updated: 0,
					Message:     "cluster team-a/broken is Degraded: component cni failed",
					PullRequest: &csv1.PullRequestRef{Number: 8, URL: "https://forge.example/fleet/pulls/8", State: "merged"}},
				{Name: "remaining", Phase: csv1.WavePending},
			}},
		},
	}
}

func releaseObj(name, version string, mutate ...func(*csv1.ClusterStackRelease)) csv1.ClusterStackRelease {
	r := csv1.ClusterStackRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: csv1.ClusterStackReleaseSpec{ClusterStack: stackName, Provider: "aws", StackName: "base", KubernetesVersion: "1.36", Version: version,
			Source: csv1.StackSource{URL: "https://git.example/stacks", Path: "providers/aws/base/1-36"}},
		Status: csv1.ClusterStackReleaseStatus{Conditions: ready(), KubernetesVersion: "v1.36.1",
			Requirements: []csv1.StackRequirement{{Operator: "cluster-api", Versions: ">=1.10.0 <1.12.0"}}},
	}
	for _, m := range mutate {
		m(&r)
	}
	return r
}

func addonObj(name, release string, conds []metav1.Condition, comps ...csv1.AddonComponentStatus) csv1.ClusterAddon {
	readyN := 0
	for _, c := range comps {
		if c.Ready {
			readyN++
		}
	}
	return csv1.ClusterAddon{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       csv1.ClusterAddonSpec{ClusterName: name},
		Status: csv1.ClusterAddonStatus{Conditions: conds, ClusterStack: stackName, DesiredRelease: release, LastAppliedRelease: release,
			Components: comps, Progress: fmt.Sprintf("%d/%d", readyN, len(comps))},
	}
}

func component(cluster, name string, kind csv1.ComponentKind, ready bool, release string) csv1.AddonComponentStatus {
	flux := "HelmRelease/" + cluster + "-" + name
	if kind == csv1.ComponentKindKustomize {
		flux = "Kustomization/" + cluster + "-" + name
	}
	return csv1.AddonComponentStatus{Name: name, Kind: kind, Release: release, Version: "1.0.0", FluxObject: flux, Ready: ready}
}

func clusterObj(name, class string) clusterv1.Cluster {
	return clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(t0)},
		Spec:       clusterv1.ClusterSpec{Topology: clusterv1.Topology{ClassRef: clusterv1.ClusterClassRef{Name: class}, Version: "v1.36.1"}},
	}
}

func helmRelease(name string, conds ...metav1.Condition) helmv2.HelmRelease {
	return helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Status: helmv2.HelmReleaseStatus{Conditions: conds, Failures: 3, InstallFailures: 3}}
}

func kustomization(name string, conds ...metav1.Condition) kustomizev1.Kustomization {
	return kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Status: kustomizev1.KustomizationStatus{Conditions: conds}}
}

func operatorObj() csv1.ManagementOperator {
	return csv1.ManagementOperator{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-api"},
		Spec: csv1.ManagementOperatorSpec{Component: csv1.OperatorComponent{Name: "cluster-api", Type: csv1.CoreProvider}, Version: "v1.12.0",
			Source: csv1.OperatorSource{Git: &csv1.OperatorGitSource{URL: "https://git.example/capi", TagPrefix: "capi-"}}},
		Status: csv1.ManagementOperatorStatus{
			Conditions: append(ready(), cond(csv1.UpgradeableCondition, "False", "RequirementsNotMet", "release team-a/aws-base-1-36-v1 requires cluster-api >=1.10.0 <1.12.0")),
			Versions:   []csv1.OperandVersion{{Name: csv1.OperatorVersionName, Version: "v1.11.2"}}, DesiredVersion: "v1.11.2",
			History: []csv1.OperatorHistoryEntry{{Version: "v1.11.2", State: csv1.UpdateCompleted, StartedTime: metav1.NewTime(t0), Commit: "0123456789abcdef0123"}},
		},
	}
}

// fixture is a fleet of one stack: healthy (v1, Ready), broken (v2, Degraded: its cni
// HelmRelease failed with a hostile message), upgrading (v2, Progressing), fresh (a CAPI Cluster
// without a ClusterAddon yet), and a ManagementOperator held back by v1.
func fixture() Objects {
	healthyComps := []csv1.AddonComponentStatus{component("healthy", "cni", csv1.ComponentKindHelm, true, relV1), component("healthy", "cluster-info", csv1.ComponentKindKustomize, true, relV1)}
	brokenComps := []csv1.AddonComponentStatus{component("broken", "cluster-info", csv1.ComponentKindKustomize, true, relV2), component("broken", "cni", csv1.ComponentKindHelm, false, relV2)}
	upComps := []csv1.AddonComponentStatus{component("upgrading", "cni", csv1.ComponentKindHelm, false, relV2)}
	broken := addonObj("broken", relV2, degraded("component cni: HelmRelease/broken-cni failed: "+hostile), brokenComps...)
	broken.Status.Unhealthy = []csv1.UnhealthyObject{{Object: "HelmRelease/broken-cni", Component: "cni", Since: metav1.NewTime(t0.Add(-5 * time.Minute)), LastFailure: hostile, LastFailureReason: "InstallFailed"}}
	v1 := releaseObj(relV1, "v1", func(r *csv1.ClusterStackRelease) { r.Status.Clusters.Total = 1 })
	v2 := releaseObj(relV2, "v2", func(r *csv1.ClusterStackRelease) { r.Status.Clusters.Total = 2 })
	v2.Status.Requirements = []csv1.StackRequirement{{Operator: "cluster-api", Versions: ">=1.11.0"}}
	return Objects{
		Stacks:   []csv1.ClusterStack{stackObj()},
		Releases: []csv1.ClusterStackRelease{v1, v2},
		Addons: []csv1.ClusterAddon{
			addonObj("healthy", relV1, ready(), healthyComps...),
			broken,
			addonObj("upgrading", relV2, progressing("component cni: HelmRelease/upgrading-cni is installing"), upComps...),
		},
		Clusters: []clusterv1.Cluster{clusterObj("healthy", relV1), clusterObj("broken", relV2), clusterObj("upgrading", relV2), clusterObj("fresh", relV2), clusterObj("other", "not-a-stack")},
		Flux: plugin.NewFluxIndex(
			[]helmv2.HelmRelease{
				helmRelease("healthy-cni", cond("Ready", "True", "InstallSucceeded", "Helm install succeeded")),
				helmRelease("broken-cni", cond("Ready", "False", "InstallFailed", hostile)),
				helmRelease("upgrading-cni", cond("Ready", "Unknown", "Progressing", "Running 'install' action")),
			},
			[]kustomizev1.Kustomization{
				kustomization("healthy-cluster-info", cond("Ready", "True", "ReconciliationSucceeded", "Applied revision: v1")),
				kustomization("broken-cluster-info", cond("Ready", "True", "ReconciliationSucceeded", "Applied revision: v2")),
			}),
		Operators: []csv1.ManagementOperator{operatorObj()},
		Now:       now,
	}
}
