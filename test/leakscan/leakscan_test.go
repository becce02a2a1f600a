package leakscan

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

const (
	// password is a Secret value with a newline and the characters JSON escapes.
	password = "pa<ss>&wo\"rd\nsecond-line"
	token    = "kubeconfig-token-0123456789"
	keyLine  = "MHcCAQEEIBkTyp3Ev0nkUZxNlqmRQ0p7ZpNrXoEw3Q7d8zN1uN2uoAoGCCqGSM49"
	key      = "-----BEGIN EC PRIVATE KEY-----\n" + keyLine + "\nAwEHoUQDQgAE\n-----END EC PRIVATE KEY-----\n"
	server   = "https://127.0.0.1:6443"
	ca       = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJkekNDQVIyZ0F3SUJBZ0lCQURBS0JnZ3Foa2pPUFFRREFqQWpNU0V3SHdZRFZRUUREQmhyTTNNdGMyVnkK"
)

func kubeconfig() string {
	return "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: " + server + "\n    certificate-authority-data: " + ca +
		"\nusers:\n- name: u\n  user:\n    token: " + token + "\n    client-key-data: " + base64.StdEncoding.EncodeToString([]byte(key)) + "\n"
}

func needles() Needles {
	n := Needles{}
	n.AddSecret(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "git"}, Data: map[string][]byte{
		"password": []byte(password), "username": []byte("git"), "short": []byte("eleven-char"),
	}})
	n.AddSecret(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "c-kubeconfig"}, Data: map[string][]byte{"value": []byte(kubeconfig())}})
	return n
}

// zapLine is what the operator's logger (controller-runtime's zap, JSON) writes for msg with
// the key-value pairs kv.
func zapLine(msg string, kv ...any) string {
	var b bytes.Buffer
	zap.New(zap.WriteTo(&b)).Info(msg, kv...)
	return b.String()
}

// jsonOf is v as encoding/json writes it (the API server's encoding of a status): it escapes
// <, > and & too.
func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestScanLog(t *testing.T) {
	m := NewMatcher(needles())
	for _, tt := range []struct {
		name string
		log  string
		want []string // the Secrets found, as Leak.Secret
	}{
		{"a value with a newline and <>&\" in zap's JSON message", zapLine("auth failed: " + password),
			[]string{"a/git[password]"}},
		{"the same value in a key-value pair", zapLine("auth failed", "password", password),
			[]string{"a/git[password]"}},
		{"the same value JSON-encoded by encoding/json (<>& escaped too)", jsonOf(map[string]string{"message": "x" + password + "y"}) + "\n",
			[]string{"a/git[password]"}},
		{"the same value Go-quoted (%q) inside a JSON message", zapLine(fmt.Sprintf("bad value %q", password)),
			[]string{"a/git[password]"}},
		{"the same value in a JSON document inside a JSON message", zapLine("response", "body", jsonOf(map[string]string{"p": password})),
			[]string{"a/git[password]"}},
		{"the same value as a JSON key", jsonOf(map[string]int{password: 1}) + "\n",
			[]string{"a/git[password]"}},
		{"its base64 form", zapLine("data", "password", base64.StdEncoding.EncodeToString([]byte(password))),
			[]string{"a/git[password] (base64)"}},
		{"a kubeconfig's token in a plain text line", "E1128 12:00:00 bearer " + token + " refused\n",
			[]string{"a/c-kubeconfig[value] user u token"}},
		{"a kubeconfig's whole client key in zap's JSON", zapLine("key", "pem", key),
			[]string{"a/c-kubeconfig[value] user u key", "a/c-kubeconfig[value] user u key line"}},
		{"one line of a kubeconfig's client key", "key " + keyLine + "\n",
			[]string{"a/c-kubeconfig[value] user u key line"}},
		// The key's last line starts at a multiple of 3 bytes into the key, and has 12: its
		// base64 form is part of the key's.
		{"the whole kubeconfig (the YAML holds the key base64-encoded)", zapLine("kubeconfig", "value", kubeconfig()),
			[]string{"a/c-kubeconfig[value] user u key (base64)", "a/c-kubeconfig[value] user u key line (base64)", "a/c-kubeconfig[value] user u token"}},
		{"a kubeconfig's server and CA are public", zapLine("connecting", "server", server, "ca", ca), nil},
		{"a PEM armour line is in every key", zapLine("-----BEGIN EC PRIVATE KEY-----"), nil},
		{"values shorter than the minimum are not looked for", zapLine("user git, eleven-char"), nil},
		{"a value split across two strings is not one value", zapLine("pa<ss>&wo\"rd", "rest", "\nsecond-line"), nil},
		{"a value with a newline written out raw (not JSON)", "panic: " + password + "\n",
			[]string{"a/git[password]"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, leaks, err := m.ScanLog("manager.log", strings.NewReader(tt.log))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, l := range leaks {
				if !strings.HasPrefix(l.In, "manager.log:1") {
					t.Errorf("leak %s not located in manager.log line 1", l)
				}
				got = append(got, l.Secret)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("found %v in %q, want %v", got, tt.log, tt.want)
			}
		})
	}
}

// TestEscapedValuesAreNotRawSubstrings: the encodings above hide the value from a comparison of
// the raw text, which is why the scan decodes.
func TestEscapedValuesAreNotRawSubstrings(t *testing.T) {
	for _, enc := range []string{zapLine("auth failed: " + password), jsonOf(map[string]string{"message": password})} {
		if strings.Contains(enc, password) {
			t.Errorf("%q contains the value as it is: the decoding is not tested", enc)
		}
	}
}

func TestScanLogLinesAndLocations(t *testing.T) {
	m := NewMatcher(needles())
	log := zapLine("started") + "not json " + token + "\n" + zapLine("reconcile", "error", "auth: "+password) + zapLine("done")
	lines, leaks, err := m.ScanLog("manager.log", strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	want := "[Secret a/c-kubeconfig[value] user u token appears in manager.log:2 Secret a/git[password] appears in manager.log:3 at .error]"
	if lines != 4 || fmt.Sprint(leaks) != want {
		t.Errorf("ScanLog = %d lines, %v; want 4 lines, %s", lines, leaks, want)
	}
}

func TestScanValue(t *testing.T) {
	m := NewMatcher(needles())
	status := map[string]any{"status": map[string]any{"conditions": []any{
		map[string]any{"type": "Ready", "message": "clone failed: " + password},
	}}}
	leaks := m.ScanValue("ClusterStack a/s", status)
	if want := "[Secret a/git[password] appears in ClusterStack a/s at .status.conditions[0].message]"; fmt.Sprint(leaks) != want {
		t.Errorf("ScanValue = %v, want %s", leaks, want)
	}
	if leaks := m.ScanValue("ClusterStack a/s", map[string]any{"spec": map[string]any{"url": server}}); len(leaks) != 0 {
		t.Errorf("ScanValue of a clean object = %v", leaks)
	}
}

func TestNeedles(t *testing.T) {
	n := needles()
	for v, want := range map[string]string{
		password: "a/git[password]",
		base64.StdEncoding.EncodeToString([]byte(password)): "a/git[password] (base64)",
		token:   "a/c-kubeconfig[value] user u token",
		key:     "a/c-kubeconfig[value] user u key",
		keyLine: "a/c-kubeconfig[value] user u key line",
	} {
		if n[v] != want {
			t.Errorf("needle %q comes from %q, want %q", v, n[v], want)
		}
	}
	for _, v := range []string{"git", "eleven-char", server, ca, kubeconfig(), "-----BEGIN EC PRIVATE KEY-----", "-----END EC PRIVATE KEY-----"} {
		if w, ok := n[v]; ok {
			t.Errorf("%q is looked for (from %s), but it is short or public", v, w)
		}
	}
}

func TestReportSummary(t *testing.T) {
	r := Report{Needles: 2, Scanned: []string{"3 objects", "/logs/manager.log (9 lines)"}, Leaks: []Leak{
		{Secret: "a/c-kubeconfig[value] user u key", In: "/logs/manager.log:4 at .msg"},
		{Secret: "a/c-kubeconfig[value] user u key", In: "/logs/manager.log:7 at .msg"},
	}}
	want := "looked for 2 Secret values in 3 objects, /logs/manager.log (9 lines)\n" +
		"Secret a/c-kubeconfig[value] user u key appears in /logs/manager.log:4 at .msg and 1 more places (/logs/manager.log:7 at .msg)"
	if got := r.Summary(); got != want {
		t.Errorf("Summary =\n%s\nwant\n%s", got, want)
	}
}

func TestScanWithoutNeedlesFails(t *testing.T) {
	if _, err := Scan(t.Context(), Needles{}, nil, nil); err == nil || !strings.Contains(err.Error(), "no Secret values") {
		t.Errorf("Scan without needles: %v, want an error (a scan that looks for nothing cannot fail)", err)
	}
	if _, err := Scan(t.Context(), needles(), nil, []string{"/nonexistent/manager.log"}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Scan of a missing log: %v, want an error", err)
	}
}
