package stack

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/fluxcd/pkg/envsubst"
	fluxkustomize "github.com/fluxcd/pkg/kustomize"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/resource"
)

// kustomizeBuild is a kustomize directory of a stack built as Flux builds it.
type kustomizeBuild struct {
	// resources are the built resources, as Flux's post-build substitution receives them.
	resources []*resource.Resource
	// objects are the same resources as maps.
	objects []map[string]any
}

// buildKustomize builds the kustomize directory rel of the stack with Flux's own packages, the
// way kustomize-controller v1.7.3 does (fluxcd/pkg/kustomize v1.24.0, kustomize api v0.20.1):
//
//   - Generator.WriteFile: when the directory has no kustomization file, one is generated
//     listing every .yaml/.yml file below it (each must decode as Kubernetes objects) and every
//     subdirectory that has its own kustomization file; an existing one is rewritten through
//     kustomize's Kustomization type, as Flux does;
//   - SecureBuild: krusty with LoadRestrictionsNone and builtin plugins only, on a file system
//     confined to a root, without remote bases (lint works offline).
//
// Flux confines the build to the artifact (repository) root; this build to the stack
// directory, which it copies to a temporary directory so that the stack is never written to.
// The Kustomization passed to the Generator is empty: the operator sets no patches, images,
// components or name prefixes, and the target namespace of a cluster-class Kustomization (the
// release's namespace) is not known here.
func buildKustomize(stackDir, rel string) (*kustomizeBuild, error) {
	tmp, err := os.MkdirTemp("", "stack-kustomize-")
	if err != nil {
		return nil, fmt.Errorf("kustomize build: %w", err)
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	// The secure file system compares cleaned absolute paths: resolve symlinks in the
	// temporary directory's own path (as kustomize-controller's MkdirTempAbs does).
	if tmp, err = filepath.EvalSymlinks(tmp); err != nil {
		return nil, fmt.Errorf("kustomize build: %w", err)
	}
	root := filepath.Join(tmp, "stack")
	if err := copyDir(stackDir, root); err != nil {
		return nil, fmt.Errorf("kustomize build: copy the stack: %w", err)
	}
	// Paths in Flux's messages are those of the copy: show them relative to the stack.
	sep := string(filepath.Separator)
	paths := strings.NewReplacer(root+sep, "", root, "the stack directory", tmp+sep, ".."+sep)
	relative := func(err error) string {
		// The Generator appends the error of its clean-up, nil or not.
		return paths.Replace(strings.TrimSuffix(err.Error(), " <nil>"))
	}
	dirPath := filepath.Join(root, filepath.FromSlash(rel))
	generated := !hasKustomizationFile(dirPath)
	ks := unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1",
		"kind":       "Kustomization",
		"spec":       map[string]any{},
	}}
	if _, err := fluxkustomize.NewGenerator(root, ks).WriteFile(dirPath); err != nil {
		if generated {
			return nil, fmt.Errorf("the directory has no kustomization.yaml, so Flux generates one from every YAML file below it, and that fails: %s", relative(err))
		}
		return nil, fmt.Errorf("kustomize build failed: %s", relative(err))
	}
	m, err := fluxkustomize.SecureBuild(root, dirPath, false)
	if err != nil {
		return nil, fmt.Errorf("kustomize build failed: %s", relative(err))
	}
	b := &kustomizeBuild{resources: m.Resources()}
	for _, res := range b.resources {
		o, err := res.Map()
		if err != nil {
			return nil, fmt.Errorf("kustomize build: %s %s: %w", res.GetKind(), res.GetName(), err)
		}
		b.objects = append(b.objects, o)
	}
	return b, nil
}

// hasKustomizationFile reports whether dir has one of kustomize's kustomization files.
func hasKustomizationFile(dir string) bool {
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && !fi.IsDir() {
			return true
		}
	}
	return false
}

// copyDir copies the files and directories below src into dst (which exists). Symbolic links to
// files are copied as the files they point to.
func copyDir(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}

// postBuild returns a Flux Kustomization whose spec.postBuild.substitute holds vars: what Flux's
// substitution reads in dry-run mode (no ConfigMaps or Secrets are read).
func postBuild(vars map[string]string) unstructured.Unstructured {
	sub := map[string]any{}
	for k, v := range vars {
		sub[k] = v
	}
	return unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1",
		"kind":       "Kustomization",
		"spec":       map[string]any{"postBuild": map[string]any{"substitute": sub}},
	}}
}

// substituteOptions are the options of Flux's post-build substitution lint uses: dry-run (the
// variables are given, not read from the cluster) and kustomize-controller's default of
// non-strict substitution (its StrictPostBuildSubstitutions feature gate is off by default).
func substituteOptions(strict bool) []fluxkustomize.SubstituteOption {
	return []fluxkustomize.SubstituteOption{fluxkustomize.SubstituteWithDryRun(true), fluxkustomize.SubstituteWithStrict(strict)}
}

// substitute runs Flux's post-build substitution (fluxcd/pkg/kustomize SubstituteVariables, as
// kustomize-controller v1.7.3 calls it for a Kustomization with spec.postBuild) with vars over
// the built resources and returns the result. An object labeled or annotated
// kustomize.toolkit.fluxcd.io/substitute: disabled is left as it is; ${var} without a value
// becomes "" (strict false) or fails (strict true); $${var} becomes ${var}. The build is not
// changed.
func (b *kustomizeBuild) substitute(vars map[string]string, strict bool) ([]map[string]any, error) {
	ks := postBuild(vars)
	out := make([]map[string]any, 0, len(b.resources))
	for _, orig := range b.resources {
		res, err := fluxkustomize.SubstituteVariables(context.Background(), nil, ks, orig.DeepCopy(), substituteOptions(strict)...)
		if err != nil {
			return nil, fmt.Errorf("post-build substitution fails for %s %s: %w", orig.GetKind(), orig.GetName(), err)
		}
		if res == nil { // substitution disabled for this object
			res = orig
		}
		m, err := res.Map()
		if err != nil {
			return nil, fmt.Errorf("post-build substitution: %s %s: %w", orig.GetKind(), orig.GetName(), err)
		}
		out = append(out, m)
	}
	return out, nil
}

// unsetVariables returns, sorted, the variables that the built resources reference without a
// default (${var}, also inside another reference's default) and that are not in known: Flux
// substitutes an empty string for each of them, or fails with kustomize-controller's
// StrictPostBuildSubstitutions feature gate. References with a default (${var:=default},
// ${var:-default}, ...), escaped ones ($${var}) and objects for which Flux's substitution is
// disabled do not count. The references are found by Flux's own parser and evaluator
// (fluxcd/pkg/envsubst) in strict mode. It returns an error when Flux's substitution fails on
// an object regardless of the variables (a reference that does not parse).
func (b *kustomizeBuild) unsetVariables(known []string) ([]string, error) {
	knownSet := map[string]bool{}
	for _, k := range known {
		knownSet[k] = true
	}
	unset := map[string]bool{}
	noVars := postBuild(nil)
	for _, orig := range b.resources {
		// Flux's own decision whether the object is substituted at all.
		if res, err := fluxkustomize.SubstituteVariables(context.Background(), nil, noVars, orig.DeepCopy(), substituteOptions(false)...); err != nil {
			return nil, fmt.Errorf("post-build substitution fails for %s %s: %w", orig.GetKind(), orig.GetName(), err)
		} else if res == nil {
			continue
		}
		data, err := orig.AsYAML()
		if err != nil {
			return nil, fmt.Errorf("post-build substitution: %s %s: %w", orig.GetKind(), orig.GetName(), err)
		}
		t, err := envsubst.Parse(string(data))
		if err != nil {
			return nil, fmt.Errorf("post-build substitution fails for %s %s: variable substitution failed: %w (write ${name}, ${name:=default} or ${name:-default}, and $${name} for a literal ${name})", orig.GetKind(), orig.GetName(), err)
		}
		// In strict mode evaluation stops at the first reference without a default whose
		// variable is unset, right after looking it up: note it, treat it as set, go again.
		for {
			last := ""
			_, err := t.Execute(func(name string) (string, bool) {
				if knownSet[name] || unset[name] {
					return "", true
				}
				last = name
				return "", false
			})
			if err == nil {
				break
			}
			if last == "" || unset[last] {
				return nil, fmt.Errorf("post-build substitution fails for %s %s: %w", orig.GetKind(), orig.GetName(), err)
			}
			unset[last] = true
		}
	}
	out := make([]string, 0, len(unset))
	for k := range unset {
		out = append(out, k)
	}
	sort.Strings(out)
	return out, nil
}
