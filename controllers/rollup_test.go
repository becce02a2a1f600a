package controllers

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

func TestRollupPacer(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := &rollupPacer{now: func() time.Time { return now }}
	stack, other := client.ObjectKey{Namespace: "ns", Name: "stack"}, client.ObjectKey{Namespace: "ns", Name: "other"}

	if d := p.wait(stack); d != 0 {
		t.Fatalf("never written: wait %s, want 0", d)
	}
	p.wrote(stack)
	if d := p.wait(stack); d != RollupInterval {
		t.Errorf("just written: wait %s, want %s", d, RollupInterval)
	}
	if d := p.wait(other); d != 0 {
		t.Errorf("another object is not held by this one's write: wait %s", d)
	}
	now = now.Add(RollupInterval / 4)
	if d := p.wait(stack); d != RollupInterval*3/4 {
		t.Errorf("a quarter of the interval later: wait %s, want %s", d, RollupInterval*3/4)
	}
	now = now.Add(RollupInterval)
	if d := p.wait(stack); d != 0 {
		t.Errorf("after the interval: wait %s, want 0", d)
	}
	if len(p.last) != 0 {
		t.Errorf("a key past its interval is forgotten: %v", p.last)
	}
}

func TestRollupPacerTracksWrites(t *testing.T) {
	p := &rollupPacer{}
	key := client.ObjectKey{Namespace: "ns", Name: "stack"}
	obj := &csv1.ClusterStack{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "stack", ResourceVersion: "1"}}
	p.track(key, obj)()
	if d := p.wait(key); d != 0 {
		t.Errorf("nothing written: wait %s, want 0", d)
	}
	done := p.track(key, obj)
	obj.ResourceVersion = "2" // the status write
	done()
	if d := p.wait(key); d <= 0 {
		t.Errorf("written: wait %s, want > 0", d)
	}
}
