package controllers

import (
	"context"
	"fmt"
	"slices"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/lifecycle"
	"github.com/clusterstack-io/clusterstack-operator/internal/releasename"
)

// uses says, per release name of one ClusterStack, what still uses it.
type uses struct {
	// stack and key name the ClusterStack and the tag prefix of its releases (stackKey).
	stack, key string
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
	out = append(out, u.referencing(release)...)
	return slices.Compact(slices.Sorted(slices.Values(out)))
}

// referencing lists the clusters' Flux objects still referring to release.
func (u uses) referencing(release string) []string {
	return u.referenced[fluxgen.LabelValue(release)]
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
	if len(u.referencing(release)) > 0 {
		out = append(out, lifecycle.Referenced)
	}
	return out
}

// releaseUses reads, from the API server (r is the API reader), what uses the releases of cs in
// its namespace: for decisions that delete, which a stale cache must never make while a release
// is in use.
func releaseUses(ctx context.Context, r client.Reader, cs *csv1.ClusterStack) (uses, error) {
	u := newUses(cs)
	ns := client.InNamespace(cs.Namespace)
	var clusters clusterv1.ClusterList
	if err := r.List(ctx, &clusters, ns); err != nil {
		return u, fmt.Errorf("list Clusters: %w", err)
	}
	for i := range clusters.Items {
		u.addCluster(&clusters.Items[i])
	}
	var addons csv1.ClusterAddonList
	if err := r.List(ctx, &addons, ns); err != nil {
		return u, fmt.Errorf("list ClusterAddons: %w", err)
	}
	for i := range addons.Items {
		u.addAddon(&addons.Items[i])
	}
	sel := []client.ListOption{ns, client.MatchingLabels(fluxgen.StackSelector(cs.Name)), client.HasLabels{csv1.ClusterNameLabel}}
	var hrs helmv2.HelmReleaseList
	if err := r.List(ctx, &hrs, sel...); err != nil {
		return u, fmt.Errorf("list HelmReleases: %w", err)
	}
	for i := range hrs.Items {
		u.addFlux(helmv2.HelmReleaseKind, &hrs.Items[i])
	}
	var kss kustomizev1.KustomizationList
	if err := r.List(ctx, &kss, sel...); err != nil {
		return u, fmt.Errorf("list Kustomizations: %w", err)
	}
	for i := range kss.Items {
		u.addFlux(kustomizev1.KustomizationKind, &kss.Items[i])
	}
	return u, nil
}

// cachedReleaseUses is releaseUses read from the manager's cache through field indexes, without
// a copy of the namespace's objects (eachCached): it runs on every stack reconcile, up to every
// 2 s while a fleet converges. Its answer keeps releases, never deletes one.
func cachedReleaseUses(ctx context.Context, informers cache.Informers, r client.Reader, cs *csv1.ClusterStack) (uses, error) {
	u := newUses(cs)
	if err := eachCached(ctx, informers, r, &clusterv1.ClusterList{}, cs.Namespace, clusterStackKeyIndex, u.key, u.addCluster); err != nil {
		return u, fmt.Errorf("list Clusters: %w", err)
	}
	if err := eachCached(ctx, informers, r, &csv1.ClusterAddonList{}, cs.Namespace, addonStackIndex, cs.Name, u.addAddon); err != nil {
		return u, fmt.Errorf("list ClusterAddons: %w", err)
	}
	stack := fluxgen.LabelValue(cs.Name) // the index holds the stack label's value
	if err := eachCached(ctx, informers, r, &helmv2.HelmReleaseList{}, cs.Namespace, clusterFluxStackIndex, stack,
		func(hr *helmv2.HelmRelease) { u.addFlux(helmv2.HelmReleaseKind, hr) }); err != nil {
		return u, fmt.Errorf("list HelmReleases: %w", err)
	}
	if err := eachCached(ctx, informers, r, &kustomizev1.KustomizationList{}, cs.Namespace, clusterFluxStackIndex, stack,
		func(ks *kustomizev1.Kustomization) { u.addFlux(kustomizev1.KustomizationKind, ks) }); err != nil {
		return u, fmt.Errorf("list Kustomizations: %w", err)
	}
	return u, nil
}

// newUses is an empty uses of cs.
func newUses(cs *csv1.ClusterStack) uses {
	return uses{stack: cs.Name, key: stackKey(cs), classUsers: map[string][]string{}, applied: map[string][]string{}, referenced: map[string][]string{}}
}

// addCluster counts a Cluster whose ClusterClass is a release of the stack.
func (u uses) addCluster(c *clusterv1.Cluster) {
	if class := ClusterClassOf(c); class != "" && releaseStackKey(class) == u.key {
		u.classUsers[class] = append(u.classUsers[class], c.Name)
	}
}

// addAddon counts a ClusterAddon of the stack by the release its addons were last applied from.
func (u uses) addAddon(a *csv1.ClusterAddon) {
	if a.Status.ClusterStack == u.stack && a.Status.LastAppliedRelease != "" {
		u.applied[a.Status.LastAppliedRelease] = append(u.applied[a.Status.LastAppliedRelease], a.Name)
	}
}

// addFlux counts one of the stack's per-cluster Flux objects by its release label.
func (u uses) addFlux(kind string, o client.Object) {
	if rel := o.GetLabels()[csv1.ReleaseLabel]; rel != "" {
		u.referenced[rel] = append(u.referenced[rel], kind+"/"+o.GetName())
	}
}

// releaseStackKey is the tag prefix of a release name without its version ("aws-base-1-36"),
// or "" when the name is not a release tag.
func releaseStackKey(release string) string {
	r, err := releasename.Parse(release)
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
	u, err := releaseUses(ctx, r, cs)
	if err != nil {
		return nil, err
	}
	return u.of(rel.Name), nil
}
