// Package install holds what the tests of the operator's install paths share: rendering the
// Helm chart (config/helm/clusterstack-operator) as `helm install` would, linting it, and the
// operator's version (VERSION in the Makefile). Its tests check the chart against
// config/default, the Flux install objects (config/flux) and the Dockerfile; the end-to-end
// suite (test/e2e, "Installing the operator") applies the rendered chart and the Flux objects to
// a real API server.
package install

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

const (
	// ChartDir is the chart's directory, relative to the repository root.
	ChartDir = "config/helm/clusterstack-operator"
	// FluxDir holds the Flux objects that install the operator (config/flux/helm: a
	// GitRepository and a HelmRelease of ChartDir; config/flux/kustomize: the same GitRepository
	// and a Kustomization of config/default), relative to the repository root.
	FluxDir = "config/flux"
	// DefaultReleaseName and DefaultNamespace are the release docs/installing.md installs; with
	// them the chart names its objects as config/default does where it can.
	DefaultReleaseName = "clusterstack-operator"
	DefaultNamespace   = "clusterstack-system"
)

// Rendered is a chart rendered for one release: what `helm install` would send to the API
// server.
type Rendered struct {
	// CRDs are the chart's crds/ (Helm creates them before the templates, never upgrades or
	// deletes them itself).
	CRDs []*unstructured.Unstructured
	// Objects are the rendered templates, in Helm's install order.
	Objects []*unstructured.Unstructured
	// Notes is the rendered NOTES.txt.
	Notes string
}

// Find returns the first object of the given kind and name ("" for any name), or nil.
func (r *Rendered) Find(kind, name string) *unstructured.Unstructured {
	for _, o := range r.Objects {
		if o.GetKind() == kind && (name == "" || o.GetName() == name) {
			return o
		}
	}
	return nil
}

// All returns the objects of the given kind.
func (r *Rendered) All(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range r.Objects {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// Render renders the chart in chartDir for release name in namespace with values (merged over
// values.yaml and validated against values.schema.json, as Helm does).
func Render(chartDir, name, namespace string, values map[string]any) (*Rendered, error) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		return nil, fmt.Errorf("load chart %s: %w", chartDir, err)
	}
	vals, err := chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{
		Name: name, Namespace: namespace, Revision: 1, IsInstall: true,
	}, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, fmt.Errorf("values of chart %s: %w", chartDir, err)
	}
	files, err := engine.Render(ch, vals)
	if err != nil {
		return nil, fmt.Errorf("render chart %s: %w", chartDir, err)
	}
	out := &Rendered{}
	notes := ch.Name() + "/templates/NOTES.txt"
	out.Notes = files[notes]
	delete(files, notes)
	hooks, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", chartDir, err)
	}
	if len(hooks) > 0 {
		return nil, fmt.Errorf("chart %s: %d hooks; the chart is meant to have none", chartDir, len(hooks))
	}
	for _, m := range manifests {
		objs, err := Decode([]byte(m.Content))
		if err != nil {
			return nil, fmt.Errorf("chart %s: %s: %w", chartDir, m.Name, err)
		}
		out.Objects = append(out.Objects, objs...)
	}
	for _, crd := range ch.CRDObjects() {
		objs, err := Decode(crd.File.Data)
		if err != nil {
			return nil, fmt.Errorf("chart %s: %s: %w", chartDir, crd.Filename, err)
		}
		out.CRDs = append(out.CRDs, objs...)
	}
	return out, nil
}

// Decode splits a multi-document YAML stream into objects, skipping empty documents. Numbers
// are int64 or float64, as in objects read from the API server.
func Decode(b []byte) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, err
		}
		if s := string(bytes.TrimSpace(j)); s == "null" || s == "{}" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(j); err != nil {
			return nil, err
		}
		out = append(out, u)
	}
}

// Lint runs Helm's linter (what `helm lint` runs: the chart file, values against the schema,
// and the templates rendered in lint mode) on the chart in chartDir with values, and returns
// its messages of at least severity min (support.WarningSev fails as `helm lint --strict` does).
func Lint(chartDir, namespace string, values map[string]any, min int) []support.Message {
	l := lint.All(chartDir, values, namespace, false)
	var out []support.Message
	for _, m := range l.Messages {
		if m.Severity >= min {
			out = append(out, m)
		}
	}
	return out
}

// versionRE matches the Makefile's VERSION assignment.
var versionRE = regexp.MustCompile(`(?m)^VERSION\s*:?=\s*(\S+)\s*$`)

// Version returns the operator's version: VERSION in the Makefile at repoRoot.
func Version(repoRoot string) (string, error) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	if err != nil {
		return "", fmt.Errorf("read the operator's version: %w", err)
	}
	m := versionRE.FindSubmatch(b)
	if m == nil {
		return "", errors.New("the Makefile sets no VERSION")
	}
	return string(m[1]), nil
}
