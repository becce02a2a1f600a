// Command manager runs the ClusterStack operator: a controller-runtime manager with the
// ClusterStack, ClusterStackRelease, ClusterAddon and status controllers, and (with
// --enable-webhooks) the validating webhook on CAPI Clusters and the Cluster API Runtime
// Extension (addon stages; --runtime-extension).
package main

import (
	"context"
	"flag"
	"os"
	"strings"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/clusterstack-io/clusterstack-operator/controllers"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/hooks"
	"github.com/clusterstack-io/clusterstack-operator/internal/scheme"
	"github.com/clusterstack-io/clusterstack-operator/internal/webhooks"
)

func main() {
	var (
		metricsAddr, probeAddr, artifactHost      string
		webhookHost, webhookCertDir, defaultSA    string
		managementNamespace                       string
		webhookPort                               int
		leaderElect, enableWebhooks, runtimeExt   bool
		grace, addonTimeout                       time.Duration
		leaseDuration, renewDeadline, retryPeriod time.Duration
	)
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "The address the metrics endpoint binds to; \"0\" disables it.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "The address the health and readiness probes bind to.")
	flag.BoolVar(&leaderElect, "leader-elect", false, "Enable leader election, so that only one replica reconciles at a time.")
	flag.DurationVar(&leaseDuration, "leader-elect-lease-duration", 15*time.Second,
		"How long a replica waits, after the leader last renewed the lease, before it takes the lease over (a crashed leader is replaced within this time).")
	flag.DurationVar(&renewDeadline, "leader-elect-renew-deadline", 10*time.Second,
		"How long the leader keeps trying to renew the lease before it gives up leadership (and exits); shorter than the lease duration.")
	flag.DurationVar(&retryPeriod, "leader-elect-retry-period", 2*time.Second, "How often replicas try to acquire or renew the lease.")
	flag.DurationVar(&grace, "degraded-grace-period", 5*time.Minute, "How long a Flux object may be not Ready, or a rollout unfinished, before the object is reported Degraded.")
	flag.DurationVar(&addonTimeout, "addon-timeout", fluxgen.AddonTimeout, "How long Flux may take for one install, upgrade or health check of a cluster's addon (spec.timeout of the generated HelmReleases and Kustomizations); a failure is reported when it runs out and Flux retries.")
	flag.StringVar(&artifactHost, "artifact-host-override", os.Getenv("SOURCE_CONTROLLER_LOCALHOST"),
		"Replace the host of source-controller artifact URLs (defaults to $SOURCE_CONTROLLER_LOCALHOST, as Flux's controllers do).")
	flag.BoolVar(&enableWebhooks, "enable-webhooks", false,
		"Serve the validating webhook on CAPI Clusters (config/webhook). The Deployment in config/default enables it; off by default so that make run needs no serving certificate.")
	flag.BoolVar(&runtimeExt, "runtime-extension", true,
		"With --enable-webhooks, also serve the Cluster API Runtime Extension (BeforeClusterUpgrade, AfterControlPlaneInitialized and BeforeClusterDelete hooks of the addon stages) from the webhook server, with its TLS certificate. CAPI calls it once an ExtensionConfig registers it (config/runtimeextension); serving it without one costs nothing.")
	flag.IntVar(&webhookPort, "webhook-port", webhook.DefaultPort, "The port the webhook server listens on.")
	flag.StringVar(&webhookHost, "webhook-host", "", "The address the webhook server listens on; all addresses when empty.")
	flag.StringVar(&webhookCertDir, "webhook-cert-dir", "",
		"The directory with the webhook server's tls.crt and tls.key; <temp dir>/k8s-webhook-server/serving-certs when empty.")
	flag.StringVar(&defaultSA, "default-service-account", "",
		"The ServiceAccount (in each ClusterStack's namespace) that generated Flux objects run as when the ClusterStack sets no spec.serviceAccountName; set it to the same name as Flux's --default-service-account. Empty leaves it to Flux.")
	flag.StringVar(&managementNamespace, "management-namespace", defaultManagementNamespace(os.Getenv, os.ReadFile),
		"The namespace ManagementOperators' Flux objects (GitRepository, Kustomization or HelmChart and HelmRelease) are generated in, and where their Secrets are read. Defaults to the namespace the operator runs in ($POD_NAMESPACE, else its ServiceAccount's namespace), else "+controllers.DefaultManagementNamespace+".")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	setupLog := ctrl.Log.WithName("setup")

	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                 scheme.New(),
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress: probeAddr,
		LeaderElection:         leaderElect,
		LeaderElectionID:       "clusterstack-operator.clusterstack.io",
		// The lease lives in the operator's own namespace (where config/rbac grants it leases).
		LeaderElectionNamespace: managementNamespace,
		LeaseDuration:           &leaseDuration,
		RenewDeadline:           &renewDeadline,
		RetryPeriod:             &retryPeriod,
		// A replica that stops gracefully hands the lease over at once instead of making the
		// next leader wait for the lease to run out: nothing runs after the manager stops.
		LeaderElectionReleaseOnCancel: true,
		WebhookServer:                 webhook.NewServer(webhook.Options{Host: webhookHost, Port: webhookPort, CertDir: webhookCertDir}),
		Cache:                         controllers.CacheOptions(managementNamespace),
	})
	if err != nil {
		setupLog.Error(err, "unable to create manager")
		os.Exit(1)
	}
	tags := &controllers.TagLister{Reader: mgr.GetAPIReader()}
	if err := controllers.Setup(context.Background(), mgr, controllers.Config{
		Grace:                 grace,
		ArtifactHostOverride:  artifactHost,
		Tags:                  tags,
		AddonTimeout:          addonTimeout,
		DefaultServiceAccount: defaultSA,
		ManagementNamespace:   managementNamespace,
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
			if err := hooks.SetupWithManager(context.Background(), mgr); err != nil {
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
