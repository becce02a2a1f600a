package render

import (
	"fmt"
	"slices"
	"strings"
)

// Override is one set of values merged over the rendered values of the components it names
// (a ClusterAddonOverride). Input.Overrides holds a Cluster's overrides in precedence order.
type Override struct {
	// Name says where the values come from in messages and provenance, e.g.
	// "ClusterAddonOverride/big-mtu".
	Name string
	// Components maps component names to the values to merge over that component's.
	Components map[string]map[string]any
}

// applyOverrides merges the overrides' values for component c over values, in order (the last
// wins; maps merge key by key, anything else replaces). For a kustomize component a key that
// would become one of the variables every component gets, or that two keys would become, is an
// *Error naming the override, the component and the key.
func applyOverrides(in Input, c Component, values map[string]any) (map[string]any, error) {
	for _, o := range in.Overrides {
		v, ok := o.Components[c.Name]
		if !ok {
			continue
		}
		if !c.Helm {
			vars, dup := flatten(v)
			if dup != "" {
				return nil, overrideError(o, c, dup, "two keys of the override would become this substitution variable")
			}
			base := BaseVariables(Input{})
			for _, k := range SortedKeys(vars) {
				if _, taken := base[k]; taken {
					return nil, overrideError(o, c, k, "the key would become the substitution variable "+k+", which every component gets from the Cluster and which an override cannot replace")
				}
			}
		}
		values = mergeValues(values, DeepCopyValue(v).(map[string]any))
	}
	return values, nil
}

// checkOverrideComponents fails when an override names a component that is not among
// components: the release the Cluster uses does not have it.
func checkOverrideComponents(in Input, components []Component) error {
	for _, o := range in.Overrides {
		for _, name := range sortedNames(o.Components) {
			if !slices.ContainsFunc(components, func(c Component) bool { return c.Name == name }) {
				names := make([]string, 0, len(components))
				for _, c := range components {
					names = append(names, c.Name)
				}
				return &Error{Component: name, File: o.Name, Override: o.Name, Err: fmt.Errorf(
					"the release has no component %q (its components: %s): remove the component from the override or narrow the override's spec.clusterSelector",
					name, strings.Join(names, ", "))}
			}
		}
	}
	return nil
}

func overrideError(o Override, c Component, key, why string) error {
	return &Error{Component: c.Name, File: o.Name, Override: o.Name, Err: fmt.Errorf("key %q: %s", key, why)}
}

func sortedNames(m map[string]map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
