package fluxstatus

import (
	"reflect"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	t0      = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	created = metav1.NewTime(t0.Add(-time.Hour))
)

func at(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }

func TestFromGitRepository(t *testing.T) {
	const tag = "aws-base-1-33-v2"
	meta0 := metav1.ObjectMeta{Name: tag, Namespace: "stacks", Generation: 2, CreationTimestamp: created}
	ref := &sourcev1.GitRepositoryRef{Tag: tag}
	tests := []struct {
		name        string
		obj         *sourcev1.GitRepository
		want        ObjectState
		wantHealthy bool
	}{
		{
			name: "ready at the tag",
			obj: &sourcev1.GitRepository{
				ObjectMeta: meta0,
				Spec:       sourcev1.GitRepositorySpec{Reference: ref},
				Status: sourcev1.GitRepositoryStatus{
					ObservedGeneration: 2,
					Conditions: []metav1.Condition{
						{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "stored artifact for revision 'aws-base-1-33-v2@sha1:0123abcd'", LastTransitionTime: at(-10 * time.Minute)},
						{Type: "ArtifactInStorage", Status: metav1.ConditionTrue, Reason: "Succeeded", LastTransitionTime: at(-10 * time.Minute)},
					},
					Artifact: &meta.Artifact{Revision: "aws-base-1-33-v2@sha1:0123abcd", Digest: "sha256:aa"},
				},
			},
			want: ObjectState{
				Kind: "GitRepository", Name: tag, Exists: true, Created: created.Time,
				Ready: metav1.ConditionTrue, ReadySince: t0.Add(-10 * time.Minute),
				Reason: "Succeeded", Message: "stored artifact for revision 'aws-base-1-33-v2@sha1:0123abcd'",
				Current: true, Revision: "aws-base-1-33-v2@sha1:0123abcd", ExpectedRevision: tag,
			},
			wantHealthy: true,
		},
		{
			name: "pinned to a commit that no branch contains: says what to do",
			obj: &sourcev1.GitRepository{
				ObjectMeta: meta0,
				Spec:       sourcev1.GitRepositorySpec{Reference: &sourcev1.GitRepositoryRef{Tag: tag, Commit: "3438ba83c2284408c305187b4d8c8e8e88211084"}},
				Status: sourcev1.GitRepositoryStatus{
					ObservedGeneration: 2,
					Conditions: []metav1.Condition{
						{Type: "Ready", Status: metav1.ConditionFalse, Reason: "GitOperationFailed", Message: "failed to checkout and determine revision: unable to resolve commit object for '3438ba83c2284408c305187b4d8c8e8e88211084': object not found", LastTransitionTime: at(-time.Minute)},
					},
				},
			},
			want: ObjectState{
				Kind: "GitRepository", Name: tag, Exists: true, Created: created.Time,
				Ready: metav1.ConditionFalse, ReadySince: t0.Add(-time.Minute), Reason: "GitOperationFailed",
				Message: "failed to checkout and determine revision: unable to resolve commit object for '3438ba83c2284408c305187b4d8c8e8e88211084': object not found" +
					" (source-controller fetches a pinned commit from the repository's branches, and commit 3438ba83c2284408c305187b4d8c8e8e88211084 is on none of them: push it to a branch, for example the one the tag was made on)",
				Current: true, ExpectedRevision: "sha1:3438ba83c2284408c305187b4d8c8e8e88211084",
			},
		},
		{
			name: "tag missing: Ready False, Stalled carries the message",
			obj: &sourcev1.GitRepository{
				ObjectMeta: meta0,
				Spec:       sourcev1.GitRepositorySpec{Reference: ref},
				Status: sourcev1.GitRepositoryStatus{
					ObservedGeneration: 2,
					Conditions: []metav1.Condition{
						{Type: "Ready", Status: metav1.ConditionFalse, Reason: "GitOperationFailed", Message: "failed to checkout and determine revision", LastTransitionTime: at(-3 * time.Minute)},
						{Type: "Stalled", Status: metav1.ConditionTrue, Reason: "InvalidURL", Message: "URL scheme 'ftp' is not supported", LastTransitionTime: at(-3 * time.Minute)},
					},
				},
			},
			want: ObjectState{
				Kind: "GitRepository", Name: tag, Exists: true, Created: created.Time,
				Ready: metav1.ConditionFalse, ReadySince: t0.Add(-3 * time.Minute),
				Reason: "InvalidURL", Message: "URL scheme 'ftp' is not supported", Stalled: true,
				Current: true, ExpectedRevision: tag,
			},
		},
		{
			name: "new generation not observed yet, reconciling, old artifact",
			obj: &sourcev1.GitRepository{
				ObjectMeta: metav1.ObjectMeta{Name: tag, Namespace: "stacks", Generation: 3, CreationTimestamp: created},
				Spec:       sourcev1.GitRepositorySpec{Reference: ref},
				Status: sourcev1.GitRepositoryStatus{
					ObservedGeneration: 2,
					Conditions: []metav1.Condition{
						{Type: "Reconciling", Status: metav1.ConditionTrue, Reason: "Progressing", Message: "building artifact", LastTransitionTime: at(-time.Second)},
						{Type: "Ready", Status: metav1.ConditionUnknown, Reason: "Progressing", Message: "building artifact", LastTransitionTime: at(-time.Second)},
						{Type: "Stalled", Status: metav1.ConditionFalse, Reason: "Succeeded", Message: "ignored because False", LastTransitionTime: at(-time.Hour)},
					},
					Artifact: &meta.Artifact{Revision: "aws-base-1-33-v2@sha1:0123abcd"},
				},
			},
			want: ObjectState{
				Kind: "GitRepository", Name: tag, Exists: true, Created: created.Time,
				Ready: metav1.ConditionUnknown, ReadySince: t0.Add(-time.Second),
				Reason: "Progressing", Message: "building artifact", Reconciling: true,
				Current: false, Revision: "aws-base-1-33-v2@sha1:0123abcd", ExpectedRevision: tag,
			},
		},
		{
			name: "just created: no status at all",
			obj:  &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: tag, Generation: 1, CreationTimestamp: created}, Spec: sourcev1.GitRepositorySpec{Reference: ref}},
			want: ObjectState{Kind: "GitRepository", Name: tag, Exists: true, Created: created.Time, Ready: metav1.ConditionUnknown, ExpectedRevision: tag},
		},
		{
			name: "artifact of another tag is not at revision",
			obj: &sourcev1.GitRepository{
				ObjectMeta: meta0,
				Spec:       sourcev1.GitRepositorySpec{Reference: ref},
				Status: sourcev1.GitRepositoryStatus{
					ObservedGeneration: 2,
					Conditions:         []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Succeeded", LastTransitionTime: at(0)}},
					Artifact:           &meta.Artifact{Revision: "aws-base-1-33-v20@sha1:0123abcd"},
				},
			},
			want: ObjectState{
				Kind: "GitRepository", Name: tag, Exists: true, Created: created.Time,
				Ready: metav1.ConditionTrue, ReadySince: t0, Reason: "Succeeded",
				Current: true, Revision: "aws-base-1-33-v20@sha1:0123abcd", ExpectedRevision: tag,
			},
		},
		{
			name: "branch reference: any revision will do",
			obj: &sourcev1.GitRepository{
				ObjectMeta: meta0,
				Spec:       sourcev1.GitRepositorySpec{Reference: &sourcev1.GitRepositoryRef{Branch: "main"}},
				Status: sourcev1.GitRepositoryStatus{
					ObservedGeneration: 2,
					Conditions:         []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Succeeded", LastTransitionTime: at(0)}},
					Artifact:           &meta.Artifact{Revision: "main@sha1:0123abcd"},
				},
			},
			want: ObjectState{
				Kind: "GitRepository", Name: tag, Exists: true, Created: created.Time,
				Ready: metav1.ConditionTrue, ReadySince: t0, Reason: "Succeeded",
				Current: true, Revision: "main@sha1:0123abcd",
			},
			wantHealthy: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := FromGitRepository(tt.obj)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("FromGitRepository() mismatch (-want +got):\n%s", diff)
			}
			if got.Healthy() != tt.wantHealthy {
				t.Errorf("Healthy() = %v, want %v", got.Healthy(), tt.wantHealthy)
			}
		})
	}
}

func TestFromHelmChart(t *testing.T) {
	obj := func(observed int64, revision string, conds ...metav1.Condition) *sourcev1.HelmChart {
		o := &sourcev1.HelmChart{
			ObjectMeta: metav1.ObjectMeta{Name: "aws-base-1-33-v2-cni", Generation: 1, CreationTimestamp: created},
			Status:     sourcev1.HelmChartStatus{ObservedGeneration: observed, Conditions: conds},
		}
		if revision != "" {
			o.Status.Artifact = &meta.Artifact{Revision: revision}
		}
		return o
	}
	ready := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "ChartPullSucceeded", Message: "packaged 'cni' chart with version '1.1.0'", LastTransitionTime: at(-time.Minute)}
	tests := []struct {
		name        string
		obj         *sourcev1.HelmChart
		expected    string
		want        ObjectState
		wantHealthy bool
	}{
		{
			name: "packaged at the expected version", obj: obj(1, "1.1.0", ready), expected: "1.1.0",
			want: ObjectState{Kind: "HelmChart", Name: "aws-base-1-33-v2-cni", Exists: true, Created: created.Time, Ready: metav1.ConditionTrue,
				ReadySince: t0.Add(-time.Minute), Reason: "ChartPullSucceeded", Message: "packaged 'cni' chart with version '1.1.0'", Current: true, Revision: "1.1.0", ExpectedRevision: "1.1.0"},
			wantHealthy: true,
		},
		{
			name: "older version packaged", obj: obj(1, "1.0.0", ready), expected: "1.1.0",
			want: ObjectState{Kind: "HelmChart", Name: "aws-base-1-33-v2-cni", Exists: true, Created: created.Time, Ready: metav1.ConditionTrue,
				ReadySince: t0.Add(-time.Minute), Reason: "ChartPullSucceeded", Message: "packaged 'cni' chart with version '1.1.0'", Current: true, Revision: "1.0.0", ExpectedRevision: "1.1.0"},
		},
		{
			name: "build failed",
			obj: obj(1, "", metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "BuildFailed", Message: "chart not found at ./stacks/cni", LastTransitionTime: at(-2 * time.Minute)},
				metav1.Condition{Type: "Stalled", Status: metav1.ConditionTrue, Reason: "BuildFailed", Message: "chart not found at ./stacks/cni", LastTransitionTime: at(-2 * time.Minute)}),
			expected: "1.1.0",
			want: ObjectState{Kind: "HelmChart", Name: "aws-base-1-33-v2-cni", Exists: true, Created: created.Time, Ready: metav1.ConditionFalse,
				ReadySince: t0.Add(-2 * time.Minute), Reason: "BuildFailed", Message: "chart not found at ./stacks/cni", Stalled: true, Current: true, ExpectedRevision: "1.1.0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := FromHelmChart(tt.obj, tt.expected)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("FromHelmChart() mismatch (-want +got):\n%s", diff)
			}
			if got.Healthy() != tt.wantHealthy {
				t.Errorf("Healthy() = %v, want %v", got.Healthy(), tt.wantHealthy)
			}
		})
	}
}

func TestFromHelmRelease(t *testing.T) {
	ready := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "UpgradeSucceeded", Message: "Helm upgrade succeeded for release kube-system/cni.v2 with chart cni@1.1.0", LastTransitionTime: at(-time.Minute)}
	obj := func(gen, observed int64, history helmv2.Snapshots, conds ...metav1.Condition) *helmv2.HelmRelease {
		return &helmv2.HelmRelease{
			ObjectMeta: metav1.ObjectMeta{Name: "c1-cni", Namespace: "default", Generation: gen, CreationTimestamp: created},
			Status:     helmv2.HelmReleaseStatus{ObservedGeneration: observed, Conditions: conds, History: history},
		}
	}
	// installFailed and retriesExceeded are a HelmRelease's Ready and Stalled conditions once its
	// install ran out of retries (set at generation 1).
	installFailed := metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "InstallFailed", Message: "Helm install failed", LastTransitionTime: at(-time.Minute), ObservedGeneration: 1}
	retriesExceeded := metav1.Condition{Type: "Stalled", Status: metav1.ConditionTrue, Reason: "RetriesExceeded", Message: "Failed to install after 1 attempt(s)", LastTransitionTime: at(-time.Minute), ObservedGeneration: 1}
	base := ObjectState{Kind: "HelmRelease", Name: "c1-cni", Exists: true, Created: created.Time, ExpectedRevision: "1.1.0"}
	with := func(f func(*ObjectState)) ObjectState { s := base; f(&s); return s }
	tests := []struct {
		name        string
		obj         *helmv2.HelmRelease
		want        ObjectState
		wantHealthy bool
	}{
		{
			name: "upgraded: latest snapshot deployed, history unsorted",
			obj: obj(2, 2, helmv2.Snapshots{
				{Version: 1, Status: "superseded", ChartVersion: "1.0.0"},
				{Version: 2, Status: "deployed", ChartVersion: "1.1.0"},
			}, ready),
			want: with(func(s *ObjectState) {
				s.Ready, s.ReadySince, s.Reason, s.Message = metav1.ConditionTrue, t0.Add(-time.Minute), ready.Reason, ready.Message
				s.Current, s.Revision = true, "1.1.0"
			}),
			wantHealthy: true,
		},
		{
			name: "upgrade failed: latest snapshot failed, no deployed revision",
			obj: obj(2, 2, helmv2.Snapshots{
				{Version: 3, Status: "failed", ChartVersion: "1.1.0"},
				{Version: 2, Status: "deployed", ChartVersion: "1.0.0"},
			}, metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "UpgradeFailed", Message: "Helm upgrade failed: timed out waiting for the condition", LastTransitionTime: at(-4 * time.Minute)}),
			want: with(func(s *ObjectState) {
				s.Ready, s.ReadySince, s.Reason, s.Message = metav1.ConditionFalse, t0.Add(-4*time.Minute), "UpgradeFailed", "Helm upgrade failed: timed out waiting for the condition"
				s.Current = true
			}),
		},
		{
			name: "installing: no history, reconciling",
			obj: obj(1, 0, nil,
				metav1.Condition{Type: "Reconciling", Status: metav1.ConditionTrue, Reason: "Progressing", Message: "Running 'install' action with timeout of 5m0s", LastTransitionTime: at(-time.Second)},
				metav1.Condition{Type: "Ready", Status: metav1.ConditionUnknown, Reason: "Progressing", Message: "Running 'install' action with timeout of 5m0s", LastTransitionTime: at(-time.Second)}),
			want: with(func(s *ObjectState) {
				s.Ready, s.ReadySince, s.Reason, s.Message = metav1.ConditionUnknown, t0.Add(-time.Second), "Progressing", "Running 'install' action with timeout of 5m0s"
				s.Reconciling = true
			}),
		},
		{
			name: "stalled: retries exhausted",
			obj:  obj(1, 1, helmv2.Snapshots{{Version: 1, Status: "failed", ChartVersion: "1.1.0"}}, installFailed, retriesExceeded),
			want: with(func(s *ObjectState) {
				s.Ready, s.ReadySince, s.Reason, s.Message = metav1.ConditionFalse, t0.Add(-time.Minute), "RetriesExceeded", "Failed to install after 1 attempt(s)"
				s.Stalled, s.Current = true, true
			}),
		},
		{
			name: "upgrade failed and rolled back: the failure, not the rollback's revision",
			obj: obj(2, 2, helmv2.Snapshots{
				{Version: 17, Status: "deployed", ChartVersion: "1.0.0"},
				{Version: 16, Status: "failed", ChartVersion: "1.1.0"},
			},
				metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "RollbackSucceeded", Message: "Helm rollback to previous release kube-system/cni.v15 with chart cni@1.0.0 succeeded", LastTransitionTime: at(-time.Minute)},
				metav1.Condition{Type: "Released", Status: metav1.ConditionFalse, Reason: "UpgradeFailed", Message: `Helm upgrade failed for release kube-system/cni with chart cni@1.1.0: cannot patch "cni" with kind DaemonSet: "" is invalid: patch: Invalid value: "{\"apiVersion\":\"apps/v1\",\"kind\":\"DaemonSet\",\"metadata\":{\"name\":\"cni\",\"namespace\":\"kube-system\",\"labels\":{\"app.kubernetes.io/name\":\"cni\",\"app.kubernetes.io/managed-by\":\"Helm\"}},\"spec\":{\"revisionHistoryLimit\":\"ten\"}}": json: cannot unmarshal string into Go struct field DaemonSetSpec.spec.revisionHistoryLimit of type int32`, LastTransitionTime: at(-3 * time.Minute)},
				metav1.Condition{Type: "Remediated", Status: metav1.ConditionTrue, Reason: "RollbackSucceeded", Message: "Helm rollback to previous release kube-system/cni.v15 with chart cni@1.0.0 succeeded", LastTransitionTime: at(-time.Minute)}),
			want: with(func(s *ObjectState) {
				s.Ready, s.ReadySince, s.Reason = metav1.ConditionFalse, t0.Add(-time.Minute), "RollbackSucceeded"
				s.Message = `Helm upgrade failed for release kube-system/cni with chart cni@1.1.0: cannot patch "cni" with kind DaemonSet: "" is invalid: patch: Invalid value: "…": json: cannot unmarshal string into Go struct field DaemonSetSpec.spec.revisionHistoryLimit of type int32 (rolled back to the previous release)`
				s.Current, s.Revision = true, "1.0.0"
			}),
		},
		{
			name: "install failed and uninstalled",
			obj: obj(1, 1, nil,
				metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "UninstallSucceeded", Message: "Helm uninstall for release kube-system/cni with chart cni@1.1.0 succeeded", LastTransitionTime: at(-time.Minute)},
				metav1.Condition{Type: "Released", Status: metav1.ConditionFalse, Reason: "InstallFailed", Message: "Helm install failed for release kube-system/cni with chart cni@1.1.0: context deadline exceeded", LastTransitionTime: at(-time.Minute)}),
			want: with(func(s *ObjectState) {
				s.Ready, s.ReadySince, s.Reason = metav1.ConditionFalse, t0.Add(-time.Minute), "UninstallSucceeded"
				s.Message = "Helm install failed for release kube-system/cni with chart cni@1.1.0: context deadline exceeded (the failed release was uninstalled)"
				s.Current = true
			}),
		},
		{
			name: "stalled after failed tests: the test failure with the stall",
			obj: obj(1, 1, helmv2.Snapshots{{Version: 1, Status: "deployed", ChartVersion: "1.1.0"}},
				metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "TestFailed", Message: "Helm test failed for release kube-system/cni with chart cni@1.1.0: pod cni-test failed", LastTransitionTime: at(-time.Minute)},
				metav1.Condition{Type: "Released", Status: metav1.ConditionTrue, Reason: "InstallSucceeded", Message: "Helm install succeeded", LastTransitionTime: at(-2 * time.Minute)},
				metav1.Condition{Type: "TestSuccess", Status: metav1.ConditionFalse, Reason: "TestFailed", Message: "Helm test failed for release kube-system/cni with chart cni@1.1.0: pod cni-test failed", LastTransitionTime: at(-time.Minute)},
				metav1.Condition{Type: "Stalled", Status: metav1.ConditionTrue, Reason: "RetriesExceeded", Message: "Failed to install after 1 attempt(s)", LastTransitionTime: at(-time.Minute)}),
			want: with(func(s *ObjectState) {
				s.Ready, s.ReadySince, s.Reason = metav1.ConditionFalse, t0.Add(-time.Minute), "RetriesExceeded"
				s.Message = "Helm test failed for release kube-system/cni with chart cni@1.1.0: pod cni-test failed (Failed to install after 1 attempt(s))"
				s.Stalled, s.Current, s.Revision = true, true, "1.1.0"
			}),
		},
		{
			name: "stalled for access, after an older failed upgrade: the stall alone",
			obj: obj(2, 2, helmv2.Snapshots{{Version: 2, Status: "deployed", ChartVersion: "1.0.0"}},
				metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "AccessDenied", Message: "cross-namespace references are not allowed", LastTransitionTime: at(-time.Minute)},
				metav1.Condition{Type: "Released", Status: metav1.ConditionFalse, Reason: "UpgradeFailed", Message: "Helm upgrade failed: timed out", LastTransitionTime: at(-time.Hour)},
				metav1.Condition{Type: "Stalled", Status: metav1.ConditionTrue, Reason: "AccessDenied", Message: "cross-namespace references are not allowed", LastTransitionTime: at(-time.Minute)}),
			want: with(func(s *ObjectState) {
				s.Ready, s.ReadySince, s.Reason, s.Message = metav1.ConditionFalse, t0.Add(-time.Minute), "AccessDenied", "cross-namespace references are not allowed"
				s.Stalled, s.Current, s.Revision = true, true, "1.0.0"
			}),
		},
		{
			name: "failed, then its spec rewritten: Ready speaks of the older generation",
			obj: obj(3, 2, helmv2.Snapshots{{Version: 3, Status: "failed", ChartVersion: "1.1.0"}},
				metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "UpgradeFailed", Message: "Helm upgrade failed: timed out", LastTransitionTime: at(-time.Minute), ObservedGeneration: 2}),
			want: with(func(s *ObjectState) {
				s.Ready, s.ReadySince, s.Reason, s.Message = metav1.ConditionFalse, t0.Add(-time.Minute), "UpgradeFailed", "Helm upgrade failed: timed out"
				s.ReadyStale = true
			}),
		},
		{
			name: "failed again at the new spec (observedGeneration is kept behind on a failure, Ready is not)",
			obj: obj(3, 2, helmv2.Snapshots{{Version: 4, Status: "failed", ChartVersion: "1.1.0"}},
				metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "UpgradeFailed", Message: "Helm upgrade failed: timed out", LastTransitionTime: at(-time.Minute), ObservedGeneration: 3}),
			want: with(func(s *ObjectState) {
				s.Ready, s.ReadySince, s.Reason, s.Message = metav1.ConditionFalse, t0.Add(-time.Minute), "UpgradeFailed", "Helm upgrade failed: timed out"
			}),
		},
		{
			name: "stalled, then its spec rewritten: the stall is of the older generation, Flux will try again",
			obj:  obj(2, 1, helmv2.Snapshots{{Version: 1, Status: "failed", ChartVersion: "1.1.0"}}, installFailed, retriesExceeded),
			want: with(func(s *ObjectState) {
				s.Ready, s.ReadySince, s.Reason, s.Message = metav1.ConditionFalse, t0.Add(-time.Minute), "InstallFailed", "Helm install failed"
				s.ReadyStale = true
			}),
		},
		{
			name: "upgrade failed, not remediated: Ready already says it",
			obj: obj(2, 2, helmv2.Snapshots{{Version: 3, Status: "failed", ChartVersion: "1.1.0"}},
				metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "UpgradeFailed", Message: "Helm upgrade failed: timed out", LastTransitionTime: at(-time.Minute)},
				metav1.Condition{Type: "Released", Status: metav1.ConditionFalse, Reason: "UpgradeFailed", Message: "Helm upgrade failed: timed out", LastTransitionTime: at(-time.Minute)}),
			want: with(func(s *ObjectState) {
				s.Ready, s.ReadySince, s.Reason, s.Message = metav1.ConditionFalse, t0.Add(-time.Minute), "UpgradeFailed", "Helm upgrade failed: timed out"
				s.Current = true
			}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := FromHelmRelease(tt.obj, "1.1.0")
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("FromHelmRelease() mismatch (-want +got):\n%s", diff)
			}
			if got.Healthy() != tt.wantHealthy {
				t.Errorf("Healthy() = %v, want %v", got.Healthy(), tt.wantHealthy)
			}
		})
	}
}

func TestFromKustomization(t *testing.T) {
	const rev = "aws-base-1-33-v2@sha1:0123abcd"
	ready := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "ReconciliationSucceeded", Message: "Applied revision: " + rev, LastTransitionTime: at(-time.Minute)}
	tests := []struct {
		name        string
		obj         *kustomizev1.Kustomization
		want        ObjectState
		wantHealthy bool
	}{
		{
			name: "applied the expected revision",
			obj: &kustomizev1.Kustomization{
				ObjectMeta: metav1.ObjectMeta{Name: "c1-cluster-info", Generation: 4, CreationTimestamp: created},
				Status:     kustomizev1.KustomizationStatus{ObservedGeneration: 4, LastAppliedRevision: rev, LastAttemptedRevision: rev, Conditions: []metav1.Condition{ready}},
			},
			want: ObjectState{Kind: "Kustomization", Name: "c1-cluster-info", Exists: true, Created: created.Time, Ready: metav1.ConditionTrue, ReadySince: t0.Add(-time.Minute),
				Reason: ready.Reason, Message: ready.Message, Current: true, Revision: rev, ExpectedRevision: rev},
			wantHealthy: true,
		},
		{
			name: "still at the previous release's revision",
			obj: &kustomizev1.Kustomization{
				ObjectMeta: metav1.ObjectMeta{Name: "c1-cluster-info", Generation: 5, CreationTimestamp: created},
				Status: kustomizev1.KustomizationStatus{ObservedGeneration: 5, LastAppliedRevision: "aws-base-1-33-v1@sha1:99999999", LastAttemptedRevision: rev,
					Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "HealthCheckFailed", Message: "health check failed after 5m0s", LastTransitionTime: at(-time.Minute)}}},
			},
			want: ObjectState{Kind: "Kustomization", Name: "c1-cluster-info", Exists: true, Created: created.Time, Ready: metav1.ConditionFalse, ReadySince: t0.Add(-time.Minute),
				Reason: "HealthCheckFailed", Message: "health check failed after 5m0s", Current: true, Revision: "aws-base-1-33-v1@sha1:99999999", ExpectedRevision: rev},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := FromKustomization(tt.obj, rev)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("FromKustomization() mismatch (-want +got):\n%s", diff)
			}
			if got.Healthy() != tt.wantHealthy {
				t.Errorf("Healthy() = %v, want %v", got.Healthy(), tt.wantHealthy)
			}
		})
	}
}

func TestAtRevision(t *testing.T) {
	tests := []struct {
		name               string
		revision, expected string
		also               []string
		want               bool
	}{
		{name: "nothing expected, nothing applied", want: false},
		{name: "an OCI chart's version with its digest", revision: "1.0.0+bb7451f24dd5", expected: "1.0.0+bb7451f24dd5", also: []string{"v1"}, want: true},
		{name: "an OCI chart's own version (no digest tracking)", revision: "v1", expected: "1.0.0+bb7451f24dd5", also: []string{"v1"}, want: true},
		{name: "an OCI chart of another digest", revision: "1.0.0+0123456789ab", expected: "1.0.0+bb7451f24dd5", also: []string{"v1"}, want: false},
		{name: "nothing expected, something applied", revision: "main@sha1:abc", want: true},
		{name: "tag matches Flux's <tag>@sha1:<commit>", revision: "aws-base-1-33-v1@sha1:abc", expected: "aws-base-1-33-v1", want: true},
		{name: "tag is a prefix of another tag", revision: "aws-base-1-33-v10@sha1:abc", expected: "aws-base-1-33-v1", want: false},
		{name: "exact chart version", revision: "1.1.0", expected: "1.1.0", want: true},
		{name: "other chart version", revision: "1.1.0", expected: "1.1.1", want: false},
		{name: "chart version with build metadata is another revision", revision: "1.1.0+abc", expected: "1.1.0", want: false},
		{name: "full source revision", revision: "t@sha1:abc", expected: "t@sha1:abc", want: true},
		{name: "full source revision of another commit", revision: "t@sha1:abd", expected: "t@sha1:abc", want: false},
		{name: "nothing applied yet", revision: "", expected: "1.1.0", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := ObjectState{Revision: tt.revision, ExpectedRevision: tt.expected, AlsoExpected: tt.also}
			if got := s.AtRevision(); got != tt.want {
				t.Errorf("AtRevision(revision %q, expected %q) = %v, want %v", tt.revision, tt.expected, got, tt.want)
			}
		})
	}
}

func TestHealthy(t *testing.T) {
	ok := ObjectState{Kind: "HelmRelease", Name: "c1-cni", Exists: true, Ready: metav1.ConditionTrue, Current: true, Revision: "1.0.0", ExpectedRevision: "1.0.0"}
	tests := []struct {
		name string
		mut  func(*ObjectState)
		want bool
	}{
		{name: "ready, current, at revision", mut: func(*ObjectState) {}, want: true},
		{name: "missing", mut: func(s *ObjectState) { s.Exists = false }, want: false},
		{name: "ready unknown", mut: func(s *ObjectState) { s.Ready = metav1.ConditionUnknown }, want: false},
		{name: "ready false", mut: func(s *ObjectState) { s.Ready = metav1.ConditionFalse }, want: false},
		{name: "ready condition absent", mut: func(s *ObjectState) { s.Ready = "" }, want: false},
		{name: "older generation observed", mut: func(s *ObjectState) { s.Current = false }, want: false},
		{name: "wrong revision", mut: func(s *ObjectState) { s.Revision = "0.9.0" }, want: false},
		{name: "stalled although Ready", mut: func(s *ObjectState) { s.Stalled = true }, want: false},
		{name: "reconciling but ready and current", mut: func(s *ObjectState) { s.Reconciling = true }, want: true},
		{name: "routine reconcile of an applied revision (kustomize-controller marks Ready Unknown each time)", mut: func(s *ObjectState) {
			s.Ready, s.Reason, s.Reconciling = metav1.ConditionUnknown, "Progressing", true
		}, want: true},
		{name: "first reconcile: Ready Unknown, nothing applied yet", mut: func(s *ObjectState) {
			s.Ready, s.Reason, s.Reconciling, s.Revision = metav1.ConditionUnknown, "Progressing", true, ""
		}, want: false},
		{name: "reconciling a new revision: Ready Unknown, old revision applied", mut: func(s *ObjectState) {
			s.Ready, s.Reason, s.Reconciling, s.Revision = metav1.ConditionUnknown, "Progressing", true, "0.9.0"
		}, want: false},
		{name: "reconciling a new generation", mut: func(s *ObjectState) {
			s.Ready, s.Reason, s.Reconciling, s.Current = metav1.ConditionUnknown, "Progressing", true, false
		}, want: false},
		{name: "Ready Unknown for another reason", mut: func(s *ObjectState) {
			s.Ready, s.Reason = metav1.ConditionUnknown, "DependencyNotReady"
		}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := ok
			tt.mut(&s)
			if got := s.Healthy(); got != tt.want {
				t.Errorf("Healthy() = %v, want %v for %+v", got, tt.want, s)
			}
		})
	}
}

func TestMissingAndDescribe(t *testing.T) {
	tests := []struct {
		name string
		s    ObjectState
		want string
	}{
		{name: "missing", s: Missing("HelmRelease", "c1-cni", "cni"), want: "HelmRelease/c1-cni does not exist yet"},
		{name: "stalled", s: ObjectState{Kind: "HelmRelease", Name: "c1-cni", Exists: true, Stalled: true, Message: "retries exhausted", Current: true}, want: "HelmRelease/c1-cni stalled: retries exhausted"},
		{name: "not observed", s: ObjectState{Kind: "Kustomization", Name: "k", Exists: true, Ready: metav1.ConditionTrue}, want: "Kustomization/k has not observed its latest generation yet (waiting for kustomize-controller)"},
		{name: "wrong revision", s: ObjectState{Kind: "HelmChart", Name: "h", Exists: true, Current: true, Ready: metav1.ConditionTrue, Revision: "1.0.0", ExpectedRevision: "1.1.0"}, want: `HelmChart/h is at revision "1.0.0", expected "1.1.0"`},
		{name: "healthy", s: ObjectState{Kind: "HelmChart", Name: "h", Exists: true, Current: true, Ready: metav1.ConditionTrue, Revision: "1.1.0"}, want: "HelmChart/h is Ready"},
		{name: "flux message", s: ObjectState{Kind: "HelmRelease", Name: "c1-cni", Exists: true, Current: true, Ready: metav1.ConditionFalse, Message: "install failed"}, want: "HelmRelease/c1-cni: install failed"},
		{name: "failing before it could observe its generation: what Flux said wins", s: ObjectState{Kind: "GitRepository", Name: "r", Exists: true, Ready: metav1.ConditionFalse,
			Message: "failed to checkout and determine revision: unable to clone"}, want: "GitRepository/r: failed to checkout and determine revision: unable to clone"},
		{name: "no message", s: ObjectState{Kind: "HelmRelease", Name: "c1-cni", Exists: true, Current: true, Ready: metav1.ConditionUnknown}, want: "HelmRelease/c1-cni is not Ready"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.Describe(); got != tt.want {
				t.Errorf("Describe() = %q, want %q", got, tt.want)
			}
		})
	}
	m := Missing("HelmRelease", "c1-cni", "cni")
	if want := (ObjectState{Kind: "HelmRelease", Name: "c1-cni", Component: "cni", Ready: metav1.ConditionUnknown}); !reflect.DeepEqual(m, want) {
		t.Errorf("Missing() = %+v, want %+v", m, want)
	}
	if m.Healthy() {
		t.Errorf("a missing object is Healthy")
	}
}

func TestElideObjects(t *testing.T) {
	long := `"` + strings.Repeat(`{\"a\":1}`, 30) + `"`
	tests := []struct{ name, in, want string }{
		{name: "short message unchanged", in: `cannot patch "x" with kind Deployment`, want: `cannot patch "x" with kind Deployment`},
		{name: "object dump elided", in: `Invalid value: ` + long + `: json: cannot unmarshal`, want: `Invalid value: "…": json: cannot unmarshal`},
		{name: "short quotes kept beside a dump", in: `cannot patch "metrics-server": "" is invalid: ` + long + `: bad`, want: `cannot patch "metrics-server": "" is invalid: "…": bad`},
		{name: "long unquoted text between short quotes kept", in: `"a" ` + strings.Repeat("x", 300) + ` "b"`, want: `"a" ` + strings.Repeat("x", 300) + ` "b"`},
		{name: "unbalanced quote left alone", in: `error "` + strings.Repeat("y", 300), want: `error "` + strings.Repeat("y", 300)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := elideObjects(tt.in); got != tt.want {
				t.Errorf("elideObjects() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestObjectStateSame: two states are the same when every field is, times compared as instants.
func TestObjectStateSame(t *testing.T) {
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	base := ObjectState{Kind: "HelmRelease", Name: "c1-cni", Exists: true, Created: at, Ready: metav1.ConditionTrue, ReadySince: at, Message: "ok", Current: true, Revision: "1.0.0"}
	elsewhere := base
	elsewhere.Created, elsewhere.ReadySince = at.In(time.FixedZone("CET", 3600)), at.In(time.FixedZone("CET", 3600))
	if !base.Same(elsewhere) {
		t.Error("the same instants in another location: not the same")
	}
	for name, change := range map[string]func(*ObjectState){
		"Ready":        func(s *ObjectState) { s.Ready = metav1.ConditionFalse },
		"ReadySince":   func(s *ObjectState) { s.ReadySince = at.Add(time.Second) },
		"Message":      func(s *ObjectState) { s.Message = "other" },
		"Reconciling":  func(s *ObjectState) { s.Reconciling = true },
		"Current":      func(s *ObjectState) { s.Current = false },
		"Revision":     func(s *ObjectState) { s.Revision = "1.0.1" },
		"AlsoExpected": func(s *ObjectState) { s.AlsoExpected = []string{"1.0.0+1"} },
	} {
		other := base
		change(&other)
		if base.Same(other) {
			t.Errorf("%s changed: the same", name)
		}
	}
}
