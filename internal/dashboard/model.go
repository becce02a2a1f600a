// Package dashboard is `kubectl clusterstack dashboard`: a read-only web view of the fleet
// (ClusterStacks, their releases and Clusters, rollouts, ManagementOperators) served from one
// informer set built from the user's kubeconfig.
//
// This file and the other model*.go files are the pages' view models: pure functions from the
// objects (Objects) to what a page shows, table-tested without a client. They reuse the kubectl
// plugin's own functions (internal/plugin: object states, the `why` verdict, `updates`, the
// tree's releases) rather than deciding anything again. server.go serves them as HTML
// (html/template, embedded), source.go reads the objects through controller-runtime's cache.
package dashboard

import (
	"cmp"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/plugin"
)

// Buckets group a Cluster's state on the fleet's pictures.
const (
	// BucketDegraded: the ClusterAddon is Degraded.
	BucketDegraded = "Degraded"
	// BucketProgressing: the ClusterAddon is Progressing (installing, upgrading, retrying
	// within its grace period).
	BucketProgressing = "Progressing"
	// BucketAvailable: the ClusterAddon is Available (Ready or, during an upgrade, still serving).
	BucketAvailable = "Available"
	// BucketOther: paused, no ClusterAddon yet, or no condition to tell.
	BucketOther = "Other"
)

// buckets are the buckets in the order pages show them: failures first.
var buckets = []string{BucketDegraded, BucketProgressing, BucketOther, BucketAvailable}

// BucketOf is the bucket of a plugin state (plugin.ObjectState, or NotFound).
func BucketOf(state string) string {
	switch state {
	case plugin.StateDegraded, plugin.StateFailed:
		return BucketDegraded
	case plugin.StateProgressing:
		return BucketProgressing
	case plugin.StateReady, plugin.StateAvailable:
		return BucketAvailable
	}
	return BucketOther
}

// Objects are what the pages are built from: the objects of the namespaces the user reads.
// Slices may share memory with the cache: builders never change them.
type Objects struct {
	Stacks    []csv1.ClusterStack
	Releases  []csv1.ClusterStackRelease
	Addons    []csv1.ClusterAddon
	Clusters  []clusterv1.Cluster
	Operators []csv1.ManagementOperator
	// Flux holds the operator's HelmReleases and Kustomizations of Clusters.
	Flux plugin.FluxIndex
	// Unreadable says what the user may not read (or what is not installed), for the pages to say
	// that they show nothing of it.
	Unreadable []string
	// Now is the time pages measure ages from.
	Now time.Time
}

// Counts counts Clusters by bucket.
type Counts struct {
	Total, Degraded, Progressing, Available, Other int
}

func (c *Counts) add(bucket string) {
	c.Total++
	switch bucket {
	case BucketDegraded:
		c.Degraded++
	case BucketProgressing:
		c.Progressing++
	case BucketAvailable:
		c.Available++
	default:
		c.Other++
	}
}

// Of is the count of one bucket.
func (c Counts) Of(bucket string) int {
	switch bucket {
	case BucketDegraded:
		return c.Degraded
	case BucketProgressing:
		return c.Progressing
	case BucketAvailable:
		return c.Available
	}
	return c.Other
}

// Segment is one bucket's part of a bar, in percent of its width.
type Segment struct {
	Bucket string
	Count  int
	X      float64
	Width  float64
}

// Segments are the bar of the counts: one segment per non-empty bucket, failures first. A
// non-empty bucket is at least 1% wide, so that one Degraded Cluster among 10,000 shows.
func (c Counts) Segments() []Segment {
	if c.Total == 0 {
		return nil
	}
	var segs []Segment
	x := 0.0
	for _, b := range buckets {
		n := c.Of(b)
		if n == 0 {
			continue
		}
		w := max(float64(n)*100/float64(c.Total), 1)
		segs = append(segs, Segment{Bucket: b, Count: n, X: x, Width: w})
		x += w
	}
	// The minimum widths may overflow 100%: the widest segment gives the excess back.
	if over := x - 100; over > 0 {
		widest := 0
		for i := range segs {
			if segs[i].Width > segs[widest].Width {
				widest = i
			}
		}
		segs[widest].Width -= over
		for i := widest + 1; i < len(segs); i++ {
			segs[i].X -= over
		}
	}
	return segs
}

// Summary is the counts in words, failures first: "1 Degraded, 2 Progressing, 7 Available".
func (c Counts) Summary() string {
	if c.Total == 0 {
		return "no Clusters"
	}
	var parts []string
	for _, b := range buckets {
		if n := c.Of(b); n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, b))
		}
	}
	return strings.Join(parts, ", ")
}

// ClusterRow is one Cluster in a list.
type ClusterRow struct {
	Namespace, Name string
	// Stack is the ClusterStack the Cluster's release belongs to.
	Stack string
	// Release is the release the Cluster uses (its ClusterAddon's desiredRelease).
	Release string
	// State is the ClusterAddon's state (plugin.ObjectState), NotFound before it has one.
	State  string
	Bucket string
	// Message explains a state other than Ready, on one line.
	Message string
	// Since is when the state's condition last changed; zero when unknown.
	Since time.Time
	// Progress is "<ready>/<total>" components.
	Progress string
}

// rows are the Clusters of objs: one per ClusterAddon, and one per CAPI Cluster that uses a
// release of a ClusterStack of its namespace and has no ClusterAddon yet.
func rows(objs Objects) []ClusterRow {
	out := make([]ClusterRow, 0, len(objs.Addons))
	have := make(map[string]bool, len(objs.Addons))
	for i := range objs.Addons {
		a := &objs.Addons[i]
		have[a.Namespace+"/"+a.Name] = true
		st, msg := plugin.ObjectState(a.Status.Conditions)
		r := ClusterRow{Namespace: a.Namespace, Name: a.Name, Stack: a.Status.ClusterStack, Release: a.Status.DesiredRelease,
			State: st, Bucket: BucketOf(st), Message: oneLine(msg, rowMessageLen), Progress: a.Status.Progress}
		if c := apimeta.FindStatusCondition(a.Status.Conditions, conditionOfState(st)); c != nil {
			r.Since = c.LastTransitionTime.Time
		}
		out = append(out, r)
	}
	stackKeys := map[string]string{}
	for i := range objs.Stacks {
		cs := &objs.Stacks[i]
		stackKeys[cs.Namespace+"/"+plugin.StackKey(cs)] = cs.Name
	}
	for i := range objs.Clusters {
		c := &objs.Clusters[i]
		if have[c.Namespace+"/"+c.Name] {
			continue
		}
		class := plugin.ClassOf(c)
		stack, ok := stackKeys[c.Namespace+"/"+plugin.ReleaseStackKey(class)]
		if !ok {
			continue
		}
		r := ClusterRow{Namespace: c.Namespace, Name: c.Name, Stack: stack, Release: class, State: plugin.StateNotFound,
			Bucket: BucketOther, Message: "no ClusterAddon yet", Since: c.CreationTimestamp.Time}
		if plugin.IsPaused(c) {
			r.State, r.Message = plugin.StatePaused, "the Cluster is paused"
		}
		out = append(out, r)
	}
	return out
}

// conditionOfState is the condition type that decides a state.
func conditionOfState(state string) string {
	switch state {
	case plugin.StateDegraded:
		return csv1.DegradedCondition
	case plugin.StateProgressing:
		return csv1.ProgressingCondition
	case plugin.StatePaused:
		return csv1.PausedCondition
	case plugin.StateAvailable:
		return csv1.AvailableCondition
	}
	return csv1.ReadyCondition
}

// Query is what a page's cluster list shows: a search, a state and a page.
type Query struct {
	// Search matches a substring of the Cluster's namespace/name, release or message.
	Search string
	// State is StateFailing (the default: every bucket but Available), StateAll, or a bucket.
	State string
	// Stack is "<namespace>/<name>" of one ClusterStack, or empty for all.
	Stack string
	// Page is 1-based.
	Page int
}

// States of the cluster list besides the buckets.
const (
	// StateFailing lists the Clusters that are not Available.
	StateFailing = "failing"
	// StateAll lists every Cluster.
	StateAll = "all"
)

// StateChoices are the cluster list's state filter values, in the order the form offers them.
var StateChoices = []string{StateFailing, BucketDegraded, BucketProgressing, BucketOther, BucketAvailable, StateAll}

// PageSize is how many Clusters one page of a list shows.
const PageSize = 50

// maxSearch bounds the search string.
const maxSearch = 256

// ParseQuery reads a Query from a URL's query; unknown values fall back to the defaults.
func ParseQuery(v url.Values) Query {
	q := Query{Search: strings.TrimSpace(v.Get("q")), State: v.Get("state"), Stack: v.Get("stack"), Page: 1}
	if len(q.Search) > maxSearch {
		q.Search = q.Search[:maxSearch]
	}
	if !slices.Contains(StateChoices, q.State) {
		q.State = StateFailing
	}
	if p, err := strconv.Atoi(v.Get("page")); err == nil && p > 1 {
		q.Page = p
	}
	return q
}

// Values is the query as URL values (the defaults left out), with page p.
func (q Query) Values(p int) url.Values {
	v := url.Values{}
	if q.Search != "" {
		v.Set("q", q.Search)
	}
	if q.State != StateFailing && q.State != "" {
		v.Set("state", q.State)
	}
	if q.Stack != "" {
		v.Set("stack", q.Stack)
	}
	if p > 1 {
		v.Set("page", strconv.Itoa(p))
	}
	return v
}

func (q Query) matches(r *ClusterRow) bool {
	switch q.State {
	case StateAll:
	case StateFailing, "":
		if r.Bucket == BucketAvailable {
			return false
		}
	default:
		if r.Bucket != q.State {
			return false
		}
	}
	if q.Stack != "" && q.Stack != r.Namespace+"/"+r.Stack {
		return false
	}
	if q.Search == "" {
		return true
	}
	s := strings.ToLower(q.Search)
	return strings.Contains(strings.ToLower(r.Namespace+"/"+r.Name), s) || strings.Contains(strings.ToLower(r.Release), s) ||
		strings.Contains(strings.ToLower(r.Message), s)
}

// ClusterList is one page of a filtered list of Clusters, failures first.
type ClusterList struct {
	Rows []ClusterRow
	// Matching counts the Clusters the query matches; Page and Pages place Rows among them.
	Matching, Page, Pages int
	Query                 Query
}

// bucketRank orders buckets failures first.
func bucketRank(b string) int { return slices.Index(buckets, b) }

// listClusters filters rows by q and returns q's page: Degraded first (longest first), then
// Progressing, Other and Available, each by namespace and name.
func listClusters(all []ClusterRow, q Query) ClusterList {
	var match []ClusterRow
	for i := range all {
		if q.matches(&all[i]) {
			match = append(match, all[i])
		}
	}
	slices.SortFunc(match, func(a, b ClusterRow) int {
		if c := cmp.Compare(bucketRank(a.Bucket), bucketRank(b.Bucket)); c != 0 {
			return c
		}
		if a.Bucket == BucketDegraded {
			if c := a.Since.Compare(b.Since); c != 0 {
				return c
			}
		}
		return cmp.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	l := ClusterList{Matching: len(match), Query: q, Pages: max(1, (len(match)+PageSize-1)/PageSize)}
	l.Page = min(q.Page, l.Pages)
	from := (l.Page - 1) * PageSize
	l.Rows = match[from:min(from+PageSize, len(match))]
	return l
}

// Fleet is the fleet page: every stack with its releases and their Clusters by bucket, the
// Clusters the query selects (failing ones by default) and the ManagementOperators.
type Fleet struct {
	Totals     Counts
	Stacks     []StackSummary
	Clusters   ClusterList
	Operators  []OperatorSummary
	Unreadable []string
}

// StackSummary is a stack on the fleet page.
type StackSummary struct {
	Namespace, Name string
	State, Message  string
	// AvailableVersion is status.versions.available.
	AvailableVersion string
	Counts           Counts
	// Halted names the halted wave of its rollout, if one is.
	Halted   string
	Releases []ReleaseSummary
}

// ReleaseSummary is a release on the fleet page.
type ReleaseSummary struct {
	Name, Version string
	State         string
	Reasons       []string
	Counts        Counts
}

// BuildFleet builds the fleet page: counts per stack, release and bucket, over every Cluster;
// the stacks with Degraded Clusters first, then Progressing ones, then by name.
func BuildFleet(objs Objects, q Query) Fleet {
	all := rows(objs)
	f := Fleet{Unreadable: objs.Unreadable}
	type key struct{ ns, stack, release string }
	perRelease := map[key]*Counts{}
	perStack := map[key]*Counts{}
	for i := range all {
		r := &all[i]
		f.Totals.add(r.Bucket)
		sk := key{r.Namespace, r.Stack, ""}
		if perStack[sk] == nil {
			perStack[sk] = &Counts{}
		}
		perStack[sk].add(r.Bucket)
		rk := key{r.Namespace, r.Stack, r.Release}
		if perRelease[rk] == nil {
			perRelease[rk] = &Counts{}
		}
		perRelease[rk].add(r.Bucket)
	}
	for i := range objs.Stacks {
		cs := &objs.Stacks[i]
		st, msg := plugin.ObjectState(cs.Status.Conditions)
		s := StackSummary{Namespace: cs.Namespace, Name: cs.Name, State: st, Message: oneLine(msg, rowMessageLen),
			AvailableVersion: cs.Status.Versions.Available}
		if c := perStack[key{cs.Namespace, cs.Name, ""}]; c != nil {
			s.Counts = *c
		}
		if cs.Status.Rollout != nil {
			for _, w := range cs.Status.Rollout.Waves {
				if w.Phase == csv1.WaveHalted {
					s.Halted = w.Name
					break
				}
			}
		}
		seen := map[string]bool{}
		for _, rn := range releaseNodes(cs, objs.Releases) {
			seen[rn.Name] = true
			r := ReleaseSummary{Name: rn.Name, Version: rn.Version, State: rn.State, Reasons: rn.Reasons}
			if c := perRelease[key{cs.Namespace, cs.Name, rn.Name}]; c != nil {
				r.Counts = *c
			}
			s.Releases = append(s.Releases, r)
		}
		// A release Clusters use that the stack does not list (yet).
		for k, c := range perRelease {
			if k.ns == cs.Namespace && k.stack == cs.Name && k.release != "" && !seen[k.release] {
				s.Releases = append(s.Releases, ReleaseSummary{Name: k.release, State: plugin.StateNotFound, Counts: *c})
			}
		}
		f.Stacks = append(f.Stacks, s)
	}
	slices.SortFunc(f.Stacks, func(a, b StackSummary) int {
		if c := cmp.Compare(stackRank(a), stackRank(b)); c != 0 {
			return c
		}
		return cmp.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	f.Clusters = listClusters(all, q)
	f.Operators = operatorSummaries(objs.Operators)
	return f
}

// stackRank orders stacks on the fleet page: Degraded Clusters or stack, then a halted
// rollout, then Progressing, then the rest.
func stackRank(s StackSummary) int {
	switch {
	case s.Counts.Degraded > 0 || s.State == plugin.StateDegraded:
		return 0
	case s.Halted != "":
		return 1
	case s.Counts.Progressing > 0 || s.State == plugin.StateProgressing:
		return 2
	}
	return 3
}

// releaseNodes are the releases of a stack as `tree` shows them (status.releases, the
// ClusterStackReleases of the stack), ordered by version, without their Clusters.
func releaseNodes(cs *csv1.ClusterStack, releases []csv1.ClusterStackRelease) []plugin.ReleaseNode {
	t := plugin.BuildTree(plugin.TreeInput{Stacks: []csv1.ClusterStack{*cs}, Releases: releases})
	if len(t.Stacks) == 0 {
		return nil
	}
	return t.Stacks[0].Releases
}

// rowMessageLen bounds a message in a list row.
const rowMessageLen = 240

// oneLine is msg with its whitespace runs folded to one space, cut at limit runes (0: no limit).
func oneLine(msg string, limit int) string {
	msg = strings.Join(strings.Fields(msg), " ")
	if limit > 0 {
		if r := []rune(msg); len(r) > limit {
			return string(r[:limit-1]) + "…"
		}
	}
	return msg
}

// ConditionRow is one condition as a page shows it.
type ConditionRow struct {
	Type, Status, Reason, Message string
	Since                         time.Time
}

func conditionRows(conds []metav1.Condition) []ConditionRow {
	out := make([]ConditionRow, 0, len(conds))
	for _, c := range conds {
		out = append(out, ConditionRow{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message, Since: c.LastTransitionTime.Time})
	}
	return out
}
