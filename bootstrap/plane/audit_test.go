package plane

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"sigs.k8s.io/yaml"
)

// TestAuditPolicyRecordsStatusBodies: the operator's status writes of its kinds are recorded
// with their body, its other writes without, other users' not at all.
func TestAuditPolicyRecordsStatusBodies(t *testing.T) {
	dir := t.TempDir()
	flags, err := AuditFlags(dir, filepath.Join(dir, "audit.log"), []string{OperatorUser})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(flags["audit-policy-file"])
	if err != nil {
		t.Fatal(err)
	}
	var p auditv1.Policy
	if err := yaml.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	levelOf := func(user, verb, group, resource string) auditv1.Level {
		for _, r := range p.Rules {
			if len(r.Users) > 0 && !contains(r.Users, user) || len(r.Verbs) > 0 && !contains(r.Verbs, verb) {
				continue
			}
			if len(r.Resources) > 0 && !matchesResource(r.Resources, group, resource) {
				continue
			}
			return r.Level
		}
		return auditv1.LevelNone
	}
	for _, tc := range []struct {
		user, verb, group, resource string
		want                        auditv1.Level
	}{
		{OperatorUser, "update", "clusterstack.io", "clusteraddons/status", auditv1.LevelRequest},
		{OperatorUser, "update", "", "configmaps", auditv1.LevelMetadata},
		{OperatorUser, "create", "", "secrets", auditv1.LevelMetadata},
		{OperatorUser, "get", "clusterstack.io", "clusteraddons", auditv1.LevelNone},
		{"system:admin", "update", "clusterstack.io", "clusteraddons/status", auditv1.LevelNone},
	} {
		if got := levelOf(tc.user, tc.verb, tc.group, tc.resource); got != tc.want {
			t.Errorf("%s %s %s/%s: level %s, want %s", tc.user, tc.verb, tc.group, tc.resource, got, tc.want)
		}
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func matchesResource(grs []auditv1.GroupResources, group, resource string) bool {
	for _, gr := range grs {
		if gr.Group == group && contains(gr.Resources, resource) {
			return true
		}
	}
	return false
}

// TestDescribeWrites: a status update names what it changed since the writer's update of that
// object before (or that it changed nothing); a write without a body is named only.
func TestDescribeWrites(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 5, 0, 0, 0, time.UTC)
	w := func(at time.Duration, body string) AuditedWrite {
		a := AuditedWrite{At: t0.Add(at), User: OperatorUser, Verb: "update", APIGroup: "clusterstack.io", Resource: "clusteraddons",
			Subresource: "status", Namespace: "faults", Name: "f03", Code: 200}
		if body != "" {
			a.Request = []byte(body)
		}
		return a
	}
	ready := `{"status":{"components":[{"name":"info","message":"Kustomization/f03-info is Ready"}]}}`
	inProgress := `{"status":{"components":[{"name":"info","message":"Kustomization/f03-info: Reconciliation in progress"}]}}`
	all := []AuditedWrite{w(0, ready), w(time.Minute, inProgress), w(2*time.Minute, inProgress), w(3*time.Minute, "")}
	got := DescribeWrites(all, t0.Add(30*time.Second))
	for _, want := range []string{
		"05:01:00.000 update clusteraddons.clusterstack.io/status faults/f03 (200)",
		`-`, `"Kustomization/f03-info is Ready"`, `+`, `"Kustomization/f03-info: Reconciliation in progress"`,
		"the status is the same as in the write before",
		"05:03:00.000 update",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("DescribeWrites lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "05:00:00.000") {
		t.Errorf("a write before since is named:\n%s", got)
	}
	if first := DescribeWrites(all[:1], t0); !strings.Contains(first, "first recorded write") {
		t.Errorf("the first write: %s", first)
	}
}

// TestReadAuditedWritesKeepsBodies: an audit line as kube-apiserver writes it at Request level
// gives the write with its request body; a Metadata line gives none; a line cut off by a restart
// is skipped.
func TestReadAuditedWritesKeepsBodies(t *testing.T) {
	lines := []string{
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Request","auditID":"a","stage":"ResponseComplete","requestURI":"/apis/clusterstack.io/v1alpha1/namespaces/faults/clusteraddons/f03/status","verb":"update","user":{"username":"` + OperatorUser + `"},"objectRef":{"resource":"clusteraddons","namespace":"faults","name":"f03","apiGroup":"clusterstack.io","apiVersion":"v1alpha1","subresource":"status"},"responseStatus":{"metadata":{},"code":200},"requestObject":{"apiVersion":"clusterstack.io/v1alpha1","kind":"ClusterAddon","status":{"progress":"2/2"}},"requestReceivedTimestamp":"2026-11-29T05:45:17.159685Z","stageTimestamp":"2026-11-29T05:45:17.310940Z"}`,
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"b","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/faults/configmaps/x","verb":"patch","user":{"username":"` + OperatorUser + `"},"objectRef":{"resource":"configmaps","namespace":"faults","name":"x","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-11-29T05:45:18.000000Z","stageTimestamp":"2026-11-29T05:45:18.000000Z"}`,
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Met`,
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := ReadAuditedWrites(path, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d writes, want 2: %+v", len(got), got)
	}
	if !strings.Contains(string(got[0].Request), `"progress":"2/2"`) || got[0].Subresource != "status" || got[0].Code != 200 {
		t.Errorf("status write: %+v (body %s)", got[0], got[0].Request)
	}
	if got[1].Request != nil {
		t.Errorf("a Metadata line has a body: %s", got[1].Request)
	}
}
