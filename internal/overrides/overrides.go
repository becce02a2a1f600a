// Package overrides decides which ClusterAddonOverrides apply to a Cluster and in which order,
// and turns them into the render package's overrides. It has no client: the caller passes the
// overrides of the Cluster's namespace.
//
// Precedence, lowest first: the chart's values.yaml, the stack's cluster-addon-values.yaml, the
// release's overwrite.yaml (internal/render merges those), then the overrides selecting the
// Cluster by label (spec.clusterSelector), then those naming it (spec.clusterName): the more
// specific wins. Within each group overrides are merged in the order of their names, the last
// winning.
package overrides

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/render"
)

// Kind prefixes an override's name in messages and provenance.
const Kind = "ClusterAddonOverride"

// Ref is "ClusterAddonOverride/<name>", how render.Override and provenance name an override.
func Ref(name string) string { return Kind + "/" + name }

// Selects reports whether o applies to the Cluster name with labels, in o's namespace (the
// caller passes only the overrides of the Cluster's namespace). An invalid selector selects
// nothing.
func Selects(o *csv1.ClusterAddonOverride, name string, lbls map[string]string) bool {
	if o.Spec.ClusterName != "" {
		return o.Spec.ClusterName == name
	}
	if o.Spec.ClusterSelector == nil {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(o.Spec.ClusterSelector)
	if err != nil {
		return false
	}
	return sel.Matches(labels.Set(lbls))
}

// ForCluster returns the overrides among all that apply to the Cluster, in precedence order
// (lowest first).
func ForCluster(all []*csv1.ClusterAddonOverride, name string, lbls map[string]string) []*csv1.ClusterAddonOverride {
	var out []*csv1.ClusterAddonOverride
	for _, o := range all {
		if o.DeletionTimestamp.IsZero() && Selects(o, name, lbls) {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		si, sj := out[i].Spec.ClusterName != "", out[j].Spec.ClusterName != ""
		if si != sj {
			return sj // by selector first, by name last
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// ToRender converts overrides, in order, into render.Overrides. Values that are not a JSON
// object are an error naming the override and the component (the API refuses them already).
func ToRender(os []*csv1.ClusterAddonOverride) ([]render.Override, error) {
	out := make([]render.Override, 0, len(os))
	for _, o := range os {
		ro := render.Override{Name: Ref(o.Name), Components: map[string]map[string]any{}}
		for _, c := range o.Spec.Components {
			v := map[string]any{}
			if len(c.Values.Raw) > 0 {
				if err := json.Unmarshal(c.Values.Raw, &v); err != nil {
					return nil, &render.Error{Component: c.Name, File: ro.Name, Override: ro.Name, Err: fmt.Errorf("values are not an object: %w", err)}
				}
			}
			if v == nil {
				v = map[string]any{}
			}
			ro.Components[c.Name] = v
		}
		out = append(out, ro)
	}
	return out, nil
}

// Names is the value of the values ConfigMap's csv1.OverridesAnnotation: the names, in order.
func Names(os []*csv1.ClusterAddonOverride) string {
	names := make([]string, 0, len(os))
	for _, o := range os {
		names = append(names, o.Name)
	}
	return strings.Join(names, ",")
}

// ParseNames reads csv1.OverridesAnnotation back.
func ParseNames(v string) []string {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	return strings.Split(v, ",")
}
