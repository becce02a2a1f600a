package stack

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// kustomizeDir writes a stack directory with one kustomize directory "k" holding files (name to
// content) and returns the stack directory.
func kustomizeDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, "k", filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// configMap is a ConfigMap manifest whose data.v is value (a YAML scalar as written), with the
// given lines under metadata (indented by two spaces more).
func configMap(value string, metadata ...string) string {
	md := ""
	for _, l := range metadata {
		md += "\n  " + l
	}
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm" + md + "\ndata:\n  v: " + value + "\n"
}

// TestSubstitutionForms pins, for every substitution form, what Flux's post-build substitution
// (fluxcd/pkg/kustomize SubstituteVariables over fluxcd/pkg/envsubst, which lint calls) makes of
// it, and checks that lint's unsetVariables reports a variable exactly when Flux's strict mode
// (kustomize-controller's StrictPostBuildSubstitutions feature gate) fails.
func TestSubstitutionForms(t *testing.T) {
	tests := []struct {
		name     string
		value    string   // data.v as written
		metadata []string // lines under metadata:
		vars     map[string]string
		want     any      // data.v after non-strict substitution
		errHas   string   // the non-strict substitution fails with this, when not empty
		unset    []string // what lint reports with the vars as the known ones
		strict   string   // what strict substitution fails with, when not empty
	}{
		{name: "${var} set", value: `"${a}"`, vars: map[string]string{"a": "x"}, want: "x"},
		{name: "${var} unset is empty, strict fails", value: `"<${a}>"`, vars: map[string]string{"other": "x"}, want: "<>",
			unset: []string{"a"}, strict: `variable not set (strict mode): "a"`},
		{name: "${var:=default} unset", value: `"${a:=dflt}"`, vars: map[string]string{"other": "x"}, want: "dflt"},
		{name: "${var:=default} set", value: `"${a:=dflt}"`, vars: map[string]string{"a": "x"}, want: "x"},
		{name: "${var:-default} unset", value: `"${a:-dflt}"`, vars: map[string]string{"other": "x"}, want: "dflt"},
		{name: "${var:-default} set but empty", value: `"${a:-dflt}"`, vars: map[string]string{"a": ""}, want: "dflt"},
		{name: "${var=default} set but empty takes the default too (unlike a shell)", value: `"${a=dflt}"`, vars: map[string]string{"a": ""}, want: "dflt"},
		{name: "${var-default} does not parse (unlike a shell)", value: `"${a-dflt}"`, vars: map[string]string{"other": "x"}, errHas: "missing closing brace"},
		{name: "default naming another unset variable", value: `"<${a:=${b}}>"`, vars: map[string]string{"other": "x"}, want: "<>",
			unset: []string{"b"}, strict: `variable not set (strict mode): "b"`},
		{name: "default naming another set variable", value: `"<${a:=${b}}>"`, vars: map[string]string{"b": "y"}, want: "<y>"},
		{name: "kustomize drops the quotes: an empty value becomes null", value: `"${a}"`, vars: map[string]string{"a": ""}, want: nil},
		{name: "kustomize drops the quotes: a number stays a number", value: `"${a}"`, vars: map[string]string{"a": "6443"}, want: 6443},
		{name: "$${var} is an escape", value: `"$${a}"`, vars: map[string]string{"a": "x"}, want: "${a}"},
		{name: "$${var} escape with the variable unset", value: `"$${a}"`, vars: map[string]string{"other": "x"}, want: "${a}"},
		{name: "$var without braces is text", value: `"$a"`, vars: map[string]string{"a": "x"}, want: "$a"},
		{name: "case function on an unset variable is empty even in strict mode", value: `"<${a^^}>"`, vars: map[string]string{"other": "x"}, want: "<>"},
		{name: "case function", value: `"${a^^}"`, vars: map[string]string{"a": "xy"}, want: "XY"},
		{name: "several unset variables", value: `"${b}-${a}-${b}"`, vars: map[string]string{"other": "x"}, want: "--",
			unset: []string{"a", "b"}, strict: `variable not set (strict mode): "b"`},
		{name: "newlines are removed from values", value: `"${a}"`, vars: map[string]string{"a": "x\ny"}, want: "xy"},
		{name: "disabled by annotation", value: `"${a}"`, metadata: []string{"annotations:", "  kustomize.toolkit.fluxcd.io/substitute: disabled"},
			vars: map[string]string{"other": "x"}, want: "${a}"},
		{name: "disabled by label", value: `"${a}"`, metadata: []string{"labels:", "  kustomize.toolkit.fluxcd.io/substitute: disabled"},
			vars: map[string]string{"other": "x"}, want: "${a}"},
		{name: "annotation with another value does not disable", value: `"${a}"`, metadata: []string{"annotations:", "  kustomize.toolkit.fluxcd.io/substitute: enabled"},
			vars: map[string]string{"a": "x"}, want: "x"},
		{name: "unclosed reference", value: `"${a"`, vars: map[string]string{"a": "x"}, errHas: "missing closing brace"},
		{name: "invalid variable name given", value: `"${a}"`, vars: map[string]string{"a-b": "x"}, errHas: "'a-b' var name is invalid", unset: []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := kustomizeDir(t, map[string]string{"cm.yaml": configMap(tt.value, tt.metadata...)})
			b, err := buildKustomize(dir, "k")
			if err != nil {
				t.Fatal(err)
			}
			before, _ := b.resources[0].AsYAML()
			objs, err := b.substitute(tt.vars, false)
			if tt.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) || !strings.Contains(err.Error(), "ConfigMap cm") {
					t.Fatalf("substitute: %v, want an error naming ConfigMap cm with %q", err, tt.errHas)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				data, _ := objs[0]["data"].(map[string]any)
				if got := data["v"]; got != tt.want {
					t.Errorf("data.v = %#v (%T), want %#v (%T)", got, got, tt.want, tt.want)
				}
			}
			if after, _ := b.resources[0].AsYAML(); string(after) != string(before) {
				t.Errorf("substitute changed the build: %s", after)
			}

			var known []string
			for k := range tt.vars {
				known = append(known, k)
			}
			unset, uerr := b.unsetVariables(known)
			if tt.errHas != "" && !strings.Contains(tt.errHas, "var name") {
				if uerr == nil || !strings.Contains(uerr.Error(), tt.errHas) {
					t.Errorf("unsetVariables: %v, want an error with %q", uerr, tt.errHas)
				}
				return
			}
			if uerr != nil {
				t.Fatalf("unsetVariables: %v", uerr)
			}
			if !slices.Equal(unset, tt.unset) {
				t.Errorf("unsetVariables = %q, want %q", unset, tt.unset)
			}
			if tt.errHas != "" {
				return
			}
			_, serr := b.substitute(tt.vars, true)
			switch {
			case tt.strict == "" && serr != nil:
				t.Errorf("strict substitution fails: %v", serr)
			case tt.strict != "" && (serr == nil || !strings.Contains(serr.Error(), tt.strict)):
				t.Errorf("strict substitution: %v, want an error with %q", serr, tt.strict)
			}
			if (len(unset) > 0) != (serr != nil) {
				t.Errorf("lint reports %q but strict substitution says %v", unset, serr)
			}
		})
	}
}

// TestBuildKustomizeAsFlux: the build goes through Flux's Generator and SecureBuild on a copy,
// so the stack is never written to, a directory without kustomization.yaml gets one generated
// (subdirectories with their own kustomization.yaml included whole), resources outside the
// stack are refused, and messages name files relative to the stack.
func TestBuildKustomizeAsFlux(t *testing.T) {
	cm := func(name string) string { return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n" }
	tests := []struct {
		name   string
		files  map[string]string
		want   []string // names of the built objects, sorted
		errHas []string
	}{
		{name: "generated kustomization.yaml", files: map[string]string{
			"a.yaml": cm("a"), "sub/b.yml": cm("b"), "notes.md": "text",
			"base/kustomization.yaml": "resources: [c.yaml]\n", "base/c.yaml": cm("c"), "base/unlisted.yaml": cm("unlisted"),
		}, want: []string{"a", "b", "c"}},
		{name: "existing kustomization.yaml", files: map[string]string{
			"kustomization.yaml": "resources: [a.yaml]\nnamePrefix: p-\n", "a.yaml": cm("a"), "b.yaml": cm("b"),
		}, want: []string{"p-a"}},
		{name: "empty directory builds to nothing", files: map[string]string{"README.md": "x"}, want: nil},
		{name: "a YAML file that is no Kubernetes object, without kustomization.yaml", files: map[string]string{
			"a.yaml": cm("a"), "values.yaml": "replicas: 1\n",
		}, errHas: []string{"the directory has no kustomization.yaml, so Flux generates one", "failed to decode Kubernetes YAML from k/values.yaml"}},
		{name: "missing resource", files: map[string]string{"kustomization.yaml": "resources: [a.yaml, gone.yaml]\n", "a.yaml": cm("a")},
			errHas: []string{"kustomize build failed", "gone.yaml"}},
		{name: "resource outside the stack", files: map[string]string{"kustomization.yaml": "resources: [../../outside.yaml]\n"},
			errHas: []string{"kustomize build failed", "accumulating resources from '../../outside.yaml'", "is not in or below 'the stack directory'"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := kustomizeDir(t, tt.files)
			if err := os.WriteFile(filepath.Join(filepath.Dir(dir), "outside.yaml"), []byte(cm("outside")), 0o644); err != nil {
				t.Fatal(err)
			}
			b, err := buildKustomize(dir, "k")
			if len(tt.errHas) > 0 {
				if err == nil {
					t.Fatalf("built %d objects, want an error", len(b.objects))
				}
				for _, s := range tt.errHas {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not contain %q", err, s)
					}
				}
				if strings.Contains(err.Error(), os.TempDir()) || strings.Contains(err.Error(), "<nil>") {
					t.Errorf("error %q names the temporary copy or a nil error", err)
				}
				t.Logf("error: %v", err)
			} else {
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, o := range b.objects {
					names = append(names, objName(o))
				}
				slices.Sort(names)
				if !slices.Equal(names, tt.want) {
					t.Errorf("built %q, want %q", names, tt.want)
				}
			}
			// The stack directory is left as it was.
			var got []string
			_ = filepath.WalkDir(filepath.Join(dir, "k"), func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					rel, _ := filepath.Rel(filepath.Join(dir, "k"), p)
					got = append(got, filepath.ToSlash(rel))
				}
				return nil
			})
			var want []string
			for name := range tt.files {
				want = append(want, name)
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("stack files after the build: %q, want %q", got, want)
			}
			for name, content := range tt.files {
				if data, _ := os.ReadFile(filepath.Join(dir, "k", name)); string(data) != content {
					t.Errorf("%s changed by the build", name)
				}
			}
		})
	}
}
