package stack

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"text/template"

	"github.com/Masterminds/semver/v3"
	"github.com/Masterminds/sprig/v3"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"sigs.k8s.io/yaml"
)

// helmFuncs is the function map Helm parses templates with (pkg/engine funcMap): sprig
// without env/expandenv plus Helm's own functions. Only names matter for parsing.
func helmFuncs() template.FuncMap {
	f := sprig.TxtFuncMap()
	delete(f, "env")
	delete(f, "expandenv")
	stub := func(...any) any { return nil }
	for _, name := range []string{"toToml", "fromToml", "toYaml", "toYamlPretty", "fromYaml", "fromYamlArray",
		"toJson", "fromJson", "fromJsonArray", "include", "tpl", "required", "lookup", "mustToYaml", "mustToJson"} {
		f[name] = stub
	}
	return f
}

// parseChartTemplates parses every template of the chart directory (and of unpacked
// subcharts under charts/) on its own and reports each that does not parse.
func (lt *linter) parseChartTemplates(c Component) bool {
	ok := true
	root := lt.abs(c.Path)
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		// templates/... of the chart or of an unpacked subchart (charts/x/templates/...)
		if !strings.HasPrefix(rel, "templates/") && !regexp.MustCompile(`(^|/)charts/[^/]+/templates/`).MatchString(rel) {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			lt.ps.addf(path.Join(c.Path, rel), "%v", err)
			ok = false
			return nil
		}
		if _, err := template.New(path.Join(c.Path, rel)).Funcs(helmFuncs()).Parse(string(data)); err != nil {
			lt.ps.addf(path.Join(c.Path, rel), "Helm template does not parse: %s", strings.TrimPrefix(err.Error(), "template: "))
			ok = false
		}
		return nil
	})
	return ok
}

// checkDependencies reports Chart.yaml dependencies that are not vendored under charts/
// (Flux and the operator do not fetch chart repositories). file:// dependencies only need
// to exist.
func (lt *linter) checkDependencies(c Component) {
	chartRel := path.Join(c.Path, ChartFile)
	data, err := os.ReadFile(lt.abs(chartRel))
	if err != nil {
		return
	}
	var cf chartFile
	if decodeYAML(data, &cf, false) != nil {
		return
	}
	deps := cf.Dependencies
	depsFile := chartRel
	if reqRel := path.Join(c.Path, "requirements.yaml"); len(deps) == 0 && lt.exists(reqRel) {
		if data, err := os.ReadFile(lt.abs(reqRel)); err == nil {
			var req struct {
				Dependencies []chartDependency `yaml:"dependencies"`
			}
			if err := decodeYAML(data, &req, false); err != nil {
				lt.ps.addf(reqRel, "not valid YAML: %s", yamlErr(err))
				return
			}
			deps, depsFile = req.Dependencies, reqRel
		}
	}
	if len(deps) == 0 {
		return
	}
	vendored := lt.vendoredCharts(c.Path)
	for i, d := range deps {
		if d.Name == "" {
			lt.ps.addf(depsFile, "dependencies[%d]: name is missing", i)
			continue
		}
		if strings.HasPrefix(d.Repository, "file://") {
			local := path.Join(c.Path, strings.TrimPrefix(d.Repository, "file://"))
			if !lt.exists(path.Join(local, ChartFile)) {
				lt.ps.addf(depsFile, "dependency %q: %s is no chart (no %s at %s)", d.Name, d.Repository, ChartFile, local)
			}
			continue
		}
		var constraint *semver.Constraints
		if d.Version != "" {
			constraint, err = semver.NewConstraint(d.Version)
			if err != nil {
				lt.ps.addf(depsFile, "dependency %q: version %q is no SemVer constraint: %v", d.Name, d.Version, err)
				continue
			}
		}
		var sameName []string
		found := false
		for _, v := range vendored {
			if v.name != d.Name {
				continue
			}
			sameName = append(sameName, fmt.Sprintf("%s (version %s)", v.file, v.version))
			sv, err := semver.NewVersion(v.version)
			if constraint == nil || (err == nil && constraint.Check(sv)) {
				found = true
			}
		}
		from := ""
		if d.Repository != "" {
			from = " from " + d.Repository
		}
		switch {
		case found:
		case len(sameName) > 0:
			lt.ps.addf(depsFile, "dependency %q %s%s: the vendored chart does not match: %s", d.Name, d.Version, from, strings.Join(sameName, ", "))
		default:
			lt.ps.addf(depsFile, "dependency %q %s%s is not vendored under %s/charts/ (the operator does not fetch chart repositories): run `helm dependency build %s` and commit the archive", d.Name, d.Version, from, c.Path, c.Path)
		}
	}
}

type vendoredChart struct{ file, name, version string }

// vendoredCharts lists the charts under <chart>/charts/: archives and unpacked directories.
func (lt *linter) vendoredCharts(rel string) []vendoredChart {
	dir := path.Join(rel, "charts")
	entries, err := os.ReadDir(lt.abs(dir))
	if err != nil {
		return nil
	}
	var out []vendoredChart
	for _, e := range entries {
		file := path.Join(dir, e.Name())
		var data []byte
		switch {
		case e.IsDir():
			data, err = os.ReadFile(lt.abs(path.Join(file, ChartFile)))
			if err != nil {
				continue
			}
		case strings.HasSuffix(e.Name(), ".tgz") || strings.HasSuffix(e.Name(), ".tar.gz"):
			data, err = chartYAMLFromArchive(lt.abs(file))
			if err != nil {
				lt.ps.addf(file, "not a chart archive: %v", err)
				continue
			}
		default:
			continue
		}
		var cf chartFile
		if err := decodeYAML(data, &cf, false); err != nil {
			lt.ps.addf(file, "its Chart.yaml is not valid YAML: %s", yamlErr(err))
			continue
		}
		out = append(out, vendoredChart{file: file, name: cf.Name, version: cf.Version})
	}
	return out
}

func chartYAMLFromArchive(file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil, fmt.Errorf("no <chart>/%s in the archive", ChartFile)
		}
		if err != nil {
			return nil, err
		}
		parts := strings.Split(strings.TrimPrefix(h.Name, "./"), "/")
		if len(parts) == 2 && parts[1] == ChartFile {
			return io.ReadAll(io.LimitReader(tr, 1<<20))
		}
	}
}

// renderedFile is one rendered template, as the path relative to the stack directory.
type renderedFile struct {
	File    string
	Objects []map[string]any
}

type helmRender struct {
	releaseName string
	namespace   string
	kubeVersion string // "" for Helm's default
	values      map[string]any
	version     string // overrides the chart version if set
}

// renderHelm renders a chart directory the way helm-controller installs it (helm template
// with the release name, namespace and values; dependencies resolved from charts/; lookup
// returns nothing) and parses the output into objects.
func renderHelm(stackDir string, c Component, opts helmRender) ([]renderedFile, error) {
	ch, err := loader.Load(filepath.Join(stackDir, filepath.FromSlash(c.Path)))
	if err != nil {
		return nil, fmt.Errorf("helm cannot load the chart: %w", err)
	}
	if opts.version != "" {
		ch.Metadata.Version = opts.version
	}
	return renderChart(ch, c, opts)
}

func renderChart(ch *chart.Chart, c Component, opts helmRender) (files []renderedFile, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("helm panicked: %v", r)
		}
	}()
	values := opts.values
	if values == nil {
		values = map[string]any{}
	}
	if err := chartutil.ProcessDependenciesWithMerge(ch, values); err != nil {
		return nil, fmt.Errorf("helm dependencies: %w", err)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	if opts.kubeVersion != "" {
		if v, err := semver.NewVersion(opts.kubeVersion); err == nil {
			caps.KubeVersion = chartutil.KubeVersion{Version: opts.kubeVersion, Major: fmt.Sprint(v.Major()), Minor: fmt.Sprint(v.Minor())}
		}
	}
	vals, err := chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{
		Name: opts.releaseName, Namespace: opts.namespace, Revision: 1, IsInstall: true,
	}, caps)
	if err != nil {
		return nil, fmt.Errorf("helm values: %s", mapChartPaths(err.Error(), ch.Name(), c.Path))
	}
	out, err := engine.Render(ch, vals)
	if err != nil {
		return nil, fmt.Errorf("%s", mapChartPaths(err.Error(), ch.Name(), c.Path))
	}
	for _, name := range sortedKeys(out) {
		base := path.Base(name)
		if strings.HasPrefix(base, "_") || base == "NOTES.txt" {
			continue
		}
		file := mapChartPaths(name, ch.Name(), c.Path)
		objs, err := splitManifests(out[name])
		if err != nil {
			return nil, Problem{File: file, Message: "rendered output is not valid YAML: " + err.Error()}
		}
		files = append(files, renderedFile{File: file, Objects: objs})
	}
	return files, nil
}

// mapChartPaths rewrites "<chart name>/templates/x" in Helm messages to the path of the
// component relative to the stack directory.
func mapChartPaths(msg, chartName, compPath string) string {
	re := regexp.MustCompile(`(^|[\s("])` + regexp.QuoteMeta(chartName) + `/`)
	return re.ReplaceAllString(msg, "${1}"+compPath+"/")
}

var fileInMessage = regexp.MustCompile(`[\w.\-/]+\.(?:yaml|yml|tpl|txt|json)`)

// problemFromRender turns a render error into a problem on the template it names.
func problemFromRender(err error, c Component) Problem {
	if p, ok := err.(Problem); ok {
		return p
	}
	msg := err.Error()
	file := c.Path + "/"
	// The innermost template (the last one named) is where the error is.
	for _, m := range fileInMessage.FindAllString(msg, -1) {
		if strings.HasPrefix(m, c.Path+"/") {
			file = m
		}
	}
	return Problem{File: file, Message: "helm template: " + strings.TrimPrefix(msg, "template: ")}
}

// splitManifests parses a multi-document YAML stream into objects, skipping empty documents.
func splitManifests(text string) ([]map[string]any, error) {
	var objs []map[string]any
	for _, doc := range splitYAMLDocuments(text) {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		obj := map[string]any{}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			return nil, err
		}
		if len(obj) == 0 {
			continue
		}
		objs = append(objs, obj)
	}
	return objs, nil
}

var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*(#.*)?$`)

func splitYAMLDocuments(text string) []string { return docSeparator.Split(text, -1) }

func stripComments(doc string) string {
	var b strings.Builder
	for _, line := range strings.Split(doc, "\n") {
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// objectProblems checks that every object has apiVersion, kind and metadata.name, as
// helm-controller and kustomize-controller require.
func objectProblems(files []renderedFile) []Problem {
	var out []Problem
	for _, f := range files {
		for i, o := range f.Objects {
			var missing []string
			if s, _ := o["apiVersion"].(string); s == "" {
				missing = append(missing, "apiVersion")
			}
			if s, _ := o["kind"].(string); s == "" {
				missing = append(missing, "kind")
			}
			if objName(o) == "" {
				missing = append(missing, "metadata.name")
			}
			if len(missing) > 0 {
				out = append(out, Problem{File: f.File, Message: fmt.Sprintf("rendered document %d is not a Kubernetes object: %s missing", i+1, strings.Join(missing, ", "))})
			}
		}
	}
	return out
}

func objName(o map[string]any) string {
	md, _ := o["metadata"].(map[string]any)
	s, _ := md["name"].(string)
	return s
}

func objKind(o map[string]any) string { s, _ := o["kind"].(string); return s }

func objGroup(o map[string]any) string {
	s, _ := o["apiVersion"].(string)
	if i := strings.Index(s, "/"); i >= 0 {
		return s[:i]
	}
	return ""
}

// checkClusterClass checks the rendered cluster-class: one ClusterClass (cluster.x-k8s.io)
// named want, whose template references name objects the cluster-class itself renders.
func checkClusterClass(files []renderedFile, c Component, want string) []Problem {
	var out []Problem
	type key struct{ kind, name string }
	have := map[key]bool{}
	var classes []map[string]any
	var classFiles []string
	for _, f := range files {
		for _, o := range f.Objects {
			have[key{objKind(o), objName(o)}] = true
			if objKind(o) == "ClusterClass" && objGroup(o) == "cluster.x-k8s.io" {
				classes = append(classes, o)
				classFiles = append(classFiles, f.File)
			}
		}
	}
	if len(classes) == 0 {
		return []Problem{{File: c.Path + "/", Message: "renders no ClusterClass (cluster.x-k8s.io)"}}
	}
	if len(classes) > 1 {
		out = append(out, Problem{File: c.Path + "/", Message: fmt.Sprintf("renders %d ClusterClasses; a stack release produces exactly one", len(classes))})
	}
	for i, cc := range classes {
		if name := objName(cc); want != "" && name != want {
			out = append(out, Problem{File: classFiles[i], Message: fmt.Sprintf("the ClusterClass is named %q, want the release name %q (name it {{ .Release.Name }}-{{ .Chart.Version }})", name, want)})
		}
		spec, _ := cc["spec"].(map[string]any)
		var refs []string
		collectRefs(spec, "spec", &refs, func(where string, ref map[string]any) {
			kind, _ := ref["kind"].(string)
			name, _ := ref["name"].(string)
			if kind == "" || name == "" {
				return
			}
			if !have[key{kind, name}] {
				out = append(out, Problem{File: classFiles[i], Message: fmt.Sprintf("%s refers to %s %q, which the cluster-class does not render", where, kind, name)})
			}
		})
	}
	return out
}

// collectRefs walks a ClusterClass spec and calls fn for every templateRef (v1beta2) or ref
// (v1beta1) object, skipping patches (whose selectors are no references).
func collectRefs(v any, where string, refs *[]string, fn func(string, map[string]any)) {
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if where == "spec" && k == "patches" {
				continue
			}
			child := t[k]
			if (k == "templateRef" || k == "ref") && isMap(child) {
				fn(where+"."+k, child.(map[string]any))
				continue
			}
			collectRefs(child, where+"."+k, refs, fn)
		}
	case []any:
		for i, child := range t {
			collectRefs(child, fmt.Sprintf("%s[%d]", where, i), refs, fn)
		}
	}
}

func isMap(v any) bool { _, ok := v.(map[string]any); return ok }
