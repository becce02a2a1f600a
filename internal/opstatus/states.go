package opstatus

import (
	"fmt"
	"sort"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxstatus"
	"github.com/clusterstack-io/clusterstack-operator/internal/opgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/requirements"
)

// VersionLabel is the label whose value is the version a Deployment belongs to (the Kubernetes
// recommended app.kubernetes.io/version), read on the Deployment or, without it there, on its
// pod template.
const VersionLabel = "app.kubernetes.io/version"

// Labels helm-controller puts on every object of a HelmRelease.
const (
	helmNameLabel      = "helm.toolkit.fluxcd.io/name"
	helmNamespaceLabel = "helm.toolkit.fluxcd.io/namespace"
)

// Observed are a ManagementOperator's Flux objects as read from the API server; nil when not found.
type Observed struct {
	GitRepository *sourcev1.GitRepository
	OCIRepository *sourcev1.OCIRepository
	Kustomization *kustomizev1.Kustomization
	HelmChart     *sourcev1.HelmChart
	HelmRelease   *helmv2.HelmRelease
}

// States are the states of the operator's Flux objects for delivering target, in opgen.Objects'
// order, with the revisions each must have for target (a missing object is Missing):
//   - the GitRepository and the Kustomization: the tag, tagPrefix + target (Flux revisions
//     "<tag>@sha1:<commit>"), whatever the objects' specs say, so that an object not yet
//     moved to the target's tag is not taken for delivered; once target is pinned to commit
//     (PinnedCommit), that commit ("sha1:<commit>", the revision of a pinned GitRepository, or
//     the tag's revision at that commit);
//   - the HelmChart and the HelmRelease: the chart version carrying the first 12 hex digits of
//     the commit of the tag, as the HelmChart's Revision strategy names its artifacts, once the
//     GitRepository has fetched the tag.
func States(op *csv1.ManagementOperator, target, commit string, o Observed) []fluxstatus.ObjectState {
	name, tag := opgen.ObjectName(op.Name), op.Tag(target)
	expected := tag
	if commit != "" {
		expected = tag + "@" + pinAlgorithm(op) + ":" + commit
	}
	out := make([]fluxstatus.ObjectState, 0, 3)
	fetched := ""
	var src *fluxstatus.ObjectState
	switch {
	case opgen.UsesOCI(op) && o.OCIRepository != nil:
		s := fluxstatus.FromOCIRepository(o.OCIRepository)
		src = &s
	case !opgen.UsesOCI(op) && o.GitRepository != nil:
		s := fluxstatus.FromGitRepository(o.GitRepository)
		src = &s
	}
	if src == nil {
		out = append(out, fluxstatus.Missing(opgen.SourceKind(op), name, ""))
	} else {
		src.ExpectedRevision = expected
		out = append(out, *src)
		if src.AtRevision() {
			fetched = strings.TrimPrefix(strings.TrimPrefix(fluxstatus.CommitOf(src.Revision), "sha1:"), "sha256:")
		}
	}
	if !opgen.UsesChart(op) {
		if o.Kustomization == nil {
			return append(out, fluxstatus.Missing(kustomizev1.KustomizationKind, name, ""))
		}
		return append(out, fluxstatus.FromKustomization(o.Kustomization, expected))
	}
	chartVersion := ""
	switch {
	case opgen.UsesOCI(op):
		// helm-controller versions a chart read through an OCIRepository "<chart version>+<first
		// 12 hex digits of the artifact's digest>"; before the tag is fetched, no chart is the
		// target's.
		base := "<chart version>"
		if o.HelmRelease != nil {
			if latest := o.HelmRelease.Status.History.Latest(); latest != nil && latest.ChartVersion != "" {
				base, _, _ = strings.Cut(latest.ChartVersion, "+")
			}
		}
		chartVersion = base + "+<digest of " + tag + ">"
		if len(fetched) >= 12 {
			chartVersion = base + "+" + fetched[:12]
		}
	case o.HelmChart == nil:
		out = append(out, fluxstatus.Missing(sourcev1.HelmChartKind, name, ""))
	default:
		s := fluxstatus.FromHelmChart(o.HelmChart, "")
		if len(fetched) >= 12 {
			base, _, _ := strings.Cut(s.Revision, "+")
			if base == "" {
				base = "<chart version>"
			}
			chartVersion = base + "+" + fetched[:12]
			s.ExpectedRevision = chartVersion
		}
		out = append(out, s)
	}
	if o.HelmRelease == nil {
		return append(out, fluxstatus.Missing(helmv2.HelmReleaseKind, name, ""))
	}
	return append(out, fluxstatus.FromHelmRelease(o.HelmRelease, chartVersion))
}

// pinAlgorithm is the digest algorithm of the source's revisions: sha1 for Git (SHA-1
// repositories; a SHA-256 one compares by CommitOf), sha256 for OCI.
func pinAlgorithm(op *csv1.ManagementOperator) string {
	if opgen.UsesOCI(op) {
		return "sha256"
	}
	return "sha1"
}

// InventoryDeployments are the Deployments a Kustomization's inventory lists (the objects it
// applied), sorted by namespace and name.
func InventoryDeployments(ks *kustomizev1.Kustomization) []types.NamespacedName {
	if ks == nil || ks.Status.Inventory == nil {
		return nil
	}
	var out []types.NamespacedName
	for _, e := range ks.Status.Inventory.Entries {
		// ID is "<namespace>_<name>_<group>_<kind>"; names and namespaces have no '_'.
		parts := strings.Split(e.ID, "_")
		if len(parts) != 4 || parts[2] != appsv1.GroupName || parts[3] != "Deployment" {
			continue
		}
		out = append(out, types.NamespacedName{Namespace: parts[0], Name: parts[1]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// HelmReleaseSelector is the label selector of the objects a HelmRelease installed (helm-controller
// labels each with the HelmRelease's name and namespace): list Deployments with it in
// HelmReleaseNamespace only.
func HelmReleaseSelector(hr *helmv2.HelmRelease) map[string]string {
	return map[string]string{helmNameLabel: hr.Name, helmNamespaceLabel: hr.Namespace}
}

// HelmReleaseNamespace is the namespace a HelmRelease installs its chart into (its
// targetNamespace, else its own namespace; opgen stores the Helm release there too): the only
// namespace whose Deployments count as the chart's. Flux's labels can be copied onto a
// Deployment in any namespace; the namespace the ManagementOperator names cannot be chosen by
// whoever copies them. A chart's Deployments in other namespaces are not observed.
func HelmReleaseNamespace(hr *helmv2.HelmRelease) string {
	if hr.Spec.TargetNamespace != "" {
		return hr.Spec.TargetNamespace
	}
	return hr.Namespace
}

// Deployment is what the status needs to know of one Deployment the operator's manifests created.
type Deployment struct {
	// Namespace and Name of the Deployment.
	Namespace, Name string
	// Version is the value of its VersionLabel ("" when it has none).
	Version string
	// Images are the images of its pod template's containers; without a version label, a
	// Deployment whose image is tagged with a version (v1.10.3 or 1.10.3) is of that version.
	Images []string
	// Created is its creation time.
	Created time.Time
	// Current is true when the Deployment controller observed its latest generation.
	Current bool
	// Replicas wanted, and the status counts: updated (at the latest pod template), available,
	// and all pods (old ones included).
	Replicas, Updated, Available, Total int32
	// AvailableCondition is the status of its Available condition (Unknown when absent), with its
	// message.
	AvailableCondition metav1.ConditionStatus
	AvailableMessage   string
	// Failure is what the Deployment controller reports when the rollout failed (Progressing
	// False, e.g. ProgressDeadlineExceeded, or ReplicaFailure True), with its reason; "" when not.
	Failure, FailureReason string
	// FailedSince is when the failure was reported.
	FailedSince time.Time
}

// Ref is "<namespace>/<name>".
func (d Deployment) Ref() string { return d.Namespace + "/" + d.Name }

// FromDeployment reads a Deployment.
func FromDeployment(d *appsv1.Deployment) Deployment {
	out := Deployment{
		Namespace: d.Namespace, Name: d.Name,
		Version:  d.Labels[VersionLabel],
		Created:  d.CreationTimestamp.Time,
		Current:  d.Status.ObservedGeneration >= d.Generation,
		Replicas: 1,
		Updated:  d.Status.UpdatedReplicas, Available: d.Status.AvailableReplicas, Total: d.Status.Replicas,
		AvailableCondition: metav1.ConditionUnknown,
	}
	if out.Version == "" {
		out.Version = d.Spec.Template.Labels[VersionLabel]
	}
	if d.Spec.Replicas != nil {
		out.Replicas = *d.Spec.Replicas
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		out.Images = append(out.Images, c.Image)
	}
	for _, c := range d.Status.Conditions {
		switch {
		case c.Type == appsv1.DeploymentAvailable:
			out.AvailableCondition, out.AvailableMessage = metav1.ConditionStatus(c.Status), c.Message
		case c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse:
			out.Failure, out.FailureReason, out.FailedSince = c.Message, c.Reason, c.LastUpdateTime.Time
		case c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue && out.Failure == "":
			out.Failure, out.FailureReason, out.FailedSince = c.Message, c.Reason, c.LastTransitionTime.Time
		}
	}
	return out
}

// RolledOut is true when every replica runs the latest pod template and is available, and no
// pod of an older template is left.
func (d Deployment) RolledOut() bool {
	return d.Current && d.Updated >= d.Replicas && d.Available >= d.Replicas && d.Total == d.Updated
}

// versionOf is the version d belongs to among candidates: its version label, or an image
// tagged with one of the candidates; "" when neither tells.
func (d Deployment) versionOf(candidates ...string) string {
	if d.Version != "" {
		for _, c := range candidates {
			if sameVersion(d.Version, c) {
				return c
			}
		}
		return d.Version
	}
	for _, img := range d.Images {
		tag := imageTag(img)
		for _, c := range candidates {
			if tag != "" && sameVersion(tag, c) {
				return c
			}
		}
	}
	return ""
}

// imageTag is the tag of an image reference ("" without one; a digest is not a tag).
func imageTag(img string) string {
	img, _, _ = strings.Cut(img, "@")
	slash := strings.LastIndex(img, "/")
	if i := strings.LastIndex(img, ":"); i > slash {
		return img[i+1:]
	}
	return ""
}

func sameVersion(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	va, err1 := requirements.ParseVersion(a)
	vb, err2 := requirements.ParseVersion(b)
	if err1 != nil || err2 != nil {
		return strings.TrimPrefix(a, "v") == strings.TrimPrefix(b, "v")
	}
	return va.Equal(vb)
}

// deploymentReason is the Ready reason of a Deployment still rolling out. It must not be Flux's
// "Progressing", which fluxstatus takes for a routine reconcile of an unchanged object.
const deploymentReason = "RollingOut"

// state is the Deployment as a fluxstatus object: Ready when rolled out and Available, failed
// (Ready False) when the Deployment controller reports the rollout failed, in progress
// otherwise; at the target's revision when it belongs to target (or tells no version).
func (d Deployment) state(target, delivered string) fluxstatus.ObjectState {
	s := fluxstatus.ObjectState{
		Kind: "Deployment", Name: d.Ref(), Exists: true, Created: d.Created, Current: d.Current,
		Ready: metav1.ConditionUnknown, Reason: deploymentReason,
	}
	switch v := d.versionOf(target, delivered); v {
	case "":
		s.Revision = "(no version label)" // counted as the version the manifests applied
	default:
		s.Revision, s.ExpectedRevision = v, target
	}
	switch {
	case d.Failure != "":
		s.Ready, s.Reason, s.ReadySince = metav1.ConditionFalse, d.FailureReason, d.FailedSince
		s.Message = fmt.Sprintf("rollout failed: %s", d.Failure)
	case d.RolledOut() && d.AvailableCondition == metav1.ConditionTrue:
		s.Ready, s.Reason = metav1.ConditionTrue, string(appsv1.DeploymentAvailable)
	case !d.Current:
		s.Message = "the Deployment controller has not observed its latest generation yet"
	default:
		s.Message = fmt.Sprintf("rolling out: %d of %d replicas updated, %d available, %d in total", d.Updated, d.Replicas, d.Available, d.Total)
	}
	return s
}
