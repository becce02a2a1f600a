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
	g := NewRenderGate(3, 2)
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
