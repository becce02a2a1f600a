package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxstatus"
	"github.com/clusterstack-io/clusterstack-operator/internal/metrics"
	"github.com/clusterstack-io/clusterstack-operator/internal/overrides"
	"github.com/clusterstack-io/clusterstack-operator/internal/render"
)

// checkPrerequisites: the release is ready to deliver, the control plane is initialized and the
// kubeconfig Secret exists. Until then nothing is created and the ClusterAddon says what it waits for.
func (r *ClusterAddonReconciler) checkPrerequisites(ctx context.Context, s *addonScope) (ctrl.Result, error) {
	wait := func(reason, msg string) {
		s.waiting = &metav1.Condition{Type: csv1.WorkloadClusterReadyCondition, Status: metav1.ConditionFalse, Reason: reason, Message: msg}
	}
	rel := s.release
	if c := apimeta.FindStatusCondition(rel.Status.Conditions, csv1.StackValidCondition); c == nil || c.Status != metav1.ConditionTrue || rel.Status.Revision == "" {
		why := "its stack has not been fetched and checked yet"
		if c != nil && c.Status == metav1.ConditionFalse {
			why = c.Message
		}
		from, err := r.lastAppliedRelease(ctx, s)
		if err != nil {
			return ctrl.Result{}, err
		}
		s.releaseReady = &metav1.Condition{Type: csv1.ReleaseReadyCondition, Status: metav1.ConditionFalse, Reason: csv1.ReasonWaitingForRelease,
			Message: fluxstatus.Truncate(fmt.Sprintf("waiting for release %s: %s", rel.Name, why) + upgradeHeldHint(rel, from, s.cluster))}
		return ctrl.Result{}, errPhasesDone
	}
	// A release whose requirements on the management plane (operator versions, Cluster API
	// contract) are not delivered is treated as not ready: nothing moves to it. When the release
	// the addons are at excludes every version the new one needs, that is a cycle, named so.
	if gate := requirementsGate(rel, s.addon.Status.LastAppliedRelease); gate != nil {
		from, err := r.lastAppliedRelease(ctx, s)
		if err != nil {
			return ctrl.Result{}, err
		}
		if c := cycleGate(rel, from); c != nil {
			gate = c
		}
		gate.Message = fluxstatus.Truncate(gate.Message + upgradeHeldHint(rel, from, s.cluster))
		s.releaseReady = gate
		return ctrl.Result{}, errPhasesDone
	}
	s.releaseReady = &metav1.Condition{Type: csv1.ReleaseReadyCondition, Status: metav1.ConditionTrue, Reason: csv1.ReasonAsExpected,
		Message: fmt.Sprintf("release %s of ClusterStack %s is validated at %s", rel.Name, rel.Spec.ClusterStack, rel.Status.Revision)}
	if !controlPlaneInitialized(s.cluster) {
		wait(csv1.ReasonWaitingForControlPlane, waitingForControlPlane(s.cluster))
		return ctrl.Result{}, errPhasesDone
	}
	// The kubeconfig Secret is read by name, metadata only, from the API server: the operator
	// neither lists nor watches Secrets, and never reads their data. CAPI writes it before it
	// marks the control plane initialized, so the Cluster's status change brings us here; while
	// it is missing, look again after kubeconfigRecheck. Once seen it is not read again (CAPI
	// keeps it for the Cluster's life; Flux reports it should it go): a request per reconcile of
	// every Cluster would be most of what a converged fleet costs the API server.
	if c := apimeta.FindStatusCondition(s.addon.Status.Conditions, csv1.WorkloadClusterReadyCondition); c != nil && c.Status == metav1.ConditionTrue {
		s.waiting = c.DeepCopy()
		return ctrl.Result{}, nil
	}
	// A first status held back (progressPacer) that says so counts as well.
	if len(s.addon.Status.Conditions) == 0 && r.pace.heldKubeconfigSeen(client.ObjectKeyFromObject(s.addon)) {
		s.waiting = kubeconfigPresent()
		return ctrl.Result{}, nil
	}
	if err := secretExists(ctx, r.APIReader, client.ObjectKey{Namespace: s.cluster.Namespace, Name: fluxgen.KubeconfigSecretName(s.cluster.Name)}); err != nil {
		if apierrors.IsNotFound(err) {
			wait(csv1.ReasonWaitingForKubeconfig, fmt.Sprintf("waiting for Secret %s", fluxgen.KubeconfigSecretName(s.cluster.Name)))
			return requeueIn(kubeconfigRecheck), errPhasesDone
		}
		return ctrl.Result{}, err
	}
	s.waiting = kubeconfigPresent()
	return ctrl.Result{}, nil
}

// secretExists reads the metadata of the Secret named key from the API server: first from its
// watch cache (resourceVersion "0": no etcd read, and no decryption of the Secret when the API
// server encrypts Secrets at rest), and, only when that says it does not exist, from etcd
// (a quorum read), as the watch cache may lag behind a Secret created a moment ago. A stale
// "exists" is as good as a fresh one: a Secret deleted since is what Flux reports.
func secretExists(ctx context.Context, r client.Reader, key client.ObjectKey) error {
	secret := &metav1.PartialObjectMetadata{}
	secret.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	err := r.Get(ctx, key, secret, &client.GetOptions{Raw: &metav1.GetOptions{ResourceVersion: "0"}})
	if apierrors.IsNotFound(err) {
		err = r.Get(ctx, key, secret)
	}
	return err
}

// kubeconfigPresent is the WorkloadClusterReady condition of a Cluster whose control plane is
// initialized and whose kubeconfig Secret exists.
func kubeconfigPresent() *metav1.Condition {
	return &metav1.Condition{Type: csv1.WorkloadClusterReadyCondition, Status: metav1.ConditionTrue, Reason: csv1.ReasonAsExpected,
		Message: "control plane initialized and kubeconfig Secret present"}
}

// waitingForControlPlane says that the Cluster's control plane is not initialized yet and, when
// Cluster API reports that it cannot build the Cluster's topology, what it said: then the wait
// is not one that passes on its own (a template CAPI's webhooks refuse, a ClusterClass it has
// not reconciled), and the Degraded this turns into after the grace period names the cause.
func waitingForControlPlane(c *clusterv1.Cluster) string {
	msg := fmt.Sprintf("waiting for the control plane of Cluster %s to be initialized", c.Name)
	if problem := topologyProblem(c); problem != "" {
		msg += "; Cluster API cannot build its topology: " + problem
	}
	return fluxstatus.Truncate(msg)
}

// topologyProblem is what Cluster API says, in the Cluster's TopologyReconciled condition, when
// that condition is False for one of the two reasons CAPI itself counts as issues (its
// reconciliation failed; the ClusterClass is not reconciled), and "" otherwise (no condition, or
// a topology that is only on its way: creating, upgrading, ...).
func topologyProblem(c *clusterv1.Cluster) string {
	cond := apimeta.FindStatusCondition(c.Status.Conditions, clusterv1.ClusterTopologyReconciledCondition)
	if cond == nil || cond.Status != metav1.ConditionFalse ||
		cond.Reason != clusterv1.ClusterTopologyReconciledFailedReason && cond.Reason != clusterv1.ClusterTopologyReconciledClusterClassNotReconciledReason {
		return ""
	}
	return fmt.Sprintf("TopologyReconciled is False (%s): %s", cond.Reason, oneLineText(strings.TrimSpace(cond.Message)))
}

func controlPlaneInitialized(c *clusterv1.Cluster) bool {
	if p := c.Status.Initialization.ControlPlaneInitialized; p != nil && *p {
		return true
	}
	cond := apimeta.FindStatusCondition(c.Status.Conditions, clusterv1.ClusterControlPlaneInitializedCondition)
	return cond != nil && cond.Status == metav1.ConditionTrue
}

// renderValues renders the release's value templates for the cluster into its ConfigMap. A
// failure leaves the ConfigMap and the Flux objects as they are.
func (r *ClusterAddonReconciler) renderValues(ctx context.Context, s *addonScope) (ctrl.Result, error) {
	repo := fluxgen.NewReleaseSource(s.release)
	if err := r.Get(ctx, client.ObjectKey{Namespace: s.release.Namespace, Name: fluxgen.GitRepositoryName(s.release.Name)}, repo); err != nil {
		return ctrl.Result{}, err
	}
	if art := repo.GetArtifact(); art == nil || fluxstatus.CommitOf(art.Revision) != fluxstatus.CommitOf(s.release.Status.Revision) {
		s.releaseReady = &metav1.Condition{Type: csv1.ReleaseReadyCondition, Status: metav1.ConditionFalse, Reason: csv1.ReasonWaitingForRelease,
			Message: fmt.Sprintf("waiting for %s %s to serve revision %s", fluxgen.SourceKind(s.release), repo.GetName(), s.release.Status.Revision)}
		return ctrl.Result{}, errPhasesDone
	}
	st, err := r.Stacks.Get(ctx, repo, s.release.Spec.Source.Path)
	if err != nil {
		return ctrl.Result{}, err
	}
	s.stack = st

	cp, err := r.referenced(ctx, s.cluster, s.cluster.Spec.ControlPlaneRef)
	if err != nil {
		return ctrl.Result{}, err
	}
	infra, err := r.referenced(ctx, s.cluster, s.cluster.Spec.InfrastructureRef)
	if err != nil {
		return ctrl.Result{}, err
	}
	ovs, err := r.overridesFor(ctx, s.cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	key := client.ObjectKeyFromObject(s.addon)
	objs := []client.Object{s.cluster, cp, infra}
	for _, o := range ovs {
		objs = append(objs, o)
	}
	inputs := renderInputs([]string{string(s.addon.GetUID()), repo.GetArtifact().Digest, s.release.Spec.Source.Path,
		s.release.Name, s.release.Spec.Version, s.release.Status.KubernetesVersion}, objs...)
	cm := r.valuesConfigMap(s, ovs)
	s.controlPlane = cleanObject(cp)
	if r.valuesUnchanged(ctx, s, cm, inputs) {
		// Rendered from these very inputs, and the ConfigMap is as then applied: rendering again
		// would give the same data, and applying it would write nothing.
		metrics.Default.ValuesRender(s.cluster.Namespace, metrics.RenderUnchanged)
		r.valuesRendered(s, cm, ovs)
		return ctrl.Result{}, nil
	}
	in, err := renderInput(s, infra)
	if err != nil {
		return ctrl.Result{}, err
	}
	if in.Overrides, err = overrides.ToRender(ovs); err != nil {
		s.rendered = &metav1.Condition{Type: csv1.ValuesRenderedCondition, Status: metav1.ConditionFalse, Reason: csv1.ReasonOverrideFailed,
			Message: fluxstatus.Truncate(fmt.Sprintf("release %s: %s", s.release.Name, err.Error()))}
		return ctrl.Result{}, errPhasesDone
	}
	release, ok, err := r.Renders.Acquire(ctx, s.cluster.Namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !ok {
		// The namespace has its share of renders running (and another of its Clusters waits, or
		// this one waited its turn out): come back rather than wait in a worker every namespace
		// shares, ahead of the Clusters still queued from the start (deferredRenderPriority).
		// Everything recorded stays as it is.
		metrics.Default.ValuesRender(s.cluster.Namespace, metrics.RenderDeferred)
		log.FromContext(ctx).V(1).Info("render deferred: the namespace has its share of renders running", "retryAfter", renderRetry)
		return deferredRender(), errPhasesDone
	}
	data, err := func() (map[string]string, error) {
		defer release()
		return render.Render(in, st.RenderComponents())
	}()
	metrics.Default.ValuesRender(s.cluster.Namespace, metrics.RenderRan)
	if err != nil {
		r.valuesMemo.forget(key)
		var rerr *render.Error
		if errors.As(err, &rerr) {
			reason := csv1.ReasonRenderFailed
			switch {
			case rerr.Override != "":
				reason = csv1.ReasonOverrideFailed
			case errors.Is(err, render.ErrLimitExceeded):
				reason = csv1.ReasonRenderLimitExceeded
			}
			msg := fmt.Sprintf("release %s: %s", s.release.Name, err.Error())
			var res ctrl.Result
			if outOfTime(err) {
				// The time limit is wall-clock time: an operator short of CPU can run out of it
				// with a template that needs far less. Unlike the other failures, which only a
				// change of the template or its inputs ends (and that change brings the reconcile
				// back), it is tried again, ever less often.
				msg += renderAgainHint
				res = requeueIn(r.renderTimeouts.next(key))
			}
			s.rendered = &metav1.Condition{Type: csv1.ValuesRenderedCondition, Status: metav1.ConditionFalse, Reason: reason,
				Message: fluxstatus.Truncate(msg)}
			return res, errPhasesDone
		}
		return ctrl.Result{}, err
	}
	r.renderTimeouts.forget(key)
	cm.Data = data
	_, hash, err := r.Applier.ApplyHashed(ctx, s.addon, cm)
	if err != nil {
		r.valuesMemo.forget(key)
		return s.ownershipConflict(err)
	}
	if e, ok := newRenderMemoEntry(inputs, hash, configMapDataHash(data, nil)); ok {
		r.valuesMemo.put(key, e)
	} else {
		r.valuesMemo.forget(key)
	}
	r.valuesRendered(s, cm, ovs)
	return ctrl.Result{}, nil
}

// valuesUnchanged is true when the last render of s's ClusterAddon was made from inputs and its
// ConfigMap, cm without its data, is in the cache as then applied (renderMemo).
func (r *ClusterAddonReconciler) valuesUnchanged(ctx context.Context, s *addonScope, cm *corev1.ConfigMap, inputs [16]byte) bool {
	memo, ok := r.valuesMemo.get(client.ObjectKeyFromObject(s.addon), inputs)
	if !ok {
		return false
	}
	hash, dataHash := memo.hashes()
	return r.Applier.Unchanged(ctx, s.addon, cm, hash, dataHash)
}

// valuesConfigMap is the Cluster's values ConfigMap for its release, without its data.
func (r *ClusterAddonReconciler) valuesConfigMap(s *addonScope, ovs []*csv1.ClusterAddonOverride) *corev1.ConfigMap {
	// One ConfigMap per release: the Flux objects switch to it in the same write as their chart
	// or source, so old charts never run with the new release's values.
	cm := &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name: fluxgen.ValuesConfigMapName(s.cluster.Name, s.release.Name), Namespace: s.cluster.Namespace,
			Labels: fluxgen.ClusterLabels(s.release.Spec.ClusterStack, s.release.Name, s.cluster.Name, ""),
		},
	}
	cm.Labels[meta.LabelKeyWatch] = meta.LabelValueWatchEnabled // Flux reconciles its users at once on change
	if len(ovs) > 0 {
		// Which overrides the data holds, in order: the plugin's provenance and people read it.
		cm.Annotations = map[string]string{csv1.OverridesAnnotation: overrides.Names(ovs)}
	}
	return cm
}

// valuesRendered records the values ConfigMap cm, applied or found as applied, in s.
func (r *ClusterAddonReconciler) valuesRendered(s *addonScope, cm *corev1.ConfigMap, ovs []*csv1.ClusterAddonOverride) {
	with := ""
	if len(ovs) > 0 {
		with = fmt.Sprintf(" with ClusterAddonOverrides %s", strings.ReplaceAll(overrides.Names(ovs), ",", ", "))
	}
	s.values = cm.Name
	s.rendered = &metav1.Condition{Type: csv1.ValuesRenderedCondition, Status: metav1.ConditionTrue, Reason: csv1.ReasonAsExpected,
		Message: fluxstatus.Truncate(fmt.Sprintf("values of release %s rendered into ConfigMap %s%s", s.release.Name, cm.Name, with))}
}

// renderInput gathers the Cluster, its control plane (s.controlPlane) and infrastructure object
// (infra, as referenced read it) as maps.
func renderInput(s *addonScope, infra *unstructured.Unstructured) (render.Input, error) {
	clusterMap, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s.cluster)
	if err != nil {
		return render.Input{}, err
	}
	return render.Input{
		Cluster:      render.Clean(clusterMap),
		Release:      render.Release{Name: s.release.Name, Version: s.release.Spec.Version, KubernetesVersion: s.release.Status.KubernetesVersion},
		ControlPlane: s.controlPlane,
		InfraCluster: cleanObject(infra),
	}, nil
}

// cleanObject is u's map without what templates never see (render.Clean), nil for no object.
func cleanObject(u *unstructured.Unstructured) map[string]any {
	if u == nil {
		return nil
	}
	return render.Clean(u.Object)
}

// referenced reads an object the Cluster refers to (in the Cluster's namespace), nil when it
// refers to none or the object does not exist, and makes sure changes to objects of its kind
// trigger a re-render.
func (r *ClusterAddonReconciler) referenced(ctx context.Context, cluster *clusterv1.Cluster, ref clusterv1.ContractVersionedObjectReference) (*unstructured.Unstructured, error) {
	if ref.Name == "" || ref.Kind == "" {
		return nil, nil
	}
	mapping, err := r.RESTMapper().RESTMapping(schema.GroupKind{Group: ref.APIGroup, Kind: ref.Kind})
	if err != nil {
		return nil, fmt.Errorf("resolve %s.%s referenced by Cluster %s: %w", ref.Kind, ref.APIGroup, cluster.Name, err)
	}
	if err := r.watchKind(mapping.GroupVersionKind); err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(mapping.GroupVersionKind)
	if err := r.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: ref.Name}, u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return u, nil
}

// applyFluxObjects applies one HelmRelease or Kustomization per component the plan moves to the
// desired release (all of them, unless an upgrade holds some: see clusteraddon_stages.go), leaves
// the held ones as they are, and removes those of components the release no longer has once
// nothing holds them (Flux uninstalls or prunes them from the workload cluster).
func (r *ClusterAddonReconciler) applyFluxObjects(ctx context.Context, s *addonScope) (ctrl.Result, error) {
	comps := s.release.Status.Components
	if s.plan != nil {
		comps = s.plan.Apply
	}
	objs := fluxgen.AddonObjects(fluxgen.ClusterInput{
		Cluster: s.cluster.Name, Namespace: s.cluster.Namespace, Stack: s.release.Spec.ClusterStack,
		Release: s.release, Components: comps, Timeout: r.AddonTimeout, FluxShard: fluxShardOf(s.cluster, r.FluxShards),
	})
	want := map[string]bool{}
	written := make(map[string]csv1.AddonComponentStatus, len(comps))
	s.applied = map[string]client.Object{}
	s.appliedHashes = map[string]string{}
	var prev client.Object
	awaited := ""
	for i, obj := range objs {
		c := comps[i]
		kind := obj.GetObjectKind().GroupVersionKind().Kind
		want[kind+"/"+obj.GetName()] = true
		status := csv1.AddonComponentStatus{Name: c.Name, Kind: c.Kind, Release: s.release.Name, Version: c.Version, FluxObject: kind + "/" + obj.GetName()}
		// Flux orders only within a kind: a component after one of another kind is created only
		// once its predecessor is Ready.
		if prev != nil && prev.GetObjectKind().GroupVersionKind().Kind != kind {
			exists := s.flux.listedAs(kind, obj.GetName()) != nil
			ready := readyForSpec(s.flux.current(kindOf(prev), prev.GetName()))
			if !exists && !ready {
				status.WaitingFor = fmt.Sprintf("waiting for %s/%s to be Ready before creating it", prev.GetObjectKind().GroupVersionKind().Kind, prev.GetName())
				if awaited == "" {
					awaited = prev.GetObjectKind().GroupVersionKind().Kind + "/" + prev.GetName()
				}
				written[c.Name] = status
				prev = obj
				continue
			}
		}
		replaced, err := r.removeOtherKind(ctx, s, obj, c.Name)
		if err != nil {
			return ctrl.Result{}, err
		}
		if replaced != "" {
			status.WaitingFor = fmt.Sprintf("waiting for %s, which release %s replaces with a %s, to be removed before creating it", replaced, s.release.Name, kind)
			written[c.Name] = status
			prev = obj
			continue
		}
		_, hash, err := r.Applier.ApplyHashed(ctx, s.addon, obj)
		if err != nil {
			return s.ownershipConflict(err)
		}
		written[c.Name] = status
		s.applied[c.Name], s.appliedHashes[c.Name] = obj, hash
		s.flux.wrote(obj)
		prev = obj
	}
	r.awaited.put(client.ObjectKeyFromObject(s.addon), awaited)
	s.components = s.componentStatuses(written, want)
	return ctrl.Result{}, r.pruneStale(ctx, s, want)
}

// fluxShardOf is the Flux shard a Cluster's Flux objects are labelled for: the value of its
// sharding.fluxcd.io/key label when the platform allows it (allowed, --allowed-flux-shards),
// else none (Flux's main shard). The label is the tenant's input: Flux's shards may run with
// other identities or without the lockdown, and a tenant must not pick one the platform did not
// offer.
func fluxShardOf(c *clusterv1.Cluster, allowed map[string]bool) string {
	if v := c.Labels[fluxgen.FluxShardLabel]; allowed[v] {
		return v
	}
	return ""
}

// removeOtherKind deletes the cluster's Flux object of the other kind for a component whose kind
// the release changed, as fluxgen.KindChange decides from the observation, and names it until
// it is gone. "" when there is no such object.
func (r *ClusterAddonReconciler) removeOtherKind(ctx context.Context, s *addonScope, obj client.Object, component string) (string, error) {
	gone := fluxgen.KindChange(kindOf(obj), obj.GetName(), component, s.flux.existing())
	if gone == nil {
		return "", nil
	}
	other := s.flux.listedAs(gone.Kind, gone.Name)
	ref, kind := fluxRef(gone.Kind, gone.Name), kindOf(obj)
	if other.GetDeletionTimestamp().IsZero() {
		uid := other.GetUID()
		if err := r.Delete(ctx, other, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
			return "", fmt.Errorf("delete %s, which release %s replaces with a %s: %w", ref, s.release.Name, kind, err)
		}
		r.Recorder.Eventf(s.addon, corev1.EventTypeNormal, "ComponentReplaced",
			"%s is removed from Cluster %s before %s/%s replaces it: release %s delivers component %s as a %s",
			ref, s.cluster.Name, kind, obj.GetName(), s.release.Name, component, kind)
	}
	return ref, nil
}

// pruneValues deletes the cluster's values ConfigMaps of other releases. It runs only after
// applyFluxObjects succeeded: then every Flux object of the cluster that exists refers to the
// desired release's ConfigMap (objects of components the release dropped, or renamed, were
// deleted; a component gated on its predecessor has no object yet), except the objects an
// upgrade holds at their release, whose ConfigMaps are kept. It waits until Flux has acted on
// what was written (valuesInUse).
func (r *ClusterAddonReconciler) pruneValues(ctx context.Context, s *addonScope) (ctrl.Result, error) {
	if inUse := valuesInUse(s); inUse != "" {
		log.FromContext(ctx).V(1).Info("values ConfigMaps of other releases kept until Flux acts on the current spec", "fluxObject", inUse)
		return ctrl.Result{}, nil
	}
	var cms corev1.ConfigMapList
	if err := r.List(ctx, &cms, client.InNamespace(s.addon.Namespace),
		byGeneratedCluster(s.addon.Spec.ClusterName)); err != nil {
		return ctrl.Result{}, err
	}
	keep := map[string]bool{s.values: true}
	if s.plan != nil {
		for _, rel := range s.plan.Hold {
			keep[fluxgen.ValuesConfigMapName(s.cluster.Name, rel)] = true // a held object's values
		}
	}
	for i := range cms.Items {
		cm := &cms.Items[i]
		if keep[cm.Name] || !metav1.IsControlledBy(cm, s.addon) || !cm.DeletionTimestamp.IsZero() {
			continue
		}
		if err := r.Delete(ctx, cm, client.Preconditions{UID: &cm.UID}); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("delete values ConfigMap %s no Flux object uses: %w", cm.Name, err)
		}
		log.FromContext(ctx).V(1).Info("values ConfigMap of another release removed", "configMap", cm.Name)
	}
	return ctrl.Result{}, nil
}

// valuesInUse names a Flux object of the cluster whose controller has not observed its current
// generation yet (written by this reconcile when the cache has not seen the write), or "" when
// there is none. Such an object may still be reconciled from the spec before: Flux controllers
// act on the spec they have cached, and helm-controller, woken at once by the deletion of a
// values ConfigMap it watches, would read a HelmRelease whose switch to the new release's
// ConfigMap it has not seen yet, and fail with "ConfigMap not found" (Ready False until it sees
// the new spec). The ConfigMaps of other releases go once Flux has acted on every current spec:
// that status change brings the reconcile back. Objects being deleted are not counted (an
// uninstall or prune does not read values).
func valuesInUse(s *addonScope) string {
	for _, o := range s.flux.listed {
		if !o.GetDeletionTimestamp().IsZero() {
			continue
		}
		if cur := s.flux.current(kindOf(o), o.GetName()); observedGeneration(cur) < cur.GetGeneration() {
			return fluxRef(kindOf(o), o.GetName())
		}
	}
	return ""
}

// observedGeneration is the generation a HelmRelease's or Kustomization's controller last acted
// on (status.observedGeneration).
func observedGeneration(o client.Object) int64 {
	switch t := o.(type) {
	case *helmv2.HelmRelease:
		return t.Status.ObservedGeneration
	case *kustomizev1.Kustomization:
		return t.Status.ObservedGeneration
	}
	return o.GetGeneration()
}

// pruneStale deletes the cluster's Flux objects that no component of the release wants, and
// those of the components a delete step of the release's BeforeClusterUpgrade stage removes
// during an upgrade (the plan's Remove), as fluxgen.PruneDecision decides.
func (r *ClusterAddonReconciler) pruneStale(ctx context.Context, s *addonScope, want map[string]bool) error {
	objs := s.flux.listed
	in := fluxgen.PruneInput{Cluster: s.cluster.Name, Want: want, Components: s.release.Status.Components}
	if s.plan != nil {
		in.Removing = s.plan.Remove
	}
	for i, action := range fluxgen.PruneDecision(in, s.flux.existing()) {
		o := objs[i]
		switch action {
		case fluxgen.PruneKeep:
		case fluxgen.PruneForStage:
			if err := r.removeForStage(ctx, s, o); err != nil {
				return err
			}
		case fluxgen.PruneSuspendThenDelete:
			if err := r.suspend(ctx, o); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("suspend renamed %s before deleting it: %w", o.GetName(), err)
			}
			if err := r.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("delete renamed %s: %w", o.GetName(), err)
			}
		case fluxgen.PruneDelete:
			if err := r.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("delete %s no longer in release %s: %w", o.GetName(), s.release.Name, err)
			}
			r.Recorder.Eventf(s.addon, corev1.EventTypeNormal, "ComponentRemoved", "%s is not part of release %s: removed from the cluster", o.GetName(), s.release.Name)
		}
	}
	return nil
}

// ownsEverything records, once every phase ran, that every generated object is this
// ClusterAddon's (a conflict stops the phases before, ownershipConflict).
func ownsEverything(_ context.Context, s *addonScope) (ctrl.Result, error) {
	s.owned = &metav1.Condition{Type: csv1.ObjectsOwnedCondition, Status: metav1.ConditionTrue, Reason: csv1.ReasonAsExpected,
		Message: "every generated object is controlled by this ClusterAddon"}
	return ctrl.Result{}, nil
}

// ownershipConflict turns an object another owner holds into the ObjectsOwned fact (the
// ClusterAddon is Degraded, naming the object and its owner; nothing is taken over) and passes
// other errors on. The conflict is checked again after conflictRecheck: the other owner's
// object is not watched.
func (s *addonScope) ownershipConflict(err error) (ctrl.Result, error) {
	var c *OwnershipConflictError
	if !errors.As(err, &c) {
		return ctrl.Result{}, err
	}
	s.owned = &metav1.Condition{Type: csv1.ObjectsOwnedCondition, Status: metav1.ConditionFalse, Reason: csv1.ReasonOwnershipConflict,
		Message: fmt.Sprintf("Cluster %s: %s; rename or remove that object", s.cluster.Name, c.Error())}
	return requeueIn(conflictRecheck), errPhasesDone
}
