package fleet

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// TestRenderExamples renders the repository's own examples: plain manifests with the Git
// server's URL, and the objects the Kustomization's health checks and the Secrets follow from.
func TestRenderExamples(t *testing.T) {
	dir := t.TempDir()
	objs, err := Render(filepath.Join("..", "..", "examples"), URLs{Git: "http://127.0.0.1:1234", OCI: "oci://127.0.0.1:5000"}, dir)
	if err != nil {
		t.Fatal(err)
	}
	src, _ := filepath.Glob(filepath.Join("..", "..", "examples", "*.yaml"))
	out, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if len(out) != len(src) || len(out) == 0 {
		t.Fatalf("rendered %d files from %d", len(out), len(src))
	}
	for _, f := range out {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{GitURLPlaceholder, OCIURLPlaceholder} {
			if strings.Contains(string(data), p) {
				t.Errorf("%s still holds %s", f, p)
			}
		}
	}
	stack, err := os.ReadFile(filepath.Join(dir, "10-clusterstack.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(stack), "url: http://127.0.0.1:1234/stacks") {
		t.Errorf("the ClusterStack's source is not the Git server's:\n%s", stack)
	}
	oci, err := os.ReadFile(filepath.Join(dir, "15-clusterstack-oci.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(oci), "url: oci://127.0.0.1:5000/stacks/aws-base") {
		t.Errorf("the OCI ClusterStack's source is not the registry's:\n%s", oci)
	}
	var stacks, clusters int
	for _, o := range objs {
		switch {
		case o.IsClusterStack():
			stacks++
			if (o.Namespace != "demo" && o.Namespace != "demo-oci") || o.Name != "aws-base-1-36" {
				t.Errorf("ClusterStack %s/%s", o.Namespace, o.Name)
			}
		case o.IsCluster():
			clusters++
		}
	}
	if stacks != 2 || clusters != 2 {
		t.Errorf("found %d ClusterStacks and %d Clusters in %v", stacks, clusters, objs)
	}
	hc := HealthChecks(objs)
	if len(hc) != 2 || hc[0].APIVersion != "clusterstack.io/v1alpha1" || hc[0].Kind != "ClusterStack" || hc[0].Name != "aws-base-1-36" || hc[0].Namespace != "demo" ||
		hc[1].Kind != "ClusterStack" || hc[1].Namespace != "demo-oci" {
		t.Errorf("health checks %+v", hc)
	}
}

func TestObjectsProposalSecretRef(t *testing.T) {
	objs, err := Objects([]byte(`
apiVersion: clusterstack.io/v1alpha1
kind: ClusterStack
metadata: {name: a, namespace: one}
spec:
  updates:
    proposals: {provider: gitea, secretRef: {name: bot-token}}
---
---
apiVersion: clusterstack.io/v1alpha1
kind: ClusterStack
metadata: {name: b, namespace: two}
spec: {}
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 || objs[0].ProposalSecretRef != "bot-token" || objs[1].ProposalSecretRef != "" {
		t.Fatalf("%+v", objs)
	}
}

func TestFluxObjects(t *testing.T) {
	objs := []Object{{APIVersion: "clusterstack.io/v1alpha1", Kind: "ClusterStack", Namespace: "demo", Name: "s"}, {APIVersion: "v1", Kind: "Namespace", Name: "demo"}}
	var repo *sourcev1.GitRepository
	var ks *kustomizev1.Kustomization
	for _, o := range fluxObjects("http://forge/fleet-admin/fleet.git", objs) {
		switch o := o.(type) {
		case *sourcev1.GitRepository:
			repo = o
		case *kustomizev1.Kustomization:
			ks = o
		}
	}
	if repo == nil || ks == nil {
		t.Fatal("no GitRepository or Kustomization")
	}
	if repo.Namespace != FluxNamespace || repo.Spec.URL != "http://forge/fleet-admin/fleet.git" || repo.Spec.Reference.Branch != "main" || repo.Spec.SecretRef != nil {
		t.Errorf("GitRepository %+v", repo.Spec)
	}
	if ks.Namespace != FluxNamespace || ks.Spec.SourceRef.Name != repo.Name || ks.Spec.SourceRef.Namespace != "" || !ks.Spec.Prune ||
		ks.Spec.ServiceAccountName != ApplierServiceAccount || ks.Spec.Path != "./" || len(ks.Spec.HealthChecks) != 1 {
		t.Errorf("Kustomization %+v", ks.Spec)
	}
	if len(ks.Spec.HealthCheckExprs) != 1 || ks.Spec.HealthCheckExprs[0].APIVersion != "clusterstack.io/v1alpha1" || ks.Spec.HealthCheckExprs[0].Kind != "ClusterStack" {
		t.Errorf("health check expressions %+v", ks.Spec.HealthCheckExprs)
	}
}

// TestProposalSecrets: one Secret per namespace and name, created once the namespace exists.
func TestProposalSecrets(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "one"}}).Build()
	objs := []Object{
		{APIVersion: "clusterstack.io/v1alpha1", Kind: "ClusterStack", Namespace: "one", Name: "a", ProposalSecretRef: "bot-token"},
		{APIVersion: "clusterstack.io/v1alpha1", Kind: "ClusterStack", Namespace: "one", Name: "b", ProposalSecretRef: "bot-token"},
		{APIVersion: "clusterstack.io/v1alpha1", Kind: "ClusterStack", Namespace: "two", Name: "c"},
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "three", Name: "d"},
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		_ = c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "two"}})
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := proposalSecrets(ctx, c, "t0ken", objs, 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	var list corev1.SecretList
	if err := c.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range list.Items {
		got[s.Namespace+"/"+s.Name] = s.StringData[ProposalSecretKey] + string(s.Data[ProposalSecretKey])
	}
	if len(got) != 2 || got["one/bot-token"] != "t0ken" || got["two/"+ProposalSecret] != "t0ken" {
		t.Errorf("Secrets %v, want one/bot-token and two/%s with the token", got, ProposalSecret)
	}

	short, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	err := proposalSecrets(short, c, "t", []Object{{APIVersion: "clusterstack.io/v1alpha1", Kind: "ClusterStack", Namespace: "never", Name: "x"}}, 10*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "never") {
		t.Errorf("a namespace that never comes: %v", err)
	}
}
