package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
)

// The reference stack of this repository (stacks/aws/base/1-36), as every suite publishes it.
const (
	// StackName is the name of its ClusterStack (the prefix of its release names).
	StackName = "aws-base-1-36"
	// TagPrefix is the prefix of its release tags: TagPrefix + "v1" is release v1's tag, and the
	// name of that release and its ClusterClass.
	TagPrefix = StackName + "-"
	// StackPath is its directory in the stacks/ tree, and so in the published repository.
	StackPath = "aws/base/1-36"
	// Provider, Name and KubernetesVersion are its ClusterStack's spec fields.
	Provider          = "aws"
	Name              = "base"
	KubernetesVersion = "1.36"
	// ClusterVersion is the Kubernetes version of the Clusters built from it.
	ClusterVersion = "v1.36.3"
)

// ReleaseOf is the release (tag, ClusterStackRelease and ClusterClass) name of version v of
// the reference stack ("aws-base-1-36-v3").
func ReleaseOf(v string) string { return TagPrefix + v }

// Publisher is a Git server the stacks are published to: the plane's (plane.Plane.Git), or the
// benchmarks' own (bootstrap/gitserver).
type Publisher interface {
	Publish(ctx context.Context, repo, srcDir, pathInRepo, tag string) error
}

// PublishStacks copies repoRoot's stacks/ tree into a new directory below tmp, lets mutate
// change the copy (nil: none), commits it to repo of git and tags the commit tag.
func PublishStacks(ctx context.Context, git Publisher, repoRoot, tmp, repo, tag string, mutate func(dir string) error) error {
	dir, err := os.MkdirTemp(tmp, "stacks-")
	if err != nil {
		return err
	}
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(repoRoot, "stacks"))); err != nil {
		return fmt.Errorf("copy the stacks tree: %w", err)
	}
	if mutate != nil {
		if err := mutate(dir); err != nil {
			return fmt.Errorf("change the stacks tree for %s: %w", tag, err)
		}
	}
	return git.Publish(ctx, repo, dir, ".", tag)
}

// PublishVersion publishes the reference stack as version v (tag ReleaseOf(v)) into repo: its
// cluster-class chart at version v, as a release step sets it, and mutate (nil: none) applied to
// the stack's directory.
func PublishVersion(ctx context.Context, git Publisher, repoRoot, tmp, repo, v string, mutate func(stackDir string) error) error {
	return PublishStacks(ctx, git, repoRoot, tmp, repo, ReleaseOf(v), func(dir string) error {
		sd := filepath.Join(dir, StackPath)
		if err := stack.SetChartVersion(sd, v); err != nil {
			return err
		}
		if mutate != nil {
			return mutate(sd)
		}
		return nil
	})
}
