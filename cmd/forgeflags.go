package main

import (
	"flag"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/clusterstack-io/clusterstack-operator/controllers"
	"github.com/clusterstack-io/clusterstack-operator/internal/forge"
)

// forgeFlags are the manager's flags of pull-request proposals (docs/gitops.md): what one
// proposal may cost, and where the proposal token may be sent.
type forgeFlags struct {
	limits            forge.Limits
	policy            forge.Policy
	checkoutSize      string
	apiHosts          string
	hostConcurrency   int
	allowLoopbackHTTP bool
}

func bindForgeFlags(fs *flag.FlagSet) *forgeFlags {
	f := &forgeFlags{}
	fs.DurationVar(&f.limits.APITimeout, "forge-api-timeout", forge.DefaultAPITimeout,
		"How long one forge API call of a proposal may take (a listing of pull requests with all its pages is one call), the reading of the answer included.")
	fs.DurationVar(&f.limits.GitTimeout, "git-operation-timeout", forge.DefaultGitTimeout,
		"How long one Git operation on a fleet repository may take: listing its branches, the shallow clone, the fetch of the proposal branch, the push.")
	fs.StringVar(&f.checkoutSize, "fleet-checkout-size-limit", resource.NewQuantity(forge.DefaultMaxBytes, resource.BinarySI).String(),
		"The most one checkout of a fleet repository may fetch, and the most its files may hold on disk (a quantity, e.g. 64Mi). The manager's /tmp holds at most --concurrent checkouts at once.")
	fs.StringVar(&f.apiHosts, "forge-api-hosts", "",
		"Comma-separated hosts (host or host:port) that a ClusterStack's spec.updates.proposals.apiURL may name besides its fleet repository's own host, e.g. api.github.example.com. Empty: apiURL may only name the fleet repository's host, where the token is sent.")
	fs.IntVar(&f.hostConcurrency, "forge-host-concurrency", controllers.DefaultForgeHostConcurrency,
		"How many ClusterStacks may talk to one forge host (scheme, host and port of the fleet repository) at once; the others take their turn within seconds. A slow or hostile forge holds at most this many workers of the updates controller.")
	fs.BoolVar(&f.allowLoopbackHTTP, "forge-allow-loopback-http", false,
		"Let proposal tokens go over plain http to loopback addresses (127.0.0.0/8, ::1, localhost), for local planes and tests. Otherwise a token is sent over https only.")
	return f
}

// validate checks the flags and completes limits and policy from them.
func (f *forgeFlags) validate() error {
	q, err := resource.ParseQuantity(f.checkoutSize)
	if err != nil || q.Value() <= 0 {
		return fmt.Errorf("--fleet-checkout-size-limit %q is not a positive quantity such as 64Mi", f.checkoutSize)
	}
	if f.limits.APITimeout <= 0 || f.limits.GitTimeout <= 0 {
		return fmt.Errorf("--forge-api-timeout and --git-operation-timeout must be positive")
	}
	if f.hostConcurrency < 1 {
		return fmt.Errorf("--forge-host-concurrency must be at least 1")
	}
	f.limits.MaxBytes = q.Value()
	f.policy = forge.Policy{AllowLoopbackHTTP: f.allowLoopbackHTTP}
	for _, h := range strings.Split(f.apiHosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			if strings.ContainsAny(h, "/@ ") {
				return fmt.Errorf("--forge-api-hosts: %q is not a host or host:port", h)
			}
			f.policy.APIHosts = append(f.policy.APIHosts, h)
		}
	}
	return nil
}
