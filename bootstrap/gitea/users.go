package gitea

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"time"
)

// User is an ordinary user of the forge besides the bot: a person, or someone who forks the
// fleet repository and opens pull requests from the fork.
type User struct {
	f        *Forge
	name     string
	password string
}

// CreateUser creates the ordinary user name (no administrator, a random password) through the
// REST API.
func (f *Forge) CreateUser(ctx context.Context, name string) (*User, error) {
	pw, err := randomHex(16)
	if err != nil {
		return nil, err
	}
	mustChange := false
	if err := f.call(ctx, f.adminAuth(), http.MethodPost, "/admin/users", map[string]any{
		"username":             name,
		"email":                name + "@" + EmailDomain,
		"password":             pw,
		"must_change_password": &mustChange,
		"visibility":           "public",
	}, http.StatusCreated, nil); err != nil {
		return nil, fmt.Errorf("create user %s: %w", name, err)
	}
	return &User{f: f, name: name, password: pw}, nil
}

// Name is the user's login.
func (u *User) Name() string { return u.name }

func (u *User) auth() authorizer { return basicAuth(u.name, u.password) }

// Fork forks owner/repo into the user's account (as <user>/<repo>) and waits until the forge
// shows the fork with its default branch.
func (u *User) Fork(ctx context.Context, owner, repo string) error {
	if err := u.f.call(ctx, u.auth(), http.MethodPost, repoPath(owner, repo)+"/forks", map[string]any{}, http.StatusAccepted, nil); err != nil {
		return fmt.Errorf("fork %s/%s as %s: %w", owner, repo, u.name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, pushSettleTimeout)
	defer cancel()
	for {
		_, err := u.f.Head(ctx, u.name, repo, DefaultBranch)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for the fork %s/%s: %w (last: %v)", u.name, repo, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ChangeFiles makes one commit by the user on branch newBranch of the user's repository repo,
// created from branch from: each path of files gets the content given (created or replaced).
// It returns the commit once the forge's API shows it.
func (u *User) ChangeFiles(ctx context.Context, repo, from, newBranch, message string, files map[string]string) (string, error) {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var ops []map[string]any
	for _, p := range paths {
		op := map[string]any{"path": p, "content": base64.StdEncoding.EncodeToString([]byte(files[p])), "operation": "create"}
		var existing struct {
			SHA string `json:"sha"`
		}
		if err := u.f.call(ctx, u.auth(), http.MethodGet, repoPath(u.name, repo)+"/contents/"+p+"?ref="+url.QueryEscape(from), nil, http.StatusOK, &existing); err == nil && existing.SHA != "" {
			op["operation"], op["sha"] = "update", existing.SHA
		}
		ops = append(ops, op)
	}
	var out struct {
		Commit struct {
			SHA string `json:"sha"`
		} `json:"commit"`
	}
	if err := u.f.call(ctx, u.auth(), http.MethodPost, repoPath(u.name, repo)+"/contents", map[string]any{
		"branch": from, "new_branch": newBranch, "message": message, "files": ops,
	}, http.StatusCreated, &out); err != nil {
		return "", fmt.Errorf("commit to %s of %s/%s as %s: %w", newBranch, u.name, repo, u.name, err)
	}
	if err := u.f.WaitBranch(ctx, u.name, repo, newBranch, out.Commit.SHA); err != nil {
		return "", err
	}
	return out.Commit.SHA, nil
}

// OpenPullRequest opens, as the user, a pull request into base of owner/repo from branch head
// of the user's fork of it.
func (u *User) OpenPullRequest(ctx context.Context, owner, repo, head, base, title, body string) (PullRequest, error) {
	var p apiPullRequest
	if err := u.f.call(ctx, u.auth(), http.MethodPost, repoPath(owner, repo)+"/pulls", map[string]any{
		"head": u.name + ":" + head, "base": base, "title": title, "body": body,
	}, http.StatusCreated, &p); err != nil {
		return PullRequest{}, fmt.Errorf("open a pull request from %s:%s into %s/%s: %w", u.name, head, owner, repo, err)
	}
	return p.public(), nil
}

// ClosePullRequest closes, as the user, pull request number of owner/repo without merging it
// (its author may).
func (u *User) ClosePullRequest(ctx context.Context, owner, repo string, number int64) error {
	if err := u.f.call(ctx, u.auth(), http.MethodPatch, pullPath(owner, repo, number),
		map[string]any{"state": "closed"}, http.StatusCreated, nil); err != nil {
		return fmt.Errorf("close pull request %s/%s#%d as %s: %w", owner, repo, number, u.name, err)
	}
	return nil
}
