// Package gittest builds small Git repositories with the git command and serves them over
// loopback HTTP with git http-backend and over loopback SSH with git-upload-pack, for tests that
// list tags without reaching the network; and it serves hostile reference advertisements (tens
// of MiB of long tag names) over both, for tests of the listing's bounds.
package gittest

import (
	"io"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Repo is a bare repository on disk with some tags.
type Repo struct {
	// Root is the directory holding the bare repository (the project root to serve).
	Root string
	// Name is the repository's directory name under Root, e.g. "stack.git".
	Name string
	// Commits maps each tag to the commit it finally points to.
	Commits map[string]string
	// Objects maps each tag to the object its ref names: the tag object for annotated tags.
	Objects map[string]string
}

// Git runs git in dir and returns its trimmed output; it fails the test on error.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_AUTHOR_NAME=dev", "GIT_AUTHOR_EMAIL=dev@clusterstack.io",
		"GIT_COMMITTER_NAME=dev", "GIT_COMMITTER_EMAIL=dev@clusterstack.io",
		"GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// NewRepo creates a bare repository "stack.git" under a temporary directory with three commits
// and the tags: "v1" (lightweight, first commit), "v2" (annotated, second commit), "v3"
// (annotated, third commit) and "v3-nested" (an annotated tag of the annotated tag v3). It skips
// the test when git is not installed.
func NewRepo(t testing.TB) *Repo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	root := t.TempDir()
	work := filepath.Join(root, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	Git(t, work, "init", "-q", "-b", "main")
	commits := make([]string, 3)
	for i := range commits {
		if err := os.WriteFile(filepath.Join(work, "file"), []byte{byte('a' + i)}, 0o644); err != nil {
			t.Fatal(err)
		}
		Git(t, work, "add", "file")
		Git(t, work, "commit", "-q", "-m", "commit")
		commits[i] = Git(t, work, "rev-parse", "HEAD")
	}
	Git(t, work, "tag", "v1", commits[0])
	Git(t, work, "tag", "-a", "-m", "v2", "v2", commits[1])
	Git(t, work, "tag", "-a", "-m", "v3", "v3", commits[2])
	Git(t, work, "tag", "-a", "-m", "nested", "v3-nested", "v3")
	Git(t, root, "clone", "-q", "--bare", work, "stack.git")
	r := &Repo{Root: root, Name: "stack.git", Commits: map[string]string{}, Objects: map[string]string{}}
	for _, tag := range []string{"v1", "v2", "v3", "v3-nested"} {
		r.Commits[tag] = Git(t, work, "rev-parse", tag+"^{commit}")
		r.Objects[tag] = Git(t, work, "rev-parse", tag)
	}
	return r
}

// NewEmptyRepo creates an empty bare repository "empty.git" under root.
func NewEmptyRepo(t testing.TB, root string) string {
	t.Helper()
	Git(t, root, "init", "-q", "--bare", "empty.git")
	return "empty.git"
}

// Handler serves the repositories under root with git http-backend (smart HTTP, read only).
func Handler(t testing.TB, root string) http.Handler {
	t.Helper()
	exe := filepath.Join(Git(t, root, "--exec-path"), "git-http-backend")
	return &cgi.Handler{
		Path: exe,
		Dir:  root,
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "HOME=" + root},
		// git http-backend complains on stderr about missing repositories, which tests request.
		Stderr: io.Discard,
	}
}
