package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxstatus"
	csscheme "github.com/clusterstack-io/clusterstack-operator/internal/scheme"
	"github.com/clusterstack-io/clusterstack-operator/internal/testenv"
)

// TestUpdateStatusEmit writes a ClusterAddon's status on a real API server (bin/, built by `make
// tools`) and checks when Events are recorded: once, after the write that made the change
// succeeded; not for a retried attempt, a write that found nothing to change, a mutation that
// gave up or a write the API server refused. A conflicting writer's field survives the retry.
func TestUpdateStatusEmit(t *testing.T) {
	cfg := testenv.Start(t, testenv.CRDs{Operator: true})
	scheme := csscheme.New()
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	other, err := client.New(cfg, client.Options{Scheme: scheme}) // another controller
	if err != nil {
		t.Fatal(err)
	}
	w := newStatusWriter(c, nil)
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "status-write"}}); err != nil {
		t.Fatal(err)
	}
	addon := &csv1.ClusterAddon{ObjectMeta: metav1.ObjectMeta{Namespace: "status-write", Name: "c1"}, Spec: csv1.ClusterAddonSpec{ClusterName: "c1"}}
	if err := c.Create(ctx, addon); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(addon)
	rv := func() string {
		t.Helper()
		a := &csv1.ClusterAddon{}
		if err := c.Get(ctx, key, a); err != nil {
			t.Fatal(err)
		}
		return a.ResourceVersion
	}
	rec := record.NewFakeRecorder(16)
	recorded := func() []string {
		var out []string
		for {
			select {
			case e := <-rec.Events:
				out = append(out, e)
			default:
				return out
			}
		}
	}
	available := metav1.Condition{Type: csv1.AvailableCondition, Status: metav1.ConditionTrue, Reason: csv1.ReasonAsExpected, Message: "available"}

	t.Run("a change is written, then its Event recorded once", func(t *testing.T) {
		before := rv()
		attempts := 0
		err := updateStatusEmit(ctx, w, rec, &csv1.ClusterAddon{ObjectMeta: addon.ObjectMeta}, func(a *csv1.ClusterAddon) (bool, []statusEvent) {
			attempts++
			fluxstatus.SetCondition(&a.Status.Conditions, available)
			return true, []statusEvent{normalEvent("AvailableTrue", "available")}
		})
		if err != nil {
			t.Fatal(err)
		}
		if rv() == before {
			t.Error("nothing was written")
		}
		if got := recorded(); len(got) != 1 || got[0] != "Normal AvailableTrue available" || attempts != 1 {
			t.Errorf("events %q after %d attempts, want one after one", got, attempts)
		}
	})

	t.Run("nothing to change: no write and no Event, whatever mutate decided", func(t *testing.T) {
		before := rv()
		err := updateStatusEmit(ctx, w, rec, &csv1.ClusterAddon{ObjectMeta: addon.ObjectMeta}, func(a *csv1.ClusterAddon) (bool, []statusEvent) {
			fluxstatus.SetCondition(&a.Status.Conditions, available)
			return true, []statusEvent{normalEvent("AvailableTrue", "available")}
		})
		if err != nil {
			t.Fatal(err)
		}
		if after := rv(); after != before {
			t.Errorf("an unchanged status was written (resourceVersion %s -> %s)", before, after)
		}
		if got := recorded(); len(got) != 0 {
			t.Errorf("events %q for a write that did not happen", got)
		}
	})

	t.Run("a conflict: the retried attempt's Event only, the other writer's field kept", func(t *testing.T) {
		attempts := 0
		err := updateStatusEmit(ctx, w, rec, &csv1.ClusterAddon{ObjectMeta: addon.ObjectMeta}, func(a *csv1.ClusterAddon) (bool, []statusEvent) {
			attempts++
			if attempts == 1 {
				// Another controller writes its own field between our read and our write.
				cur := &csv1.ClusterAddon{}
				if err := other.Get(ctx, key, cur); err != nil {
					t.Fatal(err)
				}
				cur.Status.AvailableUpgrades = []string{"aws-base-1-36-v2"}
				if err := other.Status().Update(ctx, cur); err != nil {
					t.Fatal(err)
				}
			}
			a.Status.Progress = "1/1"
			return true, []statusEvent{normalEvent("Written", fmt.Sprintf("attempt %d", attempts))}
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := recorded(); len(got) != 1 || got[0] != "Normal Written attempt 2" {
			t.Errorf("events %q after %d attempts, want only attempt 2's", got, attempts)
		}
		a := &csv1.ClusterAddon{}
		if err := c.Get(ctx, key, a); err != nil {
			t.Fatal(err)
		}
		if a.Status.Progress != "1/1" || len(a.Status.AvailableUpgrades) != 1 {
			t.Errorf("progress %q, availableUpgrades %v: each writer's field must survive", a.Status.Progress, a.Status.AvailableUpgrades)
		}
	})

	t.Run("mutate gives up: errStaleStatus, no write, no Event", func(t *testing.T) {
		before := rv()
		err := updateStatusEmit(ctx, w, rec, &csv1.ClusterAddon{ObjectMeta: addon.ObjectMeta}, func(a *csv1.ClusterAddon) (bool, []statusEvent) {
			a.Status.Progress = "0/1"
			return false, []statusEvent{warningEvent("Stale", "stale")}
		})
		if !errors.Is(err, errStaleStatus) {
			t.Errorf("err = %v, want errStaleStatus", err)
		}
		if rv() != before {
			t.Error("a mutation that gave up was written")
		}
		if got := recorded(); len(got) != 0 {
			t.Errorf("events %q for a mutation that gave up", got)
		}
	})

	t.Run("the API server refuses the write: its error, no Event", func(t *testing.T) {
		err := updateStatusEmit(ctx, w, rec, &csv1.ClusterAddon{ObjectMeta: addon.ObjectMeta}, func(a *csv1.ClusterAddon) (bool, []statusEvent) {
			a.Status.Components = []csv1.AddonComponentStatus{{Name: "cni", Kind: csv1.ComponentKindHelm, Release: "r1", WaitingFor: strings.Repeat("x", 3000)}}
			return true, []statusEvent{warningEvent("Refused", "refused")}
		})
		if err == nil || !strings.Contains(err.Error(), "waitingFor") {
			t.Errorf("err = %v, want the API server's refusal of a waitingFor over 2048 characters", err)
		}
		if got := recorded(); len(got) != 0 {
			t.Errorf("events %q for a refused write", got)
		}
	})
}

// TestStatusDiffLoggable: the debug log of a status write diffs the whole object with go-cmp,
// which panics on unexported fields it cannot compare; none of the kinds with a status has one.
func TestStatusDiffLoggable(t *testing.T) {
	now := metav1.Now()
	meta := metav1.ObjectMeta{Name: "x", CreationTimestamp: now, DeletionTimestamp: &now, Finalizers: []string{"f"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m", Time: &now, FieldsV1: metav1.NewFieldsV1("{}")}}}
	conds := []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, LastTransitionTime: now}}
	for _, pair := range [][2]runtime.Object{
		{&csv1.ClusterAddon{ObjectMeta: meta}, &csv1.ClusterAddon{ObjectMeta: meta, Status: csv1.ClusterAddonStatus{Conditions: conds, LastAppliedTime: &now}}},
		{&csv1.ClusterStack{ObjectMeta: meta}, &csv1.ClusterStack{ObjectMeta: meta, Status: csv1.ClusterStackStatus{Conditions: conds}}},
		{&csv1.ClusterStackRelease{ObjectMeta: meta}, &csv1.ClusterStackRelease{ObjectMeta: meta, Status: csv1.ClusterStackReleaseStatus{Conditions: conds}}},
		{&csv1.ManagementOperator{ObjectMeta: meta, Spec: csv1.ManagementOperatorSpec{Chart: &csv1.OperatorChart{Values: &apiextensionsv1.JSON{Raw: []byte(`{"a":1}`)}}}},
			&csv1.ManagementOperator{ObjectMeta: meta, Status: csv1.ManagementOperatorStatus{Conditions: conds}}},
	} {
		if d := cmp.Diff(pair[0], pair[1]); d == "" {
			t.Errorf("%T: no diff between different statuses", pair[0])
		}
	}
}
