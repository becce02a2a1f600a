package stack

import (
	"errors"
	"path"
	"slices"
	"strings"

	"github.com/clusterstack-io/clusterstack-operator/internal/render"
)

// A stack-wide cluster-addon-values.yaml next to per-component directories (SCS
// providers/docker/scs has one) holds a template whose output is keyed as the values of an
// umbrella chart of the components would be:
//
//	values: |
//	  metrics-server:
//	    commonLabels:
//	      domain: "{{ .Cluster.spec.controlPlaneEndpoint.host }}"
//
// A key that is one of a Helm component's subcharts (the alias of a Chart.yaml dependency, or
// its name: SCS's cluster-addon/metrics-server/ wraps the upstream chart under the alias
// metrics-server) gives that subchart its values, so the component's chart gets the entry
// nested under the key. Any other key names a component, whose chart (or kustomize directory)
// gets the entry as its own values. The component's overwrite.yaml is deep-merged over that
// (overwrite.yaml wins). The file is rendered per cluster with the components' own templates
// (RenderComponents, render.SharedBase); lint checks that every key names a component or a
// subchart, and SCSNotes says where SCS's own tooling reads the file otherwise. In an old-style
// stack the file belongs to the umbrella component instead.

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
		Shared: s.AddonValuesTemplate, SharedFile: s.AddonValuesFile, Subcharts: c.Subcharts,
	}
}

// hasValues reports whether component c gets values from a template.
func (s *Stack) hasValues(c Component) bool {
	return c.ValuesTemplate != "" || s.AddonValuesTemplate != ""
}

// lintAddonValues renders a shared cluster-addon-values.yaml for the sample cluster and reports
// keys that name neither a component nor a subchart, and entries that are no mapping. When the
// sample rendering fails for want of data the sample cluster lacks, the keys are unknown and
// nothing is reported (the template was parsed by load).
func (lt *linter) lintAddonValues() {
	s := lt.s
	if strings.TrimSpace(s.AddonValuesTemplate) == "" {
		return
	}
	values, err := lt.sharedSample()
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
		_, component := s.Component(key)
		if !component && len(s.subchartOwners(key)) == 0 {
			lt.ps.addf(s.AddonValuesFile, "key %q is neither a component of this stack (components: %s) nor a subchart of one (a Chart.yaml dependency's alias or name): top-level keys name the component under %s/, or the subchart, whose values follow; rename the key or move its values under a component's key",
				key, strings.Join(names, ", "), ClusterAddonDir)
			continue
		}
		if _, err := render.SharedEntry(values, key); err != nil {
			lt.ps.addf(s.AddonValuesFile, "%v: write the component's (or subchart's) values below its name", err)
		}
	}
}

// sharedSample renders the shared cluster-addon-values.yaml for the sample cluster.
func (lt *linter) sharedSample() (map[string]any, error) {
	return render.RenderComponent(lt.sampleData(), render.Component{
		Name: UmbrellaComponent, Template: lt.s.AddonValuesTemplate, File: lt.s.AddonValuesFile, AllowMissing: true,
	})
}

// subchartOwners returns the Helm components one of whose subcharts has the key.
func (s *Stack) subchartOwners(key string) []Component {
	var out []Component
	for _, c := range s.Components {
		if slices.Contains(c.Subcharts, key) {
			out = append(out, c)
		}
	}
	return out
}

func addonNames(cs []Component) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}
