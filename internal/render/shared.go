package render

import (
	"fmt"
	"strings"
	"time"
)

// A shared values template (Component.Shared) is rendered once per Render and split by
// component: each component takes the entry under its name, and those under its subcharts'
// keys nested under them (SharedBase), as the base of its own values.

// sharedCache holds the rendered Shared templates of one Render.
type sharedCache map[sharedKey]sharedResult

type sharedKey struct {
	file, text   string
	allowMissing bool
}

type sharedResult struct {
	values map[string]any
	err    error
}

// entry returns c's entry of its Shared template's output, rendering the template the first
// time it is asked for.
func (sc sharedCache) entry(in Input, c Component, lim Limits) (map[string]any, error) {
	if strings.TrimSpace(c.Shared) == "" {
		return map[string]any{}, nil
	}
	k := sharedKey{file: c.SharedFile, text: c.Shared, allowMissing: c.AllowMissing}
	r, ok := sc[k]
	if !ok {
		shared := Component{Name: c.Name, Template: c.Shared, File: c.SharedFile, AllowMissing: c.AllowMissing}
		r.values, r.err = renderValues(shared, templateData(in), newBudget(lim, time.Now()))
		sc[k] = r
	}
	if r.err != nil {
		return nil, r.err
	}
	return SharedBase(r.values, c.Name, c.Subcharts)
}

// SharedBase returns the base values of component name from the output of a shared values
// template, read as the values of an umbrella chart of the stack's components: the entry under
// each of the component's subcharts (the keys of its chart's dependencies) is nested under that
// key, as an umbrella chart hands a subchart its values; the entry under the component's own
// name is its chart's own values, unless a subchart has that key (SCS's per-component layout:
// cluster-addon/metrics-server/ wraps the metrics-server chart under the alias metrics-server,
// and the entry metrics-server is for that chart).
func SharedBase(shared map[string]any, name string, subcharts []string) (map[string]any, error) {
	base := map[string]any{}
	own := true
	for _, key := range subcharts {
		own = own && key != name
		entry, err := SharedEntry(shared, key)
		if err != nil {
			return nil, err
		}
		if len(entry) > 0 {
			base[key] = entry
		}
	}
	if !own {
		return base, nil
	}
	entry, err := SharedEntry(shared, name)
	if err != nil {
		return nil, err
	}
	return mergeValues(entry, base), nil
}

// SharedEntry returns component name's values from the output of a shared values template: a
// copy of the entry under the name, empty when there is none (or it is null). An entry that is
// not a mapping is an error.
func SharedEntry(shared map[string]any, name string) (map[string]any, error) {
	v, ok := shared[name]
	if !ok || v == nil {
		return map[string]any{}, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the entry %q is %s, not a mapping of the component's values", name, describe(v))
	}
	return deepCopy(m), nil
}

// mergeValues deep-merges over into base and returns base: maps are merged key by key, any
// other value of over (a list, a scalar, null) replaces base's, as Helm merges values files.
func mergeValues(base, over map[string]any) map[string]any {
	for k, v := range over {
		bm, bok := base[k].(map[string]any)
		om, ook := v.(map[string]any)
		if bok && ook {
			base[k] = mergeValues(bm, om)
			continue
		}
		base[k] = v
	}
	return base
}

func describe(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case []any:
		return "a list"
	case bool:
		return "a boolean"
	case float64, int64, int:
		return "a number"
	default:
		return fmt.Sprintf("a %T", v)
	}
}
