package fieldowners

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const owner = "clusterstack-operator"

var now = metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))

func entry(manager string, op metav1.ManagedFieldsOperationType, subresource, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, APIVersion: "helm.toolkit.fluxcd.io/v2", FieldsType: "FieldsV1",
		Subresource: subresource, FieldsV1: metav1.NewFieldsV1(fields)}
}

// fields decodes an entry's FieldsV1 for comparison (key order and spacing aside).
func fields(t *testing.T, e metav1.ManagedFieldsEntry) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(e.FieldsV1.GetRawBytes(), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestClaim: the operator's domain (spec but spec.suspend, data, labels, annotations but Flux's
// reconcile requests) is taken from other managers into the operator's Apply entry; their
// finalizers, status and suspend stay theirs; nothing moves when nobody else owns such a field.
func TestClaim(t *testing.T) {
	ours := entry(owner, metav1.ManagedFieldsOperationApply, "", `{"f:metadata":{"f:labels":{"f:app.kubernetes.io/managed-by":{}}},"f:spec":{"f:interval":{}}}`)
	in := []metav1.ManagedFieldsEntry{
		ours,
		// A tenant's kubectl: a post-renderer, a Flux shard label, a suspend.
		entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, "", `{"f:metadata":{"f:labels":{"f:sharding.fluxcd.io/key":{}}},"f:spec":{"f:postRenderers":{},"f:suspend":{}}}`),
		// Flux: its finalizer and a reconcile request; its status.
		entry("helm-controller", metav1.ManagedFieldsOperationUpdate, "", `{"f:metadata":{"f:finalizers":{".":{},"v:\"finalizers.fluxcd.io\"":{}}}}`),
		entry("flux", metav1.ManagedFieldsOperationUpdate, "", `{"f:metadata":{"f:annotations":{".":{},"f:reconcile.fluxcd.io/requestedAt":{}}}}`),
		entry("helm-controller", metav1.ManagedFieldsOperationUpdate, "status", `{"f:status":{"f:conditions":{}}}`),
	}
	out, from, err := Claim(in, owner, "helm.toolkit.fluxcd.io/v2", now)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"kubectl-edit"}, from); diff != "" {
		t.Errorf("claimed from (-want +got):\n%s", diff)
	}
	if len(out) != 5 {
		t.Fatalf("%d entries, want 5: %+v", len(out), out)
	}
	want := map[string]any{
		"f:metadata": map[string]any{"f:labels": map[string]any{"f:app.kubernetes.io/managed-by": map[string]any{}, "f:sharding.fluxcd.io/key": map[string]any{}}},
		"f:spec":     map[string]any{"f:interval": map[string]any{}, "f:postRenderers": map[string]any{}},
	}
	if diff := cmp.Diff(want, fields(t, out[0])); diff != "" {
		t.Errorf("the operator's entry (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"f:spec": map[string]any{"f:suspend": map[string]any{}}}, fields(t, out[1])); diff != "" || out[1].Manager != "kubectl-edit" {
		t.Errorf("kubectl-edit keeps spec.suspend only (-want +got):\n%s", diff)
	}
	for i := 2; i < 5; i++ {
		if diff := cmp.Diff(in[i], out[i]); diff != "" {
			t.Errorf("entry of %s changed (-want +got):\n%s", in[i].Manager, diff)
		}
	}

	// Nothing of the domain owned by others: nothing moves.
	calm := []metav1.ManagedFieldsEntry{ours, in[2], in[3], in[4]}
	if out, from, err := Claim(calm, owner, "helm.toolkit.fluxcd.io/v2", now); err != nil || len(from) != 0 || len(out) != 4 {
		t.Errorf("nothing to claim: %d entries, claimed from %v, %v", len(out), from, err)
	}
}

// TestClaimAdoption: an object someone else created (and labelled as the operator's): the
// operator gets an Apply entry with every data key and label the creator owned; the creator
// keeps only the maps themselves.
func TestClaimAdoption(t *testing.T) {
	created := entry("kubectl-create", metav1.ManagedFieldsOperationUpdate, "", `{"f:data":{".":{},"f:values.yaml":{},"f:injected":{}},"f:metadata":{"f:labels":{".":{},"f:app.kubernetes.io/managed-by":{}}}}`)
	out, from, err := Claim([]metav1.ManagedFieldsEntry{created}, owner, "v1", now)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || out[1].Manager != owner || out[1].Operation != metav1.ManagedFieldsOperationApply || out[1].APIVersion != "v1" ||
		out[1].Time == nil || !out[1].Time.Equal(&now) || len(from) != 1 {
		t.Fatalf("adopted: %+v, claimed from %v", out, from)
	}
	want := map[string]any{
		"f:data":     map[string]any{"f:values.yaml": map[string]any{}, "f:injected": map[string]any{}},
		"f:metadata": map[string]any{"f:labels": map[string]any{"f:app.kubernetes.io/managed-by": map[string]any{}}},
	}
	if diff := cmp.Diff(want, fields(t, out[1])); diff != "" {
		t.Errorf("the operator's new entry (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"f:data": map[string]any{}, "f:metadata": map[string]any{"f:labels": map[string]any{}}}, fields(t, out[0])); diff != "" {
		t.Errorf("the creator keeps the maps only (-want +got):\n%s", diff)
	}
}
