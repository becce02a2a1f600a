package gitea_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"

	"github.com/clusterstack-io/clusterstack-operator/bootstrap/gitea"
	"github.com/clusterstack-io/clusterstack-operator/internal/checkout"
	"github.com/clusterstack-io/clusterstack-operator/internal/testenv"
)

// binDir is the checkout's bin/, found from the working directory upwards.
func binDir(t *testing.T) string {
	t.Helper()
	root, err := checkout.Root(".")
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "bin")
}

func startForge(t *testing.T) *gitea.Forge {
	t.Helper()
	bin := binDir(t)
	if missing := gitea.Missing(bin); len(missing) > 0 {
		testenv.SkipOrFail(t, "the forge needs Gitea built by `make tools`: missing in %s: %s", bin, strings.Join(missing, ", "))
	}
	if _, err := exec.LookPath("git"); err != nil {
		testenv.SkipOrFail(t, "the forge needs the git command-line client")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	state := t.TempDir()
	started := time.Now()
	f, err := gitea.Start(ctx, gitea.Options{BinDir: bin, StateDir: state, Logger: testr.New(t)})
	if err != nil {
		t.Fatalf("Start: %v (log: %s)", err, filepath.Join(state, "gitea.log"))
	}
	t.Cleanup(func() {
		if err := f.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	t.Logf("forge started in %s at %s; gitea web RSS %s", time.Since(started).Round(time.Millisecond), f.URL(), rss(f.Process().Pid()))
	return f
}

// rss reads a process's resident set size from /proc.
func rss(pid int) string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return "unknown"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			return strings.Join(strings.Fields(strings.TrimPrefix(l, "VmRSS:")), " ")
		}
	}
	return "unknown"
}

// gitCLI runs git isolated from the user's configuration and returns its output; the error
// includes standard error.
func gitCLI(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=bot", "GIT_AUTHOR_EMAIL=bot@example.invalid",
		"GIT_COMMITTER_NAME=bot", "GIT_COMMITTER_EMAIL=bot@example.invalid",
	)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return out.String(), &gitError{args: args, err: err, stderr: stderr.String()}
	}
	return out.String(), nil
}

type gitError struct {
	args   []string
	err    error
	stderr string
}

func (e *gitError) Error() string {
	return "git " + strings.Join(e.args, " ") + ": " + e.err.Error() + ": " + e.stderr
}

func mustGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := gitCLI(dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
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

// botURL is the clone URL of the repository with the bot's user name and token.
func botURL(f *gitea.Forge) string {
	u, _ := url.Parse(f.RepoURL(f.Owner(), f.Repo()))
	u.User = url.UserPassword(f.BotUser(), f.BotToken())
	return u.String()
}

// botAPI sends a request to the REST API with the bot's token and decodes the JSON answer.
func botAPI(t *testing.T, f *gitea.Forge, method, path string, in, out any, want int) {
	t.Helper()
	var body *bytes.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		body = bytes.NewReader(b)
	} else {
		body = bytes.NewReader(nil)
	}
	req, err := http.NewRequest(method, f.APIURL()+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "token "+f.BotToken())
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var raw bytes.Buffer
	_, _ = raw.ReadFrom(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s as the bot: %s: %s", method, path, resp.Status, raw.String())
	}
	if out != nil {
		if err := json.Unmarshal(raw.Bytes(), out); err != nil {
			t.Fatalf("%s %s: decode: %v", method, path, err)
		}
	}
}

// openPullRequest opens a pull request from head to main as the bot.
func openPullRequest(t *testing.T, f *gitea.Forge, head, title string) int64 {
	t.Helper()
	var pr struct {
		Number int64 `json:"number"`
	}
	botAPI(t, f, http.MethodPost, "/repos/"+f.Owner()+"/"+f.Repo()+"/pulls",
		map[string]string{"head": head, "base": gitea.DefaultBranch, "title": title, "body": "proposed by the bot"}, &pr, http.StatusCreated)
	return pr.Number
}

// botBranch clones main, writes files on a new branch, commits and pushes it as the bot.
func botBranch(t *testing.T, f *gitea.Forge, branch string, files map[string]string) {
	t.Helper()
	work := filepath.Join(t.TempDir(), "clone")
	mustGit(t, "", "clone", "--quiet", "--branch", gitea.DefaultBranch, botURL(f), work)
	mustGit(t, work, "checkout", "--quiet", "-b", branch)
	writeFiles(t, work, files)
	mustGit(t, work, "add", "--all")
	mustGit(t, work, "commit", "--quiet", "-m", "change on "+branch)
	mustGit(t, work, "push", "--quiet", "origin", branch)
}

func TestForgePullRequestFlow(t *testing.T) {
	f := startForge(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	owner, repo := f.Owner(), f.Repo()
	if owner != gitea.DefaultAdminUser || repo != gitea.DefaultRepo || f.BotUser() != gitea.DefaultBotUser {
		t.Fatalf("owner/repo = %s/%s, bot %s", owner, repo, f.BotUser())
	}

	// The bot's token authenticates it.
	var me struct {
		Login string `json:"login"`
	}
	botAPI(t, f, http.MethodGet, "/user", nil, &me, http.StatusOK)
	if me.Login != gitea.DefaultBotUser {
		t.Fatalf("GET /user with the bot's token: login %q, want %q", me.Login, gitea.DefaultBotUser)
	}

	// The administrator creates main, although it is protected.
	src := t.TempDir()
	writeFiles(t, src, map[string]string{"README.md": "fleet\n", "clusters/one.yaml": "version: 1\n"})
	first, err := f.Publish(ctx, owner, repo, src, "Initial fleet")
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	if head, err := f.Head(ctx, owner, repo, gitea.DefaultBranch); err != nil || head != first {
		t.Fatalf("Head(main) = %q, %v; want %q", head, err, first)
	}
	if _, err := f.Head(ctx, owner, repo, "nope"); !gitea.IsNotFound(err) {
		t.Fatalf("Head of a missing branch: %v, want a not-found error", err)
	}

	// The bot pushes a branch...
	botBranch(t, f, "feature", map[string]string{"clusters/one.yaml": "version: 2\n"})
	// ...but not to main.
	work := filepath.Join(t.TempDir(), "clone")
	mustGit(t, "", "clone", "--quiet", botURL(f), work)
	writeFiles(t, work, map[string]string{"clusters/one.yaml": "version: 3\n"})
	mustGit(t, work, "commit", "--quiet", "-am", "direct change")
	_, err = gitCLI(work, "push", "origin", "HEAD:main")
	if err == nil || !strings.Contains(err.Error(), "protected branch") {
		t.Fatalf("the bot's push to main: %v, want a refusal naming the protected branch", err)
	}
	t.Logf("the bot's push to main was refused: %v", err)
	if head, _ := f.Head(ctx, owner, repo, gitea.DefaultBranch); head != first {
		t.Fatalf("main moved to %s after a refused push", head)
	}

	// Other patterns can be protected too, against everyone.
	if err := f.ProtectBranch(ctx, owner, repo, "release-*", nil); err != nil {
		t.Fatalf("ProtectBranch: %v", err)
	}
	if _, err := gitCLI(work, "push", "origin", "HEAD:release-1"); err == nil || !strings.Contains(err.Error(), "protected branch") {
		t.Fatalf("the bot's push to release-1: %v, want a refusal", err)
	}
	// Protecting again updates the rule.
	if err := f.ProtectBranch(ctx, owner, repo, "release-*", []string{f.BotUser()}); err != nil {
		t.Fatalf("ProtectBranch again: %v", err)
	}
	mustGit(t, work, "push", "--quiet", "origin", "HEAD:release-1")

	// The bot opens a pull request; a person reads and merges it.
	n := openPullRequest(t, f, "feature", "Move one to version 2")
	prs, err := f.PullRequests(ctx, owner, repo, "open")
	if err != nil {
		t.Fatalf("PullRequests: %v", err)
	}
	if len(prs) != 1 || prs[0].Number != n || prs[0].Head != "feature" || prs[0].Base != "main" ||
		prs[0].State != "open" || prs[0].Merged || prs[0].Author != gitea.DefaultBotUser || prs[0].Title != "Move one to version 2" ||
		!strings.HasPrefix(prs[0].HTMLURL, f.URL()+"/") {
		t.Fatalf("open pull requests = %+v, want #%d from feature to main by the bot", prs, n)
	}
	diff, err := f.PullRequestDiff(ctx, owner, repo, n)
	if err != nil {
		t.Fatalf("PullRequestDiff: %v", err)
	}
	if !strings.Contains(diff, "clusters/one.yaml") || !strings.Contains(diff, "-version: 1") || !strings.Contains(diff, "+version: 2") {
		t.Fatalf("diff of #%d:\n%s", n, diff)
	}
	if err := f.MergePullRequest(ctx, owner, repo, n); err != nil {
		t.Fatalf("MergePullRequest: %v", err)
	}
	merged, err := f.PullRequest(ctx, owner, repo, n)
	if err != nil {
		t.Fatalf("PullRequest: %v", err)
	}
	if !merged.Merged || merged.State != "closed" || merged.MergeCommit == "" {
		t.Fatalf("merged pull request = %+v", merged)
	}
	head, err := f.Head(ctx, owner, repo, gitea.DefaultBranch)
	if err != nil || head != merged.MergeCommit {
		t.Fatalf("Head(main) = %q, %v; want the merge commit %q", head, err, merged.MergeCommit)
	}
	check := filepath.Join(t.TempDir(), "check")
	mustGit(t, "", "clone", "--quiet", f.RepoURL(owner, repo), check) // anonymous reading
	if b, err := os.ReadFile(filepath.Join(check, "clusters", "one.yaml")); err != nil || string(b) != "version: 2\n" {
		t.Fatalf("main's clusters/one.yaml after the merge = %q, %v", b, err)
	}

	// A pull request closed without merging.
	botBranch(t, f, "rejected", map[string]string{"clusters/two.yaml": "version: 1\n"})
	n2 := openPullRequest(t, f, "rejected", "Add two")
	if err := f.ClosePullRequest(ctx, owner, repo, n2); err != nil {
		t.Fatalf("ClosePullRequest: %v", err)
	}
	closed, err := f.PullRequests(ctx, owner, repo, "closed")
	if err != nil {
		t.Fatalf("PullRequests closed: %v", err)
	}
	var found bool
	for _, p := range closed {
		if p.Number == n2 {
			found = true
			if p.State != "closed" || p.Merged {
				t.Fatalf("closed pull request = %+v, want closed and not merged", p)
			}
		}
	}
	if !found || len(closed) != 2 {
		t.Fatalf("closed pull requests = %+v, want #%d and #%d", closed, n, n2)
	}
	if open, err := f.PullRequests(ctx, owner, repo, ""); err != nil || len(open) != 0 {
		t.Fatalf("open pull requests = %+v, %v; want none", open, err)
	}
	if h, _ := f.Head(ctx, owner, repo, gitea.DefaultBranch); h != head {
		t.Fatalf("main moved to %s when a pull request was closed", h)
	}

	// The administrator still pushes to the protected, existing main.
	src2 := t.TempDir()
	writeFiles(t, src2, map[string]string{"clusters/one.yaml": "version: 4\n"})
	second, err := f.Publish(ctx, owner, repo, src2, "Version 4")
	if err != nil {
		t.Fatalf("second Publish: %v", err)
	}
	if h, _ := f.Head(ctx, owner, repo, gitea.DefaultBranch); h != second || second == head {
		t.Fatalf("Head(main) = %s after Publish returned %s (before: %s)", h, second, head)
	}
	mustGit(t, check, "pull", "--quiet", "--ff-only")
	if _, err := os.Stat(filepath.Join(check, "README.md")); !os.IsNotExist(err) {
		t.Fatalf("README.md still on main after a Publish without it: %v", err)
	}
	// Pushing to a repository that does not exist creates it (push-to-create).
	created, err := f.Publish(ctx, owner, "pushed", src2, "Push to create")
	if err != nil {
		t.Fatalf("Publish to a new repository: %v", err)
	}
	if h, err := f.Head(ctx, owner, "pushed", gitea.DefaultBranch); err != nil || h != created {
		t.Fatalf("Head of the pushed-to-create repository = %q, %v; want %q", h, err, created)
	}
	t.Logf("gitea web RSS after the flow: %s", rss(f.Process().Pid()))
}

func TestMissing(t *testing.T) {
	dir := t.TempDir()
	if got := gitea.Missing(dir); strings.Join(got, ",") != "gitea,gitea-assets" {
		t.Fatalf("Missing(empty dir) = %v", got)
	}
	writeFiles(t, dir, map[string]string{"gitea": "", "gitea-assets/options/x": "", "gitea-assets/templates/x": ""})
	if got := gitea.Missing(dir); len(got) != 0 {
		t.Fatalf("Missing = %v, want none", got)
	}
	if _, err := gitea.Start(context.Background(), gitea.Options{BinDir: t.TempDir(), StateDir: t.TempDir()}); err == nil ||
		!strings.Contains(err.Error(), "make tools") {
		t.Fatalf("Start without Gitea: %v, want an error naming `make tools`", err)
	}
}
