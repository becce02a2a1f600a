package controllers

import (
	"context"
	"sync"
	"time"
)

// Defaults of --max-concurrent-renders and --max-concurrent-renders-per-namespace. One render
// may have its template functions allocate up to render.DefaultMaxAlloc (64 MiB) per component,
// so four at once stay within a quarter of the 1 GiB config/manager gives the manager, whatever
// --concurrent is; two per namespace leave the others to the other teams.
const (
	DefaultMaxConcurrentRenders             = 4
	DefaultMaxConcurrentRendersPerNamespace = 2
)

// renderRetry is how soon a Cluster whose namespace has its share of renders running is
// reconciled again.
const renderRetry = time.Second

// RenderGate bounds the values renders (render.Render) the process runs at once: at most Total
// in all, so that their memory stays within a budget however many workers the controller has,
// and at most PerNamespace for the Clusters of one namespace, so that one team's slow templates
// never hold the workers every team shares. A Cluster whose namespace has its share running
// does not wait in a worker: its reconcile comes back after renderRetry. A render waits for one
// of the Total slots (renders are bounded in time: render.Limits). A nil gate bounds nothing.
type RenderGate struct {
	slots        chan struct{}
	perNamespace int
	mu           sync.Mutex
	busy         map[string]int
}

// NewRenderGate makes a gate of total renders at once and perNamespace for one namespace; a
// value below 1 leaves that bound out.
func NewRenderGate(total, perNamespace int) *RenderGate {
	g := &RenderGate{perNamespace: perNamespace, busy: map[string]int{}}
	if total > 0 {
		g.slots = make(chan struct{}, total)
	}
	return g
}

// Acquire takes a render slot for a Cluster of namespace ns. ok is false, and nothing is taken,
// when ns has its share running; err is set when ctx ends while waiting for a slot of the
// process. release gives the slot back.
func (g *RenderGate) Acquire(ctx context.Context, ns string) (release func(), ok bool, err error) {
	if g == nil {
		return func() {}, true, nil
	}
	g.mu.Lock()
	if g.perNamespace > 0 && g.busy[ns] >= g.perNamespace {
		g.mu.Unlock()
		return nil, false, nil
	}
	g.busy[ns]++
	g.mu.Unlock()
	done := func() {
		g.mu.Lock()
		if g.busy[ns]--; g.busy[ns] == 0 {
			delete(g.busy, ns)
		}
		g.mu.Unlock()
	}
	if g.slots == nil {
		return done, true, nil
	}
	select {
	case g.slots <- struct{}{}:
		return func() { <-g.slots; done() }, true, nil
	case <-ctx.Done():
		done()
		return nil, false, ctx.Err()
	}
}
