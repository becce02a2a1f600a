package hooks

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

const target = "docker-ferrol-1-37-v1"

func cluster(class string, annotations map[string]string) *clusterv1.Cluster {
	c := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c1", Annotations: annotations}}
	c.Spec.Topology.ClassRef.Name = class
	c.Spec.Topology.Version = "v1.37.2"
	return c
}

// validRelease is the target release, validated, with cni and ccm in BeforeClusterUpgrade.
func validRelease(before ...string) *csv1.ClusterStackRelease {
	r := &csv1.ClusterStackRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: target}}
	r.Status.KubernetesVersion = "v1.37.2"
	r.Status.Conditions = []metav1.Condition{{Type: csv1.StackValidCondition, Status: metav1.ConditionTrue, Reason: csv1.ReasonAsExpected}}
	for _, c := range []string{"cni", "ccm", "csi"} {
		r.Status.Components = append(r.Status.Components, csv1.ReleaseComponent{Name: c, Kind: csv1.ComponentKindHelm})
	}
	var steps []csv1.ReleaseStageStep
	for _, c := range before {
		steps = append(steps, csv1.ReleaseStageStep{Component: c, Action: csv1.StageActionApply})
	}
	r.Status.Stages = []csv1.ReleaseStage{{Name: csv1.StageBeforeClusterUpgrade, Steps: steps}}
	return r
}

// withDelete adds delete steps of comps to the BeforeClusterUpgrade stage of r.
func withDelete(r *csv1.ClusterStackRelease, comps ...string) *csv1.ClusterStackRelease {
	for _, c := range comps {
		r.Status.Stages[0].Steps = append(r.Status.Stages[0].Steps, csv1.ReleaseStageStep{Component: c, Action: csv1.StageActionDelete})
	}
	return r
}

func addon(desired string, stages ...csv1.AddonStageStatus) *csv1.ClusterAddon {
	a := &csv1.ClusterAddon{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c1"}}
	a.Status.DesiredRelease = desired
	a.Status.Stages = stages
	return a
}

func beforeStage(release string, ready bool, msg string) csv1.AddonStageStatus {
	return csv1.AddonStageStatus{Name: csv1.StageBeforeClusterUpgrade, Release: release, Components: []string{"cni", "ccm"}, Applied: true, Ready: ready, Message: msg}
}

func TestBeforeClusterUpgrade(t *testing.T) {
	skip := map[string]string{csv1.SkipBeforeUpgradeGateAnnotation: ""}
	notValidated := validRelease("cni")
	notValidated.Status.Conditions = nil
	const waiting = "waiting for the BeforeClusterUpgrade components at release " + target + ": ccm not Ready yet"
	// Every answer that holds the upgrade says how to let it through.
	const skipHint = "; to let the upgrade through without waiting, set annotation clusterstack.io/skip-before-upgrade-gate on the Cluster (kubectl annotate cluster -n ns c1 clusterstack.io/skip-before-upgrade-gate=)"
	tests := []struct {
		name string
		f    UpgradeFacts
		want Answer
	}{{
		name: "a Cluster without ClusterClass: nothing to wait for",
		f:    UpgradeFacts{Cluster: cluster("", nil)},
		want: Answer{Status: "Success", Message: "Cluster ns/c1 uses no ClusterClass of its namespace: no addon stages to wait for"},
	}, {
		name: "a ClusterClass that is no release: nothing to wait for",
		f:    UpgradeFacts{Cluster: cluster("my-class", nil)},
		want: Answer{Status: "Success", Message: "ClusterClass my-class of Cluster ns/c1 is no ClusterStackRelease: no addon stages to wait for"},
	}, {
		name: "a release not validated yet: wait",
		f:    UpgradeFacts{Cluster: cluster(target, nil), Release: notValidated, Addon: addon(target)},
		want: Answer{Status: "Success", RetryAfterSeconds: 10, Message: "Cluster ns/c1 moves to release " + target + ", which has not been validated yet: its BeforeClusterUpgrade components are not known" + skipHint},
	}, {
		name: "a release without BeforeClusterUpgrade components: Success, even before the ClusterAddon moved",
		f:    UpgradeFacts{Cluster: cluster(target, nil), Release: validRelease(), Addon: addon("docker-ferrol-1-36-v3")},
		want: Answer{Status: "Success", Message: "release " + target + " lists no BeforeClusterUpgrade components: the upgrade of Cluster ns/c1 does not wait for addons"},
	}, {
		name: "no ClusterAddon yet: wait",
		f:    UpgradeFacts{Cluster: cluster(target, nil), Release: validRelease("cni", "ccm")},
		want: Answer{Status: "Success", RetryAfterSeconds: 10, Message: "waiting for the ClusterAddon of Cluster ns/c1 to be created: the BeforeClusterUpgrade components of release " + target + " (cni, ccm) are applied first" + skipHint},
	}, {
		name: "the ClusterAddon has not moved to the release: wait",
		f:    UpgradeFacts{Cluster: cluster(target, nil), Release: validRelease("ccm", "cni"), Addon: addon("docker-ferrol-1-36-v3", beforeStage("docker-ferrol-1-36-v3", true, ""))},
		want: Answer{Status: "Success", RetryAfterSeconds: 10, Message: `waiting for ClusterAddon ns/c1 to move to release ` + target + ` (it is at "docker-ferrol-1-36-v3"): the BeforeClusterUpgrade components (cni, ccm) are applied first` + skipHint},
	}, {
		name: "no stage recorded for the release yet: wait, naming the way out",
		f:    UpgradeFacts{Cluster: cluster(target, nil), Release: validRelease("cni"), Addon: addon(target)},
		want: Answer{Status: "Success", RetryAfterSeconds: 10, Message: "waiting for ClusterAddon ns/c1 to apply the BeforeClusterUpgrade components of release " + target + " (cni)" + skipHint},
	}, {
		name: "a Ready stage of another release does not count",
		f:    UpgradeFacts{Cluster: cluster(target, nil), Release: validRelease("cni"), Addon: addon(target, beforeStage("docker-ferrol-1-37-v0", true, ""))},
		want: Answer{Status: "Success", RetryAfterSeconds: 10, Message: "waiting for ClusterAddon ns/c1 to apply the BeforeClusterUpgrade components of release " + target + " (cni)" + skipHint},
	}, {
		name: "the stage is not Ready: wait with its message",
		f:    UpgradeFacts{Cluster: cluster(target, nil), Release: validRelease("cni", "ccm"), Addon: addon(target, beforeStage(target, false, waiting))},
		want: Answer{Status: "Success", RetryAfterSeconds: 10, Message: "Cluster ns/c1: " + waiting + skipHint},
	}, {
		name: "the stage is Ready: Success",
		f:    UpgradeFacts{Cluster: cluster(target, nil), Release: validRelease("cni", "ccm"), Addon: addon(target, beforeStage(target, true, "Ready"))},
		want: Answer{Status: "Success", Message: "the BeforeClusterUpgrade components of release " + target + " are Ready in Cluster ns/c1: cni, ccm"},
	}, {
		name: "a release whose BeforeClusterUpgrade stage only deletes: no ClusterAddon yet, wait",
		f:    UpgradeFacts{Cluster: cluster(target, nil), Release: withDelete(validRelease(), "old-ccm")},
		want: Answer{Status: "Success", RetryAfterSeconds: 10, Message: "waiting for the ClusterAddon of Cluster ns/c1 to be created: the BeforeClusterUpgrade components of release " + target + " (removes old-ccm) are applied first" + skipHint},
	}, {
		name: "a removal not done: wait with the stage's message",
		f: UpgradeFacts{Cluster: cluster(target, nil), Release: withDelete(validRelease("cni"), "old-ccm"), Addon: addon(target, csv1.AddonStageStatus{
			Name: csv1.StageBeforeClusterUpgrade, Release: target, Components: []string{"cni"}, Removes: []string{"old-ccm"},
			Message: "waiting for the BeforeClusterUpgrade components at release " + target + ": old-ccm not removed yet"})},
		want: Answer{Status: "Success", RetryAfterSeconds: 10, Message: "Cluster ns/c1: waiting for the BeforeClusterUpgrade components at release " + target + ": old-ccm not removed yet" + skipHint},
	}, {
		name: "applied, Ready and removed: Success",
		f: UpgradeFacts{Cluster: cluster(target, nil), Release: withDelete(validRelease("cni"), "old-ccm"), Addon: addon(target, csv1.AddonStageStatus{
			Name: csv1.StageBeforeClusterUpgrade, Release: target, Components: []string{"cni"}, Removes: []string{"old-ccm"}, Applied: true, Ready: true})},
		want: Answer{Status: "Success", Message: "the BeforeClusterUpgrade components of release " + target + " are Ready in Cluster ns/c1: cni; old-ccm removed"},
	}, {
		name: "the skip annotation lets a waiting removal through",
		f:    UpgradeFacts{Cluster: cluster(target, skip), Release: withDelete(validRelease("cni"), "old-ccm")},
		want: Answer{Status: "Success", Message: "Cluster ns/c1 carries annotation clusterstack.io/skip-before-upgrade-gate: the upgrade to release " + target + " does not wait for its BeforeClusterUpgrade components (cni; removes old-ccm)"},
	}, {
		name: "the skip annotation lets a waiting upgrade through",
		f:    UpgradeFacts{Cluster: cluster(target, skip), Release: validRelease("cni", "ccm"), Addon: addon(target, beforeStage(target, false, waiting))},
		want: Answer{Status: "Success", Message: "Cluster ns/c1 carries annotation clusterstack.io/skip-before-upgrade-gate: the upgrade to release " + target + " does not wait for its BeforeClusterUpgrade components (cni, ccm)"},
	}, {
		name: "the skip annotation also when there is no ClusterAddon",
		f:    UpgradeFacts{Cluster: cluster(target, skip), Release: validRelease("csi")},
		want: Answer{Status: "Success", Message: "Cluster ns/c1 carries annotation clusterstack.io/skip-before-upgrade-gate: the upgrade to release " + target + " does not wait for its BeforeClusterUpgrade components (csi)"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := BeforeClusterUpgrade(tt.f)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
			if got2 := BeforeClusterUpgrade(tt.f); got2 != got {
				t.Errorf("a second answer differs: %+v", got2)
			}
		})
	}
}

func TestClassOf(t *testing.T) {
	c := cluster("a", nil)
	if got := ClassOf(c); got != "a" {
		t.Errorf("ClassOf = %q, want a", got)
	}
	c.Spec.Topology.ClassRef.Namespace = "ns"
	if got := ClassOf(c); got != "a" {
		t.Errorf("ClassOf with its own namespace = %q, want a", got)
	}
	c.Spec.Topology.ClassRef.Namespace = "other"
	if got := ClassOf(c); got != "" {
		t.Errorf("ClassOf into another namespace = %q, want none", got)
	}
}

func TestNonBlockingHooks(t *testing.T) {
	c := cluster(target, nil)
	for name, a := range map[string]Answer{
		"AfterControlPlaneInitialized": AfterControlPlaneInitialized(c),
		"BeforeClusterDelete":          BeforeClusterDelete(c),
	} {
		if a.Status != runtimehooksv1.ResponseStatusSuccess || a.RetryAfterSeconds != 0 || a.Message == "" {
			t.Errorf("%s answered %+v, want Success without retry, with a message", name, a)
		}
	}
}
