package framework

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/gitserver"
)

// capture is a Publisher that keeps what it was given (the last publication) instead of
// pushing it.
type capture struct {
	repo, dir, path, tag, chart, marker string
	tags                                []string
}

func (c *capture) PublishAll(_ context.Context, repo string, pubs ...gitserver.Publication) error {
	for _, p := range pubs {
		c.repo, c.dir, c.path, c.tag = repo, p.SrcDir, p.PathInRepo, p.Tag
		c.tags = append(c.tags, p.Tag)
		chart, err := os.ReadFile(filepath.Join(p.SrcDir, StackPath, "cluster-class", "Chart.yaml"))
		if err != nil {
			return err
		}
		c.chart = string(chart)
		c.marker = ""
		if b, err := os.ReadFile(filepath.Join(p.SrcDir, StackPath, "marker")); err == nil {
			c.marker = string(b)
		}
	}
	return nil
}

// TestPublishVersion: the reference stack of this checkout is published at the version's tag,
// with its cluster-class chart at that version and the mutation applied; a failing mutation
// publishes nothing.
func TestPublishVersion(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	git := &capture{}
	err = PublishVersion(context.Background(), git, root, t.TempDir(), "stacks", "v7", func(sd string) error {
		return os.WriteFile(filepath.Join(sd, "marker"), []byte("changed"), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	if git.repo != "stacks" || git.tag != "aws-base-1-36-v7" || git.path != "." || git.marker != "changed" {
		t.Errorf("published %+v", git)
	}
	if !strings.Contains(git.chart, "version: v7") {
		t.Errorf("cluster-class chart not at v7:\n%s", git.chart)
	}
	again := &capture{}
	err = PublishVersion(context.Background(), again, root, t.TempDir(), "stacks", "v8", func(string) error { return errors.New("broken") })
	if err == nil || again.tag != "" {
		t.Errorf("a failing mutation: err %v, published %q", err, again.tag)
	}

	// Several versions at once, in order, each with its own mutation; one failing publishes none.
	many := &capture{}
	err = PublishVersions(context.Background(), many, root, t.TempDir(), "stacks",
		Version{Name: "v1"}, Version{Name: "v2", Mutate: func(sd string) error {
			return os.WriteFile(filepath.Join(sd, "marker"), []byte("v2"), 0o644)
		}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(many.tags, ",") != "aws-base-1-36-v1,aws-base-1-36-v2" || many.marker != "v2" || !strings.Contains(many.chart, "version: v2") {
		t.Errorf("published %+v", many)
	}
	none := &capture{}
	err = PublishVersions(context.Background(), none, root, t.TempDir(), "stacks",
		Version{Name: "v1"}, Version{Name: "v2", Mutate: func(string) error { return errors.New("broken") }})
	if err == nil || len(none.tags) != 0 {
		t.Errorf("a failing mutation among several: err %v, published %q", err, none.tags)
	}
}

// TestLostUIDs: an object gone or created again is named; one new since is not.
func TestLostUIDs(t *testing.T) {
	before := map[string]k8stypes.UID{"a": "1", "b": "2", "c": "3"}
	now := map[string]k8stypes.UID{"a": "1", "b": "9", "d": "4"}
	got := LostUIDs(before, now)
	want := []string{"b was removed and created again (UID 9, was 2)", "c is gone"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("LostUIDs = %q, want %q", got, want)
	}
	if lost := LostUIDs(before, before); len(lost) != 0 {
		t.Errorf("nothing changed, yet %q", lost)
	}
}

// TestMatchers: HaveCondition needs the status and every part of the message; HelmRevision is
// the latest of the history, 0 before any.
func TestMatchers(t *testing.T) {
	g := NewWithT(t)
	a := &csv1.ClusterAddon{}
	a.Status.Conditions = []metav1.Condition{{Type: csv1.DegradedCondition, Status: metav1.ConditionTrue, Reason: "Failed", Message: "Cluster c1: HelmRelease ns/c1-cni failed"}}
	g.Expect(a).To(HaveCondition(csv1.DegradedCondition, metav1.ConditionTrue, "c1", "c1-cni"))
	g.Expect(a).NotTo(HaveCondition(csv1.DegradedCondition, metav1.ConditionFalse))
	g.Expect(a).NotTo(HaveCondition(csv1.DegradedCondition, metav1.ConditionTrue, "c2"))
	g.Expect(a).NotTo(HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue))
	g.Expect(ConditionMessage(a.Status.Conditions, csv1.DegradedCondition)).To(Equal("Failed: Cluster c1: HelmRelease ns/c1-cni failed"))
	g.Expect(ConditionMessage(a.Status.Conditions, csv1.AvailableCondition)).To(Equal("no Available condition"))
	a.Namespace, a.Name = "team", "c1"
	g.Expect(HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue, "v2").FailureMessage(a)).To(Equal(
		"Expected condition Available=True with a message containing [\"v2\"], got:\n"+
			"    *v1alpha1.ClusterAddon team/c1\n"+
			"    Degraded=True Failed: Cluster c1: HelmRelease ns/c1-cni failed\n"), "the failure names what the object reports")
	_, err := HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue).Match("not an object")
	g.Expect(err).To(MatchError(ContainSubstring("got string")))

	hr := &helmv2.HelmRelease{}
	g.Expect(HelmRevision(hr)).To(Equal(0))
	hr.Status.History = helmv2.Snapshots{{Version: 3}, {Version: 2}}
	g.Expect(HelmRevision(hr)).To(Equal(3))
}
