// Package fluxlockdown decides whether Flux runs with its multi-tenancy lockdown
// (--no-cross-namespace-refs=true and --default-service-account=<name> on kustomize-controller
// and helm-controller), from the controllers' Deployments as the operator reads them, and what
// that means for a ClusterStack: the condition the operator reports on every ClusterStack and
// whether it may deliver. It has no client: the caller reads the Deployments.
//
// Without the lockdown, a HelmRelease or Kustomization that names no spec.serviceAccountName is
// applied with Flux's own identity (cluster-admin in most installations), and Flux objects may
// refer to sources and Secrets of other namespaces: every tenant's safety then rests on every
// Flux object naming a ServiceAccount.
package fluxlockdown

import (
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// Modes of the operator's --flux-lockdown.
const (
	// ModeDetect reads the Flux controllers' Deployments and reports what it finds on every
	// ClusterStack; stacks are delivered either way.
	ModeDetect = "detect"
	// ModeRequired reports as ModeDetect and delivers (creates releases) only while the
	// lockdown is found in place.
	ModeRequired = "required"
	// ModeAssumed reads nothing: the platform states that Flux runs locked down (Flux outside
	// the cluster, or Deployments the operator may not read).
	ModeAssumed = "assumed"
)

// Controllers are the Flux controllers that apply with an identity, by Deployment name.
var Controllers = []string{"kustomize-controller", "helm-controller"}

// ParseMode checks a --flux-lockdown value.
func ParseMode(s string) (string, error) {
	switch s {
	case ModeDetect, ModeRequired, ModeAssumed:
		return s, nil
	}
	return "", fmt.Errorf("%q is not one of %s, %s, %s", s, ModeDetect, ModeRequired, ModeAssumed)
}

// State is what the operator knows of Flux's lockdown.
type State struct {
	// Status is True (in place, or assumed), False (a controller runs without it) or Unknown.
	Status metav1.ConditionStatus
	// Reason is csv1.ReasonFluxLockedDown, ReasonFluxLockdownAssumed, ReasonFluxNotLockedDown or
	// ReasonFluxLockdownUnknown.
	Reason string
	// Detail says what was found, for people.
	Detail string
}

// Assumed is the State of ModeAssumed.
func Assumed() State {
	return State{Status: metav1.ConditionTrue, Reason: csv1.ReasonFluxLockdownAssumed,
		Detail: "the operator runs with --flux-lockdown=" + ModeAssumed + ": the platform states that Flux's kustomize- and helm-controller run with --no-cross-namespace-refs=true and --default-service-account"}
}

// Unknown is the State when the Deployments cannot be read; why says what went wrong.
func Unknown(namespace, why string) State {
	return State{Status: metav1.ConditionUnknown, Reason: csv1.ReasonFluxLockdownUnknown,
		Detail: fmt.Sprintf("cannot tell whether Flux runs with its multi-tenancy lockdown: %s; if Flux runs elsewhere (outside the cluster, or in another namespace than %s), set --flux-namespace, or --flux-lockdown=%s once it runs with --no-cross-namespace-refs=true and --default-service-account", why, namespace, ModeAssumed)}
}

// Judge decides the State from the Flux controllers' Deployments in namespace, by name (a
// missing one is absent from deps).
func Judge(namespace string, deps map[string]*appsv1.Deployment) State {
	var missing, unlocked []string
	sa := map[string]bool{}
	for _, name := range Controllers {
		d := deps[name]
		if d == nil {
			missing = append(missing, name)
			continue
		}
		noCross, def := flags(d)
		var lacks []string
		if !noCross {
			lacks = append(lacks, "--no-cross-namespace-refs=true")
		}
		if def == "" {
			lacks = append(lacks, "--default-service-account")
		} else {
			sa[def] = true
		}
		if len(lacks) > 0 {
			unlocked = append(unlocked, fmt.Sprintf("%s runs without %s", name, strings.Join(lacks, " and ")))
		}
	}
	switch {
	case len(unlocked) > 0:
		return State{Status: metav1.ConditionFalse, Reason: csv1.ReasonFluxNotLockedDown,
			Detail: fmt.Sprintf("Flux runs without its multi-tenancy lockdown in namespace %s (%s): a Flux object that names no ServiceAccount is applied with Flux's own identity, and may refer to other namespaces' sources and Secrets",
				namespace, strings.Join(unlocked, "; "))}
	case len(missing) > 0:
		return Unknown(namespace, fmt.Sprintf("no Deployment %s in namespace %s", strings.Join(missing, ", "), namespace))
	}
	names := make([]string, 0, len(sa))
	for n := range sa {
		names = append(names, n)
	}
	sort.Strings(names)
	return State{Status: metav1.ConditionTrue, Reason: csv1.ReasonFluxLockedDown,
		Detail: fmt.Sprintf("Flux's kustomize- and helm-controller in namespace %s run with --no-cross-namespace-refs=true and --default-service-account=%s", namespace, strings.Join(names, ","))}
}

// flags reads the lockdown flags of a controller's Deployment: whether a container runs with
// --no-cross-namespace-refs (true), and the --default-service-account it names. The manager
// container counts; without one named "manager", the first.
func flags(d *appsv1.Deployment) (noCross bool, defaultSA string) {
	cs := d.Spec.Template.Spec.Containers
	if len(cs) == 0 {
		return false, ""
	}
	c := cs[0]
	for _, x := range cs {
		if x.Name == "manager" {
			c = x
		}
	}
	args := append(append([]string(nil), c.Command...), c.Args...)
	for i := 0; i < len(args); i++ {
		a := strings.TrimPrefix(args[i], "-")
		a = strings.TrimPrefix(a, "-")
		name, value, hasValue := strings.Cut(a, "=")
		switch name {
		case "no-cross-namespace-refs":
			noCross = !hasValue || value == "true"
		case "default-service-account":
			if !hasValue && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				value, i = args[i+1], i+1
			}
			defaultSA = value
		}
	}
	return noCross, defaultSA
}

// Delivers reports whether a ClusterStack's releases may be created in mode with state: always,
// but with ModeRequired only while the lockdown is in place (or assumed).
func Delivers(mode string, s State) bool {
	return mode != ModeRequired || s.Status == metav1.ConditionTrue
}

// Condition is the FluxLockdown condition of a ClusterStack whose Flux objects run as
// ServiceAccount sa ("" when it names none and the operator has no default): what is known of
// the lockdown, and what it means for this stack.
func Condition(s State, stack, sa string) metav1.Condition {
	msg := s.Detail
	switch {
	case sa != "":
		msg += fmt.Sprintf("; the Flux objects of ClusterStack %s name ServiceAccount %s", stack, sa)
	case s.Status == metav1.ConditionTrue:
		msg += fmt.Sprintf("; the Flux objects of ClusterStack %s name no ServiceAccount and run as Flux's --default-service-account", stack)
	default:
		msg += fmt.Sprintf("; the Flux objects of ClusterStack %s name no ServiceAccount (no spec.serviceAccountName, no --default-service-account on the operator): without the lockdown Flux applies them with its own identity", stack)
	}
	return metav1.Condition{Type: csv1.FluxLockdownCondition, Status: s.Status, Reason: s.Reason, Message: msg}
}

// Refused is the ReleasesResolved condition of a ClusterStack not delivered in ModeRequired.
func Refused(s State, stack string) metav1.Condition {
	return metav1.Condition{Type: csv1.ReleasesResolvedCondition, Status: metav1.ConditionFalse, Reason: csv1.ReasonFluxLockdownRequired,
		Message: fmt.Sprintf("ClusterStack %s is not delivered: the operator runs with --flux-lockdown=%s and %s; no release is created or changed until Flux runs with --no-cross-namespace-refs=true and --default-service-account",
			stack, ModeRequired, lowerFirst(s.Detail))}
}

func lowerFirst(s string) string {
	if s == "" || strings.HasPrefix(s, "Flux") {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}
