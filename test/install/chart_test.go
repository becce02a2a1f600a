package install_test

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/lint/support"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/clusterstack-io/clusterstack-operator/test/install"
)

// repoRoot is the repository root: tests run in test/install.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no repository root at %s: %v", root, err)
	}
	return root
}

func chartDir(t *testing.T) string { return filepath.Join(repoRoot(t), install.ChartDir) }

// caBundle is a made-up base64 CA bundle for the provided-certificate values.
var caBundle = base64.StdEncoding.EncodeToString([]byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"))

// Value sets the tests render and lint the chart with.
var (
	providedCert = map[string]any{"webhook": map[string]any{
		"certManager": map[string]any{"enabled": false},
		"certificate": map[string]any{"secretName": "my-webhook-cert", "caBundle": caBundle},
	}}
	withServiceMonitor = map[string]any{"metrics": map[string]any{"serviceMonitor": map[string]any{
		"enabled": true, "interval": "15s", "labels": map[string]any{"release": "prometheus"},
	}}}
	withoutWebhook = map[string]any{"webhook": map[string]any{"enabled": false}}
	withExtension  = map[string]any{"runtimeExtension": map[string]any{"extensionConfig": map[string]any{"create": true}}}
	withClientCA   = map[string]any{"runtimeExtension": map[string]any{"clientCASecret": "capi-client-ca"}}
	withOwnIssuer  = map[string]any{"webhook": map[string]any{"certManager": map[string]any{"issuerRef": map[string]any{"kind": "ClusterIssuer", "name": "corp-ca"}}}}
	withEveryFlag  = map[string]any{
		"defaultServiceAccount": "clusterstack-flux", "managementNamespace": "ops",
		"degradedGracePeriod": "2m", "fluxQueueGracePeriod": "20m", "addonTimeout": "10m", "logLevel": "debug",
		"proposals": map[string]any{"apiHosts": []any{"api.github.example.com", "gitea.example.com:8443"}, "apiTimeout": "20s",
			"gitTimeout": "2m", "checkoutSizeLimit": "32Mi", "hostConcurrency": 3},
		"tmpSizeLimit":     "8Gi",
		"extraArgs":        []any{"--webhook-host=0.0.0.0"},
		"runtimeExtension": map[string]any{"serve": false},
		"flux":             map[string]any{"lockdown": "required", "namespace": "flux", "allowedShards": []any{"shard1", "shard2"}},
		"render":           map[string]any{"maxConcurrent": 8, "maxConcurrentPerNamespace": 3},
	}
	valueSets = map[string]map[string]any{
		"defaults": nil, "provided certificate": providedCert, "ServiceMonitor": withServiceMonitor,
		"no webhook": withoutWebhook, "ExtensionConfig": withExtension, "own issuer": withOwnIssuer,
		"every flag": withEveryFlag, "Runtime Extension client CA": withClientCA,
	}
)

// TestChartLints: Helm's linter finds nothing to warn about with any of the value sets.
func TestChartLints(t *testing.T) {
	for name, values := range valueSets {
		t.Run(name, func(t *testing.T) {
			for _, m := range install.Lint(chartDir(t), install.DefaultNamespace, values, support.WarningSev) {
				t.Errorf("helm lint: %s", m)
			}
		})
	}
}

// TestChartVersionIsTheOperators: Chart.yaml's version is VERSION of the Makefile and its
// appVersion (the image tag and the release's Git tag) v<VERSION>.
func TestChartVersionIsTheOperators(t *testing.T) {
	want, err := install.Version(repoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	ch, err := loader.Load(chartDir(t))
	if err != nil {
		t.Fatal(err)
	}
	if ch.Metadata.Version != want || ch.Metadata.AppVersion != "v"+want {
		t.Errorf("Chart.yaml has version %q and appVersion %q, want %q and %q (VERSION in the Makefile): run make chart",
			ch.Metadata.Version, ch.Metadata.AppVersion, want, "v"+want)
	}
}

// TestChartCopiesAreInSync: the chart's CRDs and RBAC rule files are byte-for-byte the files
// they are copied from by `make chart`.
func TestChartCopiesAreInSync(t *testing.T) {
	root := repoRoot(t)
	bases, err := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.yaml"))
	if err != nil || len(bases) == 0 {
		t.Fatalf("no CRDs in config/crd/bases (%v)", err)
	}
	copies, err := filepath.Glob(filepath.Join(root, install.ChartDir, "crds", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	pairs := map[string]string{ // chart file -> source, relative to the repository root
		install.ChartDir + "/files/role.yaml":                  "config/rbac/role.yaml",
		install.ChartDir + "/files/leader_election_role.yaml":  "config/rbac/leader_election_role.yaml",
		install.ChartDir + "/files/tenant_cluster_role.yaml":   "config/tenant/cluster_role.yaml",
		install.ChartDir + "/files/dashboard_viewer_role.yaml": "config/dashboard/cluster_role.yaml",
	}
	for _, b := range bases {
		pairs[install.ChartDir+"/crds/"+filepath.Base(b)] = "config/crd/bases/" + filepath.Base(b)
	}
	for _, c := range copies {
		if _, ok := pairs[install.ChartDir+"/crds/"+filepath.Base(c)]; !ok {
			t.Errorf("%s/crds/%s is no CRD of config/crd/bases any more: run make chart", install.ChartDir, filepath.Base(c))
		}
	}
	for copyPath, src := range pairs {
		want, err := os.ReadFile(filepath.Join(root, src))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(root, copyPath))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is not a copy of %s (%v): run make chart", copyPath, src, err)
		}
	}
}

// TestChartRenders renders the chart with each value set and checks what it installs.
func TestChartRenders(t *testing.T) {
	const ns = install.DefaultNamespace
	for _, tc := range []struct {
		name   string
		values map[string]any
		check  func(t *testing.T, r *install.Rendered)
	}{
		{"defaults: two replicas with leader election, PDB, metrics Service, cert-manager", nil, func(t *testing.T, r *install.Rendered) {
			d := decode[appsv1.Deployment](t, r.Find("Deployment", "clusterstack-operator"))
			if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
				t.Errorf("replicas %v, want 2", d.Spec.Replicas)
			}
			c := d.Spec.Template.Spec.Containers[0]
			version, _ := install.Version(repoRoot(t))
			if want := "ghcr.io/clusterstack-io/clusterstack-operator:v" + version; c.Image != want {
				t.Errorf("image %q, want %q", c.Image, want)
			}
			wantArgs(t, c.Args, "--leader-elect", "--enable-webhooks", "--webhook-port=9443")
			if sc := d.Spec.Template.Spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
				t.Errorf("Pod security context %+v does not run as non-root", sc)
			}
			pdb := decode[policyv1.PodDisruptionBudget](t, r.Find("PodDisruptionBudget", ""))
			if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 1 || !selects(pdb.Spec.Selector.MatchLabels, d) {
				t.Errorf("PodDisruptionBudget %+v does not keep one manager Pod", pdb.Spec)
			}
			m := decode[corev1.Service](t, r.Find("Service", "clusterstack-operator-metrics"))
			if !selects(m.Spec.Selector, d) || m.Spec.Ports[0].TargetPort.String() != "metrics" || m.Spec.Ports[0].Port != 8080 {
				t.Errorf("metrics Service %+v does not serve the manager's metrics port", m.Spec)
			}
			for _, kind := range []string{"Certificate", "Issuer"} {
				if r.Find(kind, "") == nil {
					t.Errorf("no %s", kind)
				}
			}
			for _, kind := range []string{"ServiceMonitor", "ExtensionConfig"} {
				if r.Find(kind, "") != nil {
					t.Errorf("a %s by default", kind)
				}
			}
			if want, err := filepath.Glob("../../config/crd/bases/*.yaml"); err != nil || len(r.CRDs) != len(want) {
				t.Errorf("%d CRDs, want the operator's %d of config/crd/bases (%v)", len(r.CRDs), len(want), err)
			}
			if !strings.Contains(r.Notes, "rollout status deployment/clusterstack-operator") {
				t.Errorf("NOTES.txt says nothing of the Deployment:\n%s", r.Notes)
			}
		}},
		{"provided certificate: no cert-manager objects, caBundle and Secret given", providedCert, func(t *testing.T, r *install.Rendered) {
			for _, kind := range []string{"Certificate", "Issuer"} {
				if r.Find(kind, "") != nil {
					t.Errorf("a %s without cert-manager", kind)
				}
			}
			vwc := decode[admissionv1.ValidatingWebhookConfiguration](t, r.Find("ValidatingWebhookConfiguration", ""))
			if len(vwc.Annotations) != 0 || base64.StdEncoding.EncodeToString(vwc.Webhooks[0].ClientConfig.CABundle) != caBundle {
				t.Errorf("webhook configuration: annotations %v, caBundle %q, want none and the given bundle", vwc.Annotations, vwc.Webhooks[0].ClientConfig.CABundle)
			}
			d := decode[appsv1.Deployment](t, r.Find("Deployment", ""))
			if !slices.ContainsFunc(d.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool {
				return v.Secret != nil && v.Secret.SecretName == "my-webhook-cert"
			}) {
				t.Errorf("the manager does not mount Secret my-webhook-cert: %+v", d.Spec.Template.Spec.Volumes)
			}
		}},
		{"ServiceMonitor on the metrics Service only", withServiceMonitor, func(t *testing.T, r *install.Rendered) {
			sm := r.Find("ServiceMonitor", "clusterstack-operator")
			if sm == nil {
				t.Fatal("no ServiceMonitor")
			}
			if sm.GetLabels()["release"] != "prometheus" {
				t.Errorf("ServiceMonitor labels %v lack release=prometheus", sm.GetLabels())
			}
			sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
			var selected []string
			for _, s := range r.All("Service") {
				if labels.SelectorFromSet(sel).Matches(labels.Set(s.GetLabels())) {
					selected = append(selected, s.GetName())
				}
			}
			if !slices.Equal(selected, []string{"clusterstack-operator-metrics"}) {
				t.Errorf("ServiceMonitor selects Services %v, want the metrics Service only", selected)
			}
			eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
			if len(eps) != 1 || eps[0].(map[string]any)["port"] != "metrics" || eps[0].(map[string]any)["interval"] != "15s" {
				t.Errorf("ServiceMonitor endpoints %v, want port metrics every 15s", eps)
			}
		}},
		{"no webhook: no configuration, Service, certificate, port or flag", withoutWebhook, func(t *testing.T, r *install.Rendered) {
			for _, kind := range []string{"ValidatingWebhookConfiguration", "Certificate", "Issuer"} {
				if r.Find(kind, "") != nil {
					t.Errorf("a %s without the webhook", kind)
				}
			}
			if r.Find("Service", "clusterstack-operator-webhook") != nil {
				t.Error("a webhook Service without the webhook")
			}
			c := decode[appsv1.Deployment](t, r.Find("Deployment", "")).Spec.Template.Spec.Containers[0]
			if slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--webhook") || a == "--enable-webhooks" }) ||
				len(c.Ports) != 1 || len(c.VolumeMounts) != 1 {
				t.Errorf("the manager still serves a webhook: args %v, ports %v, mounts %v", c.Args, c.Ports, c.VolumeMounts)
			}
		}},
		{"ExtensionConfig through the webhook Service, CA from the serving certificate", withExtension, func(t *testing.T, r *install.Rendered) {
			ec := r.Find("ExtensionConfig", "clusterstack-operator")
			if ec == nil {
				t.Fatal("no ExtensionConfig")
			}
			svc, _, _ := unstructured.NestedString(ec.Object, "spec", "clientConfig", "service", "name")
			secret, _, _ := unstructured.NestedString(r.Find("Certificate", "").Object, "spec", "secretName")
			if svc != "clusterstack-operator-webhook" || ec.GetAnnotations()["runtime.cluster.x-k8s.io/inject-ca-from-secret"] != ns+"/"+secret {
				t.Errorf("ExtensionConfig calls %q with CA from %q, want the webhook Service and %s/%s", svc, ec.GetAnnotations(), ns, secret)
			}
			// Only tenant namespaces' Clusters are held by the hook (config/runtimeextension too).
			if sel, _, _ := unstructured.NestedStringMap(ec.Object, "spec", "namespaceSelector", "matchLabels"); sel["clusterstack.io/tenant"] != "true" || len(sel) != 1 {
				t.Errorf("ExtensionConfig namespaceSelector matchLabels %v, want clusterstack.io/tenant=true", sel)
			}
		}},
		{"Runtime Extension client CA: mounted and passed", withClientCA, func(t *testing.T, r *install.Rendered) {
			spec := decode[appsv1.Deployment](t, r.Find("Deployment", "")).Spec.Template.Spec
			wantArgs(t, spec.Containers[0].Args, "--runtime-extension-client-ca-file=/etc/clusterstack/runtime-extension-client-ca/ca.crt")
			definedFlags(t, spec.Containers[0].Args)
			if !slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool {
				return v.Secret != nil && v.Secret.SecretName == "capi-client-ca"
			}) || !slices.ContainsFunc(spec.Containers[0].VolumeMounts, func(m corev1.VolumeMount) bool {
				return m.MountPath == "/etc/clusterstack/runtime-extension-client-ca"
			}) {
				t.Errorf("the client CA Secret is not mounted: volumes %v, mounts %v", spec.Volumes, spec.Containers[0].VolumeMounts)
			}
		}},
		{"own issuer: no self-signed Issuer", withOwnIssuer, func(t *testing.T, r *install.Rendered) {
			if r.Find("Issuer", "") != nil {
				t.Error("a self-signed Issuer with webhook.certManager.issuerRef set")
			}
			ref, _, _ := unstructured.NestedStringMap(r.Find("Certificate", "").Object, "spec", "issuerRef")
			if ref["kind"] != "ClusterIssuer" || ref["name"] != "corp-ca" {
				t.Errorf("Certificate issuerRef %v, want ClusterIssuer corp-ca", ref)
			}
		}},
		{"every flag value reaches the manager", withEveryFlag, func(t *testing.T, r *install.Rendered) {
			c := decode[appsv1.Deployment](t, r.Find("Deployment", "")).Spec.Template.Spec.Containers[0]
			wantArgs(t, c.Args, "--default-service-account=clusterstack-flux", "--management-namespace=ops",
				"--degraded-grace-period=2m", "--flux-queue-grace-period=20m", "--addon-timeout=10m", "--zap-log-level=debug",
				"--runtime-extension=false", "--webhook-host=0.0.0.0", "--flux-lockdown=required", "--flux-namespace=flux",
				"--allowed-flux-shards=shard1,shard2", "--max-concurrent-renders=8", "--max-concurrent-renders-per-namespace=3",
				"--forge-api-hosts=api.github.example.com,gitea.example.com:8443", "--forge-api-timeout=20s",
				"--git-operation-timeout=2m", "--fleet-checkout-size-limit=32Mi", "--forge-host-concurrency=3")
			definedFlags(t, c.Args)
			tmp := decode[appsv1.Deployment](t, r.Find("Deployment", "")).Spec.Template.Spec.Volumes[0]
			if tmp.Name != "tmp" || tmp.EmptyDir == nil || tmp.EmptyDir.SizeLimit == nil || tmp.EmptyDir.SizeLimit.String() != "8Gi" {
				t.Errorf("the manager's /tmp volume %+v, want an emptyDir with sizeLimit 8Gi", tmp)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := install.Render(chartDir(t), install.DefaultReleaseName, ns, tc.values)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range r.Objects {
				if scoped := o.GetNamespace() != ""; scoped && o.GetNamespace() != ns {
					t.Errorf("%s %s is in namespace %q, not the release's", o.GetKind(), o.GetName(), o.GetNamespace())
				}
				if o.GetLabels()["app.kubernetes.io/instance"] != install.DefaultReleaseName {
					t.Errorf("%s %s lacks the release's labels: %v", o.GetKind(), o.GetName(), o.GetLabels())
				}
			}
			tc.check(t, r)
		})
	}
}

// TestChartReleasesDoNotCollide: two releases of the chart in one cluster (with fullnameOverride
// or distinct release names) name no cluster-scoped object alike, except the tenant ClusterRole,
// which one of them creates; their ClusterRoleBindings bind each release's own ServiceAccount.
func TestChartReleasesDoNotCollide(t *testing.T) {
	a, err := install.Render(chartDir(t), "clusterstack-operator", "clusterstack-system", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := install.Render(chartDir(t), "second", "other", map[string]any{
		"fullnameOverride": "second-operator", "tenant": map[string]any{"create": false},
	})
	if err != nil {
		t.Fatal(err)
	}
	clusterScoped := func(r *install.Rendered) []string {
		var out []string
		for _, o := range r.Objects {
			if o.GetNamespace() == "" {
				out = append(out, o.GetKind()+"/"+o.GetName())
			}
		}
		return out
	}
	for _, n := range clusterScoped(b) {
		if slices.Contains(clusterScoped(a), n) {
			t.Errorf("both releases create %s", n)
		}
	}
	crb := decode[rbacv1.ClusterRoleBinding](t, b.Find("ClusterRoleBinding", ""))
	if crb.RoleRef.Name != "second-operator" || crb.Subjects[0].Name != "second-operator" || crb.Subjects[0].Namespace != "other" {
		t.Errorf("second release's ClusterRoleBinding %+v does not bind its own ServiceAccount to its own ClusterRole", crb)
	}
}

// TestChartBindsOnlyItsServiceAccountToItsRoles: with every value set, and for a second release
// under another name, every RoleBinding and ClusterRoleBinding the chart renders binds the
// manager's ServiceAccount, and nothing else, to a Role or ClusterRole the chart renders itself
// other than the tenant ClusterRole. With TestChartMatchesConfigDefault (the rules of those
// roles are config/rbac's) the chart grants the operator what internal/manifests' RBAC test
// holds config/ to: nothing more.
func TestChartBindsOnlyItsServiceAccountToItsRoles(t *testing.T) {
	type release struct{ name, namespace string }
	cases := map[string]struct {
		release
		values map[string]any
	}{
		"second release": {release{"second", "other"}, map[string]any{"fullnameOverride": "second-operator", "tenant": map[string]any{"create": false}}},
	}
	for name, values := range valueSets {
		cases[name] = struct {
			release
			values map[string]any
		}{release{install.DefaultReleaseName, install.DefaultNamespace}, values}
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, err := install.Render(chartDir(t), tc.name, tc.namespace, tc.values)
			if err != nil {
				t.Fatal(err)
			}
			d := decode[appsv1.Deployment](t, r.Find("Deployment", ""))
			sa := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: d.Spec.Template.Spec.ServiceAccountName, Namespace: d.Namespace}
			tenant, _, _ := unstructured.NestedString(tc.values, "tenant", "clusterRoleName")
			if tenant == "" {
				tenant = "clusterstack-tenant"
			}
			type binding struct {
				what     string
				ns       string
				ref      rbacv1.RoleRef
				subjects []rbacv1.Subject
			}
			var bindings []binding
			for _, o := range r.All("ClusterRoleBinding") {
				b := decode[rbacv1.ClusterRoleBinding](t, o)
				bindings = append(bindings, binding{"ClusterRoleBinding " + b.Name, "", b.RoleRef, b.Subjects})
			}
			for _, o := range r.All("RoleBinding") {
				b := decode[rbacv1.RoleBinding](t, o)
				bindings = append(bindings, binding{"RoleBinding " + b.Namespace + "/" + b.Name, b.Namespace, b.RoleRef, b.Subjects})
			}
			if len(bindings) == 0 {
				t.Fatal("the chart renders no binding: the manager could do nothing")
			}
			for _, b := range bindings {
				if !slices.Equal(b.subjects, []rbacv1.Subject{sa}) {
					t.Errorf("%s binds %+v, want the manager's ServiceAccount %+v only", b.what, b.subjects, sa)
				}
				own := false
				switch b.ref.Kind {
				case "ClusterRole":
					own = b.ref.Name != tenant && slices.ContainsFunc(r.All("ClusterRole"), func(o *unstructured.Unstructured) bool { return o.GetName() == b.ref.Name })
				case "Role":
					own = b.ns != "" && slices.ContainsFunc(r.All("Role"), func(o *unstructured.Unstructured) bool {
						return o.GetName() == b.ref.Name && o.GetNamespace() == b.ns
					})
				}
				if !own || b.ref.APIGroup != rbacv1.GroupName {
					t.Errorf("%s binds %s %s, which is not one of the roles the chart renders for the manager", b.what, b.ref.Kind, b.ref.Name)
				}
			}
		})
	}
}

// TestChartRefusesIncompleteValues: values that cannot work fail the install with a message
// that says what to set.
func TestChartRefusesIncompleteValues(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"no cert-manager and no Secret", map[string]any{"webhook": map[string]any{"certManager": map[string]any{"enabled": false}, "certificate": map[string]any{"caBundle": caBundle}}}, "webhook.certificate.secretName is required"},
		{"no cert-manager and no CA", map[string]any{"webhook": map[string]any{"certManager": map[string]any{"enabled": false}, "certificate": map[string]any{"secretName": "s"}}}, "webhook.certificate.caBundle is required"},
		{"ServiceMonitor without Service", map[string]any{"metrics": map[string]any{"service": map[string]any{"enabled": false}, "serviceMonitor": map[string]any{"enabled": true}}}, "needs metrics.service.enabled"},
		{"ExtensionConfig without webhook", map[string]any{"webhook": map[string]any{"enabled": false}, "runtimeExtension": map[string]any{"extensionConfig": map[string]any{"create": true}}}, "needs webhook.enabled"},
		{"existing ServiceAccount unnamed", map[string]any{"serviceAccount": map[string]any{"create": false}}, "serviceAccount.name must name an existing ServiceAccount"},
		{"unknown failure policy", map[string]any{"webhook": map[string]any{"failurePolicy": "Sometimes"}}, "failurePolicy"},
		{"misspelt value", map[string]any{"replicas": 3}, "replicas"},
		{"not a duration", map[string]any{"addonTimeout": "ten minutes"}, "addonTimeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := install.Render(chartDir(t), install.DefaultReleaseName, install.DefaultNamespace, tc.values)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// decode converts a rendered object into its Go type, refusing unknown fields.
func decode[T any](t *testing.T, u *unstructured.Unstructured) *T {
	t.Helper()
	if u == nil {
		t.Fatalf("no %T rendered", new(T))
	}
	v := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, v, true); err != nil {
		t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
	}
	return v
}

func selects(sel map[string]string, d *appsv1.Deployment) bool {
	return len(sel) > 0 && labels.SelectorFromSet(sel).Matches(labels.Set(d.Spec.Template.Labels))
}

func wantArgs(t *testing.T, args []string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(args, w) {
			t.Errorf("manager args %v lack %s", args, w)
		}
	}
}

// flagRE finds the flags the manager's files define (flag.StringVar(&x, "name", ...), or
// fs.DurationVar(&f.x.y, "name", ...) on a FlagSet).
var flagRE = regexp.MustCompile(`(?:flag|fs)\.[A-Za-z]+Var\(&[A-Za-z.]+, "([a-z-]+)"`)

// definedFlags: every argument the chart passes is a flag of the manager (cmd/main.go, or
// controller-runtime's zap flags).
func definedFlags(t *testing.T, args []string) {
	t.Helper()
	var src []byte
	for _, name := range []string{"main.go", "forgeflags.go"} {
		b, err := os.ReadFile(filepath.Join(repoRoot(t), "cmd", name))
		if err != nil {
			t.Fatal(err)
		}
		src = append(src, b...)
	}
	defined := map[string]bool{"zap-log-level": true, "zap-devel": true, "zap-encoder": true, "zap-stacktrace-level": true, "zap-time-encoding": true}
	for _, m := range flagRE.FindAllStringSubmatch(string(src), -1) {
		defined[m[1]] = true
	}
	if len(defined) < 10 {
		t.Fatalf("found only %d flags in cmd/main.go: has the way flags are defined changed?", len(defined))
	}
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !defined[name] {
			t.Errorf("the chart passes %s, which the manager does not define", a)
		}
	}
}
