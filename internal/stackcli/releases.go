package stackcli

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// ReleaseTag is a tag of a Git checkout and the commit it points at.
type ReleaseTag struct {
	// Name of the tag.
	Name string
	// Commit is the hex of the commit (annotated tags are peeled).
	Commit string
	// Time is the commit's committer time.
	Time time.Time
}

// ReleaseTags lists the checkout's tags that start with prefix, sorted by name.
func (c *Checkout) ReleaseTags(prefix string) ([]ReleaseTag, error) {
	iter, err := c.repo.Tags()
	if err != nil {
		return nil, fmt.Errorf("list tags: %w", err)
	}
	var out []ReleaseTag
	err = iter.ForEach(func(ref *plumbing.Reference) error {
		name := ref.Name().Short()
		if !strings.HasPrefix(name, prefix) {
			return nil
		}
		h, err := c.Resolve(name)
		if err != nil {
			return err
		}
		commit, err := c.repo.CommitObject(h)
		if err != nil {
			return fmt.Errorf("tag %s: %w", name, err)
		}
		out = append(out, ReleaseTag{Name: name, Commit: h.String(), Time: commit.Committer.When})
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// RemoteURL is the URL of the checkout's remote "origin" ("" when it has none).
func (c *Checkout) RemoteURL() string {
	r, err := c.repo.Remote("origin")
	if err != nil || len(r.Config().URLs) == 0 {
		return ""
	}
	return r.Config().URLs[0]
}
