package render

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestParsedTemplateBoundPerRender: a template parsed once still runs each render within that
// render's own limits, also when renders with different limits run at the same time.
func TestParsedTemplateBoundPerRender(t *testing.T) {
	const tmpl = `v: {{ repeat 50 "ab" | upper }}`
	tight := Limits{MaxOutput: 64}
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			lim := Limits{}
			if i%2 == 1 {
				lim = tight
			}
			data, _, err := renderLimited(tmpl, lim)
			if i%2 == 1 {
				checkLimitError(t, err, "repeat", LimitSize)
				return
			}
			if err != nil {
				t.Errorf("render %d with the default limits: %v", i, err)
				return
			}
			if want := "v: " + strings.Repeat("AB", 50) + "\n"; data[HelmValuesKey("cni")] != want {
				t.Errorf("render %d: values %q, want %q", i, data[HelmValuesKey("cni")], want)
			}
		})
	}
	wg.Wait()
}

// TestParsedTemplateCalls: the functions bound for a template are those named in its text, and
// a function left unbound fails the render instead of running without limits.
func TestParsedTemplateCalls(t *testing.T) {
	p, err := parseTemplate("calls.yaml", `{{ "a" | upper | trim }}{{ define "x" }}{{ repeat 2 . }}{{ end }}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"upper", "trim", "repeat", outputFunc, tickFunc} {
		if !slices.Contains(p.calls, n) {
			t.Errorf("calls %v lack %q", p.calls, n)
		}
	}
	if slices.Contains(p.calls, "toYaml") {
		t.Errorf("calls %v hold toYaml, which the template does not name", p.calls)
	}

	// A function left unbound fails the render; a checked replacement of a builtin (printf)
	// does not fall back to the unchecked builtin.
	for _, text := range []string{`{{ "a" | upper }}`, `{{ printf "%s" "a" }}`} {
		p, err := parseTemplate("unbound.yaml", text)
		if err != nil {
			t.Fatal(err)
		}
		unbound := &parsedTemplate{t: p.t, calls: []string{outputFunc, tickFunc}}
		tmpl, err := unbound.bind(newBudget(Limits{}, time.Now()))
		if err != nil {
			t.Fatal(err)
		}
		w := &limitWriter{b: newBudget(Limits{}, time.Now())}
		if err := tmpl.Execute(w, nil); err == nil || len(w.buf) > 0 {
			t.Errorf("%s with its function unbound: printed %q, error %v; want an error and nothing printed", text, w.buf, err)
		}
	}
}

// TestParseCacheBounded: the cache of parsed templates starts over past maxParsed entries, and
// what it forgot parses again.
func TestParseCacheBounded(t *testing.T) {
	for i := range maxParsed + 10 {
		if _, err := parseTemplate("bounded.yaml", fmt.Sprintf("v: %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	parsed.Lock()
	n := len(parsed.m)
	parsed.Unlock()
	if n > maxParsed {
		t.Errorf("%d parsed templates kept, want at most %d", n, maxParsed)
	}
	data, err := Render(testInput(), []Component{{Name: "cni", Helm: true, File: "bounded.yaml", Template: "v: 0"}})
	if err != nil || data[HelmValuesKey("cni")] != "v: 0\n" {
		t.Errorf("render of a forgotten template: %q, %v", data[HelmValuesKey("cni")], err)
	}
}

// BenchmarkRender renders a values template that calls several functions: "parsed once" as
// the operator renders (the parse cache warm), "parsed every time" as before the cache (the
// cache emptied before each render). The ratio of the two is the figure.
func BenchmarkRender(b *testing.B) {
	comps := []Component{{Name: "cni", Helm: true, File: cniFile, Template: `
cluster: {{ .Cluster.metadata.name | quote }}
pods: {{ .Cluster.spec.clusterNetwork.pods.cidrBlocks | toYaml | nindent 2 }}
labels: {{ dict "a" (default "x" .Variables.region) "b" (.Release.Name | upper) | toYaml | nindent 2 }}
{{- range $i, $e := until 3 }}
item{{ $i }}: {{ printf "%s-%d" $.Release.Name $e | trunc 40 }}
{{- end }}`}}
	in := testInput()
	b.Run("parsed once", func(b *testing.B) {
		for b.Loop() {
			if _, err := Render(in, comps); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parsed every time", func(b *testing.B) {
		for b.Loop() {
			parsed.Lock()
			clear(parsed.m)
			parsed.Unlock()
			if _, err := Render(in, comps); err != nil {
				b.Fatal(err)
			}
		}
	})
}
