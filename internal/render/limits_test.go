package render

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/Masterminds/sprig/v3"
)

// slack is how much longer than expected a render may take on a loaded machine (or under the
// race detector): still far from what an unbounded template takes (all memory, or forever).
const slack = 5 * time.Second * raceSlowdown

// renderLimited renders tmpl as the Helm component cni within lim, and returns how long it took
// and the error.
func renderLimited(tmpl string, lim Limits) (map[string]string, time.Duration, error) {
	start := time.Now()
	data, err := RenderWithLimits(testInput(), []Component{{Name: "cni", Helm: true, File: cniFile, Template: tmpl}}, lim)
	return data, time.Since(start), err
}

// checkLimitError fails t unless err is an *Error for the cni component wrapping a *LimitError
// of fn and limit that matches ErrLimitExceeded and whose message holds msgs.
func checkLimitError(t *testing.T, err error, fn, limit string, msgs ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want the %s limit", limit)
	}
	var rerr *Error
	if !errors.As(err, &rerr) || rerr.Component != "cni" || rerr.File != cniFile {
		t.Fatalf("error %v (%T) is not a *render.Error for component cni, file %s", err, err, cniFile)
	}
	if !errors.Is(err, ErrLimitExceeded) {
		t.Fatalf("error %v does not match ErrLimitExceeded", err)
	}
	var lerr *LimitError
	if !errors.As(err, &lerr) {
		t.Fatalf("error %v holds no *LimitError", err)
	}
	if lerr.Func != fn || lerr.Limit != limit {
		t.Errorf("LimitError names function %q, limit %q; want %q, %q (%v)", lerr.Func, lerr.Limit, fn, limit, err)
	}
	for _, m := range append([]string{"component cni: " + cniFile + ": "}, msgs...) {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("error %q does not contain %q", err.Error(), m)
		}
	}
}

// TestRenderLimits: each function that could allocate without bound, and the template's
// output, fail with a *LimitError naming the function and the limit, fast and without
// allocating what they were asked for.
func TestRenderLimits(t *testing.T) {
	const cyclic = `{{ $d := dict }}{{ $_ := set $d "self" $d }}`
	const shared = `{{ $x := dict }}{{ range until 60 }}{{ $x = dict "a" $x "b" $x }}{{ end }}`
	tests := []struct {
		name      string
		tmpl      string
		lim       Limits
		wantFunc  string
		wantLimit string
		wantMsg   []string
	}{
		{name: "repeat count", tmpl: `x: {{ "x" | repeat 2000000000 }}`, wantFunc: "repeat", wantLimit: LimitCount,
			wantMsg: []string{"function repeat: count 2000000000 exceeds the limit of 100000"}},
		{name: "repeat length", tmpl: `x: {{ repeat 100000 (repeat 100 "x") }}`, wantFunc: "repeat", wantLimit: LimitSize,
			wantMsg: []string{"function repeat: result of 10000000 bytes exceeds the limit of 512KiB"}},
		{name: "until", tmpl: `{{ range until 2000000000 }}{{ end }}`, wantFunc: "until", wantLimit: LimitCount,
			wantMsg: []string{"function until: count 2000000000 exceeds the limit of 100000"}},
		{name: "until negative", tmpl: `{{ range until -2000000000 }}{{ end }}`, wantFunc: "until", wantLimit: LimitCount,
			wantMsg: []string{"count 2000000000 exceeds"}},
		{name: "untilStep", tmpl: `{{ untilStep 0 2000000000 2 | len }}`, wantFunc: "untilStep", wantLimit: LimitCount,
			wantMsg: []string{"function untilStep: list length 1000000000 exceeds the limit of 100000"}},
		{name: "untilStep down", tmpl: `{{ untilStep 0 -9223372036854775807 -1 | len }}`, wantFunc: "untilStep", wantLimit: LimitCount,
			wantMsg: []string{"list length 9223372036854775807 exceeds"}},
		{name: "seq count", tmpl: `x: {{ seq 1 2000000000 }}`, wantFunc: "seq", wantLimit: LimitCount,
			wantMsg: []string{"function seq: list length 2000000000 exceeds the limit of 100000"}},
		{name: "seq length", tmpl: `x: {{ seq 100000 }}`, wantFunc: "seq", wantLimit: LimitSize,
			wantMsg: []string{"function seq: result of", "exceeds the limit of 512KiB"}},
		{name: "indent", tmpl: `x: {{ "a" | indent 2000000000 }}`, wantFunc: "indent", wantLimit: LimitSize,
			wantMsg: []string{"function indent: result of 2000000000 bytes exceeds the limit of 512KiB"}},
		{name: "nindent", tmpl: `x: {{ "a\nb" | nindent 300000 }}`, wantFunc: "nindent", wantLimit: LimitSize,
			wantMsg: []string{"function nindent: result of 600004 bytes exceeds the limit of 512KiB"}},
		{name: "replace", tmpl: `x: {{ replace "" (repeat 1000 "y") (repeat 1000 "x") }}`, wantFunc: "replace", wantLimit: LimitSize,
			wantMsg: []string{"function replace: result of 1002000 bytes"}},
		{name: "wrapWith", tmpl: `x: {{ wrapWith 1 (repeat 1000 "y") (repeat 1000 "x") }}`, wantFunc: "wrapWith", wantLimit: LimitSize,
			wantMsg: []string{"function wrapWith: result of 1001000 bytes"}},
		{name: "join separators", tmpl: `x: {{ join (repeat 100 "x") (until 10000) }}`, wantFunc: "join", wantLimit: LimitSize,
			wantMsg: []string{"function join: result of 999900 bytes"}},
		{name: "join of a huge list", tmpl: `x: {{ until 100000 | join "," }}`, wantFunc: "join", wantLimit: LimitSize,
			wantMsg: []string{"function join: arguments larger than the limit of 512KiB"}},
		{name: "splitList", tmpl: `x: {{ splitList "" (repeat 2 (repeat 60000 "x")) | len }}`, wantFunc: "splitList", wantLimit: LimitCount,
			wantMsg: []string{"function splitList: number of parts 120000 exceeds the limit of 100000"}},
		{name: "splitn", tmpl: `x: {{ splitn "," 200000 (repeat 2 (repeat 60000 ",")) | len }}`, wantFunc: "splitn", wantLimit: LimitCount,
			wantMsg: []string{"function splitn: number of parts 120001 exceeds"}},
		{name: "regexReplaceAll", tmpl: `x: {{ regexReplaceAll "" (repeat 1000 "x") (repeat 1000 "y") }}`, wantFunc: "regexReplaceAll", wantLimit: LimitSize,
			wantMsg: []string{"function regexReplaceAll: result of 1002000 bytes"}},
		{name: "regexReplaceAll expansion", tmpl: `x: {{ regexReplaceAll "(.*)" (repeat 1000 "x") (repeat 1000 "$1") }}`, wantFunc: "regexReplaceAll", wantLimit: LimitSize,
			wantMsg: []string{"function regexReplaceAll: result of"}},
		{name: "regexFindAll", tmpl: `x: {{ regexFindAll "x" (repeat 2 (repeat 60000 "x")) -1 | len }}`, wantFunc: "regexFindAll", wantLimit: LimitCount,
			wantMsg: []string{"function regexFindAll: result length 100001 exceeds the limit of 100000"}},
		{name: "concat doubling", tmpl: `{{ $x := list 1 }}{{ range until 20 }}{{ $x = concat $x $x }}{{ end }}`, wantFunc: "concat", wantLimit: LimitCount,
			wantMsg: []string{"function concat: result length 131072 exceeds the limit of 100000"}},
		{name: "printf star width", tmpl: `x: {{ printf "%*s" 1000000 "" }}`, wantFunc: "printf", wantLimit: LimitSize,
			wantMsg: []string{"function printf: result of", "exceeds the limit of 512KiB"}},
		{name: "printf width", tmpl: `x: {{ printf "%1000000s" "" }}`, wantFunc: "printf", wantLimit: LimitSize},
		{name: "printf width of every element", tmpl: `x: {{ printf "%1000v" (until 1000) }}`, wantFunc: "printf", wantLimit: LimitSize},
		{name: "printf argument index", tmpl: `x: {{ printf (repeat 2000 "%[1]s") (repeat 1000 "y") }}`, wantFunc: "printf", wantLimit: LimitSize},
		{name: "toJson result", tmpl: `x: {{ repeat 4 (repeat 100000 "<") | toJson }}`, wantFunc: "toJson", wantLimit: LimitSize,
			wantMsg: []string{"function toJson: result of 2400002 bytes exceeds the limit of 512KiB"}},
		{name: "print a value holding itself", tmpl: cyclic + `x: {{ $d }}`, wantLimit: LimitOutput,
			wantMsg: []string{"value to print larger than the output limit of 512KiB"}},
		{name: "toJson of a value holding itself", tmpl: cyclic + `x: {{ toJson $d }}`, wantFunc: "toJson", wantLimit: LimitSize,
			wantMsg: []string{"function toJson: arguments larger than the limit of 512KiB"}},
		{name: "merge a value holding itself", tmpl: cyclic + `x: {{ merge (dict) $d | len }}`, wantFunc: "merge", wantLimit: LimitSize},
		{name: "deepCopy a value holding itself", tmpl: cyclic + `x: {{ deepCopy $d | len }}`, wantFunc: "deepCopy", wantLimit: LimitSize},
		{name: "print a value shared on every level", tmpl: shared + `x: {{ $x }}`, wantLimit: LimitOutput},
		{name: "toYaml of a value shared on every level", tmpl: shared + `x: {{ toYaml $x }}`, wantFunc: "toYaml", wantLimit: LimitSize},
		{name: "int of a value shared on every level", tmpl: shared + `x: {{ int $x }}`, wantFunc: "int", wantLimit: LimitSize},
		{name: "printf of a value shared on every level", tmpl: shared + `x: {{ printf "%v" $x }}`, wantFunc: "printf", wantLimit: LimitSize},
		{name: "dict key shared on every level", tmpl: shared + `x: {{ dict $x 1 }}`, wantFunc: "dict", wantLimit: LimitSize,
			wantMsg: []string{"function dict: key larger than the limit of 512KiB"}},
		{name: "output", tmpl: `{{ range until 100000 }}xxxxxxxxxx{{ end }}`, wantLimit: LimitOutput,
			wantMsg: []string{"render template: template exceeded the output limit of 512KiB"}},
		{name: "output of a constant range", tmpl: `x: {{ range 1000000000 }}x{{ end }}`, wantLimit: LimitOutput},
		{name: "allocation kept in a dict", tmpl: `{{ $s := repeat 5 (repeat 100000 "x") }}{{ $d := dict }}{{ range $i := until 100000 }}{{ $_ := set $d (toString $i) (upper $s) }}{{ end }}`,
			wantFunc: "upper", wantLimit: LimitAlloc, wantMsg: []string{"function upper: the template functions allocated more than the limit of 64MiB"}},
		{name: "allocation of a growing list", tmpl: `{{ $l := list }}{{ range until 20000 }}{{ $l = append $l . }}{{ end }}`,
			wantFunc: "append", wantLimit: LimitAlloc},
		{name: "YAML aliases", lim: Limits{MaxTotalOutput: 10 << 10},
			tmpl:      "a: &a [" + strings.Repeat(`"xxxxxxxxxx",`, 1000) + "]\nb: [" + strings.Repeat("*a,", 10) + "]\n",
			wantLimit: LimitOutput, wantMsg: []string{"rendered values (YAML aliases expanded) exceed the limit of 40KiB"}},
		{name: "MaxCount", lim: Limits{MaxCount: 10}, tmpl: `{{ until 11 }}`, wantFunc: "until", wantLimit: LimitCount,
			wantMsg: []string{"count 11 exceeds the limit of 10"}},
		{name: "MaxOutput of a function", lim: Limits{MaxOutput: 100}, tmpl: `{{ repeat 101 "y" }}`, wantFunc: "repeat", wantLimit: LimitSize,
			wantMsg: []string{"result of 101 bytes exceeds the limit of 100 bytes"}},
		{name: "MaxOutput of the template", lim: Limits{MaxOutput: 100}, tmpl: strings.Repeat("y", 101), wantLimit: LimitOutput,
			wantMsg: []string{"template exceeded the output limit of 100 bytes"}},
		{name: "MaxAlloc", lim: Limits{MaxAlloc: 1000}, tmpl: `{{ range until 10 }}{{ $_ := repeat 100 "y" }}{{ end }}`, wantFunc: "repeat", wantLimit: LimitAlloc,
			wantMsg: []string{"allocated more than the limit of 1000 bytes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lim := tt.lim
			if lim.Timeout == 0 {
				// Not the limit under test (TestRenderDeadline's): out of the way on a loaded
				// machine, where the default 2s can run out first. took is checked below.
				lim.Timeout = time.Minute
			}
			data, took, err := renderLimited(tt.tmpl, lim)
			if data != nil {
				t.Errorf("data returned with the error")
			}
			checkLimitError(t, err, tt.wantFunc, tt.wantLimit, tt.wantMsg...)
			if took > slack {
				t.Errorf("took %v to hit the limit", took)
			}
		})
	}
}

// TestRenderTotalOutput: the ConfigMap data of all components is capped; the component that
// takes it past the limit is named.
func TestRenderTotalOutput(t *testing.T) {
	big := func(key string) string { return key + `: {{ repeat 5 (repeat 100000 "x") }}` }
	components := []Component{
		{Name: "a", File: "cluster-addon/a/overwrite.yaml", Template: big("a")},
		{Name: "cni", Helm: true, File: cniFile, Template: big("b")},
	}
	if _, err := Render(testInput(), components[:1]); err != nil {
		t.Fatalf("one component of 500000 bytes: %v", err)
	}
	data, err := Render(testInput(), components)
	if data != nil {
		t.Errorf("data returned with the error")
	}
	checkLimitError(t, err, "", LimitTotalOutput, "exceeds the limit of 900KiB")
	_, err = RenderWithLimits(testInput(), components, Limits{MaxTotalOutput: 2 << 20})
	if err != nil {
		t.Errorf("with MaxTotalOutput 2MiB: %v", err)
	}
}

// TestRenderDeadline: a template that loops without end stops at the deadline, whether its
// loop calls functions, prints, or neither.
func TestRenderDeadline(t *testing.T) {
	const timeout = 100 * time.Millisecond
	tests := []struct {
		name     string
		tmpl     string
		wantFunc string
	}{
		{name: "nested range over a list", tmpl: `{{ $l := until 1000 }}{{ range $l }}{{ range $l }}{{ range $l }}{{ end }}{{ end }}{{ end }}`},
		{name: "nested range over until", tmpl: `{{ range until 1000 }}{{ range until 1000 }}{{ range until 1000 }}{{ end }}{{ end }}{{ end }}`},
		{name: "range over a number", tmpl: `{{ range 1000000000000 }}{{ end }}`},
		{name: "recursion without functions", tmpl: `{{ define "x" }}{{ range . }}{{ template "x" . }}{{ template "x" . }}{{ end }}{{ end }}` +
			`{{ $x := list }}{{ range until 60 }}{{ $x = list $x }}{{ end }}{{ template "x" $x }}`},
		{name: "uniq of a long list", tmpl: `x: {{ uniq (until 100000) | len }}`},
		{name: "printing loop", tmpl: `{{ $l := until 1000 }}{{ range $l }}{{ range $l }}{{ range $l }}{{ "" }}{{ end }}{{ end }}{{ end }}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, took, err := renderLimited(tt.tmpl, Limits{Timeout: timeout})
			checkLimitError(t, err, tt.wantFunc, LimitTime, "rendering took longer than the limit of 100ms")
			if took < timeout || took > timeout+slack {
				t.Errorf("took %v with a timeout of %v", took, timeout)
			}
		})
	}
	t.Run("default timeout", func(t *testing.T) {
		start := time.Now()
		_, err := Render(testInput(), []Component{{Name: "cni", Helm: true, File: cniFile,
			Template: `{{ $l := until 100000 }}{{ range $l }}{{ range $l }}{{ end }}{{ end }}`}})
		took := time.Since(start)
		checkLimitError(t, err, "", LimitTime, "rendering took longer than the limit of 2s")
		if took < DefaultTimeout || took > DefaultTimeout+slack {
			t.Errorf("took %v with the default timeout of %v", took, DefaultTimeout)
		}
	})
}

// TestRenderWithinLimits: templates up to the limits render as before.
func TestRenderWithinLimits(t *testing.T) {
	tests := []struct {
		name string
		tmpl string
		want map[string]string
	}{
		{name: "repeat at the count limit", tmpl: `x: {{ repeat 100000 "x" | len }}`, want: map[string]string{"x": "100000"}},
		{name: "string of 500000 bytes", tmpl: `x: {{ repeat 5 (repeat 100000 "x") | len }}`, want: map[string]string{"x": "500000"}},
		{name: "until at the limit", tmpl: `x: {{ until 100000 | len }}`, want: map[string]string{"x": "100000"}},
		{name: "untilStep near the largest int", tmpl: `x: {{ untilStep 9223372036854775800 9223372036854775807 10 | first | toString | quote }}`, want: map[string]string{"x": "9223372036854775800"}},
		{name: "printf widths", tmpl: `x: "{{ printf "%-6s|%6.2f|%*d|%[1]s" "ab" 3.14159 4 7 }}"`, want: map[string]string{"x": "ab    |  3.14|   7|ab"}},
		{name: "toJson and toYaml", tmpl: "x: {{ .Cluster.metadata.labels | toJson | quote }}\nyml: {{ .Cluster.metadata.labels | toYaml | quote }}",
			want: map[string]string{"x": `{"cost-center":"42","env":"prod","team":"a"}`, "yml": "cost-center: \"42\"\nenv: prod\nteam: a"}},
		{name: "set, merge and print a dict", tmpl: `{{ $d := dict "a" 1 }}{{ $_ := set $d "b" 2 }}{{ $_ := merge $d (dict "c" 3) }}x: "{{ $d }}"`,
			want: map[string]string{"x": "map[a:1 b:2 c:3]"}},
		{name: "a value shared on a few levels", tmpl: `{{ $x := dict "v" 1 }}{{ range until 5 }}{{ $x = dict "a" $x "b" $x }}{{ end }}x: {{ $x | toJson | len }}`,
			want: map[string]string{"x": "565"}},
		{name: "a dict holding itself, not printed", tmpl: `{{ $d := dict }}{{ $_ := set $d "self" $d }}x: {{ hasKey $d "self" }}`,
			want: map[string]string{"x": "true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RenderWithLimits(testInput(), []Component{{Name: "cluster-info", File: infoFile, Template: tt.tmpl}}, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

// TestFuncMapCaps: FuncMap's functions check the per-call caps outside Render too.
func TestFuncMapCaps(t *testing.T) {
	repeat, ok := FuncMap()["repeat"].(func(int, string) (string, error))
	if !ok {
		t.Fatalf("FuncMap()[repeat] is %T", FuncMap()["repeat"])
	}
	_, err := repeat(2000000000, "x")
	var lerr *LimitError
	if !errors.As(err, &lerr) || !errors.Is(err, ErrLimitExceeded) || err.Error() != "function repeat: count 2000000000 exceeds the limit of 100000" {
		t.Errorf("repeat 2000000000: %v", err)
	}
	if s, err := repeat(3, "ab"); s != "ababab" || err != nil {
		t.Errorf("repeat 3 ab = %q, %v", s, err)
	}
}

// TestErrorMessageBounded: a template's own error message (fail, required) is cut in the
// *Error's message, so that it fits a status condition.
func TestErrorMessageBounded(t *testing.T) {
	_, err := Render(testInput(), []Component{{Name: "cni", Helm: true, File: cniFile, Template: `{{ fail (repeat 100000 "x") }}`}})
	if err == nil {
		t.Fatal("no error")
	}
	if msg := err.Error(); len(msg) > maxErrorCause+200 || !strings.Contains(msg, "bytes more)") {
		t.Errorf("message of %d bytes: %.300s", len(msg), msg)
	}
	var rerr *Error
	if !errors.As(err, &rerr) || len(rerr.Err.Error()) < 100000 {
		t.Errorf("the cause is cut, not just the message")
	}
}

// TestCappedFunctionsMatch: the capped replacements of sprig's and text/template's functions
// give what the originals give, errors included.
func TestCappedFunctionsMatch(t *testing.T) {
	templates := []string{
		`{{ until 5 }}`, `{{ until -5 }}`, `{{ until 0 }}`,
		`{{ untilStep 0 10 3 }}`, `{{ untilStep 10 0 -3 }}`, `{{ untilStep 0 10 -1 }}`, `{{ untilStep 10 0 1 }}`, `{{ untilStep 3 3 1 }}`, `{{ untilStep 0 10 0 }}`,
		`{{ seq 5 }}`, `{{ seq -3 }}`, `{{ seq 0 }}`, `{{ seq 1 }}`, `{{ seq 2 8 }}`, `{{ seq 8 2 }}`, `{{ seq 0 3 10 }}`, `{{ seq 10 -3 0 }}`,
		`{{ seq 10 3 0 }}`, `{{ seq 0 -3 10 }}`, `{{ seq }}`, `{{ seq 1 2 3 4 }}`,
		`{{ repeat 3 "ab" }}`, `{{ repeat 0 "ab" }}`, `{{ repeat -1 "ab" }}`,
		`{{ "a\nb" | indent 2 }}`, `{{ "a\nb" | nindent 4 }}`, `{{ "" | indent 3 }}`, `{{ "a" | indent -1 }}`, `{{ "a" | nindent 0 }}`,
		`{{ replace "a" "bb" "banana" }}`, `{{ replace "" "-" "héllo" }}`, `{{ replace "x" "" "xax" }}`,
		`{{ wrapWith 5 "<br>" "The quick brown fox jumps over" }}`, `{{ wrapWith 0 "" "abc def" }}`, `{{ wrapWith 3 "|" "abcdefgh ij" }}`, `{{ wrap 3 "abc def ghi" }}`,
		`{{ list 1 "a" nil | join "," }}`, `{{ join "," "single" }}`, `{{ join "," (list) }}`, `{{ join "-" (splitList "," "a,b") }}`,
		`{{ split "," "a,b,c" }}`, `{{ splitList "" "héllo" }}`, `{{ splitList "," "" }}`, `{{ splitn "," 2 "a,b,c" }}`, `{{ splitn "," 0 "a,b" }}`, `{{ splitn "," -1 "a,b" }}`,
		`{{ regexReplaceAll "a(x*)b" "-ab-axxb-" "${1}W" }}`, `{{ regexReplaceAllLiteral "a(x*)b" "-ab-axxb-" "${1}" }}`,
		`{{ mustRegexReplaceAll "a(x*)b" "-ab-axxb-" "$1W" }}`, `{{ mustRegexReplaceAllLiteral "a" "banana" "$" }}`, `{{ mustRegexReplaceAll "(" "x" "y" }}`,
		`{{ regexFindAll "a." "paranormal" -1 }}`, `{{ regexFindAll "a." "paranormal" 2 }}`, `{{ regexFindAll "a." "paranormal" 0 }}`, `{{ mustRegexFindAll "a." "paranormal" -1 }}`,
		`{{ regexSplit "a" "banana" -1 }}`, `{{ regexSplit "a" "banana" 2 }}`, `{{ mustRegexSplit "a" "banana" 0 }}`,
		`{{ uniq (list 1 1 2 "a" "a" (list 1) (list 1)) }}`, `{{ mustUniq (list 3 3) }}`, `{{ uniq 1 }}`,
		`{{ dict "a" 1 "b" }}`, `{{ dict 1 2 }}`, `{{ $d := dict }}{{ $_ := set $d "k" "v" }}{{ $d }}`,
		`{{ merge (dict "a" 1) (dict "a" 2 "b" 3) }}`, `{{ mergeOverwrite (dict "a" 1) (dict "a" 2 "b" 3) }}`,
		`{{ mustMerge (dict "a" (dict "x" 1)) (dict "a" (dict "y" 2)) }}`, `{{ mustMergeOverwrite (dict) (dict "a" 1) }}`,
		`{{ printf "%5.2f|%-4s|%[1]v|%*d" 3.14159 "ab" 3 7 }}`, `{{ printf "%d %d" 1 }}`, `{{ printf "%d" 1 2 }}`, `{{ printf "%!" }}`,
		`{{ print 1 "a" nil }}`, `{{ println 1 2 }}`, `{{ html "<a>" }}`, `{{ js "'x'" }}`, `{{ urlquery "a b&c" }}`,
		`{{ toJson (dict "a" (list 1 2)) }}`, `{{ toString (list 1 2) }}`, `{{ cat "a" 1 nil (list 2) }}`, `{{ quote "a" 1 }}`,
	}
	for _, text := range templates {
		t.Run(text, func(t *testing.T) {
			want, wantErr := execute(sprig.TxtFuncMap(), text, nil)
			got, gotErr := execute(FuncMap(), text, nil)
			if (wantErr != nil) != (gotErr != nil) || got != want {
				t.Errorf("got %q, %v; sprig and text/template give %q, %v", got, gotErr, want, wantErr)
			}
		})
	}
}

func execute(f template.FuncMap, text string, data any) (string, error) {
	t, err := template.New("main").Funcs(f).Parse(text)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	err = t.Execute(&b, data)
	return b.String(), err
}

type ptrStringer struct{ s string }

func (p *ptrStringer) String() string { return "ptr:" + p.s }

// TestInstrumentedOutput: a template's parse tree instrumented for the limits prints what the
// template prints without.
func TestInstrumentedOutput(t *testing.T) {
	n := 7
	data := map[string]any{
		"str": "s", "num": 3, "float": 1.5, "list": []any{1, "a", nil}, "map": map[string]any{"a": 1, "b": []any{}},
		"nilval": nil, "ptr": &n, "nilptr": (*int)(nil), "time": time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC),
		"err": errors.New("boom"), "structs": []ptrStringer{{"a"}, {"b"}}, "fn": func() {}, "bytes": []byte("ab"),
	}
	templates := []string{
		`{{ .missing }}`, `{{ .nilval }}`, `{{ .str }}`, `{{ .num }}`, `{{ .float }}`, `{{ .list }}`, `{{ .map }}`, `{{ .ptr }}`, `{{ .nilptr }}`,
		`{{ .time }}`, `{{ .err }}`, `{{ .bytes }}`, `{{ 'a' }}`, `{{ 1.5 }}`, `{{ 1i }}`, `{{ true }}`, `{{ . | len }}`, `{{ .map.missing }}`,
		`{{ index .structs 0 }}`, `{{ range .structs }}{{ . }}{{ end }}`, `{{ $x := 1 }}{{ $x }}`, `{{ $x := 1 }}{{ $x = 2 }}{{ $x }}`,
		`{{ range $i, $e := .list }}{{ $i }}={{ $e }};{{ else }}none{{ end }}`, `{{ range .nothing }}x{{ else }}none{{ end }}`,
		`{{ with .map }}{{ .a }}{{ else with .str }}{{ . }}{{ end }}`, `{{ if .str }}{{ .str | upper }}{{ else }}no{{ end }}`,
		`{{ define "t" }}[{{ . }}]{{ end }}{{ template "t" .str }}{{ block "b" .num }}<{{ . }}>{{ end }}`,
		"{{- .str -}}  \n {{- .num }} {{/* c */}} x", `{{ range 3 }}{{ if eq . 1 }}{{ continue }}{{ end }}{{ . }}{{ if eq . 1 }}{{ break }}{{ end }}{{ end }}`,
		`{{ .fn }}`, `{{ .str.x }}`, `{{ printf "%v" .map }}`,
	}
	for _, text := range templates {
		t.Run(text, func(t *testing.T) {
			want, wantErr := execute(FuncMap(), text, data)
			p, err := parseTemplate("main", text)
			if err != nil {
				t.Fatal(err)
			}
			tmpl, err := p.bind(newBudget(Limits{}, time.Now()))
			if err != nil {
				t.Fatal(err)
			}
			w := &limitWriter{b: newBudget(Limits{}, time.Now())}
			gotErr := tmpl.Execute(w, data)
			if got := string(w.buf); (wantErr != nil) != (gotErr != nil) || got != want {
				t.Errorf("got %q, %v; want %q, %v", got, gotErr, want, wantErr)
			}
		})
	}
}

// TestPrintfSize: the bound of printf's output is at least the output, up to the factor of
// the verbs that escape (%q, %x), and not much more for the common formats.
func TestPrintfSize(t *testing.T) {
	big := strings.Repeat("y", 1000)
	tests := []struct {
		format string
		args   []any
	}{
		{"%s", []any{big}}, {"%d %s %d", []any{1, big, 2}}, {"%*s", []any{300, "x"}}, {"%-*s", []any{-300, "x"}},
		{"%[2]*[1]d", []any{1, 500}}, {"%[3]*.[2]*[1]f", []any{12.0, 2, 6}}, {"%.300f", []any{1.0}}, {"%300v", []any{[]int{1, 2, 3}}},
		{"%v", []any{map[string]any{"a": []any{1, "b"}}}}, {"%d", []any{1, 2, 3}}, {"%[5]d %d", []any{1, 2}}, {"%[1]s%[1]s%[1]s", []any{big}},
		{"%", nil}, {"%!", nil}, {"%d", nil}, {"%[x]d", []any{1}}, {"%[2]3d", []any{1, 2}}, {"%.*d", []any{-5, 1}}, {"%*d", []any{"x", 1}},
		{"%10.5[1]s", []any{big}}, {"%#v", []any{[]any{1, "a"}}}, {"%q", []any{big}}, {"%x", []any{big}},
		// fmt checks a width or precision written out for "too large" (over 1e6) before each
		// digit, so it takes up to 10,000,009; one from an argument up to 1e6.
		{"%9000000A", []any{21, 408}}, {"%.10000009d", []any{1}}, {"%10000010d", []any{1}}, {"%1000000d", []any{1}},
		{"%*d", []any{1000000, 1}}, {"%*d", []any{1000001, 1}},
	}
	for _, tt := range tests {
		out := fmt.Sprintf(tt.format, tt.args...)
		size := printfSize(tt.format, tt.args, 1<<30)
		if 6*size < len(out) {
			t.Errorf("printfSize(%q) = %d, output has %d bytes", tt.format, size, len(out))
		}
		if len(out) > 100 && size > 4*len(out)+200 {
			t.Errorf("printfSize(%q) = %d for an output of %d bytes", tt.format, size, len(out))
		}
	}
}
