package fluxgen

import (
	"slices"
	"testing"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

func TestPruneDecision(t *testing.T) {
	const cluster = "c1"
	helm := func(name string) csv1.ReleaseComponent {
		return csv1.ReleaseComponent{Name: name, Kind: csv1.ComponentKindHelm}
	}
	kust := func(name string) csv1.ReleaseComponent {
		return csv1.ReleaseComponent{Name: name, Kind: csv1.ComponentKindKustomize}
	}
	hr := func(name, component string) ExistingObject {
		return ExistingObject{Kind: "HelmRelease", Name: name, Component: component}
	}
	ks := func(name, component string) ExistingObject {
		return ExistingObject{Kind: "Kustomization", Name: name, Component: component}
	}
	want := func(keys ...string) map[string]bool {
		m := map[string]bool{}
		for _, k := range keys {
			m[k] = true
		}
		return m
	}
	cni := AddonObjectName(cluster, "cni")
	for _, tc := range []struct {
		name     string
		in       PruneInput
		existing []ExistingObject
		want     []PruneAction
	}{{
		name:     "an object the release wants is kept",
		in:       PruneInput{Cluster: cluster, Want: want("HelmRelease/" + cni), Components: []csv1.ReleaseComponent{helm("cni")}},
		existing: []ExistingObject{hr(cni, "cni")},
		want:     []PruneAction{PruneKeep},
	}, {
		name:     "a component the release dropped is deleted: Flux uninstalls it",
		in:       PruneInput{Cluster: cluster, Want: want("HelmRelease/" + cni), Components: []csv1.ReleaseComponent{helm("cni")}},
		existing: []ExistingObject{hr(cni, "cni"), hr("c1-csi", "csi")},
		want:     []PruneAction{PruneKeep, PruneDelete},
	}, {
		name:     "a component a stage removes during the upgrade goes the stage's way, even if wanted later",
		in:       PruneInput{Cluster: cluster, Want: want(), Components: []csv1.ReleaseComponent{helm("cni")}, Removing: []string{"csi"}},
		existing: []ExistingObject{hr("c1-csi", "csi")},
		want:     []PruneAction{PruneForStage},
	}, {
		name: "a component whose kind changed serves under its name until its turn comes",
		in:   PruneInput{Cluster: cluster, Want: want(), Components: []csv1.ReleaseComponent{kust("cni")}},
		// The Kustomization is not applied yet (it waits for an earlier component).
		existing: []ExistingObject{hr(cni, "cni")},
		want:     []PruneAction{PruneKeep},
	}, {
		name:     "a component of the same kind under an old object name is suspended, then deleted: nothing is uninstalled",
		in:       PruneInput{Cluster: cluster, Want: want("HelmRelease/" + cni), Components: []csv1.ReleaseComponent{helm("cni")}},
		existing: []ExistingObject{hr("c1-cni-old-naming", LabelValue("cni")), hr(cni, "cni")},
		want:     []PruneAction{PruneSuspendThenDelete, PruneKeep},
	}, {
		name:     "an old name of another kind than the release delivers is deleted, not taken over",
		in:       PruneInput{Cluster: cluster, Want: want("Kustomization/" + cni), Components: []csv1.ReleaseComponent{kust("cni")}},
		existing: []ExistingObject{hr("c1-cni-old-naming", "cni"), ks(cni, "cni")},
		want:     []PruneAction{PruneDelete, PruneKeep},
	}, {
		name:     "nothing wanted, nothing existing",
		in:       PruneInput{Cluster: cluster},
		existing: nil,
		want:     []PruneAction{},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := PruneDecision(tc.in, tc.existing)
			if !slices.Equal(got, tc.want) {
				t.Errorf("PruneDecision = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestKindChange: a desired object waits for the other kind's object of its name and component;
// objects of its own kind, of other names or of other components do not hold it.
func TestKindChange(t *testing.T) {
	long := "component-with-a-name-much-longer-than-a-label-value-may-be-at-all-xx"
	existing := []ExistingObject{
		{Kind: "HelmRelease", Name: "c1-cni", Component: "cni"},
		{Kind: "Kustomization", Name: "c1-info", Component: "info"},
		{Kind: "HelmRelease", Name: "c1-other", Component: "someone-else"},
		{Kind: "Kustomization", Name: "c1-long", Component: LabelValue(long)},
	}
	for _, tc := range []struct {
		name                  string
		kind, obj, component  string
		wantKind, wantObjName string
	}{
		{name: "Helm became kustomize: the HelmRelease goes first", kind: "Kustomization", obj: "c1-cni", component: "cni", wantKind: "HelmRelease", wantObjName: "c1-cni"},
		{name: "kustomize became Helm: the Kustomization goes first", kind: "HelmRelease", obj: "c1-info", component: "info", wantKind: "Kustomization", wantObjName: "c1-info"},
		{name: "same kind: applied over", kind: "HelmRelease", obj: "c1-cni", component: "cni"},
		{name: "another component's object of that name: not this one's to remove", kind: "Kustomization", obj: "c1-other", component: "other"},
		{name: "no object of that name", kind: "HelmRelease", obj: "c1-csi", component: "csi"},
		{name: "a component name longer than a label value", kind: "HelmRelease", obj: "c1-long", component: long, wantKind: "Kustomization", wantObjName: "c1-long"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := KindChange(tc.kind, tc.obj, tc.component, existing)
			switch {
			case tc.wantKind == "" && got != nil:
				t.Errorf("waits for %+v, want none", *got)
			case tc.wantKind != "" && (got == nil || got.Kind != tc.wantKind || got.Name != tc.wantObjName):
				t.Errorf("waits for %v, want %s/%s", got, tc.wantKind, tc.wantObjName)
			}
		})
	}
}
