// Package render renders a stack's value templates for one CAPI Cluster into the data of the
// cluster's generated values ConfigMap. It has no client: callers pass the objects in.
//
// Templates are Go templates over the objects' JSON maps (`.Cluster.spec.controlPlaneEndpoint.host`,
// as in the Sovereign Cloud Stack's overwrite.yaml files), with sprig's functions minus those that
// reach the environment or network, or return a different result on every call (which would make
// every reconcile rewrite the ConfigMap).
//
// Rendering is bounded (Limits): a template runs under a deadline, its output and the ConfigMap
// data are capped, and the functions that could allocate without bound check their arguments
// first. A template that hits a limit fails with an error matching ErrLimitExceeded.
package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/Masterminds/sprig/v3"
	"sigs.k8s.io/yaml"
)

// Input is what a cluster's templates are rendered against.
type Input struct {
	// Cluster is the CAPI Cluster as a JSON map.
	Cluster map[string]any
	// ControlPlane is the object named by the Cluster's spec.controlPlaneRef, or nil.
	ControlPlane map[string]any
	// InfraCluster is the object named by the Cluster's spec.infrastructureRef, or nil.
	InfraCluster map[string]any
	// Release describes the release being rendered.
	Release Release
	// Overrides are merged over the rendered values of the components they name, in order: the
	// last one wins (the Cluster's ClusterAddonOverrides, ordered by internal/overrides). An
	// override naming a component not rendered fails Render; RenderComponent applies only the
	// entries of its component.
	Overrides []Override
}

// Release describes the stack release in the template data as `.Release`.
type Release struct {
	Name              string
	Version           string
	KubernetesVersion string
}

// Component is one addon component's template.
type Component struct {
	// Name of the component.
	Name string
	// Helm is true for a Helm chart (values go to a values key), false for a kustomize directory
	// (values are flattened into substitution variables).
	Helm bool
	// Template is the text of the `values` template; empty when the component has none.
	Template string
	// File is the stack file the template came from, for error messages.
	File string
	// AllowMissing renders a printed value missing from the data as "" instead of failing
	// (stack lint uses it to learn which keys a template produces for a made-up cluster).
	AllowMissing bool
	// Shared is the `values` template of a file shared by every component of the stack (a
	// cluster-addon-values.yaml next to per-component directories); empty when there is none.
	// Its output maps component names (and subcharts' keys, see Subcharts) to values: the
	// entry under Name is the base that the values of Template are deep-merged over (Template
	// wins: maps merge key by key, anything else replaces, as Helm merges values files).
	Shared string
	// SharedFile is the stack file Shared came from, for error messages.
	SharedFile string
	// Subcharts are the keys of the chart's dependencies (each one's alias, or else its name),
	// Helm only: Shared's entry under one of them holds values for that subchart and is nested
	// under its key (SharedBase), as an umbrella chart of the components would hand it on.
	Subcharts []string
}

// Error is a render failure of one component, naming the file it came from. A template that hit
// one of its Limits wraps a *LimitError: errors.Is(err, ErrLimitExceeded) tells such a failure
// from one of the template's logic or of the cluster's data.
type Error struct {
	// Component is the component whose template failed.
	Component string
	// File is the stack file the template came from, or the override (Override) that failed.
	File string
	// Override names the override whose values failed to merge ("" for a template's failure).
	Override string
	// Err is the cause.
	Err error
}

// maxErrorCause bounds the cause in Error's message: a template's fail or required can make it
// as long as the output limit, far more than a status condition can hold (32768 bytes).
const maxErrorCause = 4096

// Error is "component <name>: <file>: <cause>", the cause cut after maxErrorCause bytes.
func (e *Error) Error() string {
	cause := fmt.Sprint(e.Err)
	if len(cause) > maxErrorCause {
		cause = strings.ToValidUTF8(cause[:maxErrorCause], "") + fmt.Sprintf("... (%d bytes more)", len(cause)-maxErrorCause)
	}
	return fmt.Sprintf("component %s: %s: %s", e.Component, e.File, cause)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// HelmValuesKey is the ConfigMap key holding a Helm component's values. It is a valid
// substitution variable name, because Flux rejects a substituteFrom ConfigMap with any key
// that is not.
func HelmValuesKey(component string) string {
	return "helm_values_" + VarName(component)
}

var nonIdent = regexp.MustCompile(`[^A-Za-z0-9_]`)

// VarName turns a name into a valid Flux substitution variable name.
func VarName(s string) string {
	s = nonIdent.ReplaceAllString(s, "_")
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		s = "_" + s
	}
	return s
}

// Render renders every component's template and returns the ConfigMap data: the flat
// variables every cluster has, each Helm component's values under HelmValuesKey, and each
// kustomize component's values flattened into underscore names. The first failure is returned
// as an *Error; nothing partial is returned with it. Rendering is bounded by the default Limits.
func Render(in Input, components []Component) (map[string]string, error) {
	return RenderWithLimits(in, components, Limits{})
}

// RenderWithLimits is Render bounded by lim (a zero field takes its default): each component's
// template by lim's Timeout, MaxOutput, MaxCount and MaxAlloc, the ConfigMap data of all of
// them by MaxTotalOutput. A limit hit is an *Error wrapping a *LimitError, which matches
// ErrLimitExceeded.
func RenderWithLimits(in Input, components []Component, lim Limits) (map[string]string, error) {
	lim = lim.withDefaults()
	if err := checkOverrideComponents(in, components); err != nil {
		return nil, err
	}
	data := BaseVariables(in)
	total := 0
	for k, v := range data {
		total += len(k) + len(v)
	}
	shared := sharedCache{}
	for _, c := range components {
		values, err := renderComponent(in, c, lim, shared)
		if err != nil {
			return nil, err
		}
		before := total
		if c.Helm {
			out, err := yaml.Marshal(values)
			if err != nil {
				return nil, &Error{Component: c.Name, File: c.File, Err: err}
			}
			key := HelmValuesKey(c.Name)
			if _, taken := data[key]; taken {
				return nil, &Error{Component: c.Name, File: c.File, Err: fmt.Errorf("the values key %q would overwrite the variable of the same name", key)}
			}
			data[key] = string(out)
			total += len(key) + len(out)
			if err := checkTotal(c, lim, before, total); err != nil {
				return nil, err
			}
			continue
		}
		vars, dup := flatten(values)
		if dup != "" {
			return nil, &Error{Component: c.Name, File: c.File, Err: fmt.Errorf("two values would become the variable %q", dup)}
		}
		for k, v := range vars {
			if _, taken := data[k]; taken {
				return nil, &Error{Component: c.Name, File: c.File, Err: fmt.Errorf("value %q would overwrite the variable of the same name", k)}
			}
			data[k] = v
			total += len(k) + len(v)
		}
		if err := checkTotal(c, lim, before, total); err != nil {
			return nil, err
		}
	}
	return data, nil
}

// checkTotal fails when component c took the ConfigMap data from before to total bytes, past
// lim.MaxTotalOutput.
func checkTotal(c Component, lim Limits, before, total int) error {
	if total <= lim.MaxTotalOutput {
		return nil
	}
	return &Error{Component: c.Name, File: c.File, Err: &LimitError{Limit: LimitTotalOutput, Detail: fmt.Sprintf(
		"the component's values add %d bytes to the ConfigMap data, %d bytes in all, which exceeds the limit of %s",
		total-before, total, formatBytes(lim.MaxTotalOutput))}}
}

// RenderComponent renders one component's template against in and returns its values; a
// failure is an *Error naming the component and the file. Rendering is bounded by the default
// Limits.
func RenderComponent(in Input, c Component) (map[string]any, error) {
	return RenderComponentWithLimits(in, c, Limits{})
}

// RenderComponentWithLimits is RenderComponent bounded by lim's Timeout, MaxOutput, MaxCount
// and MaxAlloc (a zero field takes its default). A limit hit is an *Error wrapping a
// *LimitError, which matches ErrLimitExceeded.
func RenderComponentWithLimits(in Input, c Component, lim Limits) (map[string]any, error) {
	return renderComponent(in, c, lim, sharedCache{})
}

// renderComponent renders c's Template, and its entry of the Shared template (looked up in
// shared, rendered once per Render), and merges the two.
func renderComponent(in Input, c Component, lim Limits, shared sharedCache) (map[string]any, error) {
	base, err := shared.entry(in, c, lim)
	if err != nil {
		return nil, &Error{Component: c.Name, File: c.SharedFile, Err: err}
	}
	values, err := renderValues(c, templateData(in), newBudget(lim, time.Now()))
	if err != nil {
		return nil, &Error{Component: c.Name, File: c.File, Err: err}
	}
	return applyOverrides(in, c, mergeValues(base, values))
}

// templateData is the data a template sees. Every render gets its own copy: sprig's set, unset
// and merge change the maps they are given, which must change neither the caller's objects nor
// what the next component sees.
func templateData(in Input) map[string]any {
	cluster := deepCopy(in.Cluster)
	return map[string]any{
		"Cluster":      orEmpty(cluster),
		"ControlPlane": orEmpty(deepCopy(in.ControlPlane)),
		"InfraCluster": orEmpty(deepCopy(in.InfraCluster)),
		"Variables":    topologyVariables(cluster),
		"Release":      map[string]any{"Name": in.Release.Name, "Version": in.Release.Version, "KubernetesVersion": in.Release.KubernetesVersion},
	}
}

// Parse checks that a template parses with the functions value templates have.
func Parse(name, text string) error {
	_, err := parseTemplate(name, text)
	return err
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// deepCopy copies the maps and lists of a JSON-like tree; other values are shared.
func deepCopy(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	return DeepCopyValue(m).(map[string]any)
}

// DeepCopyValue copies the maps and lists of a JSON-like value; other values are shared.
func DeepCopyValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = DeepCopyValue(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = DeepCopyValue(e)
		}
		return out
	default:
		return v
	}
}

// noValue is what text/template prints for a value missing from the data.
const noValue = "<no value>"

// renderValues executes a component's template and parses the result as a YAML map.
//
// A value the template prints but that is missing from the data is an error (stacks/README.md),
// so that the operator waits, e.g. for the control plane endpoint, instead of installing
// "<no value>". Missing fields can still be tested with if, with, default, hasKey or dig, which
// missingkey=error would forbid; internal/stack renders the same way for lint.
//
// The template runs within b's limits; its parse tree is instrumented for them first.
func renderValues(c Component, data map[string]any, b *budget) (map[string]any, error) {
	if strings.TrimSpace(c.Template) == "" {
		return map[string]any{}, nil
	}
	p, err := parseTemplate(c.File, c.Template)
	if err != nil {
		return nil, fmt.Errorf("parse template: %w", err)
	}
	t, err := p.bind(b)
	if err != nil {
		return nil, fmt.Errorf("parse template: %w", err)
	}
	w := &limitWriter{b: b}
	if err := t.Execute(w, data); err != nil {
		return nil, fmt.Errorf("render template: %w", err)
	}
	buf := w.buf
	if c.AllowMissing {
		buf = bytes.ReplaceAll(buf, []byte(noValue), nil)
	}
	if i := bytes.Index(buf, []byte(noValue)); i >= 0 {
		out := string(buf)
		start := strings.LastIndex(out[:i], "\n") + 1
		end := len(out)
		if j := strings.IndexByte(out[i:], '\n'); j >= 0 {
			end = i + j
		}
		line := strings.TrimSpace(out[start:end])
		if len(line) > 200 {
			line = strings.ToValidUTF8(line[:200], "") + "..."
		}
		return nil, fmt.Errorf("output line %d: a value the template prints is missing from the data (%q): %s",
			strings.Count(out[:i], "\n")+1, noValue, line)
	}
	values := map[string]any{}
	if err := yaml.Unmarshal(buf, &values); err != nil {
		return nil, fmt.Errorf("rendered values are not a YAML map: %w", err)
	}
	if values == nil {
		values = map[string]any{}
	}
	// YAML aliases can make the values much larger than the output; without aliases they
	// print no larger than about the YAML, numbers and booleans a few times at most.
	if sizeOf(values, 4*b.lim.MaxTotalOutput) > 4*b.lim.MaxTotalOutput {
		return nil, &LimitError{Limit: LimitOutput, Detail: fmt.Sprintf("rendered values (YAML aliases expanded) exceed the limit of %s", formatBytes(4*b.lim.MaxTotalOutput))}
	}
	return values, nil
}

// removedFuncs are sprig functions not offered: they read the environment or the network, or
// return something new on every call.
var removedFuncs = []string{
	"env", "expandenv", "getHostByName",
	"now", "date_modify", "dateModify", "mustDateModify", "must_date_modify", "ago",
	"randAlphaNum", "randAlpha", "randAscii", "randNumeric", "randBytes", "randInt", "uuidv4", "shuffle",
	"genPrivateKey", "derivePassword", "buildCustomCert", "genCA", "genCAWithKey",
	"genSelfSignedCert", "genSelfSignedCertWithKey", "genSignedCert", "genSignedCertWithKey",
	"bcrypt", "htpasswd", "encryptAES", "decryptAES",
}

// FuncMap returns the functions available to value templates: sprig's text functions minus
// removedFuncs, plus Helm's toYaml, fromYaml and required. sprig's keys and values return map
// entries in random order; here they are in key order. sprig's date functions format the
// current time when given anything but a time or Unix seconds; here that is an error.
//
// The functions that could allocate without bound (repeat, until, seq, indent, join, printf,
// toJson, ...) check their arguments against the per-call caps of the default Limits and fail
// with a *LimitError; the deadline and the allocation budget apply only within Render. The
// builtins print, printf, println, html, js and urlquery of text/template are replaced by such
// checked versions.
func FuncMap() template.FuncMap {
	return funcs(unboundedBudget(), nil)
}

// unboundedBudget checks the per-call caps of the default limits, but no deadline and no
// allocation budget.
func unboundedBudget() *budget {
	return &budget{lim: Limits{}.withDefaults()}
}

// funcs returns the functions of value templates named in only (all of them when only is nil),
// checked against b. Only the functions checked against b are made for each call; the others
// come from baseFuncs, built once.
func funcs(b *budget, only []string) template.FuncMap {
	capped := b.capped(baseFuncs)
	if only == nil {
		f := make(template.FuncMap, len(baseFuncs)+len(capped))
		for n, fn := range baseFuncs {
			f[n] = b.wrap(n, fn)
		}
		for n, fn := range capped {
			f[n] = b.wrap(n, fn)
		}
		return f
	}
	bound := make(template.FuncMap, len(only))
	for _, n := range only {
		fn, ok := capped[n]
		if !ok {
			fn, ok = baseFuncs[n]
		}
		if ok {
			bound[n] = b.wrap(n, fn)
		}
	}
	return bound
}

// baseFuncs are sprig's text functions minus removedFuncs, with the replacements that need no
// budget (keys, values, the date functions, toYaml, fromYaml, required): shared by every render
// and never changed (budget.capped reads it at call time).
var baseFuncs = func() template.FuncMap {
	f := sprig.TxtFuncMap()
	for _, n := range removedFuncs {
		delete(f, n)
	}
	f["keys"] = func(dicts ...map[string]any) []string {
		k := []string{}
		for _, d := range dicts {
			for key := range d {
				k = append(k, key)
			}
		}
		sort.Strings(k)
		return k
	}
	f["values"] = func(dict map[string]any) []any {
		v := []any{}
		for _, k := range slices.Sorted(maps.Keys(dict)) {
			v = append(v, dict[k])
		}
		return v
	}
	if date, ok := f["date"].(func(string, any) string); ok {
		f["date"] = func(format string, d any) (string, error) {
			if err := checkTime("date", d); err != nil {
				return "", err
			}
			return date(format, d), nil
		}
	}
	if htmlDate, ok := f["htmlDate"].(func(any) string); ok {
		f["htmlDate"] = func(d any) (string, error) {
			if err := checkTime("htmlDate", d); err != nil {
				return "", err
			}
			return htmlDate(d), nil
		}
	}
	if htmlDateInZone, ok := f["htmlDateInZone"].(func(any, string) string); ok {
		f["htmlDateInZone"] = func(d any, zone string) (string, error) {
			if err := checkTime("htmlDateInZone", d); err != nil {
				return "", err
			}
			return htmlDateInZone(d, zone), nil
		}
	}
	for _, n := range []string{"dateInZone", "date_in_zone"} {
		if dateInZone, ok := f[n].(func(string, any, string) string); ok {
			f[n] = func(format string, d any, zone string) (string, error) {
				if err := checkTime(n, d); err != nil {
					return "", err
				}
				return dateInZone(format, d, zone), nil
			}
		}
	}
	f["toYaml"] = func(v any) (string, error) {
		b, err := yaml.Marshal(v)
		return strings.TrimSuffix(string(b), "\n"), err
	}
	f["fromYaml"] = func(s string) (map[string]any, error) {
		m := map[string]any{}
		err := yaml.Unmarshal([]byte(s), &m)
		return m, err
	}
	f["required"] = func(msg string, v any) (any, error) {
		if v == nil {
			return nil, fmt.Errorf("%s", msg)
		}
		if s, ok := v.(string); ok && s == "" {
			return nil, fmt.Errorf("%s", msg)
		}
		return v, nil
	}
	return f
}()

// checkTime accepts what sprig's date functions format: a time or Unix seconds.
func checkTime(fn string, d any) error {
	switch t := d.(type) {
	case time.Time, int, int32, int64:
		return nil
	case *time.Time:
		if t != nil {
			return nil
		}
	}
	return fmt.Errorf("%s: %v (%T) is neither a time nor Unix seconds", fn, d, d)
}

// BaseVariableNames are the names of BaseVariables, sorted.
func BaseVariableNames() []string {
	return SortedKeys(BaseVariables(Input{}))
}

// BaseVariables are the flat variables every cluster's ConfigMap holds.
func BaseVariables(in Input) map[string]string {
	c := in.Cluster
	vars := map[string]string{
		"cluster_name":                str(dig(c, "metadata", "name")),
		"cluster_namespace":           str(dig(c, "metadata", "namespace")),
		"cluster_pod_cidr":            firstString(dig(c, "spec", "clusterNetwork", "pods", "cidrBlocks")),
		"cluster_service_cidr":        firstString(dig(c, "spec", "clusterNetwork", "services", "cidrBlocks")),
		"cluster_service_domain":      str(dig(c, "spec", "clusterNetwork", "serviceDomain")),
		"control_plane_endpoint_host": str(dig(c, "spec", "controlPlaneEndpoint", "host")),
		"control_plane_endpoint_port": str(dig(c, "spec", "controlPlaneEndpoint", "port")),
		"kubernetes_version":          str(dig(c, "spec", "topology", "version")),
		"stack_release":               in.Release.Name,
		"stack_version":               in.Release.Version,
	}
	return vars
}

// topologyVariables returns the Cluster's spec.topology.variables as a map by name.
func topologyVariables(cluster map[string]any) map[string]any {
	out := map[string]any{}
	list, _ := dig(cluster, "spec", "topology", "variables").([]any)
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		if name, ok := m["name"].(string); ok {
			out[name] = m["value"]
		}
	}
	return out
}

// Flatten turns a values tree into variables named by their path joined with underscores:
// {infra: {region: x}} becomes infra_region=x. Lists are indexed (a_0, a_1); scalars are
// formatted as YAML would show them, nested maps of a list element likewise.
func Flatten(values map[string]any) map[string]string {
	out, _ := flatten(values)
	return out
}

// flatten is Flatten, also returning a variable that two values would become ("" if none):
// "a-b: 1" and "a_b: 2", or "a: {b: 1}" and "a_b: 2".
func flatten(values map[string]any) (map[string]string, string) {
	out := map[string]string{}
	dup := ""
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch t := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(t)) {
				walk(join(prefix, VarName(k)), t[k])
			}
		case []any:
			for i, e := range t {
				walk(join(prefix, strconv.Itoa(i)), e)
			}
		default:
			if _, taken := out[prefix]; taken && dup == "" {
				dup = prefix
			}
			out[prefix] = str(t)
		}
	}
	walk("", values)
	return out, dup
}

func join(prefix, k string) string {
	if prefix == "" {
		return k
	}
	return prefix + "_" + k
}

func dig(m map[string]any, path ...string) any {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[p]
	}
	return cur
}

func firstString(v any) string {
	if l, ok := v.([]any); ok && len(l) > 0 {
		return str(l[0])
	}
	return ""
}

// str formats a JSON scalar the way a person would write it in YAML.
func str(v any) string {
	switch t := v.(type) {
	case nil:
		return ""
	case string:
		return t
	case bool:
		return strconv.FormatBool(t)
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	case int64:
		return strconv.FormatInt(t, 10)
	case int:
		return strconv.Itoa(t)
	case json.Number:
		return t.String()
	default:
		b, _ := json.Marshal(t)
		return string(b)
	}
}

// FormatScalar formats a JSON scalar the way a person would write it in YAML ("" for null),
// as values are rendered; the kubectl plugin shows values with it.
func FormatScalar(v any) string { return str(v) }

// SortedKeys returns the keys of m in order (for stable output in messages).
func SortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Clean drops from an object read from the API what no template needs and what would make
// renders differ without a real change (managed fields, resourceVersion, generation, kubectl's
// last-applied annotation). The operator and the kubectl plugin's values provenance both use it,
// so both render from the same input.
func Clean(m map[string]any) map[string]any {
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "managedFields")
		delete(md, "resourceVersion")
		delete(md, "generation")
		if ann, ok := md["annotations"].(map[string]any); ok {
			delete(ann, "kubectl.kubernetes.io/last-applied-configuration")
		}
	}
	return m
}
