package controllers

import (
	"context"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxstatus"
	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
	"github.com/clusterstack-io/clusterstack-operator/internal/stageplan"
)

func TestControlPlaneVersion(t *testing.T) {
	tests := []struct {
		name string
		cp   map[string]any
		want string
	}{
		{"no control plane", nil, ""},
		{"status.version: what it runs", map[string]any{"spec": map[string]any{"version": "v1.37.2"}, "status": map[string]any{"version": "v1.36.3"}}, "v1.36.3"},
		{"only spec.version", map[string]any{"spec": map[string]any{"version": "v1.37.2"}}, "v1.37.2"},
		{"neither", map[string]any{"spec": map[string]any{"replicas": int64(1)}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := controlPlaneVersion(tt.cp); got != tt.want {
				t.Errorf("controlPlaneVersion = %q, want %q", got, tt.want)
			}
		})
	}
}

func fluxObject(kind, name, component, release string) client.Object {
	labels := map[string]string{csv1.ComponentLabel: component, csv1.ReleaseLabel: release}
	var o client.Object
	if kind == helmv2.HelmReleaseKind {
		o = &helmv2.HelmRelease{}
		o.GetObjectKind().SetGroupVersionKind(helmv2.GroupVersion.WithKind(kind))
	} else {
		o = &kustomizev1.Kustomization{}
		o.GetObjectKind().SetGroupVersionKind(kustomizev1.GroupVersion.WithKind(kind))
	}
	o.SetName(name)
	o.SetLabels(labels)
	return o
}

func TestExistingByComponent(t *testing.T) {
	objs := []client.Object{
		fluxObject(helmv2.HelmReleaseKind, "old-name-cni", "cni", "r1"),
		fluxObject(helmv2.HelmReleaseKind, "c1-cni", "cni", "r1"),
		fluxObject(helmv2.HelmReleaseKind, "c1-ccm", "ccm", "r1"),
		fluxObject(helmv2.HelmReleaseKind, "c1-ccm-old", "ccm", "r0"),
		fluxObject(kustomizev1.KustomizationKind, "unlabelled", "", "r1"),
	}
	got := map[string]string{}
	for comp, o := range existingByComponent("c1", objs) {
		got[comp] = o.GetName()
	}
	want := map[string]string{"cni": "c1-cni", "ccm": "c1-ccm"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("existing (-want +got):\n%s", diff)
	}
}

// TestComponentStatuses: components written now, held at their release (what was recorded for
// them there, without the status reconciler's fields, which mergeComponents keeps), and waiting
// for the control plane (waitingFor); held objects are not pruned.
func TestComponentStatuses(t *testing.T) {
	rel := &csv1.ClusterStackRelease{}
	rel.Name = "r2"
	rel.Status.Components = []csv1.ReleaseComponent{
		{Name: "cni", Kind: csv1.ComponentKindHelm, Version: "2.0.0"},
		{Name: "ccm", Kind: csv1.ComponentKindHelm, Version: "2.0.0"},
		{Name: "info", Kind: csv1.ComponentKindKustomize, Version: "sha256-abc"},
	}
	addon := &csv1.ClusterAddon{}
	addon.Status.Components = []csv1.AddonComponentStatus{
		{Name: "ccm", Kind: csv1.ComponentKindHelm, Release: "r1", Version: "1.0.0", FluxObject: "HelmRelease/c1-ccm", Ready: true, Message: "Helm upgrade succeeded"},
	}
	cluster := &clusterv1.Cluster{}
	cluster.Name = "c1"
	s := &addonScope{
		cluster: cluster, addon: addon, release: rel,
		existing: map[string]client.Object{
			"ccm": fluxObject(helmv2.HelmReleaseKind, "c1-ccm", "ccm", "r1"),
			"old": fluxObject(kustomizev1.KustomizationKind, "c1-old", "old", "r1"),
		},
		plan: &stageplan.Plan{Target: "r2", KubernetesVersion: "v1.37.2", Gated: true, ControlPlaneBehind: true, Hold: map[string]string{"ccm": "r1", "old": "r1"}, Wait: []string{"info"},
			Awaiting: "the control plane of Cluster c1 to run v1.37.2"},
	}
	written := map[string]csv1.AddonComponentStatus{"cni": {Name: "cni", Kind: csv1.ComponentKindHelm, Release: "r2", Version: "2.0.0", FluxObject: "HelmRelease/c1-cni"}}
	want := map[string]bool{"HelmRelease/c1-cni": true}
	got := s.componentStatuses(written, want)
	wantStatus := []csv1.AddonComponentStatus{
		{Name: "cni", Kind: csv1.ComponentKindHelm, Release: "r2", Version: "2.0.0", FluxObject: "HelmRelease/c1-cni"},
		{Name: "ccm", Kind: csv1.ComponentKindHelm, Release: "r1", Version: "1.0.0", FluxObject: "HelmRelease/c1-ccm"},
		{Name: "info", Kind: csv1.ComponentKindKustomize, Release: "r2", Version: "sha256-abc", FluxObject: "Kustomization/c1-info",
			WaitingFor: "waiting for the control plane of Cluster c1 to run v1.37.2: the component is installed then (stage AfterClusterUpgrade)"},
		{Name: "old", Kind: csv1.ComponentKindKustomize, Release: "r1", FluxObject: "Kustomization/c1-old"},
	}
	if diff := cmp.Diff(wantStatus, got); diff != "" {
		t.Errorf("components (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]bool{"HelmRelease/c1-cni": true, "HelmRelease/c1-ccm": true, "Kustomization/c1-old": true}, want); diff != "" {
		t.Errorf("kept objects (-want +got):\n%s", diff)
	}
}

// TestComponentStatusesOfRemovedComponents: a component of the release whose old Flux object a
// delete step removes says so, and when it is installed again.
func TestComponentStatusesOfRemovedComponents(t *testing.T) {
	rel := &csv1.ClusterStackRelease{}
	rel.Name = "r2"
	rel.Status.Components = []csv1.ReleaseComponent{{Name: "cni", Kind: csv1.ComponentKindHelm, Version: "2.0.0"}, {Name: "ccm", Kind: csv1.ComponentKindHelm, Version: "2.0.0"}}
	cluster := &clusterv1.Cluster{}
	cluster.Name = "c1"
	written := map[string]csv1.AddonComponentStatus{"cni": {Name: "cni", Kind: csv1.ComponentKindHelm, Release: "r2", Version: "2.0.0", FluxObject: "HelmRelease/c1-cni"}}
	tests := []struct {
		name string
		plan stageplan.Plan
		want string
	}{{
		name: "removed before the control plane upgrade",
		plan: stageplan.Plan{Target: "r2", KubernetesVersion: "v1.37.2", Gated: true, ControlPlaneBehind: true, Remove: []string{"ccm"}, Wait: []string{"ccm"},
			Awaiting: "the control plane of Cluster c1 to run v1.37.2"},
		want: "removed for the upgrade to v1.37.2 (a delete step of the BeforeClusterUpgrade stage of release r2); installed again after the upgrade: waiting for the control plane of Cluster c1 to run v1.37.2 (stage AfterClusterUpgrade)",
	}, {
		name: "removed, waiting for the workers",
		plan: stageplan.Plan{Target: "r2", KubernetesVersion: "v1.37.2", Gated: true, Wait: []string{"ccm"}, Awaiting: "the workers of Cluster c1 to run v1.37.2"},
		want: "waiting for the workers of Cluster c1 to run v1.37.2: the component is installed then (stage AfterClusterUpgrade)",
	}, {
		name: "removed late, the Cluster runs the version",
		plan: stageplan.Plan{Target: "r2", KubernetesVersion: "v1.37.2", Remove: []string{"ccm"}},
		want: "removed for the upgrade to v1.37.2 (a delete step of the BeforeClusterUpgrade stage of release r2); installed again once its old Flux object is gone",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &addonScope{cluster: cluster, addon: &csv1.ClusterAddon{}, release: rel, plan: &tt.plan}
			got := s.componentStatuses(written, map[string]bool{})
			want := []csv1.AddonComponentStatus{written["cni"],
				{Name: "ccm", Kind: csv1.ComponentKindHelm, Release: "r2", Version: "2.0.0", FluxObject: "HelmRelease/c1-ccm", WaitingFor: tt.want}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("components (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStagesFor: the stages observed this reconcile are written over the API server's status
// only when they were planned from the last applied release it has; after a delivery the cache
// had not seen (which ended the stages), the stages planned before it are not written back.
func TestStagesFor(t *testing.T) {
	planned := []csv1.AddonStageStatus{{Name: csv1.StageAfterControlPlaneInitialized, Release: "v1", Applied: true, Ready: true}}
	for _, tc := range []struct {
		name   string
		scope  addonScope
		cur    csv1.ClusterAddonStatus
		want   []csv1.AddonStageStatus
		wantOK bool
	}{
		{name: "stages not observed: the API server's stand", scope: addonScope{stages: planned}},
		{name: "planned from the API server's last applied release", scope: addonScope{stagesKnown: true, stages: planned},
			want: planned, wantOK: true},
		{name: "planned with none: ended stages are written as none", scope: addonScope{stagesKnown: true, stagesBase: "v1"},
			cur: csv1.ClusterAddonStatus{LastAppliedRelease: "v1", Stages: planned}, wantOK: true},
		{name: "planned before a delivery the cache had not seen: the API server's stand", scope: addonScope{stagesKnown: true, stages: planned},
			cur: csv1.ClusterAddonStatus{LastAppliedRelease: "v1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tc.scope.stagesFor(tc.cur)
			if ok != tc.wantOK || !cmp.Equal(got, tc.want) {
				t.Errorf("stagesFor = %v, %v; want %v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestStageSkipped(t *testing.T) {
	skipped := csv1.AddonStageStatus{Name: csv1.StageBeforeClusterUpgrade, Release: "r2", Skipped: true}
	notSkipped := csv1.AddonStageStatus{Name: csv1.StageBeforeClusterUpgrade, Release: "r2"}
	otherRelease := csv1.AddonStageStatus{Name: csv1.StageBeforeClusterUpgrade, Release: "r1", Skipped: true}
	tests := []struct {
		name        string
		before, now []csv1.AddonStageStatus
		want        bool
	}{
		{"newly skipped: an Event", []csv1.AddonStageStatus{notSkipped}, []csv1.AddonStageStatus{skipped}, true},
		{"skipped on the first record: an Event", nil, []csv1.AddonStageStatus{skipped}, true},
		{"still skipped: no second Event", []csv1.AddonStageStatus{skipped}, []csv1.AddonStageStatus{skipped}, false},
		{"skipped for another release before: an Event for this one", []csv1.AddonStageStatus{otherRelease}, []csv1.AddonStageStatus{skipped}, true},
		{"not skipped", []csv1.AddonStageStatus{skipped}, []csv1.AddonStageStatus{notSkipped}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := stageSkipped(tt.before, tt.now) != nil; got != tt.want {
				t.Errorf("event = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestHeldAndStepStarted(t *testing.T) {
	then := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	after := func(applied bool, release string, comps ...string) *csv1.ClusterAddon {
		a := &csv1.ClusterAddon{}
		a.Status.DesiredRelease = "r2"
		a.Status.Stages = []csv1.AddonStageStatus{
			{Name: csv1.StageBeforeClusterUpgrade, Release: release, Applied: true, LastTransitionTime: metav1.NewTime(then.Add(-time.Hour))},
			{Name: csv1.StageAfterClusterUpgrade, Release: release, Components: comps, Applied: applied, Message: "waiting for the control plane", LastTransitionTime: then},
		}
		if !applied {
			a.Status.Stages[1].WaitingFor = csv1.StageWaitControlPlane
		}
		return a
	}
	workers := after(false, "r2", "csi")
	workers.Status.Stages[1].WaitingFor, workers.Status.Stages[1].Message = csv1.StageWaitWorkers, "waiting for the workers"
	tests := []struct {
		name        string
		addon       *csv1.ClusterAddon
		held        *fluxstatus.Problem
		stepStarted time.Time
	}{
		{"no stages", &csv1.ClusterAddon{}, nil, time.Time{}},
		{"waiting for the control plane: held", after(false, "r2", "csi"),
			&fluxstatus.Problem{Reason: csv1.ReasonWaitingForControlPlaneUpgrade, Message: "waiting for the control plane", Since: then.Time}, time.Time{}},
		{"waiting for the workers: held, saying so", workers,
			&fluxstatus.Problem{Reason: csv1.ReasonWaitingForWorkersUpgrade, Message: "waiting for the workers", Since: then.Time}, time.Time{}},
		{"applied: the step started then", after(true, "r2", "csi"), nil, then.Time},
		{"nothing after the upgrade: not held", after(false, "r2"), nil, time.Time{}},
		{"stages of another release: ignored", after(false, "r1", "csi"), nil, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var in fluxstatus.Input
			heldAndStepStarted(&in, tt.addon)
			if diff := cmp.Diff(tt.held, in.Held); diff != "" {
				t.Errorf("held (-want +got):\n%s", diff)
			}
			if !in.StepStarted.Equal(tt.stepStarted) {
				t.Errorf("step started = %v, want %v", in.StepStarted, tt.stepStarted)
			}
		})
	}
}

func TestAllAtRelease(t *testing.T) {
	comps := []csv1.AddonComponentStatus{{Name: "a", Release: "r2"}, {Name: "b", Release: "r1"}}
	if allAtRelease(comps, "r2") {
		t.Error("a component held at r1 counted as at r2")
	}
	if !allAtRelease(comps[:1], "r2") || !allAtRelease(nil, "r2") {
		t.Error("components at r2 not counted as at r2")
	}
}

func TestReleaseStages(t *testing.T) {
	if got := releaseStages(&stack.Stack{}); got != nil {
		t.Errorf("no stages = %v, want nil", got)
	}
	st := &stack.Stack{Stages: stack.Stages{
		{Name: stack.StageAfterControlPlaneInitialized, Steps: []stack.StageStep{{Component: "cni", Action: stack.ActionApply}}},
		{Name: stack.StageBeforeClusterUpgrade, Steps: []stack.StageStep{{Component: "old", Action: stack.ActionDelete}}},
		{Name: stack.StageAfterClusterUpgrade, Steps: []stack.StageStep{}},
	}}
	want := []csv1.ReleaseStage{
		{Name: csv1.StageAfterControlPlaneInitialized, Steps: []csv1.ReleaseStageStep{{Component: "cni", Action: csv1.StageActionApply}}},
		{Name: csv1.StageBeforeClusterUpgrade, Steps: []csv1.ReleaseStageStep{{Component: "old", Action: csv1.StageActionDelete}}},
		{Name: csv1.StageAfterClusterUpgrade},
	}
	if diff := cmp.Diff(want, releaseStages(st)); diff != "" {
		t.Errorf("stages (-want +got):\n%s", diff)
	}
}

func TestFluxStatusChanged(t *testing.T) {
	hr := func(ready metav1.ConditionStatus, observed int64, msg string) *helmv2.HelmRelease {
		o := &helmv2.HelmRelease{}
		o.Generation = 2
		o.Status.ObservedGeneration = observed
		o.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: ready, Message: msg}}
		return o
	}
	relabelled := hr(metav1.ConditionTrue, 2, "ok")
	relabelled.Labels = map[string]string{"x": "y"}
	relabelled.Generation = 3
	attempted := hr(metav1.ConditionUnknown, 1, "Running 'install' action")
	attempted.Status.LastAttemptedRevision, attempted.Status.LastAttemptedConfigDigest = "1.0.0", "sha256:abc"
	reconciling := hr(metav1.ConditionTrue, 2, "ok")
	reconciling.Status.Conditions = append(reconciling.Status.Conditions, metav1.Condition{Type: "Reconciling", Status: metav1.ConditionTrue, Message: "Running 'upgrade' action"})
	deployed := hr(metav1.ConditionTrue, 1, "Helm install succeeded")
	deployed.Status.History = helmv2.Snapshots{{Name: "r", Version: 1, ChartVersion: "1.0.0", Status: "deployed"}}
	tests := []struct {
		name     string
		old, new *helmv2.HelmRelease
		want     bool
	}{
		{"Ready changed", hr(metav1.ConditionUnknown, 2, "ok"), hr(metav1.ConditionTrue, 2, "ok"), true},
		{"a new generation observed, Ready unchanged", hr(metav1.ConditionTrue, 1, "ok"), hr(metav1.ConditionTrue, 2, "ok"), true},
		{"only Flux's message changed (a retry)", hr(metav1.ConditionFalse, 2, "install failed"), hr(metav1.ConditionFalse, 2, "install failed again"), true},
		{"the Ready message of an attempt in progress", hr(metav1.ConditionUnknown, 1, "Fulfilling prerequisites"), hr(metav1.ConditionUnknown, 1, "Running 'install' action"), true},
		{"Reconciling set", hr(metav1.ConditionTrue, 2, "ok"), reconciling, true},
		{"Reconciling cleared", reconciling, hr(metav1.ConditionTrue, 2, "ok"), true},
		{"a release deployed", hr(metav1.ConditionTrue, 1, "Helm install succeeded"), deployed, true},
		{"only the last attempted revision and digest (nothing the judge reads)", hr(metav1.ConditionUnknown, 1, "Running 'install' action"), attempted, false},
		{"spec and metadata changed, status not (our own apply)", hr(metav1.ConditionTrue, 2, "ok"), relabelled, false},
		{"nothing changed", hr(metav1.ConditionTrue, 2, "ok"), hr(metav1.ConditionTrue, 2, "ok"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fluxStatusChanged().Update(event.UpdateEvent{ObjectOld: tt.old, ObjectNew: tt.new}); got != tt.want {
				t.Errorf("passes = %v, want %v", got, tt.want)
			}
		})
	}

	// kustomize-controller's steps within one attempt, as it reports them: the Reconciling and
	// Healthy messages change, Ready stays Unknown "Reconciliation in progress"; only its start,
	// the Ready it ends with and the generation it observed pass.
	ks := func(observed int64, applied string, conds ...metav1.Condition) *kustomizev1.Kustomization {
		o := &kustomizev1.Kustomization{}
		o.Generation = 1
		o.Status.ObservedGeneration, o.Status.LastAppliedRevision, o.Status.Conditions = observed, applied, conds
		return o
	}
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(3 * time.Second))
	progress := metav1.Condition{Type: "Ready", Status: metav1.ConditionUnknown, Reason: "Progressing", Message: "Reconciliation in progress", LastTransitionTime: t0}
	step := func(msg string) metav1.Condition {
		return metav1.Condition{Type: "Reconciling", Status: metav1.ConditionTrue, Reason: "Progressing", Message: msg, LastTransitionTime: t0}
	}
	ready := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "ReconciliationSucceeded", Message: "Applied revision: sha1:1", LastTransitionTime: t1}
	healthy := metav1.Condition{Type: "Healthy", Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "Health check passed"}
	sequence := []struct {
		name   string
		obj    *kustomizev1.Kustomization
		passes bool
	}{
		{"created", ks(-1, ""), false},
		{"fetching", ks(-1, "", step("Fetching manifests"), progress), true},
		{"building", ks(-1, "", step("Building manifests"), progress), false},
		{"detecting drift", ks(-1, "", step("Detecting drift"), progress), false},
		{"health checks", ks(-1, "", step("Running health checks"), progress, metav1.Condition{Type: "Healthy", Status: metav1.ConditionUnknown, Message: "Running health checks"}), false},
		{"healthy", ks(-1, "", step("Running health checks"), progress, healthy), false},
		{"Ready", ks(-1, "", ready, healthy), true},
		{"observed and applied", ks(1, "sha1:1", ready, healthy), true},
	}
	for i := 1; i < len(sequence); i++ {
		if got := fluxStatusChanged().Update(event.UpdateEvent{ObjectOld: sequence[i-1].obj, ObjectNew: sequence[i].obj}); got != sequence[i].passes {
			t.Errorf("Kustomization %s after %s: passes = %v, want %v", sequence[i].name, sequence[i-1].name, got, sequence[i].passes)
		}
	}
}

// TestCreatedWithStatus: a generated object's creation wakes its ClusterAddon only when the object
// already has a status (listed again after a broken watch, or found when the operator starts); one
// without (this reconciler's own apply a moment ago) does not; other kinds always do.
func TestCreatedWithStatus(t *testing.T) {
	readyHR := &helmv2.HelmRelease{}
	readyHR.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue}}
	observedKs := &kustomizev1.Kustomization{}
	observedKs.Status.ObservedGeneration = 1
	// As the API server returns a new HelmRelease or Kustomization: Flux's CRDs default the status
	// to observedGeneration -1.
	defaultedHR := &helmv2.HelmRelease{}
	defaultedHR.Status.ObservedGeneration = -1
	defaultedKs := &kustomizev1.Kustomization{}
	defaultedKs.Status.ObservedGeneration = -1
	failedHR := &helmv2.HelmRelease{}
	failedHR.Status.ObservedGeneration = -1
	failedHR.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse}}
	writtenAddon := &csv1.ClusterAddon{}
	writtenAddon.Status.DesiredRelease = "stack-v1"
	tests := []struct {
		name string
		obj  client.Object
		want bool
	}{
		{"HelmRelease just applied", &helmv2.HelmRelease{}, false},
		{"HelmRelease just applied, its status defaulted by the CRD", defaultedHR, false},
		{"HelmRelease with Flux's status", readyHR, true},
		{"HelmRelease Flux failed before it observed a generation", failedHR, true},
		{"Kustomization just applied", &kustomizev1.Kustomization{}, false},
		{"Kustomization just applied, its status defaulted by the CRD", defaultedKs, false},
		{"Kustomization with Flux's status", observedKs, true},
		{"ClusterAddon just created", &csv1.ClusterAddon{}, false},
		{"ClusterAddon with a status", writtenAddon, true},
		{"another kind", &clusterv1.Cluster{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := createdWithStatus(event.CreateEvent{Object: tt.obj}); got != tt.want {
				t.Errorf("createdWithStatus = %v, want %v", got, tt.want)
			}
			if _, isAddon := tt.obj.(*csv1.ClusterAddon); !isAddon {
				if got := fluxStatusChanged().Create(event.CreateEvent{Object: tt.obj}); got != tt.want {
					t.Errorf("fluxStatusChanged passes the creation: %v, want %v", got, tt.want)
				}
			}
		})
	}
}

// TestAddonStatusInputDuringUpgrade: the status aggregation judges each component at the release
// it is delivered at (a held one at the old release's chart version and revision) and holds the
// rollout while the AfterClusterUpgrade stage waits for the control plane.
func TestAddonStatusInputDuringUpgrade(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{csv1.AddToScheme, helmv2.AddToScheme, kustomizev1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	rel := func(name, rev, version string) *csv1.ClusterStackRelease {
		r := &csv1.ClusterStackRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		r.Status.Revision = rev
		r.Status.Components = []csv1.ReleaseComponent{{Name: "cni", Kind: csv1.ComponentKindHelm, Version: version}, {Name: "info", Kind: csv1.ComponentKindKustomize}}
		return r
	}
	addon := &csv1.ClusterAddon{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c1"}, Spec: csv1.ClusterAddonSpec{ClusterName: "c1"}}
	addon.Status.DesiredRelease, addon.Status.LastAppliedRelease = "r2", "r1"
	addon.Status.Conditions = []metav1.Condition{
		{Type: csv1.ReleaseReadyCondition, Status: metav1.ConditionTrue, Reason: csv1.ReasonAsExpected},
		{Type: csv1.WorkloadClusterReadyCondition, Status: metav1.ConditionTrue, Reason: csv1.ReasonAsExpected},
	}
	addon.Status.Components = []csv1.AddonComponentStatus{
		{Name: "cni", Kind: csv1.ComponentKindHelm, Release: "r2", FluxObject: "HelmRelease/c1-cni"},
		{Name: "info", Kind: csv1.ComponentKindKustomize, Release: "r1", FluxObject: "Kustomization/c1-info"},
	}
	addon.Status.Stages = []csv1.AddonStageStatus{
		{Name: csv1.StageBeforeClusterUpgrade, Release: "r2", Components: []string{"cni"}, Applied: true, Ready: true},
		{Name: csv1.StageAfterClusterUpgrade, Release: "r2", Components: []string{"info"}, Message: "waiting for the control plane of Cluster c1 to run v1.37.2 (it runs v1.36.3): info stays at r1"},
	}
	hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c1-cni"}}
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c1-info"}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(rel("r1", "r1@sha1:aaa", "1.0.0"), rel("r2", "r2@sha1:bbb", "2.0.0"), addon, hr, ks).Build()
	r := addonJudge{Reader: c, flux: newFluxObservation([]client.Object{hr, ks})}
	in, judged, err := r.input(context.Background(), addon)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, o := range in.Objects {
		got[o.Ref()] = o.ExpectedRevision
	}
	if diff := cmp.Diff(map[string]string{"HelmRelease/c1-cni": "2.0.0", "Kustomization/c1-info": "r1@sha1:aaa"}, got); diff != "" {
		t.Errorf("expected revisions (-want +got):\n%s", diff)
	}
	if in.Held == nil || in.Held.Reason != csv1.ReasonWaitingForControlPlaneUpgrade || in.Held.Message != addon.Status.Stages[1].Message {
		t.Errorf("held = %+v", in.Held)
	}
	// Each component is judged as the object and release it was read for, so that a component
	// changed before the write is left to the next reconcile.
	gotJudged := map[string][2]string{}
	for name, j := range judged {
		gotJudged[name] = [2]string{j.fluxObject, j.release}
		if j.state.Component != name {
			t.Errorf("component %s judged from the state of %q", name, j.state.Component)
		}
	}
	if diff := cmp.Diff(map[string][2]string{"cni": {"HelmRelease/c1-cni", "r2"}, "info": {"Kustomization/c1-info", "r1"}}, gotJudged); diff != "" {
		t.Errorf("judged (-want +got):\n%s", diff)
	}
}

// TestAddonStatusInputNothingListedYet: a ClusterAddon whose reconcile stopped before it listed
// its components (a render deferred, an API error) is waiting, not Available with 0/0 and the
// release recorded as applied; a release without components is delivered with none.
func TestAddonStatusInputNothingListedYet(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := csv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		components []csv1.ReleaseComponent
		waiting    bool
	}{
		{"a release with components", []csv1.ReleaseComponent{{Name: "cni", Kind: csv1.ComponentKindHelm, Version: "1.0.0"}}, true},
		{"a release without components", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rel := &csv1.ClusterStackRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r1"}}
			rel.Status.Revision, rel.Status.Components = "r1@sha1:aaa", tc.components
			addon := &csv1.ClusterAddon{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c1"}, Spec: csv1.ClusterAddonSpec{ClusterName: "c1"}}
			addon.Status.DesiredRelease = "r1"
			addon.Status.Conditions = []metav1.Condition{
				{Type: csv1.ReleaseReadyCondition, Status: metav1.ConditionTrue, Reason: csv1.ReasonAsExpected},
				{Type: csv1.WorkloadClusterReadyCondition, Status: metav1.ConditionTrue, Reason: csv1.ReasonAsExpected},
			}
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(rel, addon).Build()
			in, _, err := addonJudge{Reader: c, flux: newFluxObservation(nil)}.input(context.Background(), addon)
			if err != nil {
				t.Fatal(err)
			}
			if got := in.Waiting != nil; got != tc.waiting {
				t.Fatalf("waiting = %+v, want waiting %v", in.Waiting, tc.waiting)
			}
			r := fluxstatus.Compute(in)
			if r.Healthy == tc.waiting {
				t.Errorf("healthy = %v with %d components listed of %d: %s", r.Healthy, len(addon.Status.Components), len(tc.components), r.Progressing.Message)
			}
			if tc.waiting && r.Progressing.Message != "cluster ns/c1: the components of release r1 are not delivered yet" {
				t.Errorf("Progressing message %q", r.Progressing.Message)
			}
		})
	}
}
