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

// renderWait is how long one Cluster of a namespace that has its share of renders running waits
// for one of them to end before its reconcile is deferred (RenderGate). Renders of the reference
// stack take milliseconds, so a full share is usually free again well within it, while a
// deferred reconcile comes back only after renderRetry.
const renderWait = 100 * time.Millisecond

// RenderGate bounds the values renders (render.Render) the process runs at once: at most Total
// in all, so that their memory stays within a budget however many workers the controller has,
// and at most PerNamespace for the Clusters of one namespace, so that one team's slow templates
// never hold the workers every team shares. When a namespace has its share running, one of its
// Clusters waits up to the gate's wait for a render of the namespace to end; the others, and
// that one once the wait runs out, do not wait in a worker: their reconciles come back after
// renderRetry (at deferredRenderPriority). So a namespace holds at most its share of workers
// rendering and one waiting, for a bounded time. A render waits for one of the Total slots
// (renders are bounded in time: render.Limits). A nil gate bounds nothing.
type RenderGate struct {
	slots        chan struct{}
	perNamespace int
	wait         time.Duration
	mu           sync.Mutex
	namespaces   map[string]*namespaceRenders
}

// namespaceRenders is a namespace's renders under way in a RenderGate.
type namespaceRenders struct {
	running int
	// waiting is true while one of the namespace's Clusters waits for a render of it to end.
	waiting bool
	// ended is closed (and dropped) when a render of the namespace ends; nil until a Cluster
	// waits for that.
	ended chan struct{}
}

// NewRenderGate makes a gate of total renders at once and perNamespace for one namespace (a
// value below 1 leaves that bound out), where one Cluster of a namespace at its share waits up
// to wait for a render of the namespace to end (0: none waits).
func NewRenderGate(total, perNamespace int, wait time.Duration) *RenderGate {
	g := &RenderGate{perNamespace: perNamespace, wait: wait, namespaces: map[string]*namespaceRenders{}}
	if total > 0 {
		g.slots = make(chan struct{}, total)
	}
	return g
}

// Acquire takes a render slot for a Cluster of namespace ns. ok is false, and nothing is taken,
// when ns has its share running (after the wait, when this Cluster is the one that waits); err
// is set when ctx ends while waiting. release gives the slot back.
func (g *RenderGate) Acquire(ctx context.Context, ns string) (release func(), ok bool, err error) {
	if g == nil {
		return func() {}, true, nil
	}
	if ok, err := g.acquireNamespace(ctx, ns); !ok || err != nil {
		return nil, false, err
	}
	done := func() { g.releaseNamespace(ns) }
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

// acquireNamespace counts a render of ns if ns is below its share, or becomes so within the
// wait for the one Cluster of ns that may wait.
func (g *RenderGate) acquireNamespace(ctx context.Context, ns string) (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := g.namespaces[ns]
	if n == nil {
		n = &namespaceRenders{}
		g.namespaces[ns] = n
	}
	if g.perNamespace > 0 && n.running >= g.perNamespace {
		if n.waiting || g.wait <= 0 {
			return false, nil
		}
		n.waiting = true
		timer := time.NewTimer(g.wait)
		for n.running >= g.perNamespace {
			if n.ended == nil {
				n.ended = make(chan struct{})
			}
			ended := n.ended
			g.mu.Unlock()
			over := false
			var err error
			select {
			case <-ended:
			case <-timer.C:
				over = true
			case <-ctx.Done():
				err = ctx.Err()
			}
			g.mu.Lock()
			if (over || err != nil) && n.running >= g.perNamespace {
				timer.Stop()
				n.waiting = false // the namespace's renders run: release forgets it
				return false, err
			}
		}
		timer.Stop()
		n.waiting = false
	}
	n.running++
	return true, nil
}

// releaseNamespace counts a render of ns as ended and tells the Cluster waiting, if any.
func (g *RenderGate) releaseNamespace(ns string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := g.namespaces[ns]
	n.running--
	if n.ended != nil {
		close(n.ended)
		n.ended = nil
	}
	g.forgetIdle(ns, n)
}

// forgetIdle drops ns from the gate when nothing of it runs or waits. The caller holds g.mu.
func (g *RenderGate) forgetIdle(ns string, n *namespaceRenders) {
	if n.running == 0 && !n.waiting {
		delete(g.namespaces, ns)
	}
}
