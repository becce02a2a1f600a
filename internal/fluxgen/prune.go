package fluxgen

import (
	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// PruneAction is what becomes of one of a Cluster's existing Flux objects when its release is
// applied (PruneDecision).
type PruneAction string

// The PruneActions.
const (
	// PruneKeep: the release wants the object, or it serves until its component's turn comes
	// (a component whose kind the release changed, which the apply of that component removes).
	PruneKeep PruneAction = "Keep"
	// PruneForStage: a delete step of the release's BeforeClusterUpgrade stage removes the
	// component during an upgrade, in its own way.
	PruneForStage PruneAction = "RemoveForStage"
	// PruneSuspendThenDelete: the release still has the component, of the same kind, under
	// another object name (the naming scheme changed): the new object takes over what the old
	// one installed, so the old one is suspended before it is deleted and Flux neither uninstalls
	// nor prunes it.
	PruneSuspendThenDelete PruneAction = "SuspendThenDelete"
	// PruneDelete: no component of the release wants the object: Flux uninstalls or prunes what
	// it installed.
	PruneDelete PruneAction = "Delete"
)

// ExistingObject is one of a Cluster's Flux objects as the prune decision reads it.
type ExistingObject struct {
	// Kind is HelmRelease or Kustomization; Name the object's name; Component the value of its
	// csv1.ComponentLabel.
	Kind, Name, Component string
}

// PruneInput is what the prune decision reads: the objects the release wants (by
// "<Kind>/<name>"), the release's components, the components a stage removes during the
// upgrade, and the Cluster.
type PruneInput struct {
	Cluster    string
	Want       map[string]bool
	Components []csv1.ReleaseComponent
	Removing   []string
}

// FluxKind is the kind of the Flux object that delivers a component of kind k.
func FluxKind(k csv1.ComponentKind) string {
	if k == csv1.ComponentKindKustomize {
		return kustomizev1.KustomizationKind
	}
	return helmv2.HelmReleaseKind
}

// PruneDecision decides what becomes of each existing object, in the order given.
func PruneDecision(in PruneInput, existing []ExistingObject) []PruneAction {
	removing := map[string]bool{}
	for _, c := range in.Removing {
		removing[c] = true
	}
	renamed := map[string]bool{}
	// The Flux kind the release delivers each of today's object names as: an object of the
	// other kind under such a name is a component whose kind the release changed.
	kindOfName := map[string]string{}
	for _, c := range in.Components {
		kind := FluxKind(c.Kind)
		renamed[kind+"/"+LabelValue(c.Name)] = true
		kindOfName[AddonObjectName(in.Cluster, c.Name)] = kind
	}
	out := make([]PruneAction, 0, len(existing))
	for _, o := range existing {
		switch k, named := kindOfName[o.Name]; {
		case in.Want[o.Kind+"/"+o.Name]:
			out = append(out, PruneKeep)
		case removing[o.Component]:
			out = append(out, PruneForStage)
		case named && k != o.Kind:
			out = append(out, PruneKeep)
		case renamed[o.Kind+"/"+o.Component]:
			out = append(out, PruneSuspendThenDelete)
		default:
			out = append(out, PruneDelete)
		}
	}
	return out
}

// KindChange decides, for one object the release wants (kind and name of the Flux object
// delivering component), whether it waits for an existing object to go first: the object of
// the other Flux kind under the same name that delivers the same component (the release changed
// the component's kind; both kinds name their object alike). That object is removed, and Flux
// uninstalls or prunes what it installed, before the new one is applied: created side by side,
// an uninstall ending after the new object's apply would remove what the new one had just
// reported Ready. It returns the object to remove, or nil when the desired object may be applied.
// An object of the other kind under that name for another component is not this component's
// (the apply of the desired object reports the conflict, or the prune removes it).
func KindChange(kind, name, component string, existing []ExistingObject) *ExistingObject {
	for i, o := range existing {
		if o.Name == name && o.Kind != kind && o.Component == LabelValue(component) {
			return &existing[i]
		}
	}
	return nil
}
