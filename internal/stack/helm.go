package stack

import (
	"archive/tar"
	"compress/gzip"
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
			return nil //nolint:nilerr // what cannot be read is reported when the chart is loaded to render it
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

// checkDependencies reports Chart.yaml (or requirements.yaml) dependencies that neither the
// repository holds nor Flux can fetch, and returns whether the chart has dependencies that Flux
// fetches: source-controller builds a chart from a GitRepository with the dependencies under
// charts/, file:// charts of the repository, and the missing ones downloaded from the http(s)://
// or oci:// repository Chart.yaml (or Chart.lock, which takes precedence) names. Lint fetches
// nothing, so such a chart cannot be rendered completely here.
func (lt *linter) checkDependencies(c Component) (fetched bool) {
	deps, depsFile := lt.readDependencies(c)
	if len(deps) == 0 {
		return false
	}
	vendored := lt.vendoredCharts(c.Path)
	lock := lt.readLock(depsFile)
	var remote []string
	for i, d := range deps {
		if lt.checkDependency(c, depsFile, i, d, vendored) {
			remote = append(remote, d.Name)
			lt.checkLocked(depsFile, d, lock)
		}
	}
	if len(remote) > 0 {
		lt.checkFluxSeesMissing(c, depsFile, len(deps), lock, vendored, remote)
	}
	return len(remote) > 0
}

// readDependencies returns the dependencies of the chart and the file they are in.
func (lt *linter) readDependencies(c Component) ([]chartDependency, string) {
	chartRel := path.Join(c.Path, ChartFile)
	data, err := os.ReadFile(lt.abs(chartRel))
	if err != nil {
		return nil, chartRel
	}
	var cf chartFile
	if decodeYAML(data, &cf, false) != nil {
		return nil, chartRel
	}
	deps, file, p := lt.chartDependencies(c.Path, cf)
	if p != nil {
		lt.ps.add(*p)
	}
	return deps, file
}

// dependenciesFile is requirements.yaml, Chart.lock or requirements.lock.
type dependenciesFile struct {
	Dependencies []chartDependency `yaml:"dependencies"`
}

func (lt *linter) readYAML(rel string, out any) bool {
	data, err := os.ReadFile(lt.abs(rel))
	if err != nil {
		lt.ps.addf(rel, "%v", err)
		return false
	}
	if err := decodeYAML(data, out, false); err != nil {
		lt.ps.addf(rel, "not valid YAML: %s", yamlErr(err))
		return false
	}
	return true
}

// lockFile is the lock file that goes with depsFile: Chart.lock or requirements.lock.
func lockFile(depsFile string) string {
	if path.Base(depsFile) == "requirements.yaml" {
		return path.Join(path.Dir(depsFile), "requirements.lock")
	}
	return path.Join(path.Dir(depsFile), "Chart.lock")
}

// readLock returns the lock file of the chart, or nil if there is none.
func (lt *linter) readLock(depsFile string) *lockedDependencies {
	rel := lockFile(depsFile)
	if !lt.exists(rel) {
		return nil
	}
	var f dependenciesFile
	if !lt.readYAML(rel, &f) {
		return nil
	}
	return &lockedDependencies{file: rel, deps: f.Dependencies}
}

type lockedDependencies struct {
	file string
	deps []chartDependency
}

// Repository kinds of a chart dependency.
const (
	repoNone   = "none"
	repoLocal  = "file"
	repoRemote = "remote"
	repoAlias  = "alias"
	repoOther  = "other"
)

// repositoryKind classifies a dependency's repository as source-controller does
// (internal/helm/repository.ValidateDepURL, chart.isLocalDep).
func repositoryKind(repo string) string {
	switch {
	case repo == "":
		return repoNone
	case strings.HasPrefix(repo, "file://"):
		return repoLocal
	case strings.HasPrefix(repo, "https://"), strings.HasPrefix(repo, "http://"), strings.HasPrefix(repo, "oci://"):
		return repoRemote
	case strings.HasPrefix(repo, "@"), strings.HasPrefix(repo, "alias:"):
		return repoAlias
	default:
		return repoOther
	}
}

// checkDependency checks one dependency and reports whether Flux fetches it: it is not
// vendored and names a chart repository.
func (lt *linter) checkDependency(c Component, depsFile string, i int, d chartDependency, vendored []vendoredChart) bool {
	if d.Name == "" {
		lt.ps.addf(depsFile, "dependencies[%d]: name is missing", i)
		return false
	}
	kind := repositoryKind(d.Repository)
	if kind == repoLocal {
		local := path.Join(c.Path, strings.TrimPrefix(d.Repository, "file://"))
		if !lt.exists(path.Join(local, ChartFile)) {
			lt.ps.addf(depsFile, "dependency %q: %s is no chart (no %s at %s)", d.Name, d.Repository, ChartFile, local)
		}
		return false
	}
	var constraint *semver.Constraints
	if d.Version != "" {
		var err error
		if constraint, err = semver.NewConstraint(d.Version); err != nil {
			lt.ps.addf(depsFile, "dependency %q: version %q is no SemVer constraint: %v", d.Name, d.Version, err)
			return false
		}
	}
	found, sameName := matchVendored(d.Name, constraint, vendored)
	from := ""
	if d.Repository != "" {
		from = " from " + d.Repository
	}
	charts := c.Path + "/charts/"
	switch {
	case found:
		return false
	case len(sameName) > 0:
		lt.ps.addf(depsFile, "dependency %q %s%s: the vendored chart does not match: %s", d.Name, d.Version, from, strings.Join(sameName, ", "))
		return false
	}
	switch kind {
	case repoRemote:
		return true
	case repoNone:
		lt.ps.addf(depsFile, "dependency %q %s has no repository and is not vendored under %s: vendor it (`helm dependency build %s`, commit the archive) or give the URL of its chart repository (https://, oci://) for Flux to fetch it from", d.Name, d.Version, charts, c.Path)
	case repoAlias:
		lt.ps.addf(depsFile, "dependency %q: repository %q names a repository of a local helm configuration (`helm repo add`), which Flux does not have: give the repository URL (https://..., oci://...) or vendor the chart under %s", d.Name, d.Repository, charts)
	default:
		lt.ps.addf(depsFile, "dependency %q: repository %q is no chart repository Flux fetches from (https://, http://, oci://, or file:// in the repository): give such a URL or vendor the chart under %s", d.Name, d.Repository, charts)
	}
	return false
}

// matchVendored tells whether a vendored chart satisfies the dependency, and lists the vendored
// charts of the dependency's name.
func matchVendored(name string, constraint *semver.Constraints, vendored []vendoredChart) (bool, []string) {
	var sameName []string
	found := false
	for _, v := range vendored {
		if v.name != name {
			continue
		}
		sameName = append(sameName, fmt.Sprintf("%s (version %s)", v.file, v.version))
		sv, err := semver.NewVersion(v.version)
		if constraint == nil || (err == nil && constraint.Check(sv)) {
			found = true
		}
	}
	return found, sameName
}

// checkLocked reports a dependency Flux fetches that the lock file, which Flux builds the
// missing dependencies from when there is one, does not pin as Chart.yaml asks.
func (lt *linter) checkLocked(depsFile string, d chartDependency, lock *lockedDependencies) {
	if lock == nil {
		return
	}
	update := fmt.Sprintf("run `helm dependency update %s` and commit %s", path.Dir(depsFile), path.Base(lock.file))
	for _, l := range lock.deps {
		if l.Name != d.Name {
			continue
		}
		ok := strings.TrimSuffix(l.Repository, "/") == strings.TrimSuffix(d.Repository, "/")
		if d.Version != "" {
			c, _ := semver.NewConstraint(d.Version) // checked by checkDependency
			v, err := semver.NewVersion(l.Version)
			ok = ok && err == nil && c.Check(v)
		}
		if !ok {
			lt.ps.addf(lock.file, "dependency %q is locked to %s from %s, but %s asks for %s from %s; Flux fetches the locked one: %s",
				d.Name, l.Version, l.Repository, path.Base(depsFile), d.Version, d.Repository, update)
		}
		return
	}
	lt.ps.addf(lock.file, "dependency %q is missing: Flux fetches the dependencies the lock file lists, so it would not fetch this one: %s", d.Name, update)
}

// checkFluxSeesMissing reports charts under charts/ that make source-controller believe no
// dependency is missing: it fetches nothing when the chart has exactly as many subcharts as its
// lock file (or Chart.yaml) lists dependencies (chart.collectMissing).
func (lt *linter) checkFluxSeesMissing(c Component, depsFile string, nDeps int, lock *lockedDependencies, vendored []vendoredChart, remote []string) {
	if lock != nil {
		nDeps = len(lock.deps)
	}
	if len(vendored) != nDeps {
		return
	}
	var files []string
	for _, v := range vendored {
		files = append(files, v.file)
	}
	lt.ps.addf(depsFile, "%s/charts/ holds %d charts (%s) for %d dependencies, so Flux assumes none is missing and does not fetch %s: remove the charts no dependency names",
		c.Path, len(vendored), strings.Join(files, ", "), nDeps, strings.Join(remote, ", "))
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
	defer func() { _ = f.Close() }()
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
	var p Problem
	if errors.As(err, &p) {
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
		collectRefs(spec, "spec", func(where string, ref map[string]any) {
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
func collectRefs(v any, where string, fn func(string, map[string]any)) {
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
			collectRefs(child, where+"."+k, fn)
		}
	case []any:
		for i, child := range t {
			collectRefs(child, fmt.Sprintf("%s[%d]", where, i), fn)
		}
	}
}

func isMap(v any) bool { _, ok := v.(map[string]any); return ok }
