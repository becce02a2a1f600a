package controllers

import (
	"errors"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterstack-io/clusterstack-operator/internal/render"
)

// TestOutOfTime: only a render that ran out of its time limit is tried again by itself; every
// other failure, a limit or not, waits for its template or inputs to change.
func TestOutOfTime(t *testing.T) {
	in := render.Input{Cluster: map[string]any{"metadata": map[string]any{"name": "c1"}}}
	slow := render.Component{Name: "cni", Helm: true, File: "cluster-addon/cni/values.tpl",
		Template: "{{ range until 100000 }}{{ range until 1000 }}{{ end }}{{ end }}x: 1\n"}
	_, err := render.RenderWithLimits(in, []render.Component{slow}, render.Limits{Timeout: time.Millisecond})
	if err == nil || !outOfTime(err) {
		t.Fatalf("a render over its time limit: outOfTime false for %v", err)
	}
	big := render.Component{Name: "cni", Helm: true, File: "cluster-addon/cni/values.tpl", Template: `x: {{ repeat 2000 "a" }}` + "\n"}
	_, err = render.RenderWithLimits(in, []render.Component{big}, render.Limits{MaxOutput: 1000})
	if err == nil || !errors.Is(err, render.ErrLimitExceeded) || outOfTime(err) {
		t.Fatalf("a render over its output limit: want a limit error not out of time, got %v", err)
	}
	broken := render.Component{Name: "cni", Helm: true, File: "cluster-addon/cni/values.tpl", Template: "x: {{ .Nope.Nope }\n"}
	if _, err = render.Render(in, []render.Component{broken}); err == nil || outOfTime(err) {
		t.Fatalf("a template that does not parse: want an error not out of time, got %v", err)
	}
	if outOfTime(errors.New("rendering took longer than the limit")) {
		t.Fatal("outOfTime goes by the error's type, not its words")
	}
}

// TestRenderBackoff: each time-out in a row doubles the wait, up to its maximum; a Cluster's
// backoff is its own, and a render that succeeds ends it.
func TestRenderBackoff(t *testing.T) {
	var b renderBackoff
	a, c := client.ObjectKey{Namespace: "ns", Name: "a"}, client.ObjectKey{Namespace: "ns", Name: "c"}
	want := []time.Duration{renderAgainFirst, 2 * renderAgainFirst, 4 * renderAgainFirst}
	for i, w := range want {
		if got := b.next(a); got != w {
			t.Fatalf("time-out %d in a row: again after %v, want %v", i+1, got, w)
		}
	}
	if got := b.next(c); got != renderAgainFirst {
		t.Fatalf("another Cluster's first time-out: again after %v, want %v", got, renderAgainFirst)
	}
	for range 20 {
		b.next(a)
	}
	if got := b.next(a); got != renderAgainMax {
		t.Fatalf("after many time-outs: again after %v, want the maximum %v", got, renderAgainMax)
	}
	b.forget(a)
	if got := b.next(a); got != renderAgainFirst {
		t.Fatalf("after a render that succeeded: again after %v, want %v", got, renderAgainFirst)
	}
}
