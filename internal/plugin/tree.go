package plugin

import (
	"fmt"
	"io"
	"slices"
	"strings"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/releasename"
)

// Tree is the output of `tree`: ClusterStacks, their releases, the Clusters using each release,
// and each Cluster's addon components with their Flux objects.
type Tree struct {
	// Stacks, by namespace and name.
	Stacks []StackNode `json:"stacks"`
}

// StackNode is a ClusterStack in the tree.
type StackNode struct {
	// Namespace of the ClusterStack.
	Namespace string `json:"namespace"`
	// Name of the ClusterStack.
	Name string `json:"name"`
	// State is Ready, Available, Progressing, Degraded or Unknown (ObjectState).
	State string `json:"state"`
	// Message explains a state other than Ready.
	Message string `json:"message,omitempty"`
	// AvailableVersion is status.versions.available.
	AvailableVersion string `json:"availableVersion,omitempty"`
	// Clusters is status.clustersSummary: "<available>/<total>".
	Clusters string `json:"clusters,omitempty"`
	// Releases are the stack's releases, oldest first, each with the Clusters using it.
	Releases []ReleaseNode `json:"releases"`
}

// ReleaseNode is a ClusterStackRelease in the tree.
type ReleaseNode struct {
	// Name of the release (its tag and ClusterClass name).
	Name string `json:"name"`
	// Version of the stack, e.g. "v2".
	Version string `json:"version,omitempty"`
	// Reasons the ClusterStack keeps the release (status.releases[].reasons): Pinned, Latest,
	// InUse, Applied, Referenced, RollbackTarget, Candidate.
	Reasons []string `json:"reasons,omitempty"`
	// Available is true when the release's Available condition is True.
	Available bool `json:"available"`
	// State is the release's state (ObjectState), or NotFound for a release Clusters use
	// that does not exist.
	State string `json:"state"`
	// Message explains a state other than Ready (for a missing release, why it cannot be created).
	Message string `json:"message,omitempty"`
	// KubernetesVersion is the exact Kubernetes version the release was validated with.
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	// Clusters whose topology uses the release.
	Clusters []ClusterNode `json:"clusters,omitempty"`
}

// ClusterNode is a CAPI Cluster in the tree.
type ClusterNode struct {
	// Name of the Cluster.
	Name string `json:"name"`
	// State of its ClusterAddon (ObjectState), Paused for a paused Cluster, or NotFound while
	// it has no ClusterAddon.
	State string `json:"state"`
	// Message explains a state other than Ready.
	Message string `json:"message,omitempty"`
	// LastAppliedRelease is the release whose addons were last Ready everywhere in the Cluster.
	LastAppliedRelease string `json:"lastAppliedRelease,omitempty"`
	// Progress is "<ready>/<total>" components at the desired release.
	Progress string `json:"progress,omitempty"`
	// Components in addon order.
	Components []ComponentNode `json:"components,omitempty"`
}

// ComponentNode is one addon component of a Cluster with its Flux object.
type ComponentNode struct {
	// Name of the component.
	Name string `json:"name"`
	// Kind is Helm or Kustomize.
	Kind string `json:"kind"`
	// Release whose version of the component is wanted.
	Release string `json:"release"`
	// Version of the component in that release.
	Version string `json:"version,omitempty"`
	// Ready is the operator's verdict: the Flux object is Ready at the wanted revision.
	Ready bool `json:"ready"`
	// Message is what the operator says of the component (ClusterAddon status), e.g. what its
	// Flux object waits for before it is created.
	Message string `json:"message,omitempty"`
	// Flux is the Flux object delivering the component, as Flux reports it.
	Flux FluxObject `json:"flux"`
}

// TreeInput is what the tree is built from: the objects of the namespaces shown.
type TreeInput struct {
	Stacks   []csv1.ClusterStack
	Releases []csv1.ClusterStackRelease
	Clusters []clusterv1.Cluster
	Addons   []csv1.ClusterAddon
	Flux     FluxIndex
}

// BuildTree arranges the objects as ClusterStack -> releases -> Clusters -> components. A
// Cluster is shown under the release its ClusterAddon wants (status.desiredRelease), or, before
// it has a ClusterAddon, under the release its topology's ClusterClass names. Releases come from
// the ClusterStack's status, the ClusterStackReleases of the stack and the releases its Clusters
// use (a missing one as NotFound), ordered by version.
func BuildTree(in TreeInput) Tree {
	t := Tree{Stacks: []StackNode{}}
	stacks := slices.Clone(in.Stacks)
	slices.SortFunc(stacks, func(a, b csv1.ClusterStack) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	for i := range stacks {
		t.Stacks = append(t.Stacks, buildStack(&stacks[i], in))
	}
	return t
}

func buildStack(cs *csv1.ClusterStack, in TreeInput) StackNode {
	state, msg := ObjectState(cs.Status.Conditions)
	n := StackNode{Namespace: cs.Namespace, Name: cs.Name, State: state, Message: msg,
		AvailableVersion: cs.Status.Versions.Available, Clusters: cs.Status.ClustersSummary}

	releases := map[string]*ReleaseNode{}
	get := func(name string) *ReleaseNode {
		if r, ok := releases[name]; ok {
			return r
		}
		r := &ReleaseNode{Name: name, State: StateNotFound}
		if p, err := releasename.Parse(name); err == nil {
			r.Version = p.Version
		}
		releases[name] = r
		return r
	}
	for _, s := range cs.Status.Releases {
		r := get(s.Name)
		r.Version, r.Reasons, r.Available = s.Version, slices.Clone(s.Reasons), s.Available
	}
	for i := range in.Releases {
		rel := &in.Releases[i]
		if rel.Namespace != cs.Namespace || rel.Spec.ClusterStack != cs.Name {
			continue
		}
		r := get(rel.Name)
		r.Version = rel.Spec.Version
		r.State, r.Message = ObjectState(rel.Status.Conditions)
		r.Available = isTrue(rel.Status.Conditions, csv1.AvailableCondition)
		r.KubernetesVersion = rel.Status.KubernetesVersion
	}

	addons := map[string]*csv1.ClusterAddon{}
	for i := range in.Addons {
		if a := &in.Addons[i]; a.Namespace == cs.Namespace {
			addons[a.Name] = a
		}
	}
	key := StackKey(cs)
	for i := range in.Clusters {
		c := &in.Clusters[i]
		if c.Namespace != cs.Namespace {
			continue
		}
		a := addons[c.Name]
		var release string
		switch {
		case a != nil && a.Status.ClusterStack == cs.Name && a.Status.DesiredRelease != "":
			release = a.Status.DesiredRelease
		case a != nil && a.Status.ClusterStack != "" && a.Status.ClusterStack != cs.Name:
			continue
		default:
			class := ClassOf(c)
			if ReleaseStackKey(class) != key {
				continue
			}
			release = class
		}
		r := get(release)
		r.Clusters = append(r.Clusters, buildCluster(c, a, in.Flux))
	}
	for _, m := range cs.Status.MissingReleases {
		if r, ok := releases[m.Name]; ok && r.State == StateNotFound {
			r.Message = m.Message
		}
	}

	for _, r := range releases {
		slices.SortFunc(r.Clusters, func(a, b ClusterNode) int { return strings.Compare(a.Name, b.Name) })
		n.Releases = append(n.Releases, *r)
	}
	slices.SortFunc(n.Releases, func(a, b ReleaseNode) int {
		if c := releasename.CompareVersions(a.Version, b.Version); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	if n.Releases == nil {
		n.Releases = []ReleaseNode{}
	}
	return n
}

func buildCluster(c *clusterv1.Cluster, a *csv1.ClusterAddon, flux FluxIndex) ClusterNode {
	n := ClusterNode{Name: c.Name}
	switch {
	case a == nil && IsPaused(c):
		n.State, n.Message = StatePaused, "the Cluster is paused"
		return n
	case a == nil:
		n.State, n.Message = StateNotFound, "no ClusterAddon yet"
		return n
	}
	n.State, n.Message = ObjectState(a.Status.Conditions)
	n.LastAppliedRelease, n.Progress = a.Status.LastAppliedRelease, a.Status.Progress
	for _, comp := range a.Status.Components {
		cn := ComponentNode{Name: comp.Name, Kind: string(comp.Kind), Release: comp.Release, Version: comp.Version, Ready: comp.Ready, Message: comp.Message}
		if comp.FluxObject != "" {
			cn.Flux = flux.Get(a.Namespace, comp.FluxObject)
		} else {
			cn.Flux = FluxObject{State: StateNotFound}
		}
		n.Components = append(n.Components, cn)
	}
	return n
}

// StackKey is the tag prefix of a ClusterStack's releases without the version ("aws-base-1-36").
func StackKey(cs *csv1.ClusterStack) string {
	return strings.TrimSuffix(releasename.Format(cs.Spec.Provider, cs.Spec.Name, cs.Spec.KubernetesVersion, ""), "-")
}

// ReleaseStackKey is StackKey of the stack a release name belongs to, "" when the name is no
// release tag.
func ReleaseStackKey(release string) string {
	r, err := releasename.Parse(release)
	if err != nil {
		return ""
	}
	return r.HelmReleaseName()
}

// ClassOf is the ClusterClass a Cluster's topology uses in its own namespace, "" if none (the
// operator never follows a reference into another namespace).
func ClassOf(c *clusterv1.Cluster) string {
	ref := c.Spec.Topology.ClassRef
	if ref.Name == "" || (ref.Namespace != "" && ref.Namespace != c.Namespace) {
		return ""
	}
	return ref.Name
}

// IsPaused reports whether the operator leaves the Cluster alone: spec.paused or CAPI's paused
// annotation.
func IsPaused(c *clusterv1.Cluster) bool {
	if c.Spec.Paused != nil && *c.Spec.Paused {
		return true
	}
	_, ok := c.Annotations[clusterv1.PausedAnnotation]
	return ok
}

// treeMessageLen bounds the messages printed in a tree line.
const treeMessageLen = 160

// WriteTree prints the tree as text.
func WriteTree(w io.Writer, t Tree, st Style) error {
	t = ForTerminal(t) // what the objects say is printed, never acted on by the terminal
	if len(t.Stacks) == 0 {
		_, err := fmt.Fprintln(w, "No ClusterStacks found.")
		return err
	}
	var b strings.Builder
	for i, s := range t.Stacks {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%s %s  %s", st.Bold("ClusterStack"), st.Bold(s.Namespace+"/"+s.Name), st.State(s.State))
		var facts []string
		if s.AvailableVersion != "" {
			facts = append(facts, "available "+s.AvailableVersion)
		}
		if s.Clusters != "" {
			facts = append(facts, "clusters "+s.Clusters)
		}
		if len(facts) > 0 {
			fmt.Fprintf(&b, "  %s", strings.Join(facts, ", "))
		}
		b.WriteString("\n")
		if s.State != StateReady && s.Message != "" {
			fmt.Fprintf(&b, "%s%s\n", continuation("", len(s.Releases) > 0), st.Faint(oneLine(s.Message, treeMessageLen)))
		}
		for ri, r := range s.Releases {
			lastR := ri == len(s.Releases)-1
			writeRelease(&b, r, branch(lastR), indent(lastR), st)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func branch(last bool) string {
	if last {
		return "└── "
	}
	return "├── "
}

func indent(last bool) string {
	if last {
		return "    "
	}
	return "│   "
}

// continuation is the prefix of a node's message line: the node's children's pad, with the
// tree's line going on when children follow.
func continuation(pad string, children bool) string {
	if children {
		return pad + "│   "
	}
	return pad + "    "
}

func writeRelease(b *strings.Builder, r ReleaseNode, lead, pad string, st Style) {
	fmt.Fprintf(b, "%s%s %s  %s", lead, "ClusterStackRelease", st.Bold(r.Name), st.State(r.State))
	if len(r.Reasons) > 0 {
		fmt.Fprintf(b, "  [%s]", strings.Join(r.Reasons, ","))
	}
	if r.KubernetesVersion != "" {
		fmt.Fprintf(b, "  %s", r.KubernetesVersion)
	}
	b.WriteString("\n")
	if r.State != StateReady && r.Message != "" {
		fmt.Fprintf(b, "%s%s\n", continuation(pad, len(r.Clusters) > 0), st.Faint(oneLine(r.Message, treeMessageLen)))
	}
	for ci, c := range r.Clusters {
		last := ci == len(r.Clusters)-1
		writeCluster(b, c, r.Name, pad+branch(last), pad+indent(last), st)
	}
}

func writeCluster(b *strings.Builder, c ClusterNode, release, lead, pad string, st Style) {
	fmt.Fprintf(b, "%sCluster %s  %s", lead, st.Bold(c.Name), st.State(c.State))
	if c.Progress != "" {
		fmt.Fprintf(b, "  %s components", c.Progress)
	}
	if c.LastAppliedRelease != "" && c.LastAppliedRelease != release {
		fmt.Fprintf(b, "  (applied: %s)", c.LastAppliedRelease)
	}
	b.WriteString("\n")
	if c.State != StateReady && c.Message != "" {
		fmt.Fprintf(b, "%s%s\n", continuation(pad, len(c.Components) > 0), st.Faint(oneLine(c.Message, treeMessageLen)))
	}
	nameW, refW, stateW := 0, 0, 0
	for _, comp := range c.Components {
		nameW = max(nameW, len(comp.Name))
		refW = max(refW, len(comp.Flux.Ref()))
		stateW = max(stateW, len(comp.Flux.State))
	}
	for i, comp := range c.Components {
		last := i == len(c.Components)-1
		ref := comp.Flux.Ref()
		if comp.Flux.Name == "" {
			ref = "-"
		}
		line := fmt.Sprintf("%-*s  %-*s  %s%s", nameW, comp.Name, refW, ref, st.State(comp.Flux.State), strings.Repeat(" ", stateW-len(comp.Flux.State)))
		if comp.Release != release {
			line += "  at " + comp.Release
		}
		m := comp.Flux.Message()
		if m == "" {
			m = comp.Message
		}
		if m != "" {
			line += "  " + st.Faint(oneLine(m, treeMessageLen))
		}
		fmt.Fprintf(b, "%s%s%s\n", pad, branch(last), strings.TrimRight(line, " "))
	}
}
