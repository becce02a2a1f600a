package stack

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/releasename"
	"github.com/clusterstack-io/clusterstack-operator/internal/render"
	"github.com/clusterstack-io/clusterstack-operator/internal/requirements"
)

// Kind is how a component is delivered.
type Kind string

const (
	// KindHelm is a Helm chart (the directory has a Chart.yaml), installed by a Flux
	// HelmRelease.
	KindHelm Kind = "Helm"
	// KindKustomize is a kustomize directory (a kustomization.yaml, or plain manifests for
	// which Flux generates one), applied by a Flux Kustomization.
	KindKustomize Kind = "Kustomize"
)

// File and directory names of the stack format.
const (
	StackFile              = "stack.yaml"
	CsctlFile              = "csctl.yaml"
	ClusterClassDir        = "cluster-class"
	ClusterAddonDir        = "cluster-addon"
	ClusterAddonFile       = "clusteraddon.yaml"
	OverwriteFile          = "overwrite.yaml"
	ClusterAddonValuesFile = "cluster-addon-values.yaml"
	ChartFile              = "Chart.yaml"

	// UmbrellaComponent is the name of the single component of an old-style stack whose
	// cluster-addon/ is one Helm chart.
	UmbrellaComponent = "cluster-addon"
	// DefaultNamespace is the workload-cluster namespace of a component unless stack.yaml
	// says otherwise.
	DefaultNamespace = "kube-system"
	// CsctlAPIVersion is the only csctl.yaml apiVersion there is.
	CsctlAPIVersion = "csctl.clusterstack.x-k8s.io/v1alpha1"
)

// Addon stages of clusteraddon.yaml, in the order the addon order is taken from.
var AddonStages = []string{"AfterControlPlaneInitialized", "BeforeClusterUpgrade", "AfterClusterUpgrade"}

// Component is one deliverable directory of a stack: the cluster-class or an addon.
type Component struct {
	// Name: "cluster-class", the addon directory name ("cni"), or "cluster-addon" for the
	// umbrella chart of an old-style stack.
	Name string `json:"name"`
	// Path is relative to the stack directory, slash-separated: "cluster-addon/cni".
	Path string `json:"path"`
	Kind Kind   `json:"kind"`
	// ChartName is the name in Chart.yaml (Helm only).
	ChartName string `json:"chartName,omitempty"`
	// Version is the Chart.yaml version for Helm; for kustomize "sha256-" and the first 12
	// hex digits of Digest.
	Version string `json:"version"`
	// Digest is "sha256:<hex>" over the paths and contents of every file of the directory
	// (and, for addons, of cluster-addon-values.yaml if the stack has one, which may hold
	// values of every component): it changes whenever anything the operator delivers for the
	// component changes.
	Digest string `json:"digest"`
	// ValuesTemplate is the `values` text of overwrite.yaml (or, for the umbrella chart, of
	// cluster-addon-values.yaml): a Go template producing Helm values YAML. Empty if none.
	ValuesTemplate string `json:"valuesTemplate,omitempty"`
	// ValuesFile is where ValuesTemplate came from, relative to the stack directory.
	ValuesFile string `json:"valuesFile,omitempty"`
	// Subcharts are the keys of the chart's dependencies (Chart.yaml's, or requirements.yaml's),
	// each one's alias or else its name (Helm addons only): a shared cluster-addon-values.yaml's
	// entry under one of them is values for that subchart (render.SharedBase).
	Subcharts []string `json:"subcharts,omitempty"`
	// Namespace is the target namespace in the workload cluster (addons only):
	// DefaultNamespace unless stack.yaml's namespaces map names another.
	Namespace string `json:"namespace,omitempty"`
}

// Stack is a stack directory as read from disk.
type Stack struct {
	// Dir is the directory Load was given.
	Dir      string `json:"dir"`
	Provider string `json:"provider"`
	Name     string `json:"name"`
	// KubernetesVersion is the exact version, normalized: "v1.36.3".
	KubernetesVersion string `json:"kubernetesVersion"`
	// KubernetesMinor is "1.36".
	KubernetesMinor string    `json:"kubernetesMinor"`
	ClusterClass    Component `json:"clusterClass"`
	// Components are the addons in addon order (see clusteraddon.yaml).
	Components []Component `json:"components"`
	// MetadataFile is the file provider, name and version came from: stack.yaml or csctl.yaml.
	MetadataFile string `json:"metadataFile"`
	// Addons is stack.yaml's informative addons map (component -> upstream version).
	Addons map[string]string `json:"addons,omitempty"`
	// Stages are clusteraddon.yaml's addon stages (nil without the file); see stages.go.
	Stages Stages `json:"stages,omitempty"`
	// AddonValuesTemplate is the `values` text of a cluster-addon-values.yaml next to
	// per-component directories: a template whose output maps component names to values (see
	// RenderComponents). Empty without that file, and in an old-style stack, whose umbrella
	// component takes the file as its ValuesTemplate.
	AddonValuesTemplate string `json:"addonValuesTemplate,omitempty"`
	// AddonValuesFile is where AddonValuesTemplate came from: ClusterAddonValuesFile, or "".
	AddonValuesFile string `json:"addonValuesFile,omitempty"`
	// Requirements are stack.yaml's `requires:` list: the management operators (with version
	// ranges) and the Cluster API contract the stack needs. A release whose requirements the
	// delivered ManagementOperators do not meet is not used.
	Requirements []Requirement `json:"requirements,omitempty"`
	// ProviderKinds are the kinds of the provider objects the cluster-class creates besides its
	// ClusterClass and templates (ProviderKinds). Load leaves it empty; the operator's stack
	// cache sets it.
	ProviderKinds []ProviderKind `json:"providerKinds,omitempty"`
}

// Requirement is one entry of stack.yaml's `requires:` list: an operator of the management plane
// (a ManagementOperator's component name) with an optional version range, or a Cluster API
// contract. Its fields are those of the API's StackRequirement, in the same order, so that one
// converts to the other.
type Requirement struct {
	// Operator is a ManagementOperator's spec.component.name, e.g. "cluster-api".
	Operator string `json:"operator,omitempty" yaml:"operator"`
	// Versions is a semantic version range the delivered version must be in, e.g. ">=1.10.0 <1.12.0".
	Versions string `json:"versions,omitempty" yaml:"versions"`
	// CAPIContract is a Cluster API contract the core provider must serve, e.g. "v1beta2".
	CAPIContract string `json:"capiContract,omitempty" yaml:"capiContract"`
}

// HelmReleaseName is the Helm release name of the cluster-class chart: "aws-base-1-36".
func (s *Stack) HelmReleaseName() string {
	return strings.TrimSuffix(releasename.Format(s.Provider, s.Name, s.KubernetesMinor, ""), "-")
}

// ReleaseName is the tag / ClusterClass name of the given version of this stack.
func (s *Stack) ReleaseName(version string) string {
	return releasename.Format(s.Provider, s.Name, s.KubernetesMinor, version)
}

// Component returns the addon component with the given name.
func (s *Stack) Component(name string) (Component, bool) {
	for _, c := range s.Components {
		if c.Name == name {
			return c, true
		}
	}
	return Component{}, false
}

// Load reads a stack directory. It reports every structural problem it finds (metadata,
// cluster-class and component layout, clusteraddon.yaml, values files and their templates)
// as a Problems error; Lint checks more (chart dependencies, Helm rendering, kustomize
// builds, the release version).
func Load(dir string) (*Stack, error) {
	s, ps := load(dir)
	if len(ps) > 0 {
		return nil, ps
	}
	return s, nil
}

type stackReader struct {
	dir string
	ps  problems
	// namespaces from stack.yaml
	namespaces map[string]string
	stackYAML  bool
}

func load(dir string) (*Stack, Problems) {
	l := &stackReader{dir: dir}
	s := &Stack{Dir: dir}
	info, err := os.Stat(dir)
	if err != nil {
		l.ps.addf("", "cannot read stack directory: %v", err)
		return s, l.ps.list
	}
	if !info.IsDir() {
		l.ps.addf("", "stack path %s is not a directory", dir)
		return s, l.ps.list
	}
	l.readMetadata(s)
	s.ClusterClass = l.readClusterClass()
	s.Components = l.readComponents()
	s.AddonValuesTemplate, s.AddonValuesFile = l.readAddonValues()
	s.Stages = l.readStages(s.Components)
	s.Components = orderComponents(s.Components, s.Stages)
	l.applyNamespaces(s.Components)
	return s, l.ps.list
}

func (l *stackReader) abs(rel string) string { return filepath.Join(l.dir, filepath.FromSlash(rel)) }

func (l *stackReader) exists(rel string) bool {
	_, err := os.Stat(l.abs(rel))
	return err == nil
}

func (l *stackReader) isDir(rel string) bool {
	info, err := os.Stat(l.abs(rel))
	return err == nil && info.IsDir()
}

// --- metadata -------------------------------------------------------------------------

type stackFile struct {
	Provider          string            `yaml:"provider"`
	ClusterStackName  string            `yaml:"clusterStackName"`
	KubernetesVersion string            `yaml:"kubernetesVersion"`
	Addons            map[string]string `yaml:"addons"`
	Namespaces        map[string]string `yaml:"namespaces"`
	Requires          []Requirement     `yaml:"requires"`
}

type csctlFile struct {
	APIVersion string `yaml:"apiVersion"`
	Config     struct {
		KubernetesVersion string `yaml:"kubernetesVersion"`
		ClusterStackName  string `yaml:"clusterStackName"`
		Provider          struct {
			Type string `yaml:"type"`
		} `yaml:"provider"`
	} `yaml:"config"`
}

var (
	dnsLabelRE    = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	minorDirRE    = regexp.MustCompile(`^([0-9]+)-([0-9]+)$`)
	minorOnlyRE   = regexp.MustCompile(`^v?[0-9]+\.[0-9]+$`)
	kustomizeFile = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}
)

// decodeYAML decodes data into out; strict rejects unknown fields.
func decodeYAML(data []byte, out any, strict bool) error {
	dec := yamlv3.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(strict)
	if err := dec.Decode(out); err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("the file is empty")
		}
		return err
	}
	return nil
}

func (l *stackReader) readMetadata(s *Stack) {
	haveStack, haveCsctl := l.exists(StackFile), l.exists(CsctlFile)
	if !haveStack && !haveCsctl {
		l.ps.addf("", "no stack metadata: neither %s nor %s exists", StackFile, CsctlFile)
		return
	}
	var csctl *csctlFile
	if haveCsctl {
		csctl = l.readCsctl(!haveStack)
	}
	if haveStack {
		l.stackYAML = true
		s.MetadataFile = StackFile
		data, err := os.ReadFile(l.abs(StackFile))
		if err != nil {
			l.ps.addf(StackFile, "%v", err)
			return
		}
		var f stackFile
		if err := decodeYAML(data, &f, true); err != nil {
			l.ps.addf(StackFile, "not valid stack metadata: %s", yamlErr(err))
			return
		}
		l.setMetadata(s, StackFile, f.Provider, f.ClusterStackName, f.KubernetesVersion, "provider", "clusterStackName", "kubernetesVersion")
		s.Addons = f.Addons
		l.namespaces = f.Namespaces
		s.Requirements = l.checkRequirements(f.Requires)
		if csctl != nil {
			l.checkCsctlAgrees(s, csctl)
		}
		return
	}
	s.MetadataFile = CsctlFile
	if csctl == nil {
		return
	}
	l.setMetadata(s, CsctlFile, csctl.Config.Provider.Type, csctl.Config.ClusterStackName, csctl.Config.KubernetesVersion,
		"config.provider.type", "config.clusterStackName", "config.kubernetesVersion")
}

// readCsctl parses csctl.yaml; problems are only reported when it is the metadata in use.
func (l *stackReader) readCsctl(report bool) *csctlFile {
	data, err := os.ReadFile(l.abs(CsctlFile))
	if err != nil {
		if report {
			l.ps.addf(CsctlFile, "%v", err)
		}
		return nil
	}
	var f csctlFile
	if err := decodeYAML(data, &f, false); err != nil {
		if report {
			l.ps.addf(CsctlFile, "not valid csctl metadata: %s", yamlErr(err))
		}
		return nil
	}
	if report && f.APIVersion != CsctlAPIVersion {
		if f.APIVersion == "" {
			l.ps.addf(CsctlFile, "apiVersion is missing (want %s)", CsctlAPIVersion)
		} else {
			l.ps.addf(CsctlFile, "unknown apiVersion %q (want %s)", f.APIVersion, CsctlAPIVersion)
		}
	}
	return &f
}

func (l *stackReader) setMetadata(s *Stack, file, provider, name, version, providerKey, nameKey, versionKey string) {
	switch {
	case provider == "":
		l.ps.addf(file, "%s is missing", providerKey)
	case !releasename.ValidSegment(provider):
		l.ps.addf(file, "%s %q must be lower-case letters and digits only (it is the first '-'-separated part of release names)", providerKey, provider)
	default:
		s.Provider = provider
	}
	switch {
	case name == "":
		l.ps.addf(file, "%s is missing", nameKey)
	case !releasename.ValidSegment(name):
		l.ps.addf(file, "%s %q must be lower-case letters and digits only (it is the second '-'-separated part of release names)", nameKey, name)
	default:
		s.Name = name
	}
	if version == "" {
		l.ps.addf(file, "%s is missing", versionKey)
		return
	}
	normalized, minor, err := releasename.ParseKubernetesVersion(version)
	if err != nil {
		if minorOnlyRE.MatchString(version) {
			l.ps.addf(file, "%s %q is not a patch version: give the exact Kubernetes version, e.g. %s.3", versionKey, version, strings.TrimPrefix(version, "v"))
		} else {
			l.ps.addf(file, "%s %q is not a Kubernetes patch version like 1.36.3", versionKey, version)
		}
		return
	}
	s.KubernetesVersion, s.KubernetesMinor = normalized, minor
	if m := minorDirRE.FindStringSubmatch(filepath.Base(filepath.Clean(l.dir))); m != nil {
		if dirMinor := m[1] + "." + m[2]; dirMinor != minor {
			l.ps.addf(file, "%s %s does not match the stack directory %s (Kubernetes %s)", versionKey, version, filepath.Base(filepath.Clean(l.dir)), dirMinor)
		}
	}
}

// checkRequirements reports every malformed entry of `requires:` (ranges that do not parse, an
// operator listed twice, ...) and returns the entries.
func (l *stackReader) checkRequirements(reqs []Requirement) []Requirement {
	seen := map[string]int{}
	for i, r := range reqs {
		if msg := requirements.Validate(csv1.StackRequirement(r)); msg != "" {
			l.ps.addf(StackFile, "requires[%d]: %s", i, msg)
			continue
		}
		key := "operator " + r.Operator
		if r.CAPIContract != "" {
			key = "capiContract " + r.CAPIContract
		}
		if j, ok := seen[key]; ok {
			l.ps.addf(StackFile, "requires[%d]: %s is listed again (first in requires[%d]): write one entry, with one range", i, key, j)
			continue
		}
		seen[key] = i
	}
	return reqs
}

func (l *stackReader) checkCsctlAgrees(s *Stack, c *csctlFile) {
	if p := c.Config.Provider.Type; p != "" && s.Provider != "" && p != s.Provider {
		l.ps.addf(CsctlFile, "config.provider.type %q contradicts %s provider %q", p, StackFile, s.Provider)
	}
	if n := c.Config.ClusterStackName; n != "" && s.Name != "" && n != s.Name {
		l.ps.addf(CsctlFile, "config.clusterStackName %q contradicts %s clusterStackName %q", n, StackFile, s.Name)
	}
	if v := strings.TrimPrefix(c.Config.KubernetesVersion, "v"); v != "" && s.KubernetesMinor != "" {
		if v != s.KubernetesMinor && !strings.HasPrefix(v, s.KubernetesMinor+".") {
			l.ps.addf(CsctlFile, "config.kubernetesVersion %q contradicts %s kubernetesVersion %s", c.Config.KubernetesVersion, StackFile, s.KubernetesVersion)
		}
	}
}

// --- components ---------------------------------------------------------------------

type chartFile struct {
	APIVersion   string            `yaml:"apiVersion"`
	Name         string            `yaml:"name"`
	Version      string            `yaml:"version"`
	Dependencies []chartDependency `yaml:"dependencies"`
}

type chartDependency struct {
	Name       string `yaml:"name"`
	Version    string `yaml:"version"`
	Repository string `yaml:"repository"`
	Alias      string `yaml:"alias"`
}

// chartDependencies returns the dependencies of the chart in directory rel, whose Chart.yaml is
// chart: those of its Chart.yaml, or else those of its requirements.yaml (apiVersion v1 charts),
// with the file they are in. A requirements.yaml that cannot be read or does not parse gives
// none and a problem, which lint reports.
func (l *stackReader) chartDependencies(rel string, chart chartFile) ([]chartDependency, string, *Problem) {
	chartRel, reqRel := path.Join(rel, ChartFile), path.Join(rel, "requirements.yaml")
	if len(chart.Dependencies) > 0 || !l.exists(reqRel) {
		return chart.Dependencies, chartRel, nil
	}
	data, err := os.ReadFile(l.abs(reqRel))
	if err != nil {
		return nil, reqRel, &Problem{File: reqRel, Message: err.Error()}
	}
	var req dependenciesFile
	if err := decodeYAML(data, &req, false); err != nil {
		return nil, reqRel, &Problem{File: reqRel, Message: "not valid YAML: " + yamlErr(err)}
	}
	return req.Dependencies, reqRel, nil
}

// subchartKeys returns the key each dependency's values go under in its parent chart's values:
// its alias, or else its name.
func subchartKeys(deps []chartDependency) []string {
	var out []string
	for _, d := range deps {
		key := d.Alias
		if key == "" {
			key = d.Name
		}
		if key != "" {
			out = append(out, key)
		}
	}
	return out
}

// detectKind tells what a component directory is. kustomization reports whether the
// directory has its own kustomization file (else Flux would generate one).
func (l *stackReader) detectKind(rel string) (kind Kind, kustomization bool, ok bool) {
	if l.exists(path.Join(rel, ChartFile)) {
		return KindHelm, false, true
	}
	for _, k := range kustomizeFile {
		if l.exists(path.Join(rel, k)) {
			return KindKustomize, true, true
		}
	}
	found := false
	_ = filepath.WalkDir(l.abs(rel), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && isYAMLName(d.Name()) {
			found = true
			return fs.SkipAll
		}
		return nil
	})
	if found {
		return KindKustomize, false, true
	}
	return "", false, false
}

func isYAMLName(name string) bool {
	ext := filepath.Ext(name)
	return ext == ".yaml" || ext == ".yml"
}

func (l *stackReader) readChart(rel string) (chartFile, bool) {
	file := path.Join(rel, ChartFile)
	data, err := os.ReadFile(l.abs(file))
	if err != nil {
		l.ps.addf(file, "%v", err)
		return chartFile{}, false
	}
	var c chartFile
	if err := decodeYAML(data, &c, false); err != nil {
		l.ps.addf(file, "not valid YAML: %s", yamlErr(err))
		return chartFile{}, false
	}
	if c.APIVersion == "" {
		l.ps.addf(file, "apiVersion is missing (Helm needs v2, or v1 for old charts)")
	}
	if c.Name == "" {
		l.ps.addf(file, "name is missing")
	}
	if c.Version == "" {
		l.ps.addf(file, "version is missing")
	}
	return c, true
}

// readComponent fills in a component of the given directory; name is its name.
func (l *stackReader) readComponent(name, rel string, clusterClass bool) (Component, bool) {
	c := Component{Name: name, Path: rel}
	kind, kustomization, ok := l.detectKind(rel)
	if !ok {
		l.ps.addf(rel+"/", "neither a Helm chart (no %s) nor a kustomize directory (no kustomization.yaml and no YAML manifests)", ChartFile)
		return c, false
	}
	c.Kind = kind
	extra := []string{}
	if !clusterClass && l.exists(ClusterAddonValuesFile) {
		extra = append(extra, ClusterAddonValuesFile)
	}
	digest, err := l.digest(rel, extra)
	if err != nil {
		l.ps.addf(rel+"/", "cannot read: %v", err)
		return c, false
	}
	c.Digest = digest
	switch kind {
	case KindHelm:
		chart, ok := l.readChart(rel)
		if ok {
			c.ChartName, c.Version = chart.Name, chart.Version
			if !clusterClass {
				deps, _, _ := l.chartDependencies(rel, chart) // lint reports a broken requirements.yaml
				c.Subcharts = subchartKeys(deps)
			}
		}
	case KindKustomize:
		c.Version = "sha256-" + strings.TrimPrefix(digest, "sha256:")[:12]
		if !kustomization && l.exists(path.Join(rel, OverwriteFile)) {
			l.ps.addf(path.Join(rel, OverwriteFile), "the directory has no kustomization.yaml, so Flux generates one from every YAML file in it and would apply %s as a manifest: add a kustomization.yaml listing the resources", OverwriteFile)
		}
	}
	return c, true
}

func (l *stackReader) readClusterClass() Component {
	if !l.isDir(ClusterClassDir) {
		l.ps.addf(ClusterClassDir+"/", "missing: a stack needs a cluster-class directory (a Helm chart or a kustomize directory producing the ClusterClass)")
		return Component{Name: ClusterClassDir, Path: ClusterClassDir}
	}
	c, _ := l.readComponent(ClusterClassDir, ClusterClassDir, true)
	return c
}

func (l *stackReader) readComponents() []Component {
	if !l.isDir(ClusterAddonDir) {
		if l.exists(ClusterAddonValuesFile) {
			l.ps.addf(ClusterAddonValuesFile, "there is no %s/ chart to take these values", ClusterAddonDir)
		}
		return nil
	}
	// Old style: cluster-addon/ is itself one (umbrella) chart or kustomize directory.
	if l.umbrella() {
		c, ok := l.readComponent(UmbrellaComponent, ClusterAddonDir, false)
		if !ok {
			return nil
		}
		if l.exists(ClusterAddonValuesFile) {
			c.ValuesTemplate, c.ValuesFile = l.readValuesFile(ClusterAddonValuesFile)
		} else if l.exists(path.Join(ClusterAddonDir, OverwriteFile)) {
			c.ValuesTemplate, c.ValuesFile = l.readValuesFile(path.Join(ClusterAddonDir, OverwriteFile))
		}
		return []Component{c}
	}
	entries, err := os.ReadDir(l.abs(ClusterAddonDir))
	if err != nil {
		l.ps.addf(ClusterAddonDir+"/", "%v", err)
		return nil
	}
	var comps []Component
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		rel := path.Join(ClusterAddonDir, e.Name())
		if !dnsLabelRE.MatchString(e.Name()) || len(e.Name()) > 63 {
			l.ps.addf(rel+"/", "component name %q must be a DNS-1123 label (lower-case letters, digits and '-'): the operator uses it in object names", e.Name())
			continue
		}
		c, ok := l.readComponent(e.Name(), rel, false)
		if !ok {
			continue
		}
		if l.exists(path.Join(rel, OverwriteFile)) {
			c.ValuesTemplate, c.ValuesFile = l.readValuesFile(path.Join(rel, OverwriteFile))
		}
		comps = append(comps, c)
	}
	return comps
}

type valuesFile struct {
	Values *string `yaml:"values"`
}

// readValuesFile reads the `values: |` template of an overwrite.yaml or
// cluster-addon-values.yaml and checks that it parses.
func (l *stackReader) readValuesFile(rel string) (string, string) {
	data, err := os.ReadFile(l.abs(rel))
	if err != nil {
		l.ps.addf(rel, "%v", err)
		return "", rel
	}
	var f valuesFile
	if err := decodeYAML(data, &f, true); err != nil {
		msg := yamlErr(err)
		if strings.Contains(msg, "into string") {
			msg = "values must be a string holding the template, written as `values: |`"
		}
		l.ps.addf(rel, "not a valid values file: %s", msg)
		return "", rel
	}
	if f.Values == nil {
		l.ps.addf(rel, "the `values` key is missing (want `values: |` followed by a template of Helm values)")
		return "", rel
	}
	if err := render.Parse(path.Base(rel), *f.Values); err != nil {
		l.ps.addf(rel, "values template does not parse: %v", err)
	}
	return *f.Values, rel
}

// --- addon order and namespaces --------------------------------------------------------

func (l *stackReader) applyNamespaces(comps []Component) {
	for i := range comps {
		comps[i].Namespace = DefaultNamespace
	}
	for _, name := range sortedKeys(l.namespaces) {
		ns := l.namespaces[name]
		idx := -1
		for i := range comps {
			if comps[i].Name == name {
				idx = i
			}
		}
		if idx < 0 {
			l.ps.addf(StackFile, "namespaces.%s: there is no component %q", name, name)
			continue
		}
		if msg := checkNamespace(ns); msg != "" {
			l.ps.addf(StackFile, "namespaces.%s: %s", name, msg)
			continue
		}
		comps[idx].Namespace = ns
	}
}

// sampleNamespaceCluster is the cluster name a per-cluster namespace is checked with: as
// long as realistic cluster names get ("prod-eu-central-1-payments-01").
const sampleNamespaceCluster = "prod-eu-central-1-payments-01"

// checkNamespace returns why ns is no valid component namespace, "" when it is. A namespace
// with render.ClusterNamePlaceholder must be a DNS label of at most 63 characters once the
// placeholder is replaced by a realistic cluster name (sampleNamespaceCluster); the operator
// shortens the namespaces of longer cluster names with a hash (fluxgen.AddonTarget).
func checkNamespace(ns string) string {
	if !render.HasClusterName(ns) {
		if !dnsLabelRE.MatchString(ns) || len(ns) > 63 {
			return fmt.Sprintf("%q is not a valid namespace name (a DNS label: at most 63 lower-case letters, digits and '-'; "+
				"%s is replaced by the Cluster's name)", ns, render.ClusterNamePlaceholder)
		}
		return ""
	}
	sample := render.ExpandClusterName(ns, sampleNamespaceCluster)
	if !dnsLabelRE.MatchString(sample) || len(sample) > 63 {
		return fmt.Sprintf("%q is not a valid namespace name for a Cluster named %q: %q is not a DNS label of at most 63 characters "+
			"(lower-case letters, digits and '-'; %s is the only placeholder)", ns, sampleNamespaceCluster, sample, render.ClusterNamePlaceholder)
	}
	return ""
}

// --- digests ---------------------------------------------------------------------------

// digest hashes every file under rel (sorted, by path relative to rel, with its content;
// symlinks by their target) and the extra files (relative to the stack directory).
func (l *stackReader) digest(rel string, extra []string) (string, error) {
	return dirDigest(l.abs(rel), l.dir, extra)
}

func dirDigest(dir, stackDir string, extra []string) (string, error) {
	type entry struct {
		name string
		data []byte
	}
	var entries []entry
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		var data []byte
		if d.Type()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			data = []byte("symlink:" + target)
		} else {
			if data, err = os.ReadFile(p); err != nil {
				return err
			}
		}
		entries = append(entries, entry{filepath.ToSlash(rel), data})
		return nil
	})
	if err != nil {
		return "", err
	}
	for _, e := range extra {
		data, err := os.ReadFile(filepath.Join(stackDir, filepath.FromSlash(e)))
		if err != nil {
			return "", err
		}
		entries = append(entries, entry{"../" + e, data})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })
	h := sha256.New()
	for _, e := range entries {
		fmt.Fprintf(h, "%s\x00%d\x00", e.name, len(e.data))
		h.Write(e.data)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// --- helpers -----------------------------------------------------------------------------

func yamlErr(err error) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = strings.ReplaceAll(msg, "unmarshal errors:\n  ", "")
	msg = strings.ReplaceAll(msg, "\n  ", "; ")
	return msg
}
