package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/plugin"
	"github.com/clusterstack-io/clusterstack-operator/internal/releasename"
	"github.com/clusterstack-io/clusterstack-operator/internal/render"
	"github.com/clusterstack-io/clusterstack-operator/internal/rollout"
	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
	"github.com/clusterstack-io/clusterstack-operator/internal/stackcli"
	"github.com/clusterstack-io/clusterstack-operator/internal/upgradediff"
)

// diffOptions are the flags of `diff`.
type diffOptions struct {
	to, wave, fromDir, artifactHost string
	markdown                        bool
	budget                          int
}

func newDiffCommand(o *options) *cobra.Command {
	do := &diffOptions{}
	cmd := &cobra.Command{
		Use:   "diff CLUSTER --to RELEASE | diff STACK --wave WAVE [--to RELEASE]",
		Short: "Show what moving a Cluster (or a rollout wave's Clusters) to another release changes in it",
		Long: `Show what moving a Cluster from its current release (its ClusterAddon's status.desiredRelease,
the release its topology names) to RELEASE changes, before anything moves: per component the
kind and the chart or directory version, old -> new; the values the operator renders for the
Cluster at each release (with the operator's own renderer and the Cluster's objects as they are
now), as a unified diff; and the objects Flux would apply into the workload cluster (helm
template of both charts with Helm's Go SDK, kustomize build of both directories with Flux's own
packages and its post-build substitution of the values), as objects added, changed and removed,
CustomResourceDefinitions and other cluster-scoped objects first, each with a unified diff of
its YAML. Secret values, values under keys naming credentials (password, token, apiKey, ...)
and every place those values appear are shown as ***.

With --wave WAVE the argument is a ClusterStack, and every Cluster of that wave of its rollout
(spec.updates.waves; "remaining" for the Clusters no wave selects) is diffed; --to defaults to
the release being rolled out (status.rollout.target).

RELEASE is a release name (aws-base-1-36-v2) or a stack version (v2). Each release's stack is
read from its GitRepository's artifact, as the operator reads it (the URL source-controller
advertises; a cluster-internal Service is read through the API server's service proxy;
--artifact-host replaces the URL's host, like Flux's SOURCE_CONTROLLER_LOCALHOST), or, with
--from-dir, from a checkout of the stack repository: each release at its Git tag, at the
ClusterStack's spec.source.path. A release the ClusterStack does not deliver yet (a pull
request adds it to spec.versions) can only be read from a checkout.

Exit codes, as kubectl diff's: 0 no differences, 1 differences, 2 (or more) an error, or a part
that did not render (printed with the diff).`,
		Example: `  kubectl clusterstack diff alpha -n team-a --to aws-base-1-36-v2
  kubectl clusterstack diff alpha -n team-a --to v2 --from-dir ~/src/stacks
  kubectl clusterstack diff aws-base-1-36 -n team-a --wave canary
  kubectl clusterstack diff alpha -n team-a --to v2 --markdown > diff.md`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			code, err := o.runDiff(cmd.Context(), args[0], do)
			if err != nil {
				fmt.Fprintf(o.streams.ErrOut, "error: %v\n", err)
				return &ExitError{Code: stackcli.DiffError}
			}
			return exitCode(code)
		},
	}
	cmd.Flags().StringVar(&do.to, "to", "", "the release to move to: a release name (aws-base-1-36-v2) or a stack version (v2)")
	cmd.Flags().StringVar(&do.wave, "wave", "", "diff every Cluster of this wave of the ClusterStack's rollout (the argument is then the ClusterStack)")
	cmd.Flags().StringVar(&do.fromDir, "from-dir", "", "read the releases' stacks from this checkout of the stack repository (each at its release tag) instead of the GitRepositories' artifacts")
	cmd.Flags().StringVar(&do.artifactHost, "artifact-host", os.Getenv("SOURCE_CONTROLLER_LOCALHOST"), "host:port to fetch source artifacts from instead of the URL's (default $SOURCE_CONTROLLER_LOCALHOST)")
	cmd.Flags().BoolVar(&do.markdown, "markdown", false, "print the diff as Markdown, as a pull request description shows it")
	cmd.Flags().IntVar(&do.budget, "budget", 0, "with --markdown, cut the Markdown to this many bytes (0: no bound)")
	return cmd
}

// runDiff gathers what the diff needs, computes it and prints it; it returns the exit code.
func (o *options) runDiff(ctx context.Context, name string, do *diffOptions) (int, error) {
	c, err := o.client()
	if err != nil {
		return 0, err
	}
	ns, err := o.namespace()
	if err != nil {
		return 0, err
	}
	cfg, err := o.restConfig()
	if err != nil {
		return 0, err
	}
	diffs, err := gatherDiffs(ctx, c, cfg, ns, name, do)
	if err != nil {
		return 0, err
	}
	return o.printDiffs(diffs, do)
}

// printDiffs prints the diffs and returns the exit code: DiffError when a part did not
// render, DiffDifferent when anything differs, DiffSame otherwise.
func (o *options) printDiffs(diffs []*upgradediff.Diff, do *diffOptions) (int, error) {
	switch {
	case o.output != plugin.FormatText:
		if err := plugin.WriteData(o.streams.Out, o.output, map[string]any{"diffs": diffs}); err != nil {
			return 0, err
		}
	case do.markdown:
		budget := do.budget
		if budget == 0 {
			budget = -1
		}
		for i, d := range diffs {
			if i > 0 {
				fmt.Fprintln(o.streams.Out)
			}
			md, _ := upgradediff.Markdown(d, upgradediff.MarkdownOptions{Budget: budget})
			fmt.Fprint(o.streams.Out, md)
		}
	default:
		st := o.style()
		p := upgradediff.Painter{Bold: st.Bold, Added: st.Good, Removed: st.Bad, Faint: st.Faint}
		for i, d := range diffs {
			if i > 0 {
				fmt.Fprintln(o.streams.Out)
			}
			var b strings.Builder
			if err := upgradediff.WriteText(&b, d, p); err != nil {
				return 0, err
			}
			// Stack authors and Cluster objects wrote this text: print it, never let the
			// terminal act on it.
			if _, err := io.WriteString(o.streams.Out, plugin.TerminalSafe(b.String())); err != nil {
				return 0, err
			}
		}
	}
	code := stackcli.DiffSame
	for _, d := range diffs {
		if errs := d.Errors(); len(errs) > 0 {
			fmt.Fprintf(o.streams.ErrOut, "error: %d part(s) of the diff did not render: %s\n", len(errs), plugin.TerminalSafe(strings.Join(errs, "; ")))
			code = stackcli.DiffError
		} else if d.HasChanges() && code == stackcli.DiffSame {
			code = stackcli.DiffDifferent
		}
	}
	return code, nil
}

// diffCluster is a Cluster to diff with what was read of it.
type diffCluster struct {
	cluster *clusterv1.Cluster
	// current is the release the Cluster is on.
	current string
	objects render.Input
}

// gatherDiffs reads the Clusters (one, or a wave's), their releases and the stacks, and
// computes one diff per release the Clusters move from.
func gatherDiffs(ctx context.Context, c client.Client, cfg *rest.Config, ns, name string, do *diffOptions) ([]*upgradediff.Diff, error) {
	var clusters []diffCluster
	target := do.to
	if do.wave != "" {
		cs := &csv1.ClusterStack{}
		if ok, err := getOrNil(ctx, c, client.ObjectKey{Namespace: ns, Name: name}, cs); err != nil {
			return nil, err
		} else if !ok {
			return nil, fmt.Errorf("ClusterStack %s/%s not found (with --wave the argument is the ClusterStack)", ns, name)
		}
		if target == "" && cs.Status.Rollout != nil {
			target = cs.Status.Rollout.Target
		}
		if target == "" {
			return nil, fmt.Errorf("ClusterStack %s/%s rolls nothing out now (status.rollout): give the release with --to", ns, name)
		}
		members, err := waveClusters(ctx, c, cs, do.wave)
		if err != nil {
			return nil, err
		}
		for _, cl := range members {
			dc, err := readDiffCluster(ctx, c, cl)
			if err != nil {
				return nil, err
			}
			clusters = append(clusters, dc)
		}
	} else {
		if target == "" {
			return nil, errors.New("give the release to move to with --to (e.g. --to aws-base-1-36-v2 or --to v2)")
		}
		cl := &clusterv1.Cluster{}
		if ok, err := getOrNil(ctx, c, client.ObjectKey{Namespace: ns, Name: name}, cl); err != nil {
			return nil, err
		} else if !ok {
			return nil, fmt.Errorf("cluster %s/%s not found", ns, name)
		}
		dc, err := readDiffCluster(ctx, c, cl)
		if err != nil {
			return nil, err
		}
		clusters = append(clusters, dc)
	}

	sources := &releaseSources{c: c, cfg: cfg, ns: ns, do: do, loaded: map[string]upgradediff.Release{}}
	defer sources.cleanup()
	byCurrent := map[string][]upgradediff.Cluster{}
	for _, dc := range clusters {
		to, err := releaseName(target, dc.current)
		if err != nil {
			return nil, err
		}
		target = to
		byCurrent[dc.current] = append(byCurrent[dc.current], upgradediff.Cluster{Namespace: dc.cluster.Namespace, Name: dc.cluster.Name, Objects: dc.objects})
	}
	var out []*upgradediff.Diff
	for _, current := range slices.Sorted(maps.Keys(byCurrent)) {
		to, err := sources.load(ctx, target, current)
		if err != nil {
			return nil, err
		}
		from, err := sources.load(ctx, current, current)
		if err != nil {
			return nil, err
		}
		d, err := upgradediff.Compute(upgradediff.Input{From: from, To: to, Clusters: byCurrent[current]})
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// readDiffCluster reads a Cluster's current release and the objects its values render from.
func readDiffCluster(ctx context.Context, c client.Client, cl *clusterv1.Cluster) (diffCluster, error) {
	dc := diffCluster{cluster: cl, current: cl.Spec.Topology.ClassRef.Name}
	addon := &csv1.ClusterAddon{}
	if ok, err := getOrNil(ctx, c, client.ObjectKeyFromObject(cl), addon); err != nil {
		return dc, err
	} else if ok && addon.Status.DesiredRelease != "" {
		dc.current = addon.Status.DesiredRelease
	}
	if dc.current == "" {
		return dc, fmt.Errorf("cluster %s/%s names no ClusterClass (spec.topology.classRef): it uses no release", cl.Namespace, cl.Name)
	}
	if _, err := releasename.Parse(dc.current); err != nil {
		return dc, fmt.Errorf("cluster %s/%s: its ClusterClass %s is no stack release: %w", cl.Namespace, cl.Name, dc.current, err)
	}
	objs, err := renderObjects(ctx, c, cl)
	if err != nil {
		return dc, err
	}
	dc.objects = objs
	return dc, nil
}

// releaseName is the release target names: target itself, or for a stack version ("v2") the
// release of that version of the stack current is a release of.
func releaseName(target, current string) (string, error) {
	if _, err := releasename.ParseVersion(target); err != nil {
		if _, err := releasename.Parse(target); err != nil {
			return "", fmt.Errorf("--to %s is neither a release name (aws-base-1-36-v2) nor a stack version (v2)", target)
		}
		return target, nil
	}
	cur, err := releasename.Parse(current)
	if err != nil {
		return "", err
	}
	cur.Version = target
	return cur.String(), nil
}

// waveClusters lists the Clusters of wave of the ClusterStack's rollout, by the operator's rule
// (rollout.WaveOf): the stack's Clusters (their ClusterClass is a release of the stack's
// provider, name and Kubernetes minor), each in the first wave whose selector matches it.
func waveClusters(ctx context.Context, c client.Client, cs *csv1.ClusterStack, wave string) ([]*clusterv1.Cluster, error) {
	var waves []rollout.Wave
	names := []string{}
	if cs.Spec.Updates != nil {
		for _, w := range cs.Spec.Updates.Waves {
			sel, err := metav1.LabelSelectorAsSelector(&w.Selector)
			if err != nil {
				return nil, fmt.Errorf("ClusterStack %s: spec.updates.waves[%s].selector: %w", cs.Name, w.Name, err)
			}
			waves = append(waves, rollout.Wave{Name: w.Name, Selector: sel})
			names = append(names, w.Name)
		}
	}
	names = append(names, rollout.Remaining)
	if !slices.Contains(names, wave) {
		return nil, fmt.Errorf("ClusterStack %s has no wave %q (its waves: %s)", cs.Name, wave, strings.Join(names, ", "))
	}
	var list clusterv1.ClusterList
	if err := c.List(ctx, &list, client.InNamespace(cs.Namespace)); err != nil {
		return nil, fmt.Errorf("list Clusters: %w", err)
	}
	var out []*clusterv1.Cluster
	for i := range list.Items {
		cl := &list.Items[i]
		rel, err := releasename.Parse(cl.Spec.Topology.ClassRef.Name)
		if err != nil || (cl.Spec.Topology.ClassRef.Namespace != "" && cl.Spec.Topology.ClassRef.Namespace != cs.Namespace) ||
			rel.Provider != cs.Spec.Provider || rel.Name != cs.Spec.Name || rel.KubernetesMinor() != cs.Spec.KubernetesVersion {
			continue
		}
		if rollout.WaveOf(waves, cl.Labels) == wave {
			out = append(out, cl)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("wave %s of ClusterStack %s has no Clusters", wave, cs.Name)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// releaseSources loads releases' stacks from their artifacts or from a checkout, each once.
type releaseSources struct {
	c        client.Client
	cfg      *rest.Config
	ns       string
	do       *diffOptions
	checkout *stackcli.Checkout
	loaded   map[string]upgradediff.Release
	cleanups []func()
}

func (s *releaseSources) cleanup() {
	for _, f := range s.cleanups {
		f()
	}
}

// load reads release name; sibling is a release of the same stack the Cluster uses, whose
// source path a release the ClusterStack does not deliver yet is read at (with --from-dir).
func (s *releaseSources) load(ctx context.Context, name, sibling string) (upgradediff.Release, error) {
	if r, ok := s.loaded[name]; ok {
		return r, nil
	}
	parsed, err := releasename.Parse(name)
	if err != nil {
		return upgradediff.Release{}, err
	}
	out := upgradediff.Release{Release: render.Release{Name: name, Version: parsed.Version}}
	rel := &csv1.ClusterStackRelease{}
	found, err := getOrNil(ctx, s.c, client.ObjectKey{Namespace: s.ns, Name: name}, rel)
	if err != nil {
		return out, err
	}
	if found {
		out.Release.Version, out.Release.KubernetesVersion = rel.Spec.Version, rel.Status.KubernetesVersion
	}
	switch {
	case s.do.fromDir != "":
		path, err := s.sourcePath(ctx, name, rel, found, sibling)
		if err != nil {
			return out, err
		}
		if s.checkout == nil {
			if s.checkout, err = stackcli.OpenCheckout(s.do.fromDir); err != nil {
				return out, err
			}
		}
		root, dir, err := s.checkout.Extract(name, path)
		if err != nil {
			return out, fmt.Errorf("release %s from the checkout %s: %w", name, s.do.fromDir, err)
		}
		s.cleanups = append(s.cleanups, func() { _ = os.RemoveAll(root) })
		if out.Stack, err = stack.Load(dir); err != nil {
			return out, fmt.Errorf("load the stack of release %s (tag %s, %s) from the checkout %s: %w", name, name, path, s.do.fromDir, err)
		}
	case !found:
		return out, fmt.Errorf("ClusterStackRelease %s/%s not found: the ClusterStack does not deliver it (yet); diff from a checkout of the stack repository with --from-dir", s.ns, name)
	default:
		root, st, err := fetchStackFiles(ctx, s.c, s.cfg, rel, s.do.artifactHost)
		if root != "" {
			s.cleanups = append(s.cleanups, func() { _ = os.RemoveAll(root) })
		}
		if err != nil {
			return out, err
		}
		out.Stack = st
	}
	if out.Release.KubernetesVersion == "" {
		out.Release.KubernetesVersion = out.Stack.KubernetesVersion
	}
	s.loaded[name] = out
	return out, nil
}

// sourcePath is where in the repository a release's stack is: its ClusterStackRelease's
// spec.source.path, else that of sibling's.
func (s *releaseSources) sourcePath(ctx context.Context, name string, rel *csv1.ClusterStackRelease, found bool, sibling string) (string, error) {
	if found {
		return rel.Spec.Source.Path, nil
	}
	other := &csv1.ClusterStackRelease{}
	if ok, err := getOrNil(ctx, s.c, client.ObjectKey{Namespace: s.ns, Name: sibling}, other); err != nil {
		return "", err
	} else if !ok {
		return "", fmt.Errorf("neither ClusterStackRelease %s nor %s is in namespace %s: cannot tell where the stack is in the repository", name, sibling, s.ns)
	}
	return other.Spec.Source.Path, nil
}

// fetchStackFiles downloads the artifact of the release's GitRepository into a new temporary
// directory, root, and loads the release's stack from it. Unlike values, which needs only the
// templates the loader reads, the diff renders the charts and kustomize directories, so the
// files stay until the caller removes root (also after an error).
func fetchStackFiles(ctx context.Context, c client.Client, cfg *rest.Config, rel *csv1.ClusterStackRelease, artifactHost string) (string, *stack.Stack, error) {
	art, err := releaseArtifact(ctx, c, rel)
	if err != nil {
		return "", nil, err
	}
	root, err := os.MkdirTemp("", "kubectl-clusterstack-diff-")
	if err != nil {
		return "", nil, fmt.Errorf("temporary directory: %w", err)
	}
	if err := fetchArtifact(ctx, cfg, art.URL, art.Digest, artifactHost, false, root); err != nil {
		return root, nil, fmt.Errorf("fetch the artifact of %s %s/%s (revision %s): %w", fluxgen.SourceKind(rel), rel.Namespace, fluxgen.GitRepositoryName(rel.Name), art.Revision, err)
	}
	st, err := stack.Load(filepath.Join(root, filepath.FromSlash(rel.Spec.Source.Path)))
	if err != nil {
		return root, nil, fmt.Errorf("load the stack at %s of revision %s: %w", rel.Spec.Source.Path, art.Revision, err)
	}
	return root, st, nil
}
