package webhooks

import (
	"path/filepath"
	"regexp"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// TestWebhookConfiguration checks config/webhook against the code: the path the webhook is
// served on, the failure policy and the matchConditions docs/webhook.md documents.
func TestWebhookConfiguration(t *testing.T) {
	vwcs, err := LoadValidatingWebhookConfigurations(filepath.Join("..", "..", ConfigDir))
	if err != nil {
		t.Fatal(err)
	}
	if len(vwcs) != 1 || len(vwcs[0].Webhooks) != 1 {
		t.Fatalf("want one ValidatingWebhookConfiguration with one webhook, got %+v", vwcs)
	}
	wh := vwcs[0].Webhooks[0]
	if wh.Name != "vcluster.clusterstack.io" {
		t.Errorf("name %q", wh.Name)
	}
	if svc := wh.ClientConfig.Service; svc == nil || svc.Path == nil || *svc.Path != ClusterPath ||
		svc.Name != "clusterstack-webhook-service" || svc.Namespace != "clusterstack-system" {
		t.Errorf("clientConfig %+v, want Service clusterstack-system/clusterstack-webhook-service path %s", wh.ClientConfig, ClusterPath)
	}
	if wh.FailurePolicy == nil || *wh.FailurePolicy != admissionregistrationv1.Fail {
		t.Errorf("failurePolicy %v, want Fail", wh.FailurePolicy)
	}
	if wh.SideEffects == nil || *wh.SideEffects != admissionregistrationv1.SideEffectClassNone {
		t.Errorf("sideEffects %v, want None", wh.SideEffects)
	}
	if len(wh.Rules) != 1 || len(wh.Rules[0].Operations) != 2 || wh.Rules[0].Resources[0] != "clusters" {
		t.Errorf("rules %+v", wh.Rules)
	}
	conds := map[string]string{}
	for _, c := range wh.MatchConditions {
		conds[c.Name] = c.Expression
	}
	if len(conds) != 2 || conds["creates-or-changes-class-or-version"] == "" {
		t.Fatalf("matchConditions %+v", wh.MatchConditions)
	}
	m := regexp.MustCompile(`matches\('([^']+)'\)`).FindStringSubmatch(conds["class-looks-like-a-release"])
	if m == nil {
		t.Fatalf("class-looks-like-a-release has no matches(): %q", conds["class-looks-like-a-release"])
	}
	// Every name the ClusterStackRelease CRD admits must match, or the API server would not
	// send its Clusters to the webhook.
	shape := regexp.MustCompile(m[1])
	for _, name := range []string{"aws-base-1-36-v1", "openstack-scs2-1-33-v12", "aws-base-1-36-v2-rc.1", "x-y-10-0-v0"} {
		if !shape.MatchString(name) {
			t.Errorf("release name %q does not match %s", name, m[1])
		}
	}
	for _, name := range []string{"my-class", "aws-test-v1", "aws-base-1-36", "quick-start"} {
		if shape.MatchString(name) {
			t.Errorf("ClusterClass name %q matches %s", name, m[1])
		}
	}
}
