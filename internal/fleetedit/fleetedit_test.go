package fleetedit

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

var (
	stack  = ObjectKey{Kind: KindClusterStack, Namespace: "ns", Name: "s"}
	alpha  = ObjectKey{Kind: KindCluster, Namespace: "ns", Name: "alpha"}
	beta   = ObjectKey{Kind: KindCluster, Namespace: "ns", Name: "beta"}
	bumped = Edit{Key: alpha, Class: "docker-base-1-33-v2", KubernetesVersion: "v1.33.2"}
)

// stackBlock is a ClusterStack whose versions are a block list, with comments and blank lines
// around.
const stackBlock = `# The stack of the fleet.
apiVersion: clusterstack.io/v1alpha1
kind: ClusterStack
metadata:
  name: s   # the only one
  namespace: ns

spec:
  # Pinned versions.
  versions:
    - v1    # first
    # between
    - "v2"

  provider: docker   # trailing
`

// alphaV1beta2 is a v1beta2 Cluster with a flow classRef and comments.
const alphaV1beta2 = `apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata:
  name: alpha
  labels: {rollout: canary}
spec:
  topology:
    classRef: {name: 'docker-base-1-33-v1'}   # class
    version: v1.33.1  # pinned
    workers: {}
`

func TestApply(t *testing.T) {
	for _, tc := range []struct {
		name       string
		in         string
		edits      []Edit
		target     string // targetNamespace
		want       string // "" with err == "": unchanged
		err        string // the error must also name the file
		notChanged bool
	}{
		{
			name:  "block list, same length: items replaced in their quoting, comments and blank lines kept",
			in:    stackBlock,
			edits: []Edit{{Key: stack, Versions: []string{"v3", "v4"}}},
			want: `# The stack of the fleet.
apiVersion: clusterstack.io/v1alpha1
kind: ClusterStack
metadata:
  name: s   # the only one
  namespace: ns

spec:
  # Pinned versions.
  versions:
    - v3    # first
    # between
    - "v4"

  provider: docker   # trailing
`,
		},
		{
			name:  "block list grows: lines written like the last item",
			in:    stackBlock,
			edits: []Edit{{Key: stack, Versions: []string{"v1", "v2", "v3", "v4-alpha.1"}}},
			want: `# The stack of the fleet.
apiVersion: clusterstack.io/v1alpha1
kind: ClusterStack
metadata:
  name: s   # the only one
  namespace: ns

spec:
  # Pinned versions.
  versions:
    - v1    # first
    # between
    - "v2"
    - "v3"
    - "v4-alpha.1"

  provider: docker   # trailing
`,
		},
		{
			name:  "block list shrinks: the removed items' lines go, the comments before them stay",
			in:    stackBlock,
			edits: []Edit{{Key: stack, Versions: []string{"v9"}}},
			want: `# The stack of the fleet.
apiVersion: clusterstack.io/v1alpha1
kind: ClusterStack
metadata:
  name: s   # the only one
  namespace: ns

spec:
  # Pinned versions.
  versions:
    - v9    # first
    # between

  provider: docker   # trailing
`,
		},
		{
			name: "block list at column 0 with wide dashes, growing at the end of a file without a final newline",
			in: `apiVersion: clusterstack.io/v1alpha1
kind: ClusterStack
metadata: {name: s, namespace: ns}
spec:
  versions:
  -   v1 # one`,
			edits: []Edit{{Key: stack, Versions: []string{"v1", "v2"}}},
			want: `apiVersion: clusterstack.io/v1alpha1
kind: ClusterStack
metadata: {name: s, namespace: ns}
spec:
  versions:
  -   v1 # one
  -   v2`,
		},
		{
			name: "block list shrinks at the end of a file",
			in: `apiVersion: clusterstack.io/v1alpha1
kind: ClusterStack
metadata: {name: s, namespace: ns}
spec:
  versions:
  - v1
  - v2 # two
`,
			edits: []Edit{{Key: stack, Versions: []string{"v3"}}},
			want: `apiVersion: clusterstack.io/v1alpha1
kind: ClusterStack
metadata: {name: s, namespace: ns}
spec:
  versions:
  - v3
`,
		},
		{
			name: "flow list grows in its quoting, the comment after it kept",
			in: `apiVersion: clusterstack.io/v1alpha1
kind: ClusterStack
metadata: {name: s, namespace: ns}
spec:
  versions: ["v1"]   # pinned
`,
			edits: []Edit{{Key: stack, Versions: []string{"v2", "v3"}}},
			want: `apiVersion: clusterstack.io/v1alpha1
kind: ClusterStack
metadata: {name: s, namespace: ns}
spec:
  versions: ["v2", "v3"]   # pinned
`,
		},
		{
			name: "flow list shrinks",
			in: `apiVersion: clusterstack.io/v1alpha1
kind: ClusterStack
metadata: {name: s, namespace: ns}
spec: {versions: [ v1, 'v2',v3 ], provider: docker}
`,
			edits: []Edit{{Key: stack, Versions: []string{"v0", "v2"}}},
			want: `apiVersion: clusterstack.io/v1alpha1
kind: ClusterStack
metadata: {name: s, namespace: ns}
spec: {versions: [ v0, 'v2' ], provider: docker}
`,
		},
		{
			name: "flow list over several lines keeps its layout",
			in: `apiVersion: clusterstack.io/v1alpha1
kind: ClusterStack
metadata: {name: s, namespace: ns}
spec:
  versions: [
    v1, # one
    v2,
  ]
`,
			edits: []Edit{{Key: stack, Versions: []string{"v1", "v3", "v4"}}},
			want: `apiVersion: clusterstack.io/v1alpha1
kind: ClusterStack
metadata: {name: s, namespace: ns}
spec:
  versions: [
    v1, # one
    v3, v4,
  ]
`,
		},
		{
			name: "empty flow list is filled",
			in: `apiVersion: clusterstack.io/v1alpha1
kind: ClusterStack
metadata: {name: s, namespace: ns}
spec:
  versions: []
`,
			edits: []Edit{{Key: stack, Versions: []string{"v1", "v2"}}},
			want: `apiVersion: clusterstack.io/v1alpha1
kind: ClusterStack
metadata: {name: s, namespace: ns}
spec:
  versions: [v1, v2]
`,
		},
		{
			name:  "v1beta2 flow classRef: single quotes and trailing comments kept",
			in:    alphaV1beta2,
			edits: []Edit{bumped},
			want: `apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata:
  name: alpha
  labels: {rollout: canary}
spec:
  topology:
    classRef: {name: 'docker-base-1-33-v2'}   # class
    version: v1.33.2  # pinned
    workers: {}
`,
		},
		{
			name: "v1beta2 block classRef, double-quoted version, tagged and anchored values",
			in: `apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata:
  name: alpha
spec:
  topology:
    classRef:
      name: !!str docker-base-1-33-v1
      namespace: classes
    version: &k8s "v1.33.1"
`,
			edits: []Edit{bumped},
			want: `apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata:
  name: alpha
spec:
  topology:
    classRef:
      name: !!str docker-base-1-33-v2
      namespace: classes
    version: &k8s "v1.33.2"
`,
		},
		{
			name: "v1beta1 class",
			in: `apiVersion: cluster.x-k8s.io/v1beta1
kind: Cluster
metadata:
  name: alpha
  namespace: ns
spec:
  clusterNetwork: {pods: {cidrBlocks: ["192.168.0.0/16"]}}
  topology:
    class: docker-base-1-33-v1
    version: 'v1.33.1'
`,
			edits: []Edit{bumped},
			want: `apiVersion: cluster.x-k8s.io/v1beta1
kind: Cluster
metadata:
  name: alpha
  namespace: ns
spec:
  clusterNetwork: {pods: {cidrBlocks: ["192.168.0.0/16"]}}
  topology:
    class: docker-base-1-33-v2
    version: 'v1.33.2'
`,
		},
		{
			name: "multi-document file: only the second document is edited",
			in: `---
# The first cluster.
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: beta}
spec:
  topology: {classRef: {name: docker-base-1-33-v1}, version: v1.33.1}
---

# The second cluster.
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: alpha}
spec:
  topology: {classRef: {name: docker-base-1-33-v1}, version: v1.33.1}
...
# trailing comment
`,
			edits: []Edit{bumped},
			want: `---
# The first cluster.
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: beta}
spec:
  topology: {classRef: {name: docker-base-1-33-v1}, version: v1.33.1}
---

# The second cluster.
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: alpha}
spec:
  topology: {classRef: {name: docker-base-1-33-v2}, version: v1.33.2}
...
# trailing comment
`,
		},
		{
			name:  "both objects of a file, the ClusterStack and a Cluster",
			in:    stackBlock + "---\n" + alphaV1beta2,
			edits: []Edit{{Key: stack, Versions: []string{"v2"}}, bumped},
			want: strings.Replace(stackBlock, "    - v1    # first\n    # between\n    - \"v2\"\n", "    - v2    # first\n    # between\n", 1) + "---\n" +
				strings.NewReplacer("docker-base-1-33-v1", "docker-base-1-33-v2", "v1.33.1", "v1.33.2").Replace(alphaV1beta2),
		},
		{
			name:  "the same edit twice is one edit",
			in:    alphaV1beta2,
			edits: []Edit{bumped, {Key: alpha, KubernetesVersion: "v1.33.2"}},
			want:  strings.NewReplacer("docker-base-1-33-v1", "docker-base-1-33-v2", "v1.33.1", "v1.33.2").Replace(alphaV1beta2),
		},
		{
			name:  "a plain value that would not read back as a string is quoted",
			in:    strings.Replace(alphaV1beta2, "version: v1.33.1", "version: 1.33", 1),
			edits: []Edit{{Key: alpha, KubernetesVersion: "1.34"}, {Key: alpha, Class: "yes"}},
			want:  strings.NewReplacer("'docker-base-1-33-v1'", "'yes'", "version: v1.33.1", `version: "1.34"`).Replace(alphaV1beta2),
		},
		{
			name: "the Kustomization's target namespace overrides the manifest's",
			in: `apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: alpha, namespace: elsewhere}
spec: {topology: {classRef: {name: a}, version: v1.33.1}}
`,
			target: "ns",
			edits:  []Edit{bumped},
			want: `apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: alpha, namespace: elsewhere}
spec: {topology: {classRef: {name: docker-base-1-33-v2}, version: v1.33.2}}
`,
		},
		{
			name:  "CRLF line breaks: values replaced, lines added with CRLF",
			in:    strings.ReplaceAll(stackBlock, "\n", "\r\n"),
			edits: []Edit{{Key: stack, Versions: []string{"v5", "v6", "v7"}}},
			want: strings.ReplaceAll(strings.Replace(stackBlock, "    - v1    # first\n    # between\n    - \"v2\"\n",
				"    - v5    # first\n    # between\n    - \"v6\"\n    - \"v7\"\n", 1), "\n", "\r\n"),
		},
		{
			name:  "CRLF line breaks: lines removed",
			in:    strings.ReplaceAll(stackBlock, "\n", "\r\n"),
			edits: []Edit{{Key: stack, Versions: []string{"v5"}}},
			want:  strings.ReplaceAll(strings.Replace(stackBlock, "    - v1    # first\n    # between\n    - \"v2\"\n", "    - v5    # first\n    # between\n", 1), "\n", "\r\n"),
		},
		{
			name:  "a byte order mark is kept",
			in:    "\uFEFF" + alphaV1beta2,
			edits: []Edit{bumped},
			want:  "\uFEFF" + strings.NewReplacer("docker-base-1-33-v1", "docker-base-1-33-v2", "v1.33.1", "v1.33.2").Replace(alphaV1beta2),
		},
		{
			name:  "non-ASCII text before the value on its line",
			in:    strings.Replace(alphaV1beta2, "{rollout: canary}", "{rollout: canary}\n  annotations: {note: \"ünïcödé ✓\"}", 1),
			edits: []Edit{{Key: alpha, KubernetesVersion: "v1.33.2"}},
			want:  strings.Replace(strings.Replace(alphaV1beta2, "{rollout: canary}", "{rollout: canary}\n  annotations: {note: \"ünïcödé ✓\"}", 1), "v1.33.1", "v1.33.2", 1),
		},
		{
			name:  "line separators (LS) and lone CRs count as line breaks, as the parser counts them",
			in:    strings.Replace(alphaV1beta2, "spec:\n", "# a note\u2028# continued\r# and continued\nspec:\n", 1),
			edits: []Edit{bumped},
			want: strings.NewReplacer("docker-base-1-33-v1", "docker-base-1-33-v2", "v1.33.1", "v1.33.2").Replace(
				strings.Replace(alphaV1beta2, "spec:\n", "# a note\u2028# continued\r# and continued\nspec:\n", 1)),
		},
		{name: "no-op: values as wanted", in: stackBlock + "---\n" + alphaV1beta2, notChanged: true,
			edits: []Edit{{Key: stack, Versions: []string{"v1", "v2"}}, {Key: alpha, Class: "docker-base-1-33-v1", KubernetesVersion: "v1.33.1"}}},
		{name: "no-op: values as wanted behind an alias", notChanged: true,
			in:    "apiVersion: cluster.x-k8s.io/v1beta1\nkind: Cluster\nmetadata: {name: alpha, namespace: ns, labels: {v: &v v1.33.1}}\nspec: {topology: {class: c, version: *v}}\n",
			edits: []Edit{{Key: alpha, KubernetesVersion: "v1.33.1"}}},
		{name: "no-op: other objects are left alone", in: alphaV1beta2, edits: []Edit{{Key: beta, Class: "x"}}, notChanged: true},
		{name: "no-op: no edits", in: "not: [yaml", notChanged: true},

		{name: "missing spec.topology.version", in: strings.Replace(alphaV1beta2, "    version: v1.33.1  # pinned\n", "", 1),
			edits: []Edit{bumped}, err: "Cluster ns/alpha: spec.topology.version is not set"},
		{name: "empty spec.topology.version", in: strings.Replace(alphaV1beta2, "version: v1.33.1", "version:", 1),
			edits: []Edit{bumped}, err: "Cluster ns/alpha: spec.topology.version: the value is empty"},
		{name: "no topology", in: "apiVersion: cluster.x-k8s.io/v1beta2\nkind: Cluster\nmetadata: {name: alpha}\nspec: {}\n",
			edits: []Edit{bumped}, err: "Cluster ns/alpha: spec.topology is not set"},
		{name: "neither class nor classRef", in: strings.Replace(alphaV1beta2, "classRef: {name: 'docker-base-1-33-v1'}", "other: x", 1),
			edits: []Edit{bumped}, err: "neither spec.topology.classRef.name (v1beta2) nor spec.topology.class (v1beta1) is set"},
		{name: "both class and classRef", in: strings.Replace(alphaV1beta2, "    version:", "    class: x\n    version:", 1),
			edits: []Edit{bumped}, err: "both spec.topology.classRef and spec.topology.class are set"},
		{name: "missing spec.versions", in: strings.Replace(stackBlock, "  versions:\n    - v1    # first\n    # between\n    - \"v2\"\n", "", 1),
			edits: []Edit{{Key: stack, Versions: []string{"v2"}}}, err: "ClusterStack ns/s: spec.versions is not set"},
		{name: "null spec.versions", in: "apiVersion: clusterstack.io/v1alpha1\nkind: ClusterStack\nmetadata: {name: s, namespace: ns}\nspec:\n  versions:\n  provider: docker\n",
			edits: []Edit{{Key: stack, Versions: []string{"v2"}}}, err: "spec.versions: the list is null"},
		{name: "alias refused", in: "apiVersion: cluster.x-k8s.io/v1beta1\nkind: Cluster\nmetadata: {name: alpha, namespace: ns, labels: {v: &v v1.33.1}}\nspec: {topology: {class: c, version: *v}}\n",
			edits: []Edit{bumped}, err: "Cluster ns/alpha: spec.topology.version is an alias (*v)"},
		{name: "anchor used elsewhere refused", in: "apiVersion: cluster.x-k8s.io/v1beta1\nkind: Cluster\nmetadata: {name: alpha, namespace: ns}\nspec:\n  topology: {class: c, version: &v v1.33.1}\n  copy: *v\n",
			edits: []Edit{bumped}, err: "spec.topology.version is anchored (&v) and used elsewhere in the document through *v"},
		{name: "anchored topology used elsewhere refused", in: "apiVersion: cluster.x-k8s.io/v1beta1\nkind: Cluster\nmetadata: {name: alpha, namespace: ns}\nspec:\n  topology: &t {class: c, version: v1.33.1}\n  copy: *t\n",
			edits: []Edit{bumped}, err: "spec.topology is anchored (&t) and used elsewhere"},
		{name: "alias in a list refused", in: "apiVersion: clusterstack.io/v1alpha1\nkind: ClusterStack\nmetadata: {name: s, namespace: ns, labels: {v: &v v1}}\nspec: {versions: [*v]}\n",
			edits: []Edit{{Key: stack, Versions: []string{"v2"}}}, err: "spec.versions: item 1 is an alias (*v)"},
		{name: "merge key refused", in: "apiVersion: cluster.x-k8s.io/v1beta1\nkind: Cluster\nmetadata: {name: alpha, namespace: ns, labels: &l {version: v1}}\nspec:\n  topology:\n    <<: *l\n    class: c\n",
			edits: []Edit{{Key: alpha, KubernetesVersion: "v2"}}, err: "spec.topology.version is not written out in the manifest and may come from a merge key"},
		{name: "duplicate key refused", in: strings.Replace(alphaV1beta2, "    workers: {}\n", "    version: v1.33.0\n", 1),
			edits: []Edit{bumped}, err: "spec.topology.version appears more than once"},
		{name: "block scalar refused", in: strings.Replace(alphaV1beta2, "version: v1.33.1  # pinned", "version: |\n      v1.33.1", 1),
			edits: []Edit{bumped}, err: "spec.topology.version: block scalars"},
		{name: "plain value over several lines refused", in: strings.Replace(alphaV1beta2, "version: v1.33.1  # pinned", "version: v1.33\n      .1", 1),
			edits: []Edit{{Key: alpha, KubernetesVersion: "v1.34"}}, err: "written over several lines"},
		{name: "object twice in the file", in: alphaV1beta2 + "---\n" + alphaV1beta2,
			edits: []Edit{bumped}, err: "Cluster ns/alpha is defined twice in the file (documents 1 and 2)"},
		{name: "edits that disagree", in: alphaV1beta2,
			edits: []Edit{bumped, {Key: alpha, Class: "other"}}, err: "two edits set the ClusterClass"},
		{name: "versions of a Cluster", in: alphaV1beta2,
			edits: []Edit{{Key: alpha, Versions: []string{"v1"}}}, err: "a Cluster has no stack versions"},
		{name: "no versions", in: stackBlock,
			edits: []Edit{{Key: stack, Versions: []string{}}}, err: "refusing to empty spec.versions"},
		{name: "value with a newline", in: alphaV1beta2,
			edits: []Edit{{Key: alpha, Class: "a\nb"}}, err: "not printable"},
		{name: "Flux variable in the value", in: strings.Replace(alphaV1beta2, "v1.33.1", "${K8S_VERSION:=v1.33.1}", 1),
			edits: []Edit{bumped}, err: "Cluster ns/alpha: spec.topology.version is ${K8S_VERSION:=v1.33.1}, a Flux variable"},
		{name: "Flux variable in the list", in: "apiVersion: clusterstack.io/v1alpha1\nkind: ClusterStack\nmetadata: {name: s, namespace: ns}\nspec: {versions: [v1, '${V}']}\n",
			edits: []Edit{{Key: stack, Versions: []string{"v2"}}}, err: "spec.versions holds ${V}, a Flux variable"},
		{name: "Flux variable as the new value", in: alphaV1beta2,
			edits: []Edit{{Key: alpha, Class: "${CLASS}"}}, err: "would be read as a Flux variable"},
		{name: "UTF-16", in: "\xFF\xFEa\x00:\x00", edits: []Edit{bumped}, err: "UTF-16"},
		{name: "not YAML", in: "a: [", edits: []Edit{bumped}, err: "did not find expected node content"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, changed, err := Apply([]byte(tc.in), "fleet/f.yaml", tc.edits, "ns", tc.target)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.HasPrefix(err.Error(), "fleet/f.yaml: ") {
					t.Fatalf("err = %v, want one starting with fleet/f.yaml and containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.notChanged {
				if changed || string(out) != tc.in {
					t.Fatalf("changed = %v, out:\n%s", changed, out)
				}
				return
			}
			if !changed {
				t.Errorf("changed = false")
			}
			if diff := cmp.Diff(tc.want, string(out)); diff != "" {
				t.Fatalf("output (-want +got):\n%s", diff)
			}
			again, changed, err := Apply(out, "fleet/f.yaml", tc.edits, "ns", tc.target)
			if err != nil || changed || string(again) != string(out) {
				t.Errorf("applying again: changed %v, err %v:\n%s", changed, err, again)
			}
		})
	}
}

func TestScan(t *testing.T) {
	fsys := fstest.MapFS{
		"fleet/stack.yaml":                   {Data: []byte(stackBlock)},
		"fleet/clusters/two.yml":             {Data: []byte("# comment\n---\n" + alphaV1beta2 + "---\nkind: ConfigMap\n---\napiVersion: cluster.x-k8s.io/v1beta1\nkind: Cluster\nmetadata: {name: beta, namespace: other}\n")},
		"fleet/clusters/bom.yaml":            {Data: []byte("\uFEFFapiVersion: cluster.x-k8s.io/v1beta2\nkind: Cluster\nmetadata: {name: gamma}\n")},
		"fleet/clusters/again/beta.yaml":     {Data: []byte("apiVersion: cluster.x-k8s.io/v1beta2\nkind: Cluster\nmetadata: {name: beta, namespace: other}\n")},
		"fleet/broken.yaml":                  {Data: []byte("a: [\n")},
		"fleet/kustomization.yaml":           {Data: []byte("resources: [\n")},
		"fleet/clusters/Kustomization.yml":   {Data: []byte(alphaV1beta2)},
		"fleet/notes.txt":                    {Data: []byte(alphaV1beta2)},
		"fleet/.git/config.yaml":             {Data: []byte(alphaV1beta2)},
		"fleet/other-group.yaml":             {Data: []byte("apiVersion: example.com/v1\nkind: Cluster\nmetadata: {name: alpha}\n")},
		"fleet/values.yaml":                  {Data: []byte("replicas: 3\n")},
		"elsewhere/clusterstack.yaml":        {Data: []byte(stackBlock)},
		"fleet/clusters/again/anonymous.yml": {Data: []byte("apiVersion: cluster.x-k8s.io/v1beta2\nkind: Cluster\nmetadata: {}\n")},
	}
	for _, tc := range []struct {
		name, dir, target string
		objects           map[ObjectKey]Location
		conflicts         []Conflict
		skipped           []string
	}{
		{
			name: "namespaces default", dir: "fleet",
			objects: map[ObjectKey]Location{
				stack: {Path: "fleet/stack.yaml"},
				{Kind: KindCluster, Namespace: "default", Name: "alpha"}: {Path: "fleet/clusters/two.yml"},
				{Kind: KindCluster, Namespace: "default", Name: "gamma"}: {Path: "fleet/clusters/bom.yaml"},
			},
			conflicts: []Conflict{{Key: ObjectKey{Kind: KindCluster, Namespace: "other", Name: "beta"}, Locations: []Location{
				{Path: "fleet/clusters/again/beta.yaml"}, {Path: "fleet/clusters/two.yml", Document: 2},
			}}},
			skipped: []string{"fleet/broken.yaml"},
		},
		{
			name: "the target namespace overrides", dir: "./fleet/clusters/", target: "t",
			objects: map[ObjectKey]Location{
				{Kind: KindCluster, Namespace: "t", Name: "alpha"}: {Path: "fleet/clusters/two.yml"},
				{Kind: KindCluster, Namespace: "t", Name: "gamma"}: {Path: "fleet/clusters/bom.yaml"},
			},
			conflicts: []Conflict{{Key: ObjectKey{Kind: KindCluster, Namespace: "t", Name: "beta"}, Locations: []Location{
				{Path: "fleet/clusters/again/beta.yaml"}, {Path: "fleet/clusters/two.yml", Document: 2},
			}}},
		},
		{
			name: "the whole tree", dir: "/../",
			objects: map[ObjectKey]Location{
				{Kind: KindCluster, Namespace: "default", Name: "alpha"}: {Path: "fleet/clusters/two.yml"},
				{Kind: KindCluster, Namespace: "default", Name: "gamma"}: {Path: "fleet/clusters/bom.yaml"},
			},
			conflicts: []Conflict{
				{Key: ObjectKey{Kind: KindCluster, Namespace: "other", Name: "beta"}, Locations: []Location{
					{Path: "fleet/clusters/again/beta.yaml"}, {Path: "fleet/clusters/two.yml", Document: 2},
				}},
				{Key: stack, Locations: []Location{{Path: "elsewhere/clusterstack.yaml"}, {Path: "fleet/stack.yaml"}}},
			},
			skipped: []string{"fleet/broken.yaml"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			idx, err := Scan(fsys, tc.dir, "default", tc.target)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.objects, idx.Objects); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.conflicts, idx.Conflicts); diff != "" {
				t.Errorf("conflicts (-want +got):\n%s", diff)
			}
			var skipped []string
			for _, s := range idx.Skipped {
				if s.Err == nil {
					t.Errorf("%s skipped without a reason", s.Path)
				}
				skipped = append(skipped, s.Path)
			}
			if diff := cmp.Diff(tc.skipped, skipped); diff != "" {
				t.Errorf("skipped (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := Scan(fsys, "missing", "default", ""); err == nil || !strings.Contains(err.Error(), "scan missing") {
		t.Errorf("a missing directory: err = %v", err)
	}
}

func TestLookup(t *testing.T) {
	idx := Index{
		Objects:   map[ObjectKey]Location{alpha: {Path: "a.yaml"}},
		Conflicts: []Conflict{{Key: beta, Locations: []Location{{Path: "b.yaml"}, {Path: "c.yaml", Document: 2}}}},
		Skipped:   []Skipped{{Path: "broken.yaml", Err: errFor("yaml: line 1: did not find expected node content")}},
	}
	for _, tc := range []struct {
		key  ObjectKey
		want Location
		err  string
	}{
		{key: alpha, want: Location{Path: "a.yaml"}},
		{key: beta, err: "Cluster ns/beta is defined more than once (b.yaml (document 1), c.yaml (document 3)): refusing to guess which to edit"},
		{key: stack, err: "no manifest of ClusterStack ns/s found (1 file(s) could not be parsed, e.g. broken.yaml: yaml: line 1: did not find expected node content)"},
	} {
		t.Run(tc.key.String(), func(t *testing.T) {
			loc, err := idx.Lookup(tc.key)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err = %v, want %s", err, tc.err)
				}
				return
			}
			if err != nil || loc != tc.want {
				t.Fatalf("Lookup = %v, %v; want %v", loc, err, tc.want)
			}
		})
	}
}

func TestVerify(t *testing.T) {
	const before = "a: 1\nb: {c: x}\n---\nd: [1]\n"
	change := map[int]docChanges{0: {key: alpha, changes: []change{{path: []string{"b", "c"}, value: "y"}}}}
	for _, tc := range []struct {
		name, after string
		changes     map[int]docChanges
		err         string
	}{
		{name: "the change and nothing else", after: "a: 1\nb: {c: y}   # comment\n---\nd: [1]\n", changes: change},
		{name: "another value changed too", after: "a: 2\nb: {c: y}\n---\nd: [1]\n", changes: change, err: "Cluster ns/alpha would change in more than the edited values"},
		{name: "another document changed", after: "a: 1\nb: {c: y}\n---\nd: [2]\n", changes: change, err: "document 2 would change"},
		{name: "the change not made", after: before, changes: change, err: "Cluster ns/alpha would change"},
		{name: "a document lost", after: "a: 1\nb: {c: y}\n", changes: change, err: "1 documents instead of 2"},
		{name: "not YAML", after: "a: [", changes: change, err: "does not parse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := parse([]byte(before))
			if err != nil {
				t.Fatal(err)
			}
			err = verify(docs, []byte(tc.after), tc.changes)
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("err = %v, want %q", err, tc.err)
			}
		})
	}
}

// errFor is an error with the message s.
type errFor string

func (e errFor) Error() string { return string(e) }

func TestPlainSafe(t *testing.T) {
	for v, want := range map[string]bool{
		"v1.33.2": true, "docker-base-1-33-v2": true, "v0-sha.abc1234": true, "ünï": true,
		"1.33": false, "yes": false, "on": false, "Off": false, "null": false, "~": false, "0x1F": false,
		"a: b": false, "a #b": false, "-a": false, "[a]": false, "a,b": false, " a": false, "": false, "*a": false,
	} {
		if got := plainSafe(v); got != want {
			t.Errorf("plainSafe(%q) = %v, want %v", v, got, want)
		}
	}
}

// readBack returns the decoded documents of the objects named by edits, by key.
func readBack(t *testing.T, content []byte) map[ObjectKey]map[string]any {
	t.Helper()
	text, _ := stripBOM(content)
	docs, err := parse(text)
	if err != nil {
		t.Fatalf("output does not parse: %v\n%s", err, content)
	}
	out := map[ObjectKey]map[string]any{}
	for _, doc := range docs {
		key, ok := keyOf(doc, "ns", "")
		if !ok {
			continue
		}
		var m map[string]any
		if err := doc.Decode(&m); err != nil {
			t.Fatalf("%s does not decode: %v\n%s", key, err, content)
		}
		out[key] = m
	}
	return out
}

// dig returns the value at path in a decoded document.
func dig(v any, path ...string) any {
	for _, k := range path {
		switch m := v.(type) {
		case map[string]any:
			v = m[k]
		case map[any]any:
			v = m[k]
		default:
			return nil
		}
	}
	return v
}

func FuzzApply(f *testing.F) {
	f.Add(stackBlock, "v9")
	f.Add(stackBlock+"---\n"+alphaV1beta2, "x-1")
	f.Add(alphaV1beta2, "a: b")
	f.Add(strings.ReplaceAll(stackBlock, "\n", "\r\n"), "v1")
	f.Add("apiVersion: clusterstack.io/v1alpha1\nkind: ClusterStack\nmetadata: {name: s, namespace: ns}\nspec: {versions: [v1, \"v2\"]}", "it's")
	f.Add("apiVersion: clusterstack.io/v1alpha1\nkind: ClusterStack\nmetadata: {name: s, namespace: ns}\nspec:\n  versions: [\n    v1, # one\n    'v2',\n  ]\n", "v1")
	f.Add("\uFEFF---\n# c\napiVersion: clusterstack.io/v1alpha1\nkind: ClusterStack\nmetadata: {name: s, namespace: ns}\nspec:\n  versions:\n  - &a v1\n  - !!str v2 # c\n  - >-\n    v3\n...\n", "v2")
	f.Add("apiVersion: cluster.x-k8s.io/v1beta2\r\nkind: Cluster\r\nmetadata: {name: alpha}\r\nspec:\r\n  topology:\r\n    classRef:\r\n      name: \"c\\u0041\"\r\n    version: v1\r\n", "v1.2")
	f.Add("apiVersion: cluster.x-k8s.io/v1beta1\nkind: Cluster\nmetadata: {name: alpha}\nspec:\n  topology:\n    class: 'c'\n    version: \"v1\" # c\n", `"\`)
	f.Fuzz(func(t *testing.T, in, v string) {
		versions := []string{v, v + "-a", v + "-b"}[:1+len(v)%3]
		edits := []Edit{{Key: stack, Versions: versions}, {Key: alpha, Class: v, KubernetesVersion: v}}
		out, changed, err := Apply([]byte(in), "f.yaml", edits, "ns", "")
		if err != nil {
			return
		}
		if !changed && string(out) != in {
			t.Fatalf("changed = false but the output differs:\n%s", out)
		}
		if changed {
			// The edited objects read as wanted.
			objs := readBack(t, out)
			if s, ok := objs[stack]; ok {
				if diff := cmp.Diff(toAny(versions), dig(s, "spec", "versions")); diff != "" {
					t.Fatalf("spec.versions (-want +got):\n%s\n%s", diff, out)
				}
			}
			if c, ok := objs[alpha]; ok {
				if got := dig(c, "spec", "topology", "version"); got != v {
					t.Fatalf("spec.topology.version = %#v, want %q\n%s", got, v, out)
				}
				if got, got2 := dig(c, "spec", "topology", "classRef", "name"), dig(c, "spec", "topology", "class"); got != v && got2 != v {
					t.Fatalf("class = %#v / %#v, want %q\n%s", got, got2, v, out)
				}
			}
		}
		again, changed, err := Apply(out, "f.yaml", edits, "ns", "")
		if err != nil || changed || string(again) != string(out) {
			t.Fatalf("not idempotent (changed %v, err %v):\n%s\n---\n%s", changed, err, out, again)
		}
	})
}

// toAny converts strings to the []any a decoded list is.
func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// Symbolic links are never followed, wherever they point: out of the repository, to
// themselves, to a directory above them.
func TestScanDoesNotFollowSymlinks(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "fleet", "clusters"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "fleet", "stack.yaml"), []byte(stackBlock), 0o644); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"fleet/passwd.yaml":      "/etc/passwd",
		"fleet/loop.yaml":        "loop.yaml",
		"fleet/clusters/up":      "..",
		"fleet/clusters/root":    "/",
		"fleet/clusters/in.yaml": "../stack.yaml",
		"linked":                 "fleet",
	}
	for link, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = root.Close() }()
	for name, fsys := range map[string]fs.FS{"os.DirFS": os.DirFS(dir), "os.Root": root.FS()} {
		idx, err := Scan(fsys, "fleet", "default", "")
		if err != nil {
			t.Fatalf("%s: Scan: %v", name, err)
		}
		if diff := cmp.Diff(map[ObjectKey]Location{stack: {Path: "fleet/stack.yaml"}}, idx.Objects); diff != "" {
			t.Errorf("%s: objects (-want +got):\n%s", name, diff)
		}
		var skipped []string
		for _, s := range idx.Skipped {
			if !errors.Is(s.Err, errSymlink) {
				t.Errorf("%s: %s skipped for %v", name, s.Path, s.Err)
			}
			skipped = append(skipped, s.Path)
		}
		sort.Strings(skipped)
		if diff := cmp.Diff([]string{"fleet/clusters/in.yaml", "fleet/clusters/root", "fleet/clusters/up", "fleet/loop.yaml", "fleet/passwd.yaml"}, skipped); diff != "" {
			t.Errorf("%s: skipped (-want +got):\n%s", name, diff)
		}
		for _, d := range []string{"linked", "linked/clusters", "./linked/"} {
			if _, err := Scan(fsys, d, "default", ""); err == nil || !strings.Contains(err.Error(), "linked is a symbolic link") {
				t.Errorf("%s: Scan(%s) = %v, want a refusal naming the link", name, d, err)
			}
		}
	}
}
