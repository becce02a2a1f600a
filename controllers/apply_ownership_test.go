package controllers

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func ownerRef(apiVersion, kind, name, uid string, controller bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid), Controller: &controller}
}

// TestCheckOwnership table-tests the ownership decision: existing object metadata and the
// desired controller in, conflict (with its message) or nil out.
func TestCheckOwnership(t *testing.T) {
	const addons = "clusterstack.io/v1alpha1"
	addonA := ownerRef(addons, "ClusterAddon", "a", "uid-a", true)
	managed := map[string]string{"app.kubernetes.io/managed-by": "clusterstack-operator"}
	tests := []struct {
		name     string
		existing metav1.ObjectMeta
		want     *metav1.OwnerReference
		wantErr  string // "" for no conflict
	}{
		{
			name:     "controlled by the desired owner",
			existing: metav1.ObjectMeta{Namespace: "demo", Name: "a-cni", Labels: managed, OwnerReferences: []metav1.OwnerReference{addonA}},
			want:     &addonA,
		},
		{
			name:     "controlled by the desired owner under another API version: ours",
			existing: metav1.ObjectMeta{Namespace: "demo", Name: "a-cni", Labels: managed, OwnerReferences: []metav1.OwnerReference{ownerRef("clusterstack.io/v1beta1", "ClusterAddon", "a", "uid-a", true)}},
			want:     &addonA,
		},
		{
			name:     "controlled by the desired owner, managed-by label removed: ours (the apply restores it)",
			existing: metav1.ObjectMeta{Namespace: "demo", Name: "a-cni", OwnerReferences: []metav1.OwnerReference{addonA}},
			want:     &addonA,
		},
		{
			name:     "controlled by another ClusterAddon",
			existing: metav1.ObjectMeta{Namespace: "demo", Name: "a-b-c", Labels: managed, OwnerReferences: []metav1.OwnerReference{ownerRef(addons, "ClusterAddon", "a-b", "uid-ab", true)}},
			want:     &addonA,
			wantErr:  "HelmRelease demo/a-b-c exists and is controlled by ClusterAddon demo/a-b, not by ClusterAddon demo/a: refusing to take it over",
		},
		{
			name:     "controlled by a former owner of the same name (another UID)",
			existing: metav1.ObjectMeta{Namespace: "demo", Name: "a-cni", Labels: managed, OwnerReferences: []metav1.OwnerReference{ownerRef(addons, "ClusterAddon", "a", "uid-old", true)}},
			want:     &addonA,
			wantErr:  "HelmRelease demo/a-cni exists and is controlled by ClusterAddon demo/a (uid uid-old), not by ClusterAddon demo/a (uid uid-a): refusing to take it over",
		},
		{
			name:     "same UID but another kind",
			existing: metav1.ObjectMeta{Namespace: "demo", Name: "a-cni", Labels: managed, OwnerReferences: []metav1.OwnerReference{ownerRef(addons, "ClusterStackRelease", "a", "uid-a", true)}},
			want:     &addonA,
			wantErr:  "HelmRelease demo/a-cni exists and is controlled by ClusterStackRelease demo/a, not by ClusterAddon demo/a: refusing to take it over",
		},
		{
			name:     "same kind and name in another API group",
			existing: metav1.ObjectMeta{Namespace: "demo", Name: "a-cni", Labels: managed, OwnerReferences: []metav1.OwnerReference{ownerRef("example.com/v1", "ClusterAddon", "a", "uid-a", true)}},
			want:     &addonA,
			wantErr:  "HelmRelease demo/a-cni exists and is controlled by ClusterAddon.example.com demo/a, not by ClusterAddon demo/a: refusing to take it over",
		},
		{
			name:     "controlled by someone, applied without owner",
			existing: metav1.ObjectMeta{Namespace: "demo", Name: "x", Labels: managed, OwnerReferences: []metav1.OwnerReference{ownerRef("apps/v1", "Deployment", "d", "uid-d", true)}},
			want:     nil,
			wantErr:  "HelmRelease demo/x exists and is controlled by Deployment demo/d, not by clusterstack-operator: refusing to take it over",
		},
		{
			name:     "no controller, not managed: a user's object",
			existing: metav1.ObjectMeta{Namespace: "demo", Name: "a-cni", Labels: map[string]string{"app": "mine"}},
			want:     &addonA,
			wantErr:  "HelmRelease demo/a-cni exists and is not managed by clusterstack-operator (no controller, no app.kubernetes.io/managed-by=clusterstack-operator label): refusing to take it over for ClusterAddon demo/a",
		},
		{
			name:     "no controller, only a non-controller owner, not managed",
			existing: metav1.ObjectMeta{Namespace: "demo", Name: "a-cni", OwnerReferences: []metav1.OwnerReference{ownerRef("v1", "ConfigMap", "c", "uid-c", false)}},
			want:     &addonA,
			wantErr:  "HelmRelease demo/a-cni exists and is not managed by clusterstack-operator (no controller, no app.kubernetes.io/managed-by=clusterstack-operator label): refusing to take it over for ClusterAddon demo/a",
		},
		{
			name:     "managed-by another tool",
			existing: metav1.ObjectMeta{Namespace: "demo", Name: "a-cni", Labels: map[string]string{"app.kubernetes.io/managed-by": "Helm"}},
			want:     nil,
			wantErr:  "HelmRelease demo/a-cni exists and is not managed by clusterstack-operator (no controller, no app.kubernetes.io/managed-by=clusterstack-operator label): refusing to take it over",
		},
		{
			name:     "no controller, managed-by label: orphan of the operator, adopted",
			existing: metav1.ObjectMeta{Namespace: "demo", Name: "a-cni", Labels: managed},
			want:     &addonA,
		},
		{
			name:     "no controller, applied-hash annotation: applied by the operator without owner",
			existing: metav1.ObjectMeta{Namespace: "demo", Name: "a-cni", Annotations: map[string]string{appliedHashAnnotation: "abc"}},
			want:     nil,
		},
		{
			name:     "cluster-scoped object",
			existing: metav1.ObjectMeta{Name: "x", OwnerReferences: []metav1.OwnerReference{ownerRef(addons, "ClusterAddon", "b", "uid-b", true)}},
			want:     &addonA,
			wantErr:  "HelmRelease x exists and is controlled by ClusterAddon b, not by ClusterAddon a: refusing to take it over",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkOwnership("HelmRelease", &tt.existing, tt.want)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("checkOwnership() = %v, want nil", err)
				}
				return
			}
			var conflict *OwnershipConflictError
			if !errors.As(err, &conflict) {
				t.Fatalf("checkOwnership() = %v (%T), want an *OwnershipConflictError", err, err)
			}
			if conflict.Kind != "HelmRelease" || conflict.Namespace != tt.existing.Namespace || conflict.Name != tt.existing.Name {
				t.Errorf("conflict names %s %s/%s, want HelmRelease %s/%s", conflict.Kind, conflict.Namespace, conflict.Name, tt.existing.Namespace, tt.existing.Name)
			}
			if got := err.Error(); got != tt.wantErr {
				t.Errorf("message:\n got %s\nwant %s", got, tt.wantErr)
			}
		})
	}
}

// TestApplierRefusesForeignObjects: Apply writes nothing over an object of someone else and
// returns an *OwnershipConflictError; its own objects it keeps applying.
func TestApplierRefusesForeignObjects(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	// Owners: ConfigMaps stand in for the ClusterAddons (any namespaced kind of the scheme does).
	owner := func(name, uid string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "demo", UID: types.UID(uid)}}
	}
	ownerA, ownerAB := owner("a", "uid-a"), owner("a-b", "uid-ab")
	userObject := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "user-values", Namespace: "demo", Labels: map[string]string{"app": "mine"}}, Data: map[string]string{"k": "user"}}
	writes := 0
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(userObject).WithInterceptorFuncs(countApplies(&writes)).Build()
	a := &Applier{Client: c, Scheme: scheme}
	ctx := context.Background()
	desired := func(name, v string) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "demo", Labels: map[string]string{"app.kubernetes.io/managed-by": "clusterstack-operator"}},
			Data:       map[string]string{"k": v},
		}
	}

	steps := []struct {
		name      string
		owner     client.Object
		obj       *corev1.ConfigMap
		wantWrite bool
		wantErr   string
	}{
		{name: "a user's object is not taken over", owner: ownerA, obj: desired("user-values", "ours"),
			wantErr: "ConfigMap demo/user-values exists and is not managed by clusterstack-operator (no controller, no app.kubernetes.io/managed-by=clusterstack-operator label): refusing to take it over for ConfigMap demo/a"},
		{name: "a new object is created for a-b", owner: ownerAB, obj: desired("a-b-c", "ab"), wantWrite: true},
		{name: "a-b's object is not taken over for a", owner: ownerA, obj: desired("a-b-c", "a"),
			wantErr: "ConfigMap demo/a-b-c exists and is controlled by ConfigMap demo/a-b, not by ConfigMap demo/a: refusing to take it over"},
		{name: "a-b keeps applying its own object", owner: ownerAB, obj: desired("a-b-c", "ab2"), wantWrite: true},
	}
	for _, st := range steps {
		before := writes
		wrote, err := a.Apply(ctx, st.owner, st.obj)
		if st.wantErr == "" {
			if err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
		} else {
			var conflict *OwnershipConflictError
			if !errors.As(err, &conflict) || err.Error() != st.wantErr {
				t.Fatalf("%s: err = %v, want *OwnershipConflictError %q", st.name, err, st.wantErr)
			}
		}
		if wrote != st.wantWrite || (writes > before) != st.wantWrite {
			t.Errorf("%s: wrote=%v (API writes %d), want %v", st.name, wrote, writes-before, st.wantWrite)
		}
	}
	got := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "demo", Name: "user-values"}, got); err != nil {
		t.Fatal(err)
	}
	if got.Data["k"] != "user" || len(got.OwnerReferences) != 0 {
		t.Errorf("user's object changed: %+v", got)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "demo", Name: "a-b-c"}, got); err != nil {
		t.Fatal(err)
	}
	if got.Data["k"] != "ab2" || !metav1.IsControlledBy(got, ownerAB) {
		t.Errorf("a-b's object = %+v, want data ab2 controlled by a-b", got)
	}
}
