package webhooks

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

const ns = "team-a"

// release returns a release of provider-stack for Kubernetes minor k8s, validated with patch
// ("" for not validated yet), in namespace ns.
func release(provider, stack, k8s, version, patch string) *csv1.ClusterStackRelease {
	name := provider + "-" + stack + "-" + strings.ReplaceAll(k8s, ".", "-") + "-" + version
	return &csv1.ClusterStackRelease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: csv1.ClusterStackReleaseSpec{
			ClusterStack: provider + "-" + stack + "-" + strings.ReplaceAll(k8s, ".", "-"),
			Provider:     provider, StackName: stack, KubernetesVersion: k8s, Version: version,
		},
		Status: csv1.ClusterStackReleaseStatus{KubernetesVersion: patch},
	}
}

func inNamespace(r *csv1.ClusterStackRelease, namespace string) *csv1.ClusterStackRelease {
	r = r.DeepCopy()
	r.Namespace = namespace
	return r
}

func cluster(class, version string) *clusterv1.Cluster {
	return &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: ns},
		Spec: clusterv1.ClusterSpec{Topology: clusterv1.Topology{
			ClassRef: clusterv1.ClusterClassRef{Name: class},
			Version:  version,
		}},
	}
}

func withClassNamespace(c *clusterv1.Cluster, namespace string) *clusterv1.Cluster {
	c = c.DeepCopy()
	c.Spec.Topology.ClassRef.Namespace = namespace
	return c
}

func withLabel(c *clusterv1.Cluster) *clusterv1.Cluster {
	c = c.DeepCopy()
	c.Labels = map[string]string{"team": "a"}
	return c
}

var (
	base136        = release("aws", "base", "1.36", "v1", "v1.36.3")
	base136v2      = release("aws", "base", "1.36", "v2", "v1.36.4")
	base137        = release("aws", "base", "1.37", "v1", "v1.37.1")
	base138        = release("aws", "base", "1.38", "v1", "v1.38.0")
	base135        = release("aws", "base", "1.35", "v1", "v1.35.2")
	base236        = release("aws", "base", "2.0", "v1", "v2.0.0")
	other136       = release("aws", "other", "1.36", "v1", "v1.36.3")
	gcp136         = release("gcp", "base", "1.36", "v1", "v1.36.3")
	unvalidated137 = release("aws", "base", "1.37", "v2", "")
)

// wantErr describes one expected error: its field path and fragments of its message.
type wantErr struct {
	field    string
	contains []string
}

func checkErrors(t *testing.T, errs field.ErrorList, want []wantErr) {
	t.Helper()
	if len(errs) != len(want) {
		t.Fatalf("got %d errors %v, want %d", len(errs), errs, len(want))
	}
	for i, w := range want {
		if errs[i].Field != w.field {
			t.Errorf("error %d: field %q, want %q (%v)", i, errs[i].Field, w.field, errs[i])
		}
		for _, s := range w.contains {
			if !strings.Contains(errs[i].Error(), s) {
				t.Errorf("error %d: %q does not contain %q", i, errs[i].Error(), s)
			}
		}
	}
}

func TestValidateClusterCreate(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cluster  *clusterv1.Cluster
		rel      *csv1.ClusterStackRelease
		want     []wantErr
		warnings []string
	}{
		{name: "no topology", cluster: &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: ns}}},
		{name: "ClusterClass that is not a release", cluster: cluster("my-class", "v1.30.0")},
		{name: "release with its Kubernetes version", cluster: cluster(base136.Name, "v1.36.3"), rel: base136},
		{
			name: "release with another Kubernetes version", cluster: cluster(base136.Name, "v1.36.0"), rel: base136,
			want: []wantErr{{field: "spec.topology.version", contains: []string{
				`"v1.36.0"`, `ClusterStackRelease "aws-base-1-36-v1" was validated with Kubernetes v1.36.3`,
				`must set spec.topology.version to "v1.36.3"`,
			}}},
		},
		{
			name: "release without the v prefix", cluster: cluster(base136.Name, "1.36.3"), rel: base136,
			want: []wantErr{{field: "spec.topology.version", contains: []string{`to "v1.36.3"`}}},
		},
		{
			name: "release whose node image is not ready", cluster: cluster(base136.Name, "v1.36.3"), rel: withImageNotReady(base136),
			want: []wantErr{{field: "spec.topology.classRef.name", contains: []string{
				`ClusterStackRelease "aws-base-1-36-v1" cannot be used by a Cluster yet`, "Image/ubuntu-2404, created by its cluster-class, failed: download failed: 404",
				"ProviderObjectsReady",
			}}},
		},
		{
			name: "release not validated yet", cluster: cluster(unvalidated137.Name, "v1.37.0"), rel: unvalidated137,
			warnings: []string{`ClusterStackRelease team-a/aws-base-1-37-v2 has not been validated yet`},
		},
		{
			name: "explicit classRef.namespace of its own namespace", cluster: withClassNamespace(cluster(base136.Name, "v1.36.0"), ns), rel: base136,
			want: []wantErr{{field: "spec.topology.version"}},
		},
		{
			name: "release of another namespace", cluster: withClassNamespace(cluster(base136.Name, "v1.36.3"), "team-b"),
			rel: inNamespace(base136, "team-b"),
			want: []wantErr{{field: "spec.topology.classRef.namespace", contains: []string{
				`ClusterStackRelease team-b/aws-base-1-36-v1`, "a ClusterStack only serves Clusters of its own namespace",
				`create the ClusterStack in namespace "team-a"`,
			}}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs, warnings := ValidateClusterCreate(tc.cluster, tc.rel)
			checkErrors(t, errs, tc.want)
			checkWarnings(t, warnings, tc.warnings)
		})
	}
}

// withImageNotReady is rel whose cluster-class's node image failed (ProviderObjectsReady False).
func withImageNotReady(rel *csv1.ClusterStackRelease) *csv1.ClusterStackRelease {
	out := rel.DeepCopy()
	out.Status.Conditions = append(out.Status.Conditions, metav1.Condition{Type: csv1.ProviderObjectsReadyCondition, Status: metav1.ConditionFalse,
		Reason: csv1.ReasonProviderObjectNotReady, Message: "release aws-base-1-36-v1: Image/ubuntu-2404, created by its cluster-class, failed: download failed: 404"})
	return out
}

func checkWarnings(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("warnings %q, want %d", got, len(want))
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("warning %q does not contain %q", got[i], want[i])
		}
	}
}

func TestValidateClusterUpdate(t *testing.T) {
	on := func(r *csv1.ClusterStackRelease, version string) *clusterv1.Cluster { return cluster(r.Name, version) }
	for _, tc := range []struct {
		name           string
		old, updated   *clusterv1.Cluster
		oldRel, newRel *csv1.ClusterStackRelease
		want           []wantErr
		warnings       []string
	}{
		{
			name: "same release, same version", old: on(base136, "v1.36.3"), updated: withLabel(on(base136, "v1.36.3")),
			oldRel: base136, newRel: base136,
		},
		{
			// A Cluster that predates a rule (or whose release was validated again) keeps
			// getting its labels, finalizers and endpoint written.
			name: "unrelated change of a Cluster that does not satisfy the rules", old: on(base136, "v1.36.0"),
			updated: withLabel(on(base136, "v1.36.0")), oldRel: base136, newRel: base136,
		},
		{
			name: "version change to the release's version", old: on(base136, "v1.36.0"), updated: on(base136, "v1.36.3"),
			oldRel: base136, newRel: base136,
		},
		{
			name: "version change away from the release's version", old: on(base136, "v1.36.3"), updated: on(base136, "v1.36.4"),
			oldRel: base136, newRel: base136,
			want: []wantErr{{field: "spec.topology.version", contains: []string{`to "v1.36.3"`}}},
		},
		{name: "next stack version, same minor", old: on(base136, "v1.36.3"), updated: on(base136v2, "v1.36.4"), oldRel: base136, newRel: base136v2},
		{name: "stack version downgrade, same minor", old: on(base136v2, "v1.36.4"), updated: on(base136, "v1.36.3"), oldRel: base136v2, newRel: base136},
		{name: "next minor", old: on(base136, "v1.36.3"), updated: on(base137, "v1.37.1"), oldRel: base136, newRel: base137},
		{
			name: "next minor without the version change", old: on(base136, "v1.36.3"), updated: on(base137, "v1.36.3"),
			oldRel: base136, newRel: base137,
			want: []wantErr{{field: "spec.topology.version", contains: []string{`"aws-base-1-37-v1" was validated with Kubernetes v1.37.1`}}},
		},
		{
			name: "next minor, not validated yet", old: on(base136, "v1.36.3"), updated: on(unvalidated137, "v1.37.0"),
			oldRel: base136, newRel: unvalidated137, warnings: []string{"has not been validated yet"},
		},
		{
			name: "skips a minor", old: on(base136, "v1.36.3"), updated: on(base138, "v1.38.0"), oldRel: base136, newRel: base138,
			want: []wantErr{{field: "spec.topology.classRef.name", contains: []string{
				`"aws-base-1-38-v1"`,
				`moving from ClusterStackRelease "aws-base-1-36-v1" (Kubernetes 1.36) to "aws-base-1-38-v1" (Kubernetes 1.38) skips a Kubernetes minor version`,
				"for Kubernetes 1.36 or 1.37",
			}}},
		},
		{
			name: "skips a minor and has the wrong version", old: on(base136, "v1.36.3"), updated: on(base138, "v1.36.3"),
			oldRel: base136, newRel: base138,
			want: []wantErr{{field: "spec.topology.version"}, {field: "spec.topology.classRef.name", contains: []string{"skips"}}},
		},
		{
			name: "downgrades the minor", old: on(base136, "v1.36.3"), updated: on(base135, "v1.35.2"), oldRel: base136, newRel: base135,
			want: []wantErr{{field: "spec.topology.classRef.name", contains: []string{"downgrades Kubernetes", "for Kubernetes 1.36 or 1.37"}}},
		},
		{
			name: "changes the major", old: on(base136, "v1.36.3"), updated: on(base236, "v2.0.0"), oldRel: base136, newRel: base236,
			want: []wantErr{{field: "spec.topology.classRef.name", contains: []string{"skips", "for Kubernetes 1.36 or 1.37"}}},
		},
		{
			name: "another stack of the provider", old: on(base136, "v1.36.3"), updated: on(other136, "v1.36.3"), oldRel: base136, newRel: other136,
			want: []wantErr{{field: "spec.topology.classRef.name", contains: []string{
				`the Cluster uses ClusterStackRelease "aws-base-1-36-v1" of stack aws/base and cannot move to "aws-other-1-36-v1" of stack aws/other`,
				"aws-base-<major>-<minor>-<version>",
			}}},
		},
		{
			name: "another provider", old: on(base136, "v1.36.3"), updated: on(gcp136, "v1.36.3"), oldRel: base136, newRel: gcp136,
			want: []wantErr{{field: "spec.topology.classRef.name", contains: []string{"of stack gcp/base"}}},
		},
		{name: "to a ClusterClass that is not a release", old: on(base136, "v1.36.3"), updated: cluster("my-class", "v1.40.0"), oldRel: base136},
		{name: "between ClusterClasses that are not releases", old: cluster("a", "v1.30.0"), updated: cluster("b", "v1.33.0")},
		{name: "from a ClusterClass that is not a release", old: cluster("my-class", "v1.30.0"), updated: on(base138, "v1.38.0"), newRel: base138},
		{
			name: "from a ClusterClass that is not a release, wrong version", old: cluster("my-class", "v1.30.0"), updated: on(base138, "v1.30.0"),
			newRel: base138, want: []wantErr{{field: "spec.topology.version"}},
		},
		{
			name: "to a release of another namespace", old: on(base136, "v1.36.3"),
			updated: withClassNamespace(on(base137, "v1.37.1"), "team-b"), oldRel: base136, newRel: inNamespace(base137, "team-b"),
			want: []wantErr{{field: "spec.topology.classRef.namespace", contains: []string{"only serves Clusters of its own namespace"}}},
		},
		{
			// The old release of another namespace is not this namespace's stack: no move rules.
			name: "from a release of another namespace", old: withClassNamespace(on(base136, "v1.36.3"), "team-b"),
			updated: on(base138, "v1.38.0"), oldRel: inNamespace(base136, "team-b"), newRel: base138,
		},
		{
			name: "only the explicit classRef.namespace of its own namespace added", old: on(base136, "v1.36.0"),
			updated: withClassNamespace(on(base136, "v1.36.0"), ns), oldRel: base136, newRel: base136,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs, warnings := ValidateClusterUpdate(tc.old, tc.updated, tc.oldRel, tc.newRel)
			checkErrors(t, errs, tc.want)
			checkWarnings(t, warnings, tc.warnings)
		})
	}
}

func TestParseMinor(t *testing.T) {
	for in, want := range map[string][2]int{"1.36": {1, 36}, "2.0": {2, 0}} {
		ma, mi, err := parseMinor(in)
		if err != nil || ma != want[0] || mi != want[1] {
			t.Errorf("parseMinor(%q) = %d, %d, %v; want %v", in, ma, mi, err, want)
		}
	}
	for _, in := range []string{"", "1", "1.x", "v1.36", "1.36.3"} {
		if _, _, err := parseMinor(in); err == nil {
			t.Errorf("parseMinor(%q): no error", in)
		}
	}
}

func TestValidateUnpublishedRelease(t *testing.T) {
	cs := &csv1.ClusterStack{ObjectMeta: metav1.ObjectMeta{Name: "aws-base-1-36", Namespace: ns}, Spec: csv1.ClusterStackSpec{
		Provider: "aws", Name: "base", KubernetesVersion: "1.36",
		Source: csv1.StackSource{URL: "https://user:secret@git.example.com/stacks.git", Path: "aws/base/1-36"},
	}}
	tags := []string{"aws-base-1-36-v1", "aws-base-1-36-v2", "aws-base-1-36-v10", "aws-base-1-35-v9", "gcp-base-1-36-v7", "unrelated"}
	tests := []struct {
		name  string
		class string
		want  []string // substrings of the one error; none when nil
	}{
		{name: "published tag", class: "aws-base-1-36-v2"},
		{name: "unpublished tag: names it, the stack, what to do and the published releases newest first", class: "aws-base-1-36-v404",
			want: []string{`"aws-base-1-36-v404"`, `ClusterStack "aws-base-1-36"`, "not published", "publish the tag first", "aws-base-1-36-v10, aws-base-1-36-v2, aws-base-1-36-v1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := ValidateUnpublishedRelease(cluster(tt.class, "v1.36.3"), cs, tags)
			if tt.want == nil {
				if len(errs) != 0 {
					t.Fatalf("errors = %v, want none", errs)
				}
				return
			}
			if len(errs) != 1 || errs[0].Field != "spec.topology.classRef.name" {
				t.Fatalf("errors = %v, want one on spec.topology.classRef.name", errs)
			}
			for _, w := range tt.want {
				if !strings.Contains(errs[0].Error(), w) {
					t.Errorf("error %q does not contain %q", errs[0].Error(), w)
				}
			}
			if strings.Contains(errs[0].Error(), "secret") || strings.Contains(errs[0].Error(), "aws-base-1-35-v9") {
				t.Errorf("error %q leaks credentials or lists another stack's release", errs[0].Error())
			}
		})
	}
	none := ValidateUnpublishedRelease(cluster("aws-base-1-36-v3", "v1.36.3"), cs, nil)
	if len(none) != 1 || !strings.Contains(none[0].Error(), "no release of the stack for this Kubernetes minor is published yet") {
		t.Errorf("with no tags: %v", none)
	}
}

func TestValidateMoveTiming(t *testing.T) {
	// A window daily at 02:00 UTC for an hour, for the canary wave; none for the rest.
	daily := []csv1.MaintenanceWindow{{Schedule: "0 2 * * *", Duration: metav1.Duration{Duration: time.Hour}}}
	stackWith := func(mutate func(*csv1.ClusterStack)) *csv1.ClusterStack {
		cs := &csv1.ClusterStack{ObjectMeta: metav1.ObjectMeta{Name: "aws-base-1-36", Namespace: ns}}
		cs.Spec.Updates = &csv1.UpdatePolicy{Waves: []csv1.RolloutWave{{Name: "canary",
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"rollout": "canary"}}, Windows: append([]csv1.MaintenanceWindow(nil), daily...)}}}
		if mutate != nil {
			mutate(cs)
		}
		return cs
	}
	canary := cluster(base136v2.Name, "v1.36.4")
	canary.Labels = map[string]string{"rollout": "canary"}
	other := cluster(base136v2.Name, "v1.36.4")
	inside := time.Date(2026, 11, 28, 2, 30, 0, 0, time.UTC)
	outside := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		c        *clusterv1.Cluster
		from, to *csv1.ClusterStackRelease
		cs       *csv1.ClusterStack
		now      time.Time
		want     string // "" admitted
	}{
		{name: "inside the window", c: canary, from: base136, to: base136v2, cs: stackWith(nil), now: inside},
		{name: "outside the window: refused, naming the wave and the next opening", c: canary, from: base136, to: base136v2, cs: stackWith(nil), now: outside,
			want: `Cluster c1 is in wave canary of ClusterStack aws-base-1-36, and no maintenance window of the wave is open now: the maintenance window "0 2 * * *" for 1h (UTC) opens at 2026-11-29T02:00:00Z (in 14h)`},
		{name: "a wave without windows moves at any time", c: other, from: base136, to: base136v2, cs: stackWith(nil), now: outside},
		{name: "the stack's windows cover the remaining wave", c: other, from: base136, to: base136v2, now: outside,
			cs: stackWith(func(cs *csv1.ClusterStack) { cs.Spec.Updates.Windows = daily }), want: "wave remaining of ClusterStack aws-base-1-36"},
		{name: "a rollback is allowed outside the window", c: canary, from: base136v2, to: base136, cs: stackWith(nil), now: outside},
		{name: "held by the annotation: refused inside the window too", c: canary, from: base136, to: base136v2, now: inside,
			cs: stackWith(func(cs *csv1.ClusterStack) {
				cs.Annotations = map[string]string{csv1.HoldAnnotation: "alice: CVE review"}
				cs.CreationTimestamp = metav1.NewTime(inside.Add(-time.Hour))
			}),
			want: "the rollout of ClusterStack aws-base-1-36 is held by alice since 2026-11-28T01:30:00Z (the clusterstack.io/hold annotation): CVE review"},
		{name: "held by a pull request's label", c: other, from: base136, to: base136v2, now: inside,
			cs: stackWith(func(cs *csv1.ClusterStack) {
				cs.Status.Hold = &csv1.RolloutHold{Source: csv1.HoldFromPullRequestLabel, By: "bob", PullRequest: "https://forge/pulls/3", Since: metav1.NewTime(inside)}
			}),
			want: "held by bob since 2026-11-28T02:30:00Z (the hold label of pull request https://forge/pulls/3)"},
		{name: "a rollback is allowed while held", c: canary, from: base136v2, to: base136, now: inside,
			cs: stackWith(func(cs *csv1.ClusterStack) { cs.Annotations = map[string]string{csv1.HoldAnnotation: "x"} })},
		{name: "a window that does not parse counts as closed", c: canary, from: base136, to: base136v2, now: inside,
			cs:   stackWith(func(cs *csv1.ClusterStack) { cs.Spec.Updates.Waves[0].Windows[0].TimeZone = "Mars/Olympus" }),
			want: `time zone "Mars/Olympus" is not in the time zone database`},
		{name: "no update policy", c: canary, from: base136, to: base136v2, now: outside,
			cs: &csv1.ClusterStack{ObjectMeta: metav1.ObjectMeta{Name: "aws-base-1-36", Namespace: ns}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateMoveTiming(tc.c, tc.from, tc.to, tc.cs, tc.now)
			if tc.want == "" {
				if len(errs) != 0 {
					t.Fatalf("refused: %v", errs)
				}
				return
			}
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want) {
				t.Fatalf("errors %v, want one containing %q", errs, tc.want)
			}
		})
	}
}
