package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/plugin"
)

func newUpdatesCommand(o *options) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "updates [STACK]",
		Short: "Show available and conditional updates of ClusterStacks, their rollouts, and each Cluster's upgrades",
		Long: `Show, per ClusterStack of the namespace (or, with -A, of all namespaces; or only STACK), the
available updates (status.availableUpdates), the conditional updates with the risks that hold
them back (status.conditionalUpdates), the rollout of the newest update wave by wave
(status.rollout) and, per Cluster, the releases it may move to next
(ClusterAddon status.availableUpgrades).`,
		Example: `  kubectl clusterstack updates -A
  kubectl clusterstack updates aws-base-1-36 -n team-a -o yaml`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			u, err := o.gatherUpdates(cmd.Context(), name, all)
			if err != nil {
				return err
			}
			return o.print(u, func(w io.Writer, st plugin.Style) error { return plugin.WriteUpdates(w, u, st) })
		},
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "show the ClusterStacks of all namespaces")
	return cmd
}

func (o *options) gatherUpdates(ctx context.Context, name string, all bool) (plugin.Updates, error) {
	c, err := o.client()
	if err != nil {
		return plugin.Updates{}, err
	}
	opts, ns, err := o.scope(all)
	if err != nil {
		return plugin.Updates{}, err
	}
	var stacks csv1.ClusterStackList
	if err := c.List(ctx, &stacks, opts...); err != nil {
		return plugin.Updates{}, fmt.Errorf("list ClusterStacks: %w", err)
	}
	var selected []csv1.ClusterStack
	for _, s := range stacks.Items {
		if name == "" || s.Name == name {
			selected = append(selected, s)
		}
	}
	if name != "" && len(selected) == 0 {
		where := "namespace " + ns
		if all {
			where = "any namespace"
		}
		return plugin.Updates{}, fmt.Errorf("ClusterStack %s not found in %s", name, where)
	}
	var addons csv1.ClusterAddonList
	if err := c.List(ctx, &addons, opts...); err != nil {
		return plugin.Updates{}, fmt.Errorf("list ClusterAddons: %w", err)
	}
	return plugin.BuildUpdates(selected, addons.Items), nil
}
