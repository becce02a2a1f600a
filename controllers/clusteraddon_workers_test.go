package controllers

import (
	"context"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/google/go-cmp/cmp"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/stageplan"
)

// mdAt is a MachineDeployment of cluster asked for version, with replicas wanted, the given
// replicas and up-to-date replicas, its generation observed or not.
func mdAt(cluster, name, version string, want, replicas, upToDate *int32, observed bool) *clusterv1.MachineDeployment {
	md := &clusterv1.MachineDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Generation: 3,
		Labels: map[string]string{csv1.ClusterNameLabel: cluster}}}
	md.Spec.ClusterName = cluster
	md.Spec.Replicas = want
	md.Spec.Template.Spec.Version = version
	md.Status.Replicas, md.Status.UpToDateReplicas = replicas, upToDate
	md.Status.ObservedGeneration = 2
	if observed {
		md.Status.ObservedGeneration = 3
	}
	return md
}

func TestMachineDeploymentWorker(t *testing.T) {
	three := ptr.To[int32](3)
	tests := []struct {
		name string
		md   *clusterv1.MachineDeployment
		want bool
	}{
		{"every replica up to date, generation observed", mdAt("c1", "md-0", "v1.37.2", three, three, three, true), true},
		{"the generation not observed yet", mdAt("c1", "md-0", "v1.37.2", three, three, three, false), false},
		{"a replica not up to date", mdAt("c1", "md-0", "v1.37.2", three, three, ptr.To[int32](2), true), false},
		{"a surplus old machine left", mdAt("c1", "md-0", "v1.37.2", three, ptr.To[int32](4), three, true), false},
		{"no counters reported: none up to date", mdAt("c1", "md-0", "v1.37.2", three, nil, nil, true), false},
		{"scaled to zero", mdAt("c1", "md-0", "v1.37.2", ptr.To[int32](0), nil, nil, true), true},
		{"no spec.replicas (an autoscaler's): the machines it has are wanted", mdAt("c1", "md-0", "v1.37.2", nil, three, three, true), true},
		{"status.versions naming an old version", func() *clusterv1.MachineDeployment {
			md := mdAt("c1", "md-0", "v1.37.2", three, three, three, true)
			md.Status.Versions = []clusterv1.StatusVersion{{Version: "v1.37.2", Replicas: 3}, {Version: "v1.36.3", Replicas: 1}}
			return md
		}(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := stageplan.Worker{Kind: stageplan.KindMachineDeployment, Name: "md-0", Version: "v1.37.2", RolledOut: tt.want}
			if diff := cmp.Diff(want, machineDeploymentWorker(tt.md)); diff != "" {
				t.Errorf("worker (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMachinePoolWorker(t *testing.T) {
	pool := func(upToDate *int32, ready int32, versions ...string) *clusterv1.MachinePool {
		mp := &clusterv1.MachinePool{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mp-0", Generation: 2}}
		mp.Spec.Replicas = ptr.To[int32](2)
		mp.Spec.Template.Spec.Version = "v1.37.2"
		mp.Status.ObservedGeneration = 2
		mp.Status.Replicas, mp.Status.ReadyReplicas, mp.Status.UpToDateReplicas = ptr.To[int32](2), ptr.To(ready), upToDate
		for _, v := range versions {
			mp.Status.Versions = append(mp.Status.Versions, clusterv1.StatusVersion{Version: v, Replicas: 1})
		}
		return mp
	}
	tests := []struct {
		name string
		mp   *clusterv1.MachinePool
		want bool
	}{
		{"with Machines: every replica ready and up to date", pool(ptr.To[int32](2), 2), true},
		{"with Machines: one not up to date", pool(ptr.To[int32](1), 2), false},
		{"a replica not ready", pool(ptr.To[int32](2), 1), false},
		{"without Machines (no up-to-date count): ready replicas and Node versions decide", pool(nil, 2, "v1.37.2", "v1.37.2-eks-1a2b3c"), true},
		{"without Machines, a Node at the old version", pool(nil, 2, "v1.37.2", "v1.36.3"), false},
		{"a Node version that only starts like the version", pool(nil, 2, "v1.37.20"), false},
		{"generation not observed", func() *clusterv1.MachinePool { mp := pool(ptr.To[int32](2), 2); mp.Generation = 3; return mp }(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := stageplan.Worker{Kind: stageplan.KindMachinePool, Name: "mp-0", Version: "v1.37.2", RolledOut: tt.want}
			if diff := cmp.Diff(want, machinePoolWorker(tt.mp)); diff != "" {
				t.Errorf("worker (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWorkerFactsChanged(t *testing.T) {
	three := ptr.To[int32](3)
	rolling := mdAt("c1", "md-0", "v1.37.2", three, three, ptr.To[int32](2), true)
	done := mdAt("c1", "md-0", "v1.37.2", three, three, three, true)
	resynced := done.DeepCopy()
	resynced.ResourceVersion = "7"
	resynced.Status.Conditions = []metav1.Condition{{Type: "Available", Status: metav1.ConditionTrue}}
	deleting := done.DeepCopy()
	deleting.DeletionTimestamp = ptr.To(metav1.Now())
	moved := done.DeepCopy()
	moved.Labels[csv1.ClusterNameLabel] = "c2"
	tests := []struct {
		name     string
		old, new client.Object
		want     bool
	}{
		{"the rollout finished", rolling, done, true},
		{"the version asked for changed", done, mdAt("c1", "md-0", "v1.38.0", three, three, three, false), true},
		{"only conditions and the resource version changed", done, resynced, false},
		{"deletion started", done, deleting, true},
		{"the cluster-name label changed", done, moved, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := workerFactsChanged().Update(event.UpdateEvent{ObjectOld: tt.old, ObjectNew: tt.new}); got != tt.want {
				t.Errorf("passes = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMachinePoolsServed(t *testing.T) {
	withPools := apimeta.NewDefaultRESTMapper(nil)
	withPools.Add(clusterv1.GroupVersion.WithKind("MachinePool"), apimeta.RESTScopeNamespace)
	withoutPools := apimeta.NewDefaultRESTMapper(nil)
	withoutPools.Add(clusterv1.GroupVersion.WithKind("MachineDeployment"), apimeta.RESTScopeNamespace)
	for name, tt := range map[string]struct {
		mapper apimeta.RESTMapper
		want   bool
	}{"served": {withPools, true}, "not served: no error": {withoutPools, false}} {
		t.Run(name, func(t *testing.T) {
			got, err := machinePoolsServed(tt.mapper)
			if err != nil || got != tt.want {
				t.Errorf("machinePoolsServed = %v, %v; want %v, nil", got, err, tt.want)
			}
		})
	}
}

// TestPlanStagesWaitsForWorkers wires the plan to the cache: the control plane runs the new
// version, the Cluster's MachineDeployment (found through the cluster-name index; another
// Cluster's and one being deleted do not count) and MachinePool do not, so the after-upgrade
// component stays at the old release; once they are rolled out it moves.
func TestPlanStagesWaitsForWorkers(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{csv1.AddToScheme, clusterv1.AddToScheme, helmv2.AddToScheme, kustomizev1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	rel := func(name, k8s string) *csv1.ClusterStackRelease {
		r := &csv1.ClusterStackRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		r.Status.KubernetesVersion = k8s
		r.Status.Components = []csv1.ReleaseComponent{{Name: "cni", Kind: csv1.ComponentKindHelm}, {Name: "csi", Kind: csv1.ComponentKindHelm}}
		r.Status.Stages = []csv1.ReleaseStage{{Name: csv1.StageBeforeClusterUpgrade, Steps: []csv1.ReleaseStageStep{{Component: "cni", Action: csv1.StageActionApply}}}}
		return r
	}
	addon := &csv1.ClusterAddon{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c1", UID: types.UID("uid-c1")}, Spec: csv1.ClusterAddonSpec{ClusterName: "c1"}}
	addon.Status.LastAppliedRelease = "r1"
	hr := func(comp, release string) *helmv2.HelmRelease {
		o := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c1-" + comp, Labels: map[string]string{
			csv1.ClusterNameLabel: "c1", csv1.ManagedByLabel: csv1.ManagedByValue, csv1.ComponentLabel: comp, csv1.ReleaseLabel: release}}}
		o.OwnerReferences = []metav1.OwnerReference{ownerRef(csv1.GroupVersion.String(), "ClusterAddon", "c1", "uid-c1", true)}
		return o
	}
	three := ptr.To[int32](3)
	deleting := mdAt("c1", "md-gone", "v1.36.3", three, three, three, true)
	deleting.DeletionTimestamp, deleting.Finalizers = ptr.To(metav1.Now()), []string{"test"}
	pool := &clusterv1.MachinePool{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mp-0", Labels: map[string]string{csv1.ClusterNameLabel: "c1"}}}
	pool.Spec.Template.Spec.Version = "v1.36.3"
	c := fake.NewClientBuilder().WithScheme(scheme).
		WithIndex(&clusterv1.MachineDeployment{}, workerClusterIndex, workerCluster).
		WithIndex(&clusterv1.MachinePool{}, workerClusterIndex, workerCluster).
		WithIndex(&helmv2.HelmRelease{}, generatedClusterIndex, generatedCluster).
		WithIndex(&kustomizev1.Kustomization{}, generatedClusterIndex, generatedCluster).
		WithObjects(rel("r1", "v1.36.3"), addon, hr("cni", "r2"), hr("csi", "r1"),
			mdAt("c1", "md-0", "v1.37.2", three, three, ptr.To[int32](1), true), mdAt("c2", "md-other", "v1.36.3", three, three, three, true), deleting, pool).
		Build()
	r := &ClusterAddonReconciler{Client: c, writer: newStatusWriter(c, nil), MachinePools: true}
	cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c1"}}
	plan := func() *stageplan.Plan {
		t.Helper()
		s := &addonScope{cluster: cluster, addon: addon, release: rel("r2", "v1.37.2"),
			controlPlane: map[string]any{"status": map[string]any{"version": "v1.37.2"}}}
		if _, err := r.observeFluxObjects(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		if _, err := r.planStages(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		return s.plan
	}

	p := plan()
	var behind []string
	for _, w := range p.WorkersBehind {
		behind = append(behind, w.Kind+"/"+w.Name)
	}
	if diff := cmp.Diff([]string{"MachineDeployment/md-0", "MachinePool/mp-0"}, behind); diff != "" {
		t.Errorf("workers behind (-want +got):\n%s", diff)
	}
	if !p.Gated || p.ControlPlaneBehind || !cmp.Equal(p.Hold, map[string]string{"csi": "r1"}) {
		t.Errorf("plan = gated %v, control plane behind %v, hold %v; want gated on the workers, csi held at r1", p.Gated, p.ControlPlaneBehind, p.Hold)
	}
	const msg = "waiting for the workers of Cluster c1 to run v1.37.2 (MachineDeployment md-0 is rolling out v1.37.2, MachinePool mp-0 runs v1.36.3): csi stays at r1"
	if p.WaitMessage != msg {
		t.Errorf("message = %q, want %q", p.WaitMessage, msg)
	}

	// The rollouts finish.
	md := &clusterv1.MachineDeployment{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "md-0"}, md); err != nil {
		t.Fatal(err)
	}
	md.Status.UpToDateReplicas = three
	if err := c.Update(context.Background(), md); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	if p := plan(); p.Gated || len(p.Apply) != 2 {
		t.Errorf("plan = gated %v, apply %v; want everything to move", p.Gated, p.Apply)
	}
}
