package stack

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/provider"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// kustomizeMu serializes builds: kustomize has concurrent map access bugs
// (kubernetes-sigs/kustomize#3659), which is why Flux does the same.
var kustomizeMu sync.Mutex

// buildKustomize builds the kustomize directory rel of the stack the way Flux
// kustomize-controller v1.7.x does (fluxcd/pkg/kustomize v1.24 Generator + SecureBuild):
//
//   - if the directory has no kustomization file, one is generated listing every .yaml/.yml
//     file below it (each must decode as Kubernetes objects) and every subdirectory that has
//     its own kustomization file;
//   - krusty with LoadRestrictionsNone and builtin plugins only (DisabledPluginConfig);
//   - on a file system confined to a root: Flux confines to the artifact (repository) root,
//     this build to the stack directory, which it copies into memory so nothing is written.
//
// It returns the built objects.
func buildKustomize(stackDir, rel string) (objs []map[string]any, err error) {
	// The copy lives at a fixed root so that the names of the directories above the stack
	// do not matter (the in-memory file system rejects some characters).
	const root = "/stack"
	mem := filesys.MakeFsInMemory()
	err = filepath.WalkDir(stackDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(stackDir, p)
		if err != nil {
			return err
		}
		target := filepath.Join(root, rel)
		if d.IsDir() {
			return mem.MkdirAll(target)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return mem.WriteFile(target, data)
	})
	if err != nil {
		return nil, err
	}
	target := filepath.Join(root, filepath.FromSlash(rel))
	if err := generateKustomization(mem, target); err != nil {
		return nil, err
	}

	kustomizeMu.Lock()
	defer kustomizeMu.Unlock()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("kustomize build panicked: %v", r)
		}
	}()
	k := krusty.MakeKustomizer(&krusty.Options{
		LoadRestrictions: kustypes.LoadRestrictionsNone,
		PluginConfig:     kustypes.DisabledPluginConfig(),
	})
	rm, err := k.Run(mem, target)
	if err != nil {
		return nil, fmt.Errorf("kustomize build failed: %s", strings.ReplaceAll(err.Error(), root+"/", ""))
	}
	for _, res := range rm.Resources() {
		m, err := res.Map()
		if err != nil {
			return nil, err
		}
		objs = append(objs, m)
	}
	return objs, nil
}

// generateKustomization mirrors fluxcd/pkg/kustomize Generator.generateKustomization for a
// directory without a kustomization file.
func generateKustomization(fsys filesys.FileSystem, dir string) error {
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		if p := filepath.Join(dir, name); fsys.Exists(p) && !fsys.IsDir(p) {
			return nil
		}
	}
	rf := provider.NewDefaultDepProvider().GetResourceFactory()
	var resources []string
	err := fsys.Walk(dir, func(p string, info fs.FileInfo, err error) (walkErr error) {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		if info.IsDir() {
			for _, name := range konfig.RecognizedKustomizationFileNames() {
				if k := filepath.Join(p, name); fsys.Exists(k) && !fsys.IsDir(k) {
					resources = append(resources, strings.Replace(p, dir, ".", 1))
					return filepath.SkipDir
				}
			}
			return nil
		}
		if ext := filepath.Ext(p); ext != ".yaml" && ext != ".yml" {
			return nil
		}
		data, err := fsys.ReadFile(p)
		if err != nil {
			return err
		}
		defer func() {
			if r := recover(); r != nil {
				walkErr = fmt.Errorf("recovered from panic while parsing YAML file %s: %v", filepath.Base(p), r)
			}
		}()
		if _, err := rf.SliceFromBytes(data); err != nil {
			rel, _ := filepath.Rel(dir, p)
			return fmt.Errorf("Flux generates a kustomization.yaml from every YAML file here (there is none), and %s does not decode as Kubernetes objects: %v", rel, err)
		}
		resources = append(resources, strings.Replace(p, dir, ".", 1))
		return nil
	})
	if err != nil {
		return err
	}
	k := kustypes.Kustomization{TypeMeta: kustypes.TypeMeta{APIVersion: kustypes.KustomizationVersion, Kind: kustypes.KustomizationKind}}
	if len(resources) == 0 {
		k.Namespace = "_placeholder"
	} else {
		k.Resources = resources
	}
	data, err := yaml.Marshal(k)
	if err != nil {
		return err
	}
	return fsys.WriteFile(filepath.Join(dir, konfig.DefaultKustomizationFileName()), data)
}

// substitution references as Flux postBuild substitution (fluxcd/pkg/envsubst) sees them:
// ${name} possibly with an operator (${name:=default}); "$${name}" is an escape.
var substRE = regexp.MustCompile(`\$?\$\{([^}]*)\}`)
var varNameRE = regexp.MustCompile(`^[_a-zA-Z][_a-zA-Z0-9]*`)

// substituteDisabled is the annotation / label with which Flux skips an object.
const substituteDisabled = "kustomize.toolkit.fluxcd.io/substitute"

// substitutionVars returns, per object, the plain ${var} references (no default, not
// escaped) of objects for which Flux substitution is not disabled.
func substitutionVars(objs []map[string]any) []string {
	seen := map[string]bool{}
	for _, o := range objs {
		md, _ := o["metadata"].(map[string]any)
		ann, _ := md["annotations"].(map[string]any)
		lab, _ := md["labels"].(map[string]any)
		if ann[substituteDisabled] == "disabled" || lab[substituteDisabled] == "disabled" {
			continue
		}
		data, err := yaml.Marshal(o)
		if err != nil {
			continue
		}
		for _, m := range substRE.FindAllStringSubmatch(string(data), -1) {
			if strings.HasPrefix(m[0], "$$") {
				continue
			}
			name := varNameRE.FindString(m[1])
			if name == "" || name != m[1] {
				continue // an operator such as ${x:=default}, or no plain name
			}
			seen[name] = true
		}
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// substitute replaces ${name} references (plain ones) with vars, as a check of the result.
func substitute(objs []map[string]any, vars map[string]string) []map[string]any {
	out := make([]map[string]any, 0, len(objs))
	for _, o := range objs {
		data, err := yaml.Marshal(o)
		if err != nil {
			out = append(out, o)
			continue
		}
		text := substRE.ReplaceAllStringFunc(string(data), func(ref string) string {
			if strings.HasPrefix(ref, "$$") {
				return ref
			}
			name := strings.TrimSuffix(strings.TrimPrefix(ref, "${"), "}")
			if v, ok := vars[name]; ok {
				return v
			}
			return ref
		})
		m := map[string]any{}
		if err := yaml.Unmarshal([]byte(text), &m); err != nil {
			out = append(out, o)
			continue
		}
		out = append(out, m)
	}
	return out
}
