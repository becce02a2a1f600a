package controllers

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

func runGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v: %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// Refs lists tags with the commit they point to: the peeled commit for an annotated tag.
func TestTagListerRefsPeelsAnnotatedTags(t *testing.T) {
	dir := t.TempDir()
	runGit(t, dir, "init", "-q", "-b", "main")
	runGit(t, dir, "commit", "-q", "--allow-empty", "-m", "one")
	first := runGit(t, dir, "rev-parse", "HEAD")
	runGit(t, dir, "tag", "light-v1")
	runGit(t, dir, "commit", "-q", "--allow-empty", "-m", "two")
	second := runGit(t, dir, "rev-parse", "HEAD")
	runGit(t, dir, "tag", "-a", "-m", "annotated", "annotated-v2")

	l := &TagLister{}
	src := csv1.StackSource{URL: "file://" + dir, Path: "."}
	refs, err := l.Refs(context.Background(), "ns", src, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if refs["light-v1"] != first || refs["annotated-v2"] != second || len(refs) != 2 {
		t.Fatalf("refs = %v, want light-v1=%s annotated-v2=%s (peeled)", refs, first, second)
	}
	// Cached: a tag moved now is seen only after maxAge, or after Forget.
	runGit(t, dir, "tag", "-f", "light-v1", second)
	if refs, _ := l.Refs(context.Background(), "ns", src, time.Minute); refs["light-v1"] != first {
		t.Errorf("cached answer expected within maxAge, got %v", refs)
	}
	l.Forget("ns", src)
	tags, err := l.Tags(context.Background(), "ns", src, time.Minute)
	if err != nil || strings.Join(tags, ",") != "annotated-v2,light-v1" {
		t.Errorf("Tags = %v, %v; want sorted names", tags, err)
	}
	if refs, _ := l.Refs(context.Background(), "ns", src, time.Minute); refs["light-v1"] != second {
		t.Errorf("after Forget the moved tag is seen: %v", refs)
	}
}
