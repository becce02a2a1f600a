package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseMarker(t *testing.T) {
	tests := []struct {
		line string
		want marker
		ok   bool
	}{
		{" +kubebuilder:default=1", marker{"kubebuilder:default", "1"}, true},
		{" +optional", marker{"optional", ""}, true},
		{" +kubebuilder:validation:Pattern=`^[a-z]+$`", marker{"kubebuilder:validation:Pattern", "`^[a-z]+$`"}, true},
		{` +kubebuilder:validation:XValidation:rule="self == oldSelf",message="cannot change"`,
			marker{"kubebuilder:validation:XValidation", `rule="self == oldSelf",message="cannot change"`}, true},
		{" +kubebuilder:resource:shortName=cstack,categories=cluster-stacks",
			marker{"kubebuilder:resource", "shortName=cstack,categories=cluster-stacks"}, true},
		{" +kubebuilder:subresource:status", marker{"kubebuilder:subresource:status", ""}, true},
		{" +docs:on=ClusterAddon/Degraded,ClusterStack/Degraded", marker{"docs:on", "ClusterAddon/Degraded,ClusterStack/Degraded"}, true},
		{" name of the stack", marker{}, false},
		{" +", marker{}, false},
	}
	for _, tt := range tests {
		got, ok := parseMarker(tt.line)
		if ok != tt.ok || got != tt.want {
			t.Errorf("parseMarker(%q) = %+v, %v; want %+v, %v", tt.line, got, ok, tt.want, tt.ok)
		}
	}
}

func TestArgs(t *testing.T) {
	tests := []struct {
		in      string
		want    map[string]string
		wantErr bool
	}{
		{`rule="self == oldSelf",message="spec.x cannot be changed"`, map[string]string{"rule": "self == oldSelf", "message": "spec.x cannot be changed"}, false},
		{`rule="a.matches('^(x|y)$')",message="say \"x\", or y"`, map[string]string{"rule": "a.matches('^(x|y)$')", "message": `say "x", or y`}, false},
		{"name=\"Age\",type=date,JSONPath=`.metadata.creationTimestamp`", map[string]string{"name": "Age", "type": "date", "JSONPath": ".metadata.creationTimestamp"}, false},
		{"scope=Cluster,shortName=mgmtop,categories=cluster-stacks", map[string]string{"scope": "Cluster", "shortName": "mgmtop", "categories": "cluster-stacks"}, false},
		{`rule="unterminated`, nil, true},
		{`rule`, nil, true},
		{`rule="x"message="y"`, nil, true},
	}
	for _, tt := range tests {
		got, err := args(tt.in)
		if (err != nil) != tt.wantErr || (!tt.wantErr && !reflect.DeepEqual(got, tt.want)) {
			t.Errorf("args(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestValue(t *testing.T) {
	tests := map[string]string{
		`"5m"`:                   "5m",
		"`^v[0-9]+$`":            "^v[0-9]+$",
		`"^([0-9]+(\\.[0-9]+))"`: `^([0-9]+(\.[0-9]+))`,
		"false":                  "false",
		"Helm;Kustomize":         "Helm;Kustomize",
		`"a","b"`:                `"a","b"`,
	}
	for in, want := range tests {
		if got := value(in); got != want {
			t.Errorf("value(%s) = %q, want %q", in, got, want)
		}
	}
}

func TestEscape(t *testing.T) {
	tests := []struct {
		in, text, cell string
	}{
		{"tags <provider>-<name>", "tags &lt;provider&gt;-&lt;name&gt;", "tags &lt;provider&gt;-&lt;name&gt;"},
		{"run `kubectl get <kind>` now", "run `kubectl get <kind>` now", "run `kubectl get <kind>` now"},
		{"a | b and `x|y`", "a | b and `x|y`", `a \| b and ` + "`x\\|y`"},
		{"e.g. [\"v1\"] and *", `e.g. \["v1"\] and \*`, `e.g. \["v1"\] and \*`},
		{"one ` alone", "one \\` alone", "one \\` alone"},
		{"first\n\nsecond", "first\n\nsecond", "first<br><br>second"},
	}
	for _, tt := range tests {
		if got := text(tt.in); got != tt.text {
			t.Errorf("text(%q) = %q, want %q", tt.in, got, tt.text)
		}
		if got := cell(tt.in); got != tt.cell {
			t.Errorf("cell(%q) = %q, want %q", tt.in, got, tt.cell)
		}
	}
}

func TestCode(t *testing.T) {
	tests := []struct {
		in      string
		inTable bool
		want    string
	}{
		{"^[a-z]+$", false, "`^[a-z]+$`"},
		{"^(a|b)$", true, "`^(a\\|b)$`"},
		{"a`b", false, "``a`b``"},
		{"`x`", false, "`` `x` ``"},
	}
	for _, tt := range tests {
		if got := code(tt.in, tt.inTable); got != tt.want {
			t.Errorf("code(%q, %v) = %q, want %q", tt.in, tt.inTable, got, tt.want)
		}
	}
}

func TestHelpers(t *testing.T) {
	for in, want := range map[string]string{"ClusterStack": "clusterstack", "Conditions of ClusterAddon": "conditions-of-clusteraddon", "a.b_c": "ab_c"} {
		if got := anchor(in); got != want {
			t.Errorf("anchor(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"Name of the stack, e.g. aws. More here.": "Name of the stack, e.g. aws.",
		"One paragraph\n\nTwo.":                   "One paragraph",
		"No period":                               "No period",
	} {
		if got := firstSentence(in); got != want {
			t.Errorf("firstSentence(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{"the tag": "The tag", "spec.version is": "spec.version is", "`kubectl` shows": "`kubectl` shows", "": ""} {
		if got := upperFirst(in); got != want {
			t.Errorf("upperFirst(%q) = %q, want %q", in, got, want)
		}
	}
	for _, tt := range []struct{ name, doc, want string }{
		{"WavePending", "WavePending: an earlier wave has not finished.", "an earlier wave has not finished."},
		{"CoreProvider", "CoreProvider is Cluster API's core manager.", "Cluster API's core manager."},
		{"StageActionDelete", "StageActionDelete, in one stage only, removes it.", "in one stage only, removes it."},
		{"Stage", "StageAction is something else.", "StageAction is something else."},
	} {
		if got := constMeaning(&constDecl{Name: tt.name, Doc: tt.doc}); got != tt.want {
			t.Errorf("constMeaning(%s, %q) = %q, want %q", tt.name, tt.doc, got, tt.want)
		}
	}
}

func TestRequired(t *testing.T) {
	tests := []struct {
		f    fieldDecl
		want bool
	}{
		{fieldDecl{}, true},
		{fieldDecl{OmitEmpty: true}, false},
		{fieldDecl{Markers: markers{{Name: "optional"}}}, false},
		{fieldDecl{OmitEmpty: true, Markers: markers{{Name: "required"}}}, true},
	}
	for _, tt := range tests {
		if got := required(&tt.f); got != tt.want {
			t.Errorf("required(%+v) = %v, want %v", tt.f, got, tt.want)
		}
	}
}

// testPackage is a small API package for the generator, with a kind, a condition and reasons.
const testPackage = `// Package v1 is a test API.
// +groupName=example.io
package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Widget is a test kind.
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=wd
type Widget struct {
	metav1.TypeMeta   ` + "`json:\",inline\"`" + `
	metav1.ObjectMeta ` + "`json:\"metadata,omitempty\"`" + `
	// spec is the desired state.
	Spec WidgetSpec ` + "`json:\"spec\"`" + `
}

// WidgetSpec is the spec.
type WidgetSpec struct {
	// size of the widget.
	// +kubebuilder:default=3
	// +kubebuilder:validation:Maximum=9
	// +optional
	Size int32 ` + "`json:\"size,omitempty\"`" + `
	// color of the widget.
	Color Color ` + "`json:\"color\"`" + `
}

// Color is a color.
// +kubebuilder:validation:Enum=red;blue
type Color string

const (
	// ColorRed: red.
	ColorRed Color = "red"
	// ColorBlue: blue.
	ColorBlue Color = "blue"
)

const (
	// ShinyCondition is True when the widget shines.
	// +docs:kinds=Widget
	ShinyCondition = "Shiny"
)

const (
%s
)
`

func writeTestPackage(t *testing.T, reasons string) *apiPackage {
	t.Helper()
	dir := t.TempDir()
	src := strings.Replace(testPackage, "%s", reasons, 1)
	if err := os.WriteFile(filepath.Join(dir, "types.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := loadPackage(dir)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBuildConditionsChecksTheMarkers(t *testing.T) {
	tests := []struct {
		name    string
		reasons string
		wantErr string // "" for none
	}{
		{"complete", `	// ReasonDull: it does not shine. What to do: polish it.
	// +docs:on=Widget/Shiny
	ReasonDull = "Dull"`, ""},
		{"no what to do", `	// ReasonDull: it does not shine.
	// +docs:on=Widget/Shiny
	ReasonDull = "Dull"`, `ReasonDull: its godoc has no "What to do:" sentence`},
		{"no marker", `	// ReasonDull: it does not shine. What to do: polish it.
	ReasonDull = "Dull"`, "ReasonDull: no +docs:on="},
		{"unknown kind", `	// ReasonDull: it does not shine. What to do: polish it.
	// +docs:on=Gadget/Shiny
	ReasonDull = "Dull"`, `"Gadget/Shiny", whose kind is no kind of the API`},
		{"unknown condition", `	// ReasonDull: it does not shine. What to do: polish it.
	// +docs:on=Widget/Rusty
	ReasonDull = "Dull"`, "Widget has no condition Rusty"},
		{"never set", `	// ReasonDull: it does not shine. What to do: nothing.
	// +docs:on=none
	ReasonDull = "Dull"`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := buildConditions(writeTestPackage(t, tt.reasons))
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestRenderTestPackage(t *testing.T) {
	p := writeTestPackage(t, `	// ReasonDull: it does not <shine>. What to do: polish it.
	// +docs:on=Widget/Shiny
	ReasonDull = "Dull"`)
	ref, err := renderReference(p, "v1", "api/v1")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# API reference: `example.io/v1`",
		"| [Widget](#widget) | Namespaced | `wd` | Widget is a test kind. |",
		"| `spec` (required) | [WidgetSpec](#widgetspec) | spec is the desired state. |",
		"| `size` | int32 | `3` | at most 9 | size of the widget. |",
		"| `color` (required) | [Color](#color) (string) |  | one of `red`, `blue` | color of the widget. |",
		"| `red` | Red. |",
	} {
		if !strings.Contains(ref, want) {
			t.Errorf("API reference lacks %q:\n%s", want, ref)
		}
	}
	conds, err := renderConditions(p, "api/v1")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| `Shiny` | [Widget](#conditions-of-widget) | `Shiny` is True when the widget shines. |",
		"| `Shiny` | [Dull](#reason-dull) |",
		"| <a id=\"reason-dull\"></a>`Dull` | Widget: `Shiny` | It does not &lt;shine&gt;. | Polish it. |",
	} {
		if !strings.Contains(conds, want) {
			t.Errorf("conditions lack %q:\n%s", want, conds)
		}
	}
}
