package gitserver

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// gitCLI runs the git client as a user of the server would, isolated from the machine's
// Git configuration.
func gitCLI(t *testing.T, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_TERMINAL_PROMPT=0")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String()
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// listFiles returns the regular files under dir (without .git) with their content.
func listFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			got[filepath.ToSlash(rel)] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func equalFiles(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func startServer(t *testing.T) *Server {
	t.Helper()
	var log bytes.Buffer
	s, err := Start(t.TempDir(), "127.0.0.1:0", WithLogOutput(&log))
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if t.Failed() {
			t.Logf("server log:\n%s", log.String())
		}
	})
	return s
}

func TestPublishAndClone(t *testing.T) {
	type publish struct {
		files map[string]string // content of srcDir
		path  string
		tag   string
	}
	tests := []struct {
		name     string
		steps    []publish
		cloneRef string            // branch or tag to clone
		want     map[string]string // files in the clone
	}{
		{
			name:     "root of an empty repository, tagged",
			steps:    []publish{{files: map[string]string{"a.txt": "A", "d/b.txt": "B"}, path: "", tag: "v1"}},
			cloneRef: "v1",
			want:     map[string]string{"a.txt": "A", "d/b.txt": "B"},
		},
		{
			name:     "subdirectory of an empty repository, branch main",
			steps:    []publish{{files: map[string]string{"x.yaml": "x: 1"}, path: "aws/base/1-36", tag: "aws-base-1-36-v1"}},
			cloneRef: "main",
			want:     map[string]string{"aws/base/1-36/x.yaml": "x: 1"},
		},
		{
			name: "second publish replaces the path and keeps siblings",
			steps: []publish{
				{files: map[string]string{"old.txt": "old"}, path: "stacks/one", tag: "one-v1"},
				{files: map[string]string{"keep.txt": "keep"}, path: "stacks/two", tag: "two-v1"},
				{files: map[string]string{"new.txt": "new"}, path: "stacks/one", tag: "one-v2"},
			},
			cloneRef: "one-v2",
			want:     map[string]string{"stacks/one/new.txt": "new", "stacks/two/keep.txt": "keep"},
		},
		{
			name: "older tag still points to the older content",
			steps: []publish{
				{files: map[string]string{"f": "1"}, path: "p", tag: "v1"},
				{files: map[string]string{"f": "2"}, path: "p", tag: "v2"},
			},
			cloneRef: "v1",
			want:     map[string]string{"p/f": "1"},
		},
		{
			name: "publishing unchanged content tags the same commit",
			steps: []publish{
				{files: map[string]string{"f": "1"}, path: "p", tag: "v1"},
				{files: map[string]string{"f": "1"}, path: "p", tag: "v1-again"},
			},
			cloneRef: "v1-again",
			want:     map[string]string{"p/f": "1"},
		},
		{
			name: "root publish replaces everything",
			steps: []publish{
				{files: map[string]string{"a": "a", "sub/b": "b"}, path: ".", tag: ""},
				{files: map[string]string{"c": "c"}, path: "/", tag: "v3"},
			},
			cloneRef: "main",
			want:     map[string]string{"c": "c"},
		},
	}
	// Each case twice: a Publish per step, and every step in one PublishAll (one push).
	for _, tt := range tests {
		for _, all := range []bool{false, true} {
			name := tt.name
			if all {
				name += ", all at once"
			}
			t.Run(name, func(t *testing.T) {
				s := startServer(t)
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				url, err := s.CreateRepo("stacks")
				if err != nil {
					t.Fatalf("CreateRepo: %v", err)
				}
				if url != s.URL()+"/stacks.git" {
					t.Fatalf("CreateRepo URL = %q, want %q", url, s.URL()+"/stacks.git")
				}
				var pubs []Publication
				for i, st := range tt.steps {
					src := t.TempDir()
					writeFiles(t, src, st.files)
					if all {
						pubs = append(pubs, Publication{SrcDir: src, PathInRepo: st.path, Tag: st.tag})
					} else if err := s.Publish(ctx, "stacks", src, st.path, st.tag); err != nil {
						t.Fatalf("Publish step %d: %v", i, err)
					}
				}
				if all {
					if err := s.PublishAll(ctx, "stacks", pubs...); err != nil {
						t.Fatalf("PublishAll: %v", err)
					}
				}
				clone := filepath.Join(t.TempDir(), "clone")
				gitCLI(t, "", "clone", "--quiet", "--branch", tt.cloneRef, url, clone)
				if got := listFiles(t, clone); !equalFiles(got, tt.want) {
					t.Fatalf("clone of %s has files %v, want %v", tt.cloneRef, got, tt.want)
				}
			})
		}
	}
}

func TestHeadPointsToMainAndTagsAreListed(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	url, err := s.CreateRepo("org/repo")
	if err != nil {
		t.Fatalf("CreateRepo: %v", err)
	}
	// CreateRepo is idempotent.
	if again, err := s.CreateRepo("org/repo"); err != nil || again != url {
		t.Fatalf("CreateRepo again = %q, %v; want %q, nil", again, err, url)
	}
	src := t.TempDir()
	writeFiles(t, src, map[string]string{"README": "hi"})
	if err := s.Publish(ctx, "org/repo", src, "", "v1.0.0"); err != nil {
		t.Fatalf("Publish: %v", err)
	}

	out := gitCLI(t, "", "ls-remote", "--symref", url, "HEAD")
	if !strings.Contains(out, "ref: refs/heads/main\tHEAD") {
		t.Fatalf("HEAD of %s does not point to main:\n%s", url, out)
	}
	tags := gitCLI(t, "", "ls-remote", "--tags", url)
	if !strings.Contains(tags, "refs/tags/v1.0.0") {
		t.Fatalf("tag v1.0.0 not listed:\n%s", tags)
	}
	head, err := s.Head(ctx, "org/repo", "main")
	if err != nil {
		t.Fatalf("Head main: %v", err)
	}
	tagged, err := s.Head(ctx, "org/repo", "v1.0.0")
	if err != nil {
		t.Fatalf("Head v1.0.0: %v", err)
	}
	if head != tagged || len(head) != 40 {
		t.Fatalf("main = %q, v1.0.0 = %q; want the same commit", head, tagged)
	}

	if err := s.DeleteTag(ctx, "org/repo", "v1.0.0"); err != nil {
		t.Fatalf("DeleteTag: %v", err)
	}
	if err := s.DeleteTag(ctx, "org/repo", "v1.0.0"); err != nil {
		t.Fatalf("DeleteTag of a missing tag: %v", err)
	}
	if tags := gitCLI(t, "", "ls-remote", "--tags", url); strings.Contains(tags, "v1.0.0") {
		t.Fatalf("tag v1.0.0 still listed after DeleteTag:\n%s", tags)
	}
}

func TestPushOverHTTP(t *testing.T) {
	s := startServer(t)
	url, err := s.CreateRepo("pushed")
	if err != nil {
		t.Fatalf("CreateRepo: %v", err)
	}
	work := t.TempDir()
	gitCLI(t, work, "init", "--quiet", "-b", "main")
	writeFiles(t, work, map[string]string{"f.txt": "pushed"})
	gitCLI(t, work, "add", ".")
	gitCLI(t, work, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "--quiet", "-m", "c1")
	gitCLI(t, work, "push", "--quiet", url, "main")

	// Both the URL with and the one without the .git suffix serve the repository.
	for _, u := range []string{url, s.URL() + "/pushed"} {
		clone := filepath.Join(t.TempDir(), "clone")
		gitCLI(t, "", "clone", "--quiet", u, clone)
		if got := listFiles(t, clone); !equalFiles(got, map[string]string{"f.txt": "pushed"}) {
			t.Fatalf("clone of %s has %v", u, got)
		}
	}
	if out := gitCLI(t, "", "ls-remote", s.URL()+"/pushed", "main"); !strings.Contains(out, "refs/heads/main") {
		t.Fatalf("ls-remote without .git suffix: %q", out)
	}
}

func TestInvalidArguments(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	for _, name := range []string{"", "../x", "a/../b", "x.git", "-x", "a//b"} {
		if _, err := s.CreateRepo(name); err == nil {
			t.Errorf("CreateRepo(%q) succeeded, want error", name)
		}
	}
	if _, err := s.CreateRepo("r"); err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	cases := []struct {
		name, repo, src, path, tag string
	}{
		{"missing repository", "nope", src, "", "v1"},
		{"path escapes", "r", src, "../x", "v1"},
		{"path into .git", "r", src, ".git/hooks", "v1"},
		{"invalid tag", "r", src, "", "bad tag"},
		{"missing source", "r", filepath.Join(src, "missing"), "", "v1"},
	}
	for _, c := range cases {
		if err := s.Publish(ctx, c.repo, c.src, c.path, c.tag); err == nil {
			t.Errorf("%s: Publish succeeded, want error", c.name)
		}
	}
	// One bad publication among good ones: nothing is pushed. No publication: nothing either.
	good := t.TempDir()
	if err := os.WriteFile(filepath.Join(good, "f"), []byte("1"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.PublishAll(ctx, "r", Publication{SrcDir: good, Tag: "v1"}, Publication{SrcDir: src, Tag: "bad tag"}); err == nil {
		t.Error("PublishAll with an invalid tag succeeded, want error")
	}
	if err := s.PublishAll(ctx, "r"); err != nil {
		t.Errorf("PublishAll of nothing: %v", err)
	}
	if _, err := s.Head(ctx, "r", "main"); err == nil {
		t.Error("main exists after PublishAll failed and PublishAll of nothing: something was pushed")
	}
}

func TestStopAndRestartOnTheSameAddress(t *testing.T) {
	s := startServer(t)
	url, err := s.CreateRepo("kept")
	if err != nil {
		t.Fatalf("CreateRepo: %v", err)
	}
	src := t.TempDir()
	writeFiles(t, src, map[string]string{"f.txt": "v1"})
	if err := s.Publish(context.Background(), "kept", src, "", "v1"); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	addr := strings.TrimPrefix(s.URL(), "http://")

	if err := s.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if s.Serving() {
		t.Fatal("Serving after Stop")
	}
	if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		_ = conn.Close()
		t.Fatalf("connection to %s accepted while stopped", addr)
	}
	if err := s.Publish(context.Background(), "kept", src, "", "v2"); err == nil {
		t.Fatal("Publish succeeded while stopped")
	}

	if err := s.Restart(); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if err := s.Restart(); err != nil {
		t.Fatalf("second Restart: %v", err)
	}
	if !s.Serving() || s.URL() != "http://"+addr || s.RepoURL("kept") != url {
		t.Fatalf("after Restart: serving %v, URL %s, RepoURL %s; want http://%s and %s", s.Serving(), s.URL(), s.RepoURL("kept"), addr, url)
	}
	clone := filepath.Join(t.TempDir(), "clone")
	gitCLI(t, "", "clone", "--quiet", "--branch", "v1", url, clone)
	if got := listFiles(t, clone); !equalFiles(got, map[string]string{"f.txt": "v1"}) {
		t.Fatalf("clone after Restart has %v", got)
	}

	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Restart(); err == nil {
		t.Fatal("Restart after Close succeeded")
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop after Close: %v", err)
	}
}
