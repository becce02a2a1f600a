package stack

import (
	"fmt"
	"os"
	"path"
	"sort"
	"strings"
)

// Addon stages of clusteraddon.yaml, named after the Cluster API lifecycle hooks they belong to.
const (
	// StageAfterControlPlaneInitialized lists the components installed once the control plane of
	// a new cluster is initialized.
	StageAfterControlPlaneInitialized = "AfterControlPlaneInitialized"
	// StageBeforeClusterUpgrade lists the components of the release a cluster upgrades to that
	// are moved to it before the control plane is upgraded to its Kubernetes version.
	StageBeforeClusterUpgrade = "BeforeClusterUpgrade"
	// StageAfterClusterUpgrade lists the components moved once the control plane runs the new
	// Kubernetes version.
	StageAfterClusterUpgrade = "AfterClusterUpgrade"
)

// Actions of a stage step.
const (
	// ActionApply installs or upgrades the component.
	ActionApply = "apply"
	// ActionDelete, in BeforeClusterUpgrade only, removes the component from a cluster before
	// its control plane upgrade; the component may be one the stack does not have (see
	// stacks/README.md).
	ActionDelete = "delete"
)

// StageStep is one entry of a stage in clusteraddon.yaml.
type StageStep struct {
	// Component is the addon component the step is about.
	Component string `json:"component"`
	// Action is ActionApply or ActionDelete.
	Action string `json:"action"`
}

// Stage is one addon stage of clusteraddon.yaml with its steps in file order.
type Stage struct {
	// Name is one of AddonStages.
	Name string `json:"name"`
	// Steps in the order of the file.
	Steps []StageStep `json:"steps"`
}

// Stages are the stages of clusteraddon.yaml in the order of AddonStages; a stage the file does
// not name is absent. A stack without clusteraddon.yaml has no stages (nil).
type Stages []Stage

// Steps returns the steps of the named stage (nil when the stack has no such stage).
func (s Stages) Steps(stage string) []StageStep {
	for _, st := range s {
		if st.Name == stage {
			return st.Steps
		}
	}
	return nil
}

// Components returns the components the named stage has a step with the given action for, in
// the order of their first such step.
func (s Stages) Components(stage, action string) []string {
	var out []string
	seen := map[string]bool{}
	for _, step := range s.Steps(stage) {
		if step.Action == action && !seen[step.Component] {
			seen[step.Component] = true
			out = append(out, step.Component)
		}
	}
	return out
}

// Order is the addon order the stages give: every component named by a step (of any action),
// in the order of first appearance, AfterControlPlaneInitialized first, then
// BeforeClusterUpgrade, then AfterClusterUpgrade.
func (s Stages) Order() []string {
	var out []string
	seen := map[string]bool{}
	for _, stage := range AddonStages {
		for _, step := range s.Steps(stage) {
			if !seen[step.Component] {
				seen[step.Component] = true
				out = append(out, step.Component)
			}
		}
	}
	return out
}

// orderComponents puts comps into addon order: the components the stages name first, in
// stages.Order(), then the others alphabetically.
func orderComponents(comps []Component, stages Stages) []Component {
	byName := map[string]Component{}
	for _, c := range comps {
		byName[c.Name] = c
	}
	out := make([]Component, 0, len(comps))
	listed := map[string]bool{}
	for _, name := range stages.Order() {
		if c, ok := byName[name]; ok {
			listed[name] = true
			out = append(out, c)
		}
	}
	var rest []Component
	for _, c := range comps {
		if !listed[c.Name] {
			rest = append(rest, c)
		}
	}
	sort.Slice(rest, func(i, j int) bool { return rest[i].Name < rest[j].Name })
	return append(out, rest...)
}

type addonEntry struct {
	Name   string `yaml:"name"`
	Action string `yaml:"action"`
}

// readStages reads clusteraddon.yaml, if there is one, reporting unknown stages, bad actions,
// apply steps naming no component, delete steps outside BeforeClusterUpgrade or naming no valid
// component name, and a component both applied and deleted in BeforeClusterUpgrade. The stages
// keep apply steps naming a component of comps and the valid delete steps, which may name
// components comps does not have (an older release's).
func (l *stackReader) readStages(comps []Component) Stages {
	if !l.exists(ClusterAddonFile) {
		return nil
	}
	data, err := os.ReadFile(l.abs(ClusterAddonFile))
	if err != nil {
		l.ps.addf(ClusterAddonFile, "%v", err)
		return nil
	}
	var f struct {
		AddonStages map[string][]addonEntry `yaml:"addonStages"`
	}
	if err := decodeYAML(data, &f, false); err != nil {
		l.ps.addf(ClusterAddonFile, "not valid YAML: %s", yamlErr(err))
		return nil
	}
	if len(f.AddonStages) == 0 {
		l.ps.addf(ClusterAddonFile, "addonStages is missing or empty")
		return nil
	}
	known := map[string]bool{}
	for _, s := range AddonStages {
		known[s] = true
	}
	for _, stage := range sortedKeys(f.AddonStages) {
		if !known[stage] {
			l.ps.addf(ClusterAddonFile, "addonStages.%s: unknown stage (want %s)", stage, strings.Join(AddonStages, ", "))
		}
	}
	byName := map[string]bool{}
	for _, c := range comps {
		byName[c.Name] = true
	}
	var stages Stages
	missing := map[string]bool{}
	for _, stage := range AddonStages {
		entries, ok := f.AddonStages[stage]
		if !ok {
			continue
		}
		st := Stage{Name: stage, Steps: []StageStep{}}
		for i, e := range entries {
			where := fmt.Sprintf("addonStages.%s[%d]", stage, i)
			if e.Name == "" {
				l.ps.addf(ClusterAddonFile, "%s: name is missing", where)
				continue
			}
			switch e.Action {
			case ActionApply:
				if !byName[e.Name] {
					if !missing[e.Name] {
						missing[e.Name] = true
						if l.isDir(path.Join(ClusterAddonDir, e.Name)) {
							l.ps.addf(ClusterAddonFile, "%s: component %q is not a valid component (see %s/%s/)", where, e.Name, ClusterAddonDir, e.Name)
						} else {
							l.ps.addf(ClusterAddonFile, "%s: component %q does not exist (no %s/%s/ directory)", where, e.Name, ClusterAddonDir, e.Name)
						}
					}
					continue
				}
			case ActionDelete:
				if msg := deleteStepProblem(stage, e.Name); msg != "" {
					l.ps.addf(ClusterAddonFile, "%s: %s", where, msg)
					continue
				}
			default:
				l.ps.addf(ClusterAddonFile, "%s: action %q of %s must be apply or delete", where, e.Action, e.Name)
				continue
			}
			st.Steps = append(st.Steps, StageStep{Component: e.Name, Action: e.Action})
		}
		stages = append(stages, st)
	}
	deleted := map[string]bool{}
	for _, c := range stages.Components(StageBeforeClusterUpgrade, ActionDelete) {
		deleted[c] = true
	}
	for _, c := range stages.Components(StageBeforeClusterUpgrade, ActionApply) {
		if deleted[c] {
			l.ps.addf(ClusterAddonFile, "addonStages.%s: component %q is both applied and deleted: keep the apply step to upgrade it before the control plane, or the delete step to remove it before the upgrade and install it again after",
				StageBeforeClusterUpgrade, c)
		}
	}
	return stages
}

// deleteStepProblem says what is wrong with a delete step of component name in stage, or "".
func deleteStepProblem(stage, name string) string {
	switch stage {
	case StageAfterControlPlaneInitialized:
		return fmt.Sprintf("delete steps act only in %s: a new cluster has no %s to remove (drop this step)", StageBeforeClusterUpgrade, name)
	case StageAfterClusterUpgrade:
		return fmt.Sprintf("delete steps act only in %s: a component the release does not have is removed after the upgrade anyway (drop this step, or move it to %s to remove %s before the upgrade)",
			StageBeforeClusterUpgrade, StageBeforeClusterUpgrade, name)
	}
	if !dnsLabelRE.MatchString(name) || len(name) > 63 {
		return fmt.Sprintf("delete step names %q, which is no component name (a DNS-1123 label: lower-case letters, digits and '-')", name)
	}
	return ""
}
