// Package localinfra stands in for a Cluster API infrastructure and control-plane provider on
// the local management plane. It is NOT part of the ClusterStack operator and never runs in a
// real management cluster: there, CAPI's own controllers and a real provider (CAPA, CAPO, ...)
// turn a Cluster into machines and write its kubeconfig Secret. On a developer machine or in
// CI there is no cloud and no Docker, so this package does the provider's job with local
// processes, giving the operator and Flux a real workload cluster to install addons into.
//
// For every CAPI v1beta2 Cluster in the management cluster, [Reconciler]:
//
//   - adds the finalizer [Finalizer];
//   - starts a workload cluster ([StartWorkloadCluster]): an envtest kube-apiserver and etcd,
//     kube-controller-manager (all controllers but the service-account token controller),
//     kube-scheduler and kwok as processes on loopback, and N Node objects (default 1, or the
//     Cluster's annotation [NodesAnnotation]) that kwok turns Ready and keeps Ready; Pods
//     scheduled to them are run by kwok (they become Running and Ready without containers);
//   - writes the Secret "<cluster>-kubeconfig" (type cluster.x-k8s.io/secret, label
//     cluster.x-k8s.io/cluster-name, key "value") with a system:masters kubeconfig for the
//     workload API server, usable by any process on this host;
//   - performs a minimal topology step, since no CAPI topology controller runs (see
//     [BuildTopology] for the subset of ClusterClass features that is honoured): the
//     infrastructure cluster object (e.g. AWSCluster) from the ClusterClass's
//     spec.infrastructure.templateRef, the control plane object (e.g. KubeadmControlPlane) from
//     spec.controlPlane.templateRef and a copy of its machine infrastructure template, all
//     owned by the Cluster, with the ClusterClass's inline patches applied;
//   - sets the Cluster's spec.infrastructureRef, spec.controlPlaneRef and
//     spec.controlPlaneEndpoint (127.0.0.1 and the workload API server's port), and its status
//     as CAPI would for a provisioned cluster: initialization.infrastructureProvisioned and
//     initialization.controlPlaneInitialized true, conditions InfrastructureReady,
//     ControlPlaneInitialized, ControlPlaneAvailable and Available True, phase Provisioned
//     (and TopologyReconciled True; False with reason WaitingForClusterClass while the
//     ClusterClass or one of its templates does not exist yet);
//   - checks the workload cluster's processes every 30 seconds and starts it again when one
//     has exited.
//
// When the Cluster is deleted, the Reconciler stops that workload cluster's processes,
// deletes the kubeconfig Secret and the objects it created (the management plane has no
// garbage collector), and removes its finalizer.
//
// CAPI's CRDs on the local plane have no conversion webhook, so everything is written as
// v1beta2. Workload clusters live as long as the process that runs the Reconciler; call
// [Reconciler.Shutdown] to stop them all.
package localinfra
