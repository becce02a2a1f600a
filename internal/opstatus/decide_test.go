package opstatus

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxstatus"
	"github.com/clusterstack-io/clusterstack-operator/internal/requirements"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const testNS = "clusterstack-system"

// operator is the cluster-api ManagementOperator at spec.version version, having delivered
// delivered ("" for none) and accepted desired.
func operator(version, delivered, desired string, mut ...func(*csv1.ManagementOperator)) *csv1.ManagementOperator {
	op := &csv1.ManagementOperator{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-api", Generation: 1, CreationTimestamp: metav1.NewTime(t0.Add(-24 * time.Hour))},
		Spec: csv1.ManagementOperatorSpec{
			Component: csv1.OperatorComponent{Type: csv1.CoreProvider, Name: "cluster-api"},
			Version:   version,
			Source:    csv1.OperatorSource{Git: &csv1.OperatorGitSource{URL: "https://git.example.com/operators.git", Path: "capi"}},
		},
		Status: csv1.ManagementOperatorStatus{DesiredVersion: desired},
	}
	if delivered != "" {
		op.Status.Versions = []csv1.OperandVersion{{Name: "operator", Version: delivered}}
	}
	for _, m := range mut {
		m(op)
	}
	return op
}

func override(op *csv1.ManagementOperator) { op.Spec.OverrideStackRequirements = true }

func TestDecide(t *testing.T) {
	inUse := []requirements.Release{
		{Name: "stacks/aws-base-1-36-v1", Requirements: []csv1.StackRequirement{{Operator: "cluster-api", Versions: ">=1.9.0 <1.11.0"}, {Operator: "capa", Versions: ">=2.0.0"}}},
		{Name: "stacks/aws-base-1-36-v2", Requirements: []csv1.StackRequirement{{Operator: "cluster-api", Versions: ">=1.10.0"}}},
	}
	const held = "spec.version v1.11.0 is held back because releases in use by Clusters exclude it (release stacks/aws-base-1-36-v1 requires cluster-api >=1.9.0 <1.11.0): "
	tests := []struct {
		name  string
		op    *csv1.ManagementOperator
		inUse []requirements.Release
		want  Decision
	}{
		{
			name: "first install, nothing in use: applied",
			op:   operator("v1.10.3", "", ""),
			want: Decision{Target: "v1.10.3", Apply: true},
		},
		{
			name:  "steady state: the delivered version is applied again (drift correction), whatever the releases say",
			op:    operator("v1.8.0", "v1.8.0", "v1.8.0"),
			inUse: inUse,
			want:  Decision{Target: "v1.8.0", Apply: true},
		},
		{
			name:  "upgrade every in-use release allows",
			op:    operator("v1.10.5", "v1.10.3", "v1.10.3"),
			inUse: inUse,
			want:  Decision{Target: "v1.10.5", Apply: true},
		},
		{
			name:  "patch downgrade within the delivered minor: allowed",
			op:    operator("v1.10.1", "v1.10.3", "v1.10.3"),
			inUse: inUse,
			want:  Decision{Target: "v1.10.1", Apply: true},
		},
		{
			name: "minor downgrade: refused, nothing applied, the accepted version stays the target",
			op:   operator("v1.9.5", "v1.10.3", "v1.10.3"),
			want: Decision{Target: "v1.10.3", Refused: &fluxstatus.Problem{Reason: "DowngradeNotSupported",
				Message: "spec.version v1.9.5 is a downgrade from the delivered v1.10.3 to a lower minor version, which operators do not support (their CRDs and stored objects may already use the newer version's schema): nothing is applied; set spec.version to v1.10.x or later"}},
		},
		{
			name: "major downgrade: refused",
			op:   operator("v1.12.0", "v2.0.1", "v2.0.1"),
			want: Decision{Target: "v2.0.1", Refused: &fluxstatus.Problem{Reason: "DowngradeNotSupported",
				Message: "spec.version v1.12.0 is a downgrade from the delivered v2.0.1 to a lower minor version, which operators do not support (their CRDs and stored objects may already use the newer version's schema): nothing is applied; set spec.version to v2.0.x or later"}},
		},
		{
			name: "a minor downgrade is refused even with the override of stack requirements",
			op:   operator("v1.9.5", "v1.10.3", "v1.10.3", override),
			want: Decision{Target: "v1.10.3", Refused: &fluxstatus.Problem{Reason: "DowngradeNotSupported",
				Message: "spec.version v1.9.5 is a downgrade from the delivered v1.10.3 to a lower minor version, which operators do not support (their CRDs and stored objects may already use the newer version's schema): nothing is applied; set spec.version to v1.10.x or later"}},
		},
		{
			name: "a minor downgrade relative to a version that is rolling out but not delivered: allowed (rollback of a failed upgrade)",
			op:   operator("v1.10.3", "v1.10.3", "v1.11.0"),
			want: Decision{Target: "v1.10.3", Apply: true},
		},
		{
			name: "refused while another accepted version rolls out: that one stays the target",
			op:   operator("v1.9.0", "v1.10.3", "v1.11.0"),
			want: Decision{Target: "v1.11.0", Refused: &fluxstatus.Problem{Reason: "DowngradeNotSupported",
				Message: "spec.version v1.9.0 is a downgrade from the delivered v1.10.3 to a lower minor version, which operators do not support (their CRDs and stored objects may already use the newer version's schema): nothing is applied; set spec.version to v1.10.x or later"}},
		},
		{
			name:  "upgrade beyond an in-use release's range: held back, nothing applied",
			op:    operator("v1.11.0", "v1.10.3", "v1.10.3"),
			inUse: inUse,
			want: Decision{Target: "v1.10.3", Held: &fluxstatus.Problem{Reason: "RequirementsNotMet",
				Message: held + "v1.10.3 stays delivered; move those Clusters to releases that allow v1.11.0, or set spec.overrideStackRequirements to apply it anyway"}},
		},
		{
			name:  "upgrade beyond an in-use release's range with the override: applied, the override recorded",
			op:    operator("v1.11.0", "v1.10.3", "v1.10.3", override),
			inUse: inUse,
			want:  Decision{Target: "v1.11.0", Apply: true, Overridden: "release stacks/aws-base-1-36-v1 requires cluster-api >=1.9.0 <1.11.0"},
		},
		{
			name:  "first install outside the in-use ranges (the operator may already run, installed by other means): held",
			op:    operator("v1.11.0", "", ""),
			inUse: inUse,
			want: Decision{Held: &fluxstatus.Problem{Reason: "RequirementsNotMet",
				Message: held + "nothing is delivered yet; move those Clusters to releases that allow v1.11.0, or set spec.overrideStackRequirements to apply it anyway"}},
		},
		{
			name:  "requirements on other operators do not hold this one back",
			op:    operator("v1.0.0", "v0.9.0", "v0.9.0", func(op *csv1.ManagementOperator) { op.Name, op.Spec.Component.Name = "capd", "capd" }),
			inUse: inUse,
			want:  Decision{Target: "v1.0.0", Apply: true},
		},
		{
			name: "a version that does not parse (the API refuses it; guarded): refused",
			op:   operator("latest", "v1.10.3", "v1.10.3"),
			want: Decision{Target: "v1.10.3", Refused: &fluxstatus.Problem{Reason: "InvalidVersion",
				Message: `spec.version "latest" is not a semantic version such as v1.10.3: invalid semantic version; nothing is applied`}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Decide(tt.op, tt.inUse)); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
		})
	}
}
