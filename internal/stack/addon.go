package stack

import (
	"fmt"
	"path/filepath"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"sigs.k8s.io/yaml"
)

// AddonRender is how one addon component is rendered for one Cluster, as the operator's Flux
// objects have Flux deliver it (fluxgen.AddonObjects).
type AddonRender struct {
	// ReleaseName and Namespace are the Helm release's name and target namespace
	// (fluxgen.AddonTarget): `helm template` runs with them, and namespaced objects without a
	// namespace land in Namespace. Helm only.
	ReleaseName, Namespace string
	// KubernetesVersion is the version Helm's .Capabilities report ("v1.36.3"); "" for Helm's
	// default.
	KubernetesVersion string
	// Values is the cluster's values ConfigMap data (render.Render): a Helm component reads the
	// YAML under its render.HelmValuesKey (HelmRelease valuesFrom); a kustomize component gets
	// every key as a post-build substitution variable (Kustomization postBuild.substituteFrom).
	Values map[string]string
	// ValuesKey is the component's Helm values key in Values (render.HelmValuesKey).
	ValuesKey string
}

// AddonObject is one object Flux applies into the workload cluster for a component.
type AddonObject struct {
	// Object is the object as rendered.
	Object map[string]any
	// HelmCRD marks a CustomResourceDefinition from the chart's crds/ directory: Helm installs
	// those on the first install only, and Flux's helm-controller skips them on upgrades
	// unless the HelmRelease's spec.upgrade.crds says otherwise (the operator does not).
	HelmCRD bool
}

// AddonRenderer renders a stack's addon components for Clusters (Render). It builds each
// kustomize directory once, whatever the number of Clusters; it is not safe for concurrent use.
type AddonRenderer struct {
	s      *Stack
	builds map[string]*kustomizeBuild
	errs   map[string]error
}

// NewAddonRenderer returns a renderer of the stack's addon components.
func (s *Stack) NewAddonRenderer() *AddonRenderer {
	return &AddonRenderer{s: s, builds: map[string]*kustomizeBuild{}, errs: map[string]error{}}
}

// Render renders addon component c of the stack as Flux delivers it into one workload
// cluster: a Helm chart as `helm template` (Helm's Go SDK, the chart's dependencies from
// charts/, lookup returning nothing, Helm test hooks left out since Flux does not run them) with
// the release name, namespace and the cluster's values; a kustomize directory built with Flux's
// own packages, as kustomize-controller builds it, and its post-build substitution run with the
// values ConfigMap's data. Labels Flux itself adds to every object (helm.toolkit.fluxcd.io/*,
// kustomize.toolkit.fluxcd.io/*) are not added: they are the same for every release.
func (r *AddonRenderer) Render(c Component, opts AddonRender) ([]AddonObject, error) {
	switch c.Kind {
	case KindHelm:
		return r.s.renderHelmAddon(c, opts)
	case KindKustomize:
		b, err := r.build(c)
		if err != nil {
			return nil, err
		}
		objs, err := b.substitute(opts.Values, false)
		if err != nil {
			return nil, err
		}
		out := make([]AddonObject, 0, len(objs))
		for _, o := range objs {
			out = append(out, AddonObject{Object: o})
		}
		return out, nil
	}
	return nil, fmt.Errorf("component %s: unknown kind %q", c.Name, c.Kind)
}

// build builds a kustomize component once.
func (r *AddonRenderer) build(c Component) (*kustomizeBuild, error) {
	if b, ok := r.builds[c.Path]; ok {
		return b, nil
	}
	if err, ok := r.errs[c.Path]; ok {
		return nil, err
	}
	b, err := buildKustomize(r.s.Dir, c.Path)
	if err != nil {
		r.errs[c.Path] = err
		return nil, err
	}
	r.builds[c.Path] = b
	return b, nil
}

func (s *Stack) renderHelmAddon(c Component, opts AddonRender) ([]AddonObject, error) {
	ch, err := loader.Load(filepath.Join(s.Dir, filepath.FromSlash(c.Path)))
	if err != nil {
		return nil, fmt.Errorf("helm cannot load the chart: %w", err)
	}
	values := map[string]any{}
	if raw := opts.Values[opts.ValuesKey]; opts.ValuesKey != "" && strings.TrimSpace(raw) != "" {
		if err := yaml.Unmarshal([]byte(raw), &values); err != nil {
			return nil, fmt.Errorf("values %s are not YAML: %w", opts.ValuesKey, err)
		}
	}
	files, err := renderChart(ch, c, helmRender{releaseName: opts.ReleaseName, namespace: opts.Namespace, kubeVersion: opts.KubernetesVersion, values: values})
	if err != nil {
		return nil, problemFromRender(err, c)
	}
	var out []AddonObject
	for _, crd := range ch.CRDObjects() {
		objs, err := splitManifests(string(crd.File.Data))
		if err != nil {
			return nil, Problem{File: c.Path + "/" + crd.Filename, Message: "not valid YAML: " + err.Error()}
		}
		for _, o := range objs {
			out = append(out, AddonObject{Object: o, HelmCRD: true})
		}
	}
	for _, f := range files {
		for _, o := range f.Objects {
			if helmTestHook(o) {
				continue
			}
			out = append(out, AddonObject{Object: o})
		}
	}
	return out, nil
}

// helmTestHook reports whether o is a Helm test (annotation helm.sh/hook: test or
// test-success), which Flux runs only when the HelmRelease enables tests.
func helmTestHook(o map[string]any) bool {
	md, _ := o["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	hook, _ := ann["helm.sh/hook"].(string)
	for _, h := range strings.Split(hook, ",") {
		if h = strings.TrimSpace(h); h == "test" || h == "test-success" {
			return true
		}
	}
	return false
}
