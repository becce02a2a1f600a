package stackcli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/clusterstack-io/clusterstack-operator/internal/releasename"
	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
)

// maxTreeSize bounds what a revision's stack directory may hold, as the operator bounds an
// unpacked artifact.
const maxTreeSize = 256 << 20

// Checkout is a Git repository on disk whose revisions stacks are read from.
type Checkout struct {
	repo *git.Repository
	// Root is the repository's work tree.
	Root string
}

// OpenCheckout opens the Git repository that contains dir (dir or one of its parents has the
// .git directory).
func OpenCheckout(dir string) (*Checkout, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	// Open from the nearest directory that exists: dir may be a stack directory that only
	// older revisions have.
	for {
		if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
			break
		}
		parent := filepath.Dir(abs)
		if parent == abs {
			break
		}
		abs = parent
	}
	repo, err := git.PlainOpenWithOptions(abs, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return nil, fmt.Errorf("%s is not in a Git checkout: %w", dir, err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		return nil, fmt.Errorf("the Git repository of %s has no work tree: %w", dir, err)
	}
	return &Checkout{repo: repo, Root: wt.Filesystem.Root()}, nil
}

// RelPath is dir relative to the checkout's root, slash-separated ("." for the root).
func (c *Checkout) RelPath(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	root := c.Root
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	// Resolve symlinks in the part of dir that exists.
	existing, rest := abs, ""
	for {
		if r, err := filepath.EvalSymlinks(existing); err == nil {
			existing = r
			break
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			break
		}
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
	rel, err := filepath.Rel(root, filepath.Join(existing, rest))
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s is outside the checkout %s", dir, c.Root)
	}
	return filepath.ToSlash(rel), nil
}

// Resolve returns the commit of revision rev: a tag, a branch, a commit, or anything
// `git rev-parse` understands that go-git does (HEAD~1, ...).
func (c *Checkout) Resolve(rev string) (plumbing.Hash, error) {
	h, err := c.repo.ResolveRevision(plumbing.Revision(rev))
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("revision %q: %w", rev, err)
	}
	return *h, nil
}

// Extract writes directory dir (slash-separated, relative to the repository's root) of
// revision rev into a new temporary directory and returns the directory holding it; remove
// the returned root when done. Executable bits and symbolic links are kept.
func (c *Checkout) Extract(rev, dir string) (root, extracted string, err error) {
	h, err := c.Resolve(rev)
	if err != nil {
		return "", "", err
	}
	commit, err := c.repo.CommitObject(h)
	if err != nil {
		return "", "", fmt.Errorf("revision %q: %w", rev, err)
	}
	tree, err := commit.Tree()
	if err != nil {
		return "", "", fmt.Errorf("revision %q: %w", rev, err)
	}
	if dir != "." && dir != "" {
		if tree, err = tree.Tree(dir); err != nil {
			return "", "", fmt.Errorf("revision %q has no directory %s: %w", rev, dir, err)
		}
	}
	root, err = os.MkdirTemp("", "stack-revision-")
	if err != nil {
		return "", "", err
	}
	extracted = filepath.Join(root, filepath.FromSlash(path.Base("/"+dir)))
	if dir == "." || dir == "" {
		extracted = filepath.Join(root, "stack")
	}
	if err := writeTree(tree, extracted); err != nil {
		_ = os.RemoveAll(root)
		return "", "", fmt.Errorf("revision %q, directory %s: %w", rev, dir, err)
	}
	return root, extracted, nil
}

// writeTree writes the files of tree below dir.
func writeTree(tree *object.Tree, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	total := int64(0)
	return tree.Files().ForEach(func(f *object.File) error {
		total += f.Size
		if total > maxTreeSize {
			return fmt.Errorf("the directory holds more than %d bytes", maxTreeSize)
		}
		target := filepath.Join(dir, filepath.FromSlash(f.Name))
		if !strings.HasPrefix(target, dir+string(filepath.Separator)) {
			return fmt.Errorf("file %q is outside the directory", f.Name)
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		r, err := f.Reader()
		if err != nil {
			return err
		}
		defer func() { _ = r.Close() }()
		data, err := io.ReadAll(io.LimitReader(r, maxTreeSize))
		if err != nil {
			return err
		}
		switch f.Mode {
		case filemode.Symlink:
			// Only links that stay inside the directory: what is outside is not the revision's.
			link := string(data)
			if filepath.IsAbs(link) || !strings.HasPrefix(filepath.Join(filepath.Dir(target), link), dir+string(filepath.Separator)) {
				return fmt.Errorf("symbolic link %s points outside the directory (%s)", f.Name, link)
			}
			return os.Symlink(link, target)
		case filemode.Executable:
			return os.WriteFile(target, data, 0o755)
		}
		return os.WriteFile(target, data, 0o644)
	})
}

// StackAt loads the stack directory dir as it is at Git revision rev of the checkout holding
// dir. rev may also be a stack version ("v2") where the stack's release tag is meant
// ("aws-base-1-36-v2", the release name of the stack in dir's work tree). It returns the stack,
// the revision read and a function removing the extracted copy.
func StackAt(dir, rev string) (*stack.Stack, string, func(), error) {
	co, err := OpenCheckout(dir)
	if err != nil {
		return nil, "", nil, err
	}
	rel, err := co.RelPath(dir)
	if err != nil {
		return nil, "", nil, err
	}
	if _, err := co.Resolve(rev); err != nil {
		tag, ok := releaseTag(dir, rev)
		if !ok {
			return nil, "", nil, err
		}
		if _, err2 := co.Resolve(tag); err2 != nil {
			return nil, "", nil, fmt.Errorf("neither revision %q nor the release tag %q exists: %w", rev, tag, err2)
		}
		rev = tag
	}
	root, extracted, err := co.Extract(rev, rel)
	if err != nil {
		return nil, "", nil, err
	}
	cleanup := func() { _ = os.RemoveAll(root) }
	s, err := stack.Load(extracted)
	if err != nil {
		cleanup()
		var ps stack.Problems
		if errors.As(err, &ps) {
			return nil, "", nil, fmt.Errorf("the stack at %s@%s:\n%s", dir, rev, strings.TrimSuffix(stack.FormatProblems(rel, ps), "\n"))
		}
		return nil, "", nil, err
	}
	return s, rev, cleanup, nil
}

// releaseTag is the release tag of version rev of the stack in dir's work tree.
func releaseTag(dir, rev string) (string, bool) {
	if _, err := releasename.ParseVersion(rev); err != nil {
		return "", false
	}
	s, err := stack.Load(dir)
	if err != nil {
		return "", false
	}
	return s.ReleaseName(rev), true
}
