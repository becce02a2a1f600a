package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/markdown"
	"github.com/clusterstack-io/clusterstack-operator/internal/overrides"
	"github.com/clusterstack-io/clusterstack-operator/internal/render"
	"github.com/clusterstack-io/clusterstack-operator/internal/upgradediff"
)

// The rendered diff of a proposal: what moving the wave's Clusters to the release changes in
// them (internal/upgradediff), computed by an isolated worker process from both releases'
// artifacts and each Cluster's objects and ClusterAddonOverrides, and written into the pull
// request's description, bounded; when it is cut, the whole diff is a file of the proposal's
// branch (diffFile).

// Bounds of a proposal's diff.
const (
	// maxDiffClusters is the most Clusters of a wave whose values and objects the diff renders;
	// the others are named, with the command that diffs them.
	maxDiffClusters = 10
	// diffMemoTTL is how long a computed diff (or its failure) is reused for the same inputs.
	diffMemoTTL = time.Hour
	// diffSlots is how many diffs the process computes at once.
	diffSlots = 2
)

// diffDir is the directory of the branch that holds the whole diffs of proposals too large for
// their description.
const diffDir = ".clusterstack/diffs"

// diffFile is the file of the proposal's branch the whole diff of a wave's proposal is written
// to when its description holds only part of it.
func diffFile(cs *csv1.ClusterStack, wave string) string {
	return diffDir + "/" + cs.Namespace + "/" + cs.Name + "/" + wave + ".md"
}

// proposalDiff is the diff part of a proposal: the section of its description and, when that
// section is cut, the whole diff for diffFile ("" otherwise).
type proposalDiff struct {
	section, full string
}

// Differ renders a proposal's diff (upgradediff.Isolated).
type Differ interface {
	Compute(ctx context.Context, req upgradediff.WorkerRequest) (upgradediff.WorkerResponse, error)
}

// diffMemo is a computed diff, or why it could not be computed, for one set of inputs.
type diffMemo struct {
	resp upgradediff.WorkerResponse
	err  string
}

// proposalDiff computes the diff of moving the wave's Clusters to rel, grouped by the release
// each Cluster is on. It never fails the proposal: what could not be computed is said in the
// section instead.
func (r *ClusterStackUpdatesReconciler) proposalDiff(ctx context.Context, s *updatesScope, rel *csv1.ClusterStackRelease, wave string, clusters []string) proposalDiff {
	if r.Differ == nil {
		return proposalDiff{}
	}
	cs := s.cs
	names := slices.Sorted(slices.Values(clusters))
	var skipped []string
	if len(names) > maxDiffClusters {
		names, skipped = names[:maxDiffClusters], names[maxDiffClusters:]
	}
	byFrom := map[string][]upgradediff.Cluster{}
	var problems []string
	var ovs []*csv1.ClusterAddonOverride
	var list csv1.ClusterAddonOverrideList
	if err := r.List(ctx, &list, client.InNamespace(cs.Namespace)); err != nil {
		problems = append(problems, "list ClusterAddonOverrides: "+oneLine(err))
	}
	for i := range list.Items {
		ovs = append(ovs, &list.Items[i])
	}
	for _, name := range names {
		cl := s.clusters[name]
		if cl == nil || cl.Spec.Topology.ClassRef.Name == "" || cl.Spec.Topology.ClassRef.Name == rel.Name {
			continue
		}
		objs, err := r.diffObjects(ctx, cl, ovs)
		if err != nil {
			problems = append(problems, fmt.Sprintf("Cluster %s: %s", name, oneLine(err)))
			continue
		}
		from := cl.Spec.Topology.ClassRef.Name
		byFrom[from] = append(byFrom[from], upgradediff.Cluster{Namespace: cl.Namespace, Name: cl.Name, Objects: objs})
	}

	file := diffFile(cs, wave)
	where := fmt.Sprintf("the file %s of this pull request's branch", markdown.CodeSpan(file))
	froms := slices.Sorted(maps.Keys(byFrom))
	budget := upgradediff.DefaultBudget
	if len(froms) > 1 {
		budget /= len(froms)
	}
	var section, full strings.Builder
	truncated := false
	for _, from := range froms {
		resp, err := r.computeDiff(ctx, cs, from, rel, byFrom[from], upgradediff.MarkdownOptions{Budget: budget, FullDiff: where})
		if err != nil {
			problems = append(problems, fmt.Sprintf("from release %s: %s", from, oneLine(err)))
			continue
		}
		section.WriteString(resp.Description)
		section.WriteString("\n")
		if resp.Truncated {
			truncated = true
			full.WriteString(resp.Full)
		} else {
			full.WriteString(resp.Description)
		}
		full.WriteString("\n")
	}
	for _, p := range problems {
		fmt.Fprintf(&section, "\n:warning: The rendered diff is incomplete: %s. `kubectl clusterstack diff CLUSTER -n %s --to %s` renders it from a terminal.\n", mdLine(p), cs.Namespace, rel.Name)
	}
	if len(skipped) > 0 {
		fmt.Fprintf(&section, "\nThe diff renders at most %d Clusters of a wave; not rendered: %s. `kubectl clusterstack diff %s -n %s --wave %s` renders every one.\n",
			maxDiffClusters, markdown.CodeSpan(strings.Join(skipped, ", ")), cs.Name, cs.Namespace, wave)
	}
	out := proposalDiff{section: section.String()}
	if truncated {
		out.full = fmt.Sprintf("# %s/%s: wave %s to %s\n\nThe whole rendered diff of the pull request that moves these Clusters; its description holds the start of it.\n\n%s",
			cs.Namespace, cs.Name, wave, rel.Name, full.String())
	}
	return out
}

// mdLine is a problem on one line with nothing Markdown acts on.
func mdLine(s string) string {
	return strings.NewReplacer("`", "'", "<", "&lt;", ">", "&gt;", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`, "|", `\|`).Replace(strings.Join(strings.Fields(s), " "))
}

// diffObjects reads what a Cluster's values render from: the Cluster, its control plane and
// infrastructure objects, and the ClusterAddonOverrides that select it, in their order.
func (r *ClusterStackUpdatesReconciler) diffObjects(ctx context.Context, cl *clusterv1.Cluster, all []*csv1.ClusterAddonOverride) (render.Input, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cl)
	if err != nil {
		return render.Input{}, err
	}
	in := render.Input{Cluster: render.Clean(m)}
	for _, ref := range []struct {
		ref clusterv1.ContractVersionedObjectReference
		to  *map[string]any
	}{{cl.Spec.ControlPlaneRef, &in.ControlPlane}, {cl.Spec.InfrastructureRef, &in.InfraCluster}} {
		if ref.ref.Name == "" || ref.ref.Kind == "" {
			continue
		}
		mapping, err := r.RESTMapper().RESTMapping(schema.GroupKind{Group: ref.ref.APIGroup, Kind: ref.ref.Kind})
		if err != nil {
			return in, fmt.Errorf("resolve %s.%s: %w", ref.ref.Kind, ref.ref.APIGroup, err)
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(mapping.GroupVersionKind)
		if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: cl.Namespace, Name: ref.ref.Name}, u); err != nil {
			return in, fmt.Errorf("read %s %s: %w", ref.ref.Kind, ref.ref.Name, err)
		}
		*ref.to = render.Clean(u.Object)
	}
	if in.Overrides, err = overrides.ToRender(overrides.ForCluster(all, cl.Name, cl.Labels)); err != nil {
		return in, err
	}
	return in, nil
}

// computeDiff diffs the Clusters moving from release from to rel, from both releases'
// artifacts, in the isolated worker; a result for the same inputs (releases, artifacts,
// Clusters' objects, bounds) is reused, a failure too: a chart that exhausts the worker's
// limits is not rendered again and again.
func (r *ClusterStackUpdatesReconciler) computeDiff(ctx context.Context, cs *csv1.ClusterStack, from string, to *csv1.ClusterStackRelease, clusters []upgradediff.Cluster, md upgradediff.MarkdownOptions) (upgradediff.WorkerResponse, error) {
	fromRel := &csv1.ClusterStackRelease{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: cs.Namespace, Name: from}, fromRel); err != nil {
		return upgradediff.WorkerResponse{}, fmt.Errorf("ClusterStackRelease %s: %w", from, err)
	}
	var repos [2]fluxgen.SourceObject
	for i, rel := range []*csv1.ClusterStackRelease{fromRel, to} {
		repo := fluxgen.NewReleaseSource(rel)
		if err := r.Get(ctx, client.ObjectKey{Namespace: rel.Namespace, Name: fluxgen.GitRepositoryName(rel.Name)}, repo); err != nil {
			return upgradediff.WorkerResponse{}, fmt.Errorf("%s of release %s: %w", fluxgen.SourceKind(rel), rel.Name, err)
		}
		if repo.GetArtifact() == nil {
			return upgradediff.WorkerResponse{}, fmt.Errorf("%s %s has no artifact yet", fluxgen.SourceKind(rel), repo.GetName())
		}
		repos[i] = repo
	}
	req := upgradediff.WorkerRequest{
		From:     upgradediff.WorkerRelease{Release: render.Release{Name: fromRel.Name, Version: fromRel.Spec.Version, KubernetesVersion: fromRel.Status.KubernetesVersion}},
		To:       upgradediff.WorkerRelease{Release: render.Release{Name: to.Name, Version: to.Spec.Version, KubernetesVersion: to.Status.KubernetesVersion}},
		Clusters: clusters,
		Markdown: md,
	}
	h := sha256.New()
	_ = json.NewEncoder(h).Encode(req)
	for i, rel := range []*csv1.ClusterStackRelease{fromRel, to} {
		fmt.Fprintf(h, "%s %q\n", repos[i].GetArtifact().Digest, rel.Spec.Source.Path)
	}
	key := hex.EncodeToString(h.Sum(nil))
	r.caches()
	if v, ok := r.diffs.Get(key); ok {
		m := v.(diffMemo)
		if m.err != "" {
			return m.resp, errors.New(m.err)
		}
		return m.resp, nil
	}

	select {
	case r.diffSlots <- struct{}{}:
		defer func() { <-r.diffSlots }()
	case <-ctx.Done():
		return upgradediff.WorkerResponse{}, ctx.Err()
	}
	var roots []string
	defer func() {
		for _, root := range roots {
			_ = os.RemoveAll(root)
		}
	}()
	dirs := [2]*string{&req.From.Dir, &req.To.Dir}
	for i, rel := range []*csv1.ClusterStackRelease{fromRel, to} {
		root, dir, err := r.Stacks.Fetch(ctx, repos[i], rel.Spec.Source.Path)
		if root != "" {
			roots = append(roots, root)
		}
		if err != nil {
			// Fetching is retried: source-controller may be restarting.
			return upgradediff.WorkerResponse{}, fmt.Errorf("release %s: %w", rel.Name, err)
		}
		*dirs[i] = dir
	}
	start := time.Now()
	resp, err := r.Differ.Compute(ctx, req)
	logf.FromContext(ctx).V(1).Info("rendered the proposal's diff", "from", from, "to", to.Name, "clusters", len(clusters), "took", time.Since(start), "error", err)
	if ctx.Err() != nil {
		return resp, ctx.Err()
	}
	m := diffMemo{resp: resp}
	if err != nil {
		m.err = err.Error()
	}
	r.diffs.Add(key, m, diffMemoTTL)
	return resp, err
}
