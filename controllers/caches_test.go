package controllers

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/gitauth"
	opscheme "github.com/clusterstack-io/clusterstack-operator/internal/scheme"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// stackTarball returns a gzipped tarball of the stack directory dir, below prefix, with an
// extra file so that artifacts of the same stack differ, and its digest.
func stackTarball(t *testing.T, dir, prefix, extra string) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	add := func(name string, data []byte) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		add(filepath.ToSlash(filepath.Join(prefix, rel)), data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	add(filepath.ToSlash(filepath.Join(prefix, "EXTRA")), []byte(extra))
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	return buf.Bytes(), "sha256:" + hex.EncodeToString(sum[:])
}

// The StackCache keeps at most MaxEntries stacks, drops the least recently used first, and
// loads a stack again once its hour is over; stacks are fetched from a real HTTP server.
func TestStackCacheIsBoundedAndExpires(t *testing.T) {
	var fetches atomic.Int32
	files := map[string][]byte{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		data, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(data)
	}))
	defer srv.Close()
	repos := map[string]*sourcev1.GitRepository{}
	for _, name := range []string{"a", "b"} {
		data, digest := stackTarball(t, "../stacks/aws/base/1-36", "stacks/aws", name)
		files["/"+name+".tar.gz"] = data
		repos[name] = &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: sourcev1.GitRepositoryStatus{
			Artifact: &meta.Artifact{URL: srv.URL + "/" + name + ".tar.gz", Digest: digest, Revision: "main@sha1:" + name, Path: name}}}
	}
	clock := &fakeClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	c := &StackCache{MaxEntries: 1, clock: clock}
	get := func(name string, wantFetches int32) {
		t.Helper()
		s, err := c.Get(context.Background(), repos[name], "stacks/aws")
		if err != nil {
			t.Fatal(err)
		}
		if s.Name != "base" {
			t.Errorf("stack %q, want base", s.Name)
		}
		if got := fetches.Load(); got != wantFetches {
			t.Errorf("after Get(%s): %d fetches, want %d", name, got, wantFetches)
		}
	}
	get("a", 1)
	get("a", 1) // cached
	clock.step(stackCacheTTL - time.Second)
	get("a", 1) // still cached
	get("b", 2) // drops a: one entry only
	get("b", 2)
	get("a", 3)
	clock.step(stackCacheTTL + time.Second)
	get("a", 4) // expired
	if _, err := c.Get(context.Background(), repos["a"], "no/such/dir"); err == nil {
		t.Error("a missing stack directory is no error")
	}
}

// The TagLister keeps listings within MaxBytes, drops the least recently used first, keeps each
// for the maxAge its caller gave, does not cache a listing larger than the whole budget, and
// keeps a listing per selector of a source (Forget drops them all).
func TestTagListerCacheIsBoundedAndExpires(t *testing.T) {
	clock := &fakeClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	var listings atomic.Int32
	remote := map[string]string{"v1": "c1"}
	src := func(name string) csv1.StackSource {
		return csv1.StackSource{URL: "https://git.example.com/" + name + ".git", Path: "."}
	}
	// Room for two listings of one tag, not three.
	one := entryBytes(tagCacheKey("team-a", src("a"), anyVersion), tagCacheEntry{TagListing: TagListing{Refs: remote}})
	l := &TagLister{MaxBytes: 2*one + one/2, clock: clock, List: func(context.Context, *gitauth.Remote) (map[string]string, error) {
		listings.Add(1)
		return maps.Clone(remote), nil
	}}
	refs := func(name string, sel TagSelector, maxAge time.Duration, want int32) {
		t.Helper()
		if _, err := l.Refs(context.Background(), "team-a", src(name), sel, maxAge); err != nil {
			t.Fatal(err)
		}
		if got := listings.Load(); got != want {
			t.Errorf("after Refs(%s, %+v, %s): %d listings, want %d", name, sel, maxAge, got, want)
		}
	}
	refs("a", anyVersion, time.Minute, 1)
	refs("b", anyVersion, time.Minute, 2)
	refs("a", anyVersion, time.Minute, 2) // cached, and now the most recently used
	refs("c", anyVersion, time.Minute, 3) // drops b
	refs("a", anyVersion, time.Minute, 3)
	refs("b", anyVersion, time.Minute, 4)
	clock.step(time.Minute - time.Second)
	refs("b", anyVersion, time.Minute, 4)
	refs("b", anyVersion, 30*time.Second, 5) // too old for this caller
	clock.step(time.Minute + time.Second)
	refs("b", anyVersion, time.Hour, 6) // kept for the minute its caller asked for, not more
	l.Forget("team-a", src("b"))
	refs("b", anyVersion, time.Hour, 7)
	refs("b", anyVersion, time.Hour, 7)

	// Another selector of the same source is another listing; Forget drops both.
	other := TagSelector{Prefix: "v", Form: OperatorVersionTags}
	refs("b", other, time.Hour, 8)
	refs("b", other, time.Hour, 8)
	l.Forget("team-a", src("b"))
	refs("b", other, time.Hour, 9)
	refs("b", anyVersion, time.Hour, 10)

	// A listing larger than the whole budget is returned, never cached.
	for i := range 20 {
		remote[fmt.Sprintf("v%d", i+2)] = "c"
	}
	refs("big", anyVersion, time.Hour, 11)
	refs("big", anyVersion, time.Hour, 12)
}

// The refused-push throttle remembers a refusal for pushRetry on the reconciler's clock.
func TestRefusedPushesExpireOnTheReconcilersClock(t *testing.T) {
	clock := &fakeClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	r := &ClusterStackUpdatesReconciler{Now: clock.Now}
	r.refusedPushes().Add("team-a/stack", refusal{at: r.now()}, r.pushRetry())
	clock.step(r.pushRetry() - time.Second)
	if _, ok := r.refusedPushes().Get("team-a/stack"); !ok {
		t.Error("a refusal is forgotten within pushRetry")
	}
	clock.step(2 * time.Second)
	if _, ok := r.refusedPushes().Get("team-a/stack"); ok {
		t.Error("a refusal is remembered beyond pushRetry")
	}
	if _, ok := r.refusedPushes().Get("team-a/other"); ok {
		t.Error("another ClusterStack's push is throttled")
	}
}

func TestCachedConfigMapsHoldNoData(t *testing.T) {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "c1-values", Annotations: map[string]string{appliedHashAnnotation: "h"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: FieldOwner}}},
		Data:       map[string]string{"cni.yaml": "big"},
		BinaryData: map[string][]byte{"b": []byte("x")},
	}
	out, err := stripConfigMapData(cm)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.ConfigMap)
	if got.Data != nil || got.BinaryData != nil || got.ManagedFields != nil {
		t.Errorf("cached ConfigMap keeps data %v, binaryData %v or managedFields %v", got.Data, got.BinaryData, got.ManagedFields)
	}
	if got.Annotations[appliedHashAnnotation] != "h" {
		t.Errorf("the applied hash the Applier decides by is gone: %v", got.Annotations)
	}
	digest := got.Annotations[cachedDataHashAnnotation]
	if digest != configMapDataHash(map[string]string{"cni.yaml": "big"}, map[string][]byte{"b": []byte("x")}) {
		t.Errorf("the cached digest %q is not the digest of the data", digest)
	}
	// Idempotent, as client-go asks of a transform: an object the informer passes again keeps
	// the digest of its data, not that of no data.
	again, err := stripConfigMapData(got)
	if err != nil {
		t.Fatal(err)
	}
	if d := again.(*corev1.ConfigMap).Annotations[cachedDataHashAnnotation]; d != digest {
		t.Errorf("transformed twice, the digest is %q, want %q", d, digest)
	}
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Data: map[string][]byte{"k": []byte("v")}}
	if out, err := stripConfigMapData(other); err != nil || len(out.(*corev1.Secret).Data) != 1 {
		t.Errorf("other kinds pass unchanged: %v, %v", out, err)
	}
}

func TestCachedClusterFluxObjectsKeepStatusNotSpec(t *testing.T) {
	generated := map[string]string{csv1.ManagedByLabel: csv1.ManagedByValue, csv1.ClusterNameLabel: "c1"}
	ready := []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue}}
	hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: "c1-cni", Labels: generated, Generation: 3},
		Spec: helmv2.HelmReleaseSpec{ReleaseName: "cni", Suspend: true, ValuesFrom: []helmv2.ValuesReference{{Kind: "ConfigMap", Name: "v"}}},
		Status: helmv2.HelmReleaseStatus{Conditions: ready, ObservedGeneration: 3, History: helmv2.Snapshots{
			{Version: 1, ChartVersion: "1.0.0", Status: "superseded"}, {Version: 3, ChartVersion: "1.2.0", Status: "deployed"},
			{Version: 2, ChartVersion: "1.1.0", Status: "failed"}}}}
	out, err := trimClusterFluxObject(hr)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*helmv2.HelmRelease)
	if got.Spec.ReleaseName != "" || got.Spec.ValuesFrom != nil || !got.Spec.Suspend {
		t.Errorf("a Cluster's HelmRelease is cached with its spec but suspend: %+v", got.Spec)
	}
	if h := got.Status.History; len(h) != 1 || h[0].Version != 3 || h[0].ChartVersion != "1.2.0" {
		t.Errorf("a Cluster's HelmRelease is cached with its latest Helm release alone: %+v", h)
	}
	if len(got.Status.Conditions) != 1 || got.Status.ObservedGeneration != 3 || got.Generation != 3 {
		t.Errorf("its status and generation stay: %+v, generation %d", got.Status, got.Generation)
	}

	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: "c1-info", Labels: generated},
		Spec: kustomizev1.KustomizationSpec{Path: "./info"}, Status: kustomizev1.KustomizationStatus{LastAppliedRevision: "r1",
			Conditions: ready, Inventory: &kustomizev1.ResourceInventory{Entries: []kustomizev1.ResourceRef{{ID: "kube-system_cilium_apps_DaemonSet", Version: "v1"}}}}}
	out, _ = trimClusterFluxObject(ks)
	if k := out.(*kustomizev1.Kustomization); k.Spec.Path != "" || k.Status.LastAppliedRevision != "r1" || len(k.Status.Conditions) != 1 || k.Status.Inventory != nil {
		t.Errorf("a Cluster's Kustomization is cached without its spec and inventory: spec %+v, status %+v", k.Spec, k.Status)
	}

	fleet := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: "fleet"},
		Spec:   kustomizev1.KustomizationSpec{Path: "./clusters", SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "fleet"}},
		Status: kustomizev1.KustomizationStatus{Inventory: &kustomizev1.ResourceInventory{Entries: []kustomizev1.ResourceRef{{ID: "fleet_a_clusterstack.io_ClusterStack"}}}}}
	out, _ = trimClusterFluxObject(fleet)
	if k := out.(*kustomizev1.Kustomization); k.Spec.Path != "./clusters" || k.Spec.SourceRef.Name != "fleet" || k.Status.Inventory == nil {
		t.Errorf("a Kustomization not generated for a Cluster (the fleet's, whose inventory proposals check) is kept whole: %+v", k)
	}
}

func TestCachedReadOnlyObjectsHoldNoLastAppliedCopy(t *testing.T) {
	lastApplied := map[string]string{corev1.LastAppliedConfigAnnotation: `{"spec":"a second copy"}`, "team": "a"}
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "c1", Annotations: maps.Clone(lastApplied), ManagedFields: managed}}
	infra := &unstructured.Unstructured{}
	infra.SetAnnotations(maps.Clone(lastApplied))
	infra.SetManagedFields(managed)
	for _, o := range []client.Object{cluster, infra} {
		out, err := stripReadOnly(o)
		if err != nil {
			t.Fatal(err)
		}
		got := out.(client.Object)
		if _, ok := got.GetAnnotations()[corev1.LastAppliedConfigAnnotation]; ok || got.GetManagedFields() != nil {
			t.Errorf("%T is cached with kubectl's last-applied copy or managedFields: %v", o, got.GetAnnotations())
		}
		if got.GetAnnotations()["team"] != "a" {
			t.Errorf("%T loses the annotations templates may read: %v", o, got.GetAnnotations())
		}
	}
	// Objects the operator writes keep the annotation: an update from the cached copy would
	// otherwise remove it from the API server.
	stack := &csv1.ClusterStack{ObjectMeta: metav1.ObjectMeta{Name: "s", Annotations: maps.Clone(lastApplied), ManagedFields: managed}}
	out, _ := stripReadOnly(stack)
	if got := out.(*csv1.ClusterStack); got.Annotations[corev1.LastAppliedConfigAnnotation] == "" || got.ManagedFields != nil {
		t.Errorf("a ClusterStack: annotations %v, managedFields %v", got.Annotations, got.ManagedFields)
	}
}

func TestPartialKindsAreTheSelectedOnes(t *testing.T) {
	got := PartialKinds(opscheme.New())
	if !got[schema.GroupKind{Kind: "ConfigMap"}] {
		t.Errorf("ConfigMaps are cached by label: partial (%v)", got)
	}
	if got[schema.GroupKind{Group: helmv2.GroupVersion.Group, Kind: helmv2.HelmReleaseKind}] {
		t.Errorf("HelmReleases are all cached (trimmed): not partial (%v)", got)
	}
}
