package plugin

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/render"
	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
)

// Where a value came from. The operator does not record it: `values` computes it by rendering
// the stack's templates again (with internal/render, as the operator does) while changing one
// input field at a time, and reporting the fields whose change changes the value.
const (
	// SourceCluster: a field of the CAPI Cluster.
	SourceCluster = "Cluster"
	// SourceVariable: a topology variable of the Cluster (spec.topology.variables).
	SourceVariable = "Variable"
	// SourceControlPlane: a field of the Cluster's control plane object (spec.controlPlaneRef).
	SourceControlPlane = "ControlPlane"
	// SourceInfraCluster: a field of the Cluster's infrastructure cluster (spec.infrastructureRef).
	SourceInfraCluster = "InfraCluster"
	// SourceRelease: the stack release (.Release.Name, .Release.Version, .Release.KubernetesVersion).
	SourceRelease = "Release"
	// SourceStack: written in the stack's values template (a default of the stack).
	SourceStack = "Stack"
	// SourceOverride: set by a ClusterAddonOverride selecting the Cluster (it wins over the
	// stack's templates); Object names it, Field the key in its values.
	SourceOverride = "Override"
	// SourceUnknown: the stack's templates could not be read or rendered, so the origin is unknown.
	SourceUnknown = "Unknown"
)

// Origin is where one value came from.
type Origin struct {
	// Source is Cluster, Variable, ControlPlane, InfraCluster, Release, Stack, Override or
	// Unknown.
	Source string `json:"source"`
	// Object is "<Kind>/<name>" of the object read (Cluster, control plane, infrastructure
	// cluster, ClusterStackRelease).
	Object string `json:"object,omitempty"`
	// Field is the field path in the object (".spec.controlPlaneEndpoint.host"), the variable
	// name and path for a topology variable ("region"), empty when the value depends on the
	// object as a whole (its presence).
	Field string `json:"field,omitempty"`
	// File is the stack file holding the template, for Source Stack.
	File string `json:"file,omitempty"`
}

// String is the origin as printed: "Cluster/a .spec.x", "variable region", "stack <file>".
func (o Origin) String() string {
	switch o.Source {
	case SourceStack:
		return "stack " + o.File
	case SourceVariable:
		return "variable " + o.Field
	case SourceOverride:
		return "override " + strings.TrimPrefix(o.Object, "ClusterAddonOverride/") + " " + o.Field
	case SourceUnknown:
		return "unknown"
	}
	return strings.TrimSpace(o.Object + " " + o.Field)
}

// Value is one rendered value and where it came from.
type Value struct {
	// Key is the variable name (flat variables, kustomize components) or the path in a Helm
	// component's values ("apiServer.host", "args[0]").
	Key string `json:"key"`
	// Value is the value as the ConfigMap holds it.
	Value string `json:"value"`
	// From lists the origins; a value computed from several fields has several.
	From []Origin `json:"from"`
}

// ComponentValues are one component's values.
type ComponentValues struct {
	// Name of the component.
	Name string `json:"name"`
	// Kind is Helm or Kustomize.
	Kind string `json:"kind"`
	// Release whose values the component's Flux object uses.
	Release string `json:"release"`
	// FluxObject is "<Kind>/<name>" of the component's Flux object.
	FluxObject string `json:"fluxObject,omitempty"`
	// ConfigMap is the values ConfigMap the component reads.
	ConfigMap string `json:"configMap,omitempty"`
	// Key is the ConfigMap key of a Helm component's values (its valuesFrom key); a kustomize
	// component's values are flat variables of the ConfigMap, substituted by Flux.
	Key string `json:"key,omitempty"`
	// Values are the component's own values, sorted by key.
	Values []Value `json:"values"`
	// Note says what could not be determined, or that the ConfigMap differs from a render with
	// the objects as they are now (the operator renders again when they change).
	Note string `json:"note,omitempty"`
}

// ClusterValues is the output of `values CLUSTER`.
type ClusterValues struct {
	// Cluster is "<namespace>/<name>".
	Cluster string `json:"cluster"`
	// Release is the release the Cluster's topology uses (the ClusterAddon's desiredRelease).
	Release string `json:"release,omitempty"`
	// ConfigMaps are the Cluster's values ConfigMaps, one per release its Flux objects use.
	ConfigMaps []string `json:"configMaps"`
	// Variables are the flat variables every component gets (cluster_name, ...), from the
	// desired release's ConfigMap.
	Variables []Value `json:"variables"`
	// Components, in addon order.
	Components []ComponentValues `json:"components"`
	// Notes say what could not be read (a release's stack, a ConfigMap).
	Notes []string `json:"notes,omitempty"`
}

// ReleaseValues is what `values` knows of one release a Cluster's components use.
type ReleaseValues struct {
	// Release is the release as templates see it (.Release).
	Release render.Release
	// ConfigMap is the Cluster's values ConfigMap of the release; nil when there is none.
	ConfigMap *corev1.ConfigMap
	// Stack is the release's stack, read from its GitRepository's artifact (or a local
	// directory); nil when it could not be read.
	Stack *stack.Stack
	// StackError says why Stack is nil.
	StackError string
	// Overrides are the ClusterAddonOverrides the ConfigMap's clusterstack.io/overrides
	// annotation names, in that order, as read now.
	Overrides []render.Override
	// OverrideNotes say which of them could not be read (deleted since the render).
	OverrideNotes []string
}

// ValuesInput is what `values` reads for one Cluster.
type ValuesInput struct {
	// Namespace and Cluster name the Cluster.
	Namespace, Cluster string
	// Addon is the Cluster's ClusterAddon (components, their releases and Flux objects).
	Addon *csv1.ClusterAddon
	// Objects holds the Cluster, its control plane and infrastructure cluster as the operator
	// renders them (Release is set per release).
	Objects render.Input
	// Releases by name.
	Releases map[string]ReleaseValues
}

// ClusterValuesOf reports the Cluster's values, per component, with their origins. Values are
// taken from the ConfigMaps (what Flux applies); origins from Trace over the stack's templates.
func ClusterValuesOf(in ValuesInput) ClusterValues {
	out := ClusterValues{Cluster: in.Namespace + "/" + in.Cluster, ConfigMaps: []string{}, Variables: []Value{}, Components: []ComponentValues{}}
	if in.Addon == nil {
		out.Notes = append(out.Notes, "the Cluster has no ClusterAddon: no values are rendered for it")
		return out
	}
	out.Release = in.Addon.Status.DesiredRelease
	for _, name := range slices.Sorted(maps.Keys(in.Releases)) {
		if cm := in.Releases[name].ConfigMap; cm != nil {
			out.ConfigMaps = append(out.ConfigMaps, cm.Name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(in.Releases)) {
		rv := in.Releases[name]
		if rv.ConfigMap == nil {
			out.Notes = append(out.Notes, fmt.Sprintf("release %s: no values ConfigMap (the ClusterAddon's ValuesRendered condition says why)", name))
		}
		if rv.Stack == nil && rv.StackError != "" {
			out.Notes = append(out.Notes, fmt.Sprintf("release %s: origins unknown, the stack could not be read: %s", name, rv.StackError))
		}
		if len(rv.Overrides) > 0 {
			refs := make([]string, 0, len(rv.Overrides))
			for _, o := range rv.Overrides {
				refs = append(refs, o.Name)
			}
			out.Notes = append(out.Notes, fmt.Sprintf("release %s: values include %s (merged in this order over the stack's; the last wins)", name, strings.Join(refs, ", ")))
		}
		out.Notes = append(out.Notes, rv.OverrideNotes...)
	}

	if rv, ok := in.Releases[out.Release]; ok && rv.ConfigMap != nil {
		obj := in.Objects
		obj.Release = rv.Release
		base := traceLeaves(obj, "", func(i render.Input, _ bool) (map[string]string, error) { return render.BaseVariables(i), nil })
		for _, k := range render.BaseVariableNames() {
			v, ok := rv.ConfigMap.Data[k]
			if !ok {
				continue
			}
			from := base.origins(k, v)
			if len(from) == 1 && from[0].Source == SourceUnknown {
				// Tracing cannot attribute an empty value (there is no field to change) or one
				// rendered before the Cluster changed; each base variable reads one known field.
				if o, ok := baseVariableOrigin(k, obj); ok {
					from = []Origin{o}
				}
			}
			out.Variables = append(out.Variables, Value{Key: k, Value: v, From: from})
		}
	}

	for _, comp := range in.Addon.Status.Components {
		out.Components = append(out.Components, componentValues(in, comp))
	}
	return out
}

// baseVariableFields are the fields render.BaseVariables reads, for variables that are empty
// (tracing finds the field of a value only when the field is set). A test checks that tracing a
// Cluster with every field set finds exactly these.
var baseVariableFields = map[string]Origin{
	"cluster_name":                {Source: SourceCluster, Field: ".metadata.name"},
	"cluster_namespace":           {Source: SourceCluster, Field: ".metadata.namespace"},
	"cluster_pod_cidr":            {Source: SourceCluster, Field: ".spec.clusterNetwork.pods.cidrBlocks[0]"},
	"cluster_service_cidr":        {Source: SourceCluster, Field: ".spec.clusterNetwork.services.cidrBlocks[0]"},
	"cluster_service_domain":      {Source: SourceCluster, Field: ".spec.clusterNetwork.serviceDomain"},
	"control_plane_endpoint_host": {Source: SourceCluster, Field: ".spec.controlPlaneEndpoint.host"},
	"control_plane_endpoint_port": {Source: SourceCluster, Field: ".spec.controlPlaneEndpoint.port"},
	"kubernetes_version":          {Source: SourceCluster, Field: ".spec.topology.version"},
	"stack_release":               {Source: SourceRelease, Field: ".metadata.name"},
	"stack_version":               {Source: SourceRelease, Field: ".spec.version"},
}

func baseVariableOrigin(k string, in render.Input) (Origin, bool) {
	o, ok := baseVariableFields[k]
	if !ok {
		return Origin{}, false
	}
	if o.Source == SourceRelease {
		o.Object = "ClusterStackRelease/" + in.Release.Name
	} else {
		o.Object = objectRef(in.Cluster)
	}
	return o, true
}

func componentValues(in ValuesInput, comp csv1.AddonComponentStatus) ComponentValues {
	cv := ComponentValues{Name: comp.Name, Kind: string(comp.Kind), Release: comp.Release, FluxObject: comp.FluxObject, Values: []Value{}}
	rv, ok := in.Releases[comp.Release]
	if !ok || rv.ConfigMap == nil {
		cv.Note = "no values ConfigMap for release " + comp.Release
		return cv
	}
	cv.ConfigMap = rv.ConfigMap.Name
	obj := in.Objects
	obj.Release = rv.Release
	obj.Overrides = rv.Overrides
	helm := comp.Kind == csv1.ComponentKindHelm
	overridden := overrideOrigins(rv.Overrides, comp.Name, helm)

	var tr *traced
	if rv.Stack != nil {
		if sc, ok := rv.Stack.Component(comp.Name); ok {
			t := traceComponent(obj, rv.Stack, sc)
			tr = &t
		} else {
			cv.Note = fmt.Sprintf("the stack of release %s has no component %s", comp.Release, comp.Name)
		}
	}

	var have map[string]string
	if helm {
		cv.Key = render.HelmValuesKey(comp.Name)
		raw, ok := rv.ConfigMap.Data[cv.Key]
		if !ok {
			cv.Note = joinNote(cv.Note, fmt.Sprintf("ConfigMap %s has no key %s", rv.ConfigMap.Name, cv.Key))
			return cv
		}
		values := map[string]any{}
		if err := yaml.Unmarshal([]byte(raw), &values); err != nil {
			cv.Note = joinNote(cv.Note, fmt.Sprintf("ConfigMap %s key %s is not YAML: %v", rv.ConfigMap.Name, cv.Key, err))
			return cv
		}
		have = Leaves(values)
	} else {
		// A kustomize component's values are flat variables among every component's: only the
		// stack's template tells which are its own.
		if tr == nil {
			cv.Note = joinNote(cv.Note, "its variables cannot be told apart from the other components' without the stack")
			return cv
		}
		have = map[string]string{}
		for k := range tr.values {
			if v, ok := rv.ConfigMap.Data[k]; ok {
				have[k] = v
			}
		}
	}
	differs := false
	for _, k := range slices.Sorted(maps.Keys(have)) {
		v := have[k]
		var from []Origin
		switch o, ok := overridden[k]; {
		case ok:
			from = []Origin{o}
			if tr != nil && tr.err == nil && tr.values[k] != v {
				differs = true
			}
		case tr != nil:
			from = tr.origins(k, v)
			if tr.err == nil && tr.values[k] != v {
				differs = true
			}
		default:
			from = []Origin{{Source: SourceUnknown}}
		}
		cv.Values = append(cv.Values, Value{Key: k, Value: v, From: from})
	}
	if tr != nil && tr.err != nil {
		cv.Note = joinNote(cv.Note, "origins unknown: the template does not render now: "+tr.err.Error())
	} else if tr != nil && (differs || len(tr.values) != len(have)) {
		cv.Note = joinNote(cv.Note, "the ConfigMap differs from a render with the objects as they are now (the operator renders again when they change)")
	}
	return cv
}

// overrideOrigins maps each key (Leaves for Helm, flattened variables for kustomize) that the
// overrides set for the component to the last override setting it, which wins.
func overrideOrigins(os []render.Override, component string, helm bool) map[string]Origin {
	out := map[string]Origin{}
	for _, o := range os {
		v, ok := o.Components[component]
		if !ok {
			continue
		}
		keys := render.Flatten(v)
		if helm {
			keys = Leaves(v)
		}
		for k := range keys {
			field := ".spec.components[" + component + "].values." + k
			if !helm {
				field = ".spec.components[" + component + "].values (variable " + k + ")"
			}
			out[k] = Origin{Source: SourceOverride, Object: o.Name, Field: field}
		}
		// A key set to a map or list replaces what was below it: keys under it that the
		// override does not set do not come from the stack any more, but they are not in the
		// rendered values either, so nothing else needs attributing.
	}
	return out
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// traced is the result of tracing one template: its values and their origins.
type traced struct {
	values map[string]string
	from   map[string][]Origin
	file   string
	err    error
}

// origins of key k with value v: those traced, "stack <file>" when nothing traced changes it,
// Unknown when the key was not produced by the render (or the render failed).
func (t traced) origins(k, v string) []Origin {
	if t.err != nil {
		return []Origin{{Source: SourceUnknown}}
	}
	got, ok := t.values[k]
	if !ok || got != v {
		return []Origin{{Source: SourceUnknown}}
	}
	if o := t.from[k]; len(o) > 0 {
		return o
	}
	if t.file == "" {
		return []Origin{{Source: SourceUnknown}}
	}
	return []Origin{{Source: SourceStack, File: t.file}}
}

// traceComponent traces component c of stack s: its own template (overwrite.yaml) and its
// entry of a shared cluster-addon-values.yaml, merged as render merges them (the own value
// wins). Keys are Leaves of the values for Helm, the flattened variable names for kustomize.
func traceComponent(in render.Input, s *stack.Stack, c stack.Component) traced {
	rc := s.RenderComponents()
	var comp render.Component
	for _, x := range rc {
		if x.Name == c.Name {
			comp = x
		}
	}
	keys := func(values map[string]any) map[string]string {
		if comp.Helm {
			return Leaves(values)
		}
		return render.Flatten(values)
	}
	leavesOf := func(rcomp render.Component) leafFunc {
		return func(i render.Input, allowMissing bool) (map[string]string, error) {
			rcomp.AllowMissing = allowMissing
			v, err := render.RenderComponent(i, rcomp)
			if err != nil {
				return nil, err
			}
			return keys(v), nil
		}
	}
	merged := traceLeaves(in, comp.File, leavesOf(comp))
	if merged.err != nil || strings.TrimSpace(comp.Shared) == "" {
		if comp.File == "" {
			merged.file = comp.SharedFile
		}
		return merged
	}
	own := comp
	own.Shared, own.SharedFile = "", ""
	shared := comp
	shared.Template, shared.File = "", ""
	ownT := traceLeaves(in, comp.File, leavesOf(own))
	sharedT := traceLeaves(in, comp.SharedFile, leavesOf(shared))
	out := traced{values: merged.values, from: map[string][]Origin{}, file: comp.File}
	for k := range merged.values {
		src := sharedT
		if _, ok := ownT.values[k]; ok && ownT.err == nil {
			src = ownT
		}
		if o := src.from[k]; len(o) > 0 {
			out.from[k] = o
		} else if src.file != "" {
			out.from[k] = []Origin{{Source: SourceStack, File: src.file}}
		}
	}
	return out
}

// leafFunc renders values as flat keys; allowMissing renders a printed value missing from the
// data as "" instead of failing.
type leafFunc func(in render.Input, allowMissing bool) (map[string]string, error)

// traceLeaves renders f once as is, then once per input field with that field changed (a
// string gets a suffix, a number is incremented, a boolean negated), and once without each of
// the control plane and infrastructure cluster (missing values printed as ""). A key whose
// value changes depends on that field (or object). Renders that fail with a changed field tell
// nothing and are skipped.
func traceLeaves(in render.Input, file string, f leafFunc) traced {
	base, err := f(in, false)
	t := traced{values: base, from: map[string][]Origin{}, file: file, err: err}
	if err != nil {
		return t
	}
	note := func(out map[string]string, o Origin) {
		for k, v := range base {
			if got, ok := out[k]; !ok || got != v {
				t.from[k] = appendOrigin(t.from[k], o)
			}
		}
	}
	for _, p := range perturbations(in) {
		if out, err := f(p.in, false); err == nil {
			note(out, p.origin)
		}
	}
	// Presence: a template may test whether an object exists (with, if, default) without
	// printing a field of it.
	for _, src := range []string{SourceControlPlane, SourceInfraCluster} {
		i := in
		var obj map[string]any
		if src == SourceControlPlane {
			obj, i.ControlPlane = in.ControlPlane, nil
		} else {
			obj, i.InfraCluster = in.InfraCluster, nil
		}
		if obj == nil {
			continue
		}
		out, err := f(i, true)
		if err != nil {
			continue
		}
		o := Origin{Source: src, Object: objectRef(obj)}
		for k, v := range base {
			if got, ok := out[k]; (!ok || got != v) && !hasSource(t.from[k], src) {
				t.from[k] = appendOrigin(t.from[k], o)
			}
		}
	}
	return t
}

func hasSource(os []Origin, src string) bool {
	for _, o := range os {
		if o.Source == src {
			return true
		}
	}
	return false
}

func appendOrigin(os []Origin, o Origin) []Origin {
	if slices.Contains(os, o) {
		return os
	}
	return append(os, o)
}

type perturbation struct {
	in     render.Input
	origin Origin
}

// maxFields bounds the fields changed per object, so that a huge object costs bounded time.
const maxFields = 2000

// perturbations are the inputs with one field changed each: every leaf of the Cluster (its
// topology variables reported as variables), of the control plane, of the infrastructure
// cluster, and the release's name, version and Kubernetes version.
func perturbations(in render.Input) []perturbation {
	var out []perturbation
	clusterRef := objectRef(in.Cluster)
	for _, l := range leafPaths(in.Cluster, maxFields) {
		i := in
		i.Cluster = mutated(in.Cluster, l)
		o := Origin{Source: SourceCluster, Object: clusterRef, Field: pathString(l)}
		if name, sub, ok := variablePath(in.Cluster, l); ok {
			o = Origin{Source: SourceVariable, Object: clusterRef, Field: name + sub}
		}
		out = append(out, perturbation{in: i, origin: o})
	}
	for _, l := range leafPaths(in.ControlPlane, maxFields) {
		i := in
		i.ControlPlane = mutated(in.ControlPlane, l)
		out = append(out, perturbation{in: i, origin: Origin{Source: SourceControlPlane, Object: objectRef(in.ControlPlane), Field: pathString(l)}})
	}
	for _, l := range leafPaths(in.InfraCluster, maxFields) {
		i := in
		i.InfraCluster = mutated(in.InfraCluster, l)
		out = append(out, perturbation{in: i, origin: Origin{Source: SourceInfraCluster, Object: objectRef(in.InfraCluster), Field: pathString(l)}})
	}
	relRef := "ClusterStackRelease/" + in.Release.Name
	for _, r := range []struct {
		field string
		set   func(*render.Release)
	}{
		{".metadata.name", func(r *render.Release) { r.Name += "~" }},
		{".spec.version", func(r *render.Release) { r.Version += "~" }},
		{".status.kubernetesVersion", func(r *render.Release) { r.KubernetesVersion += "~" }},
	} {
		i := in
		r.set(&i.Release)
		out = append(out, perturbation{in: i, origin: Origin{Source: SourceRelease, Object: relRef, Field: r.field}})
	}
	return out
}

// variablePath reports whether leaf path p lies in the value of a topology variable
// (spec.topology.variables[i].value...), and returns the variable's name and the path below it.
func variablePath(cluster map[string]any, p []any) (string, string, bool) {
	if len(p) < 5 || p[0] != "spec" || p[1] != "topology" || p[2] != "variables" || p[4] != "value" {
		return "", "", false
	}
	idx, ok := p[3].(int)
	if !ok {
		return "", "", false
	}
	list, _ := digPath(cluster, p[:3]).([]any)
	if idx >= len(list) {
		return "", "", false
	}
	m, _ := list[idx].(map[string]any)
	name, _ := m["name"].(string)
	if name == "" {
		return "", "", false
	}
	return name, pathString(p[5:]), true
}

func digPath(v any, p []any) any {
	for _, s := range p {
		switch k := s.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// objectRef is "<kind>/<name>" of an object map.
func objectRef(m map[string]any) string {
	kind, _ := m["kind"].(string)
	md, _ := m["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	if kind == "" {
		kind = "Cluster"
	}
	return kind + "/" + name
}

// leafPaths lists the paths of the scalar leaves of m (at most limit), in a stable order.
func leafPaths(m map[string]any, limit int) [][]any {
	if m == nil {
		return nil
	}
	var out [][]any
	var walk func(prefix []any, v any)
	walk = func(prefix []any, v any) {
		if len(out) >= limit {
			return
		}
		switch t := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(t)) {
				walk(append(slices.Clip(prefix), k), t[k])
			}
		case []any:
			for i, e := range t {
				walk(append(slices.Clip(prefix), i), e)
			}
		case nil:
		default:
			out = append(out, prefix)
		}
	}
	walk(nil, m)
	return out
}

// mutated is a copy of m with the leaf at p changed: a string gets a suffix, a number grows by
// one, a boolean is negated.
func mutated(m map[string]any, p []any) map[string]any {
	c := render.DeepCopyValue(m).(map[string]any)
	var parent any = c
	for i, s := range p {
		last := i == len(p)-1
		switch k := s.(type) {
		case string:
			mm := parent.(map[string]any)
			if last {
				mm[k] = mutate(mm[k])
			} else {
				parent = mm[k]
			}
		case int:
			l := parent.([]any)
			if last {
				l[k] = mutate(l[k])
			} else {
				parent = l[k]
			}
		}
	}
	return c
}

func mutate(v any) any {
	switch t := v.(type) {
	case string:
		return t + "~"
	case bool:
		return !t
	case int64:
		return t + 1
	case int:
		return t + 1
	case int32:
		return t + 1
	case float64:
		return t + 1
	case json.Number:
		return json.Number(string(t) + "1")
	}
	return fmt.Sprintf("%v~", v)
}

// pathString prints a path as ".spec.clusterNetwork.pods.cidrBlocks[0]".
func pathString(p []any) string {
	var b strings.Builder
	for _, s := range p {
		switch k := s.(type) {
		case string:
			b.WriteString("." + k)
		case int:
			b.WriteString("[" + strconv.Itoa(k) + "]")
		}
	}
	return b.String()
}

// Leaves flattens Helm values into "a.b[0].c" keys and scalar values as YAML prints them; an
// empty map or list is a leaf ("{}", "[]").
func Leaves(values map[string]any) map[string]string {
	out := map[string]string{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch t := v.(type) {
		case map[string]any:
			if len(t) == 0 && prefix != "" {
				out[prefix] = "{}"
			}
			for k, e := range t {
				key := k
				if prefix != "" {
					key = prefix + "." + k
				}
				walk(key, e)
			}
		case []any:
			if len(t) == 0 {
				out[prefix] = "[]"
			}
			for i, e := range t {
				walk(prefix+"["+strconv.Itoa(i)+"]", e)
			}
		default:
			out[prefix] = scalar(t)
		}
	}
	walk("", values)
	return out
}

// scalar formats a value as render does, but shows null as "null" (an empty string is a value).
func scalar(v any) string {
	if v == nil {
		return "null"
	}
	return render.FormatScalar(v)
}

// WriteValues prints the Cluster's values as text: the flat variables, then each component's
// values, each with its origins.
func WriteValues(w io.Writer, v ClusterValues, st Style) error {
	v = ForTerminal(v) // what the objects say is printed, never acted on by the terminal
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s  release %s", st.Bold("Cluster"), st.Bold(v.Cluster), orUnknown(v.Release))
	if len(v.ConfigMaps) > 0 {
		fmt.Fprintf(&b, "  ConfigMap %s", strings.Join(v.ConfigMaps, ", "))
	}
	b.WriteString("\n")
	for _, n := range v.Notes {
		fmt.Fprintf(&b, "%s %s\n", st.Warn("note:"), n)
	}
	if len(v.Variables) > 0 {
		fmt.Fprintf(&b, "\n%s\n", st.Bold("Variables (every component)"))
		writeValueRows(&b, v.Variables, st)
	}
	for _, c := range v.Components {
		fmt.Fprintf(&b, "\n%s %s (%s", st.Bold("Component"), st.Bold(c.Name), c.Kind)
		if c.FluxObject != "" {
			fmt.Fprintf(&b, ", %s", c.FluxObject)
		}
		if c.Release != v.Release {
			fmt.Fprintf(&b, ", release %s", c.Release)
		}
		if c.Key != "" {
			fmt.Fprintf(&b, ", ConfigMap key %s", c.Key)
		}
		b.WriteString(")\n")
		if c.Note != "" {
			fmt.Fprintf(&b, "  %s %s\n", st.Warn("note:"), c.Note)
		}
		if len(c.Values) == 0 {
			b.WriteString("  (no values)\n")
			continue
		}
		writeValueRows(&b, c.Values, st)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// maxValueWidth bounds the value column; longer values are printed whole but do not widen it.
const maxValueWidth = 40

func writeValueRows(b *strings.Builder, vals []Value, st Style) {
	keyW, valW := 0, 0
	for _, v := range vals {
		keyW = max(keyW, len(v.Key))
		if n := len(oneLine(v.Value, 0)); n <= maxValueWidth {
			valW = max(valW, n)
		}
	}
	for _, v := range vals {
		from := make([]string, 0, len(v.From))
		for _, o := range v.From {
			from = append(from, o.String())
		}
		val := oneLine(v.Value, 0)
		if val == "" {
			val = `""`
		}
		pad := max(valW-len(val), 0)
		fmt.Fprintf(b, "  %-*s  %s%s  %s\n", keyW, v.Key, val, strings.Repeat(" ", pad), st.Faint("<- "+strings.Join(from, ", ")))
	}
}
