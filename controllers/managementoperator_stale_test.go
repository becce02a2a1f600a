package controllers

import (
	"context"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxstatus"
	"github.com/clusterstack-io/clusterstack-operator/internal/opgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/opstatus"
	csscheme "github.com/clusterstack-io/clusterstack-operator/internal/scheme"
	"github.com/clusterstack-io/clusterstack-operator/internal/testenv"
)

// TestManagementOperatorStatusFromReReadObject: a reconcile that read the ManagementOperator
// before this process's last status write landed in the cache (seen on the plane right after an
// operator restart) computes the status from the object as re-read for the write, so what that
// write recorded (the delivered version, the completed history entry) is not taken back when
// Flux starts a routine reconcile of the Kustomization. A spec changed since is left to the next
// reconcile.
func TestManagementOperatorStatusFromReReadObject(t *testing.T) {
	cfg := testenv.Start(t, testenv.CRDs{Operator: true})
	c, err := client.New(cfg, client.Options{Scheme: csscheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	now := time.Now().Truncate(time.Second)
	op := &csv1.ManagementOperator{
		ObjectMeta: metav1.ObjectMeta{Name: "infra"},
		Spec: csv1.ManagementOperatorSpec{
			Component: csv1.OperatorComponent{Type: csv1.InfrastructureProvider, Name: "infra"},
			Version:   "v1.1.0",
			Source:    csv1.OperatorSource{Git: &csv1.OperatorGitSource{URL: "https://git.example.com/infra.git", Path: "config"}},
		},
	}
	if err := c.Create(ctx, op); err != nil {
		t.Fatal(err)
	}
	// What the reconcile read: v1.0.0 delivered, v1.1.0 rolling out, the Kustomization unhealthy.
	op.Status = csv1.ManagementOperatorStatus{
		Versions:       []csv1.OperandVersion{{Name: csv1.OperatorVersionName, Version: "v1.0.0"}},
		DesiredVersion: "v1.1.0",
		History: []csv1.OperatorHistoryEntry{
			{Version: "v1.1.0", State: csv1.UpdatePartial, StartedTime: metav1.NewTime(now.Add(-time.Minute))},
			{Version: "v1.0.0", State: csv1.UpdateCompleted, StartedTime: metav1.NewTime(now.Add(-time.Hour)), CompletionTime: ptr.To(metav1.NewTime(now.Add(-time.Hour)))},
		},
		Unhealthy: []csv1.UnhealthyObject{{Object: "Kustomization/" + opgen.ObjectName("infra"), Since: metav1.NewTime(now.Add(-time.Minute))}},
	}
	if err := c.Status().Update(ctx, op); err != nil {
		t.Fatal(err)
	}
	stale := op.DeepCopy()
	// The write the cache has not shown yet: v1.1.0 delivered.
	op.Status.Versions[0].Version = "v1.1.0"
	op.Status.History[0].State, op.Status.History[0].CompletionTime = csv1.UpdateCompleted, ptr.To(metav1.NewTime(now))
	op.Status.Unhealthy = nil
	if err := c.Status().Update(ctx, op); err != nil {
		t.Fatal(err)
	}

	r := &ManagementOperatorReconciler{Client: c, writer: newStatusWriter(c, nil), Recorder: record.NewFakeRecorder(16), Namespace: "mgmt",
		Options: StatusOptions{Grace: 5 * time.Minute}}
	routine := fluxstatus.ObjectState{Kind: "Kustomization", Name: opgen.ObjectName("infra"), Exists: true, Current: true,
		Ready: metav1.ConditionUnknown, Reason: meta.ProgressingReason, Message: "Reconciliation in progress",
		Revision: "v1.1.0@sha1:0123456789abcdef0123456789abcdef01234567", ExpectedRevision: "v1.1.0"}
	scope := func(from *csv1.ManagementOperator) *opScope {
		s := &opScope{op: from.DeepCopy(), requiredBy: []string{"team/aws-base-1-36-v1"}, objects: []fluxstatus.ObjectState{routine}}
		s.decision = opstatus.Decide(s.op, nil)
		return s
	}
	get := func() *csv1.ManagementOperator {
		t.Helper()
		got := &csv1.ManagementOperator{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(op), got); err != nil {
			t.Fatal(err)
		}
		return got
	}

	if _, err := r.writeStatus(ctx, scope(stale)); err != nil {
		t.Fatal(err)
	}
	got := get()
	if v := got.DeliveredVersion(); v != "v1.1.0" {
		t.Errorf("versions[operator] = %q after a status computed from the stale read, want v1.1.0 kept", v)
	}
	if h := got.Status.History[0]; h.Version != "v1.1.0" || h.State != csv1.UpdateCompleted {
		t.Errorf("history[0] = %s %s, want v1.1.0 Completed kept", h.Version, h.State)
	}

	// The spec moved on since the read: nothing is written, the next reconcile computes it.
	moved := got.DeepCopy()
	moved.Spec.Version = "v1.2.0"
	if err := c.Update(ctx, moved); err != nil {
		t.Fatal(err)
	}
	before := get().ResourceVersion
	res, err := r.writeStatus(ctx, scope(got))
	if err != nil || res.RequeueAfter == 0 {
		t.Errorf("writeStatus for an older generation = %+v, %v; want a requeue and no error", res, err)
	}
	if after := get(); after.ResourceVersion != before || after.Status.DesiredVersion != "v1.1.0" {
		t.Errorf("a status computed for an older spec was written (desiredVersion %q)", after.Status.DesiredVersion)
	}
}
