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
//     kube-controller-manager (the controllers that readiness and deletion of what Helm and
//     Flux deliver need: workloadControllers), kube-scheduler and kwok as processes on loopback (package kubesim), and N Node objects
//     (default 1, or the Cluster's annotation [NodesAnnotation]) that kwok turns Ready and
//     keeps Ready; Pods scheduled to them are run by kwok (they become Running and Ready
//     without containers);
//   - writes the Secret "<cluster>-kubeconfig" (type cluster.x-k8s.io/secret, label
//     cluster.x-k8s.io/cluster-name, key "value") with a system:masters kubeconfig for the
//     workload API server, usable by any process on this host;
//   - without Options.ProviderContract, performs a minimal topology step, since no CAPI
//     topology controller runs (see
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
//     has exited, except while its API server is down on purpose
//     ([Reconciler.StopWorkloadAPIServer], for fault tests; [Reconciler.StartWorkloadAPIServer]
//     brings the same API server back on the same port, with its data and certificates).
//
// When the Cluster is deleted, the Reconciler stops that workload cluster's processes,
// deletes the kubeconfig Secret and the objects it created (the management plane has no
// garbage collector), and removes its finalizer.
//
// # Playing the providers by contract (Options.ProviderContract)
//
// When Cluster API's own controllers run (the plane's WithCAPI), CAPI's topology controller
// creates a Cluster's infrastructure cluster, control plane object and MachineDeployments from
// its ClusterClass (applying its patches and variables), and CAPI's cluster and machine
// controllers own the Cluster's and Machines' status. The Reconciler then creates nothing from
// the ClusterClass; it does what the providers of those objects would, for any kind whose CRD
// is installed, reading and writing the fields of the CAPI contracts (v1beta2, and v1beta1
// where the kind's schema has those instead):
//
//   - infrastructure cluster (spec.infrastructureRef): spec.controlPlaneEndpoint set to the
//     workload API server (or the Cluster's own, when the kind has no such field), status
//     initialization.provisioned / ready, a Ready condition;
//   - control plane (spec.controlPlaneRef, e.g. the KubeadmControlPlane CAPI created): the
//     workload API server is the control plane, so status reports it initialized with
//     spec.replicas replicas ready, available and up to date at spec.version (status.version
//     and status.versions). A version change is complete once seen, which lets CAPI's upgrade
//     flow (control plane first, then MachineDeployments) run for real;
//   - bootstrap configs of Machines (e.g. KubeadmConfig): a data Secret named like the config
//     (placeholder content) and status dataSecretName / initialization.dataSecretCreated;
//   - infrastructure machines: spec.providerID local://<namespace>/<machine>, a kwok Node with
//     that providerID in the workload cluster (CAPI's machine controller finds it and sets the
//     Machine's nodeRef), and status initialization.provisioned / ready.
//
// The control plane has no Machines: its nodes are the Nodes the workload cluster starts with.
// On deletion the workload cluster keeps running until CAPI has deleted the Cluster's objects
// (its finalizer is gone). Validation, defaulting and conversion of these kinds are the
// providers' own (the plane's bin/provider-webhooks).
//
// Without ProviderContract, CAPI's CRDs have no conversion webhook, so everything is written
// as v1beta2. Workload clusters live as long as the process that runs the Reconciler; call
// [Reconciler.Shutdown] to stop them all.
package localinfra
