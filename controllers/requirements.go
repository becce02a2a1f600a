package controllers

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxstatus"
	"github.com/clusterstack-io/clusterstack-operator/internal/requirements"
	"github.com/clusterstack-io/clusterstack-operator/internal/stageplan"
)

// deliveredPlane reads what the management plane delivers: each ManagementOperator's delivered
// version, and, when withContracts, the versions the Cluster CRD serves (read from the cache,
// which holds that one CRD; see CacheOptions).
func deliveredPlane(ctx context.Context, c client.Reader, withContracts bool) (requirements.Delivered, error) {
	d := requirements.Delivered{Operators: map[string]string{}}
	var ops csv1.ManagementOperatorList
	if err := c.List(ctx, &ops); err != nil {
		return d, fmt.Errorf("list ManagementOperators: %w", err)
	}
	for i := range ops.Items {
		if v := ops.Items[i].DeliveredVersion(); v != "" {
			d.Operators[ops.Items[i].Spec.Component.Name] = v
		}
	}
	if !withContracts {
		return d, nil
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKey{Name: clusterCRDName}, crd); err != nil {
		if apierrors.IsNotFound(err) {
			return d, nil
		}
		return d, fmt.Errorf("get CustomResourceDefinition %s: %w", clusterCRDName, err)
	}
	d.Contracts = servedVersions(crd)
	return d, nil
}

// requiresContract is true when one of the requirements is a Cluster API contract.
func requiresContract(reqs []csv1.StackRequirement) bool {
	for _, r := range reqs {
		if r.CAPIContract != "" {
			return true
		}
	}
	return false
}

// notMovedSuffix ends the message of RequirementsMet=False.
const notMovedSuffix = "; no Cluster's addons are moved to it until the ManagementOperators deliver that"

// requirementsMetCondition is a release's RequirementsMet condition: whether the delivered
// management plane meets what its stack requires (`requires:` in stack.yaml).
func requirementsMetCondition(rel *csv1.ClusterStackRelease, d requirements.Delivered) metav1.Condition {
	c := metav1.Condition{Type: csv1.RequirementsMetCondition, Status: metav1.ConditionTrue, Reason: csv1.ReasonAsExpected}
	if len(rel.Status.Requirements) == 0 {
		c.Message = fmt.Sprintf("release %s requires nothing of the management plane (its stack.yaml has no requires:)", rel.Name)
		return c
	}
	if ok, why := requirements.Met(rel.Name, rel.Status.Requirements, d); !ok {
		c.Status, c.Reason = metav1.ConditionFalse, csv1.ReasonRequirementsNotMet
		c.Message = fluxstatus.Truncate(why + notMovedSuffix)
		return c
	}
	var met []string
	for _, r := range rel.Status.Requirements {
		switch {
		case r.CAPIContract != "":
			met = append(met, "Cluster API contract "+r.CAPIContract)
		case r.Versions != "":
			met = append(met, fmt.Sprintf("%s %s (%s delivered)", r.Operator, r.Versions, d.Operators[r.Operator]))
		default:
			met = append(met, fmt.Sprintf("%s (%s delivered)", r.Operator, d.Operators[r.Operator]))
		}
	}
	c.Message = fluxstatus.Truncate(fmt.Sprintf("release %s: the management plane delivers what it requires: %s", rel.Name, strings.Join(met, ", ")))
	return c
}

// requirementsGate is the ReleaseReady condition of a ClusterAddon that must not move to rel
// because the release's requirements are not met (or not checked yet), nil when it may. A
// Cluster whose addons were last applied from rel is not moving and is not held.
func requirementsGate(rel *csv1.ClusterStackRelease, lastApplied string) *metav1.Condition {
	if len(rel.Status.Requirements) == 0 || lastApplied == rel.Name {
		return nil
	}
	c := apimeta.FindStatusCondition(rel.Status.Conditions, csv1.RequirementsMetCondition)
	if c != nil && c.Status == metav1.ConditionTrue {
		return nil
	}
	out := &metav1.Condition{Type: csv1.ReleaseReadyCondition, Status: metav1.ConditionFalse, Reason: csv1.ReasonWaitingForRelease,
		Message: fmt.Sprintf("waiting for release %s: whether the management plane delivers what it requires has not been checked yet; the addons are left as they are", rel.Name)}
	if c != nil && c.Status == metav1.ConditionFalse {
		out.Reason = csv1.ReasonRequirementsNotMet
		why := strings.TrimSuffix(strings.TrimPrefix(c.Message, "release "+rel.Name+" "), notMovedSuffix)
		out.Message = fluxstatus.Truncate(fmt.Sprintf("waiting for release %s, which %s; the addons are left as they are until it is delivered", rel.Name, why))
	}
	return out
}

// stackUpgradeable is a ClusterStack's Upgradeable condition: False while one of its releases
// does not have its requirements met, naming the release and the operator.
func stackUpgradeable(name string, rels []csv1.ClusterStackRelease) metav1.Condition {
	var blocked []string
	for i := range rels {
		if c := apimeta.FindStatusCondition(rels[i].Status.Conditions, csv1.RequirementsMetCondition); c != nil && c.Status == metav1.ConditionFalse {
			blocked = append(blocked, c.Message)
		}
	}
	if len(blocked) == 0 {
		return metav1.Condition{Type: csv1.UpgradeableCondition, Status: metav1.ConditionTrue, Reason: csv1.ReasonAsExpected,
			Message: fmt.Sprintf("ClusterStack %s: the management plane delivers what each of its releases requires", name)}
	}
	sort.Strings(blocked)
	return metav1.Condition{Type: csv1.UpgradeableCondition, Status: metav1.ConditionFalse, Reason: csv1.ReasonRequirementsNotMet,
		Message: fluxstatus.Truncate(fmt.Sprintf("ClusterStack %s: Clusters cannot move to every release yet: %s", name, fluxstatus.JoinLimited(blocked, 3)))}
}

// lastAppliedRelease reads the release the ClusterAddon's addons were last applied from, when it
// is another than the desired one (a Cluster moving between releases); nil otherwise, or when it
// no longer exists.
func (r *ClusterAddonReconciler) lastAppliedRelease(ctx context.Context, s *addonScope) (*csv1.ClusterStackRelease, error) {
	last := s.addon.Status.LastAppliedRelease
	if last == "" || last == s.release.Name {
		return nil, nil
	}
	from := &csv1.ClusterStackRelease{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: s.addon.Namespace, Name: last}, from); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("read release %s last applied to Cluster %s: %w", last, s.cluster.Name, err)
	}
	return from, nil
}

// cycleGate is the ReleaseReady condition of a ClusterAddon whose addons are at release from and
// that moves to release rel, when the two require a ManagementOperator in version ranges no
// version satisfies together (requirements.Conflicts): while the Cluster is at from the operator
// may not leave from's range, and the Cluster may not move until the operator is within rel's.
// No wait resolves that; the degraded grace period then makes the ClusterAddon Degraded with
// this message. nil when there is no such conflict (or no from).
func cycleGate(rel, from *csv1.ClusterStackRelease) *metav1.Condition {
	if from == nil {
		return nil
	}
	conflicts := requirements.Conflicts(
		requirements.Release{Name: from.Name, Requirements: from.Status.Requirements},
		requirements.Release{Name: rel.Name, Requirements: rel.Status.Requirements})
	if len(conflicts) == 0 {
		return nil
	}
	var named []string
	for _, c := range conflicts {
		named = append(named, c.String())
	}
	return &metav1.Condition{Type: csv1.ReleaseReadyCondition, Status: metav1.ConditionFalse, Reason: csv1.ReasonRequirementsConflict,
		Message: fmt.Sprintf("release %s can never be delivered to a Cluster whose addons are at release %s (a requirements cycle): %s; "+
			"while the addons are at %s the ManagementOperator may not leave the range %s requires, and they move only once it is within the range of %s: "+
			"move the Cluster to a release whose range overlaps both first, or set spec.overrideStackRequirements on the ManagementOperator; the addons are left as they are",
			rel.Name, from.Name, strings.Join(named, "; "), from.Name, from.Name, rel.Name)}
}

// upgradeHeldHint ends the message of a ClusterAddon that waits for release rel, coming from
// release from, when the BeforeClusterUpgrade hook holds the Cluster's Kubernetes upgrade while
// it waits: rel moves the Cluster to another Kubernetes version and either is not validated yet
// or has BeforeClusterUpgrade steps. It says how to let the upgrade through; "" otherwise.
func upgradeHeldHint(rel, from *csv1.ClusterStackRelease, cluster *clusterv1.Cluster) string {
	if from == nil {
		return ""
	}
	validated := apimeta.IsStatusConditionTrue(rel.Status.Conditions, csv1.StackValidCondition) && rel.Status.KubernetesVersion != ""
	switch {
	case !validated && rel.Spec.KubernetesVersion == from.Spec.KubernetesVersion:
		return ""
	case validated && (stageplan.NormalizeVersion(rel.Status.KubernetesVersion) == stageplan.NormalizeVersion(from.Status.KubernetesVersion) ||
		len(stageplan.BeforeUpgradeComponents(rel))+len(stageplan.BeforeUpgradeRemovals(rel)) == 0):
		return ""
	}
	return fmt.Sprintf("; meanwhile the BeforeClusterUpgrade hook holds the Kubernetes upgrade of the Cluster to release %s: %s",
		rel.Name, stageplan.SkipHint(cluster.Namespace, cluster.Name))
}
