package manifests_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/clusterstack-io/clusterstack-operator/internal/manifests"
)

const rbacSection = "### The operator's own RBAC"

// grant is one verb on one resource of one API group.
type grant struct{ group, resource, verb string }

func (g grant) String() string {
	return fmt.Sprintf("group %q, resource %q, verb %q", g.group, g.resource, g.verb)
}

// grants expands rules into single grants, sorted and without repeats.
func grants(rules []rbacv1.PolicyRule) []grant {
	var out []grant
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					out = append(out, grant{g, res, v})
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b grant) int { return strings.Compare(a.String(), b.String()) })
	return slices.Compact(out)
}

// readmeRules parses the README's RBAC table: | groups | resources | verbs | why |.
func readmeRules(t *testing.T) []rbacv1.PolicyRule {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, rbacSection)
	if i < 0 {
		t.Fatalf("README.md has no section %q", rbacSection)
	}
	var rules []rbacv1.PolicyRule
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
	inTable := false
	for _, line := range strings.Split(s[i:], "\n")[1:] {
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
		if strings.TrimSpace(cells[3]) == "" {
			t.Errorf("README RBAC row %q says not why the rule is needed", line)
		}
		rules = append(rules, rbacv1.PolicyRule{APIGroups: list(cells[0]), Resources: list(cells[1]), Verbs: list(cells[2])})
	}
	if len(rules) == 0 {
		t.Fatal("README RBAC table is empty")
	}
	return rules
}

// TestRBACIsDocumented: every rule the operator is granted in config/rbac has a row in the
// README's table with a reason, and the table grants nothing config/rbac does not; and the
// standing promises hold (no list/watch of Secrets, no wildcard verbs, no cluster-wide write to
// RBAC or admission objects).
func TestRBACIsDocumented(t *testing.T) {
	objs, err := manifests.Build(filepath.Join("..", "..", "config", "rbac"))
	if err != nil {
		t.Fatal(err)
	}
	var granted []rbacv1.PolicyRule
	for _, o := range objs {
		switch o.GetKind() {
		case "ClusterRole":
			var r rbacv1.ClusterRole
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &r); err != nil {
				t.Fatal(err)
			}
			granted = append(granted, r.Rules...)
		case "Role":
			var r rbacv1.Role
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &r); err != nil {
				t.Fatal(err)
			}
			granted = append(granted, r.Rules...)
		}
	}
	got, doc := grants(granted), grants(readmeRules(t))
	for _, g := range got {
		if !slices.Contains(doc, g) {
			t.Errorf("config/rbac grants %s, which README.md's %q table does not list", g, rbacSection)
		}
	}
	for _, d := range doc {
		if !slices.Contains(got, d) {
			t.Errorf("README.md's RBAC table lists %s, which config/rbac does not grant", d)
		}
	}
	for _, g := range got {
		switch {
		case g.verb == "*":
			t.Errorf("wildcard verb: %s", g)
		case g.group == "" && g.resource == "secrets" && g.verb != "get":
			t.Errorf("the operator must read Secrets by name only, not %s", g)
		case g.group == "rbac.authorization.k8s.io" || g.group == "admissionregistration.k8s.io":
			t.Errorf("the operator needs no access to %s", g)
		case g.resource == "*" && g.verb != "get" && g.verb != "list" && g.verb != "watch":
			t.Errorf("write on every kind of a group: %s", g)
		}
	}
}
