package controllers

import (
	"context"
	"fmt"
	"strings"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/stageplan"
)

// The workers of a Cluster, its MachineDeployments and MachinePools: during an upgrade to a
// release with addon stages, the AfterClusterUpgrade components wait until every one of them is
// rolled out at the release's Kubernetes version, as CAPI's AfterClusterUpgrade hook does
// (stacks/README.md, "clusteraddon.yaml: addon order and stages"). They are read from the
// manager's cache through a field index on their cluster-name label (one indexed List per kind
// and reconcile, no API call) and watched, so that a rollout finishing reconciles the Cluster.
// MachinePools are read only where the API server serves them (CAPI's MachinePool feature).

// workerClusterIndex indexes MachineDeployments and MachinePools by the Cluster named by their
// cluster.x-k8s.io/cluster-name label.
const workerClusterIndex = "metadata.labels.cluster.x-k8s.io/cluster-name"

// machinePoolsServed is true when the API server serves CAPI's v1beta2 MachinePool; an API
// server without the kind is no error.
func machinePoolsServed(m apimeta.RESTMapper) (bool, error) {
	gvk := clusterv1.GroupVersion.WithKind("MachinePool")
	_, err := m.RESTMapping(gvk.GroupKind(), gvk.Version)
	switch {
	case err == nil:
		return true, nil
	case apimeta.IsNoMatchError(err):
		return false, nil
	}
	return false, fmt.Errorf("find out whether the API server serves %s: %w", gvk, err)
}

// setupWorkerIndexes indexes MachineDeployments, and MachinePools when pools are served, by
// their Cluster.
func setupWorkerIndexes(ctx context.Context, mgr ctrl.Manager, pools bool) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &clusterv1.MachineDeployment{}, workerClusterIndex, workerCluster); err != nil {
		return err
	}
	if !pools {
		log.FromContext(ctx).Info("the API server serves no MachinePools (cluster.x-k8s.io/v1beta2): the addon stages wait for MachineDeployments only; restart the operator after installing them")
		return nil
	}
	return mgr.GetFieldIndexer().IndexField(ctx, &clusterv1.MachinePool{}, workerClusterIndex, workerCluster)
}

// workerCluster is the workerClusterIndex value of a MachineDeployment or MachinePool.
func workerCluster(o client.Object) []string {
	if name := o.GetLabels()[csv1.ClusterNameLabel]; name != "" {
		return []string{name}
	}
	return nil
}

// workersOf lists the Cluster's MachineDeployments and MachinePools (when served) from the
// cache, without those being deleted.
func (r *ClusterAddonReconciler) workersOf(ctx context.Context, cluster *clusterv1.Cluster) ([]stageplan.Worker, error) {
	opts := []client.ListOption{client.InNamespace(cluster.Namespace), client.MatchingFields{workerClusterIndex: cluster.Name}}
	var out []stageplan.Worker
	var mds clusterv1.MachineDeploymentList
	if err := r.List(ctx, &mds, opts...); err != nil {
		return nil, fmt.Errorf("list MachineDeployments of Cluster %s: %w", cluster.Name, err)
	}
	for i := range mds.Items {
		if md := &mds.Items[i]; md.DeletionTimestamp.IsZero() {
			out = append(out, machineDeploymentWorker(md))
		}
	}
	if !r.MachinePools {
		return out, nil
	}
	var mps clusterv1.MachinePoolList
	if err := r.List(ctx, &mps, opts...); err != nil {
		return nil, fmt.Errorf("list MachinePools of Cluster %s: %w", cluster.Name, err)
	}
	for i := range mps.Items {
		if mp := &mps.Items[i]; mp.DeletionTimestamp.IsZero() {
			out = append(out, machinePoolWorker(mp))
		}
	}
	return out, nil
}

// machineDeploymentWorker is what the addon stages need of a MachineDeployment: the version its
// machines are to run, and whether it is rolled out at it. Rolled out: its controller observed
// the current generation, it has spec.replicas machines (status.replicas; no surplus old
// machine left) and all of them up to date (status.upToDateReplicas), and status.versions, when
// reported, names no other version. Counters it does not report count as 0; without
// spec.replicas (an autoscaler's) the machines it has are the ones wanted.
func machineDeploymentWorker(md *clusterv1.MachineDeployment) stageplan.Worker {
	version := md.Spec.Template.Spec.Version
	want := ptr.Deref(md.Spec.Replicas, ptr.Deref(md.Status.Replicas, 0))
	return stageplan.Worker{
		Kind: stageplan.KindMachineDeployment, Name: md.Name, Version: version,
		RolledOut: md.Status.ObservedGeneration == md.Generation &&
			ptr.Deref(md.Status.Replicas, 0) == want &&
			ptr.Deref(md.Status.UpToDateReplicas, 0) == want &&
			onlyVersion(md.Status.Versions, version),
	}
}

// machinePoolWorker is what the addon stages need of a MachinePool. Rolled out: its controller
// observed the current generation, it has spec.replicas replicas, all Ready
// (status.readyReplicas), all up to date where it reports that (status.upToDateReplicas: CAPI
// reports it only for pools with Machines), and status.versions (for pools without Machines,
// the kubelet versions of its Nodes), when reported, names no other version.
func machinePoolWorker(mp *clusterv1.MachinePool) stageplan.Worker {
	version := mp.Spec.Template.Spec.Version
	want := ptr.Deref(mp.Spec.Replicas, ptr.Deref(mp.Status.Replicas, 0))
	return stageplan.Worker{
		Kind: stageplan.KindMachinePool, Name: mp.Name, Version: version,
		RolledOut: mp.Status.ObservedGeneration == mp.Generation &&
			ptr.Deref(mp.Status.Replicas, 0) == want &&
			ptr.Deref(mp.Status.ReadyReplicas, 0) == want &&
			(mp.Status.UpToDateReplicas == nil || *mp.Status.UpToDateReplicas == want) &&
			onlyVersion(mp.Status.Versions, version),
	}
}

// onlyVersion is true when every version reported is version; a build suffix ("v1.37.2+k3s1",
// "v1.37.2-eks-1a2b3c") is the same version.
func onlyVersion(reported []clusterv1.StatusVersion, version string) bool {
	want := stageplan.NormalizeVersion(version)
	for _, v := range reported {
		got := stageplan.NormalizeVersion(v.Version)
		if got != want && !strings.HasPrefix(got, want+"+") && !strings.HasPrefix(got, want+"-") {
			return false
		}
	}
	return true
}

// workerOf returns the addon stages' facts of a MachineDeployment or MachinePool.
func workerOf(o client.Object) (stageplan.Worker, bool) {
	switch t := o.(type) {
	case *clusterv1.MachineDeployment:
		return machineDeploymentWorker(t), true
	case *clusterv1.MachinePool:
		return machinePoolWorker(t), true
	}
	return stageplan.Worker{}, false
}

// workerFactsChanged passes MachineDeployment and MachinePool updates that change what the
// addon stages read of them: the version, whether rolled out, the Cluster, the deletion.
func workerFactsChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := workerOf(e.ObjectOld)
		n, ok2 := workerOf(e.ObjectNew)
		return !ok1 || !ok2 || o != n ||
			e.ObjectOld.GetLabels()[csv1.ClusterNameLabel] != e.ObjectNew.GetLabels()[csv1.ClusterNameLabel] ||
			e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero()
	}}
}
