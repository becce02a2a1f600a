package v1alpha1

// The identity a ClusterStack's Flux objects run as, and whether Flux confines it
// (docs/multi-tenancy.md).

// FluxLockdownCondition on a ClusterStack says whether Flux's kustomize- and helm-controller run
// with their multi-tenancy lockdown (--no-cross-namespace-refs=true and
// --default-service-account), as the operator found it (--flux-lockdown), and which
// ServiceAccount the stack's Flux objects name. True: in place (or stated by the platform);
// False: a controller runs without it; Unknown: the operator cannot tell.
// +docs:kinds=ClusterStack
const FluxLockdownCondition = "FluxLockdown"

// ServiceAccountOptInLabel, with the value "true", on a ServiceAccount lets the ClusterStacks of
// its namespace name it in spec.serviceAccountName. Only the operator's
// --default-service-account may be named without it: a ClusterStack that names any other account
// (a CI account with wide rights, say) is refused until the namespace's owner labels the account.
const ServiceAccountOptInLabel = "clusterstack.io/flux-identity"

// Reasons of the FluxLockdown condition and of the identity checks.
const (
	// ReasonFluxLockedDown: Flux's kustomize- and helm-controller Deployments run with
	// --no-cross-namespace-refs=true and --default-service-account. What to do: nothing.
	// +docs:on=ClusterStack/FluxLockdown
	ReasonFluxLockedDown = "FluxLockedDown"
	// ReasonFluxLockdownAssumed: the operator runs with --flux-lockdown=assumed: the platform
	// states that Flux runs locked down, and the operator does not check. What to do: nothing, if
	// that is so.
	// +docs:on=ClusterStack/FluxLockdown
	ReasonFluxLockdownAssumed = "FluxLockdownAssumed"
	// ReasonFluxNotLockedDown: a Flux controller's Deployment runs without
	// --no-cross-namespace-refs=true or --default-service-account: Flux objects that name no
	// ServiceAccount are applied with Flux's own identity, and may refer to other namespaces. What
	// to do: run kustomize- and helm-controller with both flags (docs/multi-tenancy.md); to refuse
	// delivery meanwhile, run the operator with --flux-lockdown=required.
	// +docs:on=ClusterStack/FluxLockdown
	ReasonFluxNotLockedDown = "FluxNotLockedDown"
	// ReasonFluxLockdownUnknown: the operator cannot read Flux's Deployments (not found in
	// --flux-namespace, or not permitted). What to do: set --flux-namespace to where Flux runs, or,
	// when Flux runs outside the cluster with the lockdown, --flux-lockdown=assumed.
	// +docs:on=ClusterStack/FluxLockdown
	ReasonFluxLockdownUnknown = "FluxLockdownUnknown"
	// ReasonFluxLockdownRequired: the operator runs with --flux-lockdown=required and Flux's
	// lockdown is not found in place: the ClusterStack's releases are neither created nor changed.
	// What to do: run Flux's kustomize- and helm-controller with --no-cross-namespace-refs=true and
	// --default-service-account (the FluxLockdown condition says what is missing); delivery starts
	// by itself within five minutes.
	// +docs:on=ClusterStack/ReleasesResolved,ClusterStack/Degraded
	ReasonFluxLockdownRequired = "FluxLockdownRequired"
	// ReasonServiceAccountNotAllowed: the ClusterStack's spec.serviceAccountName names a
	// ServiceAccount that does not exist or is neither the operator's --default-service-account
	// nor labelled clusterstack.io/flux-identity=true: its releases are neither created nor
	// changed. What to do: name an allowed account, or have the namespace's owner label the
	// account (kubectl label serviceaccount -n <namespace> <name> clusterstack.io/flux-identity=true).
	// +docs:on=ClusterStack/ReleasesResolved,ClusterStack/Degraded
	ReasonServiceAccountNotAllowed = "ServiceAccountNotAllowed"
)
