// Package upgradediff computes what moving Clusters from one release of a stack to another
// changes in them, before it happens: per component the kind and version, old -> new; per Cluster
// the values the operator renders (internal/render, with that Cluster's objects) and the objects
// Flux would apply into its workload cluster (`helm template` of both charts through Helm's Go
// SDK, kustomize builds of both directories with Flux's own packages and its post-build
// substitution, internal/stack), as objects added, changed and removed, with cluster-scoped
// objects and CustomResourceDefinitions first. Credentials are hidden (Redaction).
//
// It has no client: callers load both releases' stacks (from source-controller's artifacts, a
// checkout or two directories) and read the Clusters' objects, then call Compute and print the
// Diff as text (WriteText, for terminals) or bounded Markdown (Markdown, for pull requests).
package upgradediff

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/redact"
	"github.com/clusterstack-io/clusterstack-operator/internal/render"
	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
)

// Release is one release of a stack, as its templates see it and as it is on disk.
type Release struct {
	// Release is `.Release` of the values templates: the release's name ("aws-base-1-36-v2"),
	// stack version and Kubernetes version.
	Release render.Release
	// Stack is the release's stack, loaded from a directory that exists while Compute runs
	// (its charts and kustomize directories are rendered from it).
	Stack *stack.Stack
}

// Cluster is one Cluster whose move is diffed.
type Cluster struct {
	// Namespace and Name of the Cluster.
	Namespace, Name string
	// Objects are the Cluster, its control plane and its infrastructure cluster as the operator
	// renders values from them (render.Clean of the API objects); Objects.Release is ignored:
	// each release renders with its own.
	Objects render.Input
}

// Input is what Compute diffs: Clusters moving From one release To another.
type Input struct {
	From, To Release
	Clusters []Cluster
	// AllowMissing renders a value a template prints but a Cluster's objects lack as "" instead
	// of failing (stackctl diff's made-up Cluster lacks provider status fields). The operator
	// itself waits for such a value; leave it false for real Clusters.
	AllowMissing bool
	// Context is the number of unchanged lines around each change in the unified diffs;
	// 0 means 3.
	Context int
}

// Changes of a component or an object.
const (
	// Added: only the new release has it.
	Added = "Added"
	// Removed: only the old release has it.
	Removed = "Removed"
	// Changed: both have it, and it differs.
	Changed = "Changed"
	// Unchanged: both have it, the same.
	Unchanged = "Unchanged"
)

// Where a component is delivered.
const (
	// TargetManagement: the cluster-class, applied to the management cluster.
	TargetManagement = "management cluster"
	// TargetWorkload: an addon, applied into every workload cluster.
	TargetWorkload = "workload cluster"
)

// Component is what changes of one component of the stack, whatever the Cluster.
type Component struct {
	// Name of the component ("cluster-class", "cni").
	Name string `json:"name"`
	// Change is Added, Removed, Changed (kind, version or any file differs) or Unchanged.
	Change string `json:"change"`
	// FromKind and ToKind are Helm or Kustomize; "" on the side that lacks the component.
	FromKind string `json:"fromKind,omitempty"`
	ToKind   string `json:"toKind,omitempty"`
	// FromVersion and ToVersion are the chart's version (Helm) or "sha256-<12 hex>" of the
	// directory (Kustomize).
	FromVersion string `json:"fromVersion,omitempty"`
	ToVersion   string `json:"toVersion,omitempty"`
	// Target is TargetManagement or TargetWorkload.
	Target string `json:"target"`
	// Note says what else a reviewer should know: a kind change replaces the component, a
	// cluster-class is installed alongside the old one.
	Note string `json:"note,omitempty"`
}

// Diff is the whole diff of a move.
type Diff struct {
	// From and To are the releases' names.
	From string `json:"from"`
	To   string `json:"to"`
	// Components of either release, in the new release's addon order (the cluster-class
	// first, removed components last).
	Components []Component `json:"components"`
	// Clusters in the order given.
	Clusters []ClusterDiff `json:"clusters"`
}

// ClusterDiff is what the move changes in one Cluster.
type ClusterDiff struct {
	// Cluster is "<namespace>/<name>".
	Cluster string `json:"cluster"`
	// Values are the rendered values that change: the variables every component gets first
	// (Component ""), then each component's, in component order. Unchanged ones are left out.
	Values []ValuesDiff `json:"values,omitempty"`
	// Objects are the workload cluster's objects that are added, changed or removed:
	// CustomResourceDefinitions first, then other cluster-scoped objects, then namespaced ones.
	Objects []ObjectChange `json:"objects,omitempty"`
	// Added, Changed and Removed count Objects.
	Added   int `json:"added"`
	Changed int `json:"changed"`
	Removed int `json:"removed"`
	// Errors say what could not be rendered (a values template or chart failing for this
	// Cluster at one release): the diff of that component is missing.
	Errors []string `json:"errors,omitempty"`
}

// ValuesDiff is the diff of one component's rendered values.
type ValuesDiff struct {
	// Component is the component's name; "" for the variables every component gets
	// (cluster_name, stack_version, ...).
	Component string `json:"component,omitempty"`
	// Kind is Helm (the HelmRelease's values, YAML) or Kustomize (substitution variables,
	// "name: value" lines); "" for the variables.
	Kind string `json:"kind,omitempty"`
	// Diff is a unified diff (hunks only), credentials hidden.
	Diff string `json:"diff"`
}

// ObjectChange is one object of the workload cluster that the move adds, changes or removes.
type ObjectChange struct {
	// Change is Added, Changed or Removed.
	Change string `json:"change"`
	// Component delivering the object.
	Component string `json:"component"`
	// Group ("" for the core group), Kind, Namespace ("" when cluster-scoped) and Name identify
	// the object.
	Group     string `json:"group,omitempty"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// ClusterScoped: the object is not namespaced (a ClusterRole, a CRD, a
	// StorageClass, a webhook configuration, ...).
	ClusterScoped bool `json:"clusterScoped,omitempty"`
	// CRD: the object is a CustomResourceDefinition.
	CRD bool `json:"crd,omitempty"`
	// Note says how Flux treats the object differently (a CRD of a chart's crds/ directory).
	Note string `json:"note,omitempty"`
	// Diff is a unified diff (hunks only) of the object's YAML, credentials hidden; empty for
	// a removed object.
	Diff string `json:"diff,omitempty"`
}

// Ref is "Kind namespace/name" or "Kind name".
func (o ObjectChange) Ref() string {
	if o.Namespace == "" {
		return o.Kind + " " + o.Name
	}
	return o.Kind + " " + o.Namespace + "/" + o.Name
}

// HasChanges reports whether the move changes anything: a component, a Cluster's values or
// objects.
func (d *Diff) HasChanges() bool {
	for _, c := range d.Components {
		if c.Change != Unchanged {
			return true
		}
	}
	for _, c := range d.Clusters {
		if len(c.Values) > 0 || len(c.Objects) > 0 {
			return true
		}
	}
	return false
}

// Errors lists every Cluster's errors as "<cluster>: <error>".
func (d *Diff) Errors() []string {
	var out []string
	for _, c := range d.Clusters {
		for _, e := range c.Errors {
			out = append(out, c.Cluster+": "+e)
		}
	}
	return out
}

// clusterClassNote is the note on a changed cluster-class.
const clusterClassNote = "each release installs its own ClusterClass (named like the release) next to the others; the move changes the Clusters' classRef"

// Compute diffs the move of in.Clusters from in.From to in.To. It fails only when a release has
// no stack; what cannot be rendered for a Cluster is reported in that Cluster's Errors.
func Compute(in Input) (*Diff, error) {
	if in.From.Stack == nil || in.To.Stack == nil {
		return nil, errors.New("upgradediff: both releases need their stack")
	}
	if in.Context <= 0 {
		in.Context = 3
	}
	d := &Diff{From: in.From.Release.Name, To: in.To.Release.Name, Components: components(in.From.Stack, in.To.Stack), Clusters: []ClusterDiff{}}
	from, to := newSide(in.From, in.AllowMissing), newSide(in.To, in.AllowMissing)
	for _, c := range in.Clusters {
		d.Clusters = append(d.Clusters, diffCluster(in, d.Components, from, to, c))
	}
	return d, nil
}

// components compares the two stacks' components: the cluster-class, then the addons in the
// new release's order, then those the new release no longer has.
func components(from, to *stack.Stack) []Component {
	out := []Component{compare(&from.ClusterClass, &to.ClusterClass, TargetManagement)}
	if out[0].Change == Changed {
		out[0].Note = clusterClassNote
	}
	for _, c := range to.Components {
		var old *stack.Component
		if oc, ok := from.Component(c.Name); ok {
			old = &oc
		}
		out = append(out, compare(old, &c, TargetWorkload))
	}
	for _, c := range from.Components {
		if _, ok := to.Component(c.Name); !ok {
			out = append(out, compare(&c, nil, TargetWorkload))
		}
	}
	return out
}

func compare(from, to *stack.Component, target string) Component {
	out := Component{Target: target}
	if from != nil {
		out.Name, out.FromKind, out.FromVersion = from.Name, string(from.Kind), from.Version
	}
	if to != nil {
		out.Name, out.ToKind, out.ToVersion = to.Name, string(to.Kind), to.Version
	}
	switch {
	case from == nil:
		out.Change = Added
	case to == nil:
		out.Change = Removed
		if target == TargetWorkload {
			out.Note = "the operator deletes its Flux object: Flux uninstalls the Helm release or prunes the Kustomization's objects"
		}
	case from.Kind != to.Kind:
		out.Change = Changed
		out.Note = fmt.Sprintf("the kind changes from %s to %s: the operator deletes the component's %s (its objects are removed) before the %s installs the new one",
			from.Kind, to.Kind, fluxKind(from.Kind), fluxKind(to.Kind))
	case from.Version != to.Version || from.Digest != to.Digest:
		out.Change = Changed
		if from.Kind == stack.KindHelm && from.Version == to.Version && target == TargetWorkload {
			out.Note = "files changed under the same chart version: Flux upgrades the Helm release only when the chart version or the values change"
		}
	default:
		out.Change = Unchanged
	}
	return out
}

func fluxKind(k stack.Kind) string {
	if k == stack.KindHelm {
		return "HelmRelease"
	}
	return "Kustomization"
}

// side is one release, ready to render for Clusters.
type side struct {
	rel          Release
	renderer     *stack.AddonRenderer
	allowMissing bool
}

func newSide(r Release, allowMissing bool) *side {
	return &side{rel: r, renderer: r.Stack.NewAddonRenderer(), allowMissing: allowMissing}
}

// rendered is what one release renders for one Cluster.
type rendered struct {
	// base are the variables every component gets.
	base map[string]string
	// values of each component: Helm values, or the kustomize component's own variables
	// (flattened); absent when the component's values failed.
	values map[string]map[string]any
	// data is the values ConfigMap's data (what Flux reads).
	data map[string]string
	// objects of each component; absent when rendering failed.
	objects map[string][]stack.AddonObject
	// namespaces are the Helm components' target namespaces, where their namespaced objects
	// without a namespace land.
	namespaces map[string]string
	errs       []string
}

// render renders the values and the objects of every addon component for Cluster c.
func (s *side) render(c Cluster) rendered {
	in := c.Objects
	in.Release = s.rel.Release
	r := rendered{base: render.BaseVariables(in), values: map[string]map[string]any{}, data: map[string]string{}, objects: map[string][]stack.AddonObject{}, namespaces: map[string]string{}}
	maps.Copy(r.data, r.base)
	comps := s.rel.Stack.RenderComponents()
	for i := range comps {
		comps[i].AllowMissing = s.allowMissing
	}
	// The operator renders the whole ConfigMap or nothing: a failure here (of any component,
	// or two values becoming one variable) means it would wait, delivering nothing of the
	// release to this Cluster.
	if _, err := render.Render(in, comps); err != nil {
		r.errs = append(r.errs, fmt.Sprintf("release %s: the values do not render, so the operator waits instead of moving the Cluster: %v", s.rel.Release.Name, err))
	}
	failed := map[string]bool{}
	for _, rc := range comps {
		v, err := render.RenderComponent(in, rc)
		if err != nil {
			failed[rc.Name] = true
			continue
		}
		r.values[rc.Name] = v
		if rc.Helm {
			out, err := yaml.Marshal(v)
			if err != nil {
				failed[rc.Name] = true
				continue
			}
			r.data[render.HelmValuesKey(rc.Name)] = string(out)
			continue
		}
		maps.Copy(r.data, render.Flatten(v))
	}
	for _, sc := range s.rel.Stack.Components {
		if failed[sc.Name] {
			continue
		}
		ns, releaseName := fluxgen.AddonTarget(c.Name, csv1.ReleaseComponent{Name: sc.Name, Namespace: sc.Namespace})
		objs, err := s.renderer.Render(sc, stack.AddonRender{
			ReleaseName: releaseName, Namespace: ns, KubernetesVersion: s.rel.Release.KubernetesVersion,
			Values: r.data, ValuesKey: render.HelmValuesKey(sc.Name),
		})
		if err != nil {
			r.errs = append(r.errs, fmt.Sprintf("release %s: component %s does not render: %v", s.rel.Release.Name, sc.Name, err))
			continue
		}
		if sc.Kind == stack.KindHelm {
			r.namespaces[sc.Name] = ns
		}
		r.objects[sc.Name] = objs
	}
	return r
}

// diffCluster diffs the values and objects of one Cluster.
func diffCluster(in Input, comps []Component, from, to *side, c Cluster) ClusterDiff {
	out := ClusterDiff{Cluster: c.Namespace + "/" + c.Name}
	old, cur := from.render(c), to.render(c)
	out.Errors = append(append(out.Errors, old.errs...), cur.errs...)

	scrub := &redact.Scrubber{}
	for _, r := range []rendered{old, cur} {
		registerSecrets(scrub, r)
	}

	// Values: the variables, then each component's.
	if d := unified(linesOf(maskFlat(old.base, cur.base, redact.MaskBefore)), linesOf(maskFlat(cur.base, old.base, redact.MaskAfter)), in.Context); d != "" {
		out.Values = append(out.Values, ValuesDiff{Diff: scrub.Text(d)})
	}
	for _, comp := range comps {
		if comp.Target != TargetWorkload {
			continue
		}
		ov, okOld := old.values[comp.Name]
		nv, okNew := cur.values[comp.Name]
		if (comp.FromKind != "" && !okOld) || (comp.ToKind != "" && !okNew) {
			out.Errors = append(out.Errors, fmt.Sprintf("component %s: its values do not render at %s: not diffed", comp.Name, failedSides(comp, okOld, okNew, in)))
			continue
		}
		kind := comp.ToKind
		if kind == "" {
			kind = comp.FromKind
		}
		a, b := valuesText(ov, nv, comp.FromKind, redact.MaskBefore), valuesText(nv, ov, comp.ToKind, redact.MaskAfter)
		if d := unified(a, b, in.Context); d != "" {
			out.Values = append(out.Values, ValuesDiff{Component: comp.Name, Kind: kind, Diff: scrub.Text(d)})
		}
	}

	// Objects.
	scope := newScopes(old, cur)
	for _, comp := range comps {
		if comp.Target != TargetWorkload {
			continue
		}
		oo, okOld := old.objects[comp.Name]
		no, okNew := cur.objects[comp.Name]
		if (comp.FromKind != "" && !okOld) || (comp.ToKind != "" && !okNew) {
			continue // reported above or by render
		}
		oldObjs := keyed(oo, old.namespaces[comp.Name], scope)
		newObjs := keyed(no, cur.namespaces[comp.Name], scope)
		out.Objects = append(out.Objects, diffObjects(comp.Name, oldObjs, newObjs, scrub, in.Context)...)
	}
	sortObjects(out.Objects, comps)
	for _, o := range out.Objects {
		switch o.Change {
		case Added:
			out.Added++
		case Changed:
			out.Changed++
		case Removed:
			out.Removed++
		}
	}
	return out
}

func failedSides(comp Component, okOld, okNew bool, in Input) string {
	var s []string
	if comp.FromKind != "" && !okOld {
		s = append(s, in.From.Release.Name)
	}
	if comp.ToKind != "" && !okNew {
		s = append(s, in.To.Release.Name)
	}
	return strings.Join(s, " and ")
}

// valuesText prints a component's values for the diff: Helm values as YAML, a kustomize
// component's as its substitution variables, one "name: value" line each. Credentials are
// masked (maskTree, maskFlat) against other, the other release's values of the component, with
// changed the mask of one that differs.
func valuesText(values, other map[string]any, kind, changed string) []string {
	if values == nil {
		return nil
	}
	if kind == string(stack.KindHelm) {
		out, err := yaml.Marshal(maskTree(values, other, changed))
		if err != nil {
			return []string{fmt.Sprintf("# values cannot be printed: %v", err)}
		}
		if strings.TrimSpace(string(out)) == "{}" {
			return nil
		}
		return splitLines(string(out))
	}
	var otherFlat map[string]string
	if other != nil {
		otherFlat = render.Flatten(other)
	}
	return linesOf(maskFlat(render.Flatten(values), otherFlat, changed))
}

// linesOf prints flat variables as sorted "name: value" lines.
func linesOf(vars map[string]string) []string {
	out := make([]string, 0, len(vars))
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		out = append(out, k+": "+vars[k]+"\n")
	}
	return out
}

// sortObjects orders CRDs first, then other cluster-scoped objects, then namespaced ones; each
// group by component (in comps' order), kind, namespace and name.
func sortObjects(objs []ObjectChange, comps []Component) {
	order := map[string]int{}
	for i, c := range comps {
		order[c.Name] = i
	}
	class := func(o ObjectChange) int {
		switch {
		case o.CRD:
			return 0
		case o.ClusterScoped:
			return 1
		}
		return 2
	}
	sort.SliceStable(objs, func(i, j int) bool {
		a, b := objs[i], objs[j]
		if ca, cb := class(a), class(b); ca != cb {
			return ca < cb
		}
		if oa, ob := order[a.Component], order[b.Component]; oa != ob {
			return oa < ob
		}
		return strings.Join([]string{a.Kind, a.Group, a.Namespace, a.Name}, "\x00") < strings.Join([]string{b.Kind, b.Group, b.Namespace, b.Name}, "\x00")
	})
}
