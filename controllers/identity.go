package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxlockdown"
)

// The identity a ClusterStack's Flux objects run as (docs/multi-tenancy.md): the ServiceAccount
// a ClusterStack may name, and whether Flux confines Flux objects that name none.

// DefaultFluxNamespace is where the operator looks for Flux's controllers (--flux-namespace).
const DefaultFluxNamespace = "flux-system"

// lockdownRecheck is how often the ClusterStacks are reconciled again to report a change of
// Flux's lockdown (and, with --flux-lockdown=required, to start delivering once it is in
// place); lockdownTTL how long one reading of Flux's Deployments serves every ClusterStack.
const (
	lockdownRecheck = 5 * time.Minute
	lockdownTTL     = time.Minute
)

// FluxLockdownProbe finds out, at most every lockdownTTL, whether Flux runs with its
// multi-tenancy lockdown (internal/fluxlockdown), by reading kustomize- and helm-controller's
// Deployments in Namespace from the API server (the operator may read Deployments; they are not
// in its cache). A nil probe checks nothing.
type FluxLockdownProbe struct {
	// Mode is fluxlockdown.ModeDetect, ModeRequired or ModeAssumed.
	Mode string
	// Namespace is where Flux's controllers run (DefaultFluxNamespace when empty).
	Namespace string
	// Reader reads the Deployments: the manager's API reader.
	Reader client.Reader
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time

	mu    sync.Mutex
	state fluxlockdown.State
	at    time.Time
}

// State returns what is known of Flux's lockdown.
func (p *FluxLockdownProbe) State(ctx context.Context) fluxlockdown.State {
	if p.Mode == fluxlockdown.ModeAssumed {
		return fluxlockdown.Assumed()
	}
	now := clockFunc(p.Now).Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.at.IsZero() && now.Sub(p.at) < lockdownTTL {
		return p.state
	}
	ns := p.Namespace
	if ns == "" {
		ns = DefaultFluxNamespace
	}
	deps := map[string]*appsv1.Deployment{}
	for _, name := range fluxlockdown.Controllers {
		d := &appsv1.Deployment{}
		err := p.Reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			// Not cached: a passing failure is read again on the next reconcile.
			return fluxlockdown.Unknown(ns, fmt.Sprintf("reading Deployment %s/%s: %v", ns, name, err))
		}
		deps[name] = d
	}
	p.state, p.at = fluxlockdown.Judge(ns, deps), now
	return p.state
}

// recheck is when the ClusterStacks are reconciled again to follow Flux's lockdown (0: never,
// for a nil probe or one that assumes it).
func (p *FluxLockdownProbe) recheck() time.Duration {
	if p == nil || p.Mode == fluxlockdown.ModeAssumed {
		return 0
	}
	return lockdownRecheck
}

// serviceAccountRefusal is the ReleasesResolved condition of a ClusterStack whose
// spec.serviceAccountName may not be used, nil when it may: the operator's default account (or
// none) always may; any other only when it exists (sa is its metadata, nil when it does not) and
// carries csv1.ServiceAccountOptInLabel=true, which the namespace's owner sets. A ClusterStack may
// otherwise name any account of its namespace, a CI account with wide rights among them, and
// have Flux act as it.
func serviceAccountRefusal(cs *csv1.ClusterStack, defaultSA string, sa *metav1.PartialObjectMetadata) *metav1.Condition {
	name := cs.Spec.ServiceAccountName
	if name == "" || name == defaultSA {
		return nil
	}
	var why string
	switch {
	case sa == nil:
		why = fmt.Sprintf("ServiceAccount %s/%s does not exist", cs.Namespace, name)
	case sa.Labels[csv1.ServiceAccountOptInLabel] != "true":
		why = fmt.Sprintf("ServiceAccount %s/%s is not labelled %s=true", cs.Namespace, name, csv1.ServiceAccountOptInLabel)
	default:
		return nil
	}
	def := "no --default-service-account is set"
	if defaultSA != "" {
		def = "only the operator's --default-service-account " + defaultSA + " may be named without it"
	}
	return &metav1.Condition{Type: csv1.ReleasesResolvedCondition, Status: metav1.ConditionFalse, Reason: csv1.ReasonServiceAccountNotAllowed,
		Message: fmt.Sprintf("ClusterStack %s names spec.serviceAccountName %s, and %s: Flux would apply the stack as that account, so its releases are neither created nor changed. "+
			"An account may be named once the namespace's owner labels it (kubectl label serviceaccount -n %s %s %s=true); %s",
			cs.Name, name, why, cs.Namespace, name, csv1.ServiceAccountOptInLabel, def)}
}

// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch

// checkIdentity decides whether the ClusterStack's releases may be created or changed: its
// spec.serviceAccountName must be allowed (serviceAccountRefusal), and with
// --flux-lockdown=required Flux must run locked down. It records the FluxLockdown condition.
func (r *ClusterStackReconciler) checkIdentity(ctx context.Context, s *stackScope) (ctrl.Result, error) {
	cs := s.cs
	if name := cs.Spec.ServiceAccountName; name != "" && name != r.DefaultServiceAccount {
		sa := &metav1.PartialObjectMetadata{}
		sa.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ServiceAccount"))
		if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: cs.Namespace, Name: name}, sa); err != nil {
			if !apierrors.IsNotFound(err) {
				return ctrl.Result{}, fmt.Errorf("read ServiceAccount %s/%s named by ClusterStack %s: %w", cs.Namespace, name, cs.Name, err)
			}
			sa = nil
		}
		if s.refused = serviceAccountRefusal(cs, r.DefaultServiceAccount, sa); s.refused != nil {
			s.requeue = true // a label on the account is not watched: look again after the interval
		}
	}
	if r.Lockdown == nil {
		return ctrl.Result{}, nil
	}
	state := r.Lockdown.State(ctx)
	c := fluxlockdown.Condition(state, cs.Name, serviceAccountOf(cs, r.DefaultServiceAccount))
	s.lockdown = &c
	if s.refused == nil && !fluxlockdown.Delivers(r.Lockdown.Mode, state) {
		refused := fluxlockdown.Refused(state, cs.Name)
		s.refused = &refused
	}
	return ctrl.Result{}, nil
}
