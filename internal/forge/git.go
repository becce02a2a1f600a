package forge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/clusterstack-io/clusterstack-operator/internal/gitauth"
	"github.com/clusterstack-io/clusterstack-operator/internal/redact"
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

// ErrGitDeadline is returned (wrapped) when a Git operation on the fleet repository ran out of
// Limits.GitTimeout.
var ErrGitDeadline = errors.New("git operation deadline exceeded")

// maxFiles bounds the number of files a checkout writes.
const maxFiles = 50000

// Author identifies the operator's commits.
type Author struct{ Name, Email string }

// Fleet is a fleet repository as the operator reaches it to push proposal branches.
type Fleet struct {
	// URL of the repository (http or https).
	URL string
	// Token authenticates, as the password of HTTP basic auth (Gitea and GitHub accept it);
	// TokenFrom names where it comes from ("Secret ns/name"), for messages.
	Token, TokenFrom string
	// Limits of every Git operation.
	Limits Limits
	// Policy: whether the token may go over plain http to a loopback address.
	Policy Policy
}

// Heads is what one listing of the fleet repository's branches says.
type Heads struct {
	// Base is the branch Flux follows, BaseHead its head commit.
	Base     string
	BaseHead plumbing.Hash
	// Branch is the proposal branch, BranchHead its head; zero when it does not exist.
	Branch     string
	BranchHead plumbing.Hash
}

func (f Fleet) remote() (*gitauth.Remote, error) {
	return gitauth.NewTokenRemote(f.URL, f.TokenFrom, f.Token, f.Policy.AllowLoopbackHTTP)
}

// Heads lists the heads of base and branch (one ls-remote, bounded as gitauth bounds every
// listing, within Limits.GitTimeout). It refuses a branch equal to base or to the remote's
// default branch (ErrProtectedTarget).
func (f Fleet) Heads(ctx context.Context, base, branch string) (Heads, error) {
	if branch == "" || branch == base {
		return Heads{}, fmt.Errorf("%w: proposal branch %q, Flux follows %q", ErrProtectedTarget, branch, base)
	}
	r, err := f.remote()
	if err != nil {
		return Heads{}, err
	}
	lim := f.Limits.WithDefaults()
	ctx, cancel := context.WithTimeout(ctx, lim.GitTimeout)
	defer cancel()
	baseRef, branchRef := plumbing.NewBranchReferenceName(base).String(), plumbing.NewBranchReferenceName(branch).String()
	adv, err := r.ListRefs(ctx, gitauth.RefQuery{Prefix: "refs/heads/", MaxKept: 2,
		Keep: func(name string) bool { return name == baseRef || name == branchRef }})
	if err != nil {
		return Heads{}, f.gitError(ctx, "list branches of "+r.SafeURL(), err, lim)
	}
	// The remote's default branch (HEAD) must not be pushed to either.
	if adv.Head == branchRef {
		return Heads{}, fmt.Errorf("%w: %q is the default branch of %s", ErrProtectedTarget, branch, r.SafeURL())
	}
	h := Heads{Base: base, Branch: branch}
	if id, ok := adv.Refs[baseRef]; ok {
		h.BaseHead = plumbing.NewHash(id)
	} else {
		return Heads{}, fmt.Errorf("%s has no branch %s (the branch Flux follows)", r.SafeURL(), base)
	}
	if id, ok := adv.Refs[branchRef]; ok {
		h.BranchHead = plumbing.NewHash(id)
	}
	return h, nil
}

// gitError is the error of a Git operation: a deadline or a size limit said as such, anything
// else redacted.
func (f Fleet) gitError(ctx context.Context, what string, err error, lim Limits) error {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &forgeError{msg: fmt.Sprintf("%s: no answer within %s (the Git operation deadline, --git-operation-timeout)", what, lim.GitTimeout), err: ErrGitDeadline}
	case errors.Is(err, ErrTooLarge):
		return &forgeError{msg: fmt.Sprintf("%s: more than %d bytes (the checkout size limit, --fleet-checkout-size-limit)", what, lim.MaxBytes), err: ErrTooLarge}
	}
	return redact.Error(fmt.Errorf("%s: %s", what, strings.TrimSpace(err.Error())), f.Token)
}

// Checkout is a shallow clone of the fleet repository's base branch, with the proposal
// branch's head fetched when it exists. Call Close when done.
type Checkout struct {
	// Dir is the work tree, at the base branch's head.
	Dir string
	// Base is the branch Flux follows; BaseHead its head commit.
	Base     string
	BaseHead plumbing.Hash
	// Branch is the proposal branch; BranchHead its head, zero when it does not exist.
	Branch     string
	BranchHead plumbing.Hash

	fleet Fleet
	lim   Limits
	root  *os.Root
	repo  *git.Repository
	b     *budget
}

// Open lists the fleet repository's heads (Fleet.Heads) and checks them out (Fleet.Checkout).
func Open(ctx context.Context, f Fleet, base, branch string) (*Checkout, error) {
	h, err := f.Heads(ctx, base, branch)
	if err != nil {
		return nil, err
	}
	return f.Checkout(ctx, h)
}

// Checkout clones the base branch into a temporary directory, with depth 1 (no history: only
// the files of its head), and fetches the proposal branch's head (depth 1) when h says it
// exists. Each Git operation has Limits.GitTimeout; together they read at most Limits.MaxBytes
// from the remote and check out at most Limits.MaxBytes of files (maxFiles files).
func (f Fleet) Checkout(ctx context.Context, h Heads) (_ *Checkout, retErr error) {
	r, err := f.remote()
	if err != nil {
		return nil, err
	}
	installGitTransport()
	lim := f.Limits.WithDefaults()
	b := &budget{max: lim.MaxBytes}
	b.left.Store(lim.MaxBytes)
	ctx = withBudget(ctx, b)
	dir, err := os.MkdirTemp("", "fleet-")
	if err != nil {
		return nil, err
	}
	co := &Checkout{Dir: dir, Base: h.Base, Branch: h.Branch, fleet: f, lim: lim, b: b}
	defer func() {
		if retErr != nil {
			_ = co.Close()
		}
	}()
	opCtx, cancel := context.WithTimeout(ctx, lim.GitTimeout)
	repo, err := git.PlainCloneContext(opCtx, dir, false, &git.CloneOptions{
		URL: r.URL(), Auth: r.AuthMethod(), ReferenceName: plumbing.NewBranchReferenceName(h.Base),
		SingleBranch: true, Depth: 1, Tags: git.NoTags, NoCheckout: true,
	})
	if err != nil {
		defer cancel()
		return nil, f.gitError(opCtx, fmt.Sprintf("clone branch %s of %s", h.Base, r.SafeURL()), b.mark(err), lim)
	}
	cancel()
	co.repo = repo
	head, err := repo.Head()
	if err != nil {
		return nil, err
	}
	co.BaseHead = head.Hash()
	if err := co.checkSize(r.SafeURL()); err != nil {
		return nil, err
	}
	wt, err := repo.Worktree()
	if err != nil {
		return nil, err
	}
	if err := wt.Reset(&git.ResetOptions{Commit: co.BaseHead, Mode: git.HardReset}); err != nil {
		return nil, fmt.Errorf("check out branch %s of %s: %w", h.Base, r.SafeURL(), err)
	}
	if co.root, err = os.OpenRoot(dir); err != nil {
		return nil, err
	}
	if !h.BranchHead.IsZero() {
		opCtx, cancel := context.WithTimeout(ctx, lim.GitTimeout)
		defer cancel()
		spec := config.RefSpec(fmt.Sprintf("+refs/heads/%s:refs/remotes/origin/%s", h.Branch, h.Branch))
		err := repo.FetchContext(opCtx, &git.FetchOptions{RemoteName: "origin", Auth: r.AuthMethod(), RefSpecs: []config.RefSpec{spec}, Depth: 1, Tags: git.NoTags})
		if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
			return nil, f.gitError(opCtx, fmt.Sprintf("fetch branch %s of %s", h.Branch, r.SafeURL()), b.mark(err), lim)
		}
		ref, err := repo.Reference(plumbing.NewRemoteReferenceName("origin", h.Branch), true)
		if err != nil {
			return nil, err
		}
		co.BranchHead = ref.Hash()
	}
	return co, nil
}

// checkSize refuses a base branch whose files hold more than the limit, before they are
// written: the fetched objects are bounded by the budget, but what they inflate to is not.
func (c *Checkout) checkSize(shown string) error {
	commit, err := c.repo.CommitObject(c.BaseHead)
	if err != nil {
		return err
	}
	tree, err := commit.Tree()
	if err != nil {
		return err
	}
	var size, files int64
	err = tree.Files().ForEach(func(f *object.File) error {
		size += f.Size
		files++
		if size > c.lim.MaxBytes {
			return &forgeError{msg: fmt.Sprintf("the files of branch %s of %s hold more than %d bytes (the checkout size limit, --fleet-checkout-size-limit)", c.Base, shown, c.lim.MaxBytes), err: ErrTooLarge}
		}
		if files > maxFiles {
			return &forgeError{msg: fmt.Sprintf("branch %s of %s has more than %d files, the most a checkout writes", c.Base, shown, maxFiles), err: ErrTooLarge}
		}
		return nil
	})
	return err
}

// Close removes the clone.
func (c *Checkout) Close() error {
	if c.root != nil {
		_ = c.root.Close()
	}
	return os.RemoveAll(c.Dir)
}

// FS is the work tree, confined to the checkout (os.Root: no symbolic link leads out of it).
func (c *Checkout) FS() fs.FS { return c.root.FS() }

// regularFile checks that name is a clean relative path whose every directory is a directory
// and whose last element is a regular file: no symbolic link is followed, even one that stays
// in the checkout (Flux does not apply files behind links either).
func (c *Checkout) regularFile(name string) (fs.FileInfo, error) {
	clean := path.Clean(name)
	if clean != name || clean == "." || path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
		return nil, fmt.Errorf("%s: not a clean relative path in the fleet repository", name)
	}
	parts := strings.Split(clean, "/")
	for i := range parts {
		p := strings.Join(parts[:i+1], "/")
		fi, err := c.root.Lstat(p)
		if err != nil {
			return nil, err
		}
		last := i == len(parts)-1
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			return nil, fmt.Errorf("%s: %s is a symbolic link, which the operator does not follow", name, p)
		case !last && !fi.IsDir():
			return nil, fmt.Errorf("%s: %s is not a directory", name, p)
		case last && !fi.Mode().IsRegular():
			return nil, fmt.Errorf("%s is not a regular file", name)
		case last:
			return fi, nil
		}
	}
	return nil, fmt.Errorf("%s: empty path", name)
}

// ReadFile reads a regular file of the work tree (name slash-separated, relative), refusing
// any path through a symbolic link and any file larger than the checkout size limit.
func (c *Checkout) ReadFile(name string) ([]byte, error) {
	fi, err := c.regularFile(name)
	if err != nil {
		return nil, err
	}
	if fi.Size() > c.lim.MaxBytes {
		return nil, &forgeError{msg: fmt.Sprintf("%s holds %d bytes, more than the checkout size limit (--fleet-checkout-size-limit)", name, fi.Size()), err: ErrTooLarge}
	}
	f, err := c.root.Open(name)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	return io.ReadAll(io.LimitReader(f, c.lim.MaxBytes+1))
}

// WriteFile replaces the content of a regular file of the work tree, with the checks of
// ReadFile.
func (c *Checkout) WriteFile(name string, data []byte) error {
	if _, err := c.regularFile(name); err != nil {
		return err
	}
	if int64(len(data)) > c.lim.MaxBytes {
		return &forgeError{msg: fmt.Sprintf("%s would hold %d bytes, more than the checkout size limit (--fleet-checkout-size-limit)", name, len(data)), err: ErrTooLarge}
	}
	f, err := c.root.OpenFile(name, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// PutFile writes a regular file of the work tree, creating it and its directories when they do
// not exist, with the checks of WriteFile: no path through a symbolic link, no file larger than
// the checkout size limit.
func (c *Checkout) PutFile(name string, data []byte) error {
	if _, err := c.regularFile(name); err == nil || !errors.Is(err, fs.ErrNotExist) {
		if err != nil {
			return err
		}
		return c.WriteFile(name, data)
	}
	if int64(len(data)) > c.lim.MaxBytes {
		return &forgeError{msg: fmt.Sprintf("%s would hold %d bytes, more than the checkout size limit (--fleet-checkout-size-limit)", name, len(data)), err: ErrTooLarge}
	}
	if dir := path.Dir(name); dir != "." {
		// regularFile refused a link anywhere on the path: MkdirAll creates only what is missing.
		if err := c.root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	f, err := c.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// RemoveFile removes a regular file of the work tree; a file that does not exist is no error.
func (c *Checkout) RemoveFile(name string) error {
	if _, err := c.regularFile(name); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	return c.root.Remove(name)
}

// ForeignCommit names the head commit of the proposal branch when the operator did not make
// it, or "" when the branch does not exist or is the operator's. The operator's branch is
// always one commit of its own on a commit of the base branch (Commit makes nothing else), so
// the head alone tells: a person's commit on top, an amended or rebased commit (a committer
// other than the operator) or a merge commit make it someone else's. Only the head is
// fetched and read, whatever the branch's history.
func (c *Checkout) ForeignCommit(me Author) (string, error) {
	if c.BranchHead.IsZero() {
		return "", nil
	}
	cm, err := c.repo.CommitObject(c.BranchHead)
	if err != nil {
		return "", err
	}
	if !strings.EqualFold(cm.Author.Email, me.Email) || !strings.EqualFold(cm.Committer.Email, me.Email) {
		return fmt.Sprintf("%s by %s <%s>", cm.Hash.String()[:12], shortText(cm.Author.Name), shortText(cm.Author.Email)), nil
	}
	if len(cm.ParentHashes) != 1 {
		return fmt.Sprintf("%s, a merge commit", cm.Hash.String()[:12]), nil
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

// Commit commits the work tree's changes (made by the caller with WriteFile) on top of the
// base branch's head and pushes them to the proposal branch, unless the branch already has one
// commit on the current base with the same tree (then nothing is pushed: idempotent across
// restarts). The caller must have checked ForeignCommit first. The push has
// Limits.GitTimeout.
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
	r, err := c.fleet.remote()
	if err != nil {
		return CommitResult{}, err
	}
	opCtx, cancel := context.WithTimeout(withBudget(ctx, c.b), c.lim.GitTimeout)
	defer cancel()
	spec := config.RefSpec(fmt.Sprintf("+%s:refs/heads/%s", local, c.Branch))
	err = c.repo.PushContext(opCtx, &git.PushOptions{RemoteName: "origin", Auth: r.AuthMethod(), RefSpecs: []config.RefSpec{spec}, Force: true})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		what := fmt.Sprintf("push branch %s to %s", c.Branch, r.SafeURL())
		if err = c.b.mark(err); errors.Is(opCtx.Err(), context.DeadlineExceeded) || errors.Is(err, ErrTooLarge) {
			return CommitResult{}, c.fleet.gitError(opCtx, what, err, c.lim)
		}
		msg := redact.Secrets(strings.TrimSpace(err.Error()), c.fleet.Token)
		if refused(msg) {
			return CommitResult{}, fmt.Errorf("%w: push of branch %s to %s: %s", ErrPushRefused, c.Branch, r.SafeURL(), msg)
		}
		return CommitResult{}, fmt.Errorf("%s: %s", what, msg)
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
