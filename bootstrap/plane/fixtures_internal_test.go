package plane

import (
	"encoding/json"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"testing"

	"github.com/Masterminds/semver/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/clusterstack-io/clusterstack-operator/internal/manifests"
)

const versionLabel = "app.kubernetes.io/version"

// variableRef matches a clusterctl-style variable as Flux substitutes it: ${NAME} or
// ${NAME:=default}.
var variableRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:=[^}]*)?\}`)

// The catalog and the embedded directories agree: every listed version has a directory and
// every directory is listed.
func TestFixtureCatalogMatchesDirectories(t *testing.T) {
	var listed, found []string
	for _, op := range fixtureOperators {
		for _, v := range op.Versions {
			listed = append(listed, path.Join(op.Name, v.Version))
		}
	}
	ops, err := fs.ReadDir(fixtureFS, fixturesDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		versions, err := fs.ReadDir(fixtureFS, path.Join(fixturesDir, op.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range versions {
			found = append(found, path.Join(op.Name(), v.Name()))
		}
	}
	sort.Strings(listed)
	sort.Strings(found)
	if !reflect.DeepEqual(listed, found) {
		t.Fatalf("catalog lists %v, %s/ holds %v", listed, fixturesDir, found)
	}
	if len(fixtureOperators) < 2 {
		t.Fatalf("%d fixture operators, want at least 2", len(fixtureOperators))
	}
}

func TestFixtureVersionsAreInSemverOrder(t *testing.T) {
	for _, op := range fixtureOperators {
		if len(op.Versions) < 2 {
			t.Errorf("%s: %d versions, want at least 2", op.Name, len(op.Versions))
		}
		var prev *semver.Version
		for _, v := range op.Versions {
			sv, err := semver.StrictNewVersion(v.Version[1:])
			if err != nil || v.Version[0] != 'v' {
				t.Errorf("%s: version %q is not v<semver>: %v", op.Name, v.Version, err)
				continue
			}
			if prev != nil && !sv.GreaterThan(prev) {
				t.Errorf("%s: version %s follows %s", op.Name, v.Version, prev.Original())
			}
			prev = sv
		}
	}
}

// Each version builds with kustomize into the objects the catalog describes, labelled with
// the version, and a broken version is broken the way NeverAvailable says.
func TestFixtureManifests(t *testing.T) {
	for _, op := range fixtureOperators {
		crdSpecs := map[string]bool{}
		for _, v := range op.Versions {
			t.Run(op.Name+"/"+v.Version, func(t *testing.T) {
				src, err := fixtureVersionFS(op.Name, v.Version)
				if err != nil {
					t.Fatal(err)
				}
				dir := filepath.Join(t.TempDir(), "config")
				if err := os.CopyFS(dir, src); err != nil {
					t.Fatal(err)
				}
				objs, err := manifests.Build(dir)
				if err != nil {
					t.Fatal(err)
				}
				byKind := map[string]*unstructured.Unstructured{}
				for _, o := range objs {
					if _, dup := byKind[o.GetKind()]; dup {
						t.Fatalf("two objects of kind %s", o.GetKind())
					}
					byKind[o.GetKind()] = o
					if got := o.GetLabels()[versionLabel]; got != v.Version {
						t.Errorf("%s %s: label %s=%q, want %q", o.GetKind(), o.GetName(), versionLabel, got, v.Version)
					}
				}
				want := map[string][2]string{ // kind: namespace, name
					"Namespace":                {"", op.Namespace},
					"CustomResourceDefinition": {"", op.CRD},
					"ServiceAccount":           {op.Namespace, op.Name},
					"Deployment":               {op.Namespace, op.Name},
				}
				if len(byKind) != len(want) {
					t.Errorf("kinds %v, want %v", slices.Sorted(maps.Keys(byKind)), slices.Sorted(maps.Keys(want)))
				}
				for kind, key := range want {
					o := byKind[kind]
					if o == nil || o.GetNamespace() != key[0] || o.GetName() != key[1] {
						t.Errorf("no %s %s/%s", kind, key[0], key[1])
					}
				}
				if crd := byKind["CustomResourceDefinition"]; crd != nil {
					spec, _, _ := unstructured.NestedFieldNoCopy(crd.Object, "spec")
					b, err := json.Marshal(spec)
					if err != nil {
						t.Fatal(err)
					}
					crdSpecs[string(b)] = true
				}
				d := byKind["Deployment"]
				if d == nil {
					return
				}
				podLabels, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "metadata", "labels")
				if podLabels[versionLabel] != v.Version {
					t.Errorf("Pod template label %s=%q, want %q", versionLabel, podLabels[versionLabel], v.Version)
				}
				selector, _, _ := unstructured.NestedStringMap(d.Object, "spec", "selector", "matchLabels")
				if _, ok := selector[versionLabel]; ok {
					t.Error("the Deployment's selector (immutable) names the version: upgrades would fail")
				}
				containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
				if len(containers) != 1 || containers[0].(map[string]any)["image"] != "registry.example.com/"+op.Name+":"+v.Version {
					t.Errorf("containers %v, want one with image registry.example.com/%s:%s", containers, op.Name, v.Version)
				}
				nodeSelector, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "spec", "nodeSelector")
				if v.NeverAvailable != (len(nodeSelector) > 0) {
					t.Errorf("NeverAvailable %t, but the Pods' nodeSelector is %v", v.NeverAvailable, nodeSelector)
				}
			})
		}
		if len(crdSpecs) < 2 {
			t.Errorf("%s: the CRD %s is the same in every version", op.Name, op.CRD)
		}
	}
}

// Variables lists exactly the ${VAR}s of an operator's manifests, each with a default.
func TestFixtureVariables(t *testing.T) {
	for _, op := range fixtureOperators {
		vars := map[string]bool{}
		err := fs.WalkDir(fixtureFS, path.Join(fixturesDir, op.Name), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := fs.ReadFile(fixtureFS, p)
			if err != nil {
				return err
			}
			for _, m := range variableRef.FindAllStringSubmatch(string(b), -1) {
				vars[m[1]] = true
				if m[2] == "" {
					t.Errorf("%s: ${%s} has no default (${%s:=value})", p, m[1], m[1])
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := slices.Sorted(maps.Keys(vars)); !reflect.DeepEqual(got, slices.Sorted(slices.Values(op.Variables))) {
			t.Errorf("%s: manifests use %v, catalog lists %v", op.Name, got, op.Variables)
		}
	}
}

// FixtureOperators hands out copies: a caller changing them changes nothing of the plane's.
func TestFixtureOperatorsAreCopies(t *testing.T) {
	p := &Plane{fixtures: fixtureCatalog()}
	p.fixtures[0].URL = "http://git/operators/x.git"
	got := p.FixtureOperators()
	got[0].Versions[0].Version = "changed"
	got[0].Variables[0] = "CHANGED"
	if fixtureOperators[0].Versions[0].Version == "changed" || fixtureOperators[0].Variables[0] == "CHANGED" ||
		p.FixtureOperators()[0].Versions[0].Version == "changed" {
		t.Fatal("FixtureOperators returned the catalog itself")
	}
	if got[0].URL != "http://git/operators/x.git" || got[0].Repository != "operators/"+got[0].Name {
		t.Fatalf("FixtureOperators()[0] = %+v", got[0])
	}
	if u, err := p.FixtureOperatorURL(got[0].Name); err != nil || u != got[0].URL {
		t.Fatalf("FixtureOperatorURL = %q, %v", u, err)
	}
	if _, err := p.FixtureOperatorURL("no-such-operator"); err == nil {
		t.Fatal("FixtureOperatorURL of an unknown operator succeeded")
	}
	if _, err := (&Plane{}).FixtureOperatorURL(got[0].Name); err == nil {
		t.Fatal("FixtureOperatorURL without published fixtures succeeded")
	}
}
