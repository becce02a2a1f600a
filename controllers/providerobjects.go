package controllers

import (
	"context"
	"fmt"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxstatus"
	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
)

// Provider objects: what a release's cluster-class creates besides its ClusterClass and
// templates (status.providerKinds), such as the OpenStack Resource Controller Image an OpenStack
// stack builds its nodes from. The release waits for each to be ready by its own status.

// providerObjectGroup is true for the API groups whose objects a release waits for: Cluster
// API's infrastructure and control plane providers' (read for runtime values anyway) and the
// OpenStack Resource Controller's. Objects of other groups are not read (no RBAC for them).
func providerObjectGroup(group string) bool {
	switch group {
	case "infrastructure.cluster.x-k8s.io", "controlplane.cluster.x-k8s.io", "openstack.k-orc.cloud":
		return true
	}
	return false
}

// providerObjectRecheck is how often a release whose provider objects are not all ready is
// looked at again: their kinds are not watched.
const providerObjectRecheck = 10 * time.Second

// maxProviderObjects bounds the provider objects read for one release.
const maxProviderObjects = 100

// releaseProviderKinds are the provider kinds of a stack as the release reports them.
func releaseProviderKinds(st *stack.Stack) []csv1.ObjectKind {
	var out []csv1.ObjectKind
	for _, k := range st.ProviderKinds {
		out = append(out, csv1.ObjectKind{APIVersion: k.APIVersion, Kind: k.Kind})
	}
	return out
}

// providerObjects reads the provider objects the release's cluster-class created: the objects of
// status.providerKinds in the release's namespace that its cluster-class HelmRelease installed
// (Helm's release annotations) or its Kustomization applied (kustomize-controller's labels),
// each by its own status.
func providerObjects(ctx context.Context, c client.Reader, rel *csv1.ClusterStackRelease) ([]fluxstatus.ObjectState, error) {
	var out []fluxstatus.ObjectState
	for _, k := range rel.Status.ProviderKinds {
		gv, err := schema.ParseGroupVersion(k.APIVersion)
		if err != nil || !providerObjectGroup(gv.Group) {
			continue
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gv.WithKind(k.Kind + "List"))
		if err := c.List(ctx, list, client.InNamespace(rel.Namespace), client.Limit(maxProviderObjects)); err != nil {
			if apimeta.IsNoMatchError(err) {
				continue // the kind is not served: the cluster-class could not have created any
			}
			return nil, fmt.Errorf("list %s %s in namespace %s: %w", k.APIVersion, k.Kind, rel.Namespace, err)
		}
		for i := range list.Items {
			u := &list.Items[i]
			if !createdByClusterClass(u, rel) {
				continue
			}
			st := fluxstatus.FromProviderObject(u)
			st.Component = csv1.ClusterClassComponent
			out = append(out, st)
		}
	}
	return out, nil
}

// createdByClusterClass is true when u was installed by the release's cluster-class: Helm's
// release annotations name its Helm release, or kustomize-controller's labels its Kustomization.
func createdByClusterClass(u *unstructured.Unstructured, rel *csv1.ClusterStackRelease) bool {
	a, l := u.GetAnnotations(), u.GetLabels()
	if a["meta.helm.sh/release-name"] == fluxgen.HelmReleaseName(rel.Name) && a["meta.helm.sh/release-namespace"] == rel.Namespace {
		return true
	}
	return l["kustomize.toolkit.fluxcd.io/name"] == fluxgen.ClusterClassObjectName(rel.Name) && l["kustomize.toolkit.fluxcd.io/namespace"] == rel.Namespace
}

// providerObjectsReady is the ProviderObjectsReady condition of a release from its provider
// objects' states: False naming the first one that is not ready (a failed one first), True
// otherwise.
func providerObjectsReady(rel *csv1.ClusterStackRelease, objs []fluxstatus.ObjectState) metav1.Condition {
	c := metav1.Condition{Type: csv1.ProviderObjectsReadyCondition, Status: metav1.ConditionTrue, Reason: csv1.ReasonAsExpected,
		Message: fmt.Sprintf("release %s: the cluster-class creates no provider objects besides its ClusterClass and templates", rel.Name)}
	if len(rel.Status.ProviderKinds) > 0 {
		c.Message = fmt.Sprintf("release %s: every provider object its cluster-class created is ready", rel.Name)
	}
	var first *fluxstatus.ObjectState
	for i := range objs {
		if objs[i].Healthy() {
			continue
		}
		if first == nil || (objs[i].Stalled && !first.Stalled) {
			first = &objs[i]
		}
	}
	if first != nil {
		what := "is not ready yet"
		if first.Stalled {
			what = "failed"
		}
		c.Status, c.Reason = metav1.ConditionFalse, csv1.ReasonProviderObjectNotReady
		c.Message = fluxstatus.Truncate(fmt.Sprintf("release %s: %s, created by its cluster-class, %s: %s", rel.Name, first.Ref(), what, first.Message))
	}
	return c
}
