package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/plugin"
)

func newWhyCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "why CLUSTER",
		Short: "Say what blocks a Cluster's addons: the first unmet prerequisite, the failing component and what Flux said",
		Long: `Walk from the CAPI Cluster to its addons and stop at the first thing that is not met: the
Cluster (exists, not paused, uses a stack release), the ClusterStack and the release
(exists, Available), the ClusterAddon (the release ready for it, its control plane initialized,
its kubeconfig, its values rendered), an addon stage waiting for the Cluster's upgrade, the
first failing component with its Flux object, what Flux said and (for a HelmRelease) its
failures and history. Prints a short verdict and the evidence.

The exit code is 0 whatever the verdict; it is non-zero only when the API server cannot be read.`,
		Example: `  kubectl clusterstack why alpha -n team-a
  kubectl clusterstack why alpha -n team-a -o json | jq -r .blocker`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := o.gatherWhy(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			v := plugin.Why(in)
			return o.print(v, func(w io.Writer, st plugin.Style) error { return plugin.WriteVerdict(w, v, st) })
		},
	}
}

// getOrNil reads key into obj; a missing object is (false, nil).
func getOrNil(ctx context.Context, c client.Client, key client.ObjectKey, obj client.Object) (bool, error) {
	if err := c.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("get %T %s: %w", obj, key, err)
	}
	return true, nil
}

// gatherWhy reads the chain of one Cluster: the Cluster, the ClusterStack of its release, the
// release, its ClusterAddon and its Flux objects.
func (o *options) gatherWhy(ctx context.Context, name string) (plugin.WhyInput, error) {
	c, err := o.client()
	if err != nil {
		return plugin.WhyInput{}, err
	}
	ns, err := o.namespace()
	if err != nil {
		return plugin.WhyInput{}, err
	}
	in := plugin.WhyInput{Namespace: ns, Name: name}
	key := client.ObjectKey{Namespace: ns, Name: name}
	cluster := &clusterv1.Cluster{}
	ok, err := getOrNil(ctx, c, key, cluster)
	if err != nil || !ok {
		return in, err
	}
	in.Cluster = cluster
	class := plugin.ClassOf(cluster)
	if stackKey := plugin.ReleaseStackKey(class); stackKey != "" {
		var stacks csv1.ClusterStackList
		if err := c.List(ctx, &stacks, client.InNamespace(ns)); err != nil {
			return in, fmt.Errorf("list ClusterStacks: %w", err)
		}
		for i := range stacks.Items {
			if plugin.StackKey(&stacks.Items[i]) == stackKey {
				in.Stack = &stacks.Items[i]
				break
			}
		}
		rel := &csv1.ClusterStackRelease{}
		if ok, err := getOrNil(ctx, c, client.ObjectKey{Namespace: ns, Name: class}, rel); err != nil {
			return in, err
		} else if ok {
			in.Release = rel
		}
	}
	addon := &csv1.ClusterAddon{}
	if ok, err := getOrNil(ctx, c, key, addon); err != nil {
		return in, err
	} else if ok {
		in.Addon = addon
	}
	in.Flux, err = listFlux(ctx, c, client.InNamespace(ns), client.MatchingLabels{
		csv1.ManagedByLabel: csv1.ManagedByValue, csv1.ClusterNameLabel: fluxgen.LabelValue(name)})
	return in, err
}
