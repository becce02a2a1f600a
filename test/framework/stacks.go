package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sigstore/sigstore/pkg/signature"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/gitserver"
	"github.com/clusterstack-io/clusterstack-operator/internal/ocistack"
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
	PublishAll(ctx context.Context, repo string, pubs ...gitserver.Publication) error
}

// PublishStacks copies repoRoot's stacks/ tree into a new directory below tmp, lets mutate
// change the copy (nil: none), commits it to repo of git and tags the commit tag.
func PublishStacks(ctx context.Context, git Publisher, repoRoot, tmp, repo, tag string, mutate func(dir string) error) error {
	pub, err := stacksCopy(repoRoot, tmp, tag, mutate)
	if err != nil {
		return err
	}
	return git.PublishAll(ctx, repo, pub)
}

// stacksCopy copies repoRoot's stacks/ tree into a new directory below tmp and lets mutate
// change the copy (nil: none): the publication of that copy at the repository's root as tag.
func stacksCopy(repoRoot, tmp, tag string, mutate func(dir string) error) (gitserver.Publication, error) {
	dir, err := os.MkdirTemp(tmp, "stacks-")
	if err != nil {
		return gitserver.Publication{}, err
	}
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(repoRoot, "stacks"))); err != nil {
		return gitserver.Publication{}, fmt.Errorf("copy the stacks tree: %w", err)
	}
	if mutate != nil {
		if err := mutate(dir); err != nil {
			return gitserver.Publication{}, fmt.Errorf("change the stacks tree for %s: %w", tag, err)
		}
	}
	return gitserver.Publication{SrcDir: dir, PathInRepo: ".", Tag: tag}, nil
}

// Version is a version of the reference stack to publish (PublishVersions): its name ("v3")
// and what changes in the stack's directory (nil: nothing).
type Version struct {
	Name   string
	Mutate func(stackDir string) error
}

// PublishVersion publishes the reference stack as version v (tag ReleaseOf(v)) into repo: its
// cluster-class chart at version v, as a release step sets it, and mutate (nil: none) applied to
// the stack's directory.
func PublishVersion(ctx context.Context, git Publisher, repoRoot, tmp, repo, v string, mutate func(stackDir string) error) error {
	return PublishVersions(ctx, git, repoRoot, tmp, repo, Version{Name: v, Mutate: mutate})
}

// PublishVersions publishes each version as PublishVersion does, one commit after the other
// in the order given, with one push for all of them (a suite's versions in seconds, not a
// push each). Nothing is published when a mutation fails.
func PublishVersions(ctx context.Context, git Publisher, repoRoot, tmp, repo string, versions ...Version) error {
	pubs := make([]gitserver.Publication, 0, len(versions))
	for _, v := range versions {
		pub, err := versionCopy(repoRoot, tmp, v)
		if err != nil {
			return err
		}
		pubs = append(pubs, pub)
	}
	return git.PublishAll(ctx, repo, pubs...)
}

// versionCopy is the publication of version v of the reference stack: a copy of the stacks tree
// whose stack has its cluster-class chart at version v, as a release step sets it, and v's
// mutation applied.
func versionCopy(repoRoot, tmp string, v Version) (gitserver.Publication, error) {
	return stacksCopy(repoRoot, tmp, ReleaseOf(v.Name), func(dir string) error {
		sd := filepath.Join(dir, StackPath)
		if err := stack.SetChartVersion(sd, v.Name); err != nil {
			return err
		}
		if v.Mutate != nil {
			return v.Mutate(sd)
		}
		return nil
	})
}

// PushVersions publishes each version of the reference stack, as PublishVersions builds it, to
// the OCI repository t as `stackctl push` publishes a release (the stack directory at the
// artifact's root, its charts beside it), signed with signer unless it is nil. The artifacts
// record a fixed creation time, so that the same content publishes the same digest. It returns
// each version's release digest.
func PushVersions(ctx context.Context, t ocistack.Target, repoRoot, tmp string, signer signature.Signer, versions ...Version) (map[string]string, error) {
	out := map[string]string{}
	for _, v := range versions {
		pub, err := versionCopy(repoRoot, tmp, v)
		if err != nil {
			return nil, err
		}
		p, err := ocistack.PushRelease(ctx, t, filepath.Join(pub.SrcDir, StackPath), ReleaseOf(v.Name),
			ocistack.Origin{Created: time.Unix(1_700_000_000, 0)}, signer)
		if err != nil {
			return nil, fmt.Errorf("push %s: %w", v.Name, err)
		}
		out[v.Name] = p.Release.Digest.String()
	}
	return out, nil
}

// OCIClusterStack is ClusterStack (the reference stack's, ns, interval and versions) reading
// its releases from the OCI repository url instead of Git; insecure for the plane's loopback
// registry.
func OCIClusterStack(ns, url string, insecure bool, interval time.Duration, versions ...string) *csv1.ClusterStack {
	cs := ClusterStack(ns, "", interval, versions...)
	cs.Spec.Source = csv1.StackSource{OCI: &csv1.OCISource{URL: url, Insecure: insecure}}
	return cs
}
