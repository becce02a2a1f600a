package stack

import (
	"errors"
	"path"
	"strings"

	"github.com/clusterstack-io/clusterstack-operator/internal/render"
)

// A stack-wide cluster-addon-values.yaml next to per-component directories (SCS
// providers/docker/scs has one) holds a template whose output is keyed by component name:
//
//	values: |
//	  metrics-server:
//	    commonLabels:
//	      domain: "{{ .Cluster.spec.controlPlaneEndpoint.host }}"
//
// Each component takes the entry under its name, and its own overwrite.yaml is deep-merged
// over that entry (overwrite.yaml wins). The file is rendered per cluster with the components'
// own templates (RenderComponents, internal/render); lint checks that every key names a
// component. In an old-style stack the file belongs to the umbrella component instead.

// umbrella reports whether cluster-addon/ is itself one (old-style umbrella) chart or kustomize
// directory rather than a directory of components.
func (l *stackReader) umbrella() bool {
	if l.exists(path.Join(ClusterAddonDir, ChartFile)) {
		return true
	}
	for _, k := range kustomizeFile {
		if l.exists(path.Join(ClusterAddonDir, k)) {
			return true
		}
	}
	return false
}

// readAddonValues reads cluster-addon-values.yaml when it is shared by per-component
// directories; it returns "" when there is no such file, or when the umbrella component (or
// readComponents, reporting it) has dealt with it.
func (l *stackReader) readAddonValues() (string, string) {
	if !l.exists(ClusterAddonValuesFile) || !l.isDir(ClusterAddonDir) || l.umbrella() {
		return "", ""
	}
	return l.readValuesFile(ClusterAddonValuesFile)
}

// RenderComponents returns the value templates of the addon components, in addon order, as
// internal/render renders them per cluster: each component's overwrite.yaml (or the umbrella's
// cluster-addon-values.yaml) as Template, and a shared cluster-addon-values.yaml as Shared.
func (s *Stack) RenderComponents() []render.Component {
	out := make([]render.Component, 0, len(s.Components))
	for _, c := range s.Components {
		out = append(out, s.renderComponent(c))
	}
	return out
}

func (s *Stack) renderComponent(c Component) render.Component {
	return render.Component{
		Name: c.Name, Helm: c.Kind == KindHelm, Template: c.ValuesTemplate, File: c.ValuesFile,
		Shared: s.AddonValuesTemplate, SharedFile: s.AddonValuesFile,
	}
}

// hasValues reports whether component c gets values from a template.
func (s *Stack) hasValues(c Component) bool {
	return c.ValuesTemplate != "" || s.AddonValuesTemplate != ""
}

// lintAddonValues renders a shared cluster-addon-values.yaml for the sample cluster and reports
// keys that name no component and entries that are no mapping. When the sample rendering
// fails for want of data the sample cluster lacks, the keys are unknown and nothing is
// reported (the template was parsed by load).
func (lt *linter) lintAddonValues() {
	s := lt.s
	if strings.TrimSpace(s.AddonValuesTemplate) == "" {
		return
	}
	values, err := render.RenderComponent(lt.sampleData(), render.Component{
		Name: UmbrellaComponent, Template: s.AddonValuesTemplate, File: s.AddonValuesFile, AllowMissing: true,
	})
	var rerr *render.Error
	if errors.As(err, &rerr) && strings.HasPrefix(rerr.Err.Error(), "rendered values are not a YAML map") {
		lt.ps.addf(s.AddonValuesFile, "the values template does not produce a YAML mapping of component names to values for a sample cluster: %v", rerr.Err)
		return
	}
	if err != nil {
		return
	}
	names := addonNames(s.Components)
	for _, key := range sortedKeys(values) {
		if _, ok := s.Component(key); !ok {
			lt.ps.addf(s.AddonValuesFile, "key %q is no component of this stack (components: %s): top-level keys name the component under %s/ whose values follow; rename the key or move its values under a component's key",
				key, strings.Join(names, ", "), ClusterAddonDir)
			continue
		}
		if _, err := render.SharedEntry(values, key); err != nil {
			lt.ps.addf(s.AddonValuesFile, "%v: write the component's values below its name", err)
		}
	}
}

func addonNames(cs []Component) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}
