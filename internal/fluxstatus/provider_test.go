package fluxstatus

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func image(generation int64, status map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "openstack.k-orc.cloud/v1alpha1", "kind": "Image",
		"metadata": map[string]any{"name": "ubuntu", "namespace": "ns", "generation": generation},
	}}
	if status != nil {
		u.Object["status"] = status
	}
	return u
}

func conds(cs ...map[string]any) map[string]any {
	out := make([]any, 0, len(cs))
	for _, c := range cs {
		c["lastTransitionTime"] = "2026-11-29T10:00:00Z"
		out = append(out, c)
	}
	return map[string]any{"conditions": out, "observedGeneration": int64(1)}
}

// TestFromProviderObject: kstatus' conditions and ORC's Available/Progressing both decide.
func TestFromProviderObject(t *testing.T) {
	for _, tc := range []struct {
		name        string
		u           *unstructured.Unstructured
		ready       metav1.ConditionStatus
		stalled     bool
		healthy     bool
		wantMessage string
	}{
		{"no status: ready, as kstatus has it", image(1, nil), metav1.ConditionTrue, false, true, ""},
		{"ORC: available", image(1, conds(
			map[string]any{"type": "Available", "status": "True", "reason": "Success", "message": "OpenStack resource is available"},
			map[string]any{"type": "Progressing", "status": "False", "reason": "Success", "message": "OpenStack resource is up to date"})), metav1.ConditionTrue, false, true, ""},
		{"ORC: uploading", image(1, conds(
			map[string]any{"type": "Available", "status": "False", "reason": "Progressing", "message": "Waiting for the image to be uploaded"},
			map[string]any{"type": "Progressing", "status": "True", "reason": "Progressing", "message": "Downloading the image: 40%"})), metav1.ConditionFalse, false, false, "Downloading the image: 40%"},
		{"ORC: failed for good", image(1, conds(
			map[string]any{"type": "Available", "status": "False", "reason": "InvalidConfiguration", "message": "image download failed: 404"},
			map[string]any{"type": "Progressing", "status": "False", "reason": "InvalidConfiguration", "message": "image download failed: 404"})), metav1.ConditionFalse, true, false, "image download failed: 404"},
		{"kstatus: stalled", image(1, conds(map[string]any{"type": "Stalled", "status": "True", "reason": "Quota", "message": "quota exceeded"})), metav1.ConditionFalse, true, false, "quota exceeded"},
		{"kstatus: reconciling", image(1, conds(map[string]any{"type": "Reconciling", "status": "True", "reason": "Working", "message": "working"})), metav1.ConditionFalse, false, false, "working"},
		{"kstatus: generation not observed", image(2, conds(map[string]any{"type": "Ready", "status": "True", "reason": "Done", "message": "done"})), metav1.ConditionFalse, false, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := FromProviderObject(tc.u)
			if s.Ready != tc.ready || s.Stalled != tc.stalled || s.Healthy() != tc.healthy {
				t.Errorf("ready %s stalled %v healthy %v, want %s %v %v (%s)", s.Ready, s.Stalled, s.Healthy(), tc.ready, tc.stalled, tc.healthy, s.Message)
			}
			if tc.wantMessage != "" && s.Message != tc.wantMessage {
				t.Errorf("message %q, want %q", s.Message, tc.wantMessage)
			}
			if s.Ref() != "Image/ubuntu" {
				t.Errorf("ref %s", s.Ref())
			}
		})
	}
}
