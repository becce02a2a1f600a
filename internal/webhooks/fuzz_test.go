package webhooks

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// FuzzValidateCluster feeds generated Clusters and releases (valid and invalid) to the webhook
// rules: they never panic, and every refusal names a field of the Cluster and says what to do.
//
//	go test ./internal/webhooks -run '^$' -fuzz FuzzValidateCluster -fuzztime 60s
func FuzzValidateCluster(f *testing.F) {
	f.Add("aws-base-1-36-v1", "aws-base-1-36-v2", "v1.36.3", "1.36", "1.37", "", "v1.36.3", "aws", "base", true)
	f.Add("aws-base-1-36-v1", "aws-base-1-38-v1", "v1.38.0", "1.36", "1.38", "", "v1.38.0", "aws", "base", true)
	f.Add("aws-base-1-36-v1", "gcp-base-1-36-v1", "v1.36.3", "1.36", "1.36", "", "v1.36.3", "gcp", "base", true)
	f.Add("x", "aws-base-1-36-v404", "v1.36.3", "1.36", "1.36", "other", "", "aws", "base", false)
	f.Add("", "", "", "", "", "", "", "", "", false)
	f.Add("aws-base-1-36-v1", "aws-base-1-35-v1", "v1.35.0", "1.36", "x.y", "", "v1.35.0", "aws", "base", true)
	f.Fuzz(func(t *testing.T, oldClass, newClass, version, oldMinor, newMinor, classNS, validated, provider, stackName string, newIsRelease bool) {
		oldRel := release("aws", "base", oldMinor, "v1", "v1.36.3")
		oldRel.Name = oldClass
		var newRel *csv1.ClusterStackRelease
		if newIsRelease {
			newRel = release(provider, stackName, newMinor, "v2", validated)
			newRel.Name = newClass
		}
		old := cluster(oldClass, "v1.36.3")
		updated := withClassNamespace(cluster(newClass, version), classNS)
		if newRel != nil && classNS != "" {
			newRel.Namespace = classNS
		}
		errs, _ := ValidateClusterCreate(updated, newRel)
		assertActionable(t, "create", errs)
		errs, _ = ValidateClusterUpdate(old, updated, oldRel, newRel)
		assertActionable(t, "update", errs)
		cs := &csv1.ClusterStack{}
		cs.Name, cs.Spec.Provider, cs.Spec.Name, cs.Spec.KubernetesVersion = "s", provider, stackName, newMinor
		cs.Spec.Source.URL = "https://u:p@h/r.git"
		for _, e := range ValidateUnpublishedRelease(updated, cs, []string{oldClass, "aws-base-1-36-v1"}) {
			if e.Field != "spec.topology.classRef.name" || strings.Contains(e.Detail, "u:p") || !strings.Contains(e.Detail, "publish the tag") {
				t.Fatalf("unpublished: %v", e)
			}
		}
	})
}

// assertActionable fails unless every error is on a Cluster topology field and says what to do.
func assertActionable(t *testing.T, what string, errs field.ErrorList) {
	t.Helper()
	for _, e := range errs {
		if !strings.HasPrefix(e.Field, "spec.topology.") {
			t.Fatalf("%s: error on %q, not a Cluster topology field: %v", what, e.Field, e)
		}
		if e.Type == field.ErrorTypeInternal {
			continue // a malformed release, not the Cluster's fault
		}
		if !strings.Contains(e.Detail, "must") && !strings.Contains(e.Detail, "may") && !strings.Contains(e.Detail, "create") {
			t.Fatalf("%s: %q does not say what to do", what, e.Detail)
		}
	}
}
