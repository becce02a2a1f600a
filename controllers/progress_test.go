package controllers

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

func TestProgressPacer(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	p := &progressPacer{now: func() time.Time { return now }}
	key := client.ObjectKey{Namespace: "ns", Name: "c1"}
	progressing := func(msg string) *csv1.ClusterAddonStatus {
		return &csv1.ClusterAddonStatus{Conditions: []metav1.Condition{
			{Type: csv1.ProgressingCondition, Status: metav1.ConditionTrue, Reason: "Progressing", Message: msg},
			{Type: csv1.AvailableCondition, Status: metav1.ConditionFalse, Reason: "Progressing"},
		}}
	}
	available := &csv1.ClusterAddonStatus{Conditions: []metav1.Condition{
		{Type: csv1.ProgressingCondition, Status: metav1.ConditionFalse, Reason: "AsExpected"},
		{Type: csv1.AvailableCondition, Status: metav1.ConditionTrue, Reason: "AsExpected"},
	}}
	a, b, c := progressing("waiting for cni, csi"), progressing("waiting for csi"), progressing("waiting for csi: install in progress")

	if d := p.hold(key, 0, a, b); d != 0 {
		t.Fatalf("interval 0: held %s", d)
	}
	if d := p.hold(key, 2*time.Second, a, b); d != 2*time.Second {
		t.Fatalf("first progress change: held %s, want 2s", d)
	}
	now = now.Add(500 * time.Millisecond)
	if d := p.hold(key, 2*time.Second, a, c); d != 1500*time.Millisecond {
		t.Fatalf("a later progress change within the interval: held %s, want the 1.5s left of the first", d)
	}
	if d := p.hold(client.ObjectKey{Namespace: "ns", Name: "c2"}, 2*time.Second, a, b); d != 2*time.Second {
		t.Fatalf("another ClusterAddon: held %s, want its own 2s", d)
	}
	if d := p.hold(key, 2*time.Second, b, available); d != 0 {
		t.Fatalf("Available: held %s, want written at once", d)
	}
	now = now.Add(1500 * time.Millisecond)
	if d := p.hold(key, 2*time.Second, a, c); d != 0 {
		t.Fatalf("the interval is over: held %s, want written now", d)
	}
	p.done(key)
	if d := p.hold(key, 2*time.Second, c, b); d != 2*time.Second {
		t.Fatalf("after the write, the next progress change: held %s, want a new 2s", d)
	}

	// A first status held whole: its facts are known while it is held, and forgotten after.
	first := progressing("installing")
	first.Conditions = append(first.Conditions, metav1.Condition{Type: csv1.WorkloadClusterReadyCondition, Status: metav1.ConditionTrue, Reason: csv1.ReasonAsExpected})
	newKey := client.ObjectKey{Namespace: "ns", Name: "new"}
	if p.heldKubeconfigSeen(newKey) {
		t.Fatal("nothing held: kubeconfig seen")
	}
	if d := p.hold(newKey, 2*time.Second, &csv1.ClusterAddonStatus{}, first); d != 2*time.Second {
		t.Fatalf("a new ClusterAddon's first status: held %s, want 2s", d)
	}
	if !p.heldKubeconfigSeen(newKey) {
		t.Fatal("held first status with WorkloadClusterReady True: kubeconfig not seen")
	}
	p.done(newKey)
	if p.heldKubeconfigSeen(newKey) {
		t.Fatal("written: kubeconfig still seen from what was held")
	}
}

// TestProgressPacerNextStepWait: the time a ClusterAddon waits in the queue for its next
// component, from when the Flux object it waits for is Ready (nextStepReady) until the reconcile
// holds the write again, does not count against the interval; the time before it and after it
// does, and without it the interval runs out as before.
func TestProgressPacerNextStepWait(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	p := &progressPacer{now: func() time.Time { return now }}
	installing, waiting := &csv1.ClusterAddonStatus{}, &csv1.ClusterAddonStatus{Conditions: []metav1.Condition{
		{Type: csv1.ProgressingCondition, Status: metav1.ConditionTrue, Reason: "Progressing", Message: "waiting for cni"},
		{Type: csv1.AvailableCondition, Status: metav1.ConditionFalse, Reason: "Progressing"},
	}}
	const interval = 10 * time.Second
	key, other, none := client.ObjectKey{Namespace: "ns", Name: "c1"}, client.ObjectKey{Namespace: "ns", Name: "c2"}, client.ObjectKey{Namespace: "ns", Name: "c3"}

	p.nextStepReady(none) // nothing held: nothing to note
	for _, k := range []client.ObjectKey{key, other} {
		if d := p.hold(k, interval, installing, waiting); d != interval {
			t.Fatalf("%s: first progress change held %s, want %s", k.Name, d, interval)
		}
	}
	now = now.Add(2 * time.Second)
	p.nextStepReady(key)
	now = now.Add(time.Second)
	p.nextStepReady(key) // already noted: the first counts
	now = now.Add(27 * time.Second)
	if d := p.hold(key, interval, installing, waiting); d != 8*time.Second {
		t.Fatalf("after 28s in the queue: held %s, want the 8s left before the wait", d)
	}
	if d := p.hold(other, interval, installing, waiting); d != 0 {
		t.Fatalf("no next component waited: held %s, want due", d)
	}
	now = now.Add(5 * time.Second)
	if d := p.hold(key, interval, installing, waiting); d != 3*time.Second {
		t.Fatalf("5s later, no new wait: held %s, want 3s", d)
	}
	now = now.Add(3 * time.Second)
	if d := p.hold(key, interval, installing, waiting); d != 0 {
		t.Fatalf("the rest of the interval over: held %s, want due", d)
	}
	if d := p.hold(none, interval, installing, waiting); d != interval {
		t.Fatalf("noted with nothing held, then held: %s, want a whole interval", d)
	}
}
