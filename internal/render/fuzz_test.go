package render

import (
	"errors"
	"flag"
	"fmt"
	"reflect"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// Bounds of one Render in FuzzRender, for two components: generous, so that they hold on a
// loaded machine (and under the race detector), and far below what an unbounded template takes
// (all memory, forever).
const fuzzMaxHeapGrowth = 1 << 30

// fuzzMaxRenderTime is 5s, ten times that under the race detector, and four times that while
// fuzzing (-fuzz): the binary then counts coverage and runs a worker per core, and the slowest
// seed (YAML aliases that expand past the limit, about 1.5s alone) took 5.3s on a loaded 2-core
// machine.
func fuzzMaxRenderTime() time.Duration {
	d := 5 * time.Second * raceSlowdown
	if f := flag.Lookup("test.fuzz"); f != nil && f.Value.String() != "" {
		d *= 4
	}
	return d
}

// FuzzRender renders arbitrary templates as a Helm or a kustomize component, next to a fixed
// component. Whatever the template, Render must not panic; it fails with a *Error naming the
// component and file, or returns valid Flux variable names, Helm values that parse as a YAML map,
// the same data when rendered again, and leaves its input alone. Either way it returns within
// fuzzMaxRenderTime, its heap grows by less than fuzzMaxHeapGrowth meanwhile, and the data it
// returns is within the default limits; a limit hit is a *LimitError.
//
//	go test ./internal/render -run='^$' -fuzz=FuzzRender -fuzztime=60s
func FuzzRender(f *testing.F) {
	seeds := []string{
		"",
		"a: b\n",
		scsCilium,
		referenceCNI,
		scsOldStyle,
		"infra:\n  region: \"{{ .InfraCluster.spec.externalNetwork.id }}\"\n",
		"{{ range $k, $v := .Variables }}{{ $k }}: {{ $v | toJson }}\n{{ end }}",
		"{{- with .Cluster.spec.clusterNetwork.services }}\nsvc: {{ index .cidrBlocks 0 }}\n{{- end }}\n",
		"oidc:\n  {{- .Variables.oidc_config | toYaml | nindent 2 }}\n",
		"x: {{ required \"need it\" .Variables.nope }}\n",
		"labels: {{ keys .Cluster.metadata.labels | sortAlpha | join \",\" | quote }}\n",
		"d: {{ date \"2006\" 0 }}\n",
		"helm_values:\n  cni: x\ncluster:\n  name: y\n",
		"a-b: 1\na_b: 2\n",
		"{{ define \"x\" }}{{ template \"x\" . }}{{ end }}{{ template \"x\" . }}",
		// broken ones
		"{{ .Cluster.metadata.name ",
		"{{ end }}",
		"{{ env \"HOME\" }}",
		"{{ now }}",
		"- a\n- b\n",
		"a: [b\n",
		"x: {{ .Cluster.spec.controlPlaneEndpoint.hostname }}\n",
		"{{ fail \"no\" }}",
		"x: {{ index .Cluster.spec.clusterNetwork.pods.cidrBlocks 9 }}\n",
		"\t\t: :",
		"x: {{ printf \"%v\" nil }}\n",
		// hostile: each would take all memory or run without end if unbounded (more, that run
		// into the deadline, in TestRenderDeadline: each such seed takes the 2s of the default)
		"x: {{ \"x\" | repeat 2000000000 }}\n",
		"x: {{ repeat 100000 (repeat 100000 \"x\") }}\n",
		"x: {{ until 2000000000 | len }}\n",
		"x: {{ untilStep 0 2000000000 1 | len }}\n",
		"x: {{ untilStep 9223372036854775800 9223372036854775807 10 }}\n",
		"x: {{ seq 1 2000000000 }}\n",
		"x: {{ \"a\" | indent 2000000000 }}\n",
		"x: {{ \"a\\nb\" | nindent 300000 }}\n",
		"{{ range until 10000 }}{{ range until 10000 }}{{ range until 10000 }}{{ end }}{{ end }}{{ end }}",
		"x: {{ range 1000000000 }}xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx{{ end }}",
		"x: {{ printf \"%*s\" 1000000 \"\" }}\n",
		"x: {{ printf \"%1000000s%1000000s\" \"\" \"\" }}\n",
		"x: {{ printf \"%1000v\" (until 100000) }}\n",
		"x: {{ printf (repeat 50000 \"%[1]v\") (repeat 500 \"y\") }}\n",
		"x: {{ join (repeat 5000 \"x\") (until 100000) }}\n",
		"x: {{ replace \"\" (repeat 1000 \"y\") (repeat 1000 \"x\") }}\n",
		"x: {{ regexReplaceAll \"(.*)\" (repeat 1000 \"x\") (repeat 1000 \"$1\") }}\n",
		"x: {{ wrapWith 1 (repeat 1000 \"y\") (repeat 1000 \"x\") }}\n",
		"x: {{ splitList \"\" (repeat 5 (repeat 100000 \"x\")) | len }}\n",
		"x: {{ splitn \",\" 2000000000 \"a,b\" }}\n",
		"x: {{ regexFindAll \"\" (repeat 5 (repeat 100000 \"x\")) -1 | len }}\n",
		"x: {{ concat (until 1000) (until 1000) | uniq | len }}\n",
		"{{ $x := list 1 }}{{ range until 40 }}{{ $x = concat $x $x }}{{ end }}x: {{ len $x }}\n",
		"{{ $d := dict }}{{ $_ := set $d \"a\" $d }}x: {{ $d }}\n",
		"{{ $d := dict }}{{ $_ := set $d \"a\" $d }}x: {{ merge $d $d | toJson }}\n",
		"{{ $x := dict }}{{ range until 60 }}{{ $x = dict \"a\" $x \"b\" $x }}{{ end }}x: {{ $x | toYaml }}\n",
		"{{ $x := list }}{{ range until 60 }}{{ $x = list $x $x }}{{ end }}x: {{ deepCopy $x | len }}\n",
		"{{ $s := repeat 5 (repeat 100000 \"x\") }}{{ $d := dict }}{{ range $i := until 100000 }}{{ $_ := set $d (toString $i) (upper $s) }}{{ end }}",
		"{{ $l := list }}{{ range until 100000 }}{{ $l = append $l . }}{{ end }}x: {{ len $l }}\n",
		"a: &a [" + strings.Repeat("\"xxxxxxxxxx\",", 20000) + "]\nb: [" + strings.Repeat("*a,", 20) + "]\n",
		"x: {{ fail (repeat 5 (repeat 100000 \"x\")) }}\n",
	}
	for _, s := range seeds {
		f.Add(s, true)
		f.Add(s, false)
	}
	pristine := testInput()
	f.Fuzz(func(t *testing.T, tmpl string, helm bool) {
		in := testInput()
		components := []Component{
			{Name: "fuzz", Helm: helm, Template: tmpl, File: "cluster-addon/fuzz/overwrite.yaml"},
			{Name: "cluster-info", Template: "infra:\n  region: \"{{ .InfraCluster.spec.externalNetwork.id }}\"\n", File: infoFile},
		}
		var data map[string]string
		var err error
		took, heap := measureRender(func() { data, err = Render(in, components) })
		if took > fuzzMaxRenderTime() || heap > fuzzMaxHeapGrowth {
			t.Fatalf("Render took %v and grew the heap by %d MiB; error: %.300v", took, heap>>20, err)
		}
		if !reflect.DeepEqual(in, pristine) {
			t.Fatalf("Render modified its input")
		}
		if errors.Is(err, ErrLimitExceeded) {
			var lerr *LimitError
			if !errors.As(err, &lerr) || lerr.Detail == "" {
				t.Fatalf("limit error %v holds no *LimitError with a detail", err)
			}
			switch lerr.Limit {
			case LimitTime, LimitOutput, LimitTotalOutput, LimitSize, LimitCount, LimitAlloc:
			default:
				t.Fatalf("limit error %v names the unknown limit %q", err, lerr.Limit)
			}
		}
		if err != nil {
			var rerr *Error
			if !errors.As(err, &rerr) {
				t.Fatalf("error %v (%T) is not a *render.Error", err, err)
			}
			if rerr.Component == "" || rerr.File == "" || rerr.Err == nil || rerr.Err.Error() == "" {
				t.Fatalf("error %#v lacks component, file or cause", rerr)
			}
			if data != nil {
				t.Fatalf("data returned with an error")
			}
			return
		}
		total := 0
		for k, v := range data {
			if !varNameRE.MatchString(k) {
				t.Fatalf("key %q is no valid Flux variable name", k)
			}
			total += len(k) + len(v)
		}
		if total > DefaultMaxTotalOutput {
			t.Fatalf("data of %d bytes exceeds the limit of %d", total, DefaultMaxTotalOutput)
		}
		if helm {
			v, ok := data["helm_values_fuzz"]
			if !ok {
				t.Fatalf("no Helm values for the Helm component")
			}
			var m map[string]any
			if err := yaml.Unmarshal([]byte(v), &m); err != nil {
				t.Fatalf("Helm values %q do not parse as a YAML map: %v", v, err)
			}
		}
		for k, v := range BaseVariables(in) {
			if data[k] != v {
				t.Fatalf("variable %s = %q, want the base variable %q", k, data[k], v)
			}
		}
		if data["infra_region"] != "ext-net" {
			t.Fatalf("the other component's variable infra_region = %q", data["infra_region"])
		}
		again, err := Render(testInput(), components)
		if lerr := (*LimitError)(nil); errors.As(err, &lerr) && lerr.Limit == LimitTime {
			return // the first render finished just in time
		}
		if err != nil {
			t.Fatalf("second render failed: %v", err)
		}
		if !reflect.DeepEqual(data, again) {
			t.Fatalf("rendering twice gave different data:\n%v\n%v", data, again)
		}
	})
}

// measureRender runs render and returns how long it took and by how much the heap's objects
// grew at most meanwhile (sampled every few milliseconds).
func measureRender(render func()) (time.Duration, uint64) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	heap := func() uint64 {
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return sample[0].Value.Uint64()
	}
	base := heap()
	var peak atomic.Uint64
	peak.Store(base)
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if h := heap(); h > peak.Load() {
					peak.Store(h)
				}
			}
		}
	}()
	start := time.Now()
	render()
	took := time.Since(start)
	close(done)
	<-stopped
	if h := heap(); h > peak.Load() {
		peak.Store(h)
	}
	return took, peak.Load() - base
}

// FuzzPrintfSize: the bound printf checks before it formats is at least the length of what
// fmt.Sprintf makes, up to the factor of verbs that escape or spell out (%q, %x, %b, %U).
//
//	go test ./internal/render -run='^$' -fuzz=FuzzPrintfSize -fuzztime=30s
func FuzzPrintfSize(f *testing.F) {
	f.Add("%s", 1, 2, "abc")
	f.Add("%*s", 300, 2, "x")
	f.Add("%[2]*[1]d", 1, 500, "")
	f.Add("%[3]*.[2]*[1]f|%v|%[1]q", 12, 2, "s")
	f.Add("%-*d%#v%x %[5]d %[x] %.*%", -20, 7, "\xff\u2028")
	f.Add("%10.5[1]s%!%%[1]*d", 1, 2, "yy")
	f.Fuzz(func(t *testing.T, format string, a, b int, s string) {
		args := []any{a, b, s, []any{a, s, map[string]any{"k": b}}}
		size := printfSize(format, args, 1<<20)
		if size > 1<<20 {
			return // printf refuses it: no need to make it
		}
		out := fmt.Sprintf(format, args...)
		if len(out) > 8*size {
			t.Fatalf("printfSize(%q) = %d, but the output has %d bytes", format, size, len(out))
		}
	})
}
