package stack

import (
	"sort"
	"strings"
)

// ProviderKind is the API version and kind of objects a cluster-class creates.
type ProviderKind struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// MaxProviderKinds bounds the provider kinds read from one cluster-class.
const MaxProviderKinds = 32

// ProviderKinds are the kinds of the objects the stack in dir renders from its cluster-class (as
// the operator delivers it, RenderClusterClass) besides its ClusterClass and templates, whose
// API group readable accepts, sorted, at most MaxProviderKinds: the provider objects (a machine
// image, say) that must be ready before a Cluster can be built from the release. Nil when the
// cluster-class does not render (lint says why).
func ProviderKinds(dir string, readable func(group string) bool) []ProviderKind {
	objs, err := RenderClusterClass(dir, "")
	if err != nil {
		return nil
	}
	seen := map[ProviderKind]bool{}
	var out []ProviderKind
	for _, o := range objs {
		k := ProviderKind{APIVersion: apiVersionOf(o), Kind: objKind(o)}
		if k.Kind == "" || k.Kind == "ClusterClass" || strings.HasSuffix(k.Kind, "Template") || !readable(objGroup(o)) || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].APIVersion != out[j].APIVersion {
			return out[i].APIVersion < out[j].APIVersion
		}
		return out[i].Kind < out[j].Kind
	})
	if len(out) > MaxProviderKinds {
		out = out[:MaxProviderKinds]
	}
	return out
}

func apiVersionOf(o map[string]any) string {
	s, _ := o["apiVersion"].(string)
	return s
}
