package stack

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/clusterstack-io/clusterstack-operator/internal/testenv"
)

// Pinned provider versions whose CRDs the reference stack's cluster-class must satisfy.
var crdModules = []struct {
	module, version string
	dirs            []string
}{
	{"sigs.k8s.io/cluster-api", "v1.14.2", []string{"core/config/crd/bases", "bootstrap/kubeadm/config/crd/bases", "controlplane/kubeadm/config/crd/bases"}},
	{"sigs.k8s.io/cluster-api-provider-aws/v2", "v2.13.0", []string{"config/crd/bases"}},
	{"sigs.k8s.io/cluster-api/test", "v1.14.2", []string{"infrastructure/docker/config/crd/bases"}},
}

// crdStacks are the cluster-classes checked against the CRDs: the reference stack and the
// SCS-like fixtures. Kinds of groups in noCRD (CAPO's, whose module the proxy refuses; the
// plane installs stand-ins for them) are not checked.
var crdStacks = []struct {
	dir     string
	minObjs int
	noCRD   []string
}{
	{dir: "../../stacks/aws/base/1-36", minObjs: 6},
	{dir: scsShared, minObjs: 5},
	{dir: scsVendored, minObjs: 4, noCRD: []string{"openstack.k-orc.cloud/Image", "infrastructure.cluster.x-k8s.io/OpenStackMachineTemplate", "infrastructure.cluster.x-k8s.io/OpenStackClusterTemplate"}},
	{dir: scsFetched, minObjs: 4, noCRD: []string{"infrastructure.cluster.x-k8s.io/OpenStackMachineTemplate", "infrastructure.cluster.x-k8s.io/OpenStackClusterTemplate"}},
}

// TestReferenceClusterClassAgainstCRDs renders the aws reference cluster-class and the SCS-like
// fixtures' and validates every object against the OpenAPI schema of its CRD (CAPI v1.14.2,
// CAPA v2.13.0, CAPD from sigs.k8s.io/cluster-api/test v1.14.2, read from
// the module cache via `go mod download`), with defaulting first and unknown fields as errors,
// like `kubectl apply --validate=strict`. CEL rules (x-kubernetes-validations) are not
// evaluated here. Skipped when the modules cannot be downloaded (failed in CI: testenv.SkipOrFail).
func TestReferenceClusterClassAgainstCRDs(t *testing.T) {
	crds := map[string]*apiextensionsv1.CustomResourceDefinition{} // group/kind
	for _, m := range crdModules {
		cmd := exec.Command("go", "mod", "download", "-json", m.module+"@"+m.version)
		cmd.Dir = t.TempDir()
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
		out, err := cmd.Output()
		if err != nil {
			testenv.SkipOrFail(t, "go mod download %s@%s: %v", m.module, m.version, err)
		}
		var info struct{ Dir string }
		if err := json.Unmarshal(out, &info); err != nil || info.Dir == "" {
			testenv.SkipOrFail(t, "go mod download %s@%s: no directory in %s", m.module, m.version, out)
		}
		for _, d := range m.dirs {
			files, _ := filepath.Glob(filepath.Join(info.Dir, d, "*.yaml"))
			for _, f := range files {
				data, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				crd := &apiextensionsv1.CustomResourceDefinition{}
				if err := yaml.Unmarshal(data, crd); err != nil || crd.Spec.Names.Kind == "" {
					continue
				}
				crds[crd.Spec.Group+"/"+crd.Spec.Names.Kind] = crd
			}
		}
	}
	for _, st := range crdStacks {
		t.Run(st.dir, func(t *testing.T) { validateAgainstCRDs(t, st.dir, st.minObjs, st.noCRD, crds) })
	}
}

// validateAgainstCRDs renders dir's cluster-class and validates each object against its CRD.
func validateAgainstCRDs(t *testing.T, dir string, minObjs int, noCRD []string, crds map[string]*apiextensionsv1.CustomResourceDefinition) {
	objs, err := RenderClusterClass(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) < minObjs {
		t.Fatalf("rendered %d objects, want the ClusterClass and %d templates", len(objs), minObjs-1)
	}
	for _, obj := range objs {
		apiVersion, _ := obj["apiVersion"].(string)
		group, version, _ := strings.Cut(apiVersion, "/")
		id := objKind(obj) + " " + objName(obj)
		if slices.Contains(noCRD, group+"/"+objKind(obj)) {
			continue
		}
		crd := crds[group+"/"+objKind(obj)]
		if crd == nil {
			t.Errorf("%s: no CRD for %s/%s", id, group, objKind(obj))
			continue
		}
		var schema *apiextensionsv1.JSONSchemaProps
		for _, v := range crd.Spec.Versions {
			if v.Name == version && v.Served && v.Schema != nil {
				schema = v.Schema.OpenAPIV3Schema
			}
		}
		if schema == nil {
			t.Errorf("%s: %s is not a served version of %s", id, version, crd.Name)
			continue
		}
		internal := &apiextensionsinternal.JSONSchemaProps{}
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(schema, internal, nil); err != nil {
			t.Fatal(err)
		}
		structural, err := structuralschema.NewStructural(internal)
		if err != nil {
			t.Fatalf("%s: %v", crd.Name, err)
		}
		// Round-trip through JSON for the types the validators expect (int64, float64).
		data, _ := json.Marshal(obj)
		var u map[string]any
		if err := json.Unmarshal(data, &u); err != nil {
			t.Fatal(err)
		}
		defaulting.Default(u, structural)
		for _, p := range pruning.PruneWithOptions(u, structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}) {
			t.Errorf("%s: unknown field %s", id, p)
		}
		validator, _, err := validation.NewSchemaValidator(internal)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range validation.ValidateCustomResource(field.NewPath(""), u, validator) {
			t.Errorf("%s: %v", id, e)
		}
	}
}
