package controllers

import (
	"context"
	"fmt"
	"slices"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/lifecycle"
	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
)

// uses says, per release name of one ClusterStack, what still uses it.
type uses struct {
	// classUsers: Clusters whose topology names the release's ClusterClass.
	classUsers map[string][]string
	// applied: ClusterAddons whose addons were last applied from the release.
	applied map[string][]string
	// referenced: the clusters' generated Flux objects still referring to the release, keyed by
	// the release label's value (fluxgen.LabelValue of the release name).
	referenced map[string][]string
}

// of lists everything that uses a release, for messages.
func (u uses) of(release string) []string {
	var out []string
	for _, c := range u.classUsers[release] {
		out = append(out, "Cluster "+c)
	}
	for _, a := range u.applied[release] {
		out = append(out, "ClusterAddon "+a+" (applied)")
	}
	out = append(out, u.referenced[fluxgen.LabelValue(release)]...)
	return slices.Compact(slices.Sorted(slices.Values(out)))
}

// reasons are the keep reasons the uses give a release.
func (u uses) reasons(release string) []string {
	var out []string
	if len(u.classUsers[release]) > 0 {
		out = append(out, lifecycle.InUse)
	}
	if len(u.applied[release]) > 0 {
		out = append(out, lifecycle.Applied)
	}
	if len(u.referenced[fluxgen.LabelValue(release)]) > 0 {
		out = append(out, lifecycle.Referenced)
	}
	return out
}

// releaseUses gathers what uses the releases of cs in its namespace. With cached, it reads the
// manager's cache through field indexes; otherwise r is the API reader and it lists the
// namespace live (for decisions that delete: a stale cache must never remove a release in use).
func releaseUses(ctx context.Context, r client.Reader, cs *csv1.ClusterStack, cached bool) (uses, error) {
	u := uses{classUsers: map[string][]string{}, applied: map[string][]string{}, referenced: map[string][]string{}}
	ns := client.InNamespace(cs.Namespace)
	key := stackKey(cs)

	var clusters clusterv1.ClusterList
	opts := []client.ListOption{ns}
	if cached {
		// Read only, never changed: the cache's own objects, without a copy of every Cluster.
		opts = append(opts, client.MatchingFields{clusterStackKeyIndex: key}, client.UnsafeDisableDeepCopy)
	}
	if err := r.List(ctx, &clusters, opts...); err != nil {
		return u, fmt.Errorf("list Clusters: %w", err)
	}
	for i := range clusters.Items {
		c := &clusters.Items[i]
		if class := ClusterClassOf(c); class != "" && releaseStackKey(class) == key {
			u.classUsers[class] = append(u.classUsers[class], c.Name)
		}
	}

	var addons csv1.ClusterAddonList
	opts = []client.ListOption{ns}
	if cached {
		opts = append(opts, client.MatchingFields{addonStackIndex: cs.Name}, client.UnsafeDisableDeepCopy)
	}
	if err := r.List(ctx, &addons, opts...); err != nil {
		return u, fmt.Errorf("list ClusterAddons: %w", err)
	}
	for i := range addons.Items {
		a := &addons.Items[i]
		if a.Status.ClusterStack == cs.Name && a.Status.LastAppliedRelease != "" {
			u.applied[a.Status.LastAppliedRelease] = append(u.applied[a.Status.LastAppliedRelease], a.Name)
		}
	}

	opts = []client.ListOption{ns, client.MatchingLabels{csv1.ManagedByLabel: csv1.ManagedByValue, csv1.StackLabel: fluxgen.LabelValue(cs.Name)}, client.HasLabels{csv1.ClusterNameLabel}}
	if cached {
		opts = []client.ListOption{ns, client.MatchingFields{clusterFluxStackIndex: fluxgen.LabelValue(cs.Name)}, client.UnsafeDisableDeepCopy}
	}
	var hrs helmv2.HelmReleaseList
	if err := r.List(ctx, &hrs, opts...); err != nil {
		return u, fmt.Errorf("list HelmReleases: %w", err)
	}
	for i := range hrs.Items {
		if rel := hrs.Items[i].Labels[csv1.ReleaseLabel]; rel != "" {
			u.referenced[rel] = append(u.referenced[rel], helmv2.HelmReleaseKind+"/"+hrs.Items[i].Name)
		}
	}
	var kss kustomizev1.KustomizationList
	if err := r.List(ctx, &kss, opts...); err != nil {
		return u, fmt.Errorf("list Kustomizations: %w", err)
	}
	for i := range kss.Items {
		if rel := kss.Items[i].Labels[csv1.ReleaseLabel]; rel != "" {
			u.referenced[rel] = append(u.referenced[rel], kustomizev1.KustomizationKind+"/"+kss.Items[i].Name)
		}
	}
	return u, nil
}

// releaseStackKey is the tag prefix of a release name without its version ("aws-base-1-36"),
// or "" when the name is not a release tag.
func releaseStackKey(release string) string {
	r, err := stack.ParseReleaseName(release)
	if err != nil {
		return ""
	}
	return r.HelmReleaseName()
}

// liveUsesOfRelease reads, from the API server, what uses one release.
func liveUsesOfRelease(ctx context.Context, r client.Reader, rel *csv1.ClusterStackRelease) ([]string, error) {
	cs := &csv1.ClusterStack{}
	cs.Namespace, cs.Name = rel.Namespace, rel.Spec.ClusterStack
	cs.Spec.Provider, cs.Spec.Name, cs.Spec.KubernetesVersion = rel.Spec.Provider, rel.Spec.StackName, rel.Spec.KubernetesVersion
	u, err := releaseUses(ctx, r, cs, false)
	if err != nil {
		return nil, err
	}
	return u.of(rel.Name), nil
}
