package controllers

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/registry"
	"github.com/clusterstack-io/clusterstack-operator/internal/gitauth"
	"github.com/clusterstack-io/clusterstack-operator/internal/ocistack"
	"github.com/clusterstack-io/clusterstack-operator/internal/ocistack/ocitest"
	"github.com/clusterstack-io/clusterstack-operator/internal/testenv"
)

const (
	ociTestUser     = "site"
	ociTestPassword = "s3cret-registry-password"
)

// startOCIRegistry starts the real registry (bin/registry) over https with one htpasswd user.
func startOCIRegistry(t *testing.T) *registry.Server {
	t.Helper()
	root, err := testenv.Root()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "bin")
	if _, err := os.Stat(filepath.Join(bin, registry.Binary)); err != nil {
		testenv.SkipOrFail(t, "bin/registry missing: run `make tools`")
	}
	s, err := registry.Start(context.Background(), registry.Options{BinDir: bin, StateDir: t.TempDir(), TLS: true,
		Users: map[string]string{ociTestUser: ociTestPassword}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

func dockerConfigSecret(ns, name, host, user, password string) *corev1.Secret {
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{ocistack.DockerConfigKey: []byte(`{"auths":{"` + host + `":{"auth":"` + auth + `"}}}`)},
	}
}

// An OCI repository's tags are listed, and the asked-for tag resolved to its digest, with the
// credentials of a dockerconfigjson Secret and the CA of a certSecretRef of the namespace; what
// fails says what to fix and never carries the password.
func TestTagListerListsOCIRepositories(t *testing.T) {
	reg := startOCIRegistry(t)
	ctx := context.Background()
	pushTarget := ocistack.Target{URL: reg.URL("operators/infra"), CA: reg.CA(), Username: ociTestUser, Password: ociTestPassword}
	digests := map[string]string{}
	for _, tag := range []string{"v1.0.0", "v1.1.0", "latest"} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte("resources: []\n# "+tag+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		desc, err := ocistack.Push(ctx, pushTarget, dir, tag, ocistack.Origin{})
		if err != nil {
			t.Fatal(err)
		}
		digests[tag] = strings.TrimPrefix(desc.Digest.String(), "sha256:")
	}
	l := secretReader(
		dockerConfigSecret("team-a", "registry", reg.Host(), ociTestUser, ociTestPassword),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "registry-ca"}, Data: map[string][]byte{"ca.crt": reg.CA()}},
		dockerConfigSecret("team-a", "wrong", reg.Host(), ociTestUser, "not-the-password"),
		dockerConfigSecret("team-a", "other-host", "registry.example.com", ociTestUser, ociTestPassword),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "opaque"}, Data: map[string][]byte{"username": []byte("x")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "huge-ca"}, Data: map[string][]byte{"ca.crt": bytes.Repeat([]byte("c"), gitauth.MaxSecretValueBytes+1)}},
	)
	src := csv1.OCISource{URL: reg.URL("operators/infra"), SecretRef: &meta.LocalObjectReference{Name: "registry"}, CertSecretRef: &meta.LocalObjectReference{Name: "registry-ca"}}
	sel := TagSelector{Form: OperatorVersionTags}

	got, err := l.OCIListing(ctx, "team-a", src, sel, time.Minute, time.Time{}, "v1.1.0")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Refs) != 2 || got.Refs["v1.1.0"] != digests["v1.1.0"] {
		t.Errorf("Refs = %v; want v1.0.0 and v1.1.0 (not latest), v1.1.0 at %s", got.Refs, digests["v1.1.0"])
	}
	if d, ok := got.Refs["v1.0.0"]; !ok || d != "" {
		t.Errorf("v1.0.0 = %q, %v; want listed, not resolved", d, ok)
	}
	got, err = l.OCIListing(ctx, "team-a", src, sel, time.Minute, time.Time{}, "v9.0.0")
	if _, ok := got.Refs["v9.0.0"]; err != nil || ok {
		t.Errorf("a tag the repository lacks: Refs = %v, %v; want it missing", got.Refs, err)
	}

	for _, tc := range []struct {
		name string
		src  csv1.OCISource
		want []string
	}{
		{"missing Secret", csv1.OCISource{URL: src.URL, SecretRef: &meta.LocalObjectReference{Name: "absent"}, CertSecretRef: src.CertSecretRef},
			[]string{"credentials Secret team-a/absent not found", "create it in namespace team-a"}},
		{"wrong password", csv1.OCISource{URL: src.URL, SecretRef: &meta.LocalObjectReference{Name: "wrong"}, CertSecretRef: src.CertSecretRef},
			[]string{"team-a/wrong", "401"}},
		{"no entry for the host", csv1.OCISource{URL: src.URL, SecretRef: &meta.LocalObjectReference{Name: "other-host"}, CertSecretRef: src.CertSecretRef},
			[]string{"no credentials for the registry " + reg.Host()}},
		{"not a dockerconfigjson Secret", csv1.OCISource{URL: src.URL, SecretRef: &meta.LocalObjectReference{Name: "opaque"}},
			[]string{"team-a/opaque has no .dockerconfigjson", "kubectl create secret docker-registry"}},
		{"a CA Secret over the size bound", csv1.OCISource{URL: src.URL, SecretRef: src.SecretRef, CertSecretRef: &meta.LocalObjectReference{Name: "huge-ca"}},
			[]string{"CA Secret team-a/huge-ca", `key "ca.crt" holds`, fmt.Sprint(gitauth.MaxSecretValueBytes)}},
		{"no CA", csv1.OCISource{URL: src.URL, SecretRef: src.SecretRef},
			[]string{"certificate"}},
		{"credentials over plain http", csv1.OCISource{URL: src.URL, SecretRef: src.SecretRef, Insecure: true},
			[]string{"never sent over plain http"}},
	} {
		_, err := l.OCIListing(ctx, "team-a", tc.src, sel, time.Minute, time.Time{}, "v1.1.0")
		if err == nil {
			t.Errorf("%s: listed", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", tc.name, err, w)
			}
		}
		if strings.Contains(err.Error(), ociTestPassword) || strings.Contains(err.Error(), "not-the-password") {
			t.Errorf("%s: error carries a password: %s", tc.name, err)
		}
	}
}

// A registry that serves more tags than the operator reads fails the listing as a repository
// beyond the limits (TagListTooLarge), cached for maxAge, after reading a bounded part of it.
func TestTagListerRefusesHugeOCITagLists(t *testing.T) {
	r := &ocitest.Registry{Mode: ocitest.HugeTagList}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	l := &TagLister{}
	src := csv1.OCISource{URL: r.URL("stacks/huge"), Insecure: true}
	_, err := l.OCIListing(context.Background(), "team-a", src, TagSelector{Form: OperatorVersionTags}, time.Minute, time.Time{}, "v1.0.0")
	if !errors.Is(err, gitauth.ErrTooManyRefs) {
		t.Fatalf("err = %v; want one wrapping gitauth.ErrTooManyRefs", err)
	}
	if !strings.Contains(err.Error(), "keep the repository within these limits") {
		t.Errorf("error %q does not say what to do", err)
	}
}
