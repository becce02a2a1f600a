package gitea_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/clusterstack-io/clusterstack-operator/bootstrap/gitea"
	opforge "github.com/clusterstack-io/clusterstack-operator/internal/forge"
)

// TestForkPullRequestsAreNotTheOperators: a second user forks the fleet repository and opens a
// pull request from the branch name the operator uses; the operator's forge client, on a real
// Gitea, tells it from the bot's own pull request on the same branch name (head repository and
// author), and says who the token belongs to.
func TestForkPullRequestsAreNotTheOperators(t *testing.T) {
	f := startForge(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	owner, repo := f.Owner(), f.Repo()
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "stack.yaml"), []byte("versions: [v1]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Publish(ctx, owner, repo, src, "Fleet"); err != nil {
		t.Fatal(err)
	}
	const branch = "clusterstack/demo/aws-base-1-36/remaining"

	m, err := f.CreateUser(ctx, "mallory")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Fork(ctx, owner, repo); err != nil {
		t.Fatal(err)
	}
	if _, err := m.ChangeFiles(ctx, repo, gitea.DefaultBranch, branch, "Roll out v2", map[string]string{
		"stack.yaml": "versions: [v2]\n", "mine.yaml": "kind: ConfigMap\n",
	}); err != nil {
		t.Fatal(err)
	}
	fork, err := m.OpenPullRequest(ctx, owner, repo, branch, gitea.DefaultBranch, "roll out v2", "<!-- clusterstack-operator target=x wave=remaining clusters= -->")
	if err != nil {
		t.Fatal(err)
	}
	if fork.Author != "mallory" || fork.Head != branch {
		t.Fatalf("the fork's pull request: %+v", fork)
	}

	// The bot pushes the same branch name to the fleet repository and opens its own.
	policy := opforge.Policy{AllowLoopbackHTTP: true}
	fleet := opforge.Fleet{URL: f.RepoURL(owner, repo), Token: f.BotToken(), TokenFrom: "the bot's token", Policy: policy}
	co, err := opforge.Open(ctx, fleet, gitea.DefaultBranch, branch)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = co.Close() }()
	if err := co.WriteFile("stack.yaml", []byte("versions: [v2]\n")); err != nil {
		t.Fatal(err)
	}
	res, err := co.Commit(ctx, opforge.Author{Name: "bot", Email: "bot@example.com"}, "Propose v2")
	if err != nil || !res.Pushed {
		t.Fatalf("Commit = %+v, %v", res, err)
	}
	// The forge processes a push after accepting it: the pull request needs the branch.
	if err := f.WaitBranch(ctx, owner, repo, branch, res.Commit); err != nil {
		t.Fatal(err)
	}
	r, err := opforge.ParseRepository(f.RepoURL(owner, repo), "", "the bot's token", policy)
	if err != nil {
		t.Fatal(err)
	}
	c, err := opforge.New("gitea", r, f.BotToken(), opforge.Options{Policy: policy})
	if err != nil {
		t.Fatal(err)
	}
	own, err := c.Create(ctx, "roll out v2", "body", branch, gitea.DefaultBranch)
	if err != nil {
		t.Fatal(err)
	}

	me, err := c.Me(ctx)
	if err != nil || me != f.BotUser() {
		t.Fatalf("Me = %q, %v; want %s", me, err, f.BotUser())
	}
	if err := m.ClosePullRequest(ctx, owner, repo, fork.Number); err != nil {
		t.Fatal(err)
	}
	prs, err := c.PullRequests(ctx, "clusterstack/demo/aws-base-1-36/")
	if err != nil {
		t.Fatal(err)
	}
	if len(prs) != 2 {
		t.Fatalf("%d pull requests, want 2: %+v", len(prs), prs)
	}
	for _, p := range prs {
		switch p.Number {
		case fork.Number:
			if p.FromBase || p.Author != "mallory" || p.HeadRepo != "mallory/"+repo || p.Head != branch || p.State != opforge.StateClosed {
				t.Errorf("the fork's pull request as the operator sees it: %+v", p)
			}
		case own.Number:
			if !p.FromBase || p.Author != f.BotUser() || p.HeadRepo != owner+"/"+repo || p.Head != branch || p.State != opforge.StateOpen {
				t.Errorf("the bot's pull request as the operator sees it: %+v", p)
			}
		default:
			t.Errorf("unexpected pull request %+v", p)
		}
	}
}
