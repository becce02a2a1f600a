package controllers_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/gitauth"
	"github.com/clusterstack-io/clusterstack-operator/internal/releasename"
)

// Builders of the specs' objects, and stand-ins for what Flux's controllers and a Git server
// would do. Every write goes to the real API server.

// ctx is the context of the specs' API calls.
var ctx = context.Background()

// key is the object key of ns/name.
func key(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }

// objectMeta names ns/name.
func objectMeta(ns, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name}
}

// newNamespace creates the namespace of one behaviour's specs, named prefix and a random
// suffix (so that a repeated suite, ginkgo --repeat, starts afresh), and returns its name.
func newNamespace(prefix string) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	ExpectWithOffset(1, k8s.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

// ---------------------------------------------------------------------------------------------
// Stacks, their tags and artifacts

// stackBuilder is a stack directory in memory (stacks/README.md): stack.yaml, a kustomize
// cluster-class and the addon components added with WithHelmAddon and WithKustomizeAddon.
// Addon order is the components' names in alphabetical order (there is no clusteraddon.yaml).
type stackBuilder struct {
	provider, name, minor string
	files                 map[string]string
}

// newStack starts a stack of provider and name for a Kubernetes minor ("1.36"), at Kubernetes
// <minor>.3.
func newStack(provider, name, minor string) *stackBuilder {
	b := &stackBuilder{provider: provider, name: name, minor: minor, files: map[string]string{}}
	b.files["stack.yaml"] = fmt.Sprintf("provider: %s\nclusterStackName: %s\nkubernetesVersion: %s.3\n", provider, name, minor)
	b.files["cluster-class/clusterclass.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${cluster_class_name}\n"
	return b
}

// WithHelmAddon adds an addon component that is a Helm chart of the given version.
func (b *stackBuilder) WithHelmAddon(component, version string) *stackBuilder {
	b.files["cluster-addon/"+component+"/Chart.yaml"] = fmt.Sprintf("apiVersion: v2\nname: %s\nversion: %s\n", component, version)
	b.files["cluster-addon/"+component+"/templates/configmap.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + component + "\n"
	return b
}

// WithKustomizeAddon adds an addon component that is a kustomize directory.
func (b *stackBuilder) WithKustomizeAddon(component string) *stackBuilder {
	b.files["cluster-addon/"+component+"/kustomization.yaml"] = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - configmap.yaml\n"
	b.files["cluster-addon/"+component+"/configmap.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + component + "\n"
	return b
}

// WithoutClusterClass drops the cluster-class directory: the operator finds the stack invalid.
func (b *stackBuilder) WithoutClusterClass() *stackBuilder {
	for name := range b.files {
		if strings.HasPrefix(name, "cluster-class/") {
			delete(b.files, name)
		}
	}
	return b
}

// Path is the stack's directory in the repository: "<provider>/<name>/<major>-<minor>".
func (b *stackBuilder) Path() string {
	return path.Join(b.provider, b.name, strings.ReplaceAll(b.minor, ".", "-"))
}

// KubernetesVersion is the stack's Kubernetes patch version, "v1.36.3".
func (b *stackBuilder) KubernetesVersion() string { return "v" + b.minor + ".3" }

// Release is the release name (tag) of a version: "acme-gc-1-36-v1".
func (b *stackBuilder) Release(version string) string {
	return releasename.Format(b.provider, b.name, b.minor, version)
}

// tarball is the repository at a tag as source-controller packs it: the stack directory in a
// gzipped tarball, deterministic for the same files.
func (b *stackBuilder) tarball() []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, name := range slices.Sorted(maps.Keys(b.files)) {
		data := b.files[name]
		hdr := &tar.Header{Name: path.Join(b.Path(), name), Mode: 0o644, Size: int64(len(data)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}
		Expect(tw.WriteHeader(hdr)).To(Succeed())
		_, err := tw.Write([]byte(data))
		Expect(err).NotTo(HaveOccurred())
	}
	Expect(tw.Close()).To(Succeed())
	Expect(gz.Close()).To(Succeed())
	return buf.Bytes()
}

// artifactServer serves artifacts over HTTP, as source-controller's storage does.
type artifactServer struct {
	*httptest.Server
	mu       sync.Mutex
	files    map[string][]byte
	released map[string]meta.Artifact // by namespace/release
}

func newArtifactServer() *artifactServer {
	a := &artifactServer{files: map[string][]byte{}, released: map[string]meta.Artifact{}}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		data, ok := a.files[strings.TrimPrefix(r.URL.Path, "/")]
		a.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(data)
	}))
	return a
}

// of returns the artifact published for a release.
func (a *artifactServer) of(ns, release string) meta.Artifact {
	a.mu.Lock()
	defer a.mu.Unlock()
	art, ok := a.released[ns+"/"+release]
	ExpectWithOffset(2, ok).To(BeTrue(), "release %s/%s was not published", ns, release)
	return art
}

// tagRegistry answers the TagLister's listings: the tags of each repository URL.
type tagRegistry struct {
	mu      sync.Mutex
	tags    map[string]map[string]string // URL -> tag -> commit
	failing map[string]error             // URL -> the error its listing fails with
}

// fail makes the listing of a repository fail with err until it recovers.
func (t *tagRegistry) fail(url string, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.failing == nil {
		t.failing = map[string]error{}
	}
	t.failing[url] = err
}

// recover lets a repository be listed again.
func (t *tagRegistry) recover(url string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.failing, url)
}

func (t *tagRegistry) publish(url, tag, commit string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tags == nil {
		t.tags = map[string]map[string]string{}
	}
	if t.tags[url] == nil {
		t.tags[url] = map[string]string{}
	}
	t.tags[url][tag] = commit
}

// remove deletes a tag from a repository.
func (t *tagRegistry) remove(url, tag string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.tags[url], tag)
}

// list is the TagLister's List.
func (t *tagRegistry) list(_ context.Context, r *gitauth.Remote) (map[string]string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.failing[r.URL()]; err != nil {
		return nil, err
	}
	refs, ok := t.tags[r.URL()]
	if !ok {
		return nil, fmt.Errorf("repository %s not found", r.URL())
	}
	return maps.Clone(refs), nil
}

// repoURL is the stack repository of a namespace's specs.
func repoURL(ns string) string { return "https://git.example.test/" + ns + "/stacks.git" }

// publishRelease tags a version of the stack in the namespace's repository and stores its
// artifact; it returns the release name. Publish every tag a spec needs before its ClusterStack
// exists: the operator keeps tag listings for the ClusterStack's interval.
func publishRelease(ns string, st *stackBuilder, version string) string {
	release := st.Release(version)
	sum := sha1.Sum([]byte(ns + "/" + release))
	commit := hex.EncodeToString(sum[:])
	data := st.tarball()
	digest := sha256.Sum256(data)
	file := fmt.Sprintf("gitrepository/%s/%s/%s.tar.gz", ns, fluxgen.GitRepositoryName(release), commit)
	art := meta.Artifact{
		Path: file, URL: artifacts.URL + "/" + file, Revision: release + "@sha1:" + commit,
		Digest: "sha256:" + hex.EncodeToString(digest[:]), LastUpdateTime: metav1.NewTime(time.Now().Truncate(time.Second)),
		Size: ptr.To(int64(len(data))),
	}
	artifacts.mu.Lock()
	artifacts.files[file] = data
	artifacts.released[ns+"/"+release] = art
	artifacts.mu.Unlock()
	tags.publish(repoURL(ns), release, commit)
	return release
}

// ---------------------------------------------------------------------------------------------
// ClusterStacks and Clusters

// clusterStackBuilder builds a ClusterStack of a stack from the namespace's repository.
type clusterStackBuilder struct{ cs *csv1.ClusterStack }

func newClusterStack(ns, name string, st *stackBuilder) *clusterStackBuilder {
	return &clusterStackBuilder{cs: &csv1.ClusterStack{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: csv1.ClusterStackSpec{
			Provider: st.provider, Name: st.name, KubernetesVersion: st.minor,
			Source: csv1.StackSource{URL: repoURL(ns), Path: st.Path()},
		},
	}}
}

// Versions pins spec.versions.
func (b *clusterStackBuilder) Versions(v ...string) *clusterStackBuilder {
	b.cs.Spec.Versions = v
	return b
}

// Interval sets spec.interval (how often tags are listed and verified).
func (b *clusterStackBuilder) Interval(d time.Duration) *clusterStackBuilder {
	b.cs.Spec.Interval = &metav1.Duration{Duration: d}
	return b
}

// RollbackReleases sets spec.rollbackReleases.
func (b *clusterStackBuilder) RollbackReleases(n int32) *clusterStackBuilder {
	b.cs.Spec.RollbackReleases = ptr.To(n)
	return b
}

// Create creates the ClusterStack.
func (b *clusterStackBuilder) Create() *csv1.ClusterStack {
	ExpectWithOffset(1, k8s.Create(ctx, b.cs)).To(Succeed())
	return b.cs
}

// clusterBuilder builds a CAPI v1beta2 Cluster with a topology.
type clusterBuilder struct {
	c           *clusterv1.Cluster
	initialized bool
}

func newCluster(ns, name string) *clusterBuilder {
	return &clusterBuilder{c: &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}}
}

// WithClass makes the Cluster's topology use the ClusterClass of a release of st.
func (b *clusterBuilder) WithClass(st *stackBuilder, release string) *clusterBuilder {
	b.c.Spec.Topology.ClassRef.Name = release
	b.c.Spec.Topology.Version = st.KubernetesVersion()
	return b
}

// Initialized marks the control plane initialized and creates the kubeconfig Secret, as CAPI
// does once the workload cluster's API server answers: the addons can then be delivered.
func (b *clusterBuilder) Initialized() *clusterBuilder {
	b.initialized = true
	return b
}

// WithFinalizer adds a finalizer, as CAPI's Cluster controller does: a deleted Cluster then
// stays, being deleted, until the spec removes it.
func (b *clusterBuilder) WithFinalizer(f string) *clusterBuilder {
	b.c.Finalizers = append(b.c.Finalizers, f)
	return b
}

// Create creates the Cluster (and its status and Secret when Initialized).
func (b *clusterBuilder) Create() *clusterv1.Cluster {
	c := b.c
	ExpectWithOffset(1, k8s.Create(ctx, c)).To(Succeed())
	if b.initialized {
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: fluxgen.KubeconfigSecretName(c.Name),
				Labels: map[string]string{csv1.ClusterNameLabel: c.Name}},
			Data: map[string][]byte{fluxgen.KubeconfigKey: []byte("apiVersion: v1\nkind: Config\n")},
		}
		ExpectWithOffset(1, k8s.Create(ctx, secret)).To(Succeed())
		c.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
		ExpectWithOffset(1, k8s.Status().Update(ctx, c)).To(Succeed())
	}
	return c
}

// moveCluster points a Cluster's topology at another release.
func moveCluster(c *clusterv1.Cluster, release string) {
	EventuallyWithOffset(1, func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
			return err
		}
		c.Spec.Topology.ClassRef.Name = release
		return k8s.Update(ctx, c)
	}).Should(Succeed())
}

// update re-reads obj, changes it with mutate and writes it, retrying on conflicts.
func update[T client.Object](obj T, mutate func(T)) {
	EventuallyWithOffset(1, func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		mutate(obj)
		return k8s.Update(ctx, obj)
	}).Should(Succeed())
}

// ---------------------------------------------------------------------------------------------
// Playing Flux: the status Flux's controllers would write

// setStatus plays a Flux controller: it re-reads obj, lets set change its status, and writes
// the status when it changed. It fails (for Eventually to retry) when the object does not exist.
func setStatus[T client.Object](g Gomega, obj T, set func(T)) {
	g.ExpectWithOffset(1, k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	before := obj.DeepCopyObject()
	set(obj)
	if equality.Semantic.DeepEqual(before, obj) {
		return
	}
	g.ExpectWithOffset(1, k8s.Status().Update(ctx, obj)).To(Succeed())
}

// setReady sets Flux's Ready condition True, keeping its transition time when it already was.
func setReady(conds *[]metav1.Condition, generation int64, reason, msg string) {
	apimeta.SetStatusCondition(conds, metav1.Condition{Type: meta.ReadyCondition, Status: metav1.ConditionTrue,
		Reason: reason, Message: msg, ObservedGeneration: generation})
}

// serveArtifact plays source-controller for a release's GitRepository: it has the artifact of
// the published tag and is Ready at its generation.
func serveArtifact(g Gomega, ns, release string) {
	art := artifacts.of(ns, release)
	repo := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fluxgen.GitRepositoryName(release)}}
	setStatus(g, repo, func(r *sourcev1.GitRepository) {
		r.Status.ObservedGeneration = r.Generation
		r.Status.Artifact = art.DeepCopy()
		setReady(&r.Status.Conditions, r.Generation, meta.SucceededReason, "stored artifact for revision '"+art.Revision+"'")
	})
}

// readyHelmChart plays source-controller for a HelmChart: Ready with the chart of version.
func readyHelmChart(g Gomega, ns, name, version string) {
	setStatus(g, &sourcev1.HelmChart{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, func(c *sourcev1.HelmChart) {
		c.Status.ObservedGeneration = c.Generation
		file := fmt.Sprintf("helmchart/%s/%s/%s-%s.tgz", ns, name, name, version)
		c.Status.Artifact = &meta.Artifact{Path: file, URL: artifacts.URL + "/" + file, Revision: version,
			Digest: "sha256:" + strings.Repeat("0", 64), LastUpdateTime: metav1.NewTime(time.Unix(1_700_000_000, 0))}
		setReady(&c.Status.Conditions, c.Generation, sourcev1.ChartPullSucceededReason, "pulled '"+name+"' chart with version '"+version+"'")
	})
}

// readyKustomization plays kustomize-controller: the Kustomization applied revision and is Ready.
func readyKustomization(g Gomega, ns, name, revision string) {
	setStatus(g, &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, func(k *kustomizev1.Kustomization) {
		k.Status.ObservedGeneration = k.Generation
		k.Status.LastAppliedRevision, k.Status.LastAttemptedRevision = revision, revision
		setReady(&k.Status.Conditions, k.Generation, meta.ReconciliationSucceededReason, "Applied revision: "+revision)
	})
}

// readyHelmRelease plays helm-controller: the HelmRelease installed chartVersion and is Ready.
func readyHelmRelease(g Gomega, ns, name, chartVersion string) {
	setStatus(g, &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, func(hr *helmv2.HelmRelease) {
		hr.Status.ObservedGeneration = hr.Generation
		hr.Status.LastAttemptedGeneration = hr.Generation
		hr.Status.LastAttemptedRevision = chartVersion
		if latest := hr.Status.History.Latest(); latest == nil || latest.ChartVersion != chartVersion {
			deployed := metav1.NewTime(time.Unix(1_700_000_000, 0))
			hr.Status.History = helmv2.Snapshots{{
				Name: hr.Spec.ReleaseName, Namespace: hr.Spec.TargetNamespace, Version: 1, Status: "deployed",
				ChartName: hr.Spec.ReleaseName, ChartVersion: chartVersion, Digest: "sha256:" + strings.Repeat("1", 64),
				ConfigDigest: "sha256:" + strings.Repeat("2", 64), FirstDeployed: deployed, LastDeployed: deployed,
			}}
		}
		setReady(&hr.Status.Conditions, hr.Generation, helmv2.InstallSucceededReason, "Helm install succeeded for release "+hr.Spec.ReleaseName+" with chart version "+chartVersion)
	})
}

// releaseWorks plays Flux for a release until it is validated and Available: its
// GitRepository, pinned to the tag's commit once the stack was validated, serves the tag's
// artifact, its cluster-class Kustomization applied it, its addons' HelmCharts are pulled.
func releaseWorks(ns, release string) {
	rel := &csv1.ClusterStackRelease{}
	_, commit, _ := strings.Cut(artifacts.of(ns, release).Revision, "@sha1:")
	EventuallyWithOffset(1, func(g Gomega) {
		serveArtifact(g, ns, release)
		g.Expect(k8s.Get(ctx, key(ns, release), rel)).To(Succeed())
		g.Expect(apimeta.IsStatusConditionTrue(rel.Status.Conditions, csv1.StackValidCondition)).To(BeTrue(), "release %s is not validated: %v", release, rel.Status.Conditions)
		// The pin changes the GitRepository's generation: until then the release is not settled.
		repo := &sourcev1.GitRepository{}
		g.Expect(k8s.Get(ctx, key(ns, fluxgen.GitRepositoryName(release)), repo)).To(Succeed())
		g.Expect(repo.Spec.Reference.Commit).To(Equal(commit), "GitRepository %s is not pinned to the validated commit yet", repo.Name)
		g.Expect(repo.Status.ObservedGeneration).To(Equal(repo.Generation))
		readyKustomization(g, ns, fluxgen.ClusterClassObjectName(release), rel.Status.Revision)
		for _, c := range rel.Status.Components {
			if c.Kind == csv1.ComponentKindHelm {
				readyHelmChart(g, ns, fluxgen.AddonChartName(release, c.Name), c.Version)
			}
		}
		g.Expect(k8s.Get(ctx, key(ns, release), rel)).To(Succeed())
		g.Expect(apimeta.IsStatusConditionTrue(rel.Status.Conditions, csv1.AvailableCondition)).To(BeTrue(), "release %s is not Available: %v", release, rel.Status.Conditions)
	}).Should(Succeed())
}

// releaseValidated plays source-controller for a release until the operator validated its
// stack (the addons can be delivered from it; it need not be Available).
func releaseValidated(ns, release string) *csv1.ClusterStackRelease {
	rel := &csv1.ClusterStackRelease{}
	EventuallyWithOffset(1, func(g Gomega) {
		serveArtifact(g, ns, release)
		g.Expect(k8s.Get(ctx, key(ns, release), rel)).To(Succeed())
		g.Expect(apimeta.IsStatusConditionTrue(rel.Status.Conditions, csv1.StackValidCondition)).To(BeTrue(), "release %s is not validated: %v", release, rel.Status.Conditions)
		g.Expect(rel.Status.Revision).To(Equal(artifacts.of(ns, release).Revision))
	}).Should(Succeed())
	return rel
}

// ---------------------------------------------------------------------------------------------
// Reading what the operator did

// condition returns the condition of type t, or nil.
func condition(conds []metav1.Condition, t string) *metav1.Condition {
	return apimeta.FindStatusCondition(conds, t)
}

// events lists the messages of the Events of reason recorded for the object of a kind and name.
func events(g Gomega, ns, kind, name, reason string) []string {
	var list corev1.EventList
	g.ExpectWithOffset(1, k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name && e.Reason == reason {
			out = append(out, e.Message)
		}
	}
	return out
}

// releaseReasons maps the ClusterStack's status.releases to their keep reasons.
func releaseReasons(g Gomega, ns, name string) map[string][]string {
	cs := &csv1.ClusterStack{}
	g.ExpectWithOffset(1, k8s.Get(ctx, key(ns, name), cs)).To(Succeed())
	out := map[string][]string{}
	for _, r := range cs.Status.Releases {
		out[r.Name] = r.Reasons
	}
	return out
}

// stackSeesAvailable waits until the ClusterStack reports the releases available
// (status.releases[].available). The status aggregation reads the manager's cache, as the
// ClusterStack reconciler does: from then on that reconciler knows they work, and counts them
// as rollback targets.
func stackSeesAvailable(ns, name string, releases ...string) {
	EventuallyWithOffset(1, func(g Gomega) []string {
		cs := &csv1.ClusterStack{}
		g.Expect(k8s.Get(ctx, key(ns, name), cs)).To(Succeed())
		var out []string
		for _, r := range cs.Status.Releases {
			if r.Available {
				out = append(out, r.Name)
			}
		}
		return out
	}).Should(ContainElements(releases))
}

// releaseNames lists the names of the namespace's ClusterStackReleases that are not being deleted.
func releaseNames(g Gomega, ns string) []string {
	var list csv1.ClusterStackReleaseList
	g.ExpectWithOffset(1, k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, r := range list.Items {
		if r.DeletionTimestamp.IsZero() {
			out = append(out, r.Name)
		}
	}
	slices.Sort(out)
	return out
}

// gone is a function for Eventually that succeeds once the object does not exist.
func gone(obj client.Object) func() error {
	return func() error {
		err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if err == nil {
			return fmt.Errorf("%T %s still exists (deletionTimestamp %v, finalizers %v)", obj, obj.GetName(), obj.GetDeletionTimestamp(), obj.GetFinalizers())
		}
		return client.IgnoreNotFound(err)
	}
}

// clusterAddon reads the ClusterAddon of a Cluster.
func clusterAddon(g Gomega, ns, cluster string) *csv1.ClusterAddon {
	a := &csv1.ClusterAddon{}
	g.ExpectWithOffset(1, k8s.Get(ctx, key(ns, cluster), a)).To(Succeed())
	return a
}

// componentMessages maps the ClusterAddon's components to their status messages.
func componentMessages(a *csv1.ClusterAddon) map[string]string {
	out := map[string]string{}
	for _, c := range a.Status.Components {
		out[c.Name] = c.Message
	}
	return out
}

// exists tells whether the object exists (and reads it).
func exists(g Gomega, obj client.Object) bool {
	err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)
	g.ExpectWithOffset(1, client.IgnoreNotFound(err)).To(Succeed())
	return err == nil
}

// helmReleaseLabels reads the labels of a HelmRelease.
func helmReleaseLabels(g Gomega, ns, name string) map[string]string {
	hr := helmRelease(ns, name)
	g.ExpectWithOffset(1, k8s.Get(ctx, key(ns, name), hr)).To(Succeed())
	return hr.Labels
}

// helmRelease and kustomization are empty objects of ns/name, to Get into.
func helmRelease(ns, name string) *helmv2.HelmRelease {
	return &helmv2.HelmRelease{ObjectMeta: objectMeta(ns, name)}
}

func kustomization(ns, name string) *kustomizev1.Kustomization {
	return &kustomizev1.Kustomization{ObjectMeta: objectMeta(ns, name)}
}
