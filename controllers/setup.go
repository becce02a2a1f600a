package controllers

import (
	"context"
	"fmt"
	"maps"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/forge"
	"github.com/clusterstack-io/clusterstack-operator/internal/intern"
)

// Config configures the operator's controllers.
type Config struct {
	// Grace is the degraded grace period (see StatusOptions).
	Grace time.Duration
	// QueueGrace is how long an object may wait for its Flux controller (see StatusOptions).
	QueueGrace time.Duration
	// ProgressInterval is how long a ClusterAddon status write that only reports progress may
	// be held (see StatusOptions); 0 writes every change at once.
	ProgressInterval time.Duration
	// ArtifactHostOverride replaces the host of source-controller artifact URLs.
	ArtifactHostOverride string
	// Now is the clock of the status aggregation (tests); nil means time.Now.
	Now func() time.Time
	// Tags lists stack repositories' tags; shared with the Cluster webhook. nil makes one.
	Tags *TagLister
	// AddonTimeout bounds one install, upgrade or health check of a cluster's addon (Flux's
	// spec.timeout); 0 means fluxgen.AddonTimeout.
	AddonTimeout time.Duration
	// PushRetry is how long after the forge refused a push of a proposal branch the operator
	// tries again; 0 means DefaultPushRetry.
	PushRetry time.Duration
	// ForgeLimits bound every forge API call and Git operation of a proposal; ForgePolicy says
	// where the proposal token may be sent; ForgeHostConcurrency bounds the ClusterStacks talking
	// to one forge host at once (see ClusterStackUpdatesReconciler).
	ForgeLimits          forge.Limits
	ForgePolicy          forge.Policy
	ForgeHostConcurrency int
	// DefaultServiceAccount is the ServiceAccount (in each stack's namespace) that generated Flux
	// objects run as when a ClusterStack names none; empty leaves it to Flux.
	DefaultServiceAccount string
	// FluxLockdown is --flux-lockdown (fluxlockdown.ModeDetect, ModeRequired or ModeAssumed) and
	// FluxNamespace where Flux's controllers run; an empty FluxLockdown checks nothing and sets
	// no FluxLockdown condition.
	FluxLockdown, FluxNamespace string
	// MaxConcurrentRenders and MaxConcurrentRendersPerNamespace bound the values renders running
	// at once, in all and for one namespace (RenderGate); 0 means the Default.
	MaxConcurrentRenders, MaxConcurrentRendersPerNamespace int
	// AllowedFluxShards are the values of a Cluster's sharding.fluxcd.io/key label that are
	// copied onto its Flux objects (--allowed-flux-shards); none when empty.
	AllowedFluxShards []string
	// ManagementNamespace is where ManagementOperators' Flux objects are generated and their
	// Secrets read; it must be the namespace CacheOptions was given. Empty: DefaultManagementNamespace.
	ManagementNamespace string
	// WatchLabelSelector selects the CAPI Clusters whose addons this instance delivers
	// (--watch-label-selector, see ParseShardSelector); nil selects every Cluster.
	WatchLabelSelector labels.Selector
	// ClusterAddonsOnly runs only the per-Cluster controllers, the ClusterAddon reconciler and
	// the ClusterAddon status reconciler (--manage-stacks=false: a shard). The controllers of the
	// shared objects (ClusterStack, ClusterStackRelease and their status, the updates controller,
	// ManagementOperator) then run in another instance, exactly one, which also removes the
	// ClusterAddons of deleted Clusters.
	ClusterAddonsOnly bool
	// Differ renders the diff of each proposal's description (upgradediff.Isolated); nil
	// proposes without one.
	Differ Differ
}

// DefaultManagementNamespace is the management namespace when none is configured.
const DefaultManagementNamespace = "clusterstack-system"

// Setup registers the field indexes and every controller of the operator with mgr.
func Setup(ctx context.Context, mgr ctrl.Manager, cfg Config) error {
	shard := &Shard{Selector: cfg.WatchLabelSelector, LeaveOrphans: cfg.ClusterAddonsOnly}
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
	// One status writer for every reconciler: it knows which versions of an object this process's
	// own writes replaced, whichever reconciler wrote them.
	writer := newStatusWriter(c, mgr.GetAPIReader())
	applier := &Applier{Client: c, Scheme: mgr.GetScheme(), APIReader: mgr.GetAPIReader(), PartialKinds: PartialKinds(mgr.GetScheme()), Informers: mgr.GetCache()}
	stacks := &StackCache{HostnameOverride: cfg.ArtifactHostOverride}
	status := StatusOptions{Grace: cfg.Grace, QueueGrace: cfg.QueueGrace, ProgressInterval: cfg.ProgressInterval, Now: cfg.Now}
	tags := cfg.Tags
	if tags == nil {
		tags = &TagLister{Reader: mgr.GetAPIReader()}
	}
	rec := mgr.GetEventRecorderFor //nolint:staticcheck // SA1019: core/v1 Events through record.EventRecorder, which every reconciler and test uses; the events.k8s.io recorder is a separate change
	mgmtNS := cfg.ManagementNamespace
	if mgmtNS == "" {
		mgmtNS = DefaultManagementNamespace
	}
	perCluster := []interface{ SetupWithManager(ctrl.Manager) error }{
		&ClusterAddonReconciler{Client: c, writer: writer, APIReader: mgr.GetAPIReader(), Applier: applier, Stacks: stacks, AddonTimeout: cfg.AddonTimeout, MachinePools: pools, Recorder: rec("clusteraddon-controller"), Shard: shard, Status: status,
			Renders:    NewRenderGate(orDefault(cfg.MaxConcurrentRenders, DefaultMaxConcurrentRenders), orDefault(cfg.MaxConcurrentRendersPerNamespace, DefaultMaxConcurrentRendersPerNamespace), renderWait),
			FluxShards: setOfStrings(cfg.AllowedFluxShards)},
	}
	if cfg.ClusterAddonsOnly {
		return setupAll(mgr, perCluster)
	}
	// The stack and release roll-ups read their counts from an index the ClusterAddon informer
	// keeps up to date; its handler is registered before the manager starts.
	fleets, err := NewAddonFleets(ctx, mgr)
	if err != nil {
		return err
	}
	helmDeployments, err := cache.New(mgr.GetConfig(), HelmDeploymentCacheOptions(mgr, mgmtNS))
	if err != nil {
		return fmt.Errorf("create the cache of Deployments installed by HelmReleases of %s: %w", mgmtNS, err)
	}
	if err := mgr.Add(helmDeployments); err != nil {
		return err
	}
	return setupAll(mgr, append(perCluster,
		&ClusterStackReconciler{Client: c, writer: writer, APIReader: mgr.GetAPIReader(), Cache: mgr.GetCache(), Tags: tags, Recorder: rec("clusterstack-controller"), DefaultServiceAccount: cfg.DefaultServiceAccount,
			Lockdown: lockdownProbe(cfg, mgr.GetAPIReader())},
		&ClusterStackReleaseReconciler{Client: c, writer: writer, APIReader: mgr.GetAPIReader(), Applier: applier, Stacks: stacks, Tags: tags, Recorder: rec("clusterstackrelease-controller")},
		&ClusterStackReleaseStatusReconciler{Client: c, writer: writer, Recorder: rec("clusterstack-status"), Options: status, Fleets: fleets,
			pace: rollupPacer{countsEvery: cfg.ProgressInterval}},
		&ClusterStackStatusReconciler{Client: c, writer: writer, Recorder: rec("clusterstack-status"), Fleets: fleets,
			pace: rollupPacer{countsEvery: cfg.ProgressInterval}},
		&ClusterStackUpdatesReconciler{Client: c, writer: writer, APIReader: mgr.GetAPIReader(), Cache: mgr.GetCache(), Tags: tags, Recorder: rec("clusterstack-updates"), Now: cfg.Now, PushRetry: cfg.PushRetry,
			ForgeLimits: cfg.ForgeLimits, ForgePolicy: cfg.ForgePolicy, ForgeHostConcurrency: cfg.ForgeHostConcurrency,
			Differ: cfg.Differ, Stacks: stacks},
		&ManagementOperatorReconciler{Client: c, writer: writer, Cache: mgr.GetCache(), Applier: applier, Tags: tags, Recorder: rec("managementoperator-controller"), Options: status,
			Namespace: mgmtNS, HelmDeployments: helmDeployments},
	))
}

// setupAll registers each controller with mgr.
func setupAll(mgr ctrl.Manager, rs []interface{ SetupWithManager(ctrl.Manager) error }) error {
	for _, s := range rs {
		if err := s.SetupWithManager(mgr); err != nil {
			return err
		}
	}
	return nil
}

// CacheOptions limits what the manager's cache holds of kinds that are not all the operator's:
//   - ConfigMaps: only the values ConfigMaps it generated (labelled as managed by it), so that the
//     cache does not grow with every ConfigMap of the management cluster, and without their data
//     (stripConfigMapData);
//   - Deployments: only those kustomize-controller applied for a Kustomization of the management
//     namespace (its kustomize.toolkit.fluxcd.io/namespace label), the ManagementOperators'
//     Deployments among them. A label selector cannot also select helm-controller's
//     helm.toolkit.fluxcd.io/namespace label (selectors AND their terms), so the Deployments of
//     operators delivered as charts are held by a second cache (HelmDeploymentCacheOptions);
//   - CustomResourceDefinitions: only Cluster API's Cluster CRD, whose served versions are the
//     contracts the core provider serves.
func CacheOptions(managementNamespace string) cache.Options {
	if managementNamespace == "" {
		managementNamespace = DefaultManagementNamespace
	}
	managed := labels.SelectorFromSet(labels.Set{csv1.ManagedByLabel: csv1.ManagedByValue})
	return cache.Options{
		// Nothing the operator does reads managedFields: leaving them out of the cache roughly
		// halves what it holds per object (stripReadOnly: more of the objects it only reads).
		// Every cached object's strings are interned (internStrings).
		DefaultTransform: internStrings(stripReadOnly),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.ConfigMap{}:                         {Label: managed, Transform: internStrings(stripConfigMapData)},
			&helmv2.HelmRelease{}:                       {Transform: internStrings(trimClusterFluxObject)},
			&kustomizev1.Kustomization{}:                {Transform: internStrings(trimClusterFluxObject)},
			&appsv1.Deployment{}:                        {Label: labels.SelectorFromSet(labels.Set{kustomizeNamespaceLabel: managementNamespace})},
			&apiextensionsv1.CustomResourceDefinition{}: {Field: fields.OneTermEqualSelector("metadata.name", clusterCRDName)},
		}}
}

// internStrings runs transform, then makes the strings of the object it returns share their
// bytes with the equal strings of every other cached object (intern.Strings): the label keys and
// values, namespaces, condition types, reasons and messages, release names and API versions that
// ten thousand Clusters' objects repeat. Cached objects are never modified (the cache hands out
// deep copies), and strings are immutable, so sharing them is safe. It saves about a sixth of
// what the cached objects of a Cluster hold (BenchmarkCachedObjectBytes).
func internStrings(transform toolscache.TransformFunc) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		out, err := transform(obj)
		if err == nil {
			intern.Strings(out)
		}
		return out, err
	}
}

// stripReadOnly is the cache transform of every kind without one of its own: managedFields
// left out and, of the objects the operator only reads and renders values from (Clusters and the
// infrastructure and control plane objects they refer to, cached unstructured), kubectl's
// last-applied annotation too. That annotation is a second copy of the object as last applied by
// client-side kubectl; render.Clean drops it from every template input, and the operator never
// writes those objects, so no write can lose it.
func stripReadOnly(obj any) (any, error) {
	obj, err := cache.TransformStripManagedFields()(obj)
	switch t := obj.(type) {
	case *clusterv1.Cluster, *unstructured.Unstructured:
		o := t.(client.Object)
		if ann := o.GetAnnotations(); ann[corev1.LastAppliedConfigAnnotation] != "" {
			delete(ann, corev1.LastAppliedConfigAnnotation)
			o.SetAnnotations(ann)
		}
	}
	return obj, err
}

// stripConfigMapData is the cache transform of ConfigMaps: managedFields, data and binaryData
// left out, and a digest of the data left out recorded in the cached copy's
// cachedDataHashAnnotation (the API server's object never carries it). Nothing reads a cached
// values ConfigMap's data: the Applier decides whether to write one from its applied-hash
// annotation and, as a ConfigMap has no generation that an edit of its data would move, from that
// digest; Flux reads the data from the API server. The rendered values are most of what a
// ConfigMap costs, times the number of Clusters.
func stripConfigMapData(obj any) (any, error) {
	obj, err := cache.TransformStripManagedFields()(obj)
	if cm, ok := obj.(*corev1.ConfigMap); ok {
		if _, done := cm.Annotations[cachedDataHashAnnotation]; done && cm.Data == nil && cm.BinaryData == nil {
			// Transformed already: an informer may pass an object it holds through its transform
			// again (client-go asks transforms to be idempotent), and the digest of stripped data
			// would say every ConfigMap was edited.
			return obj, err
		}
		ann := make(map[string]string, len(cm.Annotations)+1)
		maps.Copy(ann, cm.Annotations)
		ann[cachedDataHashAnnotation] = configMapDataHash(cm.Data, cm.BinaryData)
		cm.Annotations = ann
		cm.Data, cm.BinaryData = nil, nil
	}
	return obj, err
}

// trimClusterFluxObject is the cache transform of HelmReleases and Kustomizations: managedFields
// left out, and of those generated for a Cluster (managed by the operator, with a cluster-name
// label) the spec but spec.suspend, of a HelmRelease's history the latest release alone, and of a
// Kustomization's status the inventory of what it applied to the workload cluster. The
// operator reads those objects' metadata (ownership, the applied-hash annotation, the generation
// its drift check compares), their status (readiness, the latest Helm release, the applied
// revision) and whether they are suspended; it writes them by server-side
// apply from what it renders and suspends them by a merge patch of spec.suspend alone, never
// by an update of a cached copy. Their specs would be a third of what the cache holds per
// Cluster. Other Flux objects (the fleet's Kustomizations, the ClusterClass delivery, the
// ManagementOperators') are kept whole.
func trimClusterFluxObject(obj any) (any, error) {
	obj, err := cache.TransformStripManagedFields()(obj)
	switch t := obj.(type) {
	case *helmv2.HelmRelease:
		if generatedCluster(t) != nil {
			t.Spec = helmv2.HelmReleaseSpec{Suspend: t.Spec.Suspend}
			if latest := t.Status.History.Latest(); latest != nil {
				t.Status.History = helmv2.Snapshots{latest}
			}
		}
	case *kustomizev1.Kustomization:
		if generatedCluster(t) != nil {
			t.Spec = kustomizev1.KustomizationSpec{Suspend: t.Spec.Suspend}
			// The inventory lists every object kustomize-controller applied to the workload
			// cluster (a CNI's manifests are dozens); nothing reads it of a Cluster's Kustomization.
			t.Status.Inventory = nil
		}
	}
	return obj, err
}

// PartialKinds are the kinds of which CacheOptions keeps only a selection in the cache: a
// missing object of these kinds may still exist.
func PartialKinds(scheme *runtime.Scheme) map[schema.GroupKind]bool {
	out := map[schema.GroupKind]bool{}
	for obj, by := range CacheOptions("").ByObject {
		if by.Label == nil && by.Field == nil {
			continue // all of them, only trimmed
		}
		if gvk, err := apiutil.GVKForObject(obj, scheme); err == nil {
			out[gvk.GroupKind()] = true
		}
	}
	return out
}

// HelmDeploymentCacheOptions configure the second cache of Deployments: those helm-controller
// installed for a HelmRelease of the management namespace (its helm.toolkit.fluxcd.io/namespace
// label), read and watched for ManagementOperators delivered as charts. Nothing else is cached in it.
func HelmDeploymentCacheOptions(mgr ctrl.Manager, managementNamespace string) cache.Options {
	return cache.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), HTTPClient: mgr.GetHTTPClient(),
		DefaultLabelSelector: labels.SelectorFromSet(labels.Set{helmNamespaceLabel: managementNamespace}),
	}
}

// lockdownProbe is the FluxLockdownProbe of cfg, nil when cfg checks nothing.
func lockdownProbe(cfg Config, r client.Reader) *FluxLockdownProbe {
	if cfg.FluxLockdown == "" {
		return nil
	}
	return &FluxLockdownProbe{Mode: cfg.FluxLockdown, Namespace: cfg.FluxNamespace, Reader: r, Now: cfg.Now}
}

// orDefault is n, or def when n is 0.
func orDefault(n, def int) int {
	if n == 0 {
		return def
	}
	return n
}

// setOfStrings is the set of the non-empty values.
func setOfStrings(values []string) map[string]bool {
	out := map[string]bool{}
	for _, v := range values {
		if v != "" {
			out[v] = true
		}
	}
	return out
}
