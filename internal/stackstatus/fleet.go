package stackstatus

import (
	"sort"
	"sync"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/metrics"
)

// Problem is what a degraded Cluster's Degraded condition says.
type Problem struct {
	// Reason and Message are those of the ClusterAddon's Degraded condition.
	Reason, Message string
}

// Fleet is what a ClusterStack's status needs from the ClusterAddons of its Clusters: sums that
// an Index keeps up to date one ClusterAddon at a time, so that the roll-up costs O(1) per
// ClusterAddon change (O(k) in the k degraded or progressing Clusters for the messages), never a
// walk over every Cluster. The zero Fleet is a stack without Clusters.
type Fleet struct {
	// Clusters counts every Cluster of the stack (status.clusters).
	Clusters csv1.ClusterCounts
	// Releases counts the Clusters by the release they want (status.desiredRelease; "" for a
	// ClusterAddon that wants none yet): status.releases[].clusters.
	Releases map[string]csv1.ClusterCounts
	// States counts the Clusters by the release they want and their metrics.StateOf state
	// (the clusterstack_clusters gauge).
	States map[string]map[string]int
	// Pending counts, by release, the Clusters that want it but do not have it applied and
	// Available yet.
	Pending map[string]int
	// Delivered counts, by release, the Clusters that are Available with it last applied.
	Delivered map[string]int
	// NotAvailable counts the Clusters that are not Available.
	NotAvailable int
	// Degraded are the degraded Clusters by ClusterAddon name.
	Degraded map[string]Problem
	// Progressing are the Progressing messages of the Clusters rolling out (and not degraded),
	// by ClusterAddon name.
	Progressing map[string]string
}

// Summarize sums the ClusterAddons of one stack's Clusters into a Fleet: what an Index holds for
// the stack once it has seen exactly these ClusterAddons.
func Summarize(addons []csv1.ClusterAddon) Fleet {
	var f Fleet
	for i := range addons {
		f.add(addons[i].Name, contributionOf(&addons[i]), 1)
	}
	return f
}

// contribution is what one ClusterAddon adds to its stack's Fleet and to its desired release's
// counts: an Index remembers it per ClusterAddon to subtract it when the ClusterAddon changes.
type contribution struct {
	// stack is status.clusterStack; "" puts the ClusterAddon in no stack's Fleet.
	stack            string
	desired, applied string
	// counts is the ClusterAddon's Tally: a Total of 1 and its other counts.
	counts    csv1.ClusterCounts
	available bool
	state     string
	// degraded is set when Degraded is True; progressing (with isProgressing) when Progressing
	// is True and Degraded is not.
	degraded      *Problem
	progressing   string
	isProgressing bool
}

func contributionOf(a *csv1.ClusterAddon) contribution {
	c := contribution{
		stack:     a.Status.ClusterStack,
		desired:   a.Status.DesiredRelease,
		applied:   a.Status.LastAppliedRelease,
		available: apimeta.IsStatusConditionTrue(a.Status.Conditions, csv1.AvailableCondition),
		state:     metrics.StateOf(a.Status.Conditions),
	}
	Tally(&c.counts, a)
	if d := apimeta.FindStatusCondition(a.Status.Conditions, csv1.DegradedCondition); d != nil && d.Status == metav1.ConditionTrue {
		c.degraded = &Problem{Reason: d.Reason, Message: d.Message}
	} else if p := apimeta.FindStatusCondition(a.Status.Conditions, csv1.ProgressingCondition); p != nil && p.Status == metav1.ConditionTrue {
		c.progressing, c.isProgressing = p.Message, true
	}
	return c
}

// upToDate is UpToDate of the ClusterAddon the contribution was made from.
func (c contribution) upToDate() bool { return c.applied != "" && c.applied == c.desired }

// add adds (sign 1) or subtracts (sign -1) the contribution of the ClusterAddon name. Entries
// that drop to zero are removed, so two Fleets of the same ClusterAddons are equal.
func (f *Fleet) add(name string, c contribution, sign int) {
	addCounts(&f.Clusters, c.counts, sign)
	if f.Releases == nil {
		f.Releases = map[string]csv1.ClusterCounts{}
	}
	n := f.Releases[c.desired]
	addCounts(&n, c.counts, sign)
	if n.Total == 0 {
		delete(f.Releases, c.desired)
	} else {
		f.Releases[c.desired] = n
	}
	if f.States == nil {
		f.States = map[string]map[string]int{}
	}
	if f.States[c.desired] == nil {
		f.States[c.desired] = map[string]int{}
	}
	addCount(f.States[c.desired], c.state, sign)
	if len(f.States[c.desired]) == 0 {
		delete(f.States, c.desired)
	}
	if !c.upToDate() || !c.available {
		f.Pending = addCount(f.Pending, c.desired, sign)
	}
	if c.available && c.applied != "" {
		f.Delivered = addCount(f.Delivered, c.applied, sign)
	}
	if !c.available {
		f.NotAvailable += sign
	}
	switch {
	case c.degraded != nil && sign > 0:
		if f.Degraded == nil {
			f.Degraded = map[string]Problem{}
		}
		f.Degraded[name] = *c.degraded
	case c.degraded != nil:
		delete(f.Degraded, name)
	case c.isProgressing && sign > 0:
		if f.Progressing == nil {
			f.Progressing = map[string]string{}
		}
		f.Progressing[name] = c.progressing
	case c.isProgressing:
		delete(f.Progressing, name)
	}
}

func addCounts(n *csv1.ClusterCounts, d csv1.ClusterCounts, sign int) {
	n.Total += int32(sign) * d.Total
	n.UpToDate += int32(sign) * d.UpToDate
	n.Available += int32(sign) * d.Available
	n.Degraded += int32(sign) * d.Degraded
}

// addCount adds sign to m[key], removing the key at zero; it returns m (allocated if nil).
func addCount(m map[string]int, key string, sign int) map[string]int {
	if m == nil {
		m = map[string]int{}
	}
	if m[key] += sign; m[key] == 0 {
		delete(m, key)
	}
	return m
}

// clone is a deep copy of the Fleet, for a reader outside the Index's lock.
func (f *Fleet) clone() Fleet {
	out := *f
	out.Releases = cloneMap(f.Releases)
	out.Pending = cloneMap(f.Pending)
	out.Delivered = cloneMap(f.Delivered)
	out.Degraded = cloneMap(f.Degraded)
	out.Progressing = cloneMap(f.Progressing)
	if f.States != nil {
		out.States = make(map[string]map[string]int, len(f.States))
		for rel, s := range f.States {
			out.States[rel] = cloneMap(s)
		}
	}
	return out
}

func cloneMap[V any](m map[string]V) map[string]V {
	if m == nil {
		return nil
	}
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// firstNames are the n smallest keys of m, sorted: the Clusters a message names, chosen in
// O(len(m)·n) without sorting them all.
func firstNames[V any](m map[string]V, n int) []string {
	out := make([]string, 0, n+1)
	for k := range m {
		i := sort.SearchStrings(out, k)
		if i >= n {
			continue
		}
		out = append(out, "")
		copy(out[i+1:], out[i:])
		out[i] = k
		if len(out) > n {
			out = out[:n]
		}
	}
	return out
}

// Index keeps a Fleet per ClusterStack (namespace and status.clusterStack, as the ClusterAddons'
// stack field index) and the Cluster counts per release (namespace and status.desiredRelease)
// up to date as ClusterAddons change: Set and Delete subtract what the ClusterAddon contributed
// before and add what it contributes now, in O(1). It also counts every ClusterAddon of each
// namespace, whatever its status says. Safe for concurrent use.
type Index struct {
	mu         sync.Mutex
	members    map[key]contribution
	fleets     map[key]*Fleet
	releases   map[key]csv1.ClusterCounts
	namespaces map[string]int32
}

// key is a namespace and a name.
type key struct{ namespace, name string }

// NewIndex returns an empty Index.
func NewIndex() *Index {
	return &Index{members: map[key]contribution{}, fleets: map[key]*Fleet{}, releases: map[key]csv1.ClusterCounts{}, namespaces: map[string]int32{}}
}

// Set records the current state of a ClusterAddon (added or changed).
func (x *Index) Set(a *csv1.ClusterAddon) {
	c := contributionOf(a)
	k := key{a.Namespace, a.Name}
	x.mu.Lock()
	defer x.mu.Unlock()
	if old, ok := x.members[k]; ok {
		x.remove(k, old)
	} else {
		x.namespaces[k.namespace]++
	}
	x.members[k] = c
	if c.stack != "" {
		sk := key{k.namespace, c.stack}
		f := x.fleets[sk]
		if f == nil {
			f = &Fleet{}
			x.fleets[sk] = f
		}
		f.add(k.name, c, 1)
	}
	if c.desired != "" {
		rk := key{k.namespace, c.desired}
		n := x.releases[rk]
		addCounts(&n, c.counts, 1)
		x.releases[rk] = n
	}
}

// Delete forgets a ClusterAddon that is gone.
func (x *Index) Delete(namespace, name string) {
	k := key{namespace, name}
	x.mu.Lock()
	defer x.mu.Unlock()
	if old, ok := x.members[k]; ok {
		x.remove(k, old)
		delete(x.members, k)
		if x.namespaces[namespace]--; x.namespaces[namespace] <= 0 {
			delete(x.namespaces, namespace)
		}
	}
}

// remove subtracts what the ClusterAddon k contributed; x.mu is held.
func (x *Index) remove(k key, c contribution) {
	if c.stack != "" {
		sk := key{k.namespace, c.stack}
		if f := x.fleets[sk]; f != nil {
			f.add(k.name, c, -1)
			if f.Clusters.Total == 0 {
				delete(x.fleets, sk)
			}
		}
	}
	if c.desired != "" {
		rk := key{k.namespace, c.desired}
		n := x.releases[rk]
		addCounts(&n, c.counts, -1)
		if n.Total == 0 {
			delete(x.releases, rk)
		} else {
			x.releases[rk] = n
		}
	}
}

// Len is the number of ClusterAddons the index holds.
func (x *Index) Len() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.members)
}

// Fleet is a copy of the Fleet of the ClusterStack namespace/stack: the ClusterAddons whose
// status.clusterStack names it. It costs O(r + k) in its releases and its degraded or
// progressing Clusters.
func (x *Index) Fleet(namespace, stack string) Fleet {
	x.mu.Lock()
	defer x.mu.Unlock()
	if f := x.fleets[key{namespace, stack}]; f != nil {
		return f.clone()
	}
	return Fleet{}
}

// NamespaceAddons counts every ClusterAddon of namespace, with a status or not yet.
func (x *Index) NamespaceAddons(namespace string) int32 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.namespaces[namespace]
}

// ReleaseClusters counts the ClusterAddons of namespace that want release (status.desiredRelease,
// whatever their stack): the release's status.clusters.
func (x *Index) ReleaseClusters(namespace, release string) csv1.ClusterCounts {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.releases[key{namespace, release}]
}
