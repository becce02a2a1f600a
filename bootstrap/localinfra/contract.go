package localinfra

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
)

// pendingInterval is how often a Cluster is looked at while CAPI has not yet created all of
// its provider objects, or they are not yet provisioned.
const pendingInterval = 3 * time.Second

// ProviderIDPrefix starts the providerID of every infrastructure machine localinfra provisions.
const ProviderIDPrefix = "local://"

// reconcileContract plays the infrastructure, control-plane and bootstrap providers of a
// Cluster whose objects CAPI's controllers create (Options.ProviderContract).
func (r *Reconciler) reconcileContract(ctx context.Context, c *clusterv1.Cluster, w *WorkloadCluster) (ctrl.Result, error) {
	host, port := w.Endpoint()
	endpoint := clusterv1.APIEndpoint{Host: host, Port: port}
	pending := false

	infraHasEndpoint := false
	if ref := c.Spec.InfrastructureRef; ref.IsDefined() {
		has, done, err := r.provisionInfraCluster(ctx, c.Namespace, ref, endpoint)
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("cluster %s/%s: %w", c.Namespace, c.Name, err)
		}
		infraHasEndpoint, pending = has, pending || !done
	} else if c.Spec.Topology.IsDefined() {
		pending = true // CAPI's topology controller has not created it yet.
	}
	// An infrastructure cluster without spec.controlPlaneEndpoint (or none at all): the
	// control plane provider reports the endpoint, here on the Cluster itself.
	if !infraHasEndpoint && !c.Spec.ControlPlaneEndpoint.IsValid() {
		before := c.DeepCopy()
		c.Spec.ControlPlaneEndpoint = endpoint
		if err := r.client.Patch(ctx, c, client.MergeFrom(before)); err != nil {
			return ctrl.Result{}, fmt.Errorf("set endpoint of Cluster %s/%s: %w", c.Namespace, c.Name, err)
		}
	}
	if ref := c.Spec.ControlPlaneRef; ref.IsDefined() {
		done, err := r.provisionControlPlane(ctx, c.Namespace, ref)
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("cluster %s/%s: %w", c.Namespace, c.Name, err)
		}
		pending = pending || !done
	} else if c.Spec.Topology.IsDefined() {
		pending = true
	}
	done, err := r.provisionMachines(ctx, c, w)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("cluster %s/%s: %w", c.Namespace, c.Name, err)
	}
	if pending || !done {
		return ctrl.Result{RequeueAfter: pendingInterval}, nil
	}
	return ctrl.Result{RequeueAfter: healthCheckInterval}, nil
}

// provisionInfraCluster does the infrastructure provider's part for an infrastructure cluster:
// the control plane endpoint in spec (when its schema has one) and provisioned status. It
// returns whether the kind has spec.controlPlaneEndpoint, and false for done while the object
// does not exist yet.
func (r *Reconciler) provisionInfraCluster(ctx context.Context, ns string, ref clusterv1.ContractVersionedObjectReference, endpoint clusterv1.APIEndpoint) (hasEndpoint, done bool, err error) {
	u, err := r.getRef(ctx, ns, ref)
	if err != nil || u == nil {
		return false, false, err
	}
	gvk := u.GroupVersionKind()
	if hasEndpoint, err = r.schemaHas(ctx, gvk, "spec", "controlPlaneEndpoint"); err != nil {
		return false, false, err
	}
	if hasEndpoint {
		if h, _, _ := unstructured.NestedString(u.Object, "spec", "controlPlaneEndpoint", "host"); h == "" {
			before := u.DeepCopy()
			if err := unstructured.SetNestedMap(u.Object, map[string]any{"host": endpoint.Host, "port": int64(endpoint.Port)}, "spec", "controlPlaneEndpoint"); err != nil {
				return false, false, err
			}
			if err := r.client.Patch(ctx, u, client.MergeFrom(before)); err != nil {
				return false, false, fmt.Errorf("set endpoint of %s %s: %w", u.GetKind(), u.GetName(), err)
			}
		}
	}
	err = r.patchProviderStatus(ctx, u, map[string]any{
		// v1beta2 contract, then v1beta1.
		"initialization.provisioned": true,
		"ready":                      true,
	}, "Provided by localinfra: local workload API server at "+endpoint.String())
	return hasEndpoint, err == nil, err
}

// provisionControlPlane does the control-plane provider's part for a control plane object
// (for example the KubeadmControlPlane CAPI's topology controller created): initialized, every
// replica at spec.version, up to date, ready and available. The workload cluster's API server
// plays the control plane, so a version change is complete as soon as it is seen.
func (r *Reconciler) provisionControlPlane(ctx context.Context, ns string, ref clusterv1.ContractVersionedObjectReference) (bool, error) {
	u, err := r.getRef(ctx, ns, ref)
	if err != nil || u == nil {
		return false, err
	}
	replicas, found, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
	if !found {
		replicas = 1
	}
	version, _, _ := unstructured.NestedString(u.Object, "spec", "version")
	fields := map[string]any{
		"initialization.controlPlaneInitialized": true,
		"initialized":                            true, // v1beta1 contract
		"ready":                                  true, // v1beta1 contract
		"replicas":                               replicas,
		"readyReplicas":                          replicas,
		"availableReplicas":                      replicas,
		"upToDateReplicas":                       replicas,
		"updatedReplicas":                        replicas, // v1beta1 contract
		"unavailableReplicas":                    int64(0),
		"observedGeneration":                     u.GetGeneration(),
	}
	if version != "" {
		fields["version"] = version
		if replicas > 0 {
			fields["versions"] = []any{map[string]any{"version": version, "replicas": replicas}}
		}
	}
	return true, r.patchProviderStatus(ctx, u, fields, fmt.Sprintf("Control plane played by localinfra: %d replica(s) at %s", replicas, version))
}

// provisionMachines does the bootstrap and infrastructure providers' part for the Cluster's
// Machines (those of its MachineDeployments): bootstrap data Secret, infrastructure machine
// provisioned with a providerID, and a kwok Node with that providerID in the workload
// cluster, through which CAPI's Machine controller finds the Node. It returns false while an
// object a Machine refers to does not exist yet.
func (r *Reconciler) provisionMachines(ctx context.Context, c *clusterv1.Cluster, w *WorkloadCluster) (bool, error) {
	machines := &clusterv1.MachineList{}
	if err := r.client.List(ctx, machines, client.InNamespace(c.Namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: c.Name}); err != nil {
		return false, fmt.Errorf("list Machines: %w", err)
	}
	done := true
	for i := range machines.Items {
		m := &machines.Items[i]
		if !m.DeletionTimestamp.IsZero() {
			continue
		}
		ok, err := r.provisionBootstrap(ctx, c, m)
		if err != nil {
			return false, fmt.Errorf("machine %s: %w", m.Name, err)
		}
		done = done && ok
		if ok, err = r.provisionInfraMachine(ctx, m, w); err != nil {
			return false, fmt.Errorf("machine %s: %w", m.Name, err)
		}
		done = done && ok
	}
	return done, nil
}

// provisionBootstrap writes a Machine's bootstrap data Secret (named like its bootstrap
// config, as CABPK does; the content is a placeholder, since kwok runs the node) and marks the
// config's data created.
func (r *Reconciler) provisionBootstrap(ctx context.Context, c *clusterv1.Cluster, m *clusterv1.Machine) (bool, error) {
	ref := m.Spec.Bootstrap.ConfigRef
	if !ref.IsDefined() {
		return true, nil // spec.bootstrap.dataSecretName given directly
	}
	u, err := r.getRef(ctx, m.Namespace, ref)
	if err != nil || u == nil {
		return false, err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: u.GetName(), Namespace: u.GetNamespace()}}
	_, err = controllerutil.CreateOrPatch(ctx, r.client, secret, func() error {
		if secret.CreationTimestamp.IsZero() {
			secret.Type = clusterv1.ClusterSecretType
		}
		if secret.Labels == nil {
			secret.Labels = map[string]string{}
		}
		secret.Labels[clusterv1.ClusterNameLabel] = c.Name
		secret.Data = map[string][]byte{
			"value":  []byte("## localinfra: no bootstrap data; kwok runs this machine's node\n"),
			"format": []byte("cloud-config"),
		}
		return controllerutil.SetOwnerReference(u, secret, r.client.Scheme())
	})
	if err != nil {
		return false, fmt.Errorf("write bootstrap Secret %s: %w", secret.Name, err)
	}
	return true, r.patchProviderStatus(ctx, u, map[string]any{
		"dataSecretName":                   secret.Name,
		"initialization.dataSecretCreated": true,
		"ready":                            true, // v1beta1 contract
	}, "Bootstrap data written by localinfra")
}

// provisionInfraMachine gives a Machine's infrastructure machine a providerID, a kwok Node of
// that providerID in the workload cluster, and provisioned status.
func (r *Reconciler) provisionInfraMachine(ctx context.Context, m *clusterv1.Machine, w *WorkloadCluster) (bool, error) {
	u, err := r.getRef(ctx, m.Namespace, m.Spec.InfrastructureRef)
	if err != nil || u == nil {
		return false, err
	}
	providerID, _, _ := unstructured.NestedString(u.Object, "spec", "providerID")
	if providerID == "" {
		providerID = ProviderIDPrefix + m.Namespace + "/" + m.Name
		before := u.DeepCopy()
		if err := unstructured.SetNestedField(u.Object, providerID, "spec", "providerID"); err != nil {
			return false, err
		}
		if err := r.client.Patch(ctx, u, client.MergeFrom(before)); err != nil {
			return false, fmt.Errorf("set providerID of %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	// The node name is also its hostname label, which must fit a label value.
	if err := w.EnsureNode(ctx, fluxgen.SafeName(fluxgen.MaxLabelValue, m.Name), providerID, m.Spec.Version); err != nil {
		return false, err
	}
	return true, r.patchProviderStatus(ctx, u, map[string]any{
		"initialization.provisioned": true,
		"ready":                      true, // v1beta1 contract
	}, "Machine provisioned by localinfra as a kwok Node")
}

// patchProviderStatus sets the status fields (dotted paths below status) that the object's
// schema declares, and a Ready condition when it has metav1 conditions, with message, then
// patches the status subresource when something changed. Only declared fields are set, so
// that nothing is pruned and a second pass finds nothing to write.
func (r *Reconciler) patchProviderStatus(ctx context.Context, u *unstructured.Unstructured, fields map[string]any, message string) error {
	gvk := u.GroupVersionKind()
	before := u.DeepCopy()
	for path, v := range fields {
		p := append([]string{"status"}, splitPath(path)...)
		has, err := r.schemaHas(ctx, gvk, p...)
		if err != nil {
			return err
		}
		if has {
			if err := unstructured.SetNestedField(u.Object, v, p...); err != nil {
				return fmt.Errorf("%s %s: set %v: %w", u.GetKind(), u.GetName(), p, err)
			}
		}
	}
	// metav1.Conditions (v1beta2 contract) have observedGeneration; v1beta1 ones do not.
	hasConditions, err := r.schemaHas(ctx, gvk, "status", "conditions", "[]", "observedGeneration")
	if err != nil {
		return err
	}
	if hasConditions {
		if err := setReadyCondition(u, message); err != nil {
			return err
		}
	}
	if equality.Semantic.DeepEqual(before.Object, u.Object) {
		return nil
	}
	err = r.client.Status().Patch(ctx, u, client.MergeFrom(before))
	if apierrors.IsNotFound(err) {
		// No status subresource: status is part of the object.
		err = r.client.Patch(ctx, u, client.MergeFrom(before))
	}
	if err != nil {
		return fmt.Errorf("update status of %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return nil
}

// setReadyCondition sets the Ready condition (and, for control planes, Available) of u to True
// when its conditions are metav1.Conditions (v1beta2 contract); v1beta1 conditions (with
// severity) are left alone.
func setReadyCondition(u *unstructured.Unstructured, message string) error {
	raw, _, err := unstructured.NestedSlice(u.Object, "status", "conditions")
	if err != nil {
		return nil //nolint:nilerr // not a list of objects: not ours to set
	}
	var conds []metav1.Condition
	for _, c := range raw {
		m, ok := c.(map[string]any)
		if !ok {
			return nil
		}
		if _, v1beta1 := m["severity"]; v1beta1 {
			return nil
		}
		var cond metav1.Condition
		if err := runtimeFromUnstructured(m, &cond); err != nil {
			return nil //nolint:nilerr // not a metav1.Condition: not ours to set
		}
		conds = append(conds, cond)
	}
	condTypes := []string{"Ready"}
	if _, isCP, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "initialization", "controlPlaneInitialized"); isCP {
		condTypes = append(condTypes, "Available")
	}
	for _, t := range condTypes {
		meta.SetStatusCondition(&conds, metav1.Condition{
			Type: t, Status: metav1.ConditionTrue, Reason: "LocalInfra", Message: message,
			ObservedGeneration: u.GetGeneration(),
		})
	}
	out := make([]any, 0, len(conds))
	for _, c := range conds {
		m, err := runtimeToUnstructured(&c)
		if err != nil {
			return err
		}
		out = append(out, m)
	}
	return unstructured.SetNestedSlice(u.Object, out, "status", "conditions")
}

// getRef returns the object ref names in namespace ns, or nil when it does not exist yet.
func (r *Reconciler) getRef(ctx context.Context, ns string, ref clusterv1.ContractVersionedObjectReference) (*unstructured.Unstructured, error) {
	mapping, err := r.client.RESTMapper().RESTMapping(schema.GroupKind{Group: ref.APIGroup, Kind: ref.Kind})
	if err != nil {
		return nil, fmt.Errorf("resolve %s.%s: %w", ref.Kind, ref.APIGroup, err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(mapping.GroupVersionKind)
	if err := r.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: ref.Name}, u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("get %s %s/%s: %w", ref.Kind, ns, ref.Name, err)
	}
	return u, nil
}

// reconcileContractDelete keeps the workload cluster running while CAPI deletes the Cluster's
// Machines, control plane and infrastructure cluster (its finalizer is on the Cluster), then
// stops it, deletes the kubeconfig Secret and releases localinfra's finalizer.
func (r *Reconciler) reconcileContractDelete(ctx context.Context, c *clusterv1.Cluster) (ctrl.Result, error) {
	if controllerutil.ContainsFinalizer(c, clusterv1.ClusterFinalizer) {
		return ctrl.Result{RequeueAfter: pendingInterval}, nil
	}
	return ctrl.Result{}, r.reconcileDelete(ctx, c)
}

// splitPath splits a dotted field path.
func splitPath(path string) []string { return strings.Split(path, ".") }

func runtimeFromUnstructured(m map[string]any, out any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(m, out)
}

func runtimeToUnstructured(obj any) (map[string]any, error) {
	return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
}
