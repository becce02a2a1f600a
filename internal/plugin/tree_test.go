package plugin

import (
	"strings"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/google/go-cmp/cmp"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

func TestBuildTree(t *testing.T) {
	hrs, kss := healthyFlux()
	healthy := TreeInput{
		Stacks:   []csv1.ClusterStack{clusterStack("aws-base-1-36")},
		Releases: []csv1.ClusterStackRelease{release("aws-base-1-36-v1", "v1", ready())},
		Clusters: []clusterv1.Cluster{cluster("one", "aws-base-1-36-v1")},
		Addons:   []csv1.ClusterAddon{addon("one", "aws-base-1-36-v1")},
		Flux:     NewFluxIndex(hrs, kss),
	}
	oneNode := ClusterNode{Name: "one", State: StateReady, LastAppliedRelease: "aws-base-1-36-v1", Progress: "2/2", Components: []ComponentNode{
		{Name: "cni", Kind: "Helm", Release: "aws-base-1-36-v1", Version: "1.0.0", Ready: true, Flux: FluxFromHelmRelease(&hrs[0])},
		{Name: "cluster-info", Kind: "Kustomize", Release: "aws-base-1-36-v1", Version: "1.0.0", Ready: true, Flux: FluxFromKustomization(&kss[0])},
	}}
	v1Node := ReleaseNode{Name: "aws-base-1-36-v1", Version: "v1", Reasons: []string{"Pinned", "InUse"}, Available: true, State: StateReady, KubernetesVersion: "v1.36.3", Clusters: []ClusterNode{oneNode}}

	tests := []struct {
		name string
		in   TreeInput
		want Tree
	}{
		{
			name: "no stacks: an empty list, not null",
			in:   TreeInput{},
			want: Tree{Stacks: []StackNode{}},
		},
		{
			name: "a healthy stack: release, cluster and both components with their Flux objects",
			in:   healthy,
			want: Tree{Stacks: []StackNode{{Namespace: ns, Name: "aws-base-1-36", State: StateReady, AvailableVersion: "v1", Clusters: "1/1", Releases: []ReleaseNode{v1Node}}}},
		},
		{
			name: "a Cluster without ClusterAddon on a release that does not exist: the release NotFound with the stack's reason, the Cluster NotFound",
			in: TreeInput{
				Stacks: []csv1.ClusterStack{clusterStack("aws-base-1-36", func(cs *csv1.ClusterStack) {
					cs.Status.MissingReleases = []csv1.MissingRelease{{Name: "aws-base-1-36-v9", Reason: csv1.ReasonTagNotFound, Message: "tag aws-base-1-36-v9 is not published"}}
				})},
				Releases: healthy.Releases,
				Clusters: []clusterv1.Cluster{cluster("one", "aws-base-1-36-v1"), cluster("new", "aws-base-1-36-v9")},
				Addons:   healthy.Addons,
				Flux:     healthy.Flux,
			},
			want: Tree{Stacks: []StackNode{{Namespace: ns, Name: "aws-base-1-36", State: StateReady, AvailableVersion: "v1", Clusters: "1/1", Releases: []ReleaseNode{
				v1Node,
				{Name: "aws-base-1-36-v9", Version: "v9", State: StateNotFound, Message: "tag aws-base-1-36-v9 is not published", Clusters: []ClusterNode{{Name: "new", State: StateNotFound, Message: "no ClusterAddon yet"}}},
			}}}},
		},
		{
			name: "Clusters of other stacks, other namespaces, with other ClusterClasses or paused are placed accordingly",
			in: TreeInput{
				Stacks:   healthy.Stacks,
				Releases: healthy.Releases,
				Clusters: []clusterv1.Cluster{
					cluster("one", "aws-base-1-36-v1"),
					cluster("foreign", "my-own-class"),
					cluster("other-minor", "aws-base-1-35-v1"),
					cluster("elsewhere", "aws-base-1-36-v1", func(c *clusterv1.Cluster) { c.Namespace = "team-b" }),
					cluster("sleeping", "aws-base-1-36-v1", func(c *clusterv1.Cluster) { c.Annotations = map[string]string{clusterv1.PausedAnnotation: ""} }),
				},
				Addons: healthy.Addons,
				Flux:   healthy.Flux,
			},
			want: Tree{Stacks: []StackNode{{Namespace: ns, Name: "aws-base-1-36", State: StateReady, AvailableVersion: "v1", Clusters: "1/1", Releases: []ReleaseNode{
				{Name: "aws-base-1-36-v1", Version: "v1", Reasons: []string{"Pinned", "InUse"}, Available: true, State: StateReady, KubernetesVersion: "v1.36.3",
					Clusters: []ClusterNode{oneNode, {Name: "sleeping", State: StatePaused, Message: "the Cluster is paused"}}},
			}}}},
		},
		{
			name: "a failing component: the ClusterAddon Degraded, the HelmRelease Failed with Flux's message; a missing Kustomization NotFound",
			in: TreeInput{
				Stacks:   healthy.Stacks,
				Releases: []csv1.ClusterStackRelease{release("aws-base-1-36-v10", "v10", ready()), release("aws-base-1-36-v2", "v2", ready())},
				Clusters: []clusterv1.Cluster{cluster("one", "aws-base-1-36-v2")},
				Addons: []csv1.ClusterAddon{addon("one", "aws-base-1-36-v2", func(a *csv1.ClusterAddon) {
					a.Status.Conditions = degraded("cluster team-a/one: component cni: HelmRelease/one-cni: " + installFail)
					a.Status.Components[0].Ready = false
					a.Status.Progress = "1/2"
				})},
				Flux: NewFluxIndex([]helmv2.HelmRelease{helmRelease("one-cni", fluxFailed)}, nil),
			},
			want: Tree{Stacks: []StackNode{{Namespace: ns, Name: "aws-base-1-36", State: StateReady, AvailableVersion: "v1", Clusters: "1/1", Releases: []ReleaseNode{
				{Name: "aws-base-1-36-v1", Version: "v1", Reasons: []string{"Pinned", "InUse"}, Available: true, State: StateNotFound},
				{Name: "aws-base-1-36-v2", Version: "v2", State: StateReady, Available: true, KubernetesVersion: "v1.36.3", Clusters: []ClusterNode{{
					Name: "one", State: StateDegraded, Message: "cluster team-a/one: component cni: HelmRelease/one-cni: " + installFail,
					LastAppliedRelease: "aws-base-1-36-v2", Progress: "1/2",
					Components: []ComponentNode{
						{Name: "cni", Kind: "Helm", Release: "aws-base-1-36-v2", Version: "1.0.0", Flux: FluxObject{Kind: "HelmRelease", Namespace: ns, Name: "one-cni", State: StateFailed, Ready: &Condition{Type: "Ready", Status: "False", Reason: "InstallFailed", Message: installFail}}},
						{Name: "cluster-info", Kind: "Kustomize", Release: "aws-base-1-36-v2", Version: "1.0.0", Ready: true, Flux: FluxObject{Kind: "Kustomization", Namespace: ns, Name: "one-cluster-info", State: StateNotFound}},
					},
				}}},
				{Name: "aws-base-1-36-v10", Version: "v10", State: StateReady, Available: true, KubernetesVersion: "v1.36.3"},
			}}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := BuildTree(tt.in)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("BuildTree (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWriteTree(t *testing.T) {
	hrs, kss := healthyFlux()
	tree := BuildTree(TreeInput{
		Stacks:   []csv1.ClusterStack{clusterStack("aws-base-1-36")},
		Releases: []csv1.ClusterStackRelease{release("aws-base-1-36-v1", "v1", ready()), release("aws-base-1-36-v2", "v2", progressing("validating"))},
		Clusters: []clusterv1.Cluster{cluster("one", "aws-base-1-36-v1")},
		Addons:   []csv1.ClusterAddon{addon("one", "aws-base-1-36-v1")},
		Flux:     NewFluxIndex(hrs, kss),
	})
	want := `ClusterStack team-a/aws-base-1-36  Ready  available v1, clusters 1/1
├── ClusterStackRelease aws-base-1-36-v1  Ready  [Pinned,InUse]  v1.36.3
│   └── Cluster one  Ready  2/2 components
│       ├── cni           HelmRelease/one-cni             Ready  Helm install succeeded for release kube-system/cni.v1 with chart cni@1.0.0
│       └── cluster-info  Kustomization/one-cluster-info  Ready  Applied revision: sha1:abc
└── ClusterStackRelease aws-base-1-36-v2  Progressing  v1.36.3
        validating
`
	var b strings.Builder
	if err := WriteTree(&b, tree, Style{}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("WriteTree (-want +got):\n%s", diff)
	}

	// Messages continue the tree's lines when children follow.
	failing := BuildTree(TreeInput{
		Stacks: []csv1.ClusterStack{clusterStack("aws-base-1-36", func(cs *csv1.ClusterStack) {
			cs.Status.Conditions = degraded("cluster team-a/one: component cni failed")
		})},
		Releases: []csv1.ClusterStackRelease{release("aws-base-1-36-v1", "v1", ready())},
		Clusters: []clusterv1.Cluster{cluster("one", "aws-base-1-36-v1")},
		Addons: []csv1.ClusterAddon{addon("one", "aws-base-1-36-v1", func(a *csv1.ClusterAddon) {
			a.Status.Conditions = degraded("component cni failed")
			a.Status.Components[1].FluxObject = ""
			a.Status.Components[1].Message = "waiting for HelmRelease/one-cni to be Ready before creating it"
		})},
		Flux: NewFluxIndex([]helmv2.HelmRelease{helmRelease("one-cni", fluxFailed)}, nil),
	})
	wantFailing := `ClusterStack team-a/aws-base-1-36  Degraded  available v1, clusters 1/1
│   cluster team-a/one: component cni failed
└── ClusterStackRelease aws-base-1-36-v1  Ready  [Pinned,InUse]  v1.36.3
    └── Cluster one  Degraded  2/2 components
        │   component cni failed
        ├── cni           HelmRelease/one-cni  Failed    ` + oneLine(installFail, treeMessageLen) + `
        └── cluster-info  -                    NotFound  waiting for HelmRelease/one-cni to be Ready before creating it
`
	b.Reset()
	if err := WriteTree(&b, failing, Style{}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantFailing, b.String()); diff != "" {
		t.Errorf("WriteTree (-want +got):\n%s", diff)
	}

	b.Reset()
	if err := WriteTree(&b, tree, Style{Color: true}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{ansiGreen + "Ready" + ansiReset, ansiYellow + "Progressing" + ansiReset, ansiBold + "team-a/aws-base-1-36" + ansiReset} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("coloured tree lacks %q:\n%s", s, b.String())
		}
	}

	b.Reset()
	if err := WriteTree(&b, Tree{}, Style{}); err != nil || b.String() != "No ClusterStacks found.\n" {
		t.Errorf("empty tree: %q, %v", b.String(), err)
	}
}
