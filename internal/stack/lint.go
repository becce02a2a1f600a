package stack

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/clusterstack-io/clusterstack-operator/internal/releasename"
	"github.com/clusterstack-io/clusterstack-operator/internal/render"
)

// Lint checks a stack directory and reports every problem it finds, each with its file
// (relative to dir). version is the release version the stack is about to be tagged with
// ("v2"); when given, cluster-class/Chart.yaml must carry it. Beyond what Load checks:
//
//   - the cluster-class chart version is a stack version (and the release version, if given);
//   - Chart.yaml dependencies are vendored under charts/, file:// charts that exist, or name an
//     http(s):// or oci:// chart repository that Flux fetches them from (pinned as Chart.yaml
//     asks by Chart.lock, if any); a chart missing such dependencies is rendered without them,
//     and its render failures are not reported;
//   - every Helm template parses (text/template with Helm's function names);
//   - Helm charts render (helm.sh/helm/v3 engine, as helm-controller would install them:
//     cluster-class with release name <provider>-<stack>-<major>-<minor>; addons in their
//     namespace with Kubernetes set to the stack's version and the values of overwrite.yaml
//     and a shared cluster-addon-values.yaml rendered for a sample cluster when that works), to
//     Kubernetes objects;
//   - the top-level keys of a shared cluster-addon-values.yaml are components;
//   - the cluster-class renders exactly one ClusterClass named like the release, whose
//     template references are all rendered by the cluster-class itself;
//   - kustomize directories build with Flux's own packages as kustomize-controller v1.7.3
//     builds them (fluxcd/pkg/kustomize v1.24.0 Generator and SecureBuild, kustomize api
//     v0.20.1: generated kustomization.yaml when there is none, LoadRestrictionsNone, builtin
//     plugins only), to Kubernetes objects, and reference without a default only substitution
//     variables the operator provides (render.BaseVariableNames, or the flattened keys of
//     overwrite.yaml; ClusterClassVariables for a kustomize cluster-class), as Flux's
//     post-build substitution (fluxcd/pkg/kustomize SubstituteVariables, fluxcd/pkg/envsubst)
//     parses them.
func Lint(dir, version string) []Problem {
	s, loadProblems := load(dir)
	lt := &linter{stackReader: &stackReader{dir: dir}, s: s}
	for _, p := range loadProblems {
		lt.ps.add(p)
	}
	if version != "" {
		if _, err := releasename.ParseVersion(version); err != nil {
			lt.ps.addf("", "release version: %v", err)
			version = ""
		}
	}
	lt.version = version
	lt.lintClusterClass()
	for _, c := range s.Components {
		lt.lintAddon(c)
	}
	lt.lintAddonValues()
	return lt.ps.list
}

type linter struct {
	*stackReader
	s       *Stack
	version string
	// variables are the ClusterClass variable defaults, used as sample .Variables.
	variables map[string]any
}

func (lt *linter) metadataOK() bool {
	return lt.s.Provider != "" && lt.s.Name != "" && lt.s.KubernetesMinor != ""
}

func (lt *linter) lintClusterClass() {
	c := lt.s.ClusterClass
	chartRel := path.Join(c.Path, ChartFile)
	switch c.Kind {
	case KindHelm:
		if c.Version == "" || c.ChartName == "" {
			return // reported by load
		}
		want := ""
		if _, err := releasename.ParseVersion(c.Version); err != nil {
			lt.ps.addf(chartRel, "version %q is not a stack version (v<N>, or v<N>-<channel>.<patch>): the ClusterClass and the release tag are named after it", c.Version)
		} else if lt.metadataOK() {
			want = lt.s.ReleaseName(c.Version)
		}
		if lt.version != "" && c.Version != lt.version {
			lt.ps.addf(chartRel, "%s", lt.versionMismatch(c.Version))
		}
		fetched := lt.checkDependencies(c)
		if !lt.parseChartTemplates(c) {
			return
		}
		files, err := renderHelm(lt.dir, c, helmRender{releaseName: lt.releaseNameOr("cluster-class"), namespace: "default"})
		if err != nil {
			if !fetched {
				lt.ps.add(problemFromRender(err, c))
			}
			return
		}
		lt.addAll(objectProblems(files))
		if !fetched {
			// Without the subcharts Flux fetches, the ClusterClass or its templates may be missing.
			lt.addAll(checkClusterClass(files, c, want))
		}
		lt.variables = classVariableDefaults(files)
	case KindKustomize:
		b, err := buildKustomize(lt.dir, c.Path)
		if err != nil {
			lt.ps.addf(c.Path+"/", "%v", err)
			return
		}
		files := []renderedFile{{File: c.Path + "/", Objects: b.objects}}
		lt.addAll(objectProblems(files))
		if !lt.checkVariables(c, b, ClusterClassVariables, "the operator's cluster-class variables") || !lt.metadataOK() {
			return
		}
		ver := lt.version
		if ver == "" {
			ver = "v1"
		}
		vars := map[string]string{
			"cluster_class_name": lt.s.ReleaseName(ver),
			"release_name":       lt.s.HelmReleaseName(),
			"release_version":    ver,
			"kubernetes_version": lt.s.KubernetesVersion,
		}
		objs, err := b.substitute(vars, false)
		if err != nil {
			lt.ps.addf(c.Path+"/", "%v", err)
			return
		}
		files = []renderedFile{{File: c.Path + "/", Objects: objs}}
		for _, p := range checkClusterClass(files, c, lt.s.ReleaseName(ver)) {
			if strings.Contains(p.Message, "want the release name") {
				p.Message = strings.Replace(p.Message, "(name it {{ .Release.Name }}-{{ .Chart.Version }})", "(name it ${cluster_class_name})", 1)
			}
			lt.ps.add(p)
		}
		lt.variables = classVariableDefaults(files)
	}
}

// versionMismatch says that the cluster-class chart's version is not the release's. SCS
// publishes a channel version with a dash in the tag ("v1-alpha-0") and a dot in the chart
// ("v1-alpha.0"); here the tag, the chart version and the ClusterClass name must agree, so the
// message names the tag to publish instead.
func (lt *linter) versionMismatch(chartVersion string) string {
	msg := fmt.Sprintf("version %q does not match release version %q", chartVersion, lt.version)
	if releasename.CompareVersions(chartVersion, lt.version) != 0 {
		return msg
	}
	msg += " (the same version spelled differently: the tag, the chart version and the ClusterClass name must spell it alike"
	if lt.metadataOK() {
		msg += fmt.Sprintf("; publish the tag %q, or set the chart version to %q", lt.s.ReleaseName(chartVersion), lt.version)
	}
	return msg + ")"
}

func (lt *linter) releaseNameOr(fallback string) string {
	if lt.metadataOK() {
		return lt.s.HelmReleaseName()
	}
	return fallback
}

func (lt *linter) lintAddon(c Component) {
	switch c.Kind {
	case KindHelm:
		if c.Version == "" || c.ChartName == "" {
			return
		}
		fetched := lt.checkDependencies(c)
		if !lt.parseChartTemplates(c) {
			return
		}
		var values map[string]any
		valuesOK := c.ValuesFile == "" && lt.s.AddonValuesFile == ""
		if lt.s.hasValues(c) {
			// Best effort: a template that needs data the sample cluster lacks renders the
			// chart with its defaults only, and then a failing render proves nothing.
			var err error
			values, err = render.RenderComponent(lt.sampleData(), lt.s.renderComponent(c))
			valuesOK = err == nil
		}
		// As the operator installs it for the sample cluster (fluxgen.AddonTarget).
		releaseName, namespace := c.Name, c.Namespace
		if render.HasClusterName(namespace) {
			releaseName, namespace = sampleClusterName+"-"+c.Name, render.ExpandClusterName(namespace, sampleClusterName)
		}
		files, err := renderHelm(lt.dir, c, helmRender{releaseName: releaseName, namespace: namespace, kubeVersion: lt.s.KubernetesVersion, values: values})
		if err != nil {
			// Nor does it when subcharts that Flux fetches are missing here.
			if valuesOK && !fetched {
				lt.ps.add(problemFromRender(err, c))
			}
			return
		}
		lt.addAll(objectProblems(files))
	case KindKustomize:
		b, err := buildKustomize(lt.dir, c.Path)
		if err != nil {
			lt.ps.addf(c.Path+"/", "%v", err)
			return
		}
		lt.addAll(objectProblems([]renderedFile{{File: c.Path + "/", Objects: b.objects}}))
		known := render.BaseVariableNames()
		if lt.s.hasValues(c) {
			rc := lt.s.renderComponent(c)
			rc.AllowMissing = true
			values, err := render.RenderComponent(lt.sampleData(), rc)
			var rerr *render.Error
			// A shared cluster-addon-values.yaml that is no mapping is reported by lintAddonValues.
			if errors.As(err, &rerr) && rerr.File == c.ValuesFile && strings.HasPrefix(rerr.Err.Error(), "rendered values are not a YAML map") {
				lt.ps.addf(c.ValuesFile, "the values template does not produce a YAML mapping for a sample cluster: %v", rerr.Err)
				return
			}
			if err != nil {
				return // cannot tell which keys the values have
			}
			known = append(known, sortedKeys(render.Flatten(values))...)
		}
		what := "an operator variable nor a flattened key of the overwrite.yaml values"
		if lt.s.AddonValuesFile != "" {
			what = "an operator variable nor a flattened key of the overwrite.yaml or " + ClusterAddonValuesFile + " values"
		}
		lt.checkVariables(c, b, known, what)
		lt.checkNumericSubstitutions(c, b.objects)
	}
}

// checkNumericSubstitutions reports string-only fields (ConfigMap data, Secret stringData,
// labels, annotations, container env values) whose whole value is "${port}"-like: kustomize
// drops the quotes of "${var}", so Flux substitutes a bare number and the apply fails.
func (lt *linter) checkNumericSubstitutions(c Component, objs []map[string]any) {
	numeric := map[string]bool{"control_plane_endpoint_port": true}
	check := func(where string, m map[string]any) {
		for _, k := range sortedKeys(m) {
			v, _ := m[k].(string)
			if name, ok := strings.CutPrefix(v, "${"); ok && strings.HasSuffix(name, "}") && numeric[strings.TrimSuffix(name, "}")] {
				lt.ps.addf(c.Path+"/", "%s.%s is just %s: kustomize drops the quotes, so Flux substitutes a bare number into a string field and the apply fails; combine it with text (\"${control_plane_endpoint_host}:%s\") or use a Helm component", where, k, v, v)
			}
		}
	}
	for _, o := range objs {
		id := objKind(o) + " " + objName(o)
		md, _ := o["metadata"].(map[string]any)
		for _, f := range []string{"labels", "annotations"} {
			if m, ok := md[f].(map[string]any); ok {
				check(id+" metadata."+f, m)
			}
		}
		switch objKind(o) {
		case "ConfigMap":
			if m, ok := o["data"].(map[string]any); ok {
				check(id+" data", m)
			}
		case "Secret":
			if m, ok := o["stringData"].(map[string]any); ok {
				check(id+" stringData", m)
			}
		}
	}
}

// checkVariables reports ${var} references (without a default) to variables not in known, which
// Flux would replace with an empty string, and references Flux's substitution cannot parse. It
// returns false when the substitution fails whatever the variables.
func (lt *linter) checkVariables(c Component, b *kustomizeBuild, known []string, what string) bool {
	unset, err := b.unsetVariables(known)
	if err != nil {
		lt.ps.addf(c.Path+"/", "%v", err)
		return false
	}
	for _, v := range unset {
		lt.ps.addf(c.Path+"/", "${%s} is neither %s (Flux would substitute an empty string, or fail with kustomize-controller's StrictPostBuildSubstitutions feature gate; known: %s; for a literal ${%s} write $${%s})",
			v, strings.TrimPrefix(what, "the "), strings.Join(known, ", "), v, v)
	}
	return true
}

func (lt *linter) addAll(ps []Problem) {
	for _, p := range ps {
		lt.ps.add(p)
	}
}

// The made-up cluster lint renders values templates for.
const (
	sampleClusterName      = "lint-cluster"
	sampleClusterNamespace = "default"
	samplePodCIDR          = "192.168.0.0/16"
	sampleServiceCIDR      = "10.96.0.0/12"
	sampleEndpointHost     = "lint-cluster.example.com"
	sampleEndpointPort     = int64(6443)
)

// sampleData is the template data of a made-up cluster of this stack.
func (lt *linter) sampleData() render.Input {
	version := lt.version
	if version == "" {
		version = lt.s.ClusterClass.Version
	}
	return sampleInput(lt.s, version, lt.variables)
}

// SampleInput is the template data of the made-up Cluster lint renders values templates for
// (named lint-cluster, pod CIDR 192.168.0.0/16, endpoint lint-cluster.example.com:6443, the
// ClusterClass variables at their defaults), at release version ("" for the cluster-class
// chart's own). stackctl renders stacks for it where there is no real Cluster.
func (s *Stack) SampleInput(version string) render.Input {
	if version == "" {
		version = s.ClusterClass.Version
	}
	var variables map[string]any
	if objs, err := RenderClusterClass(s.Dir, version); err == nil {
		variables = classVariableDefaults([]renderedFile{{Objects: objs}})
	}
	return sampleInput(s, version, variables)
}

func sampleInput(s *Stack, version string, variables map[string]any) render.Input {
	release := render.Release{Name: s.ReleaseName(version), Version: version, KubernetesVersion: s.KubernetesVersion}
	vars := []any{}
	for _, k := range sortedKeys(variables) {
		vars = append(vars, map[string]any{"name": k, "value": variables[k]})
	}
	infraKind := strings.ToUpper(s.Provider[:min(1, len(s.Provider))]) + s.Provider[min(1, len(s.Provider)):] + "Cluster"
	md := map[string]any{"name": sampleClusterName, "namespace": sampleClusterNamespace}
	cluster := map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta2",
		"kind":       "Cluster",
		"metadata":   md,
		"spec": map[string]any{
			"clusterNetwork": map[string]any{
				"pods":          map[string]any{"cidrBlocks": []any{samplePodCIDR}},
				"services":      map[string]any{"cidrBlocks": []any{sampleServiceCIDR}},
				"serviceDomain": "cluster.local",
			},
			"controlPlaneEndpoint": map[string]any{"host": sampleEndpointHost, "port": sampleEndpointPort},
			"topology": map[string]any{
				"classRef":  map[string]any{"name": release.Name},
				"version":   s.KubernetesVersion,
				"variables": vars,
			},
		},
	}
	controlPlane := map[string]any{
		"apiVersion": "controlplane.cluster.x-k8s.io/v1beta2",
		"kind":       "KubeadmControlPlane",
		"metadata":   map[string]any{"name": sampleClusterName + "-control-plane", "namespace": sampleClusterNamespace},
		"spec":       map[string]any{"version": s.KubernetesVersion, "replicas": int64(1)},
	}
	infra := map[string]any{
		"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
		"kind":       infraKind,
		"metadata":   map[string]any{"name": sampleClusterName, "namespace": sampleClusterNamespace},
		"spec":       map[string]any{"controlPlaneEndpoint": map[string]any{"host": sampleEndpointHost, "port": sampleEndpointPort}},
	}
	return render.Input{Cluster: cluster, ControlPlane: controlPlane, InfraCluster: infra, Release: release}
}

// classVariableDefaults returns the schema defaults of the rendered ClusterClass variables.
func classVariableDefaults(files []renderedFile) map[string]any {
	out := map[string]any{}
	for _, f := range files {
		for _, o := range f.Objects {
			if objKind(o) != "ClusterClass" {
				continue
			}
			spec, _ := o["spec"].(map[string]any)
			vars, _ := spec["variables"].([]any)
			for _, v := range vars {
				vm, _ := v.(map[string]any)
				name, _ := vm["name"].(string)
				schema, _ := vm["schema"].(map[string]any)
				oa, _ := schema["openAPIV3Schema"].(map[string]any)
				if d, ok := oa["default"]; ok && name != "" {
					out[name] = d
				}
			}
		}
	}
	return out
}

// FormatProblems renders problems as "<dir>/<file>: message" lines (used by stackctl).
func FormatProblems(dir string, ps []Problem) string {
	var b strings.Builder
	for _, p := range ps {
		file := dir
		if p.File != "" {
			file = strings.TrimSuffix(dir, "/") + "/" + p.File
		}
		fmt.Fprintf(&b, "%s: %s\n", file, p.Message)
	}
	return b.String()
}

// RenderClusterClass renders the stack's cluster-class as the operator delivers it for the
// given release version ("" for the chart's own): a Helm chart with release name
// <provider>-<stack>-<major>-<minor> and that chart version, or a kustomize directory built
// like Flux does with the cluster-class variables substituted. For stackctl template and
// tests; the operator itself leaves this to Flux.
func RenderClusterClass(dir, version string) ([]map[string]any, error) {
	s, err := Load(dir)
	if err != nil {
		return nil, err
	}
	c := s.ClusterClass
	if version == "" {
		version = c.Version
	}
	if c.Kind == KindKustomize {
		b, err := buildKustomize(dir, c.Path)
		if err != nil {
			return nil, err
		}
		return b.substitute(map[string]string{
			"cluster_class_name": s.ReleaseName(version),
			"release_name":       s.HelmReleaseName(),
			"release_version":    version,
			"kubernetes_version": s.KubernetesVersion,
		}, false)
	}
	files, err := renderHelm(dir, c, helmRender{releaseName: s.HelmReleaseName(), namespace: "default", version: version})
	if err != nil {
		return nil, problemFromRender(err, c)
	}
	var objs []map[string]any
	for _, f := range files {
		objs = append(objs, f.Objects...)
	}
	return objs, nil
}
