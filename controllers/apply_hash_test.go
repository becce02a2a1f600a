package controllers

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
)

// hashViaUnstructured is hashOf as the operator computed it before it encoded the typed object
// (internal/sortedjson): from the object converted to an unstructured one. The applied-hash
// annotations on the objects of running fleets carry its digests; were hashOf to differ, an
// operator upgrade would apply every object again.
func hashViaUnstructured(t *testing.T, obj client.Object) string {
	t.Helper()
	// The conversion of an unstructured object returns its own map: convert a copy.
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj.DeepCopyObject())
	if err != nil {
		t.Fatal(err)
	}
	delete(u, "metadata")
	delete(u, "status")
	b, err := json.Marshal(struct {
		Labels      map[string]string `json:"l"`
		Annotations map[string]string `json:"a"`
		Owners      any               `json:"o"`
		Object      any               `json:"x"`
	}{obj.GetLabels(), withoutHash(obj.GetAnnotations()), obj.GetOwnerReferences(), u})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// TestHashOfUnchangedByTheTypedEncoding holds hashOf to the digests already applied, for the
// objects every generator of the operator writes.
func TestHashOfUnchangedByTheTypedEncoding(t *testing.T) {
	owner := metav1.OwnerReference{APIVersion: csv1.GroupVersion.String(), Kind: "ClusterAddon", Name: "c1",
		UID: "52de537a-fdc0-462f-a14f-b9d11a8cb789", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	comps := []csv1.ReleaseComponent{
		{Name: "cni", Kind: csv1.ComponentKindHelm, Version: "1.2.3", Path: "cluster-addon/cni", Namespace: "kube-system"},
		{Name: "csi", Kind: csv1.ComponentKindHelm, Version: "0.1.0", Path: "cluster-addon/csi", Namespace: "csi-${cluster_name}"},
		{Name: "info", Kind: csv1.ComponentKindKustomize, Version: "sha256-637c263d5719", Path: "cluster-addon/info"},
		{Name: "policies", Kind: csv1.ComponentKindKustomize, Version: "sha256-1234", Path: "cluster-addon/policies"},
	}
	git := &csv1.ClusterStackRelease{
		ObjectMeta: metav1.ObjectMeta{Name: "aws-1-36-v1", Namespace: "fleet", UID: "1234"},
		Spec: csv1.ClusterStackReleaseSpec{ClusterStack: "aws-1-36", Provider: "aws", StackName: "base",
			KubernetesVersion: "1.36", Version: "v1",
			Source: csv1.StackSource{URL: "https://git.example.com/stacks.git", Path: "providers/aws", SecretRef: &meta.LocalObjectReference{Name: "git-auth"}}},
		Status: csv1.ClusterStackReleaseStatus{Components: comps},
	}
	oci := git.DeepCopy()
	oci.Spec.Source = csv1.StackSource{OCI: &csv1.OCISource{URL: "oci://registry.example.com/stacks/aws"}}

	var objs []client.Object
	objs = append(objs, fluxgen.GitRepository(git), fluxgen.OCIRepository(oci), fluxgen.ReleaseSource(git))
	objs = append(objs, fluxgen.AddonCharts(git, comps)...)
	objs = append(objs, fluxgen.AddonCharts(oci, comps)...)
	objs = append(objs, fluxgen.ClusterClassObjects(git, csv1.ReleaseComponent{Name: "clusterclass", Kind: csv1.ComponentKindKustomize, Path: "cluster-class"})...)
	for _, shard := range []string{"", "shard-a"} {
		addons := fluxgen.AddonObjects(fluxgen.ClusterInput{Cluster: "c1", Namespace: "fleet", Stack: "aws-1-36",
			Release: git, Components: comps, Timeout: 7 * time.Minute, FluxShard: shard})
		for _, o := range addons {
			o.SetOwnerReferences([]metav1.OwnerReference{owner})
			o.SetAnnotations(map[string]string{appliedHashAnnotation: "stale", "other": "<kept>"})
		}
		objs = append(objs, addons...)
	}
	objs = append(objs, &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "c1-aws-1-36-v1-values-7ebf031b04cb", Namespace: "fleet", OwnerReferences: []metav1.OwnerReference{owner}},
		Data: map[string]string{"helm_values_cni": "apiServer:\n  host: 127.0.0.1\n  port: 6443\npodCIDR: 10.244.0.0/16\n",
			"cluster_name": "c1", "annotations": `{"a":"<b> & 'c'"}`, "unicode": "é\u2028\x01"},
	}, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AWSCluster",
		"metadata": map[string]any{"name": "c1", "namespace": "fleet", "labels": map[string]any{"b": "1", "a": "2"}},
		"spec":     map[string]any{"region": "eu-central-1", "n": int64(3), "f": 2.5, "list": []any{map[string]any{"z": true, "y": nil}}},
	}})
	for _, f := range []struct {
		file string
		obj  client.Object
	}{{"helmrelease", &helmv2.HelmRelease{}}, {"kustomization", &kustomizev1.Kustomization{}}, {"configmap", &corev1.ConfigMap{}},
		{"cluster", &clusterv1.Cluster{}}, {"clusteraddon", &csv1.ClusterAddon{}}} {
		data, err := os.ReadFile(filepath.Join("testdata", "cached", f.file+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, f.obj); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, f.obj)
	}
	if len(objs) < 20 {
		t.Fatalf("only %d objects generated", len(objs))
	}
	for _, o := range objs {
		got, err := hashOf(o)
		if err != nil {
			t.Fatal(err)
		}
		if want := hashViaUnstructured(t, o); got != want {
			t.Errorf("%T %s: hashOf = %s, the digest already applied is %s", o, o.GetName(), got, want)
		}
	}
}

// BenchmarkHashOf prints what hashing a generated HelmRelease costs, as the Applier hashes it:
// desired, without a status (go test ./controllers -run '^$' -bench HashOf -benchmem).
func BenchmarkHashOf(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("testdata", "cached", "helmrelease.json"))
	if err != nil {
		b.Fatal(err)
	}
	hr := &helmv2.HelmRelease{}
	if err := json.Unmarshal(data, hr); err != nil {
		b.Fatal(err)
	}
	hr.Status = helmv2.HelmReleaseStatus{}
	for b.Loop() {
		if _, err := hashOf(hr); err != nil {
			b.Fatal(err)
		}
	}
}
