package controllers

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// Config configures the operator's controllers.
type Config struct {
	// Grace is the degraded grace period (see StatusOptions).
	Grace time.Duration
	// ArtifactHostOverride replaces the host of source-controller artifact URLs.
	ArtifactHostOverride string
	// Now is the clock of the status aggregation (tests); nil means time.Now.
	Now func() time.Time
	// Tags lists stack repositories' tags; shared with the Cluster webhook. nil makes one.
	Tags *TagLister
	// AddonTimeout bounds one install, upgrade or health check of a cluster's addon (Flux's
	// spec.timeout); 0 means fluxgen.AddonTimeout.
	AddonTimeout time.Duration
	// DefaultServiceAccount is the ServiceAccount (in each stack's namespace) that generated Flux
	// objects run as when a ClusterStack names none; empty leaves it to Flux.
	DefaultServiceAccount string
}

// Setup registers the field indexes and every controller of the operator with mgr.
func Setup(ctx context.Context, mgr ctrl.Manager, cfg Config) error {
	if err := SetupIndexes(ctx, mgr); err != nil {
		return err
	}
	pools, err := machinePoolsServed(mgr.GetRESTMapper())
	if err != nil {
		return err
	}
	if err := setupWorkerIndexes(ctx, mgr, pools); err != nil {
		return err
	}
	c := mgr.GetClient()
	uncachedReader = mgr.GetAPIReader()
	applier := &Applier{Client: c, Scheme: mgr.GetScheme()}
	stacks := &StackCache{HostnameOverride: cfg.ArtifactHostOverride}
	status := StatusOptions{Grace: cfg.Grace, Now: cfg.Now}
	tags := cfg.Tags
	if tags == nil {
		tags = &TagLister{Reader: mgr.GetAPIReader()}
	}
	rec := mgr.GetEventRecorderFor
	for _, s := range []interface{ SetupWithManager(ctrl.Manager) error }{
		&ClusterStackReconciler{Client: c, APIReader: mgr.GetAPIReader(), Tags: tags, Recorder: rec("clusterstack-controller"), DefaultServiceAccount: cfg.DefaultServiceAccount},
		&ClusterStackReleaseReconciler{Client: c, APIReader: mgr.GetAPIReader(), Applier: applier, Stacks: stacks, Tags: tags, Recorder: rec("clusterstackrelease-controller")},
		&ClusterAddonReconciler{Client: c, APIReader: mgr.GetAPIReader(), Applier: applier, Stacks: stacks, AddonTimeout: cfg.AddonTimeout, MachinePools: pools, Recorder: rec("clusteraddon-controller")},
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

// CacheOptions limits what the manager's cache holds of kinds the operator only writes: of
// ConfigMaps, only the values ConfigMaps it generated (labelled as managed by it), so that the
// cache does not grow with every ConfigMap of the management cluster.
func CacheOptions() cache.Options {
	managed := labels.SelectorFromSet(labels.Set{csv1.ManagedByLabel: csv1.ManagedByValue})
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.ConfigMap{}: {Label: managed},
	}}
}
