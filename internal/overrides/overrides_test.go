package overrides

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/render"
)

func override(name, cluster string, sel map[string]string, comp, values string) *csv1.ClusterAddonOverride {
	o := &csv1.ClusterAddonOverride{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
	o.Spec.ClusterName = cluster
	if sel != nil {
		o.Spec.ClusterSelector = &metav1.LabelSelector{MatchLabels: sel}
	}
	j, err := yaml.YAMLToJSON([]byte(values))
	if err != nil {
		panic(err)
	}
	o.Spec.Components = []csv1.ComponentOverride{{Name: comp, Values: apiextensionsv1.JSON{Raw: j}}}
	return o
}

func names(os []*csv1.ClusterAddonOverride) []string {
	out := []string{}
	for _, o := range os {
		out = append(out, o.Name)
	}
	return out
}

func TestForCluster(t *testing.T) {
	all := []*csv1.ClusterAddonOverride{
		override("z-by-name", "one", nil, "cni", "mtu: 1"),
		override("a-by-name", "one", nil, "cni", "mtu: 2"),
		override("b-prod", "", map[string]string{"env": "prod"}, "cni", "mtu: 3"),
		override("a-prod", "", map[string]string{"env": "prod"}, "cni", "mtu: 4"),
		override("other-cluster", "two", nil, "cni", "mtu: 5"),
		override("dev", "", map[string]string{"env": "dev"}, "cni", "mtu: 6"),
		override("all", "", map[string]string{}, "cni", "mtu: 7"),
		{ObjectMeta: metav1.ObjectMeta{Name: "bad-selector"}, Spec: csv1.ClusterAddonOverrideSpec{ClusterSelector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Bogus"}}}}},
	}
	got := names(ForCluster(all, "one", map[string]string{"env": "prod"}))
	want := []string{"a-prod", "all", "b-prod", "a-by-name", "z-by-name"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("order (-want +got):\n%s", diff)
	}
	if got := names(ForCluster(all, "three", nil)); !cmp.Equal(got, []string{"all"}) {
		t.Fatalf("a Cluster no override names: %v", got)
	}
}

// TestPrecedence: stack defaults (a shared cluster-addon-values.yaml) < the release's
// overwrite.yaml < overrides by selector < overrides by name.
func TestPrecedence(t *testing.T) {
	comp := render.Component{
		Name: "cni", Helm: true, File: "cluster-addon/cni/overwrite.yaml",
		Template:   "mtu: 1400\npodCIDR: from-overwrite\nnested:\n  a: overwrite\n  b: overwrite\n",
		Shared:     "cni:\n  mtu: 1300\n  podCIDR: from-shared\n  image: shared-image\n  nested:\n    c: shared\n",
		SharedFile: "cluster-addon-values.yaml",
	}
	os := ForCluster([]*csv1.ClusterAddonOverride{
		override("by-name", "one", nil, "cni", "mtu: 9000\nnested: {b: by-name}"),
		override("by-label", "", map[string]string{"env": "prod"}, "cni", "mtu: 8000\npodCIDR: by-label\nnested: {a: by-label}"),
	}, "one", map[string]string{"env": "prod"})
	ros, err := ToRender(os)
	if err != nil {
		t.Fatal(err)
	}
	in := render.Input{Cluster: map[string]any{"metadata": map[string]any{"name": "one"}}, Overrides: ros}
	data, err := render.Render(in, []render.Component{comp})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]any{}
	if err := yaml.Unmarshal([]byte(data[render.HelmValuesKey("cni")]), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"image":   "shared-image", // only the stack's default sets it
		"mtu":     float64(9000),  // every level sets it: the override by name wins
		"podCIDR": "by-label",     // overwrite.yaml over the default, the selector's override over both
		"nested":  map[string]any{"a": "by-label", "b": "by-name", "c": "shared"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("merged values (-want +got):\n%s", diff)
	}
	// Without overrides the release's own values are unchanged.
	in.Overrides = nil
	plain, err := render.Render(in, []render.Component{comp})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plain[render.HelmValuesKey("cni")], "mtu: 1400") {
		t.Fatalf("without overrides: %s", plain[render.HelmValuesKey("cni")])
	}
}

func TestOverrideFailures(t *testing.T) {
	helm := render.Component{Name: "cni", Helm: true, File: "cluster-addon/cni/overwrite.yaml", Template: "mtu: 1400\n"}
	ks := render.Component{Name: "info", File: "cluster-addon/info/overwrite.yaml", Template: "infra:\n  region: x\n"}
	for _, tc := range []struct {
		name string
		o    *csv1.ClusterAddonOverride
		want string
	}{
		{"a component the release lacks", override("ghost", "one", nil, "csi", "a: 1"),
			`component csi: ClusterAddonOverride/ghost: the release has no component "csi" (its components: cni, info)`},
		{"a kustomize key that would replace a variable every component gets", override("sneaky", "one", nil, "info", "cluster: {name: other}"),
			`component info: ClusterAddonOverride/sneaky: key "cluster_name": the key would become the substitution variable cluster_name`},
		{"two kustomize keys that become one variable", override("twice", "one", nil, "info", "a-b: 1\na_b: 2"),
			`component info: ClusterAddonOverride/twice: key "a_b": two keys of the override would become this substitution variable`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ros, err := ToRender([]*csv1.ClusterAddonOverride{tc.o})
			if err != nil {
				t.Fatal(err)
			}
			_, err = render.Render(render.Input{Overrides: ros}, []render.Component{helm, ks})
			var rerr *render.Error
			if !errors.As(err, &rerr) || rerr.Override != ros[0].Name || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Render = %v, want a render.Error of override %s containing %q", err, ros[0].Name, tc.want)
			}
		})
	}
	// A kustomize override sets the component's own variables.
	ros, _ := ToRender([]*csv1.ClusterAddonOverride{override("region", "one", nil, "info", "infra: {region: eu-west-1}")})
	data, err := render.Render(render.Input{Overrides: ros}, []render.Component{helm, ks})
	if err != nil || data["infra_region"] != "eu-west-1" {
		t.Fatalf("kustomize override: %v %v", err, data["infra_region"])
	}
}
