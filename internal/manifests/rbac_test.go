package manifests_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/clusterstack-io/clusterstack-operator/internal/manifests"
)

const (
	// rbacDoc is the page, relative to the repository root, that holds the table of the
	// operator's RBAC under the heading rbacSection (of any level).
	rbacDoc     = "docs/multi-tenancy.md"
	rbacSection = "The operator's own RBAC"
	// ownRoles is the kustomize directory of the operator's own roles: every binding in config/
	// must bind one of them.
	ownRoles = "config/rbac"
	// nonResource stands for the API group of a non-resource URL ("/metrics").
	nonResource = "(non-resource URL)"
)

// repoRoot is the repository root: tests run in internal/manifests.
var repoRoot = filepath.Join("..", "..")

// grant is one verb on one resource of one API group (or on one non-resource URL), cluster-wide
// (namespace "") or in one namespace.
type grant struct{ namespace, group, resource, verb string }

func (g grant) String() string {
	scope := "cluster-wide"
	if g.namespace != "" {
		scope = "in namespace " + g.namespace
	}
	if g.group == nonResource {
		return fmt.Sprintf("non-resource URL %q, verb %q, %s", g.resource, g.verb, scope)
	}
	return fmt.Sprintf("group %q, resource %q, verb %q, %s", g.group, g.resource, g.verb, scope)
}

// grants expands rules granted in namespace ns ("" for cluster-wide) into single grants.
func grants(ns string, rules []rbacv1.PolicyRule) []grant {
	var out []grant
	for _, r := range rules {
		for _, v := range r.Verbs {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					out = append(out, grant{ns, g, res, v})
				}
			}
			for _, u := range r.NonResourceURLs {
				out = append(out, grant{ns, nonResource, u, v})
			}
		}
	}
	return out
}

// effective sorts grants, drops repeats, and drops the grants in a namespace that the same
// cluster-wide grant already gives (leader election's Role repeats the ClusterRole's Events).
func effective(gs []grant) []grant {
	cluster := map[grant]bool{}
	for _, g := range gs {
		if g.namespace == "" {
			cluster[g] = true
		}
	}
	var out []grant
	for _, g := range gs {
		wide := g
		wide.namespace = ""
		if g.namespace == "" || !cluster[wide] {
			out = append(out, g)
		}
	}
	slices.SortFunc(out, func(a, b grant) int { return strings.Compare(a.String(), b.String()) })
	return slices.Compact(out)
}

// namespacedRow marks a table row granted by a Role in one namespace only.
var namespacedRow = regexp.MustCompile("\\(Role in `([a-z0-9-]+)` only\\)")

// docGrants parses the table under rbacSection in rbacDoc: | API group | resources | verbs | why |.
// A row is cluster-wide unless its reason says "(Role in `<namespace>` only)"; a resource
// starting with "/" is a non-resource URL.
func docGrants(t *testing.T) []grant {
	b, err := os.ReadFile(filepath.Join(repoRoot, rbacDoc))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	start := slices.IndexFunc(lines, func(l string) bool {
		return strings.HasPrefix(l, "#") && strings.TrimSpace(strings.TrimLeft(l, "#")) == rbacSection
	})
	if start < 0 {
		t.Fatalf("%s has no section %q", rbacDoc, rbacSection)
	}
	list := func(cell string) []string {
		var out []string
		for _, f := range strings.Split(cell, ",") {
			f = strings.Trim(strings.TrimSpace(f), "`")
			if f == `""` {
				f = ""
			}
			out = append(out, f)
		}
		return out
	}
	var out []grant
	inTable := false
	for _, line := range lines[start+1:] {
		if strings.HasPrefix(line, "#") {
			break
		}
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			continue
		}
		inTable = true
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 4 || strings.TrimSpace(cells[0]) == "API group" || strings.HasPrefix(strings.TrimSpace(cells[0]), "---") {
			continue
		}
		why := strings.TrimSpace(cells[3])
		if why == "" {
			t.Errorf("%s: RBAC row %q says not why the rule is needed", rbacDoc, line)
		}
		ns := ""
		if m := namespacedRow.FindStringSubmatch(why); m != nil {
			ns = m[1]
		}
		var rule rbacv1.PolicyRule
		rule.Verbs = list(cells[2])
		for _, res := range list(cells[1]) {
			if strings.HasPrefix(res, "/") {
				rule.NonResourceURLs = append(rule.NonResourceURLs, res)
			} else {
				rule.Resources = append(rule.Resources, res)
			}
		}
		if len(rule.Resources) > 0 {
			rule.APIGroups = list(cells[0])
		}
		out = append(out, grants(ns, []rbacv1.PolicyRule{rule})...)
	}
	if len(out) == 0 {
		t.Fatalf("%s: the RBAC table is empty", rbacDoc)
	}
	return effective(out)
}

// rbacObjects are the RBAC objects and the manager's Deployment of one or more kustomize builds.
type rbacObjects struct {
	roles               map[string]*rbacv1.Role // "namespace/name"
	clusterRoles        map[string]*rbacv1.ClusterRole
	roleBindings        []*rbacv1.RoleBinding
	clusterRoleBindings []*rbacv1.ClusterRoleBinding
	deployments         []*appsv1.Deployment
	where               map[string]string // "Kind namespace/name" -> the directory that builds it
}

func convert[T any](t *testing.T, o *unstructured.Unstructured) *T {
	t.Helper()
	v := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, v, true); err != nil {
		t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
	}
	return v
}

// build builds the kustomize directories dirs (relative to the repository root) into one set
// of objects; an object built by several of them (config/default includes config/rbac) is
// taken once.
func build(t *testing.T, dirs ...string) *rbacObjects {
	t.Helper()
	out := &rbacObjects{roles: map[string]*rbacv1.Role{}, clusterRoles: map[string]*rbacv1.ClusterRole{}, where: map[string]string{}}
	for _, dir := range dirs {
		objs, err := manifests.Build(filepath.Join(repoRoot, dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			id := o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
			if _, seen := out.where[id]; seen {
				continue
			}
			out.where[id] = dir
			switch o.GetKind() {
			case "Role":
				out.roles[o.GetNamespace()+"/"+o.GetName()] = convert[rbacv1.Role](t, o)
			case "ClusterRole":
				out.clusterRoles[o.GetName()] = convert[rbacv1.ClusterRole](t, o)
			case "RoleBinding":
				out.roleBindings = append(out.roleBindings, convert[rbacv1.RoleBinding](t, o))
			case "ClusterRoleBinding":
				out.clusterRoleBindings = append(out.clusterRoleBindings, convert[rbacv1.ClusterRoleBinding](t, o))
			case "Deployment":
				out.deployments = append(out.deployments, convert[appsv1.Deployment](t, o))
			}
		}
	}
	return out
}

// kustomizeDirs lists every kustomize directory under config/ but the Helm chart's (checked by
// test/install against config/default), relative to the repository root.
func kustomizeDirs(t *testing.T) []string {
	var dirs []string
	err := filepath.WalkDir(filepath.Join(repoRoot, "config"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "helm" {
			return filepath.SkipDir
		}
		if !d.IsDir() && d.Name() == "kustomization.yaml" {
			rel, err := filepath.Rel(repoRoot, filepath.Dir(p))
			if err != nil {
				return err
			}
			dirs = append(dirs, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(dirs, ownRoles) || !slices.Contains(dirs, "config/default") {
		t.Fatalf("kustomize directories %v lack %s or config/default", dirs, ownRoles)
	}
	// config/default last: it includes the others, and an object is named by the first
	// directory that builds it.
	dirs = slices.DeleteFunc(dirs, func(d string) bool { return d == "config/default" })
	return append(dirs, "config/default")
}

// operatorGrants checks every binding of all (the builds of every directory of config/): it
// binds only the operator's ServiceAccount (that of the one Deployment) to one of the roles of
// own (config/rbac's build), and every role of own is bound. It returns what the bindings
// grant, with their scope.
func operatorGrants(t *testing.T, all, own *rbacObjects) []grant {
	t.Helper()
	if len(all.deployments) != 1 {
		t.Fatalf("config/ builds %d Deployments, want the manager's only", len(all.deployments))
	}
	d := all.deployments[0]
	sa := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: d.Spec.Template.Spec.ServiceAccountName, Namespace: d.Namespace}
	if sa.Name == "" {
		sa.Name = "default"
	}
	bound := map[string]bool{}
	var out []grant
	// bind checks one binding (in namespace ns, "" for a ClusterRoleBinding) and adds its grants.
	bind := func(what, ns string, ref rbacv1.RoleRef, subjects []rbacv1.Subject) {
		if !slices.Equal(subjects, []rbacv1.Subject{sa}) {
			t.Errorf("%s (built from %s) binds %+v; bindings in config/ bind only the operator's ServiceAccount %+v", what, all.where[what], subjects, sa)
		}
		if ref.APIGroup != rbacv1.GroupName {
			t.Errorf("%s refers to a role of API group %q", what, ref.APIGroup)
			return
		}
		switch ref.Kind {
		case "ClusterRole":
			r, ok := own.clusterRoles[ref.Name]
			if !ok {
				t.Errorf("%s (built from %s) binds ClusterRole %s, which is not one of the operator's own roles in %s", what, all.where[what], ref.Name, ownRoles)
				return
			}
			bound["ClusterRole "+ref.Name] = true
			for _, g := range grants(ns, r.Rules) {
				if g.group == nonResource && ns != "" {
					t.Errorf("%s grants %s through a RoleBinding, which grants no non-resource URL", what, g)
				}
				out = append(out, g)
			}
		case "Role":
			r, ok := own.roles[ns+"/"+ref.Name]
			if ns == "" || !ok {
				t.Errorf("%s (built from %s) binds Role %s/%s, which is not one of the operator's own roles in %s", what, all.where[what], ns, ref.Name, ownRoles)
				return
			}
			bound["Role "+ns+"/"+ref.Name] = true
			for _, rule := range r.Rules {
				if len(rule.NonResourceURLs) > 0 {
					t.Errorf("Role %s/%s lists non-resource URLs %v, which only a ClusterRole grants", ns, ref.Name, rule.NonResourceURLs)
				}
			}
			out = append(out, grants(ns, r.Rules)...)
		default:
			t.Errorf("%s refers to a role of kind %q", what, ref.Kind)
		}
	}
	for _, b := range all.clusterRoleBindings {
		bind("ClusterRoleBinding /"+b.Name, "", b.RoleRef, b.Subjects)
	}
	for _, b := range all.roleBindings {
		bind("RoleBinding "+b.Namespace+"/"+b.Name, b.Namespace, b.RoleRef, b.Subjects)
	}
	for name := range own.clusterRoles {
		if !bound["ClusterRole "+name] {
			t.Errorf("ClusterRole %s of %s is bound by no binding in config/", name, ownRoles)
		}
	}
	for key := range own.roles {
		if !bound["Role "+key] {
			t.Errorf("Role %s of %s is bound by no binding in config/", key, ownRoles)
		}
	}
	return effective(out)
}

// TestRBACIsDocumented: every binding in config/ binds the operator's ServiceAccount, and only
// it, to one of the operator's own roles (config/rbac); what those bindings grant, with its
// scope (cluster-wide through a ClusterRoleBinding, one namespace through a RoleBinding) and
// non-resource URLs included, is exactly the table of rbacDoc, each row with a reason; and the
// standing promises hold (no list/watch of Secrets, no wildcard verbs, no access to RBAC or
// admission objects, no write on every kind of a group).
func TestRBACIsDocumented(t *testing.T) {
	got := operatorGrants(t, build(t, kustomizeDirs(t)...), build(t, ownRoles))
	doc := docGrants(t)
	for _, g := range got {
		if !slices.Contains(doc, g) {
			t.Errorf("config/ grants the operator %s, which %s's %q table does not list", g, rbacDoc, rbacSection)
		}
	}
	for _, d := range doc {
		if !slices.Contains(got, d) {
			t.Errorf("%s's %q table lists %s, which config/ does not grant the operator", rbacDoc, rbacSection, d)
		}
	}
	for _, g := range got {
		switch {
		case g.verb == "*":
			t.Errorf("wildcard verb: %s", g)
		case g.group == "" && g.resource == "secrets" && g.verb != "get":
			t.Errorf("the operator must read Secrets by name only, not %s", g)
		case g.group == "rbac.authorization.k8s.io" || g.group == "admissionregistration.k8s.io" || g.group == "*":
			t.Errorf("the operator needs no access to %s", g)
		case g.resource == "*" && g.verb != "get" && g.verb != "list" && g.verb != "watch":
			t.Errorf("write on every kind of a group: %s", g)
		}
	}
}
