package fleetedit

import (
	"strings"
	"testing"
	"testing/fstest"
)

const stackDoc = `# The stack.
apiVersion: clusterstack.io/v1alpha1
kind: ClusterStack
metadata:
  name: s
  namespace: ns
spec:
  versions:
    - v1   # first
    - "v2"
  interval: 10s
`

const clusterV1beta2 = `---
# leading comment
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata:
  name: c1
  labels: {rollout: canary}
spec:
  topology:
    classRef: {name: 'aws-base-1-36-v1'}
    version: v1.36.3  # pinned
`

const clusterV1beta1 = `apiVersion: cluster.x-k8s.io/v1beta1
kind: Cluster
metadata:
  name: c2
  namespace: ns
spec:
  topology:
    class: aws-base-1-36-v1
    version: "v1.36.3"
`

func stackKey() ObjectKey { return ObjectKey{Kind: "ClusterStack", Namespace: "ns", Name: "s"} }

func TestApply(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		edit           Edit
		unchanged      bool
		err            string
	}{
		{name: "block list, same length: items replaced, comments and quotes kept", in: stackDoc, edit: Edit{Key: stackKey(), Versions: []string{"v3", "v4"}},
			want: strings.Replace(strings.Replace(stackDoc, "- v1   # first", "- v3   # first", 1), `- "v2"`, `- "v4"`, 1)},
		{name: "block list shrinks", in: stackDoc, edit: Edit{Key: stackKey(), Versions: []string{"v4"}},
			want: strings.Replace(stackDoc, "    - v1   # first\n    - \"v2\"\n", "    - v4   # first\n", 1)},
		{name: "block list grows like its last item", in: stackDoc, edit: Edit{Key: stackKey(), Versions: []string{"v1", "v2", "v3"}},
			want: strings.Replace(stackDoc, "    - \"v2\"\n", "    - \"v2\"\n    - v3\n", 1)},
		{name: "flow list", in: strings.Replace(stackDoc, "versions:\n    - v1   # first\n    - \"v2\"\n", "versions: [\"v1\"] # pinned\n", 1),
			edit: Edit{Key: stackKey(), Versions: []string{"v2", "v3"}},
			want: strings.Replace(stackDoc, "versions:\n    - v1   # first\n    - \"v2\"\n", "versions: [\"v2\", \"v3\"] # pinned\n", 1)},
		{name: "no-op", in: stackDoc, edit: Edit{Key: stackKey(), Versions: []string{"v1", "v2"}}, unchanged: true},
		{name: "v1beta2 flow classRef in a multi-document file, default namespace",
			in:   stackDoc + clusterV1beta2,
			edit: Edit{Key: ObjectKey{Kind: "Cluster", Namespace: "ns", Name: "c1"}, Class: "aws-base-1-36-v4", KubernetesVersion: "v1.36.4"},
			want: stackDoc + strings.Replace(strings.Replace(clusterV1beta2, "'aws-base-1-36-v1'", "'aws-base-1-36-v4'", 1), "v1.36.3  # pinned", "v1.36.4  # pinned", 1)},
		{name: "v1beta1 class, double-quoted version", in: clusterV1beta1,
			edit: Edit{Key: ObjectKey{Kind: "Cluster", Namespace: "ns", Name: "c2"}, Class: "aws-base-1-37-v1", KubernetesVersion: "v1.37.0"},
			want: strings.Replace(strings.Replace(clusterV1beta1, "class: aws-base-1-36-v1", "class: aws-base-1-37-v1", 1), `"v1.36.3"`, `"v1.37.0"`, 1)},
		{name: "other objects are left alone", in: clusterV1beta1, edit: Edit{Key: ObjectKey{Kind: "Cluster", Namespace: "ns", Name: "other"}, Class: "x"}, unchanged: true},
		{name: "missing version", in: strings.Replace(clusterV1beta1, "    version: \"v1.36.3\"\n", "", 1),
			edit: Edit{Key: ObjectKey{Kind: "Cluster", Namespace: "ns", Name: "c2"}, KubernetesVersion: "v1.37.0"}, err: "Cluster ns/c2: spec.topology.version is not set"},
		{name: "alias refused", in: "x: &v aws-base-1-36-v1\n---\n" + strings.Replace(clusterV1beta1, "class: aws-base-1-36-v1", "class: *v", 1),
			edit: Edit{Key: ObjectKey{Kind: "Cluster", Namespace: "ns", Name: "c2"}, Class: "y"}, err: "alias"},
		{name: "missing versions", in: strings.Replace(stackDoc, "  versions:\n    - v1   # first\n    - \"v2\"\n", "", 1),
			edit: Edit{Key: stackKey(), Versions: []string{"v2"}}, err: "spec.versions is not set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, changed, err := Apply([]byte(tc.in), "f.yaml", []Edit{tc.edit}, "ns", "")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "f.yaml") {
					t.Fatalf("err = %v, want one naming f.yaml and %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.unchanged {
				if changed || string(out) != tc.in {
					t.Fatalf("changed: %q", out)
				}
				return
			}
			if !changed || string(out) != tc.want {
				t.Fatalf("got:\n%s\nwant:\n%s", out, tc.want)
			}
			again, changed, err := Apply(out, "f.yaml", []Edit{tc.edit}, "ns", "")
			if err != nil || changed || string(again) != string(out) {
				t.Errorf("applying again changed it: %v %v\n%s", changed, err, again)
			}
		})
	}
}

func TestScan(t *testing.T) {
	fsys := fstest.MapFS{
		"fleet/stack.yaml":            {Data: []byte(stackDoc)},
		"fleet/clusters/a.yml":        {Data: []byte(clusterV1beta2 + "---\n" + clusterV1beta1)},
		"fleet/kustomization.yaml":    {Data: []byte("resources: [stack.yaml]\n")},
		"fleet/broken.yaml":           {Data: []byte("a: [\n")},
		"fleet/dup/again.yaml":        {Data: []byte(clusterV1beta1)},
		"fleet/notes.txt":             {Data: []byte("kind: ClusterStack\n")},
		"elsewhere/clusterstack.yaml": {Data: []byte(stackDoc)},
	}
	idx, err := Scan(fsys, "fleet", "default", "")
	if err != nil {
		t.Fatal(err)
	}
	if loc, err := idx.Lookup(stackKey()); err != nil || loc.Path != "fleet/stack.yaml" {
		t.Errorf("stack: %v %v", loc, err)
	}
	if loc, err := idx.Lookup(ObjectKey{Kind: "Cluster", Namespace: "default", Name: "c1"}); err != nil || loc != (Location{Path: "fleet/clusters/a.yml", Document: 0}) {
		t.Errorf("c1 without namespace is in the default namespace: %v %v", loc, err)
	}
	if _, err := idx.Lookup(ObjectKey{Kind: "Cluster", Namespace: "ns", Name: "c2"}); err == nil || !strings.Contains(err.Error(), "more than once") {
		t.Errorf("duplicate: %v", err)
	}
	if len(idx.Skipped) != 1 || idx.Skipped[0].Path != "fleet/broken.yaml" {
		t.Errorf("skipped: %+v", idx.Skipped)
	}
	idx, err = Scan(fsys, "fleet/clusters", "default", "target")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := idx.Lookup(ObjectKey{Kind: "Cluster", Namespace: "target", Name: "c2"}); err != nil {
		t.Errorf("targetNamespace overrides: %v", err)
	}
}

func FuzzApply(f *testing.F) {
	f.Add(stackDoc, "v9")
	f.Add(clusterV1beta2, "x-1")
	f.Add(clusterV1beta1, "a: b")
	f.Fuzz(func(t *testing.T, in, v string) {
		edits := []Edit{{Key: stackKey(), Versions: []string{v}}, {Key: ObjectKey{Kind: "Cluster", Namespace: "ns", Name: "c1"}, Class: v, KubernetesVersion: v}}
		out, _, err := Apply([]byte(in), "f.yaml", edits, "ns", "")
		if err != nil || v == "" {
			return
		}
		if _, err := parse(out); err != nil {
			t.Fatalf("output does not parse: %v\n%s", err, out)
		}
		again, changed, err := Apply(out, "f.yaml", edits, "ns", "")
		if err != nil || changed || string(again) != string(out) {
			t.Fatalf("not idempotent (changed %v, err %v):\n%s\n---\n%s", changed, err, out, again)
		}
	})
}
