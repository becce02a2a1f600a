package plane

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"sigs.k8s.io/yaml"
)

// This file records the writes of chosen users in the management API server's audit log
// (Options.AuditWritesOf), for tests that must name every write a client made in a period: the
// API server is the witness, whatever path the client's requests took.

const (
	// AuditLogFile is the management API server's audit log in the log dir.
	AuditLogFile = "audit.log"
	// OperatorUser is the user the operator's requests are authenticated as (its ServiceAccount).
	OperatorUser = "system:serviceaccount:" + OperatorNamespace + ":" + OperatorServiceAccount
)

// auditedVerbs are the verbs the audit policy records: every write.
var auditedVerbs = []string{"create", "update", "patch", "delete", "deletecollection"}

// statusWithBody are the status subresources whose writes are recorded with their request body:
// the operator's own kinds (no Secret, nor anything else a tenant's data is in), so that a write
// a test did not expect can be explained by what it changed (DescribeWrites).
var statusWithBody = []auditv1.GroupResources{{Group: "clusterstack.io",
	Resources: []string{"clusteraddons/status", "clusterstacks/status", "clusterstackreleases/status", "managementoperators/status"}}}

// AuditFlags writes the audit policy for users into dir and returns the kube-apiserver flags
// that apply it: writes by those users at Metadata level (who, what, which object, the answer; no
// bodies) but their status writes of the operator's kinds, with the request's body (Request
// level), one line per request once it was answered, in blocking mode (the API server writes
// the line before it answers, so a reader after the answer finds it), nothing else.
// ReadAuditedWrites reads the log.
func AuditFlags(dir, logPath string, users []string) (map[string]string, error) {
	policy := auditv1.Policy{
		OmitStages: []auditv1.Stage{auditv1.StageRequestReceived, auditv1.StageResponseStarted},
		Rules: []auditv1.PolicyRule{
			{Level: auditv1.LevelRequest, Users: users, Verbs: []string{"update", "patch"}, Resources: statusWithBody},
			{Level: auditv1.LevelMetadata, Users: users, Verbs: auditedVerbs},
			{Level: auditv1.LevelNone},
		},
	}
	policy.APIVersion, policy.Kind = auditv1.SchemeGroupVersion.String(), "Policy"
	b, err := yaml.Marshal(policy)
	if err != nil {
		return nil, fmt.Errorf("plane: audit policy: %w", err)
	}
	path := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return nil, fmt.Errorf("plane: audit policy: %w", err)
	}
	return map[string]string{
		"audit-policy-file": path,
		"audit-log-path":    logPath,
		"audit-log-format":  "json",
		"audit-log-mode":    "blocking",
	}, nil
}

// AuditedWrite is one write request the management API server recorded (Options.AuditWritesOf).
type AuditedWrite struct {
	// At is when the API server received the request.
	At time.Time
	// User made the request.
	User string
	// Verb is create, update, patch, delete or deletecollection.
	Verb string
	// APIGroup, Resource and Subresource name what was written ("" for the core group; status).
	APIGroup, Resource, Subresource string
	// Namespace and Name name the object ("" for a collection or a cluster-scoped object).
	Namespace, Name string
	// Code is the HTTP status code of the answer.
	Code int32
	// Request is the request's body, for the status writes recorded with it (AuditFlags), else nil.
	Request []byte
}

// String names the write: "15:04:05.000 patch clusteraddons/status faults/f01 (200) by <user>".
func (w AuditedWrite) String() string {
	res := w.Resource
	if w.APIGroup != "" {
		res += "." + w.APIGroup
	}
	if w.Subresource != "" {
		res += "/" + w.Subresource
	}
	obj := w.Name
	if w.Namespace != "" {
		obj = w.Namespace + "/" + w.Name
	}
	return fmt.Sprintf("%s %s %s %s (%d) by %s", w.At.Format("15:04:05.000"), w.Verb, res, obj, w.Code, w.User)
}

// AuditedWrites returns the writes the management API server received at or after since (in
// the order it recorded them), by the users of Options.AuditWritesOf. It fails when the plane
// records none (no such users).
func (p *Plane) AuditedWrites(since time.Time) ([]AuditedWrite, error) {
	if len(p.opts.AuditWritesOf) == 0 {
		return nil, errors.New("plane: the management API server records no writes (Options.AuditWritesOf)")
	}
	return ReadAuditedWrites(filepath.Join(p.LogDir(), AuditLogFile), since)
}

// ReadAuditedWrites returns the writes an audit log written with AuditFlags recorded at or after
// since, in the order it recorded them.
func ReadAuditedWrites(path string, since time.Time) ([]AuditedWrite, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("plane: audit log: %w", err)
	}
	defer func() { _ = f.Close() }()
	var out []AuditedWrite
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		var ev auditv1.Event
		if err := json.Unmarshal(line, &ev); err != nil {
			// The API server stopped in the middle of a line (RestartAPIServer): skip it.
			continue
		}
		if ev.RequestReceivedTimestamp.Time.Before(since) {
			continue
		}
		w := AuditedWrite{At: ev.RequestReceivedTimestamp.Time, User: ev.User.Username, Verb: ev.Verb}
		if r := ev.ObjectRef; r != nil {
			w.APIGroup, w.Resource, w.Subresource, w.Namespace, w.Name = r.APIGroup, r.Resource, r.Subresource, r.Namespace, r.Name
		}
		if ev.ResponseStatus != nil {
			w.Code = ev.ResponseStatus.Code
		}
		if ev.RequestObject != nil {
			w.Request = ev.RequestObject.Raw
		}
		out = append(out, w)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("plane: read audit log %s: %w", path, err)
	}
	return out, nil
}

// DescribeWrites names each write of all at or after since (all as AuditedWrites or
// ReadAuditedWrites return them, from any earlier time) and, for a status write recorded with its
// body, what it changed in the status since the same writer's write of that object before it
// (a diff of the two updates' status; "first recorded write" when there is none), or what a
// status patch wrote.
func DescribeWrites(all []AuditedWrite, since time.Time) string {
	var b strings.Builder
	last := map[string][]byte{}
	for _, w := range all {
		key := w.User + " " + w.APIGroup + "/" + w.Resource + "/" + w.Subresource + " " + w.Namespace + "/" + w.Name
		prev := last[key]
		if w.Request != nil && w.Verb == "update" && w.Code < 300 {
			last[key] = w.Request
		}
		if w.At.Before(since) {
			continue
		}
		b.WriteString("  " + w.String() + "\n")
		switch {
		case w.Request == nil:
			continue
		case w.Verb != "update": // a patch's body is what it changes
			b.WriteString("    " + string(w.Request) + "\n")
			continue
		case prev == nil:
			b.WriteString("    first recorded write of this object's status\n")
			continue
		}
		for _, line := range strings.Split(strings.TrimRight(statusDiff(prev, w.Request), "\n"), "\n") {
			b.WriteString("    " + line + "\n")
		}
	}
	return b.String()
}

// statusDiff is the difference of the status of two request bodies (-before +after), or a
// sentence saying there is none or that a body is not an object.
func statusDiff(before, after []byte) string {
	var a, c struct {
		Status any `json:"status"`
	}
	if json.Unmarshal(before, &a) != nil || json.Unmarshal(after, &c) != nil {
		return "(a request body is not a JSON object)"
	}
	if d := cmp.Diff(a.Status, c.Status); d != "" {
		return "status (-before +after):\n" + d
	}
	return "the status is the same as in the write before (a write that changed nothing)"
}
