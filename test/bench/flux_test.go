package bench

import (
	"context"
	"fmt"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// fakeFlux plays helm-controller and kustomize-controller, which the benchmark does not run
// (their work would be to install into hundreds of workload clusters): every HelmRelease and
// Kustomization in the namespace is marked Ready at its current generation, with the chart
// version (history) or source revision (lastAppliedRevision) of its release, exactly what the
// status aggregation checks (internal/fluxstatus/state.go). It writes only when the status is
// not that already.
type fakeFlux struct {
	client.Client
	// releaseNS is the namespace of the ClusterStackReleases; "" for the objects' own.
	releaseNS string
}

// startFakeFlux runs fakeFlux on the HelmReleases and Kustomizations in namespace ns until the
// returned stop is called; their releases are read from releaseNS ("" for ns).
func startFakeFlux(cfg *rest.Config, scheme *runtime.Scheme, ns, releaseNS string) (stop func() error, err error) {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cacheOptions(ns, releaseNS),
	})
	if err != nil {
		return nil, err
	}
	f := &fakeFlux{Client: mgr.GetClient(), releaseNS: releaseNS}
	opts := controller.Options{MaxConcurrentReconciles: 4, SkipNameValidation: ptrTo(true)}
	if err := ctrl.NewControllerManagedBy(mgr).For(&helmv2.HelmRelease{}).Named("fake-helm-controller").WithOptions(opts).
		Complete(reconcile.Func(f.reconcileHelmRelease)); err != nil {
		return nil, err
	}
	if err := ctrl.NewControllerManagedBy(mgr).For(&kustomizev1.Kustomization{}).Named("fake-kustomize-controller").WithOptions(opts).
		Complete(reconcile.Func(f.reconcileKustomization)); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	// Synced before it returns, so that a measurement starting then does not wait for its lists.
	syncCtx, syncCancel := context.WithTimeout(ctx, time.Minute)
	defer syncCancel()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		cancel()
		if err := <-done; err != nil {
			return nil, fmt.Errorf("fake Flux: the cache did not sync: %w", err)
		}
		return nil, fmt.Errorf("fake Flux: the cache did not sync within a minute")
	}
	return func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			return fmt.Errorf("fake Flux did not stop")
		}
	}, nil
}

func ptrTo[T any](v T) *T { return &v }

// cacheOptions is a cache of the objects in ns, but for the ClusterStackReleases, which it holds
// of releaseNS when that is not "".
func cacheOptions(ns, releaseNS string) cache.Options {
	opts := cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}}
	if releaseNS != "" {
		opts.ByObject = map[client.Object]cache.ByObject{
			&csv1.ClusterStackRelease{}: {Namespaces: map[string]cache.Config{releaseNS: {}}},
		}
	}
	return opts
}

// release returns the ClusterStackRelease an object of the operator belongs to (by label).
func (f *fakeFlux) release(ctx context.Context, o client.Object) (*csv1.ClusterStackRelease, error) {
	ns := f.releaseNS
	if ns == "" {
		ns = o.GetNamespace()
	}
	rel := &csv1.ClusterStackRelease{}
	err := f.Get(ctx, client.ObjectKey{Namespace: ns, Name: o.GetLabels()[csv1.ReleaseLabel]}, rel)
	return rel, err
}

func (f *fakeFlux) reconcileHelmRelease(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	hr := &helmv2.HelmRelease{}
	if err := f.Get(ctx, req.NamespacedName, hr); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !hr.DeletionTimestamp.IsZero() || hr.Spec.Suspend {
		return reconcile.Result{}, nil
	}
	rel, err := f.release(ctx, hr)
	if err != nil {
		return reconcile.Result{}, err
	}
	component := hr.Labels[csv1.ComponentLabel]
	version := ""
	if component == csv1.ClusterClassComponent && rel.Status.ClusterClass != nil {
		version = rel.Status.ClusterClass.Version
	}
	for _, c := range rel.Status.Components {
		if c.Name == component {
			version = c.Version
		}
	}
	if version == "" {
		return reconcile.Result{RequeueAfter: time.Second}, nil // the release has not been read yet
	}
	if latest := hr.Status.History.Latest(); latest != nil && latest.ChartVersion == version && latest.Status == "deployed" &&
		hr.Status.ObservedGeneration == hr.Generation && apimeta.IsStatusConditionTrue(hr.Status.Conditions, meta.ReadyCondition) {
		return reconcile.Result{}, nil
	}
	now := metav1.Now()
	ns := hr.Spec.TargetNamespace
	if ns == "" {
		ns = hr.Namespace
	}
	hr.Status.ObservedGeneration = hr.Generation
	hr.Status.LastAttemptedGeneration = hr.Generation
	hr.Status.LastAttemptedRevision = version
	hr.Status.History = helmv2.Snapshots{{
		Name: hr.Spec.ReleaseName, Namespace: ns, Version: 1, Status: "deployed",
		ChartName: component, ChartVersion: version,
		Digest: "sha256:0000000000000000000000000000000000000000000000000000000000000000", ConfigDigest: "sha256:0000000000000000000000000000000000000000000000000000000000000000",
		FirstDeployed: now, LastDeployed: now,
	}}
	apimeta.SetStatusCondition(&hr.Status.Conditions, metav1.Condition{Type: meta.ReadyCondition, Status: metav1.ConditionTrue,
		Reason: "InstallSucceeded", Message: "Helm install succeeded for release " + ns + "/" + hr.Spec.ReleaseName + " with chart " + component + "@" + version + " (played by the benchmark)",
		ObservedGeneration: hr.Generation})
	return reconcile.Result{}, f.Status().Update(ctx, hr)
}

func (f *fakeFlux) reconcileKustomization(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ks := &kustomizev1.Kustomization{}
	if err := f.Get(ctx, req.NamespacedName, ks); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !ks.DeletionTimestamp.IsZero() || ks.Spec.Suspend {
		return reconcile.Result{}, nil
	}
	rel, err := f.release(ctx, ks)
	if err != nil {
		return reconcile.Result{}, err
	}
	rev := rel.Status.Revision
	if rev == "" {
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}
	if ks.Status.LastAppliedRevision == rev && ks.Status.ObservedGeneration == ks.Generation && apimeta.IsStatusConditionTrue(ks.Status.Conditions, meta.ReadyCondition) {
		return reconcile.Result{}, nil
	}
	ks.Status.ObservedGeneration = ks.Generation
	ks.Status.LastAppliedRevision = rev
	ks.Status.LastAttemptedRevision = rev
	apimeta.SetStatusCondition(&ks.Status.Conditions, metav1.Condition{Type: meta.ReadyCondition, Status: metav1.ConditionTrue,
		Reason: "ReconciliationSucceeded", Message: "Applied revision: " + rev + " (played by the benchmark)", ObservedGeneration: ks.Generation})
	return reconcile.Result{}, f.Status().Update(ctx, ks)
}
