package dashboard

import (
	"cmp"
	"slices"

	apimeta "k8s.io/apimachinery/pkg/api/meta"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/plugin"
	"github.com/clusterstack-io/clusterstack-operator/internal/requirements"
)

// OperatorSummary is a ManagementOperator in a list.
type OperatorSummary struct {
	Name, Type     string
	State, Message string
	Bucket         string
	// Version is spec.version; DesiredVersion status.desiredVersion (the version the Flux objects
	// are written for); Delivered status.versions[operator].
	Version, DesiredVersion, Delivered string
	// Upgradeable is the Upgradeable condition, when set.
	Upgradeable *plugin.Condition
}

func operatorSummary(op *csv1.ManagementOperator) OperatorSummary {
	st, msg := plugin.ObjectState(op.Status.Conditions)
	s := OperatorSummary{Name: op.Name, Type: string(op.Spec.Component.Type), State: st, Message: oneLine(msg, rowMessageLen),
		Bucket: BucketOf(st), Version: op.Spec.Version, DesiredVersion: op.Status.DesiredVersion, Delivered: op.DeliveredVersion()}
	if c := apimeta.FindStatusCondition(op.Status.Conditions, csv1.UpgradeableCondition); c != nil {
		s.Upgradeable = &plugin.Condition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message}
	}
	return s
}

// operatorSummaries are the ManagementOperators, failures first, then by name.
func operatorSummaries(ops []csv1.ManagementOperator) []OperatorSummary {
	out := make([]OperatorSummary, 0, len(ops))
	for i := range ops {
		out = append(out, operatorSummary(&ops[i]))
	}
	slices.SortFunc(out, func(a, b OperatorSummary) int {
		if c := cmp.Compare(bucketRank(a.Bucket), bucketRank(b.Bucket)); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out
}

// OperatorView is the ManagementOperator page.
type OperatorView struct {
	OperatorSummary
	Channel          string
	Conditions       []ConditionRow
	History          []csv1.OperatorHistoryEntry
	AvailableUpdates []string
	Unhealthy        []csv1.UnhealthyObject
	Related          []csv1.ResourceReference
	// Requirements are the stack releases that require the operator, those that hold it
	// (in use, and excluding spec.version) first.
	Requirements []RequirementRow
	// Holds name what holds spec.version back ("release ... requires ..."), from the releases
	// in use.
	Holds []string
}

// RequirementRow is one release's requirement on the operator.
type RequirementRow struct {
	// Release is "<namespace>/<name>".
	Release string
	// Range is the version range it requires ("" for any version).
	Range string
	// Clusters counts the Clusters using the release.
	Clusters int
	// AllowsVersion tells whether spec.version is within the range; AllowsDelivered the
	// delivered version.
	AllowsVersion, AllowsDelivered bool
	// Holds is true when the release is in use and excludes spec.version.
	Holds bool
}

// BuildOperator builds the page of ManagementOperator name; false when it is not among objs.
func BuildOperator(objs Objects, name string) (OperatorView, bool) {
	var op *csv1.ManagementOperator
	for i := range objs.Operators {
		if objs.Operators[i].Name == name {
			op = &objs.Operators[i]
		}
	}
	if op == nil {
		return OperatorView{}, false
	}
	v := OperatorView{OperatorSummary: operatorSummary(op), Channel: op.Spec.Channel, Conditions: conditionRows(op.Status.Conditions),
		History: op.Status.History, AvailableUpdates: op.Status.AvailableUpdates, Unhealthy: op.Status.Unhealthy, Related: op.Status.RelatedObjects}
	var inUse []requirements.Release
	for i := range objs.Releases {
		rel := &objs.Releases[i]
		key := rel.Namespace + "/" + rel.Name
		for _, req := range rel.Status.Requirements {
			if req.Operator != op.Spec.Component.Name {
				continue
			}
			one := []requirements.Release{{Name: key, Requirements: []csv1.StackRequirement{req}}}
			row := RequirementRow{Release: key, Range: req.Versions, Clusters: int(rel.Status.Clusters.Total),
				AllowsVersion:   len(requirements.Excluding(req.Operator, op.Spec.Version, one)) == 0,
				AllowsDelivered: v.Delivered != "" && len(requirements.Excluding(req.Operator, v.Delivered, one)) == 0}
			row.Holds = row.Clusters > 0 && !row.AllowsVersion
			v.Requirements = append(v.Requirements, row)
		}
		if rel.Status.Clusters.Total > 0 {
			inUse = append(inUse, requirements.Release{Name: key, Requirements: rel.Status.Requirements})
		}
	}
	v.Holds = requirements.Excluding(op.Spec.Component.Name, op.Spec.Version, inUse)
	slices.SortFunc(v.Requirements, func(a, b RequirementRow) int {
		if a.Holds != b.Holds {
			if a.Holds {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.Release, b.Release)
	})
	return v, true
}
