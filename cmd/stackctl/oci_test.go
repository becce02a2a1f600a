package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/clusterstack-io/clusterstack-operator/bootstrap/registry"
	"github.com/clusterstack-io/clusterstack-operator/internal/testenv"
)

// startRegistry starts the real registry (bin/registry), plain http on loopback.
func startRegistry(t *testing.T) *registry.Server {
	t.Helper()
	root, err := testenv.Root()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "bin")
	if _, err := os.Stat(filepath.Join(bin, registry.Binary)); err != nil {
		testenv.SkipOrFail(t, "bin/registry missing: run `make tools`")
	}
	s, err := registry.Start(context.Background(), registry.Options{BinDir: bin, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

// referenceStack is a copy of stacks/aws/base/1-36 (a Helm cluster-class, the Helm addon cni and
// the kustomize addon cluster-info) under root.
func referenceStack(t *testing.T, root string) string {
	t.Helper()
	repo, err := testenv.Root()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "stacks", "aws", "base", "1-36")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(repo, "stacks", "aws", "base", "1-36"))); err != nil {
		t.Fatal(err)
	}
	return dir
}

func stackctl(t *testing.T, args ...string) []string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("stackctl %s: exit %d\n%s", strings.Join(args, " "), code, stderr.String())
	}
	return strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
}

// wantLines checks lines against patterns, one each, in order.
func wantLines(t *testing.T, what string, lines []string, patterns ...string) {
	t.Helper()
	if len(lines) != len(patterns) {
		t.Fatalf("%s printed %d lines, want %d:\n%s", what, len(lines), len(patterns), strings.Join(lines, "\n"))
	}
	for i, p := range patterns {
		if !regexp.MustCompile("^" + p + "$").MatchString(lines[i]) {
			t.Errorf("%s line %d = %q, want %s", what, i+1, lines[i], p)
		}
	}
}

const digestRE = `sha256:[0-9a-f]{64}`

// push prints the release and then each chart; mirror from a registry lists releases only,
// and copies each with its charts; mirror from Git publishes charts as push does.
func TestPushAndMirrorPrintTheChartsOfARelease(t *testing.T) {
	src, dst := startRegistry(t), startRegistry(t)
	dir := referenceStack(t, t.TempDir())
	from, to := src.URL("stacks/aws-base"), dst.URL("mirror/aws-base")
	q := regexp.QuoteMeta

	pushed := stackctl(t, "push", dir, from, "--insecure")
	wantLines(t, "push", pushed,
		q(from)+`:aws-base-1-36-v1@`+digestRE,
		q(from)+`:aws-base-1-36-v1_cluster-class@`+digestRE+` \(chart cluster-class\)`,
		q(from)+`:aws-base-1-36-v1_cni@`+digestRE+` \(chart cni\)`)

	// The source lists the release and its two charts: one release is copied, with both.
	mirrored := stackctl(t, "mirror", from, to, "--from-insecure", "--insecure")
	wantLines(t, "mirror", mirrored,
		q(to)+`:aws-base-1-36-v1@`+digestRE,
		q(to)+`:aws-base-1-36-v1_cluster-class@`+digestRE+` \(chart cluster-class\)`,
		q(to)+`:aws-base-1-36-v1_cni@`+digestRE+` \(chart cni\)`)
	for i := range pushed {
		if at := func(s string) string { return s[strings.LastIndex(s, "@"):] }; at(pushed[i]) != at(mirrored[i]) {
			t.Errorf("mirrored %q, pushed %q: the digests differ", mirrored[i], pushed[i])
		}
	}

	// From Git: the release tag published with its charts, the same on a second run.
	checkout := t.TempDir()
	gitDir := referenceStack(t, checkout)
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "init"},
		{"add", "."},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "stack"},
		{"tag", "aws-base-1-36-v1"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = checkout
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	fromGit := dst.URL("git/aws-base")
	first := stackctl(t, "mirror", gitDir, fromGit, "--insecure")
	wantLines(t, "mirror from Git", first,
		q(fromGit)+`:aws-base-1-36-v1@`+digestRE+` \(from aws-base-1-36-v1@sha1:[0-9a-f]{40}\)`,
		q(fromGit)+`:aws-base-1-36-v1_cluster-class@`+digestRE+` \(chart cluster-class\)`,
		q(fromGit)+`:aws-base-1-36-v1_cni@`+digestRE+` \(chart cni\)`)
	if second := stackctl(t, "mirror", gitDir, fromGit, "--insecure"); strings.Join(second, "\n") != strings.Join(first, "\n") {
		t.Errorf("mirroring the same Git tag again published other digests:\n%s\nfirst:\n%s", strings.Join(second, "\n"), strings.Join(first, "\n"))
	}
}
