package controllers

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/gitauth"
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

// checkRefs fails unless refs maps v1, v2 and v3 of repo to their (peeled) commits, and holds
// nothing else: v3-nested is no stack version.
func checkRefs(t *testing.T, repo *gittest.Repo, refs map[string]string) {
	t.Helper()
	want := maps.Clone(repo.Commits)
	delete(want, "v3-nested")
	if !maps.Equal(refs, want) {
		t.Errorf("refs = %v, want the peeled commits %v", refs, want)
	}
}

// anyVersion selects every tag that is a stack version: v1, v2 and v3 of gittest's repository
// (not v3-nested).
var anyVersion = TagSelector{Form: StackVersionTags}

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
	refs, err := l.Refs(ctx, "team-a", src, anyVersion, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	checkRefs(t, repo, refs)

	// Cached within maxAge: a tag moved now is seen only after Forget.
	work := filepath.Join(repo.Root, "work")
	gittest.Git(t, work, "tag", "-f", "v1", repo.Commits["v3"])
	gittest.Git(t, work, "push", "-q", "-f", filepath.Join(repo.Root, repo.Name), "refs/tags/v1")
	if refs, _ := l.Refs(ctx, "team-a", src, anyVersion, time.Minute); refs["v1"] != repo.Commits["v1"] {
		t.Errorf("cached answer expected within maxAge, got v1=%s", refs["v1"])
	}
	l.Forget("team-a", src)
	tags, err := l.Tags(ctx, "team-a", src, anyVersion, time.Minute)
	if err != nil || strings.Join(tags, ",") != "v1,v2,v3" {
		t.Errorf("Tags = %v, %v; want the sorted names of the selector's form (not v3-nested)", tags, err)
	}
	if refs, _ := l.Refs(ctx, "team-a", src, anyVersion, time.Minute); refs["v1"] != repo.Commits["v3"] {
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
			[]string{"list tags of " + url, "credentials Secret team-a/wrong", "authentication"}},
		{"ssh without known_hosts", "team-a", "ssh://git@127.0.0.1:1/x.git", "ssh-no-known-hosts",
			[]string{"team-a/ssh-no-known-hosts", "known_hosts"}},
		{"no credentials", "team-a", url, "",
			[]string{"list tags of " + url, "without credentials"}},
		{"a token in the URL's query", "team-a", "http://127.0.0.1:1/x.git?private_token=" + tagTestPassword, "git",
			[]string{"team-a/git", "plain http", "http://127.0.0.1:1/x.git?***"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := csv1.StackSource{URL: tt.url, Path: "."}
			if tt.secret != "" {
				src.SecretRef = &meta.LocalObjectReference{Name: tt.secret}
			}
			_, err := l.Refs(context.Background(), tt.ns, src, anyVersion, time.Minute)
			if err == nil {
				t.Fatal("want an error")
			}
			t.Logf("error: %v", err)
			for _, part := range tt.errHas {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("error %q does not contain %q", err, part)
				}
			}
			assertNoSecretBytes(t, err, l)
		})
	}
}

// assertNoSecretBytes fails when err's text carries a value of one of the Secrets the lister
// can read (except the public ca.crt and known_hosts), whole, base64-encoded, or any line of it
// (a PEM key's body), or the password of a URL.
func assertNoSecretBytes(t *testing.T, err error, l *TagLister) {
	t.Helper()
	var list corev1.SecretList
	if lerr := l.Reader.List(context.Background(), &list); lerr != nil {
		t.Fatal(lerr)
	}
	msg := err.Error()
	for _, s := range list.Items {
		for k, v := range s.Data {
			if k == "ca.crt" || k == "known_hosts" || k == "username" {
				continue // public, and checked elsewhere for the user name
			}
			values := [][]byte{v, []byte(base64.StdEncoding.EncodeToString(v))}
			for _, line := range bytes.Split(v, []byte("\n")) {
				if line = bytes.TrimSpace(line); len(line) >= 8 && !bytes.HasPrefix(line, []byte("-----")) {
					values = append(values, line)
				}
			}
			for _, x := range values {
				if len(x) > 0 && strings.Contains(msg, string(x)) {
					t.Errorf("error carries (part of) %s/%s key %s: %s", s.Namespace, s.Name, k, msg)
				}
			}
		}
	}
	if strings.Contains(msg, tagTestPassword) {
		t.Errorf("error carries the test password: %s", msg)
	}
}

// An SSH identity (passphrase-protected) with known_hosts goes through to a real SSH server;
// an unknown host key is refused with an error naming the Secret, free of the key.
func TestTagListerListsOverSSH(t *testing.T) {
	repo := gittest.NewRepo(t)
	_, hostKey := gittest.SSHKey(t, "")
	_, otherHostKey := gittest.SSHKey(t, "")
	const passphrase = "ssh-passphrase-7f3e21"
	identity, clientKey := gittest.SSHKey(t, passphrase)
	addr := gittest.ServeSSH(t, repo.Root, hostKey, clientKey.PublicKey())
	url := "ssh://git@" + addr + "/" + repo.Name
	known := func(k ssh.Signer) []byte {
		return []byte(knownhosts.Line([]string{addr}, k.PublicKey()) + "\n")
	}
	l := secretReader(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "ssh"},
			Data: map[string][]byte{"identity": identity, "password": []byte(passphrase), "known_hosts": known(hostKey)}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "ssh-other-host"},
			Data: map[string][]byte{"identity": identity, "password": []byte(passphrase), "known_hosts": known(otherHostKey)}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "ssh-no-passphrase"},
			Data: map[string][]byte{"identity": identity, "known_hosts": known(hostKey)}},
	)
	ctx := context.Background()

	refs, err := l.Refs(ctx, "team-a", csv1.StackSource{URL: url, Path: ".", SecretRef: &meta.LocalObjectReference{Name: "ssh"}}, anyVersion, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	checkRefs(t, repo, refs)

	for secret, errHas := range map[string][]string{
		"ssh-other-host":    {"credentials Secret team-a/ssh-other-host", "list tags of ssh://" + addr + "/" + repo.Name, "key mismatch"},
		"ssh-no-passphrase": {"credentials Secret team-a/ssh-no-passphrase", "passphrase", "password"},
	} {
		_, err := l.Refs(ctx, "team-a", csv1.StackSource{URL: url, Path: ".", SecretRef: &meta.LocalObjectReference{Name: secret}}, anyVersion, time.Minute)
		if err == nil {
			t.Fatalf("%s: want an error", secret)
		}
		t.Logf("error: %v", err)
		for _, part := range errHas {
			if !strings.Contains(err.Error(), part) {
				t.Errorf("%s: error %q does not contain %q", secret, err, part)
			}
		}
		if strings.Contains(err.Error(), passphrase) {
			t.Errorf("%s: error carries the passphrase: %s", secret, err)
		}
		assertNoSecretBytes(t, err, l)
	}
}

// A Secret value beyond gitauth's bound is refused, naming the Secret and the key, before any
// listing; the value is not echoed.
func TestTagListerRefusesOversizedSecretValues(t *testing.T) {
	huge := bytes.Repeat([]byte("huge-secret-value-"), gitauth.MaxSecretValueBytes/16)
	var listed atomic.Int32
	l := secretReader(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "huge"},
		Data: map[string][]byte{"username": []byte(tagTestUser), "password": huge}})
	l.List = func(context.Context, *gitauth.Remote) (map[string]string, error) {
		listed.Add(1)
		return map[string]string{}, nil
	}
	_, err := l.Refs(context.Background(), "team-a",
		csv1.StackSource{URL: "https://git.example.com/stack.git", Path: ".", SecretRef: &meta.LocalObjectReference{Name: "huge"}}, anyVersion, time.Minute)
	if err == nil {
		t.Fatal("want an error")
	}
	for _, part := range []string{"credentials Secret team-a/huge", `"password"`, fmt.Sprint(gitauth.MaxSecretValueBytes)} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q does not contain %q", err, part)
		}
	}
	if strings.Contains(err.Error(), "huge-secret-value") {
		t.Errorf("error echoes the value: %.200s", err)
	}
	if listed.Load() != 0 {
		t.Errorf("listed %d times with an oversized Secret", listed.Load())
	}
}

// The cache through the List hook: an answer younger than maxAge is reused, an older one is
// not, Forget makes the next call list at once (even when a listing started before Forget ends
// after it), errors are not cached, and the hook's errors are redacted and name the Secret.
func TestTagListerCacheAndForget(t *testing.T) {
	l := secretReader(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "git"},
		Data: map[string][]byte{"username": []byte(tagTestUser), "password": []byte(tagTestPassword)}})
	src := csv1.StackSource{URL: "https://git.example.com/stack.git", Path: ".", SecretRef: &meta.LocalObjectReference{Name: "git"}}
	ctx := context.Background()
	var (
		calls   atomic.Int32
		answer  atomic.Value // string: the commit of v1
		release chan struct{}
		started chan struct{}
		fail    atomic.Bool
	)
	answer.Store("c1")
	l.List = func(_ context.Context, r *gitauth.Remote) (map[string]string, error) {
		calls.Add(1)
		v1 := answer.Load().(string) // what the remote holds when the listing starts
		if r.Method() != gitauth.Basic || r.URL() != src.URL {
			t.Errorf("remote %s, want basic auth to %s", r, src.URL)
		}
		if started != nil {
			started <- struct{}{}
			<-release
		}
		if fail.Load() {
			return nil, errors.New("server said: bad password " + tagTestPassword + " for https://" + tagTestUser + ":" + tagTestPassword + "@git.example.com")
		}
		return map[string]string{"v1": v1}, nil
	}
	refs := func(maxAge time.Duration) string {
		t.Helper()
		r, err := l.Refs(ctx, "team-a", src, anyVersion, maxAge)
		if err != nil {
			t.Fatal(err)
		}
		return r["v1"]
	}

	if got := refs(time.Minute); got != "c1" || calls.Load() != 1 {
		t.Fatalf("first call: v1=%s after %d listings", got, calls.Load())
	}
	answer.Store("c2")
	if got := refs(time.Minute); got != "c1" || calls.Load() != 1 {
		t.Errorf("within maxAge: v1=%s after %d listings, want the cached c1 and no listing", got, calls.Load())
	}
	if tags, err := l.Tags(ctx, "team-a", src, anyVersion, time.Minute); err != nil || len(tags) != 1 || calls.Load() != 1 {
		t.Errorf("Tags shares the cache: %v, %v after %d listings", tags, err, calls.Load())
	}
	if got := refs(0); got != "c2" || calls.Load() != 2 {
		t.Errorf("maxAge 0: v1=%s after %d listings, want a new listing", got, calls.Load())
	}
	l.Forget("team-a", src)
	answer.Store("c3")
	if got := refs(time.Hour); got != "c3" || calls.Load() != 3 {
		t.Errorf("after Forget: v1=%s after %d listings, want a new listing", got, calls.Load())
	}
	other := src
	other.SecretRef = nil
	l.Forget("team-a", other) // another key, never listed: no effect on this one
	if got := refs(time.Hour); got != "c3" || calls.Load() != 3 {
		t.Errorf("Forget of another source: v1=%s after %d listings", got, calls.Load())
	}

	// A listing under way while Forget is called returns its answer but does not cache it.
	l.Forget("team-a", src)
	started, release = make(chan struct{}), make(chan struct{})
	done := make(chan string)
	go func() {
		r, _ := l.Refs(ctx, "team-a", src, anyVersion, time.Hour)
		done <- r["v1"]
	}()
	<-started
	l.Forget("team-a", src)
	answer.Store("c4")
	close(release)
	if got := <-done; got != "c3" {
		t.Errorf("listing under way answered v1=%s, want c3", got)
	}
	started = nil
	if got := refs(time.Hour); got != "c4" || calls.Load() != 5 {
		t.Errorf("after Forget during a listing: v1=%s after %d listings, want a new listing", got, calls.Load())
	}

	// Errors are redacted, name the Secret, and are not cached.
	l.Forget("team-a", src)
	fail.Store(true)
	_, err := l.Refs(ctx, "team-a", src, anyVersion, time.Hour)
	if err == nil || !strings.Contains(err.Error(), "credentials Secret team-a/git") || !strings.Contains(err.Error(), "bad password") {
		t.Fatalf("got %v, want the listing error naming the Secret", err)
	}
	assertNoSecretBytes(t, err, l)
	if strings.Contains(err.Error(), tagTestUser+":") {
		t.Errorf("error keeps the URL's userinfo: %s", err)
	}
	fail.Store(false)
	if got := refs(time.Hour); got != "c4" || calls.Load() != 7 {
		t.Errorf("after an error: v1=%s after %d listings, want a new listing", got, calls.Load())
	}
}

// countingTagLister returns a TagLister on a fake clock whose listings read remote (tag -> commit;
// the test changes it to push or move tags) and are counted.
func countingTagLister(remote map[string]string) (*TagLister, *fakeClock, *atomic.Int32) {
	clock := &fakeClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	listings := &atomic.Int32{}
	l := &TagLister{clock: clock, List: func(context.Context, *gitauth.Remote) (map[string]string, error) {
		listings.Add(1)
		return maps.Clone(remote), nil
	}}
	return l, clock, listings
}

// RefsSince does not use a cached listing that started before the given time: it lists again,
// and caches that listing.
func TestTagListerRefsSince(t *testing.T) {
	remote := map[string]string{"v1": "c1"}
	l, clock, listings := countingTagLister(remote)
	src := csv1.StackSource{URL: "https://git.example.com/stacks.git", Path: "."}
	ctx := context.Background()
	since := func(notBefore time.Time, want string, wantListings int32) {
		t.Helper()
		r, err := l.RefsSince(ctx, "team-a", src, anyVersion, time.Minute, notBefore)
		if err != nil || r["v1"] != want || listings.Load() != wantListings {
			t.Errorf("RefsSince(%s): v1=%s, %v after %d listings, want %s after %d", notBefore, r["v1"], err, listings.Load(), want, wantListings)
		}
	}
	since(time.Time{}, "c1", 1)
	first := clock.Now()
	remote["v1"] = "c2"
	clock.step(time.Second)
	since(time.Time{}, "c1", 1) // an older time: the cached listing
	since(first, "c1", 1)       // the time the cached listing started: still it
	since(clock.Now(), "c2", 2) // after the cached listing started: listed again
	if r, err := l.Refs(ctx, "team-a", src, anyVersion, time.Minute); err != nil || r["v1"] != "c2" || listings.Load() != 2 {
		t.Errorf("after RefsSince: v1=%s, %v after %d listings, want its listing cached", r["v1"], err, listings.Load())
	}
}

// Has believes a cached listing that has the tag; one without it only when it started less than
// tagConfirmAge ago, else it lists again: a tag pushed after another ClusterStack's listing of
// the same repository is not reported missing.
func TestTagListerHasConfirmsAMissingTag(t *testing.T) {
	remote := map[string]string{"v1": "c1"}
	l, clock, listings := countingTagLister(remote)
	src := csv1.StackSource{URL: "https://git.example.com/stacks.git", Path: "."}
	has := func(tag string, want bool, wantListings int32) {
		t.Helper()
		got, err := l.Has(context.Background(), "team-a", src, anyVersion, time.Hour, tag)
		if err != nil {
			t.Fatal(err)
		}
		if got != want || listings.Load() != wantListings {
			t.Errorf("Has(%s) = %v after %d listings, want %v after %d", tag, got, listings.Load(), want, wantListings)
		}
	}
	has("v1", true, 1)
	has("v2", false, 1) // the listing is a moment old: v2 is missing
	remote["v2"] = "c2"
	clock.step(tagConfirmAge - time.Second)
	has("v2", false, 1) // still recent enough to be believed
	clock.step(2 * time.Second)
	has("v2", true, 2) // older: listed again, and v2 is there
	has("v1", true, 2) // that listing is cached
	clock.step(time.Minute)
	has("v3", false, 3) // a missing tag is confirmed by a new listing
	has("v3", false, 3)
}

// A selector keeps the tags of its form after its prefix, at most csv1.MaxVersionLength
// characters of it: a stack's release tags, an operator's versions.
func TestTagSelector(t *testing.T) {
	stack := ReleaseTags("aws", "base", "1.36")
	op := OperatorTags(&csv1.ManagementOperator{Spec: csv1.ManagementOperatorSpec{Source: csv1.OperatorSource{Git: &csv1.OperatorGitSource{TagPrefix: "capi/"}}}})
	for _, tt := range []struct {
		sel  TagSelector
		tag  string
		want bool
	}{
		{stack, "aws-base-1-36-v3", true},
		{stack, "aws-base-1-36-v1-alpha.0", true},
		{stack, "aws-base-1-36-v1-alpha-0", true},
		{stack, "aws-base-1-36-latest", false},
		{stack, "aws-base-1-35-v3", false},
		{stack, "aws-base-1-36-v3-" + strings.Repeat("x", 70), false},
		{op, "capi/v1.10.3", true},
		{op, "capi/v1.11.0-rc.1+build.7", true},
		{op, "v1.10.3", false},
		{op, "capi/1.10.3", false},
		{op, "capi/v1.2.3+" + strings.Repeat("b", 200), false},
		{op, "capi/v1.2.3+" + strings.Repeat("b", csv1.MaxVersionLength-7), true},
		{op, "capi/v1.2.3+" + strings.Repeat("b", csv1.MaxVersionLength-6), false},
	} {
		if got := tt.sel.keeps(tt.tag); got != tt.want {
			t.Errorf("%+v keeps %q = %v, want %v", tt.sel, tt.tag, got, tt.want)
		}
	}
	// The List hook's answer is filtered as gitauth filters what it reads; the ignored are counted.
	l, _, _ := countingTagLister(map[string]string{"capi/v1.10.3": "c1", "capi/v1.2.3+" + strings.Repeat("b", 200): "c2", "capi/latest": "c3", "other": "c4"})
	got, err := l.Listing(context.Background(), "team-a", csv1.StackSource{URL: "https://git.example.com/ops.git"}, op, time.Minute, time.Time{})
	if err != nil || !maps.Equal(got.Refs, map[string]string{"capi/v1.10.3": "c1"}) || got.Ignored != 2 {
		t.Errorf("Listing = %+v, %v; want capi/v1.10.3 alone and 2 ignored", got, err)
	}
}

// More tags of the selector's form than a listing keeps fail it with ErrTooManyRefs, naming the
// repository, the limit and what to do.
func TestTagListerLimitErrorSaysWhatToDo(t *testing.T) {
	remote := map[string]string{}
	for i := range maxKeptTags + 1 {
		remote[fmt.Sprintf("aws-base-1-36-v%d", i)] = "c"
	}
	l, _, _ := countingTagLister(remote)
	_, err := l.Tags(context.Background(), "team-a", csv1.StackSource{URL: "https://git.example.com/stacks.git"}, ReleaseTags("aws", "base", "1.36"), time.Minute)
	if !errors.Is(err, gitauth.ErrTooManyRefs) {
		t.Fatalf("got %v, want ErrTooManyRefs", err)
	}
	for _, part := range []string{"https://git.example.com/stacks.git", fmt.Sprintf("more than %d references of the form asked for (refs/tags/aws-base-1-36-...)", maxKeptTags),
		"delete branches and tags it no longer needs", "publish from a repository of its own"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q does not contain %q", err, part)
		}
	}
	if tagListReason(err) != csv1.ReasonTagListTooLarge || tagListReason(errors.New("x")) != csv1.ReasonTagListFailed {
		t.Errorf("tagListReason: %s for the limit, %s for another error", tagListReason(err), tagListReason(errors.New("x")))
	}
}

// At most Listings listings run at once, whoever asks; a caller whose deadline passes while it
// waits gives up with an error naming the bound.
func TestTagListerBoundsConcurrentListings(t *testing.T) {
	var (
		running, most atomic.Int32
		release       = make(chan struct{})
	)
	l := &TagLister{Listings: 2, List: func(ctx context.Context, _ *gitauth.Remote) (map[string]string, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		select {
		case <-release:
			return map[string]string{"v1": "c1"}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}}
	src := func(i int) csv1.StackSource {
		return csv1.StackSource{URL: fmt.Sprintf("https://git.example.com/%d.git", i)}
	}
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := l.Refs(context.Background(), "team-a", src(i), anyVersion, time.Minute); err != nil {
				t.Error(err)
			}
		}()
	}
	for running.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := l.Refs(ctx, "team-b", src(99), anyVersion, time.Minute)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "--tag-listings") || !strings.Contains(err.Error(), "https://git.example.com/99.git") {
		t.Errorf("a caller that cannot get a slot: %v, want its deadline and the bound named", err)
	}
	close(release)
	wg.Wait()
	if most.Load() != 2 {
		t.Errorf("%d listings ran at once, want at most (and, with six waiting, exactly) 2", most.Load())
	}
}

// A listing stopped by a limit is what the repository is: it is answered from the cache for
// maxAge (a hostile repository is read once per interval, not at every reconcile), and Forget
// drops it like a listing.
func TestTagListerCachesLimitErrors(t *testing.T) {
	remote := map[string]string{}
	for i := range maxKeptTags + 1 {
		remote[fmt.Sprintf("v%d", i)] = "c"
	}
	l, clock, listings := countingTagLister(remote)
	src := csv1.StackSource{URL: "https://git.example.com/hostile.git"}
	list := func(want int32) {
		t.Helper()
		if _, err := l.Refs(context.Background(), "team-a", src, anyVersion, time.Minute); !errors.Is(err, gitauth.ErrTooManyRefs) {
			t.Fatalf("got %v, want ErrTooManyRefs", err)
		}
		if listings.Load() != want {
			t.Errorf("%d listings, want %d", listings.Load(), want)
		}
	}
	list(1)
	list(1)
	clock.step(time.Minute)
	list(2)
	l.Forget("team-a", src)
	list(3)
}
