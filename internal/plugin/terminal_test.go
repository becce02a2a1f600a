package plugin

import (
	"strings"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// hostile is a Flux message a chart could make helm-controller report: it clears the screen,
// sets the terminal's title and the clipboard (OSC 52), returns the cursor over the line and
// reverses the text's direction.
const hostile = "install failed\x1b[2J\x1b]0;pwned\x07\x1b]52;c;Y3VybCBldmlsLnNo\x07\rReady\b\u202eyddeR"

// TestTextOutputIsTerminalSafe: what objects say reaches the terminal escaped, in every text
// writer; the writers' own colours still work, and the data passed in is not changed.
func TestTextOutputIsTerminalSafe(t *testing.T) {
	tree := BuildTree(TreeInput{
		Stacks:   []csv1.ClusterStack{clusterStack("aws-base-1-36")},
		Releases: []csv1.ClusterStackRelease{release("aws-base-1-36-v1", "v1", ready())},
		Clusters: []clusterv1.Cluster{cluster("one", "aws-base-1-36-v1")},
		Addons: []csv1.ClusterAddon{addon("one", "aws-base-1-36-v1", func(a *csv1.ClusterAddon) {
			a.Status.Conditions = degraded("component cni: " + hostile)
		})},
		Flux: NewFluxIndex([]helmv2.HelmRelease{helmRelease("one-cni", []metav1.Condition{cond("Ready", "False", "InstallFailed", hostile)})}, nil),
	})
	verdict := Verdict{Cluster: "team-a/one", Blocked: true, Blocker: "Component", Summary: hostile, LastFailure: hostile,
		Evidence: []Evidence{{Object: "HelmRelease team-a/one-cni", State: "Failed", Detail: hostile}}}
	updates := Updates{Stacks: []StackUpdates{{Namespace: "team-a", Name: "aws-base-1-36", AvailableVersion: "v2\x1b[8m"}}}
	values := ClusterValues{Cluster: "team-a/one", Release: "aws-base-1-36-v1\x1b]0;x\x07"}
	for name, write := range map[string]func(*strings.Builder) error{
		"tree":    func(b *strings.Builder) error { return WriteTree(b, tree, Style{Color: true}) },
		"why":     func(b *strings.Builder) error { return WriteVerdict(b, verdict, Style{Color: true}) },
		"updates": func(b *strings.Builder) error { return WriteUpdates(b, updates, Style{Color: true}) },
		"values":  func(b *strings.Builder) error { return WriteValues(b, values, Style{Color: true}) },
	} {
		var b strings.Builder
		if err := write(&b); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out := b.String()
		// Only the writer's own colours (ESC [ <digits> m) may remain.
		for i := strings.Index(out, "\x1b"); i >= 0; i = strings.Index(out, "\x1b") {
			j := strings.IndexByte(out[i:], 'm')
			if j < 0 || strings.Trim(out[i+2:i+j], "0123456789;") != "" || out[i+1] != '[' || strings.ContainsAny(out[i:i+j], "\x07]") {
				t.Errorf("%s output carries an escape sequence of the object's: %q", name, out[i:min(len(out), i+12)])
				break
			}
			out = out[i+j:]
		}
		for _, c := range []string{"\r", "\b", "\x07", "\u202e"} {
			if strings.Contains(b.String(), c) {
				t.Errorf("%s output carries %q", name, c)
			}
		}
	}
	var b strings.Builder
	if err := WriteVerdict(&b, verdict, Style{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `install failed\x1b[2J\x1b]0;pwned\a`) || !strings.Contains(b.String(), `\u202e`) {
		t.Errorf("the escaped message is not shown as text:\n%s", b.String())
	}
	if verdict.Summary != hostile || tree.Stacks[0].Releases[0].Clusters[0].Message == TerminalSafe(tree.Stacks[0].Releases[0].Clusters[0].Message) {
		t.Error("the writers changed the data passed in (the JSON and YAML output print it as it is)")
	}
	if got := TerminalSafe("line one\n\tline two, ünïcödé ✓"); got != "line one\n\tline two, ünïcödé ✓" {
		t.Errorf("TerminalSafe changed printable text: %q", got)
	}
}
