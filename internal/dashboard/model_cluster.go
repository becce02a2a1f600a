package dashboard

import (
	"cmp"
	"slices"
	"time"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/plugin"
)

// ClusterView is the Cluster page.
type ClusterView struct {
	Namespace, Name string
	// HasAddon is false while the Cluster has no ClusterAddon (or the user may not read it).
	HasAddon       bool
	State, Message string
	Stack          string
	// DesiredRelease, LastAppliedRelease and Progress are the ClusterAddon's.
	DesiredRelease, LastAppliedRelease, Progress string
	// KubernetesVersion is the Cluster's spec.topology.version.
	KubernetesVersion string
	// Verdict is `kubectl clusterstack why` for the Cluster.
	Verdict plugin.Verdict
	// Components, failing ones first, then those in progress, then the Ready ones, each in
	// install order.
	Components []ComponentRow
	Stages     []csv1.AddonStageStatus
	Conditions []ConditionRow
	// Values are `kubectl clusterstack values` for the Cluster; nil when they were not read
	// (ValuesError says why).
	Values      *plugin.ClusterValues
	ValuesError string
}

// ComponentRow is one addon component of a Cluster with its Flux object.
type ComponentRow struct {
	// Order is the component's place in install order, from 1.
	Order            int
	Name, Kind       string
	Release, Version string
	Ready            bool
	Bucket           string
	Flux             plugin.FluxObject
	// HasFlux is true when the component names its Flux object (Flux.State is NotFound while
	// the object is not created yet).
	HasFlux bool
	// Said is what Flux says of the object (Stalled, else Ready message), or the operator's
	// message while the object does not exist.
	Said string
	// Unhealthy is the ClusterAddon's record of the object's failure: since when, and what Flux
	// last said when it failed.
	UnhealthySince    time.Time
	LastFailure       string
	LastFailureReason string
	WaitingFor        string
}

// BuildCluster builds the page of Cluster ns/name. values (and valuesErr) are `values` for it,
// read by the caller (they need the release's stack, which the cache does not hold).
func BuildCluster(objs Objects, ns, name string, values *plugin.ClusterValues, valuesErr string) (ClusterView, bool) {
	in := plugin.WhyInput{Namespace: ns, Name: name, Flux: objs.Flux}
	for i := range objs.Clusters {
		if c := &objs.Clusters[i]; c.Namespace == ns && c.Name == name {
			in.Cluster = c
		}
	}
	for i := range objs.Addons {
		if a := &objs.Addons[i]; a.Namespace == ns && a.Name == name {
			in.Addon = a
		}
	}
	if in.Cluster == nil && in.Addon == nil {
		return ClusterView{}, false
	}
	class := ""
	if in.Cluster != nil {
		class = plugin.ClassOf(in.Cluster)
	}
	if key := plugin.ReleaseStackKey(class); key != "" {
		for i := range objs.Stacks {
			if s := &objs.Stacks[i]; s.Namespace == ns && plugin.StackKey(s) == key {
				in.Stack = s
				break
			}
		}
		for i := range objs.Releases {
			if r := &objs.Releases[i]; r.Namespace == ns && r.Name == class {
				in.Release = r
			}
		}
	}
	v := ClusterView{Namespace: ns, Name: name, Verdict: plugin.Why(in), Values: values, ValuesError: valuesErr}
	if in.Cluster != nil {
		v.KubernetesVersion = in.Cluster.Spec.Topology.Version
	}
	a := in.Addon
	if a == nil {
		v.State, v.Message = plugin.StateNotFound, "no ClusterAddon yet"
		if in.Cluster != nil && plugin.IsPaused(in.Cluster) {
			v.State, v.Message = plugin.StatePaused, "the Cluster is paused"
		}
		return v, true
	}
	v.HasAddon = true
	v.State, v.Message = plugin.ObjectState(a.Status.Conditions)
	v.Stack, v.DesiredRelease, v.LastAppliedRelease, v.Progress = a.Status.ClusterStack, a.Status.DesiredRelease, a.Status.LastAppliedRelease, a.Status.Progress
	v.Stages = a.Status.Stages
	v.Conditions = conditionRows(a.Status.Conditions)
	v.Components = componentRows(a, objs.Flux)
	return v, true
}

// componentRows are the ClusterAddon's components with their Flux objects, failing first.
func componentRows(a *csv1.ClusterAddon, flux plugin.FluxIndex) []ComponentRow {
	unhealthy := map[string]csv1.UnhealthyObject{}
	for _, u := range a.Status.Unhealthy {
		unhealthy[u.Object] = u
	}
	out := make([]ComponentRow, 0, len(a.Status.Components))
	for i, comp := range a.Status.Components {
		r := ComponentRow{Order: i + 1, Name: comp.Name, Kind: string(comp.Kind), Release: comp.Release, Version: comp.Version,
			Ready: comp.Ready, WaitingFor: comp.WaitingFor}
		if comp.FluxObject != "" {
			r.Flux, r.HasFlux = flux.Get(a.Namespace, comp.FluxObject), true
			r.Said = r.Flux.Message()
		}
		if r.Said == "" {
			r.Said = comp.Message
		}
		if r.Said == r.WaitingFor {
			r.WaitingFor = ""
		}
		u, bad := unhealthy[comp.FluxObject]
		if bad && comp.FluxObject != "" {
			r.UnhealthySince, r.LastFailure, r.LastFailureReason = u.Since.Time, u.LastFailure, u.LastFailureReason
		}
		switch {
		case comp.Ready:
			r.Bucket = BucketAvailable
		case r.Flux.State == plugin.StateFailed || r.Flux.State == plugin.StateSuspended || r.LastFailure != "":
			r.Bucket = BucketDegraded
		default:
			r.Bucket = BucketProgressing
		}
		out = append(out, r)
	}
	slices.SortStableFunc(out, func(x, y ComponentRow) int { return cmp.Compare(bucketRank(x.Bucket), bucketRank(y.Bucket)) })
	return out
}
