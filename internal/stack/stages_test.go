package stack

import (
	"reflect"
	"testing"
)

// TestLoadStages: clusteraddon.yaml in, the stages (steps in file order, per stage) and the
// addon order out. The reference stack has the components cni and cluster-info; "extra" is a
// third one added by the table.
func TestLoadStages(t *testing.T) {
	const extra = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: kube-system\n"
	tests := []struct {
		name       string
		file       string // clusteraddon.yaml; "" removes it
		wantStages Stages
		wantOrder  []string
	}{{
		name:      "no clusteraddon.yaml: no stages, alphabetical order",
		wantOrder: []string{"cluster-info", "cni", "extra"},
	}, {
		name: "all three stages, steps in file order, unlisted components last",
		file: `addonStages:
  AfterClusterUpgrade:
    - {name: cluster-info, action: apply}
  BeforeClusterUpgrade:
    - {name: extra, action: apply}
    - {name: cni, action: delete}
  AfterControlPlaneInitialized:
    - {name: cni, action: apply}
`,
		wantStages: Stages{
			{Name: StageAfterControlPlaneInitialized, Steps: []StageStep{{"cni", ActionApply}}},
			{Name: StageBeforeClusterUpgrade, Steps: []StageStep{{"extra", ActionApply}, {"cni", ActionDelete}}},
			{Name: StageAfterClusterUpgrade, Steps: []StageStep{{"cluster-info", ActionApply}}},
		},
		wantOrder: []string{"cni", "extra", "cluster-info"},
	}, {
		name: "a delete step may name a component the stack does not have: kept, not in the addon order",
		file: "addonStages:\n  BeforeClusterUpgrade:\n    - {name: old-ccm, action: delete}\n    - {name: cni, action: apply}\n",
		wantStages: Stages{
			{Name: StageBeforeClusterUpgrade, Steps: []StageStep{{"old-ccm", ActionDelete}, {"cni", ActionApply}}},
		},
		wantOrder: []string{"cni", "cluster-info", "extra"},
	}, {
		name: "only BeforeClusterUpgrade: listed first, the rest alphabetically",
		file: "addonStages:\n  BeforeClusterUpgrade:\n    - {name: extra, action: apply}\n",
		wantStages: Stages{
			{Name: StageBeforeClusterUpgrade, Steps: []StageStep{{"extra", ActionApply}}},
		},
		wantOrder: []string{"extra", "cluster-info", "cni"},
	}, {
		name: "an empty stage is kept, without steps",
		file: "addonStages:\n  BeforeClusterUpgrade: []\n  AfterClusterUpgrade:\n    - {name: cni, action: apply}\n",
		wantStages: Stages{
			{Name: StageBeforeClusterUpgrade, Steps: []StageStep{}},
			{Name: StageAfterClusterUpgrade, Steps: []StageStep{{"cni", ActionApply}}},
		},
		wantOrder: []string{"cni", "cluster-info", "extra"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyStack(t, "../../stacks/aws/base/1-36")
			writeFile(t, dir, "cluster-addon/extra/cm.yaml", extra)
			removeFile(t, dir, ClusterAddonFile)
			if tt.file != "" {
				writeFile(t, dir, ClusterAddonFile, tt.file)
			}
			s, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(s.Stages, tt.wantStages) {
				t.Errorf("stages = %+v, want %+v", s.Stages, tt.wantStages)
			}
			if got := componentNames(s.Components); !reflect.DeepEqual(got, tt.wantOrder) {
				t.Errorf("addon order = %v, want %v", got, tt.wantOrder)
			}
		})
	}
}

// TestLoadStagesOfSCSStack: the SCS test stack's stages as the file lists them.
func TestLoadStagesOfSCSStack(t *testing.T) {
	s, err := Load("testdata/scs/openstack/scs/1-35")
	if err != nil {
		t.Fatal(err)
	}
	want := Stages{
		{Name: StageAfterControlPlaneInitialized, Steps: []StageStep{{"cni", ActionApply}, {"ccm", ActionApply}}},
		{Name: StageBeforeClusterUpgrade, Steps: []StageStep{{"metrics-server", ActionApply}, {"cni", ActionApply}}},
		{Name: StageAfterClusterUpgrade, Steps: []StageStep{{"ccm", ActionApply}}},
	}
	if !reflect.DeepEqual(s.Stages, want) {
		t.Errorf("stages = %+v, want %+v", s.Stages, want)
	}
}

func TestStagesQueries(t *testing.T) {
	st := Stages{
		{Name: StageAfterControlPlaneInitialized, Steps: []StageStep{{"cni", ActionApply}, {"ccm", ActionApply}}},
		{Name: StageBeforeClusterUpgrade, Steps: []StageStep{{"csi", ActionDelete}, {"cni", ActionApply}, {"csi", ActionApply}, {"cni", ActionApply}}},
		{Name: StageAfterClusterUpgrade, Steps: []StageStep{{"metrics", ActionApply}, {"ccm", ActionApply}}},
	}
	tests := []struct {
		name string
		got  []string
		want []string
	}{
		{"apply components of BeforeClusterUpgrade, first step wins, no repeats", st.Components(StageBeforeClusterUpgrade, ActionApply), []string{"cni", "csi"}},
		{"delete components of BeforeClusterUpgrade", st.Components(StageBeforeClusterUpgrade, ActionDelete), []string{"csi"}},
		{"a stage without such steps", st.Components(StageAfterClusterUpgrade, ActionDelete), nil},
		{"no stages at all", Stages(nil).Components(StageBeforeClusterUpgrade, ActionApply), nil},
		{"order: first appearance over the stages in hook order", st.Order(), []string{"cni", "ccm", "csi", "metrics"}},
		{"order of no stages", Stages(nil).Order(), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !reflect.DeepEqual(tt.got, tt.want) {
				t.Errorf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
}

// TestLintStageSteps: which steps clusteraddon.yaml may have. Delete steps act only in
// BeforeClusterUpgrade, where they may name a component the stack does not have; apply steps
// must name one it has.
func TestLintStageSteps(t *testing.T) {
	tests := []struct {
		name string
		file string
		want []wantProblem
	}{{
		name: "delete steps in BeforeClusterUpgrade, of a component of the stack and of another",
		file: "addonStages:\n  BeforeClusterUpgrade:\n    - {name: cni, action: delete}\n    - {name: old-ccm, action: delete}\n",
	}, {
		name: "an apply step must name a component of the stack",
		file: "addonStages:\n  BeforeClusterUpgrade:\n    - {name: old-ccm, action: apply}\n",
		want: []wantProblem{{ClusterAddonFile, `addonStages.BeforeClusterUpgrade[0]: component "old-ccm" does not exist (no cluster-addon/old-ccm/ directory)`}},
	}, {
		name: "a delete step naming no valid component name",
		file: "addonStages:\n  BeforeClusterUpgrade:\n    - {name: Old_CCM, action: delete}\n",
		want: []wantProblem{{ClusterAddonFile, `addonStages.BeforeClusterUpgrade[0]: delete step names "Old_CCM", which is no component name`}},
	}, {
		name: "delete steps outside BeforeClusterUpgrade",
		file: "addonStages:\n  AfterControlPlaneInitialized:\n    - {name: cni, action: delete}\n  AfterClusterUpgrade:\n    - {name: old-ccm, action: delete}\n",
		want: []wantProblem{
			{ClusterAddonFile, "addonStages.AfterControlPlaneInitialized[0]: delete steps act only in BeforeClusterUpgrade: a new cluster has no cni to remove (drop this step)"},
			{ClusterAddonFile, "addonStages.AfterClusterUpgrade[0]: delete steps act only in BeforeClusterUpgrade: a component the release does not have is removed after the upgrade anyway (drop this step, or move it to BeforeClusterUpgrade to remove old-ccm before the upgrade)"},
		},
	}, {
		name: "a component both applied and deleted in BeforeClusterUpgrade",
		file: "addonStages:\n  BeforeClusterUpgrade:\n    - {name: cni, action: delete}\n    - {name: cni, action: apply}\n",
		want: []wantProblem{{ClusterAddonFile, `addonStages.BeforeClusterUpgrade: component "cni" is both applied and deleted: keep the apply step`}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyStack(t, "../../stacks/aws/base/1-36")
			writeFile(t, dir, ClusterAddonFile, tt.file)
			_, ps := load(dir)
			checkProblems(t, ps, tt.want)
		})
	}
}
