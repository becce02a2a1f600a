package forge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// ErrForeignCommits is returned when the proposal branch has commits by someone else than the
// operator: it is then left alone (no force-push) until the pull request is merged or closed
// or the commits are removed.
var ErrForeignCommits = errors.New("the proposal branch has commits by someone else")

// ErrPushRefused is returned when the forge refused the push (for example a protected branch).
var ErrPushRefused = errors.New("the forge refused the push")

// ErrProtectedTarget is returned, before anything is pushed, when the branch to push is the
// repository's default branch or the branch Flux follows.
var ErrProtectedTarget = errors.New("refusing to push to the default branch or the branch Flux follows")

// Author identifies the operator's commits.
type Author struct{ Name, Email string }

// Checkout is a clone of the fleet repository's base branch, with the proposal branch fetched
// when it exists. Call Close when done.
type Checkout struct {
	// Dir is the work tree, at the base branch's head.
	Dir string
	// Base is the branch Flux follows; BaseHead its head commit.
	Base     string
	BaseHead plumbing.Hash
	// Branch is the proposal branch; BranchHead its head, zero when it does not exist.
	Branch     string
	BranchHead plumbing.Hash

	repo *git.Repository
	auth transport.AuthMethod
	url  string
}

// Open clones url's base branch into a temporary directory and fetches branch. The token
// authenticates over http(s) (as the password of basic auth, which Gitea and GitHub accept).
// It refuses a branch equal to base or to the remote's default branch (ErrProtectedTarget).
func Open(ctx context.Context, url, token, base, branch string) (*Checkout, error) {
	if branch == "" || branch == base {
		return nil, fmt.Errorf("%w: proposal branch %q, Flux follows %q", ErrProtectedTarget, branch, base)
	}
	var auth transport.AuthMethod
	if token != "" {
		auth = &githttp.BasicAuth{Username: "x-access-token", Password: token}
	}
	dir, err := os.MkdirTemp("", "fleet-")
	if err != nil {
		return nil, err
	}
	co := &Checkout{Dir: dir, Base: base, Branch: branch, auth: auth, url: url}
	ok := false
	defer func() {
		if !ok {
			_ = os.RemoveAll(dir)
		}
	}()
	// The remote's default branch (HEAD) must not be pushed to either.
	rem := git.NewRemote(nil, &config.RemoteConfig{Name: "origin", URLs: []string{url}})
	refs, err := rem.ListContext(ctx, &git.ListOptions{Auth: auth})
	if err != nil {
		return nil, fmt.Errorf("list branches of %s: %w", redactURL(url), err)
	}
	branchExists := false
	for _, r := range refs {
		if r.Name() == plumbing.HEAD && r.Type() == plumbing.SymbolicReference && r.Target() == plumbing.NewBranchReferenceName(branch) {
			return nil, fmt.Errorf("%w: %q is the default branch of %s", ErrProtectedTarget, branch, redactURL(url))
		}
		if r.Name() == plumbing.NewBranchReferenceName(branch) {
			branchExists = true
		}
	}
	repo, err := git.PlainCloneContext(ctx, dir, false, &git.CloneOptions{
		URL: url, Auth: auth, ReferenceName: plumbing.NewBranchReferenceName(base), SingleBranch: true, Tags: git.NoTags,
	})
	if err != nil {
		return nil, fmt.Errorf("clone branch %s of %s: %w", base, redactURL(url), err)
	}
	co.repo = repo
	head, err := repo.Head()
	if err != nil {
		return nil, err
	}
	co.BaseHead = head.Hash()
	if branchExists {
		spec := config.RefSpec(fmt.Sprintf("+refs/heads/%s:refs/remotes/origin/%s", branch, branch))
		err := repo.FetchContext(ctx, &git.FetchOptions{RemoteName: "origin", Auth: auth, RefSpecs: []config.RefSpec{spec}, Tags: git.NoTags})
		if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
			return nil, fmt.Errorf("fetch branch %s of %s: %w", branch, redactURL(url), err)
		}
		ref, err := repo.Reference(plumbing.NewRemoteReferenceName("origin", branch), true)
		if err != nil {
			return nil, err
		}
		co.BranchHead = ref.Hash()
	}
	ok = true
	return co, nil
}

// Close removes the clone.
func (c *Checkout) Close() error { return os.RemoveAll(c.Dir) }

// ForeignCommit names the first commit on the proposal branch, not on the base branch, whose
// author or committer is not the operator, or "" when there is none.
func (c *Checkout) ForeignCommit(me Author) (string, error) {
	if c.BranchHead.IsZero() {
		return "", nil
	}
	base, err := c.repo.CommitObject(c.BaseHead)
	if err != nil {
		return "", err
	}
	seen := map[plumbing.Hash]bool{}
	queue := []plumbing.Hash{c.BranchHead}
	for len(queue) > 0 && len(seen) < 1000 {
		h := queue[0]
		queue = queue[1:]
		if seen[h] {
			continue
		}
		seen[h] = true
		cm, err := c.repo.CommitObject(h)
		if err != nil {
			return "", err
		}
		onBase := h == c.BaseHead
		if !onBase {
			if onBase, err = cm.IsAncestor(base); err != nil {
				return "", err
			}
		}
		if onBase {
			continue
		}
		if !strings.EqualFold(cm.Author.Email, me.Email) || !strings.EqualFold(cm.Committer.Email, me.Email) {
			return fmt.Sprintf("%s by %s <%s>", cm.Hash.String()[:12], cm.Author.Name, cm.Author.Email), nil
		}
		queue = append(queue, cm.ParentHashes...)
	}
	return "", nil
}

// CommitResult says what Commit did.
type CommitResult struct {
	// Changed is false when the edits left the base branch's files as they were.
	Changed bool
	// Pushed is true when the branch was (force-)pushed; false when it already held exactly
	// this change on the current base.
	Pushed bool
	// Commit is the proposal branch's head afterwards.
	Commit string
}

// Commit commits the work tree's changes (made by the caller in Dir) on top of the base
// branch's head and pushes them to the proposal branch, unless the branch already has one
// commit on the current base with the same tree (then nothing is pushed: idempotent across
// restarts). The caller must have checked ForeignCommit first.
func (c *Checkout) Commit(ctx context.Context, me Author, message string) (CommitResult, error) {
	wt, err := c.repo.Worktree()
	if err != nil {
		return CommitResult{}, err
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		return CommitResult{}, err
	}
	st, err := wt.Status()
	if err != nil {
		return CommitResult{}, err
	}
	if st.IsClean() {
		return CommitResult{}, nil
	}
	sig := &object.Signature{Name: me.Name, Email: me.Email, When: time.Now()}
	h, err := wt.Commit(message, &git.CommitOptions{Author: sig, Committer: sig})
	if err != nil {
		return CommitResult{}, err
	}
	mine, err := c.repo.CommitObject(h)
	if err != nil {
		return CommitResult{}, err
	}
	if !c.BranchHead.IsZero() {
		if theirs, err := c.repo.CommitObject(c.BranchHead); err == nil &&
			theirs.TreeHash == mine.TreeHash && len(theirs.ParentHashes) == 1 && theirs.ParentHashes[0] == c.BaseHead {
			return CommitResult{Changed: true, Commit: c.BranchHead.String()}, nil
		}
	}
	local := plumbing.NewBranchReferenceName("proposal/" + c.Branch)
	if err := c.repo.Storer.SetReference(plumbing.NewHashReference(local, h)); err != nil {
		return CommitResult{}, err
	}
	spec := config.RefSpec(fmt.Sprintf("+%s:refs/heads/%s", local, c.Branch))
	err = c.repo.PushContext(ctx, &git.PushOptions{RemoteName: "origin", Auth: c.auth, RefSpecs: []config.RefSpec{spec}, Force: true})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		msg := strings.TrimSpace(err.Error())
		if refused(msg) {
			return CommitResult{}, fmt.Errorf("%w: push of branch %s to %s: %s", ErrPushRefused, c.Branch, redactURL(c.url), msg)
		}
		return CommitResult{}, fmt.Errorf("push branch %s to %s: %s", c.Branch, redactURL(c.url), msg)
	}
	return CommitResult{Changed: true, Pushed: true, Commit: h.String()}, nil
}

// refused tells a push the forge refused (protection, hooks, permissions) from one that did
// not reach it.
func refused(msg string) bool {
	m := strings.ToLower(msg)
	for _, w := range []string{"protected", "declined", "denied", "refused", "not allowed", "rejected", "forbidden", "403"} {
		if strings.Contains(m, w) {
			return true
		}
	}
	return false
}
