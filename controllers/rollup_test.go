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

// TestRollupPacerCountsOnly: a roll-up write that changes only counts waits for countsEvery
// after the last write; one that changes a condition's status or reason, or another fact, does
// not.
func TestRollupPacerCountsOnly(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const every = 10 * time.Second
	p := &rollupPacer{now: func() time.Time { return now }, countsEvery: every}
	key := client.ObjectKey{Namespace: "ns", Name: "stack"}
	conds := func(status metav1.ConditionStatus, reason, msg string) []metav1.Condition {
		return []metav1.Condition{
			{Type: csv1.AvailableCondition, Status: status, Reason: reason, Message: msg},
			{Type: csv1.DegradedCondition, Status: metav1.ConditionFalse, Reason: "AsExpected"},
		}
	}
	was := conds(metav1.ConditionFalse, "FluxObjectNotReady", "only 3/10 clusters are")
	counts := conds(metav1.ConditionFalse, "FluxObjectNotReady", "only 4/10 clusters are")

	if d := p.countsOnly(key, countsPacedFrom, 0, was, counts, true); d != 0 {
		t.Errorf("never written: wait %s, want 0", d)
	}
	p.wrote(key)
	now = now.Add(3 * time.Second)
	if d := p.wait(key); d != 0 {
		t.Errorf("past RollupInterval: wait %s, want 0", d)
	}
	if d := p.countsOnly(key, countsPacedFrom, 0, was, counts, true); d != every-3*time.Second {
		t.Errorf("counts only, 3s after a write: wait %s, want %s", d, every-3*time.Second)
	}
	for name, after := range map[string][]metav1.Condition{
		"a condition's status": conds(metav1.ConditionTrue, "AsExpected", "10/10"),
		"a condition's reason": conds(metav1.ConditionFalse, "Reconciling", "only 4/10 clusters are"),
		"a condition more":     append(counts, metav1.Condition{Type: csv1.UpgradeableCondition, Status: metav1.ConditionTrue, Reason: "AsExpected"}),
		"a condition's generation": func() []metav1.Condition {
			c := conds(metav1.ConditionFalse, "FluxObjectNotReady", "only 4/10 clusters are")
			c[0].ObservedGeneration = 2
			return c
		}(),
	} {
		if d := p.countsOnly(key, countsPacedFrom, 0, was, after, true); d != 0 {
			t.Errorf("%s changed: wait %s, want 0", name, d)
		}
	}
	if d := p.countsOnly(key, countsPacedFrom, 0, was, counts, false); d != 0 {
		t.Errorf("another fact changed: wait %s, want 0", d)
	}
	if d := p.countsOnly(key, countsPacedFrom-1, 0, was, counts, true); d != 0 {
		t.Errorf("a roll-up of fewer than %d Clusters: wait %s, want 0", countsPacedFrom, d)
	}
	// A fleet whose ClusterAddons have no status yet, as when the operator starts on it, is as
	// large as its namespace's ClusterAddons; the interval is its own counts'.
	if d := p.countsOnly(key, 15, 1000, was, counts, true); d != every-3*time.Second {
		t.Errorf("counts only of 15 Clusters of a namespace of 1000 ClusterAddons, 3s after a write: wait %s, want %s", d, every-3*time.Second)
	}
	if d := p.countsOnly(key, 15, countsPacedFrom-1, was, counts, true); d != 0 {
		t.Errorf("a namespace of fewer than %d ClusterAddons: wait %s, want 0", countsPacedFrom, d)
	}
	// A larger fleet's counts wait longer: 30 ms a Cluster, at most a minute.
	for clusters, want := range map[int32]time.Duration{1000: 30 * time.Second, 2000: time.Minute, 100000: time.Minute} {
		if d := p.countsOnly(key, clusters, 0, was, counts, true); d != want-3*time.Second {
			t.Errorf("counts only of %d Clusters, 3s after a write: wait %s, want %s", clusters, d, want-3*time.Second)
		}
	}
	now = now.Add(every - 3*time.Second)
	if d := p.countsOnly(key, countsPacedFrom, 0, was, counts, true); d != 0 {
		t.Errorf("countsEvery after the write: wait %s, want 0", d)
	}
	if d := p.countsOnly(key, 1000, 0, was, counts, true); d != 20*time.Second {
		t.Errorf("counts only of 1000 Clusters, countsEvery after a write: wait %s, want 20s", d)
	}
	now = now.Add(countsEveryMost)
	if d := p.wait(key); d != 0 || len(p.last) != 0 {
		t.Errorf("past every interval: wait %s, want 0, and the key forgotten: %v", d, p.last)
	}
	if d := (&rollupPacer{}).countsInterval(100000); d != 0 {
		t.Errorf("counts not paced (countsEvery 0): interval %s, want 0", d)
	}
}
