// Package opstatus decides what may be applied for a ManagementOperator and computes its status
// with OpenShift ClusterOperator semantics. It has no client: the controller reads the objects
// and passes them in; everything here is a pure function of them and the clock.
//
// The controller calls, in order:
//
//  1. Decide(op, inUse): whether spec.version may be applied (a minor downgrade is refused, a
//     version outside what in-use releases require is held back unless overridden) and the
//     version the Flux objects are to deliver (Decision.Target).
//  2. If Decision.Apply: opgen.Objects(op, namespace, Decision.Target), applied as they are.
//     Otherwise nothing is applied and the existing objects stay as they are.
//  3. States(op, Decision.Target, observed Flux objects) and FromDeployment for each Deployment
//     the Kustomization's inventory lists (InventoryDeployments) or the HelmRelease installed
//     (HelmReleaseSelector).
//  4. Compute(Input{...}) and Result.ApplyTo(&op.Status, op.Generation), written once.
//
// The conditions Available, Progressing, Degraded, Ready, Stalled and Reconciling come from
// fluxstatus.Compute, the computation the stacks use; this package adds the Deployments as
// objects, Upgradeable, Disabled, versions, history and availableUpdates.
package opstatus

import (
	"fmt"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxstatus"
	"github.com/clusterstack-io/clusterstack-operator/internal/requirements"
)

// Decision says what the controller may apply for a ManagementOperator.
type Decision struct {
	// Target is the version the Flux objects are to deliver: spec.version when it may be applied,
	// else the version accepted before (status.desiredVersion), "" when none was ever accepted.
	Target string
	// Apply is true when the controller writes the Flux objects for Target. When false nothing is
	// applied: the objects the operator wrote before stay as they are.
	Apply bool
	// Refused is set when spec.version is refused (a minor downgrade, or not a version): the
	// ManagementOperator is Degraded with its reason, and the delivered version keeps running.
	Refused *fluxstatus.Problem
	// Held is set when spec.version is outside a range a release in use by Clusters requires of
	// the operator, and spec.overrideStackRequirements is not set: Upgradeable is False and
	// Progressing True with its message, and nothing is applied.
	Held *fluxstatus.Problem
	// Overridden describes the in-use releases' requirements spec.version is outside of when it
	// is applied anyway (spec.overrideStackRequirements); "" otherwise. It is recorded in the
	// history entry's acceptedRisks.
	Overridden string
}

// Decide decides whether spec.version may be applied, given the releases in use by Clusters
// (those a Cluster's topology or addons use, with their status.requirements).
//
// Rules, in order:
//   - spec.version must be a semantic version (the API checks the form; this guards the parse);
//   - a version whose major.minor is lower than the delivered version's is refused: Cluster API
//     providers do not support minor downgrades (their CRDs and stored objects may already be at
//     the newer schema). Patch downgrades within the delivered minor are allowed, and so is
//     moving back to the delivered version while another one rolls out (a rollback of a failed
//     upgrade);
//   - a version other than the delivered one that an in-use release's range excludes is held
//     back unless spec.overrideStackRequirements is true. Before any version was delivered the
//     rule applies too: the operator may already run, installed by other means, at a version the
//     releases need.
func Decide(op *csv1.ManagementOperator, inUse []requirements.Release) Decision {
	desired, delivered := op.Spec.Version, op.DeliveredVersion()
	keep := Decision{Target: op.Status.DesiredVersion}
	want, err := requirements.ParseVersion(desired)
	if err != nil {
		keep.Refused = &fluxstatus.Problem{Reason: csv1.ReasonInvalidVersion, Message: fmt.Sprintf("spec.version %v; nothing is applied", err)}
		return keep
	}
	if delivered != "" && desired != delivered {
		if have, err := requirements.ParseVersion(delivered); err == nil &&
			(want.Major() < have.Major() || (want.Major() == have.Major() && want.Minor() < have.Minor())) {
			keep.Refused = &fluxstatus.Problem{Reason: csv1.ReasonDowngradeNotSupported, Message: fmt.Sprintf(
				"spec.version %s is a downgrade from the delivered %s to a lower minor version, which operators do not support (their CRDs and stored objects may already use the newer version's schema): nothing is applied; set spec.version to v%d.%d.x or later",
				desired, delivered, have.Major(), have.Minor())}
			return keep
		}
	}
	if desired == delivered {
		return Decision{Target: desired, Apply: true}
	}
	excluded := requirements.Excluding(op.Spec.Component.Name, desired, inUse)
	if len(excluded) == 0 {
		return Decision{Target: desired, Apply: true}
	}
	if op.Spec.OverrideStackRequirements {
		return Decision{Target: desired, Apply: true, Overridden: fluxstatus.JoinLimited(excluded, 5)}
	}
	stays := "nothing is delivered yet"
	if delivered != "" {
		stays = delivered + " stays delivered"
	}
	keep.Held = &fluxstatus.Problem{Reason: csv1.ReasonRequirementsNotMet, Message: fmt.Sprintf(
		"spec.version %s is held back because releases in use by Clusters exclude it (%s): %s; move those Clusters to releases that allow %s, or set spec.overrideStackRequirements to apply it anyway",
		desired, fluxstatus.JoinLimited(excluded, 5), stays, desired)}
	return keep
}
