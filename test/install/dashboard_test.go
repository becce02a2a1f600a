package install_test

import (
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/clusterstack-io/clusterstack-operator/test/install"
)

// TestChartDashboard: the dashboard's in-cluster mode (dashboard.enabled, off by default) is a
// Deployment running `kubectl-clusterstack dashboard --in-cluster` as its own ServiceAccount,
// bound to a ClusterRole that only gets, lists and watches and reads no Secret; its Service is
// ClusterIP; its NetworkPolicy lets in only dashboard.allowFrom (nothing without it); the
// manager's Deployment, PodDisruptionBudget and Services do not select its Pods.
func TestChartDashboard(t *testing.T) {
	off, err := install.Render(chartDir(t), install.DefaultReleaseName, install.DefaultNamespace, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range off.Objects {
		if o.GetLabels()["app.kubernetes.io/component"] == "dashboard" || strings.Contains(o.GetName(), "dashboard") {
			t.Errorf("the defaults render %s %s: the dashboard is off by default", o.GetKind(), o.GetName())
		}
	}

	proxy := map[string]any{"podSelector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": "oauth2-proxy"}}}
	values := map[string]any{"dashboard": map[string]any{"enabled": true, "namespaces": []any{"team-a", "team-b"}, "allowFrom": []any{proxy}}}
	for _, m := range install.Lint(chartDir(t), install.DefaultNamespace, values, support.WarningSev) {
		t.Errorf("helm lint with the dashboard: %s", m)
	}
	r, err := install.Render(chartDir(t), install.DefaultReleaseName, install.DefaultNamespace, values)
	if err != nil {
		t.Fatal(err)
	}
	name := install.DefaultReleaseName + "-dashboard"
	must := func(kind, name string) {
		t.Helper()
		if r.Find(kind, name) == nil {
			t.Fatalf("no %s %s with dashboard.enabled", kind, name)
		}
	}
	for _, kn := range [][2]string{{"ServiceAccount", name}, {"ClusterRole", name + "-viewer"}, {"ClusterRoleBinding", name + "-viewer"},
		{"Deployment", name}, {"Service", name}, {"NetworkPolicy", name}} {
		must(kn[0], kn[1])
	}

	role := decode[rbacv1.ClusterRole](t, r.Find("ClusterRole", name+"-viewer"))
	if len(role.Rules) == 0 {
		t.Fatal("the viewer ClusterRole has no rules")
	}
	for _, rule := range role.Rules {
		for _, v := range rule.Verbs {
			if v != "get" && v != "list" && v != "watch" {
				t.Errorf("the viewer ClusterRole grants %q on %v: it may only read", v, rule.Resources)
			}
		}
		if slices.Contains(rule.Resources, "secrets") || (slices.Contains(rule.APIGroups, "") && slices.Contains(rule.Resources, "*")) || slices.Contains(rule.APIGroups, "*") {
			t.Errorf("the viewer ClusterRole reads Secrets (or everything): %+v", rule)
		}
	}
	crb := decode[rbacv1.ClusterRoleBinding](t, r.Find("ClusterRoleBinding", name+"-viewer"))
	want := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: install.DefaultNamespace}}
	if crb.RoleRef.Name != name+"-viewer" || !slices.Equal(crb.Subjects, want) {
		t.Errorf("the viewer binding binds %+v to %s, want the dashboard's ServiceAccount alone to its own role", crb.Subjects, crb.RoleRef.Name)
	}

	d := decode[appsv1.Deployment](t, r.Find("Deployment", name))
	c := d.Spec.Template.Spec.Containers[0]
	if d.Spec.Template.Spec.ServiceAccountName != name || !slices.Equal(c.Command, []string{"/kubectl-clusterstack"}) ||
		!slices.Equal(c.Args, []string{"dashboard", "--in-cluster", "--address=:8080", "--namespaces=team-a,team-b"}) {
		t.Errorf("the dashboard runs %v %v as %s", c.Command, c.Args, d.Spec.Template.Spec.ServiceAccountName)
	}
	svc := decode[corev1.Service](t, r.Find("Service", name))
	if svc.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Errorf("the dashboard's Service is %s, want ClusterIP: it is reached through the proxy", svc.Spec.Type)
	}
	np := decode[networkingv1.NetworkPolicy](t, r.Find("NetworkPolicy", name))
	if len(np.Spec.Ingress) != 1 || len(np.Spec.Ingress[0].From) != 1 || np.Spec.Ingress[0].From[0].PodSelector.MatchLabels["app.kubernetes.io/name"] != "oauth2-proxy" {
		t.Errorf("the NetworkPolicy lets in %+v, want dashboard.allowFrom alone", np.Spec.Ingress)
	}
	pods := labels.Set(d.Spec.Template.Labels)
	manager := decode[appsv1.Deployment](t, r.Find("Deployment", install.DefaultReleaseName))
	if labels.SelectorFromSet(manager.Spec.Selector.MatchLabels).Matches(pods) {
		t.Error("the manager's Deployment selects the dashboard's Pods")
	}
	for _, s := range r.All("Service") {
		if s.GetName() == name {
			continue
		}
		sel := unstructuredSelector(s.Object)
		if len(sel) > 0 && labels.SelectorFromSet(sel).Matches(pods) {
			t.Errorf("Service %s selects the dashboard's Pods", s.GetName())
		}
	}
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(pods) || !labels.SelectorFromSet(np.Spec.PodSelector.MatchLabels).Matches(pods) {
		t.Error("the dashboard's Service or NetworkPolicy does not select its Pods")
	}

	// Without allowFrom nothing may reach it.
	closed, err := install.Render(chartDir(t), install.DefaultReleaseName, install.DefaultNamespace, map[string]any{"dashboard": map[string]any{"enabled": true}})
	if err != nil {
		t.Fatal(err)
	}
	np = decode[networkingv1.NetworkPolicy](t, closed.Find("NetworkPolicy", name))
	if len(np.Spec.Ingress) != 0 || !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
		t.Errorf("without allowFrom the NetworkPolicy lets in %+v, want nothing", np.Spec.Ingress)
	}
	if args := decode[appsv1.Deployment](t, closed.Find("Deployment", name)).Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--all-namespaces") {
		t.Errorf("without dashboard.namespaces it runs %v, want --all-namespaces", args)
	}
}

// unstructuredSelector is a Service's spec.selector.
func unstructuredSelector(obj map[string]any) map[string]string {
	spec, _ := obj["spec"].(map[string]any)
	sel, _ := spec["selector"].(map[string]any)
	out := map[string]string{}
	for k, v := range sel {
		s, _ := v.(string)
		out[k] = s
	}
	return out
}
