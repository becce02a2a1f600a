package controllers

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// Config configures the operator's controllers.
type Config struct {
	// Grace is the degraded grace period (see StatusOptions).
	Grace time.Duration
	// ArtifactHostOverride replaces the host of source-controller artifact URLs.
	ArtifactHostOverride string
	// Now is the clock of the status aggregation (tests); nil means time.Now.
	Now func() time.Time
}

// Setup registers the field indexes and every controller of the operator with mgr.
func Setup(ctx context.Context, mgr ctrl.Manager, cfg Config) error {
	if err := SetupIndexes(ctx, mgr); err != nil {
		return err
	}
	c := mgr.GetClient()
	uncachedReader = mgr.GetAPIReader()
	applier := &Applier{Client: c, Scheme: mgr.GetScheme()}
	stacks := &StackCache{HostnameOverride: cfg.ArtifactHostOverride}
	status := StatusOptions{Grace: cfg.Grace, Now: cfg.Now}
	rec := mgr.GetEventRecorderFor
	for _, s := range []interface{ SetupWithManager(ctrl.Manager) error }{
		&ClusterStackReconciler{Client: c, Tags: &TagLister{Reader: mgr.GetAPIReader()}, Recorder: rec("clusterstack-controller")},
		&ClusterStackReleaseReconciler{Client: c, Applier: applier, Stacks: stacks, Recorder: rec("clusterstackrelease-controller")},
		&ClusterAddonReconciler{Client: c, Applier: applier, Stacks: stacks, Recorder: rec("clusteraddon-controller")},
		&ClusterAddonStatusReconciler{Client: c, Recorder: rec("clusterstack-status"), Options: status},
		&ClusterStackReleaseStatusReconciler{Client: c, Recorder: rec("clusterstack-status"), Options: status},
		&ClusterStackStatusReconciler{Client: c, Recorder: rec("clusterstack-status")},
	} {
		if err := s.SetupWithManager(mgr); err != nil {
			return err
		}
	}
	return nil
}
