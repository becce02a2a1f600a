package forge

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitCLI runs the git command line in dir (for the test's "person").
func gitCLI(t *testing.T, dir string, args ...string) {
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
}

// remote makes a bare repository with one commit on main and returns its file URL.
func remote(t *testing.T) (url, work string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git command line")
	}
	root := t.TempDir()
	bare := filepath.Join(root, "fleet.git")
	gitCLI(t, root, "init", "--quiet", "--bare", "-b", "main", bare)
	work = filepath.Join(root, "work")
	gitCLI(t, root, "clone", "--quiet", bare, work)
	gitCLI(t, work, "checkout", "--quiet", "-b", "main")
	if err := os.WriteFile(filepath.Join(work, "stack.yaml"), []byte("versions: [v1]  # keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitCLI(t, work, "add", ".")
	gitCLI(t, work, "commit", "--quiet", "-m", "initial")
	gitCLI(t, work, "push", "--quiet", "origin", "main")
	return "file://" + bare, work
}

var me = Author{Name: "bot", Email: "bot@example.com"}

func propose(t *testing.T, url, content string) CommitResult {
	t.Helper()
	co, err := Open(context.Background(), url, "", "main", "proposals/canary")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = co.Close() }()
	if foreign, err := co.ForeignCommit(me); err != nil || foreign != "" {
		t.Fatalf("ForeignCommit = %q, %v", foreign, err)
	}
	if err := os.WriteFile(filepath.Join(co.Dir, "stack.yaml"), []byte(content), 0o644); err != nil {
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

	// The base moves: the proposal is rebuilt on the new base.
	gitCLI(t, work, "pull", "--quiet", "origin", "main")
	if err := os.WriteFile(filepath.Join(work, "other.yaml"), []byte("x: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitCLI(t, work, "add", ".")
	gitCLI(t, work, "commit", "--quiet", "-m", "unrelated")
	gitCLI(t, work, "push", "--quiet", "origin", "main")
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
	co, err := Open(context.Background(), url, "", "main", "proposals/canary")
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
		if _, err := Open(context.Background(), url, "", "main", branch); !errors.Is(err, ErrProtectedTarget) {
			t.Errorf("Open(branch %q) = %v, want ErrProtectedTarget", branch, err)
		}
	}
	// The remote's default branch, even when Flux follows another one.
	if _, err := Open(context.Background(), url, "", "release", "main"); !errors.Is(err, ErrProtectedTarget) {
		t.Errorf("Open(branch main, base release) = %v, want ErrProtectedTarget", err)
	}
}

func TestParseRepository(t *testing.T) {
	for _, tc := range []struct{ url, api, base, owner, name string }{
		{"http://127.0.0.1:3000/fleet-admin/fleet.git", "", "http://127.0.0.1:3000", "fleet-admin", "fleet"},
		{"https://github.com/org/fleet", "", "https://github.com", "org", "fleet"},
		{"https://git.example.com/gitea/team/fleet.git", "https://git.example.com/gitea", "https://git.example.com/gitea", "team", "fleet"},
	} {
		r, err := ParseRepository(tc.url, tc.api)
		if err != nil || r.APIURL != tc.base || r.Owner != tc.owner || r.Name != tc.name {
			t.Errorf("ParseRepository(%s, %s) = %+v, %v", tc.url, tc.api, r, err)
		}
	}
	for _, bad := range []string{"ssh://git@host/org/fleet.git", "https://host/only-one", "https://user:secret@host/a/b/c"} {
		if _, err := ParseRepository(bad, ""); err == nil || strings.Contains(err.Error(), "secret") {
			t.Errorf("ParseRepository(%s) = %v, want an error without credentials", bad, err)
		}
	}
}
