package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/plane"
)

// StartPlane starts the local plane (bootstrap/plane: a real kube-apiserver and etcd, the Flux
// controllers, a Git server, and what opts asks for) in a new state directory named for
// suite, and returns it with a client of the management cluster that knows this operator's
// kinds besides the plane's (and those of addToScheme). The error names the directory of the
// components' logs.
func StartPlane(ctx context.Context, suite string, opts plane.Options, addToScheme ...func(*runtime.Scheme) error) (*plane.Plane, client.Client, error) {
	if opts.StateDir == "" {
		dir, err := os.MkdirTemp("", "clusterstack-"+suite+"-")
		if err != nil {
			return nil, nil, err
		}
		opts.StateDir = dir
	}
	pl, err := plane.Start(ctx, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("start the local plane: %w; logs in %s", err, filepath.Join(opts.StateDir, "logs"))
	}
	c, err := pl.NewClient(append([]func(*runtime.Scheme) error{csv1.AddToScheme}, addToScheme...)...)
	if err != nil {
		_ = pl.Stop()
		return nil, nil, err
	}
	return pl, c, nil
}
