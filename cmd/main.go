// Command manager runs the ClusterStack operator: a controller-runtime manager with the
// ClusterStack, ClusterStackRelease, ClusterAddon and status controllers, and (with
// --enable-webhooks) the validating webhook on CAPI Clusters and the Cluster API Runtime
// Extension (addon stages; --runtime-extension).
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/resource"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/controllers"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxlockdown"
	"github.com/clusterstack-io/clusterstack-operator/internal/hooks"
	"github.com/clusterstack-io/clusterstack-operator/internal/restmapping"
	"github.com/clusterstack-io/clusterstack-operator/internal/scheme"
	"github.com/clusterstack-io/clusterstack-operator/internal/upgradediff"
	"github.com/clusterstack-io/clusterstack-operator/internal/webhooks"
)

// The defaults of --concurrent, --kube-api-qps and --kube-api-burst, measured with make bench
// (docs/performance.md): enough workers to keep the API server busy while a fleet fans out, and no
// client-side rate limit (controller-runtime's default too): the API server's Priority and
// Fairness decides, and a limit of a few hundred requests a second was the bottleneck.
const (
	defaultConcurrent   = 10
	defaultKubeAPIQPS   = -1
	defaultKubeAPIBurst = 0
	// defaultMemoryLimitRatio is the share of the container's memory limit the Go runtime's
	// soft limit (GOMEMLIMIT) gets. The rest is for what the container's memory counts besides the
	// runtime's: about 40 MiB of the binary's mapped pages, for one.
	defaultMemoryLimitRatio = 0.85
)

func main() {
	// The manager binary is also the isolated worker that renders a proposal's diff
	// (upgradediff.Isolated): the operator runs it as a child process with bounded memory and time.
	if len(os.Args) > 1 && os.Args[1] == upgradediff.WorkerArg {
		if err := upgradediff.ServeWorker(os.Stdin, os.Stdout); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	var (
		metricsAddr, probeAddr, artifactHost              string
		profilerAddr                                      string
		webhookHost, webhookCertDir, defaultSA            string
		runtimeExtClientCA                                string
		fluxLockdown, fluxNamespace                       string
		allowedFluxShards                                 string
		maxRenders, maxRendersPerNamespace                int
		managementNamespace                               string
		watchLabelSelector, leaderElectionID              string
		manageStacks                                      bool
		concurrent, kubeAPIBurst                          int
		kubeAPIQPS, memoryLimitRatio                      float64
		webhookPort                                       int
		leaderElect, enableWebhooks, runtimeExt           bool
		grace, queueGrace, addonTimeout, progressInterval time.Duration
		pushRetry, hookRetry                              time.Duration
		leaseDuration, renewDeadline, retryPeriod         time.Duration
		tagCacheBytes                                     int64
		tagListings                                       int
		diffTimeout                                       time.Duration
		diffMemory                                        string
	)
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "The address the metrics endpoint binds to; \"0\" disables it.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "The address the health and readiness probes bind to.")
	flag.BoolVar(&leaderElect, "leader-elect", false, "Enable leader election, so that only one replica reconciles at a time.")
	flag.DurationVar(&leaseDuration, "leader-elect-lease-duration", 15*time.Second,
		"How long a replica waits, after the leader last renewed the lease, before it takes the lease over (a crashed leader is replaced within this time).")
	flag.DurationVar(&renewDeadline, "leader-elect-renew-deadline", 10*time.Second,
		"How long the leader keeps trying to renew the lease before it gives up leadership (and exits); shorter than the lease duration.")
	flag.DurationVar(&retryPeriod, "leader-elect-retry-period", 2*time.Second, "How often replicas try to acquire or renew the lease.")
	flag.StringVar(&leaderElectionID, "leader-election-id", defaultLeaderElectionID,
		"The name of the Lease the replicas of this instance elect their leader with; each shard (--watch-label-selector) needs its own, e.g. "+defaultLeaderElectionID+"-shard1.")
	flag.StringVar(&watchLabelSelector, "watch-label-selector", "",
		"Deliver addons only to the CAPI Clusters this label selector matches, as Flux's controllers shard by label (docs/sharding.md): the main instance runs with '!"+csv1.ShardLabel+"', shard N with '"+csv1.ShardLabel+"=N'. Empty: every Cluster.")
	flag.BoolVar(&manageStacks, "manage-stacks", true,
		"Run the controllers of the objects all Clusters share (ClusterStack, ClusterStackRelease, their status, updates, ManagementOperator) and remove the ClusterAddons of deleted Clusters. Exactly one instance runs with true; shards run with false.")
	flag.DurationVar(&grace, "degraded-grace-period", 5*time.Minute, "How long a Flux object may be not Ready, or a rollout unfinished, before the object is reported Degraded.")
	flag.DurationVar(&queueGrace, "flux-queue-grace-period", 15*time.Minute,
		"How long a Flux object may wait for its Flux controller to pick up its current spec before the object waiting for it is reported Degraded (the controller is not running, or not keeping up). Once the controller works on the object, --degraded-grace-period applies from then. Never shorter than --degraded-grace-period.")
	flag.DurationVar(&progressInterval, "progress-status-interval", controllers.DefaultProgressInterval,
		"How long a ClusterAddon status write that only reports progress (a component Ready, the next one awaited, a new ClusterAddon's first status) may wait, so that the states a ClusterAddon passes through within it cost one write; Flux's reports of progress that come meanwhile are reconciled with it. Available, Degraded and every other change are written at once. A ClusterStack's or release's status of 100 Clusters or more (or in a namespace of 100 ClusterAddons or more) that changes only in its counts is rewritten at most this often, or every 30ms per Cluster when that is longer (up to a minute). 0 writes every change at once.")
	flag.DurationVar(&addonTimeout, "addon-timeout", fluxgen.AddonTimeout, "How long Flux may take for one install, upgrade or health check of a cluster's addon (spec.timeout of the generated HelmReleases and Kustomizations); a failure is reported when it runs out and Flux retries.")
	flag.DurationVar(&pushRetry, "push-retry-interval", controllers.DefaultPushRetry,
		"How long after the forge refused a push of a proposal branch the operator tries again.")
	flag.DurationVar(&hookRetry, "upgrade-hook-retry-after", time.Duration(hooks.RetryAfterSeconds)*time.Second,
		"How long Cluster API waits before asking the BeforeClusterUpgrade hook again while an upgrade waits for its addons (whole seconds, at least 1s).")
	flag.StringVar(&artifactHost, "artifact-host-override", os.Getenv("SOURCE_CONTROLLER_LOCALHOST"),
		"Replace the host of source-controller artifact URLs (defaults to $SOURCE_CONTROLLER_LOCALHOST, as Flux's controllers do).")
	flag.BoolVar(&enableWebhooks, "enable-webhooks", false,
		"Serve the validating webhook on CAPI Clusters (config/webhook). The Deployment in config/default enables it; off by default so that make run needs no serving certificate.")
	flag.BoolVar(&runtimeExt, "runtime-extension", true,
		"With --enable-webhooks, also serve the Cluster API Runtime Extension (BeforeClusterUpgrade, AfterControlPlaneInitialized and BeforeClusterDelete hooks of the addon stages) from the webhook server, with its TLS certificate. CAPI calls it once an ExtensionConfig registers it (config/runtimeextension); serving it without one costs nothing.")
	flag.StringVar(&runtimeExtClientCA, "runtime-extension-client-ca-file", "",
		"A PEM file with the CA certificate(s) that issue Cluster API's client certificate (CAPI's --runtime-extension-client-cert-file). When set, the Runtime Extension serves only clients presenting a certificate of this CA (the webhook server verifies client certificates when given; the API server's admission calls come without one). Use a CA that issues nothing else. Empty: any client that reaches the webhook port is served (docs/runtime-extension.md).")
	flag.IntVar(&webhookPort, "webhook-port", webhook.DefaultPort, "The port the webhook server listens on.")
	flag.StringVar(&webhookHost, "webhook-host", "", "The address the webhook server listens on; all addresses when empty.")
	flag.StringVar(&webhookCertDir, "webhook-cert-dir", "",
		"The directory with the webhook server's tls.crt and tls.key; <temp dir>/k8s-webhook-server/serving-certs when empty.")
	flag.StringVar(&defaultSA, "default-service-account", "",
		"The ServiceAccount (in each ClusterStack's namespace) that generated Flux objects run as when the ClusterStack sets no spec.serviceAccountName; set it to the same name as Flux's --default-service-account. Empty leaves it to Flux.")
	flag.StringVar(&fluxLockdown, "flux-lockdown", fluxlockdown.ModeDetect,
		"Whether Flux's multi-tenancy lockdown (kustomize- and helm-controller with --no-cross-namespace-refs=true and --default-service-account) is checked: \""+fluxlockdown.ModeDetect+"\" reads their Deployments in --flux-namespace and reports it on every ClusterStack (condition FluxLockdown); \""+fluxlockdown.ModeRequired+"\" also creates no release while it is not found in place; \""+fluxlockdown.ModeAssumed+"\" reads nothing: the platform states that Flux runs locked down (Flux outside the cluster). docs/multi-tenancy.md.")
	flag.StringVar(&allowedFluxShards, "allowed-flux-shards", "",
		"Comma-separated values of Flux's sharding key (sharding.fluxcd.io/key) that a Cluster's label may pick for its Flux objects; the label is copied onto them only with one of these values, else left out (Flux's main shard). A Cluster's labels are its team's input, and Flux's shards may run with other identities: empty (the default) copies none (docs/sharding.md).")
	flag.IntVar(&maxRenders, "max-concurrent-renders", controllers.DefaultMaxConcurrentRenders,
		"How many values renders run at once in the process, whatever --concurrent is; each may allocate up to 64 MiB per component in its template functions, so this bounds their memory (docs/performance.md).")
	flag.IntVar(&maxRendersPerNamespace, "max-concurrent-renders-per-namespace", controllers.DefaultMaxConcurrentRendersPerNamespace,
		"How many values renders run at once for the Clusters of one namespace; one more Cluster of that namespace waits up to 100ms for one of them to end, the others are reconciled again a second later (ahead of the Clusters queued since the start) instead of holding a worker, so one team's slow templates never hold the workers every team shares.")
	flag.StringVar(&fluxNamespace, "flux-namespace", controllers.DefaultFluxNamespace, "The namespace of Flux's kustomize-controller and helm-controller Deployments (--flux-lockdown).")
	flag.StringVar(&managementNamespace, "management-namespace", defaultManagementNamespace(os.Getenv, os.ReadFile),
		"The namespace ManagementOperators' Flux objects (GitRepository, Kustomization or HelmChart and HelmRelease) are generated in, and where their Secrets are read. Defaults to the namespace the operator runs in ($POD_NAMESPACE, else its ServiceAccount's namespace), else "+controllers.DefaultManagementNamespace+".")
	flag.StringVar(&profilerAddr, "profiler-address", "",
		"Serve Go's pprof profiles (/debug/pprof) on this address, e.g. localhost:6060, as Cluster API's controllers do; off when empty.")
	flag.IntVar(&concurrent, "concurrent", defaultConcurrent,
		"How many objects each controller reconciles at once (Flux's controllers have the same flag). The per-Cluster work waits on the API server, not the CPU: more workers turn a fleet around faster.")
	flag.Float64Var(&kubeAPIQPS, "kube-api-qps", defaultKubeAPIQPS,
		"The most requests per second the operator sends to the Kubernetes API server, averaged (client-side rate limit); a negative value turns the client-side limit off and leaves it to the server's API Priority and Fairness.")
	flag.IntVar(&kubeAPIBurst, "kube-api-burst", defaultKubeAPIBurst, "How many requests the operator may send at once above --kube-api-qps.")
	flag.Float64Var(&memoryLimitRatio, "memory-limit-ratio", defaultMemoryLimitRatio,
		"Set the Go runtime's soft memory limit (GOMEMLIMIT) to this share of the container's memory limit (its cgroup's), so that the garbage collector works harder near the limit instead of the kernel killing the container. 0 leaves it unset; the GOMEMLIMIT environment variable, when set, wins.")
	flag.Int64Var(&tagCacheBytes, "tag-cache-bytes", controllers.DefaultTagCacheBytes,
		"The most memory (an estimate, in bytes) the cache of Git tag listings holds, all repositories together; the least recently used listing is dropped first. A listing keeps only the tags of the stack's or operator's form: a few KiB per repository.")
	flag.IntVar(&tagListings, "tag-listings", controllers.DefaultTagListings,
		"How many Git tag listings run at once, whoever asked for them; the others wait. Each reads at most 16 MiB of reference advertisement as a stream.")
	flag.DurationVar(&diffTimeout, "proposal-diff-timeout", upgradediff.DefaultWorkerTimeout,
		"How long the rendered diff of one proposal may take (wall-clock and CPU time of the worker process that renders the stacks' charts and kustomize directories); a proposal whose diff takes longer says so in its description. 0 proposes without a rendered diff.")
	flag.StringVar(&diffMemory, "proposal-diff-memory", "384Mi",
		"The most memory (data segment, a Kubernetes quantity) the worker process that renders a proposal's diff may use; at most two run at once, inside the operator's container, so keep twice this well below its memory limit.")
	forgeOpts := bindForgeFlags(flag.CommandLine)
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	if err := forgeOpts.validate(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	setupLog := ctrl.Log.WithName("setup")
	if err := setMemoryLimit(memoryLimitRatio, setupLog); err != nil {
		setupLog.Error(err, "invalid --memory-limit-ratio")
		os.Exit(1)
	}
	if maxRenders < 1 || maxRendersPerNamespace < 1 {
		setupLog.Error(fmt.Errorf("--max-concurrent-renders %d and --max-concurrent-renders-per-namespace %d must be at least 1", maxRenders, maxRendersPerNamespace), "invalid flags")
		os.Exit(1)
	}
	if _, err := fluxlockdown.ParseMode(fluxLockdown); err != nil {
		setupLog.Error(err, "invalid --flux-lockdown")
		os.Exit(1)
	}
	shardSelector, err := controllers.ParseShardSelector(watchLabelSelector)
	if err != nil {
		setupLog.Error(err, "invalid --watch-label-selector")
		os.Exit(1)
	}

	webhookOpts := webhook.Options{Host: webhookHost, Port: webhookPort, CertDir: webhookCertDir}
	if runtimeExtClientCA != "" {
		verify, err := hooks.ClientTLSConfig(runtimeExtClientCA)
		if err != nil {
			setupLog.Error(err, "invalid --runtime-extension-client-ca-file")
			os.Exit(1)
		}
		webhookOpts.TLSOpts = append(webhookOpts.TLSOpts, verify)
	}

	restConfig := ctrl.GetConfigOrDie()
	restConfig.QPS, restConfig.Burst = float32(kubeAPIQPS), kubeAPIBurst
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:           scheme.New(),
		Controller:       ctrlconfig.Controller{MaxConcurrentReconciles: concurrent},
		PprofBindAddress: profilerAddr,
		// Every request and every owner-mapped watch event looks up a REST mapping: found
		// once, kept (restmapping.Memo).
		MapperProvider: restmapping.NewDynamic,
		// Reads of the objects the Cluster refers to (infrastructure cluster, control plane),
		// which are unstructured, come from the watch the operator keeps on their kinds anyway.
		Client:                 client.Options{Cache: &client.CacheOptions{Unstructured: true}},
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress: probeAddr,
		LeaderElection:         leaderElect,
		LeaderElectionID:       leaderElectionID,
		// The lease lives in the operator's own namespace (where config/rbac grants it leases).
		LeaderElectionNamespace: managementNamespace,
		LeaseDuration:           &leaseDuration,
		RenewDeadline:           &renewDeadline,
		RetryPeriod:             &retryPeriod,
		// A replica that stops gracefully hands the lease over at once instead of making the
		// next leader wait for the lease to run out: nothing runs after the manager stops.
		LeaderElectionReleaseOnCancel: true,
		WebhookServer:                 webhook.NewServer(webhookOpts),
		Cache:                         controllers.CacheOptions(managementNamespace),
	})
	if err != nil {
		setupLog.Error(err, "unable to create manager")
		os.Exit(1)
	}
	tags := &controllers.TagLister{Reader: mgr.GetAPIReader(), MaxBytes: tagCacheBytes, Listings: tagListings}
	var differ controllers.Differ
	if diffTimeout > 0 {
		mem, err := resource.ParseQuantity(diffMemory)
		if err != nil || mem.Value() < 64<<20 {
			fmt.Fprintf(os.Stderr, "--proposal-diff-memory=%s: give a quantity of at least 64Mi (e.g. 384Mi)\n", diffMemory)
			os.Exit(2)
		}
		self, err := os.Executable()
		if err != nil {
			setupLog.Error(err, "unable to find the manager binary for the proposal diff worker")
			os.Exit(1)
		}
		differ = upgradediff.Isolated{Path: self, Args: []string{upgradediff.WorkerArg}, Timeout: diffTimeout, Memory: uint64(mem.Value())}
	}
	if err := controllers.Setup(context.Background(), mgr, controllers.Config{
		Grace:                            grace,
		QueueGrace:                       queueGrace,
		ProgressInterval:                 progressInterval,
		ArtifactHostOverride:             artifactHost,
		Tags:                             tags,
		AddonTimeout:                     addonTimeout,
		PushRetry:                        pushRetry,
		ForgeLimits:                      forgeOpts.limits,
		ForgePolicy:                      forgeOpts.policy,
		ForgeHostConcurrency:             forgeOpts.hostConcurrency,
		DefaultServiceAccount:            defaultSA,
		FluxLockdown:                     fluxLockdown,
		FluxNamespace:                    fluxNamespace,
		AllowedFluxShards:                splitList(allowedFluxShards),
		MaxConcurrentRenders:             maxRenders,
		MaxConcurrentRendersPerNamespace: maxRendersPerNamespace,
		ManagementNamespace:              managementNamespace,
		WatchLabelSelector:               shardSelector,
		ClusterAddonsOnly:                !manageStacks,
		Differ:                           differ,
	}); err != nil {
		setupLog.Error(err, "unable to set up controllers")
		os.Exit(1)
	}
	if enableWebhooks {
		if err := webhooks.SetupClusterWebhookWithManager(mgr, tags); err != nil {
			setupLog.Error(err, "unable to set up the Cluster webhook")
			os.Exit(1)
		}
		if runtimeExt {
			if err := hooks.SetupWithManager(context.Background(), mgr, hookRetry, runtimeExtClientCA != ""); err != nil {
				setupLog.Error(err, "unable to set up the Runtime Extension")
				os.Exit(1)
			}
		}
		// Ready only once the webhook serves TLS: the API server calls it with failurePolicy Fail.
		if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
			setupLog.Error(err, "unable to set up webhook ready check")
			os.Exit(1)
		}
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		setupLog.Error(err, "unable to set up health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		setupLog.Error(err, "unable to set up ready check")
		os.Exit(1)
	}
	setupLog.Info("starting manager")
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		setupLog.Error(err, "manager exited with an error")
		os.Exit(1)
	}
}

// setMemoryLimit sets GOMEMLIMIT to ratio times the memory limit of the container's cgroup
// (automemlimit, as Prometheus does), unless ratio is 0, GOMEMLIMIT is set in the environment or
// there is no limit.
func setMemoryLimit(ratio float64, log logr.Logger) error {
	if ratio == 0 {
		return nil
	}
	if !(ratio > 0 && ratio <= 1) { // NaN too
		return fmt.Errorf("%v is not a share of the memory limit (0 < ratio <= 1, or 0 for none)", ratio)
	}
	// It logs the limit it sets, or that GOMEMLIMIT is set already.
	if _, err := memlimit.Set(memlimit.WithRatio(ratio), memlimit.WithProvider(memlimit.FromCgroup),
		memlimit.WithLogger(slog.New(logr.ToSlogHandler(log)))); err != nil {
		// No cgroup to read (not in a container, say): run without a limit, as the Go runtime does.
		log.Info("no memory limit for the Go runtime", "reason", err.Error())
	}
	return nil
}

// defaultLeaderElectionID is the Lease of a single instance (or of the main instance of shards).
const defaultLeaderElectionID = "clusterstack-operator.clusterstack.io"

// serviceAccountNamespaceFile holds the namespace of the Pod's ServiceAccount.
const serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// defaultManagementNamespace is the namespace the operator runs in: $POD_NAMESPACE (the
// Deployment sets it from the downward API), else its ServiceAccount's namespace, else
// controllers.DefaultManagementNamespace (out of cluster, as with make run).
func defaultManagementNamespace(getenv func(string) string, readFile func(string) ([]byte, error)) string {
	if ns := strings.TrimSpace(getenv("POD_NAMESPACE")); ns != "" {
		return ns
	}
	if b, err := readFile(serviceAccountNamespaceFile); err == nil {
		if ns := strings.TrimSpace(string(b)); ns != "" {
			return ns
		}
	}
	return controllers.DefaultManagementNamespace
}

// splitList splits a comma-separated flag value, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
