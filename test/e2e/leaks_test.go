package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// minSecretLen is the shortest Secret value looked for: shorter values ("admin", "true") occur in
// any text by chance and say nothing about a leak.
const minSecretLen = 12

// secretNeedles returns what must never appear outside Secrets: every Secret value in the
// management cluster of at least minSecretLen bytes (and its base64 form), and of kubeconfig
// Secrets the credentials in them (client key, token, password), not the server address and CA
// a kubeconfig also holds, which are public.
func secretNeedles(ctx context.Context, g Gomega) map[string]string {
	var secrets corev1.SecretList
	g.Expect(k8s.List(ctx, &secrets)).To(Succeed())
	return needlesOf(secrets.Items)
}

// needlesOf is secretNeedles for a list of Secrets.
func needlesOf(secrets []corev1.Secret) map[string]string {
	needles := map[string]string{}
	add := func(where, v string) {
		if len(v) >= minSecretLen {
			needles[v] = where
			needles[base64.StdEncoding.EncodeToString([]byte(v))] = where + " (base64)"
		}
	}
	for _, s := range secrets {
		for k, v := range s.Data {
			where := s.Namespace + "/" + s.Name + "[" + k + "]"
			if kc, err := clientcmd.Load(v); err == nil && len(kc.AuthInfos) > 0 {
				for name, ai := range kc.AuthInfos {
					add(where+" user "+name+" key", string(ai.ClientKeyData))
					add(where+" user "+name+" token", ai.Token)
					add(where+" user "+name+" password", ai.Password)
					for _, line := range strings.Split(string(ai.ClientKeyData), "\n") {
						add(where+" user "+name+" key line", strings.TrimSpace(line))
					}
				}
				continue
			}
			add(where, string(v))
		}
	}
	return needles
}

// leaksIn lists every needle found in a haystack, as "Secret <where> appears in <haystack>".
func leaksIn(needles, haystacks map[string]string) []string {
	var leaks []string
	for needle, where := range needles {
		for name, hay := range haystacks {
			if strings.Contains(hay, needle) {
				leaks = append(leaks, "Secret "+where+" appears in "+name)
			}
		}
	}
	return leaks
}

// expectNoSecretLeaked checks that no Secret value appears in an object the operator generated or
// owns the status of, in an Event, or (withLog) in the operator's log. Without the log it is the
// check made before the Clusters of a finished container are deleted, with their generated objects.
func expectNoSecretLeaked(ctx context.Context, withLog bool) {
	g := NewWithT(GinkgoT())
	needles := secretNeedles(ctx, g)
	haystacks := map[string]string{}
	lists := []client.ObjectList{
		&csv1.ClusterStackList{}, &csv1.ClusterStackReleaseList{}, &csv1.ClusterAddonList{},
		&helmv2.HelmReleaseList{}, &kustomizev1.KustomizationList{},
		&sourcev1.GitRepositoryList{}, &sourcev1.HelmChartList{}, &corev1.EventList{},
	}
	for _, l := range lists {
		g.Expect(k8s.List(ctx, l)).To(Succeed())
		b, err := json.Marshal(l)
		g.Expect(err).NotTo(HaveOccurred())
		haystacks[typeName(l)] = string(b)
	}
	var cms corev1.ConfigMapList
	g.Expect(k8s.List(ctx, &cms, client.MatchingLabels{csv1.ManagedByLabel: csv1.ManagedByValue})).To(Succeed())
	b, err := json.Marshal(cms)
	g.Expect(err).NotTo(HaveOccurred())
	haystacks["generated ConfigMaps"] = string(b)
	if withLog {
		logBytes, err := os.ReadFile(filepath.Join(pl.LogDir(), "manager.log"))
		g.Expect(err).NotTo(HaveOccurred())
		haystacks["the operator's log"] = string(logBytes)
	}

	leaks := leaksIn(needles, haystacks)
	g.Expect(leaks).To(BeEmpty(), "checked %d Secret values against %d kinds of objects and the log", len(needles), len(haystacks))
}

func typeName(l client.ObjectList) string { return strings.TrimSuffix(fmt.Sprintf("%T", l), "List") }

// TestLeakScan checks the scan itself (no plane needed): a planted value, its base64 form and a
// kubeconfig's client key are found; short values and a kubeconfig's public parts are not looked for.
func TestLeakScan(t *testing.T) {
	kc := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:6443\nusers:\n- name: u\n  user:\n    token: kubeconfig-token-0123456789\n"
	needles := needlesOf([]corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "git"}, Data: map[string][]byte{"password": []byte("s3cret-password-value"), "username": []byte("git")}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "c-kubeconfig"}, Data: map[string][]byte{"value": []byte(kc)}},
	})
	for hay, want := range map[string]int{
		`{"message":"auth failed for s3cret-password-value"}`:                                   1,
		`{"data":"` + base64.StdEncoding.EncodeToString([]byte("s3cret-password-value")) + `"}`: 1,
		`bearer kubeconfig-token-0123456789`:                                                    1,
		`user git at https://127.0.0.1:6443`:                                                    0,
	} {
		if got := leaksIn(needles, map[string]string{"x": hay}); len(got) != want {
			t.Errorf("leaksIn(%q) = %v, want %d leak(s)", hay, got, want)
		}
	}
}
