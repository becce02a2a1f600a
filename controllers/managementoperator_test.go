package controllers

import (
	"context"
	"strings"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/opgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/requirements"
)

func mgmtOp(name string, typ csv1.OperatorComponentType) csv1.ManagementOperator {
	return csv1.ManagementOperator{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec: csv1.ManagementOperatorSpec{Component: csv1.OperatorComponent{Type: typ, Name: name}, Version: "v1.0.0"}}
}

func names(reqs []reconcile.Request) []string {
	var out []string
	for _, r := range reqs {
		out = append(out, r.String())
	}
	return out
}

// TestOperatorsOfAppliedObject: a Deployment maps to the ManagementOperator whose Kustomization
// or HelmRelease in the management namespace applied it, by Flux's labels, a chart's only in the
// namespace the chart is installed into; the same names in another namespace, or Flux objects
// of no ManagementOperator, map to nothing.
func TestOperatorsOfAppliedObject(t *testing.T) {
	chart := mgmtOp("caaph", csv1.AddonProvider)
	chart.Spec.Chart = &csv1.OperatorChart{TargetNamespace: "caaph-system"}
	ops := []csv1.ManagementOperator{mgmtOp("cluster-api", csv1.CoreProvider), mgmtOp("capo", csv1.InfrastructureProvider), chart}
	capi, capo, caaph := opgen.ObjectName("cluster-api"), opgen.ObjectName("capo"), opgen.ObjectName("caaph")
	for _, tc := range []struct {
		name   string
		objNS  string
		labels map[string]string
		want   []string
	}{
		{"kustomize", "capi-system", map[string]string{kustomizeNameLabel: capi, kustomizeNamespaceLabel: "mgmt"}, []string{"/cluster-api"}},
		{"helm, into the management namespace", "mgmt", map[string]string{helmNameLabel: capo, helmNamespaceLabel: "mgmt"}, []string{"/capo"}},
		{"helm, into the chart's namespace", "caaph-system", map[string]string{helmNameLabel: caaph, helmNamespaceLabel: "mgmt"}, []string{"/caaph"}},
		{"helm's labels copied into a tenant namespace", "tenant", map[string]string{helmNameLabel: caaph, helmNamespaceLabel: "mgmt"}, nil},
		{"other namespace", "capi-system", map[string]string{kustomizeNameLabel: capi, kustomizeNamespaceLabel: "flux-system"}, nil},
		{"name without suffix", "capi-system", map[string]string{kustomizeNameLabel: "cluster-api", kustomizeNamespaceLabel: "mgmt"}, nil},
		{"unknown Kustomization", "capi-system", map[string]string{kustomizeNameLabel: "flux-system", kustomizeNamespaceLabel: "mgmt"}, nil},
		{"no labels", "capi-system", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, names(operatorsOfAppliedObject(ops, "mgmt", tc.objNS, tc.labels))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func relWith(ns, name string, reqs ...csv1.StackRequirement) csv1.ClusterStackRelease {
	r := csv1.ClusterStackRelease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	r.Status.Requirements = reqs
	return r
}

// TestReleasesRequiring: a ManagementOperator's delivered version matters to the releases naming
// its component; the core provider's also to those requiring a contract, which are the only ones
// a change of the Cluster CRD concerns.
func TestReleasesRequiring(t *testing.T) {
	rels := []csv1.ClusterStackRelease{
		relWith("a", "capo-only", csv1.StackRequirement{Operator: "capo", Versions: ">=0.12.0"}),
		relWith("a", "contract", csv1.StackRequirement{CAPIContract: "v1beta2"}),
		relWith("b", "capi", csv1.StackRequirement{Operator: "cluster-api"}, csv1.StackRequirement{Operator: "capo"}),
		relWith("b", "none"),
	}
	for _, tc := range []struct {
		name      string
		component *csv1.OperatorComponent
		want      []string
	}{
		{"infrastructure provider", &csv1.OperatorComponent{Type: csv1.InfrastructureProvider, Name: "capo"}, []string{"a/capo-only", "b/capi"}},
		{"core provider", &csv1.OperatorComponent{Type: csv1.CoreProvider, Name: "cluster-api"}, []string{"a/contract", "b/capi"}},
		{"nobody requires it", &csv1.OperatorComponent{Type: csv1.OtherComponent, Name: "cert-manager"}, nil},
		{"Cluster CRD", nil, []string{"a/contract"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, names(releasesRequiring(rels, tc.component))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestStackReleases: releases are named "<namespace>/<name>" across namespaces, sorted; those in
// use are selected by that name.
func TestStackReleases(t *testing.T) {
	req := csv1.StackRequirement{Operator: "capo", Versions: "~0.12"}
	rels := []csv1.ClusterStackRelease{relWith("b", "r1", req), relWith("a", "r2"), relWith("a", "r1")}
	all, inUse := stackReleases(rels, map[string]bool{"b/r1": true, "a/r9": true})
	wantAll := []requirements.Release{{Name: "a/r1"}, {Name: "a/r2"}, {Name: "b/r1", Requirements: []csv1.StackRequirement{req}}}
	if diff := cmp.Diff(wantAll, all); diff != "" {
		t.Errorf("all (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]requirements.Release{{Name: "b/r1", Requirements: []csv1.StackRequirement{req}}}, inUse); diff != "" {
		t.Errorf("in use (-want +got):\n%s", diff)
	}
}

// TestManagementOperatorDeleteSuspendsFirst: deleting a ManagementOperator suspends its
// HelmRelease before any of its Flux objects is deleted (helm-controller would uninstall the
// operator, CRDs included), deletes them, leaves another owner's object of the same name alone,
// and lets the ManagementOperator go.
func TestManagementOperatorDeleteSuspendsFirst(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{csv1.AddToScheme, helmv2.AddToScheme, kustomizev1.AddToScheme, sourcev1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	op := mgmtOp("capo", csv1.InfrastructureProvider)
	op.Spec.Chart = &csv1.OperatorChart{}
	op.Finalizers = []string{ManagementOperatorFinalizer}
	op.DeletionTimestamp = ptr.To(metav1.Now())
	name := opgen.ObjectName(op.Name)
	owned := metav1.ObjectMeta{Namespace: "mgmt", Name: name,
		OwnerReferences: []metav1.OwnerReference{ownerRef(csv1.GroupVersion.String(), "ManagementOperator", op.Name, string(op.UID), true)}}
	hr := &helmv2.HelmRelease{ObjectMeta: *owned.DeepCopy()}
	hc := &sourcev1.HelmChart{ObjectMeta: *owned.DeepCopy()}
	gr := &sourcev1.GitRepository{ObjectMeta: *owned.DeepCopy()}
	foreign := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "mgmt", Name: name}} // not the operator's

	var calls []string
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&op, hr, hc, gr, foreign).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
			if h, ok := o.(*helmv2.HelmRelease); ok && h.Spec.Suspend {
				calls = append(calls, "suspend HelmRelease")
			}
			return c.Patch(ctx, o, p, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.DeleteOption) error {
			calls = append(calls, "delete "+kindOf(o))
			return c.Delete(ctx, o, opts...)
		},
	}).Build()
	r := &ManagementOperatorReconciler{Client: c, writer: newStatusWriter(c, nil), Applier: &Applier{Client: c, Scheme: scheme}, Namespace: "mgmt"}
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: op.Name}}); err != nil {
		t.Fatal(err)
	}
	want := []string{"suspend HelmRelease", "delete HelmRelease", "delete HelmChart", "delete GitRepository"}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(foreign), &kustomizev1.Kustomization{}); err != nil {
		t.Errorf("another owner's Kustomization of the same name: %v", err)
	}
	if err := c.Get(context.Background(), client.ObjectKey{Name: op.Name}, &csv1.ManagementOperator{}); !apierrors.IsNotFound(err) {
		t.Errorf("ManagementOperator still there after its finalizer ran: %v", err)
	}
}

// TestRequirementsMetAndGate: a release's RequirementsMet names the operator, the range and the
// delivered version; a ClusterAddon does not move to a release whose requirements are unmet or
// not checked yet, says why, and is not held on the release it is already at.
func TestRequirementsMetAndGate(t *testing.T) {
	rel := relWith("a", "openstack-scs-1-33-v2", csv1.StackRequirement{Operator: "cluster-api", Versions: ">=1.10.0 <1.12.0"}, csv1.StackRequirement{CAPIContract: "v1beta2"})
	old := requirements.Delivered{Operators: map[string]string{"cluster-api": "v1.9.5"}, Contracts: []string{"v1beta1"}}
	met := requirementsMetCondition(&rel, old)
	if met.Status != metav1.ConditionFalse || met.Reason != csv1.ReasonRequirementsNotMet ||
		!strings.Contains(met.Message, "cluster-api >=1.10.0 <1.12.0, but v1.9.5 is delivered") || !strings.Contains(met.Message, "v1beta2") {
		t.Errorf("RequirementsMet with v1.9.5 delivered: %+v", met)
	}

	if g := requirementsGate(&rel, ""); g == nil || g.Reason != csv1.ReasonWaitingForRelease || !strings.Contains(g.Message, "not been checked yet") {
		t.Errorf("gate before RequirementsMet is computed: %+v", g)
	}
	rel.Status.Conditions = []metav1.Condition{met}
	g := requirementsGate(&rel, "openstack-scs-1-33-v1")
	if g == nil || g.Status != metav1.ConditionFalse || g.Reason != csv1.ReasonRequirementsNotMet {
		t.Fatalf("gate with RequirementsMet False: %+v", g)
	}
	wantGate := "waiting for release openstack-scs-1-33-v2, which requires operator cluster-api >=1.10.0 <1.12.0, but v1.9.5 is delivered; and Cluster API contract v1beta2, but the delivered core provider serves v1beta1; the addons are left as they are until it is delivered"
	if g.Message != wantGate {
		t.Errorf("gate message:\n got %s\nwant %s", g.Message, wantGate)
	}
	if g := requirementsGate(&rel, rel.Name); g != nil {
		t.Errorf("a Cluster already at the release is held: %+v", g)
	}
	up := stackUpgradeable("openstack-scs", []csv1.ClusterStackRelease{rel, relWith("a", "openstack-scs-1-33-v1")})
	if up.Status != metav1.ConditionFalse || !strings.Contains(up.Message, "release openstack-scs-1-33-v2 requires operator cluster-api") {
		t.Errorf("ClusterStack Upgradeable: %+v", up)
	}

	now := requirements.Delivered{Operators: map[string]string{"cluster-api": "v1.10.3"}, Contracts: []string{"v1beta1", "v1beta2"}}
	met = requirementsMetCondition(&rel, now)
	if met.Status != metav1.ConditionTrue || !strings.Contains(met.Message, "cluster-api >=1.10.0 <1.12.0 (v1.10.3 delivered)") {
		t.Errorf("RequirementsMet with v1.10.3 delivered: %+v", met)
	}
	rel.Status.Conditions = []metav1.Condition{met}
	if g := requirementsGate(&rel, ""); g != nil {
		t.Errorf("gate once delivered: %+v", g)
	}
	if up := stackUpgradeable("openstack-scs", []csv1.ClusterStackRelease{rel}); up.Status != metav1.ConditionTrue {
		t.Errorf("ClusterStack Upgradeable once delivered: %+v", up)
	}
	if g := requirementsGate(ptr.To(relWith("a", "plain")), ""); g != nil {
		t.Errorf("a release without requirements is held: %+v", g)
	}
}
