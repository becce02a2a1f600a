package stack

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"sigs.k8s.io/yaml"
)

// TemplateFuncs are the functions available to values templates (overwrite.yaml,
// cluster-addon-values.yaml): sprig's text functions without env, expandenv and
// getHostByName, so that rendering depends on nothing but the template data.
func TemplateFuncs() template.FuncMap {
	f := sprig.TxtFuncMap()
	delete(f, "env")
	delete(f, "expandenv")
	delete(f, "getHostByName")
	return f
}

// ReleaseData is .Release in a values template.
type ReleaseData struct {
	// Name is the release (tag / ClusterClass) name, e.g. "aws-base-1-36-v1".
	Name string
	// Version is the stack version, e.g. "v1".
	Version string
	// KubernetesVersion is the stack's Kubernetes version, e.g. "v1.36.3".
	KubernetesVersion string
}

// TemplateData is what a values template is executed with. Cluster, ControlPlane and
// InfraCluster are the CAPI objects as their JSON maps (keys as in the API:
// .Cluster.spec.controlPlaneEndpoint.host); Variables holds the Cluster's topology variables
// by name (see TopologyVariables).
type TemplateData struct {
	Cluster      map[string]any
	ControlPlane map[string]any
	InfraCluster map[string]any
	Variables    map[string]any
	Release      ReleaseData
}

// ParseValuesTemplate parses a values template with TemplateFuncs. name is used in errors.
func ParseValuesTemplate(name, text string) (*template.Template, error) {
	return template.New(name).Funcs(TemplateFuncs()).Parse(text)
}

// noValue is what text/template prints for a missing map key.
const noValue = "<no value>"

// RenderValues executes a values template and parses its output as YAML Helm values.
// A missing key that is printed (text/template's "<no value>") is an error, so a typo or an
// object field that is not set yet does not end up in the values silently; test optional
// fields with `if`, `hasKey`, `dig` or `default`. An empty output gives empty values.
func RenderValues(name, text string, data TemplateData) (map[string]any, error) {
	out, err := ExecuteValuesTemplate(name, text, data)
	if err != nil {
		return nil, err
	}
	if strings.Contains(out, noValue) {
		line := 0
		for i, l := range strings.Split(out, "\n") {
			if strings.Contains(l, noValue) {
				line = i + 1
				break
			}
		}
		return nil, fmt.Errorf("%s: output line %d: a value the template prints is missing from the data (%q): %s", name, line, noValue, strings.TrimSpace(strings.Split(out, "\n")[line-1]))
	}
	return parseValuesYAML(name, out)
}

// ExecuteValuesTemplate executes a values template and returns its raw output.
func ExecuteValuesTemplate(name, text string, data TemplateData) (string, error) {
	t, err := ParseValuesTemplate(name, text)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return "", err
	}
	return buf.String(), nil
}

func parseValuesYAML(name, out string) (map[string]any, error) {
	values := map[string]any{}
	if strings.TrimSpace(out) == "" {
		return values, nil
	}
	if err := yaml.Unmarshal([]byte(out), &values); err != nil {
		return nil, fmt.Errorf("%s: rendered values are not a YAML mapping: %w", name, err)
	}
	if values == nil {
		values = map[string]any{}
	}
	return values, nil
}

// TopologyVariables returns the Cluster's spec.topology.variables ([{name, value}]) as a map
// from name to value. It is what the operator passes as .Variables.
func TopologyVariables(cluster map[string]any) map[string]any {
	vars := map[string]any{}
	spec, _ := cluster["spec"].(map[string]any)
	topology, _ := spec["topology"].(map[string]any)
	list, _ := topology["variables"].([]any)
	for _, item := range list {
		v, _ := item.(map[string]any)
		if name, ok := v["name"].(string); ok {
			vars[name] = v["value"]
		}
	}
	return vars
}

var invalidVarChar = regexp.MustCompile(`[^A-Za-z0-9_]`)

// FlattenValues flattens rendered values into the variables the operator substitutes into a
// kustomize component (Flux postBuild.substitute): nested keys are joined with "_"
// ({infra: {region: x}} gives infra_region=x), list elements get their index
// (zones: [a, b] gives zones_0=a, zones_1=b), characters other than letters, digits and "_"
// in keys become "_" (metrics-server -> metrics_server). Strings are used as they are, other
// scalars in their YAML/JSON spelling, null as "".
func FlattenValues(values map[string]any) map[string]string {
	out := map[string]string{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch t := v.(type) {
		case map[string]any:
			for k, child := range t {
				key := invalidVarChar.ReplaceAllString(k, "_")
				if prefix != "" {
					key = prefix + "_" + key
				}
				walk(key, child)
			}
		case []any:
			for i, child := range t {
				walk(prefix+"_"+strconv.Itoa(i), child)
			}
		case nil:
			out[prefix] = ""
		case string:
			out[prefix] = t
		case float64:
			out[prefix] = strconv.FormatFloat(t, 'f', -1, 64)
		default:
			out[prefix] = fmt.Sprint(t)
		}
	}
	walk("", values)
	delete(out, "")
	return out
}

// OperatorVariables are the substitution variables the operator provides to every kustomize
// addon component, next to the flattened overwrite.yaml values.
var OperatorVariables = []string{
	"cluster_name",
	"cluster_namespace",
	"cluster_pod_cidr",
	"cluster_service_cidr",
	"control_plane_endpoint_host",
	"control_plane_endpoint_port",
	"kubernetes_version",
}

// ClusterClassVariables are the substitution variables the operator provides to a kustomize
// cluster-class: the ClusterClass name (the release tag), the Helm-style release name
// (tag without version), the stack version and the Kubernetes version.
var ClusterClassVariables = []string{
	"cluster_class_name",
	"release_name",
	"release_version",
	"kubernetes_version",
}

func sortedKeys[M ~map[string]V, V any](m M) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
