package opstatus

import (
	"crypto/sha1"
	"fmt"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/opgen"
)

// commit is a fake commit of a tag: the SHA-1 of its name.
func commit(tag string) string {
	return fmt.Sprintf("%x", sha1.Sum([]byte(tag)))
}

// readyConds is a Ready=True condition with reason and msg, an hour old.
func readyConds(reason, msg string) []metav1.Condition {
	return []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour))}}
}

// fetchedRepo is the operator's GitRepository, written for specTag, having fetched fetchedTag.
func fetchedRepo(op *csv1.ManagementOperator, specTag, fetchedTag string) *sourcev1.GitRepository {
	gr := opgen.GitRepository(op, testNS, specTag, "")
	gr.Generation, gr.CreationTimestamp = 1, metav1.NewTime(t0.Add(-24*time.Hour))
	gr.Status.ObservedGeneration = 1
	gr.Status.Conditions = readyConds("Succeeded", "stored artifact for revision '"+fetchedTag+"'")
	gr.Status.Artifact = &meta.Artifact{Revision: fetchedTag + "@sha1:" + commit(fetchedTag)}
	return gr
}

// appliedKustomization is the operator's Kustomization having applied tag, with deployments in
// its inventory.
func appliedKustomization(op *csv1.ManagementOperator, tag string, deployments ...string) *kustomizev1.Kustomization {
	ks := opgen.Kustomization(op, testNS)
	ks.Generation, ks.CreationTimestamp = 1, metav1.NewTime(t0.Add(-24*time.Hour))
	ks.Status.ObservedGeneration = 1
	ks.Status.Conditions = readyConds("ReconciliationSucceeded", "Applied revision: "+tag+"@sha1:"+commit(tag))
	ks.Status.LastAppliedRevision = tag + "@sha1:" + commit(tag)
	ks.Status.Inventory = &kustomizev1.ResourceInventory{Entries: []kustomizev1.ResourceRef{
		{ID: "_capi-system__Namespace", Version: "v1"},
		{ID: "_clusters.cluster.x-k8s.io_apiextensions.k8s.io_CustomResourceDefinition", Version: "v1"},
		{ID: "capi-system_capi-manager__ServiceAccount", Version: "v1"},
	}}
	for _, d := range deployments {
		ns, name, _ := strings.Cut(d, "/")
		ks.Status.Inventory.Entries = append(ks.Status.Inventory.Entries, kustomizev1.ResourceRef{ID: ns + "_" + name + "_apps_Deployment", Version: "v1"})
	}
	return ks
}

func TestStatesKustomize(t *testing.T) {
	op := operator("v1.11.0", "v1.10.3", "v1.11.0", func(op *csv1.ManagementOperator) { op.Spec.Source.Git.TagPrefix = "capi/" })
	tests := []struct {
		name    string
		obs     Observed
		healthy []bool
		want    []string
	}{
		{
			name:    "nothing exists yet",
			healthy: []bool{false, false},
			want:    []string{"GitRepository/cluster-api-operator does not exist yet", "Kustomization/cluster-api-operator does not exist yet"},
		},
		{
			name:    "both still at the old tag (the cache has not seen the new spec): not at the target's revision",
			obs:     Observed{GitRepository: fetchedRepo(op, "v1.10.3", "capi/v1.10.3"), Kustomization: appliedKustomization(op, "capi/v1.10.3")},
			healthy: []bool{false, false},
			want: []string{
				`GitRepository/cluster-api-operator is at revision "capi/v1.10.3@sha1:` + commit("capi/v1.10.3") + `", expected "capi/v1.11.0"`,
				`Kustomization/cluster-api-operator is at revision "capi/v1.10.3@sha1:` + commit("capi/v1.10.3") + `", expected "capi/v1.11.0"`,
			},
		},
		{
			name:    "source fetched the new tag, the Kustomization has not applied it yet",
			obs:     Observed{GitRepository: fetchedRepo(op, "v1.11.0", "capi/v1.11.0"), Kustomization: appliedKustomization(op, "capi/v1.10.3")},
			healthy: []bool{true, false},
			want: []string{
				"GitRepository/cluster-api-operator is Ready",
				`Kustomization/cluster-api-operator is at revision "capi/v1.10.3@sha1:` + commit("capi/v1.10.3") + `", expected "capi/v1.11.0"`,
			},
		},
		{
			name:    "both at the target's tag",
			obs:     Observed{GitRepository: fetchedRepo(op, "v1.11.0", "capi/v1.11.0"), Kustomization: appliedKustomization(op, "capi/v1.11.0")},
			healthy: []bool{true, true},
			want:    []string{"GitRepository/cluster-api-operator is Ready", "Kustomization/cluster-api-operator is Ready"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			states := States(op, "v1.11.0", "", tt.obs)
			var got []string
			var healthy []bool
			for _, s := range states {
				got, healthy = append(got, s.Describe()), append(healthy, s.Healthy())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("States (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.healthy, healthy); diff != "" {
				t.Errorf("Healthy (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStatesChart(t *testing.T) {
	op := operator("v1.11.0", "v1.10.3", "v1.11.0", func(op *csv1.ManagementOperator) { op.Spec.Chart = &csv1.OperatorChart{} })
	chart := func(version string) *sourcev1.HelmChart {
		hc := opgen.HelmChart(op, testNS)
		hc.Generation, hc.Status.ObservedGeneration = 1, 1
		hc.Status.Conditions = readyConds("ChartPackageSucceeded", "packaged")
		hc.Status.Artifact = &meta.Artifact{Revision: version}
		return hc
	}
	release := func(chartVersion string) *helmv2.HelmRelease {
		hr := opgen.HelmRelease(op, testNS)
		hr.Generation, hr.Status.ObservedGeneration = 1, 1
		hr.Status.Conditions = readyConds("UpgradeSucceeded", "Helm upgrade succeeded")
		hr.Status.History = helmv2.Snapshots{{Name: "cluster-api", Namespace: testNS, Version: 2, Status: "deployed", ChartName: "cluster-api", ChartVersion: chartVersion}}
		return hr
	}
	newChart := "1.11.0+" + commit("v1.11.0")[:12]
	oldChart := "1.10.3+" + commit("v1.10.3")[:12]
	tests := []struct {
		name    string
		obs     Observed
		healthy []bool
		want    []string
	}{
		{
			name:    "chart and release of the new commit",
			obs:     Observed{GitRepository: fetchedRepo(op, "v1.11.0", "v1.11.0"), HelmChart: chart(newChart), HelmRelease: release(newChart)},
			healthy: []bool{true, true, true},
			want:    []string{"GitRepository/cluster-api-operator is Ready", "HelmChart/cluster-api-operator is Ready", "HelmRelease/cluster-api-operator is Ready"},
		},
		{
			name:    "the chart is still built from the old commit",
			obs:     Observed{GitRepository: fetchedRepo(op, "v1.11.0", "v1.11.0"), HelmChart: chart(oldChart), HelmRelease: release(oldChart)},
			healthy: []bool{true, false, false},
			want: []string{
				"GitRepository/cluster-api-operator is Ready",
				`HelmChart/cluster-api-operator is at revision "` + oldChart + `", expected "1.10.3+` + commit("v1.11.0")[:12] + `"`,
				`HelmRelease/cluster-api-operator is at revision "` + oldChart + `", expected "1.10.3+` + commit("v1.11.0")[:12] + `"`,
			},
		},
		{
			name:    "the release still runs the old chart",
			obs:     Observed{GitRepository: fetchedRepo(op, "v1.11.0", "v1.11.0"), HelmChart: chart(newChart), HelmRelease: release(oldChart)},
			healthy: []bool{true, true, false},
			want: []string{
				"GitRepository/cluster-api-operator is Ready",
				"HelmChart/cluster-api-operator is Ready",
				`HelmRelease/cluster-api-operator is at revision "` + oldChart + `", expected "` + newChart + `"`,
			},
		},
		{
			name:    "chart and release missing",
			obs:     Observed{GitRepository: fetchedRepo(op, "v1.11.0", "v1.11.0")},
			healthy: []bool{true, false, false},
			want:    []string{"GitRepository/cluster-api-operator is Ready", "HelmChart/cluster-api-operator does not exist yet", "HelmRelease/cluster-api-operator does not exist yet"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			var healthy []bool
			for _, s := range States(op, "v1.11.0", "", tt.obs) {
				got, healthy = append(got, s.Describe()), append(healthy, s.Healthy())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("States (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.healthy, healthy); diff != "" {
				t.Errorf("Healthy (-want +got):\n%s", diff)
			}
		})
	}
}

func TestInventoryDeployments(t *testing.T) {
	op := operator("v1.10.3", "", "")
	ks := appliedKustomization(op, "v1.10.3", "capi-system/capi-manager", "capi-system/capi-a-webhook")
	want := []types.NamespacedName{{Namespace: "capi-system", Name: "capi-a-webhook"}, {Namespace: "capi-system", Name: "capi-manager"}}
	if diff := cmp.Diff(want, InventoryDeployments(ks)); diff != "" {
		t.Errorf("InventoryDeployments (-want +got):\n%s", diff)
	}
	if got := InventoryDeployments(opgen.Kustomization(op, testNS)); got != nil {
		t.Errorf("InventoryDeployments without an inventory = %v, want none", got)
	}
	hr := opgen.HelmRelease(operator("v1.10.3", "", "", func(op *csv1.ManagementOperator) { op.Spec.Chart = &csv1.OperatorChart{} }), testNS)
	if diff := cmp.Diff(map[string]string{"helm.toolkit.fluxcd.io/name": "cluster-api-operator", "helm.toolkit.fluxcd.io/namespace": testNS}, HelmReleaseSelector(hr)); diff != "" {
		t.Errorf("HelmReleaseSelector (-want +got):\n%s", diff)
	}
}

func TestFromDeployment(t *testing.T) {
	base := func(mut func(*appsv1.Deployment)) *appsv1.Deployment {
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "capi-manager", Generation: 3, CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour))},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](2),
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Image: "registry.k8s.io/cluster-api/cluster-api-controller:v1.10.3"}}}},
			},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2, Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Message: "Deployment has minimum availability."},
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
			}},
		}
		if mut != nil {
			mut(d)
		}
		return d
	}
	tests := []struct {
		name      string
		d         *appsv1.Deployment
		want      Deployment
		rolledOut bool
	}{
		{
			name: "rolled out, version from the image",
			d:    base(nil),
			want: Deployment{Namespace: "capi-system", Name: "capi-manager", Images: []string{"registry.k8s.io/cluster-api/cluster-api-controller:v1.10.3"},
				Created: t0.Add(-time.Hour), Current: true, Replicas: 2, Updated: 2, Available: 2, Total: 2,
				AvailableCondition: metav1.ConditionTrue, AvailableMessage: "Deployment has minimum availability."},
			rolledOut: true,
		},
		{
			name: "version label on the pod template; default of one replica; old pods left",
			d: base(func(d *appsv1.Deployment) {
				d.Spec.Replicas = nil
				d.Spec.Template.Labels = map[string]string{VersionLabel: "v1.11.0"}
				d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.AvailableReplicas = 2, 1, 1
			}),
			want: Deployment{Namespace: "capi-system", Name: "capi-manager", Version: "v1.11.0", Images: []string{"registry.k8s.io/cluster-api/cluster-api-controller:v1.10.3"},
				Created: t0.Add(-time.Hour), Current: true, Replicas: 1, Updated: 1, Available: 1, Total: 2,
				AvailableCondition: metav1.ConditionTrue, AvailableMessage: "Deployment has minimum availability."},
		},
		{
			name: "version label on the Deployment wins; a new generation not observed; the rollout failed",
			d: base(func(d *appsv1.Deployment) {
				d.Labels = map[string]string{VersionLabel: "v1.11.0"}
				d.Spec.Template.Labels = map[string]string{VersionLabel: "other"}
				d.Generation = 4
				d.Status.Conditions[1] = appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded",
					Message: `ReplicaSet "capi-manager-5d8f" has timed out progressing.`, LastUpdateTime: metav1.NewTime(t0.Add(-time.Minute))}
			}),
			want: Deployment{Namespace: "capi-system", Name: "capi-manager", Version: "v1.11.0", Images: []string{"registry.k8s.io/cluster-api/cluster-api-controller:v1.10.3"},
				Created: t0.Add(-time.Hour), Replicas: 2, Updated: 2, Available: 2, Total: 2,
				AvailableCondition: metav1.ConditionTrue, AvailableMessage: "Deployment has minimum availability.",
				Failure: `ReplicaSet "capi-manager-5d8f" has timed out progressing.`, FailureReason: "ProgressDeadlineExceeded", FailedSince: t0.Add(-time.Minute)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := FromDeployment(tt.d)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("FromDeployment (-want +got):\n%s", diff)
			}
			if got.RolledOut() != tt.rolledOut {
				t.Errorf("RolledOut() = %v, want %v", got.RolledOut(), tt.rolledOut)
			}
		})
	}
}

// dep is a Deployment of version (label), rolled out and available.
func dep(name, version string, mut ...func(*Deployment)) Deployment {
	d := Deployment{Namespace: "capi-system", Name: name, Version: version, Created: t0.Add(-24 * time.Hour), Current: true,
		Replicas: 1, Updated: 1, Available: 1, Total: 1, AvailableCondition: metav1.ConditionTrue}
	for _, m := range mut {
		m(&d)
	}
	return d
}

func TestDeploymentState(t *testing.T) {
	tests := []struct {
		name        string
		d           Deployment
		wantHealthy bool
		wantDescr   string
	}{
		{name: "of the target, rolled out", d: dep("m", "v1.11.0"), wantHealthy: true, wantDescr: "Deployment/capi-system/m is Ready"},
		{name: "label without the v", d: dep("m", "1.11.0"), wantHealthy: true, wantDescr: "Deployment/capi-system/m is Ready"},
		{name: "of the delivered version", d: dep("m", "v1.10.3"), wantDescr: `Deployment/capi-system/m is at revision "v1.10.3", expected "v1.11.0"`},
		{name: "of another version", d: dep("m", "v0.1.0"), wantDescr: `Deployment/capi-system/m is at revision "v0.1.0", expected "v1.11.0"`},
		{name: "no label, image tagged with the target", d: dep("m", "", func(d *Deployment) { d.Images = []string{"sidecar:v0.15.0", "reg:5000/capi:1.11.0"} }), wantHealthy: true, wantDescr: "Deployment/capi-system/m is Ready"},
		{name: "no label, image tagged with the delivered version", d: dep("m", "", func(d *Deployment) { d.Images = []string{"reg:5000/capi:v1.10.3@sha256:abc"} }),
			wantDescr: `Deployment/capi-system/m is at revision "v1.10.3", expected "v1.11.0"`},
		{name: "no version to tell: counted as the applied manifests' version", d: dep("m", "", func(d *Deployment) { d.Images = []string{"reg/capi@sha256:abc", "reg/x:latest"} }), wantHealthy: true,
			wantDescr: "Deployment/capi-system/m is Ready"},
		{name: "rolling out", d: dep("m", "v1.11.0", func(d *Deployment) { d.Replicas, d.Updated, d.Available, d.Total = 2, 1, 2, 3 }),
			wantDescr: "Deployment/capi-system/m: rolling out: 1 of 2 replicas updated, 2 available, 3 in total"},
		{name: "new generation not observed", d: dep("m", "v1.11.0", func(d *Deployment) { d.Current = false }),
			wantDescr: "Deployment/capi-system/m: the Deployment controller has not observed its latest generation yet"},
		{name: "rolled out but not Available", d: dep("m", "v1.11.0", func(d *Deployment) { d.AvailableCondition = metav1.ConditionFalse }),
			wantDescr: "Deployment/capi-system/m: rolling out: 1 of 1 replicas updated, 1 available, 1 in total"},
		{name: "failed", d: dep("m", "v1.11.0", func(d *Deployment) { d.Failure, d.FailureReason = "timed out", "ProgressDeadlineExceeded" }),
			wantDescr: "Deployment/capi-system/m: rollout failed: timed out"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.d.state("v1.11.0", "v1.10.3")
			if s.Healthy() != tt.wantHealthy {
				t.Errorf("Healthy() = %v, want %v (%+v)", s.Healthy(), tt.wantHealthy, s)
			}
			if got := s.Describe(); got != tt.wantDescr {
				t.Errorf("Describe() = %q, want %q", got, tt.wantDescr)
			}
			if s.Reason == "Progressing" {
				t.Errorf("Reason %q would pass for a routine Flux reconcile", s.Reason)
			}
		})
	}
	// A failed rollout is Ready False, so the grace clock runs from the failure.
	failed := dep("m", "v1.11.0", func(d *Deployment) { d.Failure, d.FailureReason, d.FailedSince = "x", "ProgressDeadlineExceeded", t0 }).state("v1.11.0", "")
	if failed.Ready != metav1.ConditionFalse || !failed.ReadySince.Equal(t0) {
		t.Errorf("failed Deployment: Ready %s since %v, want False since %v", failed.Ready, failed.ReadySince, t0)
	}
}

// From an OCI source: the OCIRepository is expected at the tag (at the digest once pinned), a
// chart's HelmRelease at the chart version helm-controller gives a chart read through an
// OCIRepository ("<version>+<first 12 hex digits of the digest>"), with no HelmChart.
func TestStatesOCI(t *testing.T) {
	digest := func(s string) string { return strings.Repeat(commit(s)[:32], 2) }
	for _, chart := range []bool{false, true} {
		op := operator("v1.11.0", "v1.10.3", "v1.11.0", func(op *csv1.ManagementOperator) {
			op.Spec.Source = csv1.OperatorSource{OCI: &csv1.OperatorOCISource{OCISource: csv1.OCISource{URL: "oci://registry.example.com/capi"}}}
			if chart {
				op.Spec.Chart = &csv1.OperatorChart{}
			}
		})
		repo := func(rev, pin string) *sourcev1.OCIRepository {
			r := opgen.OCIRepository(op, testNS, "v1.11.0", pin)
			r.Generation, r.Status.ObservedGeneration = 1, 1
			r.Status.Conditions = readyConds("Succeeded", "stored artifact")
			r.Status.Artifact = &meta.Artifact{Revision: rev}
			return r
		}
		applied := func(rev, chartVersion string) Observed {
			if !chart {
				ks := opgen.Kustomization(op, testNS)
				ks.Generation, ks.Status.ObservedGeneration = 1, 1
				ks.Status.Conditions = readyConds("ReconciliationSucceeded", "applied")
				ks.Status.LastAppliedRevision = rev
				return Observed{Kustomization: ks}
			}
			hr := opgen.HelmRelease(op, testNS)
			hr.Generation, hr.Status.ObservedGeneration = 1, 1
			hr.Status.Conditions = readyConds("UpgradeSucceeded", "Helm upgrade succeeded")
			hr.Status.History = helmv2.Snapshots{{Name: "cluster-api", Namespace: testNS, Version: 2, Status: "deployed", ChartName: "cluster-api", ChartVersion: chartVersion}}
			return Observed{HelmRelease: hr}
		}
		newRev, oldRev := "v1.11.0@sha256:"+digest("v1.11.0"), "v1.10.3@sha256:"+digest("v1.10.3")
		for _, tt := range []struct {
			name      string
			src       *sourcev1.OCIRepository
			pin       string
			appliedAt string
			chartAt   string
			want      []bool
		}{
			{"fetched and applied at the tag", repo(newRev, ""), "", newRev, "1.11.0+" + digest("v1.11.0")[:12], []bool{true, true}},
			{"applied from the old digest", repo(newRev, ""), "", oldRev, "1.10.3+" + digest("v1.10.3")[:12], []bool{true, false}},
			{"the source still at the old tag", repo(oldRev, ""), "", oldRev, "1.10.3+" + digest("v1.10.3")[:12], []bool{false, false}},
			{"pinned to the digest", repo("sha256:"+digest("v1.11.0"), digest("v1.11.0")), digest("v1.11.0"), "sha256:" + digest("v1.11.0"), "1.11.0+" + digest("v1.11.0")[:12], []bool{true, true}},
		} {
			obs := applied(tt.appliedAt, tt.chartAt)
			obs.OCIRepository = tt.src
			// A GitRepository of the same name is not the source of an OCI operator.
			obs.GitRepository = fetchedRepo(op, "v1.11.0", "v1.11.0")
			states := States(op, "v1.11.0", tt.pin, obs)
			if len(states) != 2 || states[0].Kind != sourcev1.OCIRepositoryKind {
				t.Fatalf("chart=%v %s: States = %v; want the OCIRepository and the applier", chart, tt.name, states)
			}
			for i, s := range states {
				if s.Healthy() != tt.want[i] {
					t.Errorf("chart=%v %s: %s Healthy = %v, want %v (%s)", chart, tt.name, s.Ref(), s.Healthy(), tt.want[i], s.Describe())
				}
			}
		}
	}
}
