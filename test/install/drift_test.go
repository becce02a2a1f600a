package install_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/clusterstack-io/clusterstack-operator/internal/manifests"
	"github.com/clusterstack-io/clusterstack-operator/test/install"
)

// An install: the objects one install path creates (CRDs included), config/default built by
// kustomize or the chart rendered with its default values.
type installed struct {
	name string
	objs []*unstructured.Unstructured
}

// TestChartMatchesConfigDefault renders the chart with its default values for release
// clusterstack-operator in clusterstack-system and compares it with `kustomize build
// config/default`, aspect by aspect: a change to config/ (a new RBAC rule, webhook rule, flag,
// port or CRD) that the chart misses fails here, and the reverse.
//
// What legitimately differs, and is normalised or left out below:
//   - object names: the chart prefixes every name with the release's full name
//     (clusterstack-operator-webhook, ...-serving-cert, ...) where config/default uses fixed
//     names (clusterstack-webhook-service, clusterstack-serving-cert); objects are matched by
//     what they are (the ClusterRole bound to the manager's ServiceAccount, the Service in front
//     of the webhook port), and references are checked to resolve on each side;
//   - labels: the chart adds Helm's standard labels (helm.sh/chart, app.kubernetes.io/instance,
//     version, part-of, managed-by) and selects Pods by name and instance;
//   - the Deployment: two replicas instead of one, the image (the chart's is
//     <repository>:v<VERSION>), POD_NAMESPACE from the downward API (config/manager leaves the
//     default of --management-namespace to the ServiceAccount's namespace file: the same
//     namespace), and a preferred anti-affinity between the replicas;
//   - the Namespace object: Helm installs into the release namespace, which it does not own;
//   - chart-only objects: the PodDisruptionBudget and the metrics Service.
func TestChartMatchesConfigDefault(t *testing.T) {
	root := repoRoot(t)
	kust, err := manifests.Build(filepath.Join(root, "config", "default"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := install.Render(filepath.Join(root, install.ChartDir), install.DefaultReleaseName, install.DefaultNamespace, nil)
	if err != nil {
		t.Fatal(err)
	}
	// kustomize's numbers are Go ints; the API server's, and Decode's, int64.
	for i, o := range kust {
		b, err := o.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		kust[i] = &unstructured.Unstructured{}
		if err := kust[i].UnmarshalJSON(b); err != nil {
			t.Fatal(err)
		}
	}
	sides := []installed{
		{name: "config/default", objs: kust},
		{name: "chart", objs: append(slices.Clone(r.CRDs), r.Objects...)},
	}
	for _, tc := range []struct {
		aspect string
		of     func(t *testing.T, in installed) any
	}{
		{"CRDs", crdsOf},
		{"kinds (beside Namespace, PodDisruptionBudget and the metrics Service)", kindsOf},
		{"namespace of namespaced objects", namespacesOf},
		{"ClusterRole rules of the manager", managerClusterRoleRules},
		{"leader-election Role rules", leaderElectionRules},
		{"tenant ClusterRole", tenantRules},
		{"effective permissions of the manager's ServiceAccount", serviceAccountGrants},
		{"manager container (args, ports, probes, env, mounts, security, resources)", managerContainer},
		{"Pod security context and volumes", podSpec},
		{"validating webhooks (rules, path, failurePolicy, conditions)", webhooksOf},
		{"webhook Service (ports, targets the manager's webhook port)", webhookService},
		{"cert-manager Certificate, Issuer and CA injection", certManagerOf},
	} {
		t.Run(tc.aspect, func(t *testing.T) {
			want, got := tc.of(t, sides[0]), tc.of(t, sides[1])
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("%s differs between config/default (-) and the chart (+):\n%s", tc.aspect, d)
			}
		})
	}
}

// find returns the objects of kind converted into T.
func find[T any](t *testing.T, in installed, kind string) []*T {
	t.Helper()
	var out []*T
	for _, o := range in.objs {
		if o.GetKind() != kind {
			continue
		}
		v := new(T)
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, v, true); err != nil {
			t.Fatalf("%s: %s %s: %v", in.name, kind, o.GetName(), err)
		}
		out = append(out, v)
	}
	return out
}

// one returns the only object of kind for which pick is true.
func one[T any](t *testing.T, in installed, kind string, pick func(*T) bool) *T {
	t.Helper()
	var found []*T
	for _, v := range find[T](t, in, kind) {
		if pick == nil || pick(v) {
			found = append(found, v)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s: %d %s objects of the kind wanted, want exactly 1", in.name, len(found), kind)
	}
	return found[0]
}

// oneU returns the only object of kind, as it is (kinds without Go types here: cert-manager's).
func oneU(t *testing.T, in installed, kind string) *unstructured.Unstructured {
	t.Helper()
	var found []*unstructured.Unstructured
	for _, o := range in.objs {
		if o.GetKind() == kind {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s: %d %s objects, want exactly 1", in.name, len(found), kind)
	}
	return found[0]
}

func crdsOf(t *testing.T, in installed) any {
	out := map[string]any{}
	for _, o := range in.objs {
		if o.GetKind() == "CustomResourceDefinition" {
			out[o.GetName()] = o.Object
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s installs no CRDs", in.name)
	}
	return out
}

func kindsOf(_ *testing.T, in installed) any {
	count := map[string]int{}
	for _, o := range in.objs {
		switch {
		case o.GetKind() == "Namespace", o.GetKind() == "PodDisruptionBudget":
		case o.GetKind() == "Service" && strings.HasSuffix(o.GetName(), "-metrics"):
		default:
			count[o.GetKind()]++
		}
	}
	return count
}

func namespacesOf(_ *testing.T, in installed) any {
	ns := map[string]bool{}
	for _, o := range in.objs {
		if o.GetNamespace() != "" {
			ns[o.GetNamespace()] = true
		}
	}
	return ns
}

func manager(t *testing.T, in installed) *appsv1.Deployment {
	return one[appsv1.Deployment](t, in, "Deployment", nil)
}

func managerSA(t *testing.T, in installed) rbacv1.Subject {
	d := manager(t, in)
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: d.Spec.Template.Spec.ServiceAccountName, Namespace: d.Namespace}
}

func boundToManager(t *testing.T, in installed, subjects []rbacv1.Subject) bool {
	return slices.Contains(subjects, managerSA(t, in))
}

func managerClusterRoleRules(t *testing.T, in installed) any {
	crb := one(t, in, "ClusterRoleBinding", func(b *rbacv1.ClusterRoleBinding) bool { return boundToManager(t, in, b.Subjects) })
	return one(t, in, "ClusterRole", func(r *rbacv1.ClusterRole) bool { return r.Name == crb.RoleRef.Name }).Rules
}

func leaderElectionRules(t *testing.T, in installed) any {
	rb := one(t, in, "RoleBinding", func(b *rbacv1.RoleBinding) bool { return boundToManager(t, in, b.Subjects) })
	return one(t, in, "Role", func(r *rbacv1.Role) bool { return r.Name == rb.RoleRef.Name && r.Namespace == rb.Namespace }).Rules
}

func tenantRules(t *testing.T, in installed) any {
	r := one(t, in, "ClusterRole", func(r *rbacv1.ClusterRole) bool { return r.Name == "clusterstack-tenant" })
	return r.Rules
}

// grant is one verb on one resource of one API group, cluster-wide or in one namespace.
type grant struct{ Namespace, Group, Resource, Verb string }

// serviceAccountGrants is what the manager's ServiceAccount may do, through every binding of
// the install that names it.
func serviceAccountGrants(t *testing.T, in installed) any {
	var out []grant
	add := func(ns string, rules []rbacv1.PolicyRule) {
		for _, r := range rules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, v := range r.Verbs {
						out = append(out, grant{ns, g, res, v})
					}
				}
			}
		}
	}
	roleRules := func(kind, name, ns string) []rbacv1.PolicyRule {
		if kind == "ClusterRole" {
			return one(t, in, "ClusterRole", func(r *rbacv1.ClusterRole) bool { return r.Name == name }).Rules
		}
		return one(t, in, "Role", func(r *rbacv1.Role) bool { return r.Name == name && r.Namespace == ns }).Rules
	}
	for _, b := range find[rbacv1.ClusterRoleBinding](t, in, "ClusterRoleBinding") {
		if boundToManager(t, in, b.Subjects) {
			add("", roleRules(b.RoleRef.Kind, b.RoleRef.Name, ""))
		}
	}
	for _, b := range find[rbacv1.RoleBinding](t, in, "RoleBinding") {
		if boundToManager(t, in, b.Subjects) {
			add(b.Namespace, roleRules(b.RoleRef.Kind, b.RoleRef.Name, b.Namespace))
		}
	}
	slices.SortFunc(out, func(a, b grant) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
	if len(out) == 0 {
		t.Fatalf("%s grants the manager's ServiceAccount nothing", in.name)
	}
	return slices.Compact(out)
}

func managerContainer(t *testing.T, in installed) any {
	d := manager(t, in)
	var c *corev1.Container
	for i := range d.Spec.Template.Spec.Containers {
		if d.Spec.Template.Spec.Containers[i].Name == "manager" {
			c = d.Spec.Template.Spec.Containers[i].DeepCopy()
		}
	}
	if c == nil {
		t.Fatalf("%s: Deployment %s has no container manager", in.name, d.Name)
	}
	if !slices.Contains(c.Args, "--leader-elect") {
		t.Errorf("%s: the manager runs without --leader-elect", in.name)
	}
	c.Image, c.ImagePullPolicy = "<image>", ""
	c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "POD_NAMESPACE" })
	return c
}

func podSpec(t *testing.T, in installed) any {
	d := manager(t, in)
	cert := oneU(t, in, "Certificate")
	secret, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
	vols := slices.Clone(d.Spec.Template.Spec.Volumes)
	for i, v := range vols {
		if v.Secret != nil && v.Secret.SecretName == secret {
			v = *v.DeepCopy()
			v.Secret.SecretName = "<the Certificate's Secret>"
			vols[i] = v
		}
	}
	return map[string]any{"securityContext": d.Spec.Template.Spec.SecurityContext, "volumes": vols}
}

func webhooksOf(t *testing.T, in installed) any {
	vwc := one[admissionv1.ValidatingWebhookConfiguration](t, in, "ValidatingWebhookConfiguration", nil)
	svc := webhookSvc(t, in)
	var out []admissionv1.ValidatingWebhook
	for _, w := range vwc.Webhooks {
		w = *w.DeepCopy()
		if s := w.ClientConfig.Service; s == nil || s.Name != svc.Name || s.Namespace != svc.Namespace {
			t.Errorf("%s: webhook %s does not call the webhook Service %s/%s: %+v", in.name, w.Name, svc.Namespace, svc.Name, s)
		} else {
			s.Name, s.Namespace = "<webhook Service>", "<namespace>"
		}
		out = append(out, w)
	}
	return out
}

// webhookSvc is the Service whose target port is the manager's webhook-server port.
func webhookSvc(t *testing.T, in installed) *corev1.Service {
	return one(t, in, "Service", func(s *corev1.Service) bool {
		return len(s.Spec.Ports) == 1 && s.Spec.Ports[0].TargetPort.String() == "webhook-server"
	})
}

func webhookService(t *testing.T, in installed) any {
	svc := webhookSvc(t, in)
	d := manager(t, in)
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) || len(svc.Spec.Selector) == 0 {
		t.Errorf("%s: Service %s selects %v, not the manager's Pods (%v)", in.name, svc.Name, svc.Spec.Selector, d.Spec.Template.Labels)
	}
	return svc.Spec.Ports
}

func certManagerOf(t *testing.T, in installed) any {
	cert := oneU(t, in, "Certificate")
	issuer := oneU(t, in, "Issuer")
	vwc := one[admissionv1.ValidatingWebhookConfiguration](t, in, "ValidatingWebhookConfiguration", nil)
	svc := webhookSvc(t, in)
	spec, _, _ := unstructured.NestedMap(cert.Object, "spec")
	want := []any{svc.Name + "." + svc.Namespace + ".svc", svc.Name + "." + svc.Namespace + ".svc.cluster.local"}
	if !cmp.Equal(spec["dnsNames"], want) {
		t.Errorf("%s: Certificate %s is for %v, want the webhook Service's names %v", in.name, cert.GetName(), spec["dnsNames"], want)
	}
	ref, _, _ := unstructured.NestedStringMap(cert.Object, "spec", "issuerRef")
	if ref["kind"] != "Issuer" || ref["name"] != issuer.GetName() || issuer.GetNamespace() != cert.GetNamespace() {
		t.Errorf("%s: Certificate %s is issued by %v, not by Issuer %s/%s", in.name, cert.GetName(), ref, issuer.GetNamespace(), issuer.GetName())
	}
	inject := vwc.Annotations["cert-manager.io/inject-ca-from"]
	if inject != cert.GetNamespace()+"/"+cert.GetName() {
		t.Errorf("%s: the webhook configuration's CA is injected from %q, not from Certificate %s/%s", in.name, inject, cert.GetNamespace(), cert.GetName())
	}
	issuerSpec, _, _ := unstructured.NestedMap(issuer.Object, "spec")
	return map[string]any{"issuer": issuerSpec, "usages": spec["usages"], "duration": spec["duration"]}
}
