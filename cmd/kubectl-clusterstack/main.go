// Command kubectl-clusterstack is a kubectl plugin for the clusterstack-operator: install it on
// the PATH (`go install ./cmd/kubectl-clusterstack` from a checkout: the module's replace
// directives keep `go install ...@version` from working; or krew with config/krew/clusterstack.yaml)
// and run `kubectl clusterstack`:
//
//	kubectl clusterstack tree [STACK]      ClusterStacks -> releases -> Clusters -> components
//	kubectl clusterstack why CLUSTER       what blocks a Cluster's addons
//	kubectl clusterstack values CLUSTER    a Cluster's values per component, and where each came from
//	kubectl clusterstack updates [STACK]   available and conditional updates, rollouts, upgrades
//	kubectl clusterstack diff CLUSTER --to RELEASE   what moving a Cluster to a release changes in it
//	kubectl clusterstack dashboard         a read-only web view of the fleet on loopback
//	kubectl clusterstack lint DIR          stackctl lint
//	kubectl clusterstack template DIR      stackctl template
//
// The commands live in internal/plugin/cli, their logic in internal/plugin.
package main

import (
	"context"
	"os"
	"os/signal"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/clusterstack-io/clusterstack-operator/internal/plugin/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := cli.Run(ctx, os.Args[1:], genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	stop()
	os.Exit(code)
}
