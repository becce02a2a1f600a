package controllers

import (
	"context"
	"sort"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/opgen"
)

// SetupWithManager wires the watches: the ManagementOperator, its Flux objects, the Deployments
// they applied, and what decides which releases are in use and which require the operator
// (releases' requirements, Clusters' ClusterClasses, ClusterAddons' applied releases). The
// repository's tags cannot be watched: Reconcile requeues for them every spec.interval.
func (r *ManagementOperatorReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.writer = managerStatusWriter(r.writer, mgr)
	owner := handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &csv1.ManagementOperator{}, handler.OnlyControllerOwner())
	rv := builder.WithPredicates(predicate.ResourceVersionChangedPredicate{})
	all := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request { return r.allOperators(ctx) })
	b := ctrl.NewControllerManagedBy(mgr).
		// Its own status writes do not bring it back: only spec changes and deletion do.
		For(&csv1.ManagementOperator{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, deletingPredicate()))).
		Watches(&sourcev1.GitRepository{}, owner, rv).
		Watches(&sourcev1.OCIRepository{}, owner, rv).
		Watches(&sourcev1.HelmChart{}, owner, rv).
		Watches(&helmv2.HelmRelease{}, owner, rv).
		Watches(&kustomizev1.Kustomization{}, owner, rv).
		// The manager's cache holds only the Deployments kustomize-controller applied for
		// Kustomizations of the management namespace (CacheOptions).
		Watches(&appsv1.Deployment{}, handler.EnqueueRequestsFromMapFunc(r.operatorsOfDeployment)).
		Watches(&csv1.ClusterStackRelease{}, all, builder.WithPredicates(requirementsChanged())).
		Watches(&clusterv1.Cluster{}, clusterClassHandler(func(ctx context.Context, _, _ string) []reconcile.Request { return r.allOperators(ctx) })).
		Watches(&csv1.ClusterAddon{}, all, builder.WithPredicates(appliedReleaseChanged()))
	if r.HelmDeployments != nil {
		b = b.WatchesRawSource(source.Kind(r.HelmDeployments, &appsv1.Deployment{},
			handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, d *appsv1.Deployment) []reconcile.Request {
				return r.operatorsOfDeployment(ctx, d)
			})))
	}
	return b.Named("managementoperator").Complete(r)
}

// allOperators maps an event that can change which releases are in use or required to every
// ManagementOperator (there are a few per management cluster).
func (r *ManagementOperatorReconciler) allOperators(ctx context.Context) []reconcile.Request {
	var ops csv1.ManagementOperatorList
	if err := r.List(ctx, &ops); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(ops.Items))
	for i := range ops.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKey{Name: ops.Items[i].Name}})
	}
	return reqs
}

// operatorsOfDeployment maps a Deployment to the ManagementOperator whose Flux object applied it.
func (r *ManagementOperatorReconciler) operatorsOfDeployment(ctx context.Context, o client.Object) []reconcile.Request {
	var ops csv1.ManagementOperatorList
	if err := r.List(ctx, &ops); err != nil {
		return nil
	}
	return operatorsOfAppliedObject(ops.Items, r.Namespace, o.GetNamespace(), o.GetLabels())
}

// operatorsOfAppliedObject maps the labels kustomize-controller or helm-controller put on an
// object it applied, in namespace objNS, to the ManagementOperators whose Kustomization or
// HelmRelease in the management namespace ns applied it: for a HelmRelease only an object in the
// namespace its chart is installed into (opgen.ChartNamespace), where observeDeployments looks.
// (A Kustomization's objects are those its inventory lists, read by name.)
func operatorsOfAppliedObject(ops []csv1.ManagementOperator, ns, objNS string, labels map[string]string) []reconcile.Request {
	var reqs []reconcile.Request
	for i := range ops {
		name := opgen.ObjectName(ops[i].Name)
		byKustomize := labels[kustomizeNamespaceLabel] == ns && labels[kustomizeNameLabel] == name
		byHelm := labels[helmNamespaceLabel] == ns && labels[helmNameLabel] == name && objNS == opgen.ChartNamespace(&ops[i], ns)
		if byKustomize || byHelm {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKey{Name: ops[i].Name}})
		}
	}
	return reqs
}

// requirementsChanged passes release creations, deletions and changes of its requirements.
func requirementsChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*csv1.ClusterStackRelease)
		n, ok2 := e.ObjectNew.(*csv1.ClusterStackRelease)
		return !ok1 || !ok2 || !equality.Semantic.DeepEqual(o.Status.Requirements, n.Status.Requirements)
	}}
}

// deliveredVersionChanged passes ManagementOperator creations, deletions and changes of its
// delivered version.
func deliveredVersionChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*csv1.ManagementOperator)
		n, ok2 := e.ObjectNew.(*csv1.ManagementOperator)
		return !ok1 || !ok2 || o.DeliveredVersion() != n.DeliveredVersion()
	}}
}

// requirementsMetChanged passes release updates whose RequirementsMet condition changed status.
func requirementsMetChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*csv1.ClusterStackRelease)
		n, ok2 := e.ObjectNew.(*csv1.ClusterStackRelease)
		return !ok1 || !ok2 || conditionStatus(o.Status.Conditions, csv1.RequirementsMetCondition) != conditionStatus(n.Status.Conditions, csv1.RequirementsMetCondition)
	}}
}

// releasesRequiring returns the releases whose requirements depend on the component: those
// naming it, and, for the core provider, those requiring a Cluster API contract. A nil
// component selects the releases requiring a contract only (a change of the Cluster CRD).
func releasesRequiring(rels []csv1.ClusterStackRelease, component *csv1.OperatorComponent) []reconcile.Request {
	var reqs []reconcile.Request
	for i := range rels {
		for _, q := range rels[i].Status.Requirements {
			byContract := q.CAPIContract != "" && (component == nil || component.Type == csv1.CoreProvider)
			if byContract || (component != nil && q.Operator != "" && q.Operator == component.Name) {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&rels[i])})
				break
			}
		}
	}
	sort.Slice(reqs, func(i, j int) bool { return reqs[i].String() < reqs[j].String() })
	return reqs
}

// releasesOfOperator maps a ManagementOperator to the releases requiring its component.
func releasesOfOperator(c client.Reader) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		op, ok := o.(*csv1.ManagementOperator)
		if !ok {
			return nil
		}
		var rels csv1.ClusterStackReleaseList
		if err := c.List(ctx, &rels); err != nil {
			return nil
		}
		return releasesRequiring(rels.Items, &op.Spec.Component)
	})
}

// releasesOfClusterCRD maps a change of the Cluster CRD (the contracts the core provider serves)
// to the releases requiring a contract.
func releasesOfClusterCRD(c client.Reader) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		if o.GetName() != clusterCRDName {
			return nil
		}
		var rels csv1.ClusterStackReleaseList
		if err := c.List(ctx, &rels); err != nil {
			return nil
		}
		return releasesRequiring(rels.Items, nil)
	})
}

// clusterCRDName is the CRD of Cluster API's Clusters: the versions it serves are the contracts
// the core provider serves.
const clusterCRDName = "clusters.cluster.x-k8s.io"

// servedVersions are the versions a CRD serves, in its order.
func servedVersions(crd *apiextensionsv1.CustomResourceDefinition) []string {
	var out []string
	for _, v := range crd.Spec.Versions {
		if v.Served {
			out = append(out, v.Name)
		}
	}
	return out
}
