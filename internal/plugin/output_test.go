package plugin

import (
	"encoding/json"
	"strings"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

func TestColorEnabled(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "NO_COLOR" {
				return v
			}
			return ""
		}
	}
	tests := []struct {
		name     string
		terminal bool
		noColor  string
		want     bool
	}{
		{"a terminal", true, "", true},
		{"a terminal with NO_COLOR", true, "1", false},
		{"a pipe", false, "", false},
		{"a pipe with NO_COLOR", false, "1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ColorEnabled(tt.terminal, env(tt.noColor)); got != tt.want {
				t.Errorf("ColorEnabled = %t, want %t", got, tt.want)
			}
		})
	}
}

func TestStyle(t *testing.T) {
	tests := []struct {
		state, want string
	}{
		{StateReady, ansiGreen}, {StateAvailable, ansiGreen}, {"True", ansiGreen}, {"Done", ansiGreen},
		{StateDegraded, ansiRed}, {StateFailed, ansiRed}, {StateNotFound, ansiRed}, {"Halted", ansiRed}, {"False", ansiRed},
		{StateProgressing, ansiYellow}, {StateUnknown, ansiYellow}, {StatePaused, ansiYellow}, {"Pending", ansiYellow},
	}
	for _, tt := range tests {
		if got := (Style{Color: true}).State(tt.state); got != tt.want+tt.state+ansiReset {
			t.Errorf("State(%s) = %q", tt.state, got)
		}
		if got := (Style{}).State(tt.state); got != tt.state {
			t.Errorf("plain State(%s) = %q", tt.state, got)
		}
	}
}

func TestFormats(t *testing.T) {
	for _, f := range []string{"", "json", "yaml"} {
		if err := ValidFormat(f); err != nil {
			t.Errorf("ValidFormat(%q): %v", f, err)
		}
	}
	if err := ValidFormat("wide"); err == nil || !strings.Contains(err.Error(), `"wide"`) {
		t.Errorf("ValidFormat(wide): %v", err)
	}
	v := Verdict{Cluster: "a/b", Blocker: BlockerNone, Summary: "fine", Evidence: []Evidence{}}
	var j, y strings.Builder
	if err := WriteData(&j, FormatJSON, v); err != nil {
		t.Fatal(err)
	}
	if err := WriteData(&y, FormatYAML, v); err != nil {
		t.Fatal(err)
	}
	wantJSON := "{\n  \"cluster\": \"a/b\",\n  \"blocked\": false,\n  \"blocker\": \"None\",\n  \"summary\": \"fine\",\n  \"evidence\": []\n}\n"
	if diff := cmp.Diff(wantJSON, j.String()); diff != "" {
		t.Errorf("JSON (-want +got):\n%s", diff)
	}
	var fromYAML Verdict
	if err := yaml.Unmarshal([]byte(y.String()), &fromYAML); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(v, fromYAML); diff != "" {
		t.Errorf("YAML round trip (-want +got):\n%s", diff)
	}
	if err := WriteData(&j, FormatText, v); err == nil {
		t.Error("WriteData wrote text")
	}
}

func TestObjectState(t *testing.T) {
	tests := []struct {
		name          string
		conds         []metav1.Condition
		state, reason string
	}{
		{"no conditions", nil, StateUnknown, ""},
		{"ready", ready(), StateReady, ""},
		{"degraded", degraded("it broke"), StateDegraded, "it broke"},
		{"progressing", progressing("moving"), StateProgressing, "moving"},
		{"available while something else is off", with(ready(), cond(csv1.ReadyCondition, "False", "X", "almost")), StateAvailable, "almost"},
		{"paused wins", with(degraded("it broke"), cond(csv1.PausedCondition, "True", csv1.ReasonClusterPaused, "paused")), StatePaused, "paused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, m := ObjectState(tt.conds)
			if s != tt.state || m != tt.reason {
				t.Errorf("ObjectState = %s, %q; want %s, %q", s, m, tt.state, tt.reason)
			}
		})
	}
}

func TestFluxObjects(t *testing.T) {
	stalled := []metav1.Condition{cond("Ready", "False", "InstallFailed", "install failed"), cond("Stalled", "True", "RetriesExceeded", "no retries left")}
	tests := []struct {
		name    string
		got     FluxObject
		state   string
		message string
	}{
		{"a Ready HelmRelease", FluxFromHelmRelease(ptrTo(helmRelease("a", fluxReady))), StateReady, fluxReady[0].Message},
		{"a failed HelmRelease", FluxFromHelmRelease(ptrTo(helmRelease("a", fluxFailed))), StateFailed, installFail},
		{"a HelmRelease Flux retries", FluxFromHelmRelease(ptrTo(helmRelease("a", fluxRetry))), StateProgressing, fluxRetry[0].Message},
		{"a stalled HelmRelease: the Stalled message", FluxFromHelmRelease(ptrTo(helmRelease("a", stalled))), StateFailed, "no retries left"},
		{"a suspended HelmRelease", FluxFromHelmRelease(ptrTo(helmRelease("a", fluxReady, func(hr *helmv2.HelmRelease) { hr.Spec.Suspend = true }))), StateSuspended, fluxReady[0].Message},
		{"a new Kustomization", FluxFromKustomization(ptrTo(kustomization("k", nil))), StateUnknown, ""},
		{"a missing object", FluxIndex{}.Get(ns, "Kustomization/k"), StateNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got.State != tt.state || tt.got.Message() != tt.message {
				t.Errorf("state %s, message %q; want %s, %q", tt.got.State, tt.got.Message(), tt.state, tt.message)
			}
		})
	}
	if got := (FluxIndex{}).Get(ns, "Kustomization/k"); got.Ref() != "Kustomization/k" || got.Namespace != ns {
		t.Errorf("missing object: %+v", got)
	}

	// The history is bounded, newest first as Flux keeps it.
	hr := helmRelease("a", fluxReady, func(hr *helmv2.HelmRelease) {
		for v := 9; v >= 1; v-- {
			hr.Status.History = append(hr.Status.History, &helmv2.Snapshot{Version: v, Status: "superseded", ChartName: "cni", ChartVersion: "1.0.0"})
		}
	})
	if h := FluxFromHelmRelease(&hr).History; len(h) != maxHistory || h[0].Version != 9 || h[0].Chart != "cni@1.0.0" {
		t.Errorf("history: %+v", h)
	}
	// JSON names are stable.
	out, err := json.Marshal(FluxFromKustomization(ptrTo(kustomization("k", ksReady))))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"kind":"Kustomization","namespace":"team-a","name":"k","state":"Ready","ready":{"type":"Ready","status":"True","reason":"ReconciliationSucceeded","message":"Applied revision: sha1:abc"},"lastAppliedRevision":"sha1:abc"}`; string(out) != want {
		t.Errorf("JSON:\n%s\nwant\n%s", out, want)
	}
}

func ptrTo[T any](v T) *T { return &v }

func TestOneLine(t *testing.T) {
	if got := oneLine("a\n  b\tc", 0); got != "a b c" {
		t.Errorf("oneLine: %q", got)
	}
	if got := oneLine("äöüß", 2); got != "äö..." {
		t.Errorf("oneLine cut: %q", got)
	}
}
