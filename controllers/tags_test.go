package controllers

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/gitauth/gittest"
)

const (
	tagTestUser     = "stack-reader"
	tagTestPassword = "tag-listing-password-9c41d7"
)

// gitServer serves repo over https, asking for basic auth; it returns the repository URL and
// the server's CA in PEM.
func gitServer(t *testing.T, repo *gittest.Repo) (string, []byte) {
	t.Helper()
	backend := gittest.Handler(t, repo.Root)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != tagTestUser || p != tagTestPassword {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return srv.URL + "/" + repo.Name, ca
}

func secretReader(secrets ...*corev1.Secret) *TagLister {
	b := fake.NewClientBuilder()
	for _, s := range secrets {
		b = b.WithObjects(s)
	}
	return &TagLister{Reader: b.Build()}
}

// Refs lists tags with the commit they point to (peeled for annotated tags), with the
// credentials of a Flux-format Secret in the stack's namespace; answers are cached for maxAge
// and Forget drops them.
func TestTagListerListsWithFluxCredentials(t *testing.T) {
	repo := gittest.NewRepo(t)
	url, ca := gitServer(t, repo)
	l := secretReader(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "git"},
		Data:       map[string][]byte{"username": []byte(tagTestUser), "password": []byte(tagTestPassword), "ca.crt": ca},
	})
	src := csv1.StackSource{URL: url, Path: ".", SecretRef: &meta.LocalObjectReference{Name: "git"}}
	ctx := context.Background()
	refs, err := l.Refs(ctx, "team-a", src, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for tag, commit := range repo.Commits {
		if refs[tag] != commit {
			t.Errorf("tag %s: got %s, want the peeled commit %s", tag, refs[tag], commit)
		}
	}

	// Cached within maxAge: a tag moved now is seen only after Forget.
	work := filepath.Join(repo.Root, "work")
	gittest.Git(t, work, "tag", "-f", "v1", repo.Commits["v3"])
	gittest.Git(t, work, "push", "-q", "-f", filepath.Join(repo.Root, repo.Name), "refs/tags/v1")
	if refs, _ := l.Refs(ctx, "team-a", src, time.Minute); refs["v1"] != repo.Commits["v1"] {
		t.Errorf("cached answer expected within maxAge, got v1=%s", refs["v1"])
	}
	l.Forget("team-a", src)
	tags, err := l.Tags(ctx, "team-a", src, time.Minute)
	if err != nil || strings.Join(tags, ",") != "v1,v2,v3,v3-nested" {
		t.Errorf("Tags = %v, %v; want sorted names", tags, err)
	}
	if refs, _ := l.Refs(ctx, "team-a", src, time.Minute); refs["v1"] != repo.Commits["v3"] {
		t.Errorf("after Forget the moved tag is seen: v1=%s", refs["v1"])
	}
}

// Every failure names what to fix, reads Secrets only in the stack's namespace, and never
// carries a credential.
func TestTagListerErrorsAreActionableAndRedacted(t *testing.T) {
	repo := gittest.NewRepo(t)
	url, ca := gitServer(t, repo)
	httpURL := "http://127.0.0.1:1/" + repo.Name
	l := secretReader(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "git"},
			Data: map[string][]byte{"username": []byte(tagTestUser), "password": []byte(tagTestPassword), "ca.crt": ca}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "wrong"},
			Data: map[string][]byte{"username": []byte(tagTestUser), "password": []byte("wrong-password-0d9e8f7a6b"), "ca.crt": ca}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "other-team"},
			Data: map[string][]byte{"username": []byte(tagTestUser), "password": []byte(tagTestPassword), "ca.crt": ca}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "ssh-no-known-hosts"},
			Data: map[string][]byte{"identity": []byte("-----BEGIN OPENSSH PRIVATE KEY-----\nnot-a-key-but-secret-1234567\n-----END OPENSSH PRIVATE KEY-----\n")}},
	)
	tests := []struct {
		name, ns, url, secret string
		errHas                []string
	}{
		{"credentials over plain http", "team-a", httpURL, "git",
			[]string{"credentials Secret team-a/git", "plain http", "https"}},
		{"the URL's userinfo over plain http", "team-a", "http://" + tagTestUser + ":" + tagTestPassword + "@127.0.0.1:1/x.git", "",
			[]string{"userinfo", "plain http", "http://127.0.0.1:1/x.git"}},
		{"a Secret of another namespace is not found", "team-a", url, "other-team",
			[]string{"team-a/other-team", "not found"}},
		{"wrong password", "team-a", url, "wrong",
			[]string{"list tags of " + url}},
		{"ssh without known_hosts", "team-a", "ssh://git@127.0.0.1:1/x.git", "ssh-no-known-hosts",
			[]string{"team-a/ssh-no-known-hosts", "known_hosts"}},
		{"no credentials", "team-a", url, "",
			[]string{"list tags of " + url}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := csv1.StackSource{URL: tt.url, Path: "."}
			if tt.secret != "" {
				src.SecretRef = &meta.LocalObjectReference{Name: tt.secret}
			}
			_, err := l.Refs(context.Background(), tt.ns, src, time.Minute)
			if err == nil {
				t.Fatal("want an error")
			}
			for _, part := range tt.errHas {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("error %q does not contain %q", err, part)
				}
			}
			for _, secret := range []string{tagTestPassword, "wrong-password-0d9e8f7a6b", "not-a-key-but-secret-1234567"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error %q carries a credential", err)
				}
			}
		})
	}
}
