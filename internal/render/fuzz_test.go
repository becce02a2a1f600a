package render

import (
	"errors"
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"
)

// FuzzRender renders arbitrary templates as a Helm or a kustomize component, next to a fixed
// component. Whatever the template, Render must not panic; it fails with a *Error naming the
// component and file, or returns valid Flux variable names, Helm values that parse as a YAML map,
// the same data when rendered again, and leaves its input alone.
//
//	go test ./internal/render -run='^$' -fuzz=FuzzRender -fuzztime=60s
func FuzzRender(f *testing.F) {
	seeds := []string{
		"",
		"a: b\n",
		scsCilium,
		referenceCNI,
		scsOldStyle,
		"infra:\n  region: \"{{ .InfraCluster.spec.externalNetwork.id }}\"\n",
		"{{ range $k, $v := .Variables }}{{ $k }}: {{ $v | toJson }}\n{{ end }}",
		"{{- with .Cluster.spec.clusterNetwork.services }}\nsvc: {{ index .cidrBlocks 0 }}\n{{- end }}\n",
		"oidc:\n  {{- .Variables.oidc_config | toYaml | nindent 2 }}\n",
		"x: {{ required \"need it\" .Variables.nope }}\n",
		"labels: {{ keys .Cluster.metadata.labels | sortAlpha | join \",\" | quote }}\n",
		"d: {{ date \"2006\" 0 }}\n",
		"helm_values:\n  cni: x\ncluster:\n  name: y\n",
		"a-b: 1\na_b: 2\n",
		"{{ define \"x\" }}{{ template \"x\" . }}{{ end }}{{ template \"x\" . }}",
		// broken ones
		"{{ .Cluster.metadata.name ",
		"{{ end }}",
		"{{ env \"HOME\" }}",
		"{{ now }}",
		"- a\n- b\n",
		"a: [b\n",
		"x: {{ .Cluster.spec.controlPlaneEndpoint.hostname }}\n",
		"{{ fail \"no\" }}",
		"x: {{ index .Cluster.spec.clusterNetwork.pods.cidrBlocks 9 }}\n",
		"\t\t: :",
		"x: {{ printf \"%v\" nil }}\n",
	}
	for _, s := range seeds {
		f.Add(s, true)
		f.Add(s, false)
	}
	pristine := testInput()
	f.Fuzz(func(t *testing.T, tmpl string, helm bool) {
		in := testInput()
		components := []Component{
			{Name: "fuzz", Helm: helm, Template: tmpl, File: "cluster-addon/fuzz/overwrite.yaml"},
			{Name: "cluster-info", Template: "infra:\n  region: \"{{ .InfraCluster.spec.externalNetwork.id }}\"\n", File: infoFile},
		}
		data, err := Render(in, components)
		if !reflect.DeepEqual(in, pristine) {
			t.Fatalf("Render modified its input")
		}
		if err != nil {
			var rerr *Error
			if !errors.As(err, &rerr) {
				t.Fatalf("error %v (%T) is not a *render.Error", err, err)
			}
			if rerr.Component == "" || rerr.File == "" || rerr.Err == nil || rerr.Err.Error() == "" {
				t.Fatalf("error %#v lacks component, file or cause", rerr)
			}
			if data != nil {
				t.Fatalf("data returned with an error")
			}
			return
		}
		for k := range data {
			if !varNameRE.MatchString(k) {
				t.Fatalf("key %q is no valid Flux variable name", k)
			}
		}
		if helm {
			v, ok := data["helm_values_fuzz"]
			if !ok {
				t.Fatalf("no Helm values for the Helm component")
			}
			var m map[string]any
			if err := yaml.Unmarshal([]byte(v), &m); err != nil {
				t.Fatalf("Helm values %q do not parse as a YAML map: %v", v, err)
			}
		}
		for k, v := range BaseVariables(in) {
			if data[k] != v {
				t.Fatalf("variable %s = %q, want the base variable %q", k, data[k], v)
			}
		}
		if data["infra_region"] != "ext-net" {
			t.Fatalf("the other component's variable infra_region = %q", data["infra_region"])
		}
		again, err := Render(testInput(), components)
		if err != nil {
			t.Fatalf("second render failed: %v", err)
		}
		if !reflect.DeepEqual(data, again) {
			t.Fatalf("rendering twice gave different data:\n%v\n%v", data, again)
		}
	})
}
