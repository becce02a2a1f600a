package fluxstatus

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

func TestProgressOnly(t *testing.T) {
	cond := func(typ string, st metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: st, Reason: reason, Message: msg}
	}
	// installing: a Cluster's addons delivered, Flux has reported none Ready yet.
	installing := func() csv1.ClusterAddonStatus {
		return csv1.ClusterAddonStatus{
			ObservedGeneration: 1,
			ClusterStack:       "aws",
			DesiredRelease:     "aws-v1",
			ValuesConfigMap:    "c1-addon-values",
			Conditions: []metav1.Condition{
				cond(csv1.AvailableCondition, metav1.ConditionFalse, "Progressing", "nothing delivered yet"),
				cond(csv1.ProgressingCondition, metav1.ConditionTrue, "Progressing", "waiting for HelmRelease/c1-cni, Kustomization/c1-csi"),
				cond(csv1.DegradedCondition, metav1.ConditionFalse, "AsExpected", ""),
			},
			Components: []csv1.AddonComponentStatus{
				{Name: "cni", Kind: csv1.ComponentKindHelm, Release: "aws-v1", Version: "1.0.0", FluxObject: "HelmRelease/c1-cni"},
				{Name: "csi", Kind: csv1.ComponentKindKustomize, Release: "aws-v1", FluxObject: "Kustomization/c1-csi"},
			},
			Progress: "0/2 components Ready",
		}
	}
	edit := func(f func(*csv1.ClusterAddonStatus)) csv1.ClusterAddonStatus {
		s := installing()
		f(&s)
		return s
	}
	cniReady := func(s *csv1.ClusterAddonStatus) {
		s.Components[0].Ready, s.Components[0].Message = true, "Helm install succeeded"
		s.Conditions[1].Message = "waiting for Kustomization/c1-csi"
		s.Progress = "1/2 components Ready"
	}
	available := func(s *csv1.ClusterAddonStatus) {
		s.Conditions[0] = cond(csv1.AvailableCondition, metav1.ConditionTrue, "AsExpected", "")
		s.Conditions[1] = cond(csv1.ProgressingCondition, metav1.ConditionFalse, "AsExpected", "")
		s.LastAppliedRelease = "aws-v1"
		s.Components[0].Ready, s.Components[1].Ready = true, true
	}
	unhealthy := func(s *csv1.ClusterAddonStatus) {
		s.Unhealthy = []csv1.UnhealthyObject{{Object: "HelmRelease/c1-cni", Component: "cni", Since: metav1.Unix(100, 0), LastFailure: "install retries exhausted"}}
	}
	for _, tc := range []struct {
		name      string
		cur, next csv1.ClusterAddonStatus
		want      bool
	}{
		{"first status of a new ClusterAddon, installing", csv1.ClusterAddonStatus{}, installing(), true},
		{"first status, a stage under way", csv1.ClusterAddonStatus{}, edit(func(s *csv1.ClusterAddonStatus) {
			s.Stages = []csv1.AddonStageStatus{{Name: csv1.StageAfterControlPlaneInitialized, Release: "aws-v1", Components: []string{"cni", "csi"}}}
			s.Unhealthy = []csv1.UnhealthyObject{{Object: "HelmRelease/c1-cni", Component: "cni", Since: metav1.Unix(100, 0)}}
		}), true},
		{"first status, a stage done", csv1.ClusterAddonStatus{}, edit(func(s *csv1.ClusterAddonStatus) {
			s.Stages = []csv1.AddonStageStatus{{Name: csv1.StageBeforeClusterUpgrade, Release: "aws-v1", Applied: true, Ready: true}}
		}), false},
		{"first status, a failure", csv1.ClusterAddonStatus{}, edit(unhealthy), false},
		{"first status, already Available", csv1.ClusterAddonStatus{}, edit(available), false},
		{"first status, Degraded", csv1.ClusterAddonStatus{}, edit(func(s *csv1.ClusterAddonStatus) {
			s.Conditions[2].Status = metav1.ConditionTrue
		}), false},
		{"first status, waiting for the kubeconfig", csv1.ClusterAddonStatus{}, csv1.ClusterAddonStatus{
			Conditions: []metav1.Condition{
				cond(csv1.ProgressingCondition, metav1.ConditionTrue, csv1.ReasonWaitingForKubeconfig, "waiting for Secret c1-kubeconfig"),
				cond(csv1.WorkloadClusterReadyCondition, metav1.ConditionFalse, csv1.ReasonWaitingForKubeconfig, "waiting for Secret c1-kubeconfig"),
			},
		}, true},
		{"one component Ready, the next awaited", installing(), edit(cniReady), true},
		{"nothing changed", installing(), installing(), true},
		{"Available: Progressing ends", edit(cniReady), edit(available), false},
		{"Degraded", installing(), edit(func(s *csv1.ClusterAddonStatus) {
			s.Conditions[2] = cond(csv1.DegradedCondition, metav1.ConditionTrue, "InstallFailed", "cni: install failed")
		}), false},
		{"a condition appears", installing(), edit(func(s *csv1.ClusterAddonStatus) {
			s.Conditions = append(s.Conditions, cond(csv1.ObjectsOwnedCondition, metav1.ConditionTrue, "AsExpected", ""))
		}), false},
		{"a condition's status changes, still Progressing", installing(), edit(func(s *csv1.ClusterAddonStatus) {
			s.Conditions[0].Status = metav1.ConditionUnknown
		}), false},
		{"a new generation observed", installing(), edit(func(s *csv1.ClusterAddonStatus) { s.ObservedGeneration = 2 }), false},
		{"another release desired", installing(), edit(func(s *csv1.ClusterAddonStatus) { s.DesiredRelease = "aws-v2" }), false},
		{"a component at another version", installing(), edit(func(s *csv1.ClusterAddonStatus) { s.Components[0].Version = "1.1.0" }), false},
		{"a component added", installing(), edit(func(s *csv1.ClusterAddonStatus) {
			s.Components = append(s.Components, csv1.AddonComponentStatus{Name: "ccm", Kind: csv1.ComponentKindHelm, Release: "aws-v1"})
		}), false},
		{"a stage under way", installing(), edit(func(s *csv1.ClusterAddonStatus) {
			s.Stages = []csv1.AddonStageStatus{{Name: csv1.StageBeforeClusterUpgrade, Release: "aws-v1", Applied: true}}
		}), true},
		{"a stage done (the BeforeClusterUpgrade hook waits for it)", edit(func(s *csv1.ClusterAddonStatus) {
			s.Stages = []csv1.AddonStageStatus{{Name: csv1.StageBeforeClusterUpgrade, Release: "aws-v1", Applied: true}}
		}), edit(func(s *csv1.ClusterAddonStatus) {
			s.Stages = []csv1.AddonStageStatus{{Name: csv1.StageBeforeClusterUpgrade, Release: "aws-v1", Applied: true, Ready: true}}
		}), false},
		{"a stage skipped", installing(), edit(func(s *csv1.ClusterAddonStatus) {
			s.Stages = []csv1.AddonStageStatus{{Name: csv1.StageBeforeClusterUpgrade, Release: "aws-v1", Skipped: true}}
		}), false},
		{"an object not Ready yet, no failure", installing(), edit(func(s *csv1.ClusterAddonStatus) {
			s.Unhealthy = []csv1.UnhealthyObject{{Object: "HelmRelease/c1-cni", Component: "cni", Since: metav1.Unix(100, 0)}}
		}), true},
		{"an object no longer unhealthy", edit(unhealthy), edit(cniReady), true},
		{"a failure Flux reports (Degraded names it later)", installing(), edit(unhealthy), false},
		{"another failure of an unhealthy object", edit(unhealthy), edit(func(s *csv1.ClusterAddonStatus) {
			unhealthy(s)
			s.Unhealthy[0].LastFailure = "upgrade retries exhausted"
		}), false},
		{"an upgrade progressing while Available", edit(func(s *csv1.ClusterAddonStatus) {
			available(s)
			s.Conditions[1] = cond(csv1.ProgressingCondition, metav1.ConditionTrue, "Progressing", "upgrading to aws-v2: waiting for HelmRelease/c1-cni")
			s.DesiredRelease = "aws-v2"
		}), edit(func(s *csv1.ClusterAddonStatus) {
			available(s)
			s.Conditions[1] = cond(csv1.ProgressingCondition, metav1.ConditionTrue, "Progressing", "upgrading to aws-v2: waiting for Kustomization/c1-csi")
			s.DesiredRelease = "aws-v2"
		}), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ProgressOnly(&tc.cur, &tc.next); got != tc.want {
				t.Errorf("ProgressOnly = %v, want %v", got, tc.want)
			}
		})
	}
}
