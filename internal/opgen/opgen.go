// Package opgen translates a ManagementOperator into the Flux objects that deliver it. It has no
// client: every function is a pure mapping, table-tested without an API server. The operator
// never applies an operator's manifests itself; Flux does, from these objects.
//
// ManagementOperators are cluster-scoped and Flux objects are namespaced: the objects live in the
// management namespace (the operator's --management-namespace, by default its own namespace),
// where the secretRefs of the ManagementOperator are read too. Per ManagementOperator:
//   - a GitRepository at the version's tag (tagPrefix + version), pinned to the commit the tag
//     pointed to when Flux first fetched it once that is known (unless spec.followMovedTags),
//     packaging only the operator's directory;
//   - or, for an OCI source, an OCIRepository at the version's tag (tagPrefix + version), pinned
//     to the digest the tag pointed to when Flux first fetched it in the same way, with the
//     source's credentials, CA and signature verification;
//   - either a Kustomization applying that directory (prune, wait, health checks, patches, the
//     variables Secret as postBuild.substituteFrom), or a HelmChart of the chart in it and a
//     HelmRelease installing it with the values (from an OCI source, the HelmRelease's chartRef
//     is the OCIRepository itself, whose artifact is the chart).
//
// Deleting the Flux objects must leave the operator running, because uninstalling a Cluster API
// provider deletes its CRDs and with them every object of its kinds in the management cluster:
// the Kustomization's deletionPolicy is Orphan. helm-controller has no such policy but skips the
// uninstall of a suspended HelmRelease, so the controller suspends the HelmRelease (as the
// ClusterAddon finalizer suspends a cluster's Flux objects) before it lets it be deleted.
// Removing an operator is a deliberate, manual step.
package opgen

import (
	"path"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/kustomize"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
)

const (
	// DefaultInterval is the Flux interval when spec.interval is unset (the API defaults it to this).
	DefaultInterval = 10 * time.Minute
	// DefaultTimeout bounds one apply and wait when spec.timeout is unset (the API defaults it to this).
	DefaultTimeout = 10 * time.Minute
	// RetryInterval is how soon Flux retries a failed apply of the Kustomization.
	RetryInterval = time.Minute
	// nameSuffix ends the names of a ManagementOperator's Flux objects.
	nameSuffix = "operator"
)

// Labels are the labels of every object generated for a ManagementOperator: managed-by and the
// ManagementOperator's name (as fluxgen.LabelValue), so that
// `kubectl get gitrepositories,kustomizations -A -l clusterstack.io/management-operator=cluster-api`
// finds exactly its objects.
func Labels(op *csv1.ManagementOperator) map[string]string {
	return map[string]string{
		csv1.ManagedByLabel:          csv1.ManagedByValue,
		csv1.ManagementOperatorLabel: fluxgen.LabelValue(op.Name),
	}
}

// ObjectName is the name of every Flux object of a ManagementOperator (GitRepository,
// Kustomization, HelmChart, HelmRelease: one of each kind at most): "<name>-operator",
// "cluster-api-operator", shortened by fluxgen.SafeName when that is not a DNS label of at most
// 63 characters.
func ObjectName(name string) string { return fluxgen.SafeName(fluxgen.MaxObjectName, name, nameSuffix) }

// UsesChart reports whether the operator is delivered as a Helm chart (else with kustomize).
func UsesChart(op *csv1.ManagementOperator) bool { return op.Spec.Chart != nil }

// Objects are the Flux objects delivering version of the ManagementOperator into the management
// namespace, in apply order: the GitRepository, then the Kustomization, or the HelmChart and the
// HelmRelease. version is the version the objects are written for (opstatus.Decision.Target),
// which is spec.version unless that is refused or held back; commit, when not empty, is the
// commit the GitRepository is pinned to (opstatus.PinnedCommit).
//
// For an OCI source, the source is an OCIRepository and commit is the hex of the digest it is
// pinned to; a chart needs no HelmChart (the HelmRelease reads the OCIRepository's chart).
func Objects(op *csv1.ManagementOperator, namespace, version, commit string) []client.Object {
	var out []client.Object
	if UsesOCI(op) {
		out = append(out, OCIRepository(op, namespace, version, commit))
	} else {
		out = append(out, GitRepository(op, namespace, version, commit))
	}
	switch {
	case UsesChart(op) && UsesOCI(op):
		return append(out, HelmRelease(op, namespace))
	case UsesChart(op):
		return append(out, HelmChart(op, namespace), HelmRelease(op, namespace))
	}
	return append(out, Kustomization(op, namespace))
}

// UsesOCI reports whether the operator is published in an OCI repository (else in Git).
func UsesOCI(op *csv1.ManagementOperator) bool { return op.Spec.Source.OCI != nil }

// SourceKind is the kind of the operator's Flux source: OCIRepository or GitRepository.
func SourceKind(op *csv1.ManagementOperator) string {
	if UsesOCI(op) {
		return sourcev1.OCIRepositoryKind
	}
	return sourcev1.GitRepositoryKind
}

func objectMeta(op *csv1.ManagementOperator, namespace string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: ObjectName(op.Name), Namespace: namespace, Labels: Labels(op)}
}

func interval(op *csv1.ManagementOperator) metav1.Duration {
	if op.Spec.Interval != nil && op.Spec.Interval.Duration > 0 {
		return *op.Spec.Interval
	}
	return metav1.Duration{Duration: DefaultInterval}
}

func timeout(op *csv1.ManagementOperator) *metav1.Duration {
	if op.Spec.Timeout != nil && op.Spec.Timeout.Duration > 0 {
		return &metav1.Duration{Duration: op.Spec.Timeout.Duration}
	}
	return &metav1.Duration{Duration: DefaultTimeout}
}

func gitSource(op *csv1.ManagementOperator) csv1.OperatorGitSource {
	if op.Spec.Source.Git == nil {
		return csv1.OperatorGitSource{}
	}
	return *op.Spec.Source.Git
}

// repoPath is a path in the repository as Flux wants it: "./a/b", "./" for the root.
func repoPath(parts ...string) string {
	p := path.Clean(path.Join(append([]string{"/"}, parts...)...))
	if p == "/" {
		return "./"
	}
	return "." + p
}

// GitRepository is the operator's source: its repository at the version's tag
// (spec.source.git.tagPrefix + version, Flux's spec.ref.tag), packaging only
// spec.source.git.path. Without a commit the tag is the whole reference: Flux resolves it as
// refs/tags/<tag>, with the artifact revision "<tag>@sha1:<commit>". With a commit, Flux's
// spec.ref.commit takes precedence over the tag (which stays for people to read): a tag moved
// later is not fetched, and the artifact revision is "sha1:<commit>".
func GitRepository(op *csv1.ManagementOperator, namespace, version, commit string) *sourcev1.GitRepository {
	git := gitSource(op)
	gr := &sourcev1.GitRepository{
		TypeMeta:   metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.GitRepositoryKind},
		ObjectMeta: objectMeta(op, namespace),
		Spec: sourcev1.GitRepositorySpec{
			URL:       git.URL,
			SecretRef: git.SecretRef.DeepCopy(),
			Interval:  interval(op),
			Reference: &sourcev1.GitRepositoryRef{Tag: op.Tag(version), Commit: commit},
		},
	}
	if ignore := fluxgen.OnlyPath(git.Path); ignore != "" {
		gr.Spec.Ignore = &ignore
	}
	return gr
}

// HelmChartLayer is the media type of a Helm chart's layer in an OCI artifact (`helm push`).
const HelmChartLayer = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"

// OCIRepository is the operator's source from an OCI repository: the version's tag
// (spec.source.oci.tagPrefix + version, Flux's spec.ref.tag), with the source's credentials, CA
// and verification. Without a digest the tag is the whole reference: the artifact revision is
// "<tag>@sha256:<hex>". With a digest (the hex of a sha256 digest), Flux's spec.ref.digest takes
// precedence over the tag (which stays for people to read): a tag moved later is not fetched, and
// the artifact revision is "sha256:<hex>". A chart's OCIRepository selects the Helm chart layer
// and keeps it as it is, as helm-controller's chartRef wants it.
func OCIRepository(op *csv1.ManagementOperator, namespace, version, digest string) *sourcev1.OCIRepository {
	src := op.Spec.Source.OCI
	if src == nil {
		src = &csv1.OperatorOCISource{}
	}
	repo := &sourcev1.OCIRepository{
		TypeMeta:   metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.OCIRepositoryKind},
		ObjectMeta: objectMeta(op, namespace),
		Spec:       fluxgen.OCIRepositorySpec(src.OCISource, interval(op)),
	}
	repo.Spec.Reference = &sourcev1.OCIRepositoryRef{Tag: op.Tag(version)}
	if digest != "" {
		repo.Spec.Reference.Digest = "sha256:" + digest
	}
	if UsesChart(op) {
		repo.Spec.LayerSelector = &sourcev1.OCILayerSelector{MediaType: HelmChartLayer, Operation: sourcev1.OCILayerCopy}
	}
	return repo
}

// Kustomization applies the operator's directory: prune (objects dropped by a new version are
// removed), wait (Ready only once every applied object, the Deployments among them, is healthy),
// the extra health checks, the patches, and the variables Secret for postBuild substitution.
func Kustomization(op *csv1.ManagementOperator, namespace string) *kustomizev1.Kustomization {
	k := op.Spec.Kustomize
	if k == nil {
		k = &csv1.OperatorKustomize{}
	}
	ks := &kustomizev1.Kustomization{
		TypeMeta:   metav1.TypeMeta{APIVersion: kustomizev1.GroupVersion.String(), Kind: kustomizev1.KustomizationKind},
		ObjectMeta: objectMeta(op, namespace),
		Spec: kustomizev1.KustomizationSpec{
			SourceRef:          kustomizev1.CrossNamespaceSourceReference{Kind: SourceKind(op), Name: ObjectName(op.Name)},
			Path:               repoPath(gitSource(op).Path),
			Interval:           interval(op),
			RetryInterval:      &metav1.Duration{Duration: RetryInterval},
			Timeout:            timeout(op),
			Prune:              true,
			DeletionPolicy:     kustomizev1.DeletionPolicyOrphan,
			Wait:               true,
			HealthChecks:       append([]meta.NamespacedObjectKindReference(nil), op.Spec.HealthChecks...),
			Patches:            append([]kustomize.Patch(nil), k.Patches...),
			TargetNamespace:    k.TargetNamespace,
			ServiceAccountName: op.Spec.ServiceAccountName,
		},
	}
	if len(ks.Spec.HealthChecks) == 0 {
		ks.Spec.HealthChecks = nil
	}
	if len(ks.Spec.Patches) == 0 {
		ks.Spec.Patches = nil
	}
	for i := range ks.Spec.Patches {
		if t := ks.Spec.Patches[i].Target; t != nil {
			cp := *t
			ks.Spec.Patches[i].Target = &cp
		}
	}
	if k.VariablesSecretRef != nil && k.VariablesSecretRef.Name != "" {
		ks.Spec.PostBuild = &kustomizev1.PostBuild{SubstituteFrom: []kustomizev1.SubstituteReference{{Kind: "Secret", Name: k.VariablesSecretRef.Name}}}
	}
	return ks
}

// HelmChart is the operator's chart in its GitRepository. The Revision strategy makes every new
// commit a new chart artifact, versioned "<chart version>+<first 12 hex digits of the commit>",
// so a new tag is installed even when the chart's version did not change, and the installed
// chart can be traced to the tag's commit.
func HelmChart(op *csv1.ManagementOperator, namespace string) *sourcev1.HelmChart {
	chartPath := ""
	if op.Spec.Chart != nil {
		chartPath = op.Spec.Chart.Path
	}
	return &sourcev1.HelmChart{
		TypeMeta:   metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.HelmChartKind},
		ObjectMeta: objectMeta(op, namespace),
		Spec: sourcev1.HelmChartSpec{
			Chart:             repoPath(gitSource(op).Path, chartPath),
			SourceRef:         sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.GitRepositoryKind, Name: ObjectName(op.Name)},
			Interval:          interval(op),
			ReconcileStrategy: sourcev1.ReconcileStrategyRevision,
		},
	}
}

// HelmRelease installs the operator's chart with its values into spec.chart.targetNamespace (the
// management namespace when empty), creating the namespace, and creating and replacing the
// chart's CRDs on install and upgrade (Helm leaves crds/ alone on upgrade by default, which would
// keep an operator's old CRDs). Failed installs and upgrades are retried without end, as the
// stacks' HelmReleases are; the status reports them Degraded after the grace period.
func HelmRelease(op *csv1.ManagementOperator, namespace string) *helmv2.HelmRelease {
	chart := op.Spec.Chart
	if chart == nil {
		chart = &csv1.OperatorChart{}
	}
	target := ChartNamespace(op, namespace)
	var values *apiextensionsv1.JSON
	if chart.Values != nil {
		values = chart.Values.DeepCopy()
	}
	chartRef := sourcev1.HelmChartKind
	if UsesOCI(op) {
		chartRef = sourcev1.OCIRepositoryKind
	}
	return &helmv2.HelmRelease{
		TypeMeta:   metav1.TypeMeta{APIVersion: helmv2.GroupVersion.String(), Kind: helmv2.HelmReleaseKind},
		ObjectMeta: objectMeta(op, namespace),
		Spec: helmv2.HelmReleaseSpec{
			ChartRef:           &helmv2.CrossNamespaceSourceReference{Kind: chartRef, Name: ObjectName(op.Name)},
			Interval:           interval(op),
			ReleaseName:        fluxgen.HelmReleaseName(op.Name),
			TargetNamespace:    target,
			StorageNamespace:   target,
			Timeout:            timeout(op),
			ServiceAccountName: op.Spec.ServiceAccountName,
			Install: &helmv2.Install{
				CreateNamespace: true,
				CRDs:            helmv2.CreateReplace,
				Remediation:     &helmv2.InstallRemediation{Retries: -1},
			},
			Upgrade: &helmv2.Upgrade{
				CRDs:        helmv2.CreateReplace,
				Remediation: &helmv2.UpgradeRemediation{Retries: -1},
			},
			Values: values,
		},
	}
}

// ChartNamespace is the namespace the operator's chart is installed into: spec.chart.targetNamespace,
// else the management namespace.
func ChartNamespace(op *csv1.ManagementOperator, namespace string) string {
	if op.Spec.Chart != nil && op.Spec.Chart.TargetNamespace != "" {
		return op.Spec.Chart.TargetNamespace
	}
	return namespace
}

// resources are the plural resource names of the kinds Objects generates.
var resources = map[string]string{
	sourcev1.GitRepositoryKind:    "gitrepositories",
	sourcev1.OCIRepositoryKind:    "ocirepositories",
	sourcev1.HelmChartKind:        "helmcharts",
	kustomizev1.KustomizationKind: "kustomizations",
	helmv2.HelmReleaseKind:        "helmreleases",
}

// RelatedObjects are the references (group, resource, namespace, name) of the Flux objects
// Objects generates, for status.relatedObjects.
func RelatedObjects(op *csv1.ManagementOperator, namespace string) []csv1.ResourceReference {
	objs := Objects(op, namespace, op.Spec.Version, "")
	out := make([]csv1.ResourceReference, 0, len(objs))
	for _, o := range objs {
		gvk := o.GetObjectKind().GroupVersionKind()
		out = append(out, csv1.ResourceReference{Group: gvk.Group, Resource: resources[gvk.Kind], Namespace: o.GetNamespace(), Name: o.GetName()})
	}
	return out
}
