package plane

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
)

// balancerDialTimeout bounds the connection to one backend.
const balancerDialTimeout = time.Second

// tcpBalancer forwards each connection it accepts to one of its backends, as a Service's
// virtual IP does for its Pods: the backends in turn, skipping those that refuse the
// connection (a stopped or killed operator replica). Bytes are copied as they are (TLS passes
// through: each backend serves the same certificate). When no backend accepts, the connection
// is closed.
type tcpBalancer struct {
	ln       net.Listener
	backends []string
	log      logr.Logger
	next     atomic.Uint64

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// startBalancer listens on addr and forwards to backends (host:port each).
func startBalancer(addr string, backends []string, log logr.Logger) (*tcpBalancer, error) {
	if len(backends) == 0 {
		return nil, errors.New("balancer: no backends")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("balancer: listen on %s: %w", addr, err)
	}
	b := &tcpBalancer{ln: ln, backends: backends, log: log, conns: map[net.Conn]struct{}{}}
	b.wg.Add(1)
	go b.serve()
	return b, nil
}

// Addr is the address the balancer listens on.
func (b *tcpBalancer) Addr() string { return b.ln.Addr().String() }

func (b *tcpBalancer) serve() {
	defer b.wg.Done()
	for {
		c, err := b.ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				b.log.Error(err, "balancer: accept")
			}
			return
		}
		if !b.track(c) {
			_ = c.Close()
			return
		}
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			defer b.untrack(c)
			b.forward(c)
		}()
	}
}

// dial connects to the first backend that accepts, starting with the next one in turn.
func (b *tcpBalancer) dial() (net.Conn, error) {
	start := int(b.next.Add(1) - 1)
	var errs []error
	for i := range b.backends {
		addr := b.backends[(start+i)%len(b.backends)]
		c, err := net.DialTimeout("tcp", addr, balancerDialTimeout)
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("no backend accepts: %w", errors.Join(errs...))
}

func (b *tcpBalancer) forward(client net.Conn) {
	backend, err := b.dial()
	if err != nil {
		b.log.V(1).Info("balancer: closing a connection", "reason", err.Error())
		return
	}
	if !b.track(backend) {
		_ = backend.Close()
		return
	}
	defer b.untrack(backend)
	// When either side is done, so is the connection (HTTP clients and servers do not
	// half-close): closing both ends the other copy.
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(backend, client)
	go pipe(client, backend)
	<-done
	_ = client.Close()
	_ = backend.Close()
	<-done
}

// track registers c so that Close ends it; false once the balancer is closed.
func (b *tcpBalancer) track(c net.Conn) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.conns[c] = struct{}{}
	return true
}

func (b *tcpBalancer) untrack(c net.Conn) {
	b.mu.Lock()
	delete(b.conns, c)
	b.mu.Unlock()
	_ = c.Close()
}

// Close stops listening, ends the connections in flight and waits for its goroutines. It is
// idempotent.
func (b *tcpBalancer) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	err := b.ln.Close()
	for c := range b.conns {
		_ = c.Close()
	}
	b.mu.Unlock()
	b.wg.Wait()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("balancer: close: %w", err)
	}
	return nil
}
