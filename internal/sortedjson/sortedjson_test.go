package sortedjson_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/clusterstack-io/clusterstack-operator/internal/sortedjson"
)

// viaUnstructured is what the package stands in for: the object converted to an unstructured
// one, its metadata and status left out, encoded by encoding/json.
func viaUnstructured(t testing.TB, obj any) string {
	t.Helper()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	delete(u, "metadata")
	delete(u, "status")
	b, err := json.Marshal(u)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func sorted(t testing.TB, obj any) string {
	t.Helper()
	typed, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	out, err := sortedjson.Object(nil, typed, "metadata", "status")
	if err != nil {
		t.Fatalf("%v in %s", err, typed)
	}
	return string(out)
}

// tricky is JSON whose numbers, strings and key order the typed encoding and the unstructured
// conversion write differently unless the package rewrites them.
const tricky = `{"z": {"y": null, "x": true, "w": false}, "b": 1.0, "a": [1e3, 12345678901234567890, -0, 0.000001, 1e-7, 1e21, 123456789012345678901234, -2.5E-10, 7],
	"c": "<x> & \u0041\u2028 é \"q\\ \t", "\u00e9": 1, "e": "plain", "A": [], "B": {}, "aa": [{"k": 2, "j": [1, {"b": 1, "a": 2}]}]}`

func objects() map[string]any {
	values := &apiextensionsv1.JSON{Raw: []byte(tricky)}
	return map[string]any{
		"HelmRelease with values": &helmv2.HelmRelease{
			TypeMeta:   metav1.TypeMeta{APIVersion: helmv2.GroupVersion.String(), Kind: helmv2.HelmReleaseKind},
			ObjectMeta: metav1.ObjectMeta{Name: "c-cni", Namespace: "ns", Labels: map[string]string{"b": "1", "a": "2"}},
			Spec: helmv2.HelmReleaseSpec{
				ChartRef:    &helmv2.CrossNamespaceSourceReference{Kind: "HelmChart", Name: "chart"},
				Interval:    metav1.Duration{Duration: 10 * time.Minute},
				Timeout:     &metav1.Duration{Duration: 5 * time.Minute},
				ReleaseName: "cni", TargetNamespace: "kube-system", StorageNamespace: "kube-system",
				Install:    &helmv2.Install{CreateNamespace: true, Remediation: &helmv2.InstallRemediation{Retries: -1}},
				Upgrade:    &helmv2.Upgrade{Remediation: &helmv2.UpgradeRemediation{Retries: -1}},
				KubeConfig: nil,
				ValuesFrom: []helmv2.ValuesReference{{Kind: "ConfigMap", Name: "v", ValuesKey: "helm_values_cni"}},
				Values:     values,
			},
			Status: helmv2.HelmReleaseStatus{ObservedGeneration: 3},
		},
		"Kustomization": &kustomizev1.Kustomization{
			TypeMeta:   metav1.TypeMeta{APIVersion: kustomizev1.GroupVersion.String(), Kind: kustomizev1.KustomizationKind},
			ObjectMeta: metav1.ObjectMeta{Name: "c-info", Namespace: "ns"},
			Spec: kustomizev1.KustomizationSpec{
				Interval: metav1.Duration{Duration: time.Minute}, Path: "./a/<b>&c", Prune: true, Wait: true,
				PostBuild:      &kustomizev1.PostBuild{Substitute: map[string]string{"z": "1", "cluster_name": "a&b", "é": "\u2029"}},
				CommonMetadata: &kustomizev1.CommonMetadata{Labels: map[string]string{"y": "x"}},
				Patches:        nil,
			},
		},
		"ConfigMap": &corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "v", Namespace: "ns"},
			Data:       map[string]string{"helm_values": "a: <1>\n\tb: \"2\"\x01\n", "b": "é\u2028", "a": ""},
			BinaryData: map[string][]byte{"bin": {0, 1, 2, 255}},
		},
		"Cluster with variables": &clusterv1.Cluster{
			TypeMeta:   metav1.TypeMeta{APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster"},
			ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"},
			Spec: clusterv1.ClusterSpec{Topology: clusterv1.Topology{
				ClassRef:  clusterv1.ClusterClassRef{Name: "aws-1-36-v1"},
				Version:   "v1.36.3",
				Variables: []clusterv1.ClusterVariable{{Name: "v", Value: *values}},
			}},
		},
		"Unstructured": &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": "Thing",
			"metadata": map[string]any{"name": "t"},
			"spec":     map[string]any{"b": int64(1), "a": 2.5, "c": []any{"<", map[string]any{"y": nil, "x": "z"}}},
		}},
		"empty": &corev1.ConfigMap{},
	}
}

// TestObjectIsTheUnstructuredEncoding holds Object to the bytes encoding/json writes for the
// object converted to an unstructured one, for objects of every kind the operator applies and
// values that the two encodings write differently (floats, large integers, escapes, key order).
func TestObjectIsTheUnstructuredEncoding(t *testing.T) {
	for name, obj := range objects() {
		t.Run(name, func(t *testing.T) {
			if got, want := sorted(t, obj), viaUnstructured(t, obj); got != want {
				t.Errorf("sorted typed encoding differs from the unstructured one\n got: %s\nwant: %s", got, want)
			}
		})
	}
	// The operator's own generated objects, as the benchmark's API server serves them.
	files, _ := filepath.Glob(filepath.Join("..", "..", "controllers", "testdata", "cached", "*.json"))
	if len(files) == 0 {
		t.Fatal("no sample objects in controllers/testdata/cached")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var obj any = &unstructured.Unstructured{}
		switch filepath.Base(f) {
		case "helmrelease.json":
			obj = &helmv2.HelmRelease{}
		case "kustomization.json":
			obj = &kustomizev1.Kustomization{}
		case "configmap.json":
			obj = &corev1.ConfigMap{}
		case "cluster.json":
			obj = &clusterv1.Cluster{}
		}
		if err := json.Unmarshal(data, obj); err != nil {
			t.Fatal(err)
		}
		if got, want := sorted(t, obj), viaUnstructured(t, obj); got != want {
			t.Errorf("%s: sorted typed encoding differs from the unstructured one\n got: %s\nwant: %s", f, got, want)
		}
	}
}

// FuzzObject compares the two encodings of a HelmRelease whose values are any JSON object (as
// decoding a document gives it: without the whitespace around it).
func FuzzObject(f *testing.F) {
	f.Add(tricky)
	f.Add(`{}`)
	f.Add(`{"a":[0.1,-1e-300,1E+2,18446744073709551616]}`)
	f.Fuzz(func(t *testing.T, values string) {
		raw := bytes.TrimSpace([]byte(values))
		var probe map[string]any
		if json.Unmarshal(raw, &probe) != nil || probe == nil {
			t.Skip()
		}
		hr := &helmv2.HelmRelease{Spec: helmv2.HelmReleaseSpec{Values: &apiextensionsv1.JSON{Raw: raw}}}
		if got, want := sorted(t, hr), viaUnstructured(t, hr); got != want {
			t.Errorf("sorted typed encoding differs from the unstructured one\n got: %s\nwant: %s", got, want)
		}
	})
}

func TestObjectRejectsWhatIsNotAnObject(t *testing.T) {
	for _, in := range []string{``, `[]`, `"a"`, `{"a":1`, `{"a" 1}`, `{"a":1}x`, `{"a":tru}`, `{"a":-}`, `{1:2}`} {
		if out, err := sortedjson.Object(nil, []byte(in)); err == nil {
			t.Errorf("Object(%q) = %q, want an error", in, out)
		}
	}
}

// BenchmarkObject compares the package with the conversion it stands in for, on a generated
// HelmRelease (go test ./internal/sortedjson -run '^$' -bench . -benchmem).
func BenchmarkObject(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("..", "..", "controllers", "testdata", "cached", "helmrelease.json"))
	if err != nil {
		b.Fatal(err)
	}
	hr := &helmv2.HelmRelease{}
	if err := json.Unmarshal(data, hr); err != nil {
		b.Fatal(err)
	}
	b.Run("unstructured", func(b *testing.B) {
		for b.Loop() {
			viaUnstructured(b, hr)
		}
	})
	b.Run("sorted", func(b *testing.B) {
		for b.Loop() {
			sorted(b, hr)
		}
	})
}
