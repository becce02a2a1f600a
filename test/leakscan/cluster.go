package leakscan

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// Watcher collects the Needles of every Secret of the management cluster when it is first seen
// and whenever it changes, so that the values of Secrets deleted since (a finished test's
// kubeconfigs) are still looked for. A Secret created and deleted while the watch is broken
// (the API server restarted) between two lists is not seen.
type Watcher struct {
	mu      sync.Mutex
	needles Needles
	secrets int
	stop    context.CancelFunc
}

// Watch starts a Watcher on the API server of cfg and returns once it has seen every Secret
// that exists now. Stop ends it.
func Watch(ctx context.Context, cfg *rest.Config) (*Watcher, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("leakscan: %w", err)
	}
	wctx, stop := context.WithCancel(context.Background())
	w := &Watcher{needles: Needles{}, stop: stop}
	inf := informers.NewSharedInformerFactory(cs, 0).Core().V1().Secrets().Informer()
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    w.add,
		UpdateFunc: func(_, obj any) { w.add(obj) },
	})
	if err != nil {
		stop()
		return nil, fmt.Errorf("leakscan: watch Secrets: %w", err)
	}
	go inf.RunWithContext(wctx)
	if !cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		stop()
		return nil, fmt.Errorf("leakscan: list Secrets: %w", context.Cause(ctx))
	}
	return w, nil
}

func (w *Watcher) add(obj any) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.secrets++
	w.needles.AddSecret(s)
}

// Needles returns a copy of the values collected so far.
func (w *Watcher) Needles() Needles {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.needles)
}

// Stop ends the watch; the needles collected stay.
func (w *Watcher) Stop() { w.stop() }

// ScannedKinds are the kinds ScanCluster reads: the operator's own (spec and status), the Flux
// objects it generates, and Events. ConfigMaps are read too, those the operator generated
// (labelled csv1.ManagedByLabel).
var ScannedKinds = []schema.GroupVersionKind{
	csv1.GroupVersion.WithKind("ClusterStack"),
	csv1.GroupVersion.WithKind("ClusterStackRelease"),
	csv1.GroupVersion.WithKind("ClusterAddon"),
	csv1.GroupVersion.WithKind("ManagementOperator"),
	sourcev1.GroupVersion.WithKind(sourcev1.GitRepositoryKind),
	sourcev1.GroupVersion.WithKind(sourcev1.HelmChartKind),
	helmv2.GroupVersion.WithKind(helmv2.HelmReleaseKind),
	kustomizev1.GroupVersion.WithKind(kustomizev1.KustomizationKind),
	corev1.SchemeGroupVersion.WithKind("Event"),
}

// ScanCluster reports the needles found in the objects of ScannedKinds in every namespace and
// in the generated ConfigMaps, each named "<Kind> <namespace>/<name>"; it returns how many
// objects it read.
func (m *Matcher) ScanCluster(ctx context.Context, c client.Reader) (objects int, leaks []Leak, err error) {
	type listing struct {
		gvk  schema.GroupVersionKind
		opts []client.ListOption
	}
	var ls []listing
	for _, gvk := range ScannedKinds {
		ls = append(ls, listing{gvk: gvk})
	}
	ls = append(ls, listing{
		gvk:  corev1.SchemeGroupVersion.WithKind("ConfigMap"),
		opts: []client.ListOption{client.MatchingLabels{csv1.ManagedByLabel: csv1.ManagedByValue}},
	})
	for _, l := range ls {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(l.gvk.GroupVersion().WithKind(l.gvk.Kind + "List"))
		if err := c.List(ctx, list, l.opts...); err != nil {
			return objects, leaks, fmt.Errorf("leakscan: list %s: %w", l.gvk.Kind, err)
		}
		for _, o := range list.Items {
			objects++
			leaks = append(leaks, m.ScanValue(l.gvk.Kind+" "+o.GetNamespace()+"/"+o.GetName(), o.Object)...)
		}
	}
	return objects, leaks, nil
}

// Report is the outcome of Scan.
type Report struct {
	// Needles is the number of values looked for.
	Needles int
	// Scanned says what was read: objects, and each log file with its number of lines.
	Scanned []string
	// Leaks are the values found.
	Leaks []Leak
}

// Summary is one line per leaked Secret value: where it was found first and how often, after
// what was scanned.
func (r Report) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "looked for %d Secret values in %s", r.Needles, strings.Join(r.Scanned, ", "))
	bySecret := map[string][]string{}
	for _, l := range r.Leaks {
		bySecret[l.Secret] = append(bySecret[l.Secret], l.In)
	}
	for _, s := range slices.Sorted(maps.Keys(bySecret)) {
		in := bySecret[s]
		fmt.Fprintf(&b, "\nSecret %s appears in %s", s, in[0])
		if len(in) > 1 {
			fmt.Fprintf(&b, " and %d more places (%s)", len(in)-1, strings.Join(in[1:min(len(in), 4)], "; "))
		}
	}
	return b.String()
}

// Scan looks for every value of needles in the objects ScanCluster reads (when c is not nil)
// and in the log files logFiles, each of which must exist.
func Scan(ctx context.Context, needles Needles, c client.Reader, logFiles []string) (Report, error) {
	m := NewMatcher(needles)
	r := Report{Needles: m.Len()}
	if m.Len() == 0 {
		return r, errors.New("leakscan: no Secret values to look for: the Watcher saw no Secret")
	}
	if c != nil {
		n, leaks, err := m.ScanCluster(ctx, c)
		if err != nil {
			return r, err
		}
		r.Scanned = append(r.Scanned, fmt.Sprintf("%d objects", n))
		r.Leaks = append(r.Leaks, leaks...)
	}
	for _, f := range logFiles {
		lines, leaks, err := m.ScanLogFile(f)
		if err != nil {
			return r, fmt.Errorf("leakscan: %w", err)
		}
		r.Scanned = append(r.Scanned, fmt.Sprintf("%s (%d lines)", f, lines))
		r.Leaks = append(r.Leaks, leaks...)
	}
	return r, nil
}
