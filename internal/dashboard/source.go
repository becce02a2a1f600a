package dashboard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/plugin"
	"github.com/clusterstack-io/clusterstack-operator/internal/scheme"
)

// Scope is what the dashboard reads.
type Scope struct {
	// Namespaces are the namespaces to read; empty reads every namespace (cluster-wide lists,
	// which the user must be allowed).
	Namespaces []string
}

func (s Scope) all() bool { return len(s.Namespaces) == 0 }

// kind is one kind the dashboard reads.
type kind struct {
	// name is the kind's plural for people ("ClusterAddons").
	name       string
	obj        client.Object
	list       func() client.ObjectList
	namespaced bool
	// selector limits the objects cached (Flux objects: the operator's, of a Cluster).
	selector labels.Selector
	// transform drops what no page shows, to keep the cache small at 10,000 Clusters.
	transform toolscache.TransformFunc
}

// fluxSelector selects the HelmReleases and Kustomizations the operator generates for Clusters.
var fluxSelector = labels.SelectorFromSet(labels.Set{csv1.ManagedByLabel: csv1.ManagedByValue}).Add(mustRequirement(csv1.ClusterNameLabel))

func mustRequirement(key string) labels.Requirement {
	r, err := labels.NewRequirement(key, "exists", nil)
	if err != nil {
		panic(err)
	}
	return *r
}

func kinds() []kind {
	return []kind{
		{name: "ClusterStacks", obj: &csv1.ClusterStack{}, list: func() client.ObjectList { return &csv1.ClusterStackList{} }, namespaced: true},
		{name: "ClusterStackReleases", obj: &csv1.ClusterStackRelease{}, list: func() client.ObjectList { return &csv1.ClusterStackReleaseList{} }, namespaced: true},
		{name: "ClusterAddons", obj: &csv1.ClusterAddon{}, list: func() client.ObjectList { return &csv1.ClusterAddonList{} }, namespaced: true},
		{name: "Clusters (cluster.x-k8s.io)", obj: &clusterv1.Cluster{}, list: func() client.ObjectList { return &clusterv1.ClusterList{} }, namespaced: true, transform: slimCluster},
		{name: "HelmReleases", obj: &helmv2.HelmRelease{}, list: func() client.ObjectList { return &helmv2.HelmReleaseList{} }, namespaced: true, selector: fluxSelector},
		{name: "Kustomizations", obj: &kustomizev1.Kustomization{}, list: func() client.ObjectList { return &kustomizev1.KustomizationList{} }, namespaced: true, selector: fluxSelector},
		{name: "ManagementOperators", obj: &csv1.ManagementOperator{}, list: func() client.ObjectList { return &csv1.ManagementOperatorList{} }},
	}
}

// slimCluster keeps of a CAPI Cluster what the pages read: its name, labels and annotations,
// whether it is paused, its topology's class and version, and whether its control plane is
// initialized.
func slimCluster(o any) (any, error) {
	c, ok := o.(*clusterv1.Cluster)
	if !ok {
		return o, nil
	}
	c.ManagedFields = nil
	c.Spec = clusterv1.ClusterSpec{Paused: c.Spec.Paused, Topology: clusterv1.Topology{ClassRef: c.Spec.Topology.ClassRef, Version: c.Spec.Topology.Version}}
	c.Status = clusterv1.ClusterStatus{Initialization: c.Status.Initialization}
	return c, nil
}

// CacheSource reads the objects from one informer set (controller-runtime's cache), started
// once and shared by every page and event stream. It only gets, lists and watches.
type CacheSource struct {
	cache cache.Cache
	scope Scope
	// readable are the namespaces of each kind the user may list ("" when all).
	readable map[string][]string
	// unreadable says what the user may not list, or what is not installed.
	unreadable []string
}

// NewSource finds what the user may read of scope (one list of at most one object per kind
// and namespace: a kind the user may not list in a namespace, or that is not installed, is left
// out and reported by the pages), starts the informers of the rest, notifying hub of every
// change, and waits until they have synced. The informers stop with ctx.
func NewSource(ctx context.Context, cfg *rest.Config, scope Scope, hub *Hub, log logr.Logger) (*CacheSource, error) {
	s := &CacheSource{scope: scope, readable: map[string][]string{}}
	sch := scheme.New()
	direct, err := client.New(cfg, client.Options{Scheme: sch})
	if err != nil {
		return nil, fmt.Errorf("connect to the API server: %w", err)
	}
	opts := cache.Options{Scheme: sch, Mapper: direct.RESTMapper(), ByObject: map[client.Object]cache.ByObject{},
		DefaultTransform: cache.TransformStripManagedFields(), ReaderFailOnMissingInformer: true}
	var started []kind
	for _, k := range kinds() {
		nss := []string{""}
		if k.namespaced && !scope.all() {
			nss = scope.Namespaces
		}
		var ok []string
		for _, ns := range nss {
			err := probe(ctx, direct, k, ns)
			switch {
			case err == nil:
				ok = append(ok, ns)
			case apimeta.IsNoMatchError(err) || apierrors.IsNotFound(err):
				s.unreadable = append(s.unreadable, k.name+": not installed in the cluster")
			case apierrors.IsForbidden(err):
				where := "in namespace " + ns
				if ns == "" {
					where = "in all namespaces"
					if !k.namespaced {
						where = "(cluster-scoped)"
					}
				}
				s.unreadable = append(s.unreadable, k.name+" "+where+": you may not list them")
			default:
				return nil, fmt.Errorf("list %s: %w", k.name, err)
			}
			if apimeta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
				break
			}
		}
		if len(ok) == 0 {
			continue
		}
		s.readable[k.name] = ok
		bo := cache.ByObject{Label: k.selector, Transform: k.transform}
		if k.transform != nil {
			strip := cache.TransformStripManagedFields()
			bo.Transform = func(o any) (any, error) {
				o, err := strip(o)
				if err != nil {
					return o, err
				}
				return k.transform(o)
			}
		}
		if k.namespaced && !scope.all() {
			bo.Namespaces = map[string]cache.Config{}
			for _, ns := range ok {
				bo.Namespaces[ns] = cache.Config{}
			}
		}
		opts.ByObject[k.obj] = bo
		started = append(started, k)
	}
	c, err := cache.New(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("informer cache: %w", err)
	}
	s.cache = c
	for _, k := range started {
		inf, err := c.GetInformer(ctx, k.obj)
		if err != nil {
			return nil, fmt.Errorf("informer of %s: %w", k.name, err)
		}
		if _, err := inf.AddEventHandler(notifier(hub)); err != nil {
			return nil, fmt.Errorf("watch %s: %w", k.name, err)
		}
	}
	go func() {
		if err := c.Start(ctx); err != nil {
			log.Error(err, "informer cache stopped")
		}
	}()
	if !c.WaitForCacheSync(ctx) {
		return nil, errors.New("the informers did not sync before the dashboard was stopped")
	}
	return s, nil
}

// probe lists at most one object of kind k in ns ("" for all namespaces), to learn whether
// the user may list them.
func probe(ctx context.Context, c client.Client, k kind, ns string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	opts := []client.ListOption{client.Limit(1)}
	if ns != "" {
		opts = append(opts, client.InNamespace(ns))
	}
	return c.List(ctx, k.list(), opts...)
}

// notifier tells hub the namespace of every object added, changed or deleted.
func notifier(hub *Hub) toolscache.ResourceEventHandler {
	ns := func(o any) string {
		if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		if m, ok := o.(metav1.Object); ok {
			return m.GetNamespace()
		}
		return ""
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { hub.Notify(ns(o)) },
		UpdateFunc: func(_, o any) { hub.Notify(ns(o)) },
		DeleteFunc: func(o any) { hub.Notify(ns(o)) },
	}
}

// readableIn reports whether kind name may be read in namespace ns ("" for every namespace the
// dashboard reads); list options for it.
func (s *CacheSource) readableIn(name, ns string) ([]client.ListOption, bool) {
	nss, ok := s.readable[name]
	if !ok {
		return nil, false
	}
	opts := []client.ListOption{client.UnsafeDisableDeepCopy}
	if ns == "" {
		return opts, true
	}
	if !slices.Contains(nss, "") && !slices.Contains(nss, ns) {
		return nil, false
	}
	return append(opts, client.InNamespace(ns)), true
}

// Objects reads the objects f asks for from the cache. They share memory with the cache: the
// pages only read them.
func (s *CacheSource) Objects(ctx context.Context, f Filter) (Objects, error) {
	objs := Objects{Unreadable: s.unreadable}
	if f.Namespace != "" && !s.scope.all() && !slices.Contains(s.scope.Namespaces, f.Namespace) {
		objs.Unreadable = append(slices.Clone(objs.Unreadable), "namespace "+f.Namespace+": the dashboard was not started for it (--namespace, --all-namespaces)")
		return objs, nil
	}
	list := func(name string, l client.ObjectList, extra ...client.ListOption) error {
		opts, ok := s.readableIn(name, f.Namespace)
		if !ok {
			return nil
		}
		if err := s.cache.List(ctx, l, append(opts, extra...)...); err != nil {
			return fmt.Errorf("list %s: %w", name, err)
		}
		return nil
	}
	var (
		stacks   csv1.ClusterStackList
		releases csv1.ClusterStackReleaseList
		addons   csv1.ClusterAddonList
		clusters clusterv1.ClusterList
		ops      csv1.ManagementOperatorList
	)
	if err := errors.Join(list("ClusterStacks", &stacks), list("ClusterStackReleases", &releases), list("ManagementOperators", &ops)); err != nil {
		return objs, err
	}
	objs.Stacks, objs.Releases, objs.Operators = stacks.Items, releases.Items, ops.Items
	if f.Cluster == "" {
		if err := errors.Join(list("ClusterAddons", &addons), list("Clusters (cluster.x-k8s.io)", &clusters)); err != nil {
			return objs, err
		}
		objs.Addons, objs.Clusters = addons.Items, clusters.Items
		return objs, nil
	}
	get := func(name string, obj client.Object) (bool, error) {
		if _, ok := s.readableIn(name, f.Namespace); !ok {
			return false, nil
		}
		err := s.cache.Get(ctx, client.ObjectKey{Namespace: f.Namespace, Name: f.Cluster}, obj)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("get %s %s/%s: %w", name, f.Namespace, f.Cluster, err)
		}
		return true, nil
	}
	addon, cluster := &csv1.ClusterAddon{}, &clusterv1.Cluster{}
	if ok, err := get("ClusterAddons", addon); err != nil {
		return objs, err
	} else if ok {
		objs.Addons = []csv1.ClusterAddon{*addon}
	}
	if ok, err := get("Clusters (cluster.x-k8s.io)", cluster); err != nil {
		return objs, err
	} else if ok {
		objs.Clusters = []clusterv1.Cluster{*cluster}
	}
	sel := client.MatchingLabels{csv1.ManagedByLabel: csv1.ManagedByValue, csv1.ClusterNameLabel: fluxgen.LabelValue(f.Cluster)}
	var hrs helmv2.HelmReleaseList
	var kss kustomizev1.KustomizationList
	if err := errors.Join(list("HelmReleases", &hrs, sel), list("Kustomizations", &kss, sel)); err != nil {
		return objs, err
	}
	objs.Flux = plugin.NewFluxIndex(hrs.Items, kss.Items)
	return objs, nil
}
