// Package fluxgen translates cluster stack intents into Flux objects. It has no client: every
// function is a pure mapping from API objects to the Flux objects the controllers apply, so the
// translation is table-tested without an API server.
//
// Per release (in the ClusterStack's namespace, owned by the ClusterStackRelease):
//   - a GitRepository pinned to the release tag, the one source of the release;
//   - the cluster-class: a HelmChart + HelmRelease (chart) or a Kustomization (kustomize dir)
//     applying it into the management cluster;
//   - one HelmChart per Helm addon component, shared by every cluster's HelmRelease.
//
// Per cluster (in the Cluster's namespace, owned by the ClusterAddon): one HelmRelease or
// Kustomization per addon component, targeting the workload cluster through CAPI's
// <cluster>-kubeconfig Secret and taking its values from the cluster's generated ConfigMap.
package fluxgen

import (
	"path"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/kustomize"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/render"
	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
)

const (
	// DefaultInterval is the Flux interval of generated objects when the ClusterStack sets none.
	DefaultInterval = 5 * time.Minute
	// PinnedSourceInterval is the least interval of a release's GitRepository and HelmCharts once
	// the GitRepository is pinned to the validated commit. A commit cannot change, and Flux's
	// checkout of a commit has no "nothing changed" shortcut (it clones every branch of the
	// repository each time), so re-checking it every spec.interval would only load the Git server;
	// a moved tag is found by the operator's own tag listing every spec.interval, and a change of
	// the pin is a change of spec that Flux acts on at once.
	PinnedSourceInterval = time.Hour
	// AddonInterval is how often Flux re-checks an addon for drift; changes are watched, not polled.
	AddonInterval = 10 * time.Minute
	// AddonTimeout bounds one install or upgrade of an addon.
	AddonTimeout = 5 * time.Minute
	// KubeconfigKey is the key of CAPI's kubeconfig Secret holding the kubeconfig.
	KubeconfigKey = "value"
	// ClusterClassKind and ClusterClassGroup identify CAPI's ClusterClass.
	ClusterClassKind  = "ClusterClass"
	ClusterClassGroup = "cluster.x-k8s.io"
)

// ReleaseLabels are the labels of a release's objects. Values are LabelValue of the names: the
// names themselves unless they are too long (or otherwise invalid) for a label value.
func ReleaseLabels(rel *csv1.ClusterStackRelease, component string) map[string]string {
	l := map[string]string{
		csv1.ManagedByLabel: csv1.ManagedByValue,
		csv1.StackLabel:     LabelValue(rel.Spec.ClusterStack),
		csv1.ReleaseLabel:   LabelValue(rel.Name),
	}
	if component != "" {
		l[csv1.ComponentLabel] = LabelValue(component)
	}
	return l
}

// ClusterLabels are the labels of a cluster's objects, with LabelValue of the names as values.
func ClusterLabels(stack, release, cluster, component string) map[string]string {
	l := map[string]string{
		csv1.ManagedByLabel:   csv1.ManagedByValue,
		csv1.StackLabel:       LabelValue(stack),
		csv1.ReleaseLabel:     LabelValue(release),
		csv1.ClusterNameLabel: LabelValue(cluster),
	}
	if component != "" {
		l[csv1.ComponentLabel] = LabelValue(component)
	}
	return l
}

// ReleaseInterval is the release's spec.interval, or DefaultInterval when it sets none: how often
// its tag is verified and its cluster-class re-applied.
func ReleaseInterval(rel *csv1.ClusterStackRelease) metav1.Duration {
	if rel.Spec.Interval.Duration > 0 {
		return rel.Spec.Interval
	}
	return metav1.Duration{Duration: DefaultInterval}
}

// Pinned reports whether the release's GitRepository is pinned to its validated commit (the
// release is validated and does not follow moved tags).
//
// A pin recorded for another kind of source (a Git commit, 40 hex digits, before the stack moved
// to an OCI registry, whose digests have 64) does not count: the release follows its tag until it
// is validated again, and the new pin replaces it.
func Pinned(rel *csv1.ClusterStackRelease) bool {
	if rel.Spec.FollowMovedTags {
		return false
	}
	n := len(rel.Status.Commit)
	if rel.Spec.Source.IsOCI() {
		return n == 64
	}
	// Git commits: SHA-1 (40 hex digits), or SHA-256 for repositories in that object format.
	return n == 40 || n == 64
}

// sourceInterval is the interval of the release's GitRepository and HelmCharts: the release's,
// and at least PinnedSourceInterval once the source is pinned to a commit.
func sourceInterval(rel *csv1.ClusterStackRelease) metav1.Duration {
	if i := ReleaseInterval(rel); !Pinned(rel) || i.Duration >= PinnedSourceInterval {
		return i
	}
	return metav1.Duration{Duration: PinnedSourceInterval}
}

// componentPath is the path of a component in the repository, as Flux wants it ("./a/b").
func componentPath(rel *csv1.ClusterStackRelease, p string) string {
	return "./" + path.Clean(path.Join(rel.Spec.Source.Path, p))
}

// SourceKind is the kind of the release's source: GitRepository, or OCIRepository when the
// stack is read from an OCI registry.
func SourceKind(rel *csv1.ClusterStackRelease) string {
	if rel.Spec.Source.IsOCI() {
		return sourcev1.OCIRepositoryKind
	}
	return sourcev1.GitRepositoryKind
}

// ReleaseSource is the release's source, a GitRepository or an OCIRepository (SourceKind),
// named GitRepositoryName(release) either way.
func ReleaseSource(rel *csv1.ClusterStackRelease) client.Object {
	if rel.Spec.Source.IsOCI() {
		return OCIRepository(rel)
	}
	return GitRepository(rel)
}

// NewReleaseSource is an empty object of the release's source kind, to read it into.
func NewReleaseSource(rel *csv1.ClusterStackRelease) SourceObject {
	if rel.Spec.Source.IsOCI() {
		return &sourcev1.OCIRepository{}
	}
	return &sourcev1.GitRepository{}
}

// SourceObject is a Flux source with an artifact: a GitRepository or an OCIRepository.
type SourceObject interface {
	client.Object
	GetArtifact() *meta.Artifact
}

// GitRepository is the release's source: the repository at the release tag. Only the stack
// directory is packaged into the artifact, so a repository holding many stacks costs little.
func GitRepository(rel *csv1.ClusterStackRelease) *sourcev1.GitRepository {
	gr := &sourcev1.GitRepository{
		TypeMeta:   metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.GitRepositoryKind},
		ObjectMeta: metav1.ObjectMeta{Name: GitRepositoryName(rel.Name), Namespace: rel.Namespace, Labels: ReleaseLabels(rel, "")},
		Spec: sourcev1.GitRepositorySpec{
			URL:       rel.Spec.Source.URL,
			SecretRef: rel.Spec.Source.SecretRef.DeepCopy(),
			Interval:  sourceInterval(rel),
			Reference: &sourcev1.GitRepositoryRef{Tag: rel.Name},
		},
	}
	// Once validated, the release is pinned to the commit its tag pointed to (Flux's commit
	// takes precedence over the tag, which stays for people to read): a tag moved later is
	// reported, not delivered.
	if Pinned(rel) {
		gr.Spec.Reference.Commit = rel.Status.Commit
	}
	if ignore := OnlyPath(rel.Spec.Source.Path); ignore != "" {
		gr.Spec.Ignore = &ignore
	}
	return gr
}

// OCIRepository is the release's source read from an OCI registry: the release tag's artifact
// in Flux's format (the stack directory, `stackctl push`), unpacked. Once validated, the release
// is pinned to the validated manifest's digest (Flux then ignores the tag): a tag moved later is
// reported, not delivered. An artifact whose layer is not of Flux's content type (an SCS release
// artifact, a container image) fails in Flux with its message, and nothing of it is delivered.
func OCIRepository(rel *csv1.ClusterStackRelease) *sourcev1.OCIRepository {
	spec := OCIRepositorySpec(*rel.Spec.Source.OCI, sourceInterval(rel))
	spec.Reference = &sourcev1.OCIRepositoryRef{Tag: rel.Name}
	if Pinned(rel) {
		spec.Reference = &sourcev1.OCIRepositoryRef{Digest: "sha256:" + rel.Status.Commit}
	}
	spec.LayerSelector = &sourcev1.OCILayerSelector{MediaType: FluxContentMediaType, Operation: sourcev1.OCILayerExtract}
	if ignore := OnlyPath(rel.Spec.Source.Path); ignore != "" {
		spec.Ignore = &ignore
	}
	return &sourcev1.OCIRepository{
		TypeMeta:   metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.OCIRepositoryKind},
		ObjectMeta: metav1.ObjectMeta{Name: GitRepositoryName(rel.Name), Namespace: rel.Namespace, Labels: ReleaseLabels(rel, "")},
		Spec:       spec,
	}
}

// Media types of the OCI artifacts a release is read from: Flux's content layer (the stack
// directory) and a Helm chart's layer (a packaged chart, which helm-controller reads as is).
const (
	FluxContentMediaType      = "application/vnd.cncf.flux.content.v1.tar+gzip"
	HelmChartContentMediaType = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
)

// OnlyPath returns .sourceignore rules (gitignore syntax) that exclude everything but dir.
// gitignore cannot re-include a file whose parent directory is excluded, so every ancestor is
// re-included and its other entries excluded again: for "a/b" the rules are
// "/*", "!/a/", "/a/*", "!/a/b/". It returns "" for the repository root.
func OnlyPath(dir string) string {
	dir = strings.Trim(path.Clean("/"+dir), "/")
	if dir == "" {
		return ""
	}
	var b strings.Builder
	b.WriteString("/*\n")
	prefix := ""
	for _, part := range strings.Split(dir, "/") {
		prefix += "/" + part
		b.WriteString("!" + prefix + "/\n")
		if prefix != "/"+dir {
			b.WriteString(prefix + "/*\n")
		}
	}
	return b.String()
}

// chartSource is the source of a Helm component's chart: a HelmChart built from the release's
// GitRepository, or, for a release read from an OCI registry, an OCIRepository of the chart's
// own artifact pinned to the digest the release names (c.ChartDigest).
func chartSource(rel *csv1.ClusterStackRelease, name, component string, c csv1.ReleaseComponent) client.Object {
	if rel.Spec.Source.IsOCI() {
		spec := OCIRepositorySpec(*rel.Spec.Source.OCI, sourceInterval(rel))
		spec.Reference = &sourcev1.OCIRepositoryRef{Digest: c.ChartDigest}
		spec.LayerSelector = &sourcev1.OCILayerSelector{MediaType: HelmChartContentMediaType, Operation: sourcev1.OCILayerCopy}
		return &sourcev1.OCIRepository{
			TypeMeta:   metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.OCIRepositoryKind},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: rel.Namespace, Labels: ReleaseLabels(rel, component)},
			Spec:       spec,
		}
	}
	return &sourcev1.HelmChart{
		TypeMeta:   metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.HelmChartKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: rel.Namespace, Labels: ReleaseLabels(rel, component)},
		Spec: sourcev1.HelmChartSpec{
			Chart:     componentPath(rel, c.Path),
			SourceRef: sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.GitRepositoryKind, Name: GitRepositoryName(rel.Name)},
			// source-controller rebuilds a chart when its source's artifact changes (watched).
			Interval:          sourceInterval(rel),
			ReconcileStrategy: sourcev1.ReconcileStrategyChartVersion,
		},
	}
}

// ChartSourceKind is the kind of a release's chart sources: HelmChart, or OCIRepository for a
// release read from an OCI registry.
func ChartSourceKind(rel *csv1.ClusterStackRelease) string {
	if rel.Spec.Source.IsOCI() {
		return sourcev1.OCIRepositoryKind
	}
	return sourcev1.HelmChartKind
}

// ChartVersion is the chart version helm-controller reports for a Helm component once it is
// installed: the chart's version, and for a chart read from an OCIRepository (c.ChartDigest)
// that version as semver with the first 12 hex digits of its digest as build metadata, as
// helm-controller rewrites it (stack.OCIVersion).
func ChartVersion(c csv1.ReleaseComponent) string {
	if c.ChartDigest == "" {
		return c.Version
	}
	return stack.OCIVersion(c.Version, c.ChartDigest)
}

// ChartVersions are the chart versions a HelmRelease of the Helm component c may report once it
// installed the component's chart: ChartVersion, and for a chart read from an OCIRepository
// also the chart's own version, which helm-controller keeps when it runs with its
// DisableChartDigestTracking feature gate.
func ChartVersions(c csv1.ReleaseComponent) []string {
	if v := ChartVersion(c); v != c.Version {
		return []string{v, c.Version}
	}
	return []string{c.Version}
}

// ClusterClassObjects are the Flux objects applying a release's cluster-class into the
// management cluster, in the release's namespace.
//
// A chart is installed as its own Helm release named after the release, so that two releases
// of a stack never share (and upgrade away) each other's Helm release. Charts name their
// ClusterClass `{{ .Release.Name }}-{{ .Chart.Version }}` (the Sovereign Cloud Stack
// convention); a post-renderer sets the ClusterClass's name to the release name, the name
// every Cluster refers to. The templates the ClusterClass references keep their rendered names.
func ClusterClassObjects(rel *csv1.ClusterStackRelease, c csv1.ReleaseComponent) []client.Object {
	name := ClusterClassObjectName(rel.Name)
	labels := ReleaseLabels(rel, csv1.ClusterClassComponent)
	if c.Kind == csv1.ComponentKindKustomize {
		return []client.Object{&kustomizev1.Kustomization{
			TypeMeta:   metav1.TypeMeta{APIVersion: kustomizev1.GroupVersion.String(), Kind: kustomizev1.KustomizationKind},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: rel.Namespace, Labels: labels},
			Spec: kustomizev1.KustomizationSpec{
				SourceRef:          kustomizev1.CrossNamespaceSourceReference{Kind: SourceKind(rel), Name: GitRepositoryName(rel.Name)},
				Path:               componentPath(rel, c.Path),
				Interval:           ReleaseInterval(rel),
				Prune:              true,
				Wait:               true,
				Timeout:            &metav1.Duration{Duration: AddonTimeout},
				TargetNamespace:    rel.Namespace,
				ServiceAccountName: rel.Spec.ServiceAccountName,
				// The variables a kustomize cluster-class names its ClusterClass with (stacks/README.md).
				PostBuild: &kustomizev1.PostBuild{Substitute: map[string]string{
					"cluster_class_name": rel.Name,
					"release_name":       strings.TrimSuffix(strings.TrimSuffix(rel.Name, rel.Spec.Version), "-"),
					"release_version":    rel.Spec.Version,
					"kubernetes_version": rel.Status.KubernetesVersion,
				}},
			},
		}}
	}
	chart := chartSource(rel, name, csv1.ClusterClassComponent, c)
	hr := &helmv2.HelmRelease{
		TypeMeta:   metav1.TypeMeta{APIVersion: helmv2.GroupVersion.String(), Kind: helmv2.HelmReleaseKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: rel.Namespace, Labels: labels},
		Spec: helmv2.HelmReleaseSpec{
			ChartRef:           &helmv2.CrossNamespaceSourceReference{Kind: ChartSourceKind(rel), Name: name},
			Interval:           ReleaseInterval(rel),
			ReleaseName:        HelmReleaseName(rel.Name),
			TargetNamespace:    rel.Namespace,
			ServiceAccountName: rel.Spec.ServiceAccountName,
			Install:            &helmv2.Install{Remediation: &helmv2.InstallRemediation{Retries: -1}},
			Upgrade:            &helmv2.Upgrade{Remediation: &helmv2.UpgradeRemediation{Retries: -1}},
			PostRenderers: []helmv2.PostRenderer{{Kustomize: &helmv2.Kustomize{Patches: []kustomize.Patch{{
				Target: &kustomize.Selector{Group: ClusterClassGroup, Kind: ClusterClassKind},
				Patch:  "- op: replace\n  path: /metadata/name\n  value: " + rel.Name + "\n",
			}}}}},
		},
	}
	return []client.Object{chart, hr}
}

// AddonCharts are the shared chart sources of a release's Helm addon components (HelmCharts,
// or OCIRepositories of the charts for a release read from an OCI registry): one per component
// per release, referenced by every cluster's HelmRelease.
func AddonCharts(rel *csv1.ClusterStackRelease, components []csv1.ReleaseComponent) []client.Object {
	var out []client.Object
	for _, c := range components {
		if c.Kind != csv1.ComponentKindHelm {
			continue
		}
		out = append(out, chartSource(rel, AddonChartName(rel.Name, c.Name), c.Name, c))
	}
	return out
}

// ClusterInput names what a cluster's addon objects are built from.
type ClusterInput struct {
	// Cluster and Namespace of the CAPI Cluster.
	Cluster, Namespace string
	// Stack is the ClusterStack's name.
	Stack string
	// Release is the release whose addons are wanted.
	Release *csv1.ClusterStackRelease
	// Components of that release, in install order.
	Components []csv1.ReleaseComponent
	// Timeout bounds one install, upgrade or health check (Flux's spec.timeout); 0 means AddonTimeout.
	Timeout time.Duration
	// FluxShard is the Cluster's FluxShardLabel value, copied onto its HelmReleases and
	// Kustomizations so that the Flux controllers of that shard reconcile them; empty: no label.
	FluxShard string
}

// FluxShardLabel is the label Flux's controllers are sharded by (their --watch-label-selector).
// On a CAPI Cluster it names the Flux shard that delivers the Cluster's addons: the operator
// copies it onto the Cluster's HelmReleases and Kustomizations.
const FluxShardLabel = "sharding.fluxcd.io/key"

// AddonTarget returns the workload-cluster namespace and the Helm release name of a cluster's
// addon component. Normally they are the component's namespace (kube-system when it has none)
// and the component's name. A namespace with render.ClusterNamePlaceholder ("cni-${cluster_name}")
// is per cluster: the placeholder is replaced by the cluster's name (and the result shortened
// by SafeName when it is no DNS label of at most 63 characters), and the release is named
// after the cluster too (HelmReleaseName of AddonObjectName), so that Clusters whose workload
// clusters share one API server never share a namespace or a Helm release.
func AddonTarget(cluster string, c csv1.ReleaseComponent) (namespace, releaseName string) {
	ns := c.Namespace
	if ns == "" {
		ns = "kube-system"
	}
	if !render.HasClusterName(ns) {
		return ns, HelmReleaseName(c.Name)
	}
	return SafeName(MaxObjectName, render.ExpandClusterName(ns, cluster)), HelmReleaseName(AddonObjectName(cluster, c.Name))
}

// AddonObjects are a cluster's HelmReleases and Kustomizations, one per component, in order.
// Each depends on the previous component of the same kind (Flux orders only within a kind);
// callers gate creation across kinds.
func AddonObjects(in ClusterInput) []client.Object {
	values := ValuesConfigMapName(in.Cluster, in.Release.Name)
	timeout := in.Timeout
	if timeout <= 0 {
		timeout = AddonTimeout
	}
	kubeconfig := &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: KubeconfigSecretName(in.Cluster), Key: KubeconfigKey}}
	var out []client.Object
	var prevHelm, prevKust string
	for _, c := range in.Components {
		name := AddonObjectName(in.Cluster, c.Name)
		labels := ClusterLabels(in.Stack, in.Release.Name, in.Cluster, c.Name)
		if in.FluxShard != "" {
			labels[FluxShardLabel] = in.FluxShard
		}
		ns, releaseName := AddonTarget(in.Cluster, c)
		switch c.Kind {
		case csv1.ComponentKindHelm:
			hr := &helmv2.HelmRelease{
				TypeMeta:   metav1.TypeMeta{APIVersion: helmv2.GroupVersion.String(), Kind: helmv2.HelmReleaseKind},
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: in.Namespace, Labels: labels},
				Spec: helmv2.HelmReleaseSpec{
					ChartRef:         &helmv2.CrossNamespaceSourceReference{Kind: ChartSourceKind(in.Release), Name: AddonChartName(in.Release.Name, c.Name)},
					Interval:         metav1.Duration{Duration: AddonInterval},
					KubeConfig:       kubeconfig.DeepCopy(),
					ReleaseName:      releaseName,
					TargetNamespace:  ns,
					StorageNamespace: ns,
					Timeout:          &metav1.Duration{Duration: timeout},
					Install:          &helmv2.Install{CreateNamespace: true, Remediation: &helmv2.InstallRemediation{Retries: -1}},
					Upgrade:          &helmv2.Upgrade{Remediation: &helmv2.UpgradeRemediation{Retries: -1}},
					ValuesFrom:       []helmv2.ValuesReference{{Kind: "ConfigMap", Name: values, ValuesKey: render.HelmValuesKey(c.Name)}},
					// With a kubeConfig, Flux impersonates the account on the workload cluster.
					ServiceAccountName: in.Release.Spec.ServiceAccountName,
				},
			}
			if prevHelm != "" {
				hr.Spec.DependsOn = []helmv2.DependencyReference{{Name: prevHelm}}
			}
			prevHelm = name
			out = append(out, hr)
		case csv1.ComponentKindKustomize:
			ks := &kustomizev1.Kustomization{
				TypeMeta:   metav1.TypeMeta{APIVersion: kustomizev1.GroupVersion.String(), Kind: kustomizev1.KustomizationKind},
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: in.Namespace, Labels: labels},
				Spec: kustomizev1.KustomizationSpec{
					SourceRef:     kustomizev1.CrossNamespaceSourceReference{Kind: SourceKind(in.Release), Name: GitRepositoryName(in.Release.Name)},
					Path:          componentPath(in.Release, c.Path),
					Interval:      metav1.Duration{Duration: AddonInterval},
					RetryInterval: &metav1.Duration{Duration: 30 * time.Second},
					Timeout:       &metav1.Duration{Duration: timeout},
					KubeConfig:    kubeconfig.DeepCopy(),
					Prune:         true,
					Wait:          true,
					PostBuild:     &kustomizev1.PostBuild{SubstituteFrom: []kustomizev1.SubstituteReference{{Kind: "ConfigMap", Name: values}}},
					// With a kubeConfig, Flux impersonates the account on the workload cluster.
					ServiceAccountName: in.Release.Spec.ServiceAccountName,
				},
			}
			if prevKust != "" {
				ks.Spec.DependsOn = []kustomizev1.DependencyReference{{Name: prevKust}}
			}
			prevKust = name
			out = append(out, ks)
		}
	}
	return out
}
