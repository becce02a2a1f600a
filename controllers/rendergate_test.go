package controllers

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestRenderGate: a namespace has at most its share of renders at once and is told so without
// waiting; the process has at most its total, for which a render waits until a slot is free or
// its context ends; released slots are reused; a nil gate bounds nothing.
func TestRenderGate(t *testing.T) {
	ctx := context.Background()
	g := NewRenderGate(3, 2, 0)
	var releases []func()
	take := func(ns string) bool {
		t.Helper()
		bounded, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		rel, ok, err := g.Acquire(bounded, ns)
		if err != nil {
			t.Fatalf("%s waited for a render slot: %v", ns, err)
		}
		if ok {
			releases = append(releases, rel)
		}
		return ok
	}
	for i := range 2 {
		if !take("team-a") {
			t.Fatalf("team-a could not start its render %d of 2", i+1)
		}
	}
	if take("team-a") {
		t.Error("team-a got a third render at once: one team's templates would hold the workers every team shares")
	}
	if !take("team-b") {
		t.Fatal("team-b could not start a render while team-a had its share running")
	}

	// The process is at its total: team-c waits, until its context ends...
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, ok, err := g.Acquire(short, "team-c"); ok || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("beyond the total: ok %v, err %v; want a wait that ends with the context", ok, err)
	}
	// ... or until a slot is free.
	got := make(chan bool)
	go func() {
		rel, ok, _ := g.Acquire(ctx, "team-c")
		if ok {
			rel()
		}
		got <- ok
	}()
	select {
	case <-got:
		t.Fatal("team-c rendered beyond the process's total")
	case <-time.After(100 * time.Millisecond):
	}
	releases[0]() // a render of team-a ends
	if !<-got {
		t.Error("team-c did not get the freed slot")
	}
	if !take("team-a") {
		t.Error("team-a did not get its share back after a render ended")
	}

	var none *RenderGate
	for range 100 {
		if _, ok, err := none.Acquire(ctx, "team-a"); !ok || err != nil {
			t.Fatal("a nil gate bounded a render")
		}
	}
}

// TestRenderGateWait: when a namespace has its share running, one of its Clusters waits for a
// render of the namespace to end and then renders, rather than being deferred behind everything
// queued meanwhile; a second one does not wait; the wait is bounded, and ends with its context.
func TestRenderGateWait(t *testing.T) {
	ctx := context.Background()
	g := NewRenderGate(0, 2, time.Minute)
	var releases []func()
	for i := range 2 {
		rel, ok, err := g.Acquire(ctx, "team-a")
		if !ok || err != nil {
			t.Fatalf("team-a's render %d of 2: ok %v, err %v", i+1, ok, err)
		}
		releases = append(releases, rel)
	}

	type result struct {
		ok  bool
		err error
	}
	waiter := make(chan result)
	go func() {
		rel, ok, err := g.Acquire(ctx, "team-a")
		if ok {
			defer rel()
		}
		waiter <- result{ok, err}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		g.mu.Lock()
		waiting := g.namespaces["team-a"].waiting
		g.mu.Unlock()
		if waiting {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the third Cluster of team-a did not wait for the namespace's share")
		}
		time.Sleep(time.Millisecond)
	}
	// A fourth is told at once while the third waits.
	start := time.Now()
	if _, ok, err := g.Acquire(ctx, "team-a"); err != nil || ok {
		t.Fatalf("a second Cluster beyond team-a's share: ok %v, err %v; want deferred at once", ok, err)
	}
	if waited := time.Since(start); waited > time.Second {
		t.Fatalf("a second Cluster beyond team-a's share waited %s", waited)
	}
	// Other namespaces are not held up by team-a's waiter.
	rel, ok, err := g.Acquire(ctx, "team-b")
	if !ok || err != nil {
		t.Fatalf("team-b while team-a waits: ok %v, err %v", ok, err)
	}
	rel()
	select {
	case r := <-waiter:
		t.Fatalf("the waiting Cluster returned (ok %v, err %v) before a render of its namespace ended", r.ok, r.err)
	case <-time.After(50 * time.Millisecond):
	}
	releases[0]()
	select {
	case r := <-waiter:
		if !r.ok || r.err != nil {
			t.Fatalf("the waiting Cluster after a render of its namespace ended: ok %v, err %v; want it to render", r.ok, r.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting Cluster did not take the share a render of its namespace freed")
	}

	// The wait is bounded: with the share still full it ends deferred, without an error...
	short := NewRenderGate(0, 1, 20*time.Millisecond)
	hold, _, _ := short.Acquire(ctx, "team-a")
	start = time.Now()
	if _, ok, err := short.Acquire(ctx, "team-a"); ok || err != nil {
		t.Fatalf("after the wait, with the share still full: ok %v, err %v; want deferred", ok, err)
	}
	if waited := time.Since(start); waited < 20*time.Millisecond {
		t.Fatalf("deferred after %s: want a wait of the gate's 20ms first", waited)
	}
	// ... and with its context.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, ok, err := short.Acquire(cancelled, "team-a"); ok || !errors.Is(err, context.Canceled) {
		t.Fatalf("waiting with an ended context: ok %v, err %v", ok, err)
	}
	hold()
	short.mu.Lock()
	left := len(short.namespaces)
	short.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d namespaces kept by the gate with nothing running or waiting", left)
	}
}
