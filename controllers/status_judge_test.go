package controllers

import (
	"context"
	"reflect"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxstatus"
)

// TestJudgeSeesItsOwnWrite: a reconcile that just changed a HelmRelease (a move to a release
// with the same chart version: new values, new chart source) judges it while the cache may still
// hold the object before the write, Ready with that chart version. That copy must not make the
// component Ready at the new release (which would record the release as applied before Flux
// installed it, and let the release before be removed while the cluster still runs it). Without
// a write, or once the cache has seen it, the listed object decides.
func TestJudgeSeesItsOwnWrite(t *testing.T) {
	listed := readyHelmRelease(metav1.ObjectMeta{Namespace: "ns", Name: "c1-cni", Generation: 3})
	hr := func(name string, generation int64) *helmv2.HelmRelease {
		return &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Generation: generation}}
	}
	for _, tc := range []struct {
		name        string
		get         string
		written     *helmv2.HelmRelease
		wantHealthy bool
		wantExists  bool
	}{
		{name: "not written by this reconcile: the listed object decides", get: "c1-cni", wantHealthy: true, wantExists: true},
		{name: "written, the cache had not seen it: not Ready at the new spec", get: "c1-cni", written: hr("c1-cni", 4), wantExists: true},
		{name: "written, the cache had seen it", get: "c1-cni", written: hr("c1-cni", 3), wantHealthy: true, wantExists: true},
		{name: "written, generation unknown: the listed object decides", get: "c1-cni", written: hr("c1-cni", 0), wantHealthy: true, wantExists: true},
		{name: "created, the cache had not seen it: it exists, not Ready", get: "c1-csi", written: hr("c1-csi", 1), wantExists: true},
		{name: "created, generation unknown: it exists at generation 1, not Ready", get: "c1-csi", written: hr("c1-csi", 0), wantExists: true},
		{name: "neither written nor listed: it does not exist", get: "c1-csi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			listedObj := listed.DeepCopy()
			listedObj.SetGroupVersionKind(helmv2.GroupVersion.WithKind(helmv2.HelmReleaseKind))
			f := newFluxObservation([]client.Object{listedObj})
			if tc.written != nil {
				f.wrote(tc.written)
			}
			cur := f.current(helmv2.HelmReleaseKind, tc.get)
			st := fluxObjectState(helmv2.HelmReleaseKind, tc.get, cur, []string{"1.0.0"}, "")
			if st.Exists != tc.wantExists || st.Healthy() != tc.wantHealthy {
				t.Errorf("exists %v, healthy %v; want exists %v, healthy %v (%s)", st.Exists, st.Healthy(), tc.wantExists, tc.wantHealthy, st.Describe())
			}
			if cur != nil && cur.GetGeneration() < 1 {
				t.Errorf("generation %d: an object that exists has one", cur.GetGeneration())
			}
			if listedObj.Generation != 3 {
				t.Errorf("current changed the listed object: generation %d", listedObj.Generation)
			}
		})
	}
}

// TestObserveControlledSeesItsOwnWrite: the ManagementOperator's reconcile reads back the
// HelmRelease it may just have changed (new values for the same chart version) while the cache
// may still hold it before the write, Ready. That copy must not read as Ready for the new spec.
func TestObserveControlledSeesItsOwnWrite(t *testing.T) {
	op := &csv1.ManagementOperator{ObjectMeta: metav1.ObjectMeta{Name: "capi", UID: "uid-capi"}}
	cached := readyHelmRelease(metav1.ObjectMeta{Namespace: "mgmt", Name: "capi", Generation: 3,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: csv1.GroupVersion.String(), Kind: "ManagementOperator",
			Name: op.Name, UID: op.UID, Controller: ptr.To(true)}}})
	c := fakeWithHelmReleases(t, cached)
	key := client.ObjectKeyFromObject(cached)
	for _, tc := range []struct {
		name      string
		written   int64 // the generation this reconcile's write made; 0: not written
		wantReady bool
	}{
		{name: "not written by this reconcile: the cache decides", wantReady: true},
		{name: "written, the cache has not seen it: not Ready at the new spec", written: 4},
		{name: "written, the cache has seen it", written: 3, wantReady: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &opScope{op: op, written: map[reflect.Type]client.Object{}}
			if tc.written > 0 {
				s.written[reflect.TypeFor[*helmv2.HelmRelease]()] = &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Generation: tc.written}}
			}
			hr, err := observeControlled(context.Background(), c, key, &helmv2.HelmRelease{}, s)
			if err != nil || hr == nil {
				t.Fatalf("observe: %v, %v", hr, err)
			}
			if st := fluxstatus.FromHelmRelease(hr, "1.0.0"); st.Healthy() != tc.wantReady {
				t.Errorf("healthy %v, want %v (%s)", st.Healthy(), tc.wantReady, st.Describe())
			}
		})
	}
}

// readyHelmRelease is a HelmRelease as the cache holds it after Flux installed chart version
// 1.0.0 at its generation: Ready, observed.
func readyHelmRelease(m metav1.ObjectMeta) *helmv2.HelmRelease {
	return &helmv2.HelmRelease{ObjectMeta: m, Status: helmv2.HelmReleaseStatus{
		ObservedGeneration: m.Generation,
		Conditions:         []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: "InstallSucceeded", ObservedGeneration: m.Generation}},
		History:            helmv2.Snapshots{{Name: m.Name, Version: 1, Status: "deployed", ChartVersion: "1.0.0"}},
	}}
}

// fakeWithHelmReleases is a fake client (pure logic: readers of the cache) holding objs.
func fakeWithHelmReleases(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := helmv2.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
}

// TestTagProblems: how a release's TagVerified condition counts in its status. A moved tag
// degrades at once; a tag that cannot be listed is a check not made, counted from the
// condition's transition (which a retry with another error message does not move).
func TestTagProblems(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	tagVerified := func(s metav1.ConditionStatus, reason, msg string) []metav1.Condition {
		return []metav1.Condition{{Type: csv1.TagVerifiedCondition, Status: s, Reason: reason, Message: msg, LastTransitionTime: at}}
	}
	for _, tc := range []struct {
		name             string
		conds            []metav1.Condition
		alert, unchecked *fluxstatus.Problem
	}{
		{name: "not verified yet"},
		{name: "verified", conds: tagVerified(metav1.ConditionTrue, csv1.ReasonAsExpected, "tag v1 points at the validated commit abc")},
		{name: "moved: an alert", conds: tagVerified(metav1.ConditionFalse, csv1.ReasonTagMoved, "tag v1 moved from abc to def"),
			alert: &fluxstatus.Problem{Reason: csv1.ReasonTagMoved, Message: "tag v1 moved from abc to def", Since: at.Time}},
		{name: "cannot be listed: a check not made since the transition", conds: tagVerified(metav1.ConditionUnknown, csv1.ReasonTagListFailed, "cannot check where tag v1 points: connection refused"),
			unchecked: &fluxstatus.Problem{Reason: csv1.ReasonTagListFailed, Message: "cannot check where tag v1 points: connection refused", Since: at.Time}},
		{name: "unknown for another reason: neither", conds: tagVerified(metav1.ConditionUnknown, "Unknown", "not checked yet")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			alert, unchecked := tagProblems(tc.conds)
			if !reflect.DeepEqual(alert, tc.alert) || !reflect.DeepEqual(unchecked, tc.unchecked) {
				t.Errorf("alert %+v, unchecked %+v; want %+v, %+v", alert, unchecked, tc.alert, tc.unchecked)
			}
		})
	}
}

// TestWaitingForStack: a release whose stack is not validated yet names its tag and repository
// (without credentials), and says whether Flux has fetched the tag yet.
func TestWaitingForStack(t *testing.T) {
	rel := &csv1.ClusterStackRelease{ObjectMeta: metav1.ObjectMeta{Name: "aws-base-1-36-v2"},
		Spec: csv1.ClusterStackReleaseSpec{Source: csv1.StackSource{URL: "https://bot:s3cret@git.example.com/stacks.git"}}}
	fetched := &sourcev1.GitRepository{Status: sourcev1.GitRepositoryStatus{Artifact: &meta.Artifact{Revision: "aws-base-1-36-v2@sha1:abc"}}}
	other := &sourcev1.GitRepository{Status: sourcev1.GitRepositoryStatus{Artifact: &meta.Artifact{Revision: "aws-base-1-36-v1@sha1:def"}}}
	ociRel := rel.DeepCopy()
	ociRel.Spec.Source = csv1.StackSource{OCI: &csv1.OCISource{URL: "oci://registry.example.com/stacks/aws-base"}}
	ociFetching := &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Name: "aws-base-1-36-v2"}, Status: sourcev1.OCIRepositoryStatus{Conditions: []metav1.Condition{
		{Type: "Ready", Status: metav1.ConditionUnknown, Reason: "Progressing", Message: "building artifact: pulling the manifest"}}}}
	ociFetched := &sourcev1.OCIRepository{Status: sourcev1.OCIRepositoryStatus{Artifact: &meta.Artifact{Revision: "aws-base-1-36-v2@sha256:abc"}}}
	for _, tc := range []struct {
		name string
		rel  *csv1.ClusterStackRelease
		repo fluxgen.SourceObject
		want string
	}{
		{"no GitRepository", rel, nil, "waiting for the stack at tag aws-base-1-36-v2 of https://git.example.com/stacks.git to be fetched"},
		{"another revision", rel, other, "waiting for the stack at tag aws-base-1-36-v2 of https://git.example.com/stacks.git to be fetched"},
		{"fetched", rel, fetched, "the stack at tag aws-base-1-36-v2 of https://git.example.com/stacks.git is fetched (aws-base-1-36-v2@sha1:abc): waiting for it to be validated"},
		{"still fetching from a registry", ociRel, ociFetching, "waiting for the stack at tag aws-base-1-36-v2 of oci://registry.example.com/stacks/aws-base to be fetched (OCIRepository/aws-base-1-36-v2: building artifact: pulling the manifest)"},
		{"fetched from a registry", ociRel, ociFetched, "the stack at tag aws-base-1-36-v2 of oci://registry.example.com/stacks/aws-base is fetched (aws-base-1-36-v2@sha256:abc): waiting for it to be validated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var st fluxstatus.ObjectState
			if tc.repo != nil {
				st = sourceState(tc.repo)
			}
			if got := waitingForStack(tc.rel, tc.repo, st); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}
