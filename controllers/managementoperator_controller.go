package controllers

import (
	"context"
	"fmt"
	"reflect"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxstatus"
	"github.com/clusterstack-io/clusterstack-operator/internal/opgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/opstatus"
	"github.com/clusterstack-io/clusterstack-operator/internal/requirements"
)

// ManagementOperatorFinalizer lets the operator suspend a ManagementOperator's Kustomization or
// HelmRelease before its Flux objects are deleted, so that Flux leaves the delivered operator
// running (uninstalling a Cluster API provider would delete its CRDs and every object of them).
const ManagementOperatorFinalizer = "clusterstack.io/management-operator"

// Labels kustomize-controller and helm-controller put on every object they apply, naming the
// Kustomization or HelmRelease that applied it.
const (
	kustomizeNameLabel      = "kustomize.toolkit.fluxcd.io/name"
	kustomizeNamespaceLabel = "kustomize.toolkit.fluxcd.io/namespace"
	helmNameLabel           = "helm.toolkit.fluxcd.io/name"
	helmNamespaceLabel      = "helm.toolkit.fluxcd.io/namespace"
)

// ManagementOperatorReconciler delivers each ManagementOperator through Flux only: it applies
// the GitRepository at the version's tag (pinned to the commit first fetched there) and the Kustomization (or HelmChart and
// HelmRelease) that internal/opgen generates into the management namespace, and computes the
// status with internal/opstatus from those objects and the Deployments they rolled out. It never
// applies an operator's manifests itself.
type ManagementOperatorReconciler struct {
	client.Client
	Applier *Applier
	// Cache, the manager's cache, hands the fleet-wide reads their objects without a copy
	// (eachCached); nil: they are listed from the Client.
	Cache    cache.Informers
	Tags     *TagLister
	Recorder record.EventRecorder
	Options  StatusOptions
	// Namespace is the management namespace: where the Flux objects are generated and the
	// ManagementOperators' Secrets are read.
	Namespace string
	// HelmDeployments is a cache of the Deployments helm-controller installed for HelmReleases
	// of the management namespace, read and watched for charts (the manager's cache holds only
	// those kustomize-controller applied; see CacheOptions and HelmDeploymentCacheOptions). nil:
	// the manager's client is read and nothing more is watched.
	HelmDeployments cache.Cache

	// writer writes the status: the manager's, shared by its reconcilers (Setup), or one of
	// this reconciler's own (SetupWithManager).
	writer *statusWriter
}

// +kubebuilder:rbac:groups=clusterstack.io,resources=managementoperators,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=clusterstack.io,resources=managementoperators/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=clusterstack.io,resources=managementoperators/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=ocirepositories,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch

// opScope carries one reconcile's facts between the steps.
type opScope struct {
	op *csv1.ManagementOperator
	// inUse are the releases Clusters use; requiredBy the releases requiring the operator.
	inUse      []requirements.Release
	requiredBy []string
	decision   opstatus.Decision
	observed   opstatus.Observed
	objects    []fluxstatus.ObjectState
	// deployments are those the operator's manifests created.
	deployments []opstatus.Deployment
	// pinned is the commit the GitRepository of decision.Target is pinned to ("" when none).
	pinned string
	// tags are the version tags of the source repository with their commits; nil when not
	// listed this time; ignoredTags counts the tags with the prefix of another form; tagsErr
	// says why they could not be listed.
	tags        map[string]string
	ignoredTags int
	tagsErr     *fluxstatus.Problem
	// written are the Flux objects this reconcile applied, by type, at the generation the
	// write made (unchanged ones at none): what the cache shows of them is judged no older.
	written map[reflect.Type]client.Object
}

// Reconcile delivers one ManagementOperator and records its status: the deletion branch, or the
// phases in order and, once they all ran, the status computed from what they observed.
func (r *ManagementOperatorReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	op := &csv1.ManagementOperator{}
	if err := r.Get(ctx, req.NamespacedName, op); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !op.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.reconcileDelete(ctx, op)
	}
	if controllerutil.AddFinalizer(op, ManagementOperatorFinalizer) {
		if err := r.Update(ctx, op); err != nil {
			return ctrl.Result{}, err
		}
	}
	return runPhasesThenStatus(ctx, &opScope{op: op}, statusAfterWholePass, r.writeStatus,
		r.collectReleases,
		r.applyFluxObjects,
		r.observeFluxObjects,
		r.observeDeployments,
		r.listTags,
	)
}

// reconcileDelete suspends the operator's Kustomization or HelmRelease first (helm-controller
// uninstalls the chart of a HelmRelease that is not suspended; the Kustomization's deletionPolicy
// is Orphan, and suspending it too keeps it from pruning in the meantime), deletes the Flux
// objects and lets the ManagementOperator go. What they delivered keeps running.
func (r *ManagementOperatorReconciler) reconcileDelete(ctx context.Context, op *csv1.ManagementOperator) error {
	if !controllerutil.ContainsFinalizer(op, ManagementOperatorFinalizer) {
		return nil
	}
	key := client.ObjectKey{Namespace: r.Namespace, Name: opgen.ObjectName(op.Name)}
	hr, err := getControlled(ctx, r.Client, key, &helmv2.HelmRelease{}, op)
	if err != nil {
		return err
	}
	ks, err := getControlled(ctx, r.Client, key, &kustomizev1.Kustomization{}, op)
	if err != nil {
		return err
	}
	hc, err := getControlled(ctx, r.Client, key, &sourcev1.HelmChart{}, op)
	if err != nil {
		return err
	}
	gr, err := getControlled(ctx, r.Client, key, &sourcev1.GitRepository{}, op)
	if err != nil {
		return err
	}
	oci, err := getControlled(ctx, r.Client, key, &sourcev1.OCIRepository{}, op)
	if err != nil {
		return err
	}
	// Suspend everything that applies before anything is deleted.
	var appliers, all []client.Object
	if hr != nil {
		appliers = append(appliers, hr)
	}
	if ks != nil {
		appliers = append(appliers, ks)
	}
	for _, o := range appliers {
		if err := suspendFlux(ctx, r.Client, o); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("suspend %s/%s before deleting it: %w", key.Namespace, key.Name, err)
		}
	}
	all = append(all, appliers...)
	if hc != nil {
		all = append(all, hc)
	}
	if gr != nil {
		all = append(all, gr)
	}
	if oci != nil {
		all = append(all, oci)
	}
	for _, o := range all {
		if err := r.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete %T %s: %w", o, key, err)
		}
		r.Applier.Forget(kindOf(o), key)
	}
	log.FromContext(ctx).V(1).Info("management operator's Flux objects suspended and deleted; what they delivered keeps running", "count", len(all))
	if controllerutil.RemoveFinalizer(op, ManagementOperatorFinalizer) {
		return client.IgnoreNotFound(r.Update(ctx, op))
	}
	return nil
}

// kindOf is the Flux kind of a generated object.
func kindOf(o client.Object) string {
	switch o.(type) {
	case *helmv2.HelmRelease:
		return helmv2.HelmReleaseKind
	case *kustomizev1.Kustomization:
		return kustomizev1.KustomizationKind
	case *sourcev1.HelmChart:
		return sourcev1.HelmChartKind
	case *sourcev1.GitRepository:
		return sourcev1.GitRepositoryKind
	case *sourcev1.OCIRepository:
		return sourcev1.OCIRepositoryKind
	}
	return ""
}
