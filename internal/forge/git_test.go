package forge

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/clusterstack-io/clusterstack-operator/internal/testenv"
)

// gitCLI runs the git command line in dir (for the test's "person").
func gitCLI(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_AUTHOR_NAME=Person", "GIT_AUTHOR_EMAIL=person@example.com",
		"GIT_COMMITTER_NAME=Person", "GIT_COMMITTER_EMAIL=person@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v: %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// gitServer serves bare repositories under root over loopback HTTP with git http-backend,
// pushes included, and records the requests it gets.
type gitServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []*http.Request
}

func (s *gitServer) seen() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Request(nil), s.requests...)
}

func serveGit(t *testing.T, root string) *gitServer {
	t.Helper()
	exe := filepath.Join(gitCLI(t, root, "--exec-path"), "git-http-backend")
	backend := &cgi.Handler{Path: exe, Dir: root, Stderr: io.Discard,
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "HOME=" + root, "REMOTE_USER=bot"}}
	s := &gitServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, r.Clone(context.Background()))
		s.mu.Unlock()
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	t.Cleanup(s.CloseClientConnections) // first: lets go of the requests a handler holds
	return s
}

// remote makes a bare repository with one commit on main, served over loopback HTTP, and
// returns its URL and a person's clone of it.
func remote(t *testing.T) (url, work string) {
	t.Helper()
	url, work, _ = remoteServer(t)
	return url, work
}

func remoteServer(t *testing.T) (url, work string, srv *gitServer) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		testenv.SkipOrFail(t, "no git command line")
	}
	root := t.TempDir()
	bare := filepath.Join(root, "fleet.git")
	gitCLI(t, root, "init", "--quiet", "--bare", "-b", "main", bare)
	gitCLI(t, bare, "config", "http.receivepack", "true")
	work = filepath.Join(root, "work")
	gitCLI(t, root, "clone", "--quiet", bare, work)
	gitCLI(t, work, "checkout", "--quiet", "-b", "main")
	if err := os.WriteFile(filepath.Join(work, "stack.yaml"), []byte("versions: [v1]  # keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitCLI(t, work, "add", ".")
	gitCLI(t, work, "commit", "--quiet", "-m", "initial")
	gitCLI(t, work, "push", "--quiet", "origin", "main")
	srv = serveGit(t, root)
	return srv.URL + "/fleet.git", work, srv
}

// commitAll commits everything in work and pushes main.
func commitAll(t *testing.T, work, message string) {
	t.Helper()
	gitCLI(t, work, "add", "-A")
	gitCLI(t, work, "commit", "--quiet", "-m", message)
	gitCLI(t, work, "push", "--quiet", "origin", "main")
}

var me = Author{Name: "bot", Email: "bot@example.com"}

// fleet is the test's fleet repository at url: loopback http allowed.
func fleet(url string) Fleet {
	return Fleet{URL: url, Token: "s3cr3t-token", TokenFrom: "Secret ns/bot", Policy: Policy{AllowLoopbackHTTP: true}}
}

func propose(t *testing.T, url, content string) CommitResult {
	t.Helper()
	co, err := Open(context.Background(), fleet(url), "main", "proposals/canary")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = co.Close() }()
	if foreign, err := co.ForeignCommit(me); err != nil || foreign != "" {
		t.Fatalf("ForeignCommit = %q, %v", foreign, err)
	}
	if err := co.WriteFile("stack.yaml", []byte(content)); err != nil {
		t.Fatal(err)
	}
	res, err := co.Commit(context.Background(), me, "Propose")
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestCommitIsIdempotentAndStopsAtForeignCommits(t *testing.T) {
	url, work := remote(t)

	if res := propose(t, url, "versions: [v1]  # keep\n"); res.Changed || res.Pushed {
		t.Fatalf("no change: %+v", res)
	}
	first := propose(t, url, "versions: [v2]  # keep\n")
	if !first.Changed || !first.Pushed {
		t.Fatalf("first proposal: %+v", first)
	}
	if again := propose(t, url, "versions: [v2]  # keep\n"); again.Pushed || again.Commit != first.Commit {
		t.Fatalf("same proposal again must not push: %+v (first %s)", again, first.Commit)
	}
	superseded := propose(t, url, "versions: [v3]  # keep\n")
	if !superseded.Pushed || superseded.Commit == first.Commit {
		t.Fatalf("a newer proposal replaces the branch: %+v", superseded)
	}

	// The base moves (several commits): the proposal, on an older base, is still the operator's
	// and is rebuilt on the new base.
	gitCLI(t, work, "pull", "--quiet", "origin", "main")
	for i := range 3 {
		if err := os.WriteFile(filepath.Join(work, "other.yaml"), []byte{'x', ':', ' ', byte('1' + i), '\n'}, 0o644); err != nil {
			t.Fatal(err)
		}
		commitAll(t, work, "unrelated")
	}
	if rebased := propose(t, url, "versions: [v3]  # keep\n"); !rebased.Pushed {
		t.Fatalf("after the base moved the proposal is pushed again: %+v", rebased)
	}

	// A person commits on the proposal branch: the operator must not push over it.
	gitCLI(t, work, "fetch", "--quiet", "origin")
	gitCLI(t, work, "checkout", "--quiet", "-b", "review", "origin/proposals/canary")
	if err := os.WriteFile(filepath.Join(work, "NOTES.md"), []byte("reviewed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitCLI(t, work, "add", ".")
	gitCLI(t, work, "commit", "--quiet", "-m", "review")
	gitCLI(t, work, "push", "--quiet", "origin", "review:proposals/canary")
	co, err := Open(context.Background(), fleet(url), "main", "proposals/canary")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = co.Close() }()
	foreign, err := co.ForeignCommit(me)
	if err != nil || !strings.Contains(foreign, "Person <person@example.com>") {
		t.Fatalf("ForeignCommit = %q, %v; want the person's commit", foreign, err)
	}
}

func TestOpenRefusesTheBaseBranch(t *testing.T) {
	url, _ := remote(t)
	for _, branch := range []string{"main", ""} {
		if _, err := Open(context.Background(), fleet(url), "main", branch); !errors.Is(err, ErrProtectedTarget) {
			t.Errorf("Open(branch %q) = %v, want ErrProtectedTarget", branch, err)
		}
	}
	// The remote's default branch, even when Flux follows another one.
	if _, err := Open(context.Background(), fleet(url), "release", "main"); !errors.Is(err, ErrProtectedTarget) {
		t.Errorf("Open(branch main, base release) = %v, want ErrProtectedTarget", err)
	}
}

// The checkout holds the base branch's head only, whatever its history, and the proposal
// branch's head only.
func TestCheckoutIsShallow(t *testing.T) {
	url, work := remote(t)
	for i := range 20 {
		if err := os.WriteFile(filepath.Join(work, "history.yaml"), []byte{'n', ':', ' ', byte('a' + i), '\n'}, 0o644); err != nil {
			t.Fatal(err)
		}
		commitAll(t, work, "history")
	}
	propose(t, url, "versions: [v2]  # keep\n")
	co, err := Open(context.Background(), fleet(url), "main", "proposals/canary")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = co.Close() }()
	commits := 0
	iter, err := co.repo.CommitObjects()
	if err != nil {
		t.Fatal(err)
	}
	_ = iter.ForEach(func(*object.Commit) error { commits++; return nil })
	if commits != 2 {
		t.Errorf("the checkout holds %d commits, want 2 (the heads of main and of the proposal branch)", commits)
	}
}

func TestTokenNeverGoesOverPlainHTTP(t *testing.T) {
	url, _, srv := remoteServer(t)
	f := fleet(url)
	f.Policy.AllowLoopbackHTTP = false
	_, err := Open(context.Background(), f, "main", "proposals/canary")
	if err == nil || !strings.Contains(err.Error(), "refusing to send credentials (from Secret ns/bot) over plain http to "+url) {
		t.Fatalf("Open over plain http = %v, want the refusal", err)
	}
	if n := len(srv.seen()); n != 0 {
		t.Errorf("the server got %d requests, want none", n)
	}
	if _, err := New("gitea", Repository{APIURL: srv.URL, Owner: "o", Name: "r"}, "s3cr3t-token", Options{}); err == nil ||
		!strings.Contains(err.Error(), "over plain http") {
		t.Errorf("New with a plain http API = %v, want the refusal", err)
	}
	if n := len(srv.seen()); n != 0 {
		t.Errorf("the server got %d requests, want none", n)
	}
	// Loopback when allowed, and the token goes as basic auth.
	f.Policy.AllowLoopbackHTTP = true
	if _, err := f.Heads(context.Background(), "main", "proposals/canary"); err != nil {
		t.Fatal(err)
	}
	if _, pw, ok := srv.seen()[0].BasicAuth(); !ok || pw != "s3cr3t-token" {
		t.Errorf("the token was not sent as basic auth")
	}
}

// randomFile writes n random (incompressible) bytes.
func randomFile(t *testing.T, name string, n int) {
	t.Helper()
	b := make([]byte, n)
	_, _ = rand.Read(b)
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCheckoutSizeLimits(t *testing.T) {
	t.Run("fetched bytes", func(t *testing.T) {
		url, work := remote(t)
		randomFile(t, filepath.Join(work, "blob.bin"), 2<<20)
		commitAll(t, work, "big")
		f := fleet(url)
		f.Limits.MaxBytes = 1 << 20
		_, err := Open(context.Background(), f, "main", "proposals/canary")
		if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "clone branch main of "+url+": more than 1048576 bytes (the checkout size limit") {
			t.Fatalf("Open = %v, want the size limit", err)
		}
	})
	t.Run("checked-out bytes", func(t *testing.T) {
		url, work := remote(t)
		// 32 MiB of zeros compress to a few tens of kilobytes.
		if err := os.WriteFile(filepath.Join(work, "zeros.yaml"), make([]byte, 32<<20), 0o644); err != nil {
			t.Fatal(err)
		}
		commitAll(t, work, "bomb")
		f := fleet(url)
		f.Limits.MaxBytes = 8 << 20
		_, err := Open(context.Background(), f, "main", "proposals/canary")
		if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "the files of branch main") {
			t.Fatalf("Open = %v, want the size limit on the files", err)
		}
	})
}

// tarpit accepts requests and trickles the start of a smart HTTP answer a byte at a time,
// then holds the connection, for ever (until the client leaves).
func tarpit(t *testing.T, pass http.Handler, hang func(*http.Request) bool) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if pass != nil && !hang(r) {
			pass.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
		w.WriteHeader(http.StatusOK)
		for _, b := range []byte("001e# service=git-upload-pack\n") {
			if _, err := w.Write([]byte{b}); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
		<-r.Context().Done()
	}))
	t.Cleanup(s.Close)
	t.Cleanup(s.CloseClientConnections) // first: lets go of the requests a handler holds
	return s
}

func TestGitDeadlines(t *testing.T) {
	t.Run("list", func(t *testing.T) {
		s := tarpit(t, nil, nil)
		f := fleet(s.URL + "/fleet.git")
		f.Limits.GitTimeout = 300 * time.Millisecond
		err := within(t, "Heads", func() error { _, err := f.Heads(context.Background(), "main", "proposals/canary"); return err })
		if !errors.Is(err, ErrGitDeadline) || !strings.Contains(err.Error(), "no answer within 300ms (the Git operation deadline, --git-operation-timeout)") {
			t.Fatalf("Heads = %v, want the deadline", err)
		}
	})
	t.Run("clone", func(t *testing.T) {
		url, _, srv := remoteServer(t)
		s := tarpit(t, srv.Config.Handler, func(r *http.Request) bool { return r.Method == http.MethodPost })
		f := fleet(strings.Replace(url, srv.URL, s.URL, 1))
		f.Limits.GitTimeout = 500 * time.Millisecond
		err := within(t, "Open", func() error { _, err := Open(context.Background(), f, "main", "proposals/canary"); return err })
		if !errors.Is(err, ErrGitDeadline) || !strings.Contains(err.Error(), "clone branch main of") {
			t.Fatalf("Open = %v, want the deadline of the clone", err)
		}
	})
}

// checkoutWithLinks checks out a remote whose main branch holds the symbolic links (name to
// target) besides stack.yaml; the checkout is closed when the test ends.
func checkoutWithLinks(t *testing.T, links map[string]string) *Checkout {
	t.Helper()
	url, work := remote(t)
	for link, target := range links {
		if err := os.Symlink(target, filepath.Join(work, link)); err != nil {
			t.Fatal(err)
		}
	}
	commitAll(t, work, "links")
	co, err := Open(context.Background(), fleet(url), "main", "proposals/canary")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = co.Close() })
	return co
}

// Files are read and written in the checkout without following symbolic links, wherever they
// point.
func TestCheckoutFilesRefuseSymlinks(t *testing.T) {
	co := checkoutWithLinks(t, map[string]string{"passwd.yaml": "/etc/passwd", "loop.yaml": "loop.yaml", "inside.yaml": "stack.yaml", "etc": "/etc"})
	for _, name := range []string{"passwd.yaml", "loop.yaml", "inside.yaml", "etc/passwd", "../fleet.git/config", "/etc/passwd"} {
		if b, err := co.ReadFile(name); err == nil {
			t.Errorf("ReadFile(%s) read %d bytes, want a refusal", name, len(b))
		}
		if err := co.WriteFile(name, []byte("x")); err == nil {
			t.Errorf("WriteFile(%s) succeeded, want a refusal", name)
		}
	}
	if b, err := co.ReadFile("stack.yaml"); err != nil || string(b) != "versions: [v1]  # keep\n" {
		t.Errorf("ReadFile(stack.yaml) = %q, %v", b, err)
	}
}

// PutFile creates a file and its directories, or replaces one; RemoveFile removes one. Both
// refuse paths through symbolic links, wherever they point, and what the checkout limit refuses.
func TestPutAndRemoveFiles(t *testing.T) {
	co := checkoutWithLinks(t, map[string]string{"out": "/tmp", "in": "."})
	const diff = ".clusterstack/diffs/team-a/stack/canary.md"
	if err := co.PutFile(diff, []byte("first\n")); err != nil {
		t.Fatal(err)
	}
	if err := co.PutFile(diff, []byte("second\n")); err != nil {
		t.Fatal(err)
	}
	if b, err := co.ReadFile(diff); err != nil || string(b) != "second\n" {
		t.Fatalf("ReadFile(%s) = %q, %v", diff, b, err)
	}
	for _, name := range []string{"out/x.md", "in/x.md", "in/new/x.md", "../x.md", "/tmp/x.md", "stack.yaml/x.md"} {
		if err := co.PutFile(name, []byte("x")); err == nil {
			t.Errorf("PutFile(%s) succeeded, want a refusal", name)
		}
		if err := co.RemoveFile(name); err == nil {
			t.Errorf("RemoveFile(%s) succeeded, want a refusal", name)
		}
	}
	if _, err := os.Lstat(filepath.Join("/tmp", "x.md")); err == nil {
		t.Error("a file was written through the link to /tmp")
	}
	if err := co.PutFile("big.md", make([]byte, co.lim.MaxBytes+1)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("PutFile of more than the limit: %v, want ErrTooLarge", err)
	}
	if err := co.RemoveFile(diff); err != nil {
		t.Fatal(err)
	}
	if err := co.RemoveFile(diff); err != nil {
		t.Fatalf("removing a file that is gone: %v, want none", err)
	}
	res, err := co.Commit(context.Background(), me, "Propose")
	if err != nil || res.Changed {
		t.Fatalf("Commit after the file was put and removed again = %+v, %v; want no change", res, err)
	}
}
