package localinfra

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

const (
	// Finalizer keeps a Cluster until its workload cluster was stopped.
	Finalizer = "localinfra.clusterstack.io/workload-cluster"
	// NodesAnnotation on a Cluster sets how many kwok Nodes its workload cluster gets
	// (1 to MaxNodes; the Reconciler's default otherwise).
	NodesAnnotation = "localinfra.clusterstack.io/nodes"
	// MaxNodes bounds NodesAnnotation.
	MaxNodes = 50
	// FieldOwner is the field manager of the objects this package writes.
	FieldOwner = "localinfra"
	// healthCheckInterval is how often a provisioned Cluster's processes are checked, since
	// a process exit cannot be watched through the API.
	healthCheckInterval = 30 * time.Second
	// waitForClassInterval is how often a Cluster whose ClusterClass or templates are missing
	// is looked at again.
	waitForClassInterval = 10 * time.Second
	// WaitingForClusterClassReason is the TopologyReconciled reason while the ClusterClass or
	// one of its templates does not exist.
	WaitingForClusterClassReason = "WaitingForClusterClass"
)

var errShuttingDown = errors.New("localinfra is shutting down")

// Options configures the Reconciler.
type Options struct {
	// BinDir holds kube-apiserver, etcd, kube-controller-manager, kube-scheduler and kwok.
	BinDir string
	// KwokStagesDir holds kwok's Stage manifests.
	KwokStagesDir string
	// StateDir holds each workload cluster's state in <StateDir>/<namespace>/<name>.
	StateDir string
	// LogDir receives each workload cluster's process logs in <LogDir>/<namespace>-<name>/.
	LogDir string
	// Nodes is the default number of Nodes per workload cluster; 1 when zero.
	Nodes int
	// StartTimeout bounds the start of one workload cluster; DefaultStartTimeout when zero.
	StartTimeout time.Duration
	// MaxConcurrentReconciles is how many Clusters are provisioned at once; 2 when zero.
	MaxConcurrentReconciles int
	// OnProcessStarted, when set, is called after each workload process was started.
	OnProcessStarted func()
	// ProviderContract is set when Cluster API's controllers run (the plane's WithCAPI): CAPI's
	// topology controller creates each Cluster's infrastructure cluster, control plane and
	// MachineDeployments, and the Reconciler plays the providers by their contracts (see the
	// package documentation) instead of creating those objects itself.
	ProviderContract bool
	// FluxServiceAccounts are ServiceAccount names: in each workload cluster, the users
	// system:serviceaccount:<Cluster namespace>:<name> are bound to cluster-admin, so that Flux
	// objects impersonating them there (Flux's --default-service-account, a ClusterStack's
	// spec.serviceAccountName) can install the addons.
	FluxServiceAccounts []string
}

// Reconciler provisions a local workload cluster for each CAPI v1beta2 Cluster. See the
// package documentation.
type Reconciler struct {
	client client.Client
	opts   Options

	mu       sync.Mutex
	clusters map[types.NamespacedName]*WorkloadCluster
	shutdown bool
	// fieldCache remembers schemaHas answers ("<gvk>/<path>").
	fieldCache map[string]bool
	inflight   sync.WaitGroup
}

// NewReconciler returns a Reconciler that uses c, whose scheme must contain core Kubernetes
// and CAPI v1beta2 types.
func NewReconciler(c client.Client, opts Options) *Reconciler {
	if opts.Nodes <= 0 {
		opts.Nodes = 1
	}
	if opts.MaxConcurrentReconciles <= 0 {
		opts.MaxConcurrentReconciles = 2
	}
	return &Reconciler{
		client:     c,
		opts:       opts,
		clusters:   map[types.NamespacedName]*WorkloadCluster{},
		fieldCache: map[string]bool{},
	}
}

// SetupWithManager registers the Reconciler with mgr.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		For(&clusterv1.Cluster{}).
		Watches(&clusterv1.ClusterClass{}, handler.EnqueueRequestsFromMapFunc(r.clustersOfClass))
	if r.opts.ProviderContract {
		b = b.Watches(&clusterv1.Machine{}, handler.EnqueueRequestsFromMapFunc(clusterOfMachine))
	}
	return b.
		Named("localinfra-cluster").
		WithOptions(controller.Options{
			MaxConcurrentReconciles: r.opts.MaxConcurrentReconciles,
			// Several planes may run in one test process.
			SkipNameValidation: ptr.To(true),
		}).
		Complete(r)
}

// clustersOfClass maps a ClusterClass to the Clusters that use it.
func (r *Reconciler) clustersOfClass(ctx context.Context, obj client.Object) []reconcile.Request {
	clusters := &clusterv1.ClusterList{}
	if err := r.client.List(ctx, clusters); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list Clusters for ClusterClass", "clusterClass", client.ObjectKeyFromObject(obj))
		return nil
	}
	var reqs []reconcile.Request
	for _, c := range clusters.Items {
		ref := c.Spec.Topology.ClassRef
		ns := ref.Namespace
		if ns == "" {
			ns = c.Namespace
		}
		if ref.Name == obj.GetName() && ns == obj.GetNamespace() {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&c)})
		}
	}
	return reqs
}

// clusterOfMachine maps a Machine to its Cluster.
func clusterOfMachine(_ context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetLabels()[clusterv1.ClusterNameLabel]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}}}
}

// WorkloadCluster returns the running workload cluster of the Cluster key.
func (r *Reconciler) WorkloadCluster(key types.NamespacedName) (*WorkloadCluster, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w, ok := r.clusters[key]
	return w, ok
}

// StopWorkloadAPIServer stops the API server of the workload cluster of the Cluster key and
// keeps the rest of it (see WorkloadCluster.StopAPIServer): an outage of that cluster's control
// plane. The Reconciler does not start the cluster afresh meanwhile, and deleting the Cluster
// still completes (its processes are stopped). It is idempotent.
func (r *Reconciler) StopWorkloadAPIServer(key types.NamespacedName) error {
	w, ok := r.WorkloadCluster(key)
	if !ok {
		return fmt.Errorf("stop workload API server: no workload cluster runs for Cluster %s", key)
	}
	return w.StopAPIServer()
}

// StartWorkloadAPIServer starts the API server that StopWorkloadAPIServer stopped again, on the
// same port with the same certificates and data, and returns once it is healthy (see
// WorkloadCluster.StartAPIServer). It does nothing while that API server runs.
func (r *Reconciler) StartWorkloadAPIServer(ctx context.Context, key types.NamespacedName) error {
	w, ok := r.WorkloadCluster(key)
	if !ok {
		return fmt.Errorf("start workload API server: no workload cluster runs for Cluster %s", key)
	}
	return w.StartAPIServer(ctx)
}

// Shutdown stops all workload clusters, waiting for those being started, and makes every
// later reconcile fail. Call it after the manager has stopped.
func (r *Reconciler) Shutdown() error {
	r.mu.Lock()
	r.shutdown = true
	r.mu.Unlock()
	r.inflight.Wait()

	r.mu.Lock()
	clusters := r.clusters
	r.clusters = map[types.NamespacedName]*WorkloadCluster{}
	r.mu.Unlock()

	var wg sync.WaitGroup
	errs := make([]error, 0, len(clusters))
	var emu sync.Mutex
	for _, w := range clusters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Stop(); err != nil {
				emu.Lock()
				errs = append(errs, err)
				emu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Reconcile provisions or tears down the workload cluster of one Cluster.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cluster := &clusterv1.Cluster{}
	if err := r.client.Get(ctx, req.NamespacedName, cluster); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, r.stopWorkload(req.NamespacedName)
		}
		return ctrl.Result{}, fmt.Errorf("get Cluster %s: %w", req.NamespacedName, err)
	}
	if !cluster.DeletionTimestamp.IsZero() {
		if r.opts.ProviderContract {
			return r.reconcileContractDelete(ctx, cluster)
		}
		return ctrl.Result{}, r.reconcileDelete(ctx, cluster)
	}
	if !controllerutil.ContainsFinalizer(cluster, Finalizer) {
		before := cluster.DeepCopy()
		controllerutil.AddFinalizer(cluster, Finalizer)
		if err := r.client.Patch(ctx, cluster, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return ctrl.Result{}, fmt.Errorf("add finalizer to Cluster %s: %w", req.NamespacedName, err)
		}
	}

	w, err := r.ensureWorkload(ctx, cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	host, port := w.Endpoint()
	endpoint := clusterv1.APIEndpoint{Host: host, Port: port}
	if err := r.ensureKubeconfigSecret(ctx, cluster, w); err != nil {
		return ctrl.Result{}, err
	}
	if r.opts.ProviderContract {
		return r.reconcileContract(ctx, cluster, w)
	}

	before := cluster.DeepCopy()
	if cluster.Spec.Topology.IsDefined() {
		topo, err := r.reconcileTopology(ctx, cluster, endpoint)
		if apierrors.IsNotFound(err) {
			// The ClusterClass or a template is not there yet (for example while Flux installs
			// the stack that ships them): report it and look again soon; the ClusterClass is
			// also watched.
			setTopologyCondition(cluster, err)
			if err := r.patchStatus(ctx, before, cluster); err != nil {
				return ctrl.Result{}, err
			}
			ctrl.LoggerFrom(ctx).Info("waiting for the ClusterClass and its templates", "reason", err.Error())
			return ctrl.Result{RequeueAfter: waitForClassInterval}, nil
		}
		if err != nil {
			return ctrl.Result{}, err
		}
		if infra := topo.InfrastructureCluster; infra != nil {
			cluster.Spec.InfrastructureRef = contractRef(infra)
		}
		cluster.Spec.ControlPlaneRef = contractRef(topo.ControlPlane)
	}
	cluster.Spec.ControlPlaneEndpoint = endpoint
	if !equality.Semantic.DeepEqual(before.Spec, cluster.Spec) {
		if err := r.client.Patch(ctx, cluster, client.MergeFrom(before)); err != nil {
			return ctrl.Result{}, fmt.Errorf("set references and endpoint of Cluster %s: %w", req.NamespacedName, err)
		}
	}

	before = cluster.DeepCopy()
	if cluster.Spec.Topology.IsDefined() {
		setTopologyCondition(cluster, nil)
	}
	setProvisionedStatus(cluster, endpoint)
	if !equality.Semantic.DeepEqual(before.Status, cluster.Status) {
		if err := r.patchStatus(ctx, before, cluster); err != nil {
			return ctrl.Result{}, err
		}
		ctrl.LoggerFrom(ctx).Info("workload cluster provisioned", "endpoint", endpoint.String())
	}
	return ctrl.Result{RequeueAfter: healthCheckInterval}, nil
}

func (r *Reconciler) patchStatus(ctx context.Context, before, after *clusterv1.Cluster) error {
	if equality.Semantic.DeepEqual(before.Status, after.Status) {
		return nil
	}
	if err := r.client.Status().Patch(ctx, after, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("update status of Cluster %s/%s: %w", after.Namespace, after.Name, err)
	}
	return nil
}

// setTopologyCondition sets TopologyReconciled: True when missing is nil, False with the
// reason WaitingForClusterClassReason otherwise.
func setTopologyCondition(c *clusterv1.Cluster, missing error) {
	cond := metav1.Condition{
		Type:               clusterv1.ClusterTopologyReconciledCondition,
		Status:             metav1.ConditionTrue,
		Reason:             clusterv1.ClusterTopologyReconcileSucceededReason,
		Message:            "Infrastructure cluster and control plane objects created by localinfra",
		ObservedGeneration: c.Generation,
	}
	if missing != nil {
		cond.Status = metav1.ConditionFalse
		cond.Reason = WaitingForClusterClassReason
		cond.Message = "Waiting for the ClusterClass and its templates: " + missing.Error()
	}
	meta.SetStatusCondition(&c.Status.Conditions, cond)
}

// ensureWorkload returns the Cluster's running workload cluster, starting it (again, when
// one of its processes exited, unless its API server is down on purpose) as needed.
func (r *Reconciler) ensureWorkload(ctx context.Context, c *clusterv1.Cluster) (*WorkloadCluster, error) {
	key := client.ObjectKeyFromObject(c)
	r.mu.Lock()
	if r.shutdown {
		r.mu.Unlock()
		return nil, errShuttingDown
	}
	w := r.clusters[key]
	r.inflight.Add(1)
	r.mu.Unlock()
	defer r.inflight.Done()

	log := ctrl.LoggerFrom(ctx)
	if w != nil {
		// While its API server is down on purpose (StopWorkloadAPIServer), the cluster is kept
		// as it is: Exited reports nothing then.
		exitErr := w.Exited()
		if exitErr == nil {
			return w, nil
		}
		log.Error(exitErr, "workload cluster process exited; starting the workload cluster again")
		if err := r.stopWorkload(key); err != nil {
			log.Error(err, "stop workload cluster")
		}
	}

	nodes := r.opts.Nodes
	if v, ok := c.Annotations[NodesAnnotation]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxNodes {
			return nil, fmt.Errorf("cluster %s: annotation %s=%q: want a number from 1 to %d", key, NodesAnnotation, v, MaxNodes)
		}
		nodes = n
	}
	log.Info("starting workload cluster", "nodes", nodes)
	started := time.Now()
	w, err := StartWorkloadCluster(ctx, WorkloadOptions{
		Name:             c.Name,
		BinDir:           r.opts.BinDir,
		KwokStagesDir:    r.opts.KwokStagesDir,
		Dir:              filepath.Join(r.opts.StateDir, c.Namespace, c.Name),
		LogDir:           filepath.Join(r.opts.LogDir, c.Namespace+"-"+c.Name),
		Nodes:            nodes,
		StartTimeout:     r.opts.StartTimeout,
		OnProcessStarted: r.opts.OnProcessStarted,
		AdminUsers:       serviceAccountUsers(c.Namespace, r.opts.FluxServiceAccounts),
	})
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", key, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.shutdown {
		_ = w.Stop()
		return nil, errShuttingDown
	}
	r.clusters[key] = w
	host, port := w.Endpoint()
	log.Info("workload cluster started", "endpoint", fmt.Sprintf("%s:%d", host, port), "took", time.Since(started).Round(time.Millisecond))
	return w, nil
}

func (r *Reconciler) stopWorkload(key types.NamespacedName) error {
	r.mu.Lock()
	w, ok := r.clusters[key]
	delete(r.clusters, key)
	r.mu.Unlock()
	if !ok {
		return nil
	}
	return w.Stop()
}

// ensureKubeconfigSecret writes the Secret "<cluster>-kubeconfig" as CAPI does.
func (r *Reconciler) ensureKubeconfigSecret(ctx context.Context, c *clusterv1.Cluster, w *WorkloadCluster) error {
	kc, err := w.Kubeconfig()
	if err != nil {
		return err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: KubeconfigSecretName(c.Name), Namespace: c.Namespace}}
	_, err = controllerutil.CreateOrPatch(ctx, r.client, secret, func() error {
		if secret.CreationTimestamp.IsZero() {
			secret.Type = clusterv1.ClusterSecretType
		}
		if secret.Labels == nil {
			secret.Labels = map[string]string{}
		}
		secret.Labels[clusterv1.ClusterNameLabel] = c.Name
		secret.Data = map[string][]byte{"value": kc}
		return controllerutil.SetOwnerReference(c, secret, r.client.Scheme())
	})
	if err != nil {
		return fmt.Errorf("write Secret %s/%s: %w", c.Namespace, secret.Name, err)
	}
	return nil
}

// KubeconfigSecretName is the name of a Cluster's kubeconfig Secret.
func KubeconfigSecretName(cluster string) string { return cluster + "-kubeconfig" }

// reconcileTopology creates or updates the provider objects of a Cluster with a topology.
func (r *Reconciler) reconcileTopology(ctx context.Context, c *clusterv1.Cluster, endpoint clusterv1.APIEndpoint) (*Topology, error) {
	classNS := c.Spec.Topology.ClassRef.Namespace
	if classNS == "" {
		classNS = c.Namespace
	}
	class := &clusterv1.ClusterClass{}
	classKey := types.NamespacedName{Namespace: classNS, Name: c.Spec.Topology.ClassRef.Name}
	if err := r.client.Get(ctx, classKey, class); err != nil {
		return nil, fmt.Errorf("cluster %s/%s: get ClusterClass %s: %w", c.Namespace, c.Name, classKey, err)
	}
	in := TopologyInput{Cluster: c, Class: class}
	var err error
	if ref := class.Spec.Infrastructure.TemplateRef; ref.IsDefined() {
		if in.InfrastructureTemplate, err = r.getTemplate(ctx, classNS, ref); err != nil {
			return nil, err
		}
		kind, _ := strings.CutSuffix(ref.Kind, "Template")
		// Server-side apply rejects fields that the schema does not declare.
		has, err := r.schemaHas(ctx, schema.FromAPIVersionAndKind(ref.APIVersion, kind), "spec", "controlPlaneEndpoint")
		if err != nil {
			return nil, err
		}
		if has {
			in.ControlPlaneEndpoint = endpoint
		}
	}
	if ref := class.Spec.ControlPlane.TemplateRef; ref.IsDefined() {
		if in.ControlPlaneTemplate, err = r.getTemplate(ctx, classNS, ref); err != nil {
			return nil, err
		}
	}
	if ref := class.Spec.ControlPlane.MachineInfrastructure.TemplateRef; ref.IsDefined() {
		if in.MachineInfrastructureTemplate, err = r.getTemplate(ctx, classNS, ref); err != nil {
			return nil, err
		}
	}
	topo, err := BuildTopology(in)
	if err != nil {
		return nil, err
	}
	for _, obj := range topo.Objects() {
		if err := r.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
			return nil, fmt.Errorf("cluster %s/%s: apply %s %s: %w", c.Namespace, c.Name, obj.GetKind(), obj.GetName(), err)
		}
	}
	return topo, nil
}

func (r *Reconciler) getTemplate(ctx context.Context, namespace string, ref clusterv1.ClusterClassTemplateReference) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(ref.GroupVersionKind())
	if err := r.client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, u); err != nil {
		return nil, fmt.Errorf("get %s %s/%s: %w", ref.Kind, namespace, ref.Name, err)
	}
	return u, nil
}

// schemaHas reports whether the CRD schema of gvk declares the field at path, in which "[]"
// stands for the items of an array.
func (r *Reconciler) schemaHas(ctx context.Context, gvk schema.GroupVersionKind, path ...string) (bool, error) {
	cacheKey := gvk.String() + "/" + strings.Join(path, ".")
	r.mu.Lock()
	has, ok := r.fieldCache[cacheKey]
	r.mu.Unlock()
	if ok {
		return has, nil
	}
	mapping, err := r.client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return false, fmt.Errorf("resolve %s: %w", gvk, err)
	}
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	if err := r.client.Get(ctx, types.NamespacedName{Name: mapping.Resource.Resource + "." + gvk.Group}, crd); err != nil {
		return false, fmt.Errorf("get CRD of %s: %w", gvk, err)
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		vm, _ := v.(map[string]any)
		if vm["name"] != gvk.Version {
			continue
		}
		fields := []string{"schema", "openAPIV3Schema"}
		for _, p := range path {
			if p == "[]" {
				fields = append(fields, "items")
			} else {
				fields = append(fields, "properties", p)
			}
		}
		_, has, _ = unstructured.NestedFieldNoCopy(vm, fields...)
	}
	r.mu.Lock()
	r.fieldCache[cacheKey] = has
	r.mu.Unlock()
	return has, nil
}

func contractRef(u *unstructured.Unstructured) clusterv1.ContractVersionedObjectReference {
	return clusterv1.ContractVersionedObjectReference{
		APIGroup: u.GroupVersionKind().Group,
		Kind:     u.GetKind(),
		Name:     u.GetName(),
	}
}

// setProvisionedStatus sets what CAPI reports for a provisioned Cluster whose control plane
// answers at endpoint.
func setProvisionedStatus(c *clusterv1.Cluster, endpoint clusterv1.APIEndpoint) {
	c.Status.Initialization.InfrastructureProvisioned = ptr.To(true)
	c.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
	c.Status.Phase = string(clusterv1.ClusterPhaseProvisioned)
	c.Status.ObservedGeneration = c.Generation
	at := "local workload API server at " + endpoint.String()
	for _, cond := range []metav1.Condition{
		{Type: clusterv1.ClusterInfrastructureReadyCondition, Reason: clusterv1.ClusterInfrastructureReadyReason,
			Message: "Provided by localinfra: " + at},
		{Type: clusterv1.ClusterControlPlaneInitializedCondition, Reason: clusterv1.ClusterControlPlaneInitializedReason,
			Message: "Control plane initialized: " + at},
		{Type: clusterv1.ClusterControlPlaneAvailableCondition, Reason: clusterv1.ClusterControlPlaneAvailableReason,
			Message: "Control plane available: " + at},
		{Type: clusterv1.ClusterAvailableCondition, Reason: clusterv1.ClusterAvailableReason,
			Message: "Cluster available: " + at},
	} {
		cond.Status = metav1.ConditionTrue
		cond.ObservedGeneration = c.Generation
		meta.SetStatusCondition(&c.Status.Conditions, cond)
	}
}

// reconcileDelete stops the workload cluster, deletes what this package created for the
// Cluster and releases the finalizer.
func (r *Reconciler) reconcileDelete(ctx context.Context, c *clusterv1.Cluster) error {
	key := client.ObjectKeyFromObject(c)
	if !controllerutil.ContainsFinalizer(c, Finalizer) {
		return r.stopWorkload(key)
	}
	if err := r.stopWorkload(key); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "stop workload cluster")
	}

	// The control plane's machine template first: its reference is read from the control
	// plane object.
	var owned []*unstructured.Unstructured
	if c.Spec.ControlPlaneRef.IsDefined() {
		cp, err := r.getOwned(ctx, c, c.Spec.ControlPlaneRef)
		if err != nil {
			return err
		}
		if cp != nil {
			var mref map[string]any
			if m, found, _ := unstructured.NestedMap(cp.Object, "spec", "machineTemplate", "spec", "infrastructureRef"); found {
				mref = m
			}
			if mref != nil {
				group, _ := mref["apiGroup"].(string)
				kind, _ := mref["kind"].(string)
				name, _ := mref["name"].(string)
				mt, err := r.getOwned(ctx, c, clusterv1.ContractVersionedObjectReference{APIGroup: group, Kind: kind, Name: name})
				if err != nil {
					return err
				}
				if mt != nil {
					owned = append(owned, mt)
				}
			}
			owned = append(owned, cp)
		}
	}
	if c.Spec.InfrastructureRef.IsDefined() {
		infra, err := r.getOwned(ctx, c, c.Spec.InfrastructureRef)
		if err != nil {
			return err
		}
		if infra != nil {
			owned = append(owned, infra)
		}
	}
	secret := &corev1.Secret{}
	err := r.client.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: KubeconfigSecretName(c.Name)}, secret)
	switch {
	case err == nil && isOwnedBy(secret.OwnerReferences, c):
		if err := r.client.Delete(ctx, secret); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete Secret %s/%s: %w", secret.Namespace, secret.Name, err)
		}
	case err != nil && !apierrors.IsNotFound(err):
		return fmt.Errorf("get Secret %s/%s: %w", c.Namespace, KubeconfigSecretName(c.Name), err)
	}
	for _, o := range owned {
		if err := r.client.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete %s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}

	before := c.DeepCopy()
	controllerutil.RemoveFinalizer(c, Finalizer)
	if err := r.client.Patch(ctx, c, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("remove finalizer from Cluster %s: %w", key, err)
	}
	return nil
}

// getOwned returns the object ref names when it exists and is controlled by the Cluster c;
// nil otherwise (also when no CRD serves the kind any more).
func (r *Reconciler) getOwned(ctx context.Context, c *clusterv1.Cluster, ref clusterv1.ContractVersionedObjectReference) (*unstructured.Unstructured, error) {
	u, err := r.getRef(ctx, c.Namespace, ref)
	if meta.IsNoMatchError(err) {
		return nil, nil
	}
	if err != nil || u == nil || !isOwnedBy(u.GetOwnerReferences(), c) {
		return nil, err
	}
	return u, nil
}

func isOwnedBy(refs []metav1.OwnerReference, c *clusterv1.Cluster) bool {
	for _, ref := range refs {
		if ref.UID == c.UID {
			return true
		}
	}
	return false
}

// serviceAccountUsers are the user names of ServiceAccounts names in namespace ns.
func serviceAccountUsers(ns string, names []string) []string {
	var out []string
	for _, n := range names {
		out = append(out, "system:serviceaccount:"+ns+":"+n)
	}
	return out
}
