package cli

import (
	"context"
	"fmt"
	"io"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/spf13/cobra"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/plugin"
)

func newTreeCommand(o *options) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "tree [STACK]",
		Short: "Show ClusterStacks -> releases -> Clusters -> components, with each Flux object's state",
		Long: `Show each ClusterStack of the namespace (or, with -A, of all namespaces; or only STACK),
its ClusterStackReleases with the reasons they are kept and whether they are Available, the
CAPI Clusters using each release, and each Cluster's addon components with the Flux object
(HelmRelease or Kustomization) delivering it, its Ready state and what Flux said.`,
		Example: `  kubectl clusterstack tree -A
  kubectl clusterstack tree aws-base-1-36 -n team-a -o json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			in, err := o.gatherTree(cmd.Context(), name, all)
			if err != nil {
				return err
			}
			t := plugin.BuildTree(in)
			return o.print(t, func(w io.Writer, st plugin.Style) error { return plugin.WriteTree(w, t, st) })
		},
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "show the ClusterStacks of all namespaces")
	return cmd
}

// scope is where to list: one namespace, or all.
func (o *options) scope(all bool) ([]client.ListOption, string, error) {
	if all {
		return nil, "", nil
	}
	ns, err := o.namespace()
	if err != nil {
		return nil, "", err
	}
	return []client.ListOption{client.InNamespace(ns)}, ns, nil
}

// gatherTree reads the stacks (one, with name) and everything the tree shows of them.
func (o *options) gatherTree(ctx context.Context, name string, all bool) (plugin.TreeInput, error) {
	var in plugin.TreeInput
	c, err := o.client()
	if err != nil {
		return in, err
	}
	opts, ns, err := o.scope(all)
	if err != nil {
		return in, err
	}
	var stacks csv1.ClusterStackList
	if err := c.List(ctx, &stacks, opts...); err != nil {
		return in, fmt.Errorf("list ClusterStacks: %w", err)
	}
	for _, s := range stacks.Items {
		if name == "" || s.Name == name {
			in.Stacks = append(in.Stacks, s)
		}
	}
	if name != "" && len(in.Stacks) == 0 {
		where := "namespace " + ns
		if all {
			where = "any namespace"
		}
		return in, fmt.Errorf("ClusterStack %s not found in %s", name, where)
	}
	if len(in.Stacks) == 0 {
		return in, nil
	}
	var releases csv1.ClusterStackReleaseList
	if err := c.List(ctx, &releases, opts...); err != nil {
		return in, fmt.Errorf("list ClusterStackReleases: %w", err)
	}
	in.Releases = releases.Items
	var addons csv1.ClusterAddonList
	if err := c.List(ctx, &addons, opts...); err != nil {
		return in, fmt.Errorf("list ClusterAddons: %w", err)
	}
	in.Addons = addons.Items
	var clusters clusterv1.ClusterList
	if err := c.List(ctx, &clusters, opts...); err != nil && !apimeta.IsNoMatchError(err) {
		return in, fmt.Errorf("list Clusters: %w", err)
	}
	in.Clusters = clusters.Items
	in.Flux, err = listFlux(ctx, c, append(opts, client.MatchingLabels{csv1.ManagedByLabel: csv1.ManagedByValue}, client.HasLabels{csv1.ClusterNameLabel})...)
	return in, err
}

// listFlux reads the HelmReleases and Kustomizations the options select.
func listFlux(ctx context.Context, c client.Client, opts ...client.ListOption) (plugin.FluxIndex, error) {
	var hrs helmv2.HelmReleaseList
	if err := c.List(ctx, &hrs, opts...); err != nil {
		return nil, fmt.Errorf("list HelmReleases: %w", err)
	}
	var kss kustomizev1.KustomizationList
	if err := c.List(ctx, &kss, opts...); err != nil {
		return nil, fmt.Errorf("list Kustomizations: %w", err)
	}
	return plugin.NewFluxIndex(hrs.Items, kss.Items), nil
}
