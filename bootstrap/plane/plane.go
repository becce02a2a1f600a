// Package plane starts a complete local management plane for the ClusterStack operator from
// real components, all as processes on loopback with free ports:
//
//   - a management Kubernetes API server with etcd (envtest), with the CRDs of the operator,
//     Flux, Cluster API and CAPA installed, and a system:masters kubeconfig written to
//     <state-dir>/management.kubeconfig;
//   - Flux's source-, kustomize- and helm-controller (checked healthy before Start returns),
//     kustomize- and helm-controller in Flux's multi-tenancy lockdown
//     (--no-cross-namespace-refs=true, --default-service-account=Options.FluxServiceAccount),
//     and config/tenant's ClusterRole for team namespaces (CreateTenantNamespace);
//   - kube-controller-manager (the garbage collector, the namespace controller and what
//     Deployments need), kube-scheduler and kwok with Options.ManagementNodes Nodes against the
//     management API server (package kubesim), so that the Pods of Deployments installed there
//     run, simulated, and the Deployments become Available;
//   - a Git smart-HTTP server (package gitserver) with its repositories under the state dir,
//     and on it, unless Options.SkipFixtureOperators, the fixture operators
//     ([Plane.FixtureOperators]): small operators, one repository each, one tag per version;
//   - localinfra, a stand-in for a CAPI infrastructure and control-plane provider that turns
//     each Cluster into a local workload cluster (API server, controller manager, scheduler
//     and kwok Nodes) and writes its kubeconfig Secret. It is not part of the operator: see
//     package localinfra;
//   - optionally (Options.WithForge) a Gitea forge (package forge) with the fleet repository,
//     a bot user with an API token, and main protected so that only a person pushes to it:
//     for the GitOps loop's pull requests;
//   - optionally the operator itself (bin/manager), running as its config/rbac ServiceAccount
//     (a token in <state-dir>/operator.kubeconfig), with its validating webhook on CAPI
//     Clusters: the configuration in config/webhook is installed into the management API
//     server (envtest generates the CA and the serving certificate and points it at the
//     operator on loopback), and Start returns once the webhook serves TLS. It runs as
//     Options.OperatorReplicas processes behind one webhook address (a TCP balancer, as a
//     Service), optionally talking to the API server through a fault-injecting proxy
//     (Options.OperatorAPIProxy).
//
// Flux controllers and operator replicas that exit without being asked to (a crash, an exit
// on lost leadership) are started again after a short delay, as a kubelet restarts a
// container ([ProcessInfo].Restarts counts it).
//
// For fault tests, the plane injects faults into its real components and undoes them (see
// faults.go): [Plane.StopFlux] and [Plane.StartFlux], [Plane.StopGit] and [Plane.StartGit],
// [Plane.RestartAPIServer] (etcd kept), [Plane.StopWorkloadAPIServer] and
// [Plane.StartWorkloadAPIServer], [Plane.StopOperator], [Plane.StartOperator],
// [Plane.KillOperatorReplica], [Plane.StartOperatorReplica] and [Plane.OperatorLeader].
//
// Every process writes its output to <state-dir>/logs/<name>.log (workload clusters to
// <state-dir>/logs/clusters/<namespace>-<name>/). [Plane.Stop] stops everything it started;
// processes are in their own process groups, get SIGKILL if the plane process dies, and are
// recorded in <state-dir>/run/processes so that the next Start ends whatever a killed plane
// left behind.
//
// Start wipes the state it owns under the state dir (management, flux, git, forge, clusters,
// logs, run, home, fixture-operators and management.kubeconfig): each plane starts empty.
package plane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/clusterstack-io/clusterstack-operator/bootstrap/faultproxy"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/gitea"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/gitserver"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/kubesim"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/localinfra"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/proc"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/registry"
	"github.com/clusterstack-io/clusterstack-operator/internal/checkout"
	"github.com/clusterstack-io/clusterstack-operator/internal/hooks"
	"github.com/clusterstack-io/clusterstack-operator/internal/webhooks"
)

const (
	// ModulePath is the Go module whose checkout Start looks for to find bin/ and config/.
	ModulePath = checkout.ModulePath
	// DefaultStartTimeout bounds Start.
	DefaultStartTimeout = 5 * time.Minute
	// KubeconfigFile is the management kubeconfig's file name in the state dir.
	KubeconfigFile = "management.kubeconfig"
	// FluxNamespace is created on the plane for Flux objects that want the usual namespace.
	FluxNamespace = "flux-system"
	// OperatorProcessName is the name of the operator's first replica in Processes (and of its
	// log file, <name>.log); replica i > 0 is "<OperatorProcessName>-<i>".
	OperatorProcessName = "manager"

	managerStopTimeout = 30 * time.Second
)

// Options configures a Plane. Only StateDir is required.
type Options struct {
	// StateDir holds all state and logs of the plane.
	StateDir string
	// RepoRoot is the checkout of this module; found from the working directory upwards
	// when empty. The defaults below are relative to it.
	RepoRoot string
	// BinDir holds the binaries built by `make tools` (and bin/manager from `make build`).
	// Default: <RepoRoot>/bin.
	BinDir string
	// CRDDirs are installed into the management API server: directories of CRD manifests, or
	// kustomize directories (a provider's config/crd), built first. Default:
	// <RepoRoot>/config/crd/bases and, in <BinDir>/crds, flux, capi-core,
	// capi-kubeadm-bootstrap, capi-kubeadm-controlplane, capd and capa.
	CRDDirs []string
	// StandInKinds get permissive stand-in CRDs (StandInCRD) unless a CRD of CRDDirs serves
	// the kind: providers whose CRDs no pinned module provides. Default (nil):
	// DefaultStandInKinds; empty for none.
	StandInKinds []schema.GroupVersionKind
	// KwokStagesDir holds kwok's Stage manifests. Default: <BinDir>/kwok-stages.
	KwokStagesDir string

	// FluxWatchNamespace restricts the Flux controllers to one namespace
	// (--watch-all-namespaces=false); all namespaces when empty.
	FluxWatchNamespace string
	// FluxServiceAccount is the --default-service-account of kustomize- and helm-controller,
	// which also run with --no-cross-namespace-refs=true (Flux's multi-tenancy lockdown), and
	// of the operator. Each workload cluster binds this account of its Cluster's namespace to
	// cluster-admin (Flux impersonates it there). Default: DefaultFluxServiceAccount.
	FluxServiceAccount string
	// FluxConcurrent is the --concurrent of kustomize- and helm-controller (workers each);
	// 0: Flux's default (4). A plane with many failing HelmReleases needs more: a failing Helm
	// upgrade, its rollback and helm-controller's wait for its own cache hold a worker for tens
	// of seconds each, and four such loops leave no worker for anything else.
	FluxConcurrent int
	// RBACConfigDir is the operator's RBAC (kustomize), installed with WithOperator; the operator
	// runs with a token of its ServiceAccount. Default: <RepoRoot>/config/rbac.
	RBACConfigDir string
	// TenantConfigDir is the tenant ClusterRole (kustomize), always installed.
	// Default: <RepoRoot>/config/tenant.
	TenantConfigDir string

	// WithCAPI starts Cluster API's core manager (bin/capi-manager) with the ClusterTopology and
	// RuntimeSDK feature gates, and bin/provider-webhooks (the kubeadm bootstrap and
	// control-plane providers' and CAPD's webhooks), with their admission webhooks and CRD
	// conversion on loopback. CAPI's topology controller then builds each Cluster's objects
	// from its ClusterClass and localinfra plays the providers by their contracts
	// (localinfra.Options.ProviderContract). CAPI calls the operator's Runtime Extension with a
	// client certificate the plane makes (RuntimeExtensionClient), and the operator serves only
	// that certificate's CA (--runtime-extension-client-ca-file). Off by default: without it
	// localinfra builds a minimal topology itself (faster, and what the demo and the end-to-end
	// suite use today).
	WithCAPI bool

	// WithForge starts a Gitea forge (package forge; bin/gitea and bin/gitea-assets from
	// `make tools`) with its state in <state-dir>/forge and its log in <state-dir>/logs/gitea.log:
	// the repository gitea.DefaultRepo of the administrator gitea.DefaultAdminUser, the bot
	// gitea.DefaultBotUser with write access and an API token, and main protected so that only
	// the administrator pushes to it. It starts alongside the other components; Start returns
	// once it is ready. See Plane.Forge.
	WithForge bool

	// WithRegistry starts an OCI registry (package registry: CNCF Distribution, bin/registry
	// from `make tools`) on loopback, plain http, anonymous, with its storage in
	// <state-dir>/registry and its log in <state-dir>/logs/registry.log. See Plane.OCIRegistry.
	WithRegistry bool

	// WithOperator starts the operator (OperatorPath) against the management API server.
	WithOperator bool
	// OperatorPath is the operator binary. Default: <BinDir>/manager.
	OperatorPath string
	// OperatorArgs are added to the operator's arguments, after
	// --metrics-bind-address, --health-probe-bind-address and the webhook flags
	// (--enable-webhooks, --webhook-host, --webhook-port, --webhook-cert-dir).
	OperatorArgs []string
	// OperatorEnv is added to the operator's environment (KUBECONFIG and
	// SOURCE_CONTROLLER_LOCALHOST are set).
	OperatorEnv []string
	// SkipOperatorReadyCheck does not wait for the operator's /readyz nor its webhook.
	SkipOperatorReadyCheck bool
	// OperatorReplicas is how many operator processes run (1 when zero), like the replicas of
	// its Deployment: each with its own metrics, health and webhook ports and its own log file
	// (manager.log, manager-1.log, ...). The API server calls the webhook at one address
	// (OperatorWebhookAddr), where the plane forwards each connection to a replica that
	// accepts it, as a Service does. With more than one, pass --leader-elect in OperatorArgs.
	OperatorReplicas int
	// AuditWritesOf are users whose writes (create, update, patch, delete) the management API
	// server records in its audit log, <state-dir>/logs/audit.log, at Metadata level: who wrote
	// which object, when, and the answer. Plane.AuditedWrites reads them; OperatorUser is the
	// operator's. None when empty.
	AuditWritesOf []string
	// OperatorAPIProxy puts a fault-injecting proxy (package faultproxy, Plane.APIProxy)
	// between the operator and the management API server: the operator's kubeconfig points
	// at the proxy, which injects nothing until asked and counts the operator's requests.
	OperatorAPIProxy bool
	// WebhookConfigDir is the kustomize directory of the operator's webhook configuration,
	// installed with WithOperator. Default: <RepoRoot>/config/webhook.
	WebhookConfigDir string

	// WorkloadNodes is the default number of kwok Nodes per workload cluster (1 when zero).
	WorkloadNodes int
	// ManagementNodes is the number of kwok Nodes of the management API server (1 when zero,
	// none when negative), named "management-node-<i>". They run the Pods of what is installed
	// into the management cluster (operators delivered through Flux); the plane's own
	// controllers are processes.
	ManagementNodes int
	// SkipFixtureOperators does not publish the fixture operators to the Git server
	// (FixtureOperators); publishing them takes about 0.65 s on an idle 2-core machine.
	SkipFixtureOperators bool
	// StartTimeout bounds Start; DefaultStartTimeout when zero.
	StartTimeout time.Duration
	// Logger receives the plane's and the localinfra controller's logs; discarded when unset.
	Logger logr.Logger
}

// Plane is a running local management plane.
type Plane struct {
	opts       Options
	log        logr.Logger
	kubeconfig string
	cfg        *rest.Config
	scheme     *runtime.Scheme
	client     client.Client
	env        *envtest.Environment
	git        *gitserver.Server
	forge      *gitea.Forge
	oci        *registry.Server
	registry   *proc.Registry
	infra      *localinfra.Reconciler
	mgrCancel  context.CancelFunc
	mgrDone    chan error
	logFiles   []*os.File

	// flux are source-, kustomize- and helm-controller, in this order.
	flux []*service
	// operators are the operator's replicas (Options.OperatorReplicas); webhookLB forwards the
	// API server's webhook calls to them.
	operators     []*service
	operatorAddrs []operatorAddrs
	webhookLB     *tcpBalancer
	// apiProxy stands between the operator and the API server (Options.OperatorAPIProxy).
	apiProxy *faultproxy.Proxy
	// instances are the extra operator instances by name (StartOperatorInstance), guarded by instMu.
	instances map[string]*operatorInstance
	instMu    sync.Mutex
	// mu guards sim, which RestartAPIServer may replace, and serializes fault injections on
	// the API server.
	mu sync.Mutex
	// sim runs kube-controller-manager, kube-scheduler and kwok against the management API server.
	sim *kubesim.Components
	// fixtures are the published fixture operators.
	fixtures []FixtureOperator
	capi     *proc.Process
	// providerWebhooks serves CABPK's, KCP's and CAPD's webhooks (Options.WithCAPI).
	providerWebhooks *proc.Process
	// crds are the CRDs installed into the management API server.
	crds crdSet
	// extClient is CAPI's client certificate for the Runtime Extension (WithCAPI).
	extClient ClientCertFiles

	// operatorWebhookAddr is where the API server calls the operator's webhook (webhookLB).
	operatorWebhookAddr string
	// operatorKubeconfig is the operator's own kubeconfig (its ServiceAccount's token);
	// operatorAPIKubeconfig is the one its processes use (through apiProxy with
	// OperatorAPIProxy, else the same).
	operatorKubeconfig, operatorAPIKubeconfig string
	sourceStorageAddr                         string

	stopOnce sync.Once
	stopErr  error
}

// NewScheme returns a scheme with core Kubernetes, CAPI v1beta2 and the Flux source,
// kustomize and helm API types.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme,
		clusterv1.AddToScheme,
		controlplanev1.AddToScheme,
		bootstrapv1.AddToScheme,
		sourcev1.AddToScheme,
		kustomizev1.AddToScheme,
		helmv2.AddToScheme,
		apiextensionsv1.AddToScheme,
		runtimev1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("build scheme: %w", err)
		}
	}
	return s, nil
}

// FindRepoRoot returns the closest directory, from dir upwards, whose go.mod declares
// ModulePath (checkout.Root).
func FindRepoRoot(dir string) (string, error) { return checkout.Root(dir) }

// withDefaults fills in the defaults and makes paths absolute.
func (o Options) withDefaults() (Options, error) {
	if o.StateDir == "" {
		return o, errors.New("plane: StateDir is required")
	}
	var err error
	if o.StateDir, err = filepath.Abs(o.StateDir); err != nil {
		return o, err
	}
	if o.RepoRoot == "" {
		wd, err := os.Getwd()
		if err != nil {
			return o, err
		}
		if o.RepoRoot, err = FindRepoRoot(wd); err != nil {
			return o, fmt.Errorf("plane: %w (set Options.RepoRoot)", err)
		}
	}
	if o.BinDir == "" {
		o.BinDir = filepath.Join(o.RepoRoot, "bin")
	}
	if o.BinDir, err = filepath.Abs(o.BinDir); err != nil {
		return o, err
	}
	if o.CRDDirs == nil {
		o.CRDDirs = []string{
			filepath.Join(o.RepoRoot, "config", "crd", "bases"),
			filepath.Join(o.BinDir, "crds", "flux"),
		}
		for _, d := range []string{"capi-core", "capi-kubeadm-bootstrap", "capi-kubeadm-controlplane", "capd", "capa"} {
			o.CRDDirs = append(o.CRDDirs, filepath.Join(o.BinDir, "crds", d))
		}
	}
	if o.StandInKinds == nil {
		o.StandInKinds = DefaultStandInKinds
	}
	if o.KwokStagesDir == "" {
		o.KwokStagesDir = filepath.Join(o.BinDir, "kwok-stages")
	}
	if o.OperatorPath == "" {
		o.OperatorPath = filepath.Join(o.BinDir, "manager")
	}
	if o.WebhookConfigDir == "" {
		o.WebhookConfigDir = filepath.Join(o.RepoRoot, filepath.FromSlash(webhooks.ConfigDir))
	}
	if o.FluxServiceAccount == "" {
		o.FluxServiceAccount = DefaultFluxServiceAccount
	}
	if o.RBACConfigDir == "" {
		o.RBACConfigDir = filepath.Join(o.RepoRoot, "config", "rbac")
	}
	if o.TenantConfigDir == "" {
		o.TenantConfigDir = filepath.Join(o.RepoRoot, "config", "tenant")
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.Logger.GetSink() == nil {
		o.Logger = logr.Discard()
	}
	return o, nil
}

// RequiredBinaries are the executables Start needs in BinDir (bin/manager too with
// WithOperator).
var RequiredBinaries = []string{
	"kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler", "kwok",
	"source-controller", "kustomize-controller", "helm-controller",
}

// MissingBinaries lists the RequiredBinaries missing from binDir.
func MissingBinaries(binDir string) []string {
	var missing []string
	for _, b := range RequiredBinaries {
		if _, err := os.Stat(filepath.Join(binDir, b)); err != nil {
			missing = append(missing, b)
		}
	}
	return missing
}

// Start starts a plane. ctx bounds the start only; the plane runs until Stop. On error,
// everything started so far is stopped again.
func Start(ctx context.Context, opts Options) (_ *Plane, retErr error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if missing := MissingBinaries(opts.BinDir); len(missing) > 0 {
		return nil, fmt.Errorf("plane: %s missing in %s: run `make tools`", strings.Join(missing, ", "), opts.BinDir)
	}
	if opts.WithCAPI {
		for _, bin := range []string{CAPIManagerBinary, ProviderWebhooksBinary} {
			if _, err := os.Stat(filepath.Join(opts.BinDir, bin)); err != nil {
				return nil, fmt.Errorf("plane: %s: %w (run `make tools`)", bin, err)
			}
		}
	}
	if opts.WithForge {
		if missing := gitea.Missing(opts.BinDir); len(missing) > 0 {
			return nil, fmt.Errorf("plane: %s missing in %s (WithForge): run `make tools`", strings.Join(missing, ", "), opts.BinDir)
		}
	}
	if opts.WithRegistry {
		if _, err := os.Stat(filepath.Join(opts.BinDir, registry.Binary)); err != nil {
			return nil, fmt.Errorf("plane: %s (WithRegistry): %w (run `make tools`)", registry.Binary, err)
		}
	}
	if opts.WithOperator {
		if _, err := os.Stat(opts.OperatorPath); err != nil {
			return nil, fmt.Errorf("plane: operator binary: %w (run `make build`)", err)
		}
	}
	for _, d := range opts.CRDDirs {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("plane: CRD directory %s missing (run `make tools` and `make manifests`)", d)
		}
	}

	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()

	p := &Plane{opts: opts, log: opts.Logger.WithName("plane")}
	defer func() {
		if r := recover(); r != nil {
			_ = p.Stop()
			panic(r)
		}
		if retErr != nil {
			if err := p.Stop(); err != nil {
				retErr = fmt.Errorf("%w (and stopping the plane: %v)", retErr, err)
			}
		}
	}()

	if err := p.prepareStateDir(); err != nil {
		return nil, err
	}
	if p.scheme, err = NewScheme(); err != nil {
		return nil, err
	}
	started := time.Now()
	// The forge needs nothing of the rest: it starts alongside (its ~2 s overlap the loading
	// of the CRDs and the API server's start) and Start waits for it at the end (joinForge).
	joinForge := func() error { return nil }
	if opts.WithForge {
		forgeCtx, cancelForge := context.WithCancel(ctx)
		forgeDone := make(chan error, 1)
		go func() {
			f, err := gitea.Start(forgeCtx, gitea.Options{
				BinDir:   opts.BinDir,
				StateDir: filepath.Join(opts.StateDir, "forge"),
				LogFile:  filepath.Join(p.LogDir(), "gitea.log"),
				Logger:   opts.Logger,
			})
			p.forge = f // read only after forgeDone
			forgeDone <- err
		}()
		var joinOnce sync.Once
		var joinErr error
		joinForge = func() error {
			joinOnce.Do(func() {
				waited := time.Now()
				if joinErr = <-forgeDone; joinErr != nil {
					joinErr = fmt.Errorf("plane: %w", joinErr)
					return
				}
				p.log.Info("forge ready", "url", p.forge.URL(), "repository", p.forge.RepoURL(p.forge.Owner(), p.forge.Repo()),
					"waited", time.Since(waited).Round(time.Millisecond))
			})
			return joinErr
		}
		// When Start fails or panics before joining, and before the plane is stopped (deferred
		// earlier, so run later): cancel the forge's start and wait for it, so that Stop sees
		// what it started. After a join, only the context is released.
		defer func() {
			cancelForge()
			_ = joinForge()
		}()
	}
	if err := p.startAPIServer(); err != nil {
		return nil, err
	}
	p.record()
	p.log.Info("management API server started", "host", p.cfg.Host, "kubeconfig", p.kubeconfig, "took", time.Since(started).Round(time.Millisecond))

	if err := p.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: FluxNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("plane: create namespace %s: %w", FluxNamespace, err)
	}
	if err := p.installConfig(ctx, opts.TenantConfigDir); err != nil {
		return nil, err
	}

	gitLog, err := p.openLog("gitserver.log")
	if err != nil {
		return nil, err
	}
	if p.git, err = gitserver.Start(filepath.Join(opts.StateDir, "git"), "127.0.0.1:0", gitserver.WithLogOutput(gitLog)); err != nil {
		return nil, fmt.Errorf("plane: %w", err)
	}
	p.log.Info("git server started", "url", p.git.URL())

	if opts.WithRegistry {
		if p.oci, err = registry.Start(ctx, registry.Options{
			BinDir:   opts.BinDir,
			StateDir: filepath.Join(opts.StateDir, "registry"),
			LogFile:  filepath.Join(p.LogDir(), "registry.log"),
		}); err != nil {
			return nil, fmt.Errorf("plane: %w", err)
		}
		p.log.Info("OCI registry started", "host", p.oci.Host())
	}

	if opts.SkipFixtureOperators {
		p.log.Info("fixture operators not published (SkipFixtureOperators)")
	} else {
		step := time.Now()
		if err := p.publishFixtureOperators(ctx); err != nil {
			return nil, err
		}
		p.log.Info("fixture operators published", "repositories", len(p.fixtures), "took", time.Since(step).Round(time.Millisecond))
	}

	step := time.Now()
	if err := p.startManagementComponents(ctx); err != nil {
		return nil, err
	}
	p.log.Info("management controller manager, scheduler and kwok Nodes ready", "nodes", p.sim.NodeNames(), "took", time.Since(step).Round(time.Millisecond))

	if err := p.startFlux(ctx); err != nil {
		return nil, err
	}
	p.log.Info("Flux controllers healthy", "source-controller storage", p.sourceStorageAddr)

	if opts.WithCAPI {
		if err := p.startCAPI(ctx); err != nil {
			return nil, err
		}
		p.log.Info("CAPI core manager started")
	}

	if err := p.startLocalInfra(ctx); err != nil {
		return nil, err
	}
	p.log.Info("localinfra controller started")

	if opts.WithOperator {
		if err := p.startOperator(ctx); err != nil {
			return nil, err
		}
		p.log.Info("operator started", "replicas", len(p.operators), "health", p.OperatorHealthAddr(), "metrics", p.OperatorMetricsAddr(), "webhook", p.operatorWebhookAddr)
	}
	if err := joinForge(); err != nil {
		return nil, err
	}
	p.record()
	p.log.Info("plane ready", "took", time.Since(started).Round(time.Millisecond))
	return p, nil
}

// prepareStateDir ends processes a killed plane left behind and removes the state this
// package owns.
func (p *Plane) prepareStateDir() error {
	dir := p.opts.StateDir
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("plane: create state dir: %w", err)
	}
	regPath := filepath.Join(dir, "run", "processes")
	killed, err := proc.ReapStale(regPath)
	if err != nil {
		return fmt.Errorf("plane: %w", err)
	}
	if len(killed) > 0 {
		p.log.Info("ended processes left behind by an earlier plane", "pids", killed)
	}
	for _, sub := range []string{"management", "flux", "git", "forge", "clusters", "logs", "run", "home", fixtureSrcDir, KubeconfigFile} {
		if err := os.RemoveAll(filepath.Join(dir, sub)); err != nil {
			return fmt.Errorf("plane: clean state dir: %w", err)
		}
	}
	if err := os.MkdirAll(p.LogDir(), 0o755); err != nil {
		return fmt.Errorf("plane: create log dir: %w", err)
	}
	p.registry = proc.NewRegistry(regPath)
	return nil
}

// record writes the current child processes into the registry; failures only cost the
// cleanup after a crash, so they are logged.
func (p *Plane) record() {
	if p.registry == nil {
		return
	}
	if err := p.registry.RecordChildren(); err != nil {
		p.log.Error(err, "record processes")
	}
}

func (p *Plane) openLog(name string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(p.LogDir(), name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("plane: open log: %w", err)
	}
	p.logFiles = append(p.logFiles, f)
	return f, nil
}

func (p *Plane) startAPIServer() error {
	o := p.opts
	apiLog, err := p.openLog("kube-apiserver.log")
	if err != nil {
		return err
	}
	etcdLog, err := p.openLog("etcd.log")
	if err != nil {
		return err
	}
	port, err := proc.FreePort()
	if err != nil {
		return err
	}
	certDir, dataDir := filepath.Join(o.StateDir, "management", "kube-apiserver"), filepath.Join(o.StateDir, "management", "etcd")
	for _, d := range []string{certDir, dataDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("plane: %w", err)
		}
	}
	// envtest starts these two itself: wrap them so that they die with the plane process.
	wrappers := filepath.Join(o.StateDir, "management", "bin")
	apiPath, err := proc.DeathSignalWrapper(wrappers, filepath.Join(o.BinDir, "kube-apiserver"))
	if err != nil {
		return fmt.Errorf("plane: %w", err)
	}
	etcdPath, err := proc.DeathSignalWrapper(wrappers, filepath.Join(o.BinDir, "etcd"))
	if err != nil {
		return fmt.Errorf("plane: %w", err)
	}
	apiServer := &envtest.APIServer{
		Path:    apiPath,
		CertDir: certDir,
		Out:     apiLog,
		Err:     apiLog,
	}
	apiServer.SecureServing.ListenAddr = envtest.ListenAddr{Address: "127.0.0.1", Port: strconv.Itoa(port)}
	if len(o.AuditWritesOf) > 0 {
		flags, err := AuditFlags(filepath.Join(o.StateDir, "management"), filepath.Join(p.LogDir(), AuditLogFile), o.AuditWritesOf)
		if err != nil {
			return err
		}
		for flag, value := range flags {
			apiServer.Configure().Set(flag, value)
		}
	}
	// The operator's webhook: envtest installs the configuration with a URL on loopback and a
	// CA of its own, and writes the serving certificate the operator gets (startOperator).
	var webhookOpts envtest.WebhookInstallOptions
	if o.WithOperator {
		vwcs, err := webhooks.LoadValidatingWebhookConfigurations(o.WebhookConfigDir)
		if err != nil {
			return fmt.Errorf("plane: operator webhook: %w", err)
		}
		webhookOpts = envtest.WebhookInstallOptions{ValidatingWebhooks: vwcs, LocalServingHost: "127.0.0.1"}
	}
	if p.crds, err = loadCRDs(o.CRDDirs); err != nil {
		return err
	}
	p.crds.addStandIns(o.StandInKinds)
	// A scheme without CAPI's hub types, so that envtest does not point the CRDs at a
	// conversion webhook that nothing serves.
	envScheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(envScheme); err != nil {
		return err
	}
	p.env = &envtest.Environment{
		BinaryAssetsDirectory: o.BinDir,
		ControlPlane: envtest.ControlPlane{
			APIServer: apiServer,
			Etcd: &envtest.Etcd{
				Path:    etcdPath,
				DataDir: dataDir,
				Out:     etcdLog,
				Err:     etcdLog,
			},
		},
		Scheme:                envScheme,
		WebhookInstallOptions: webhookOpts,
		CRDInstallOptions:     envtest.CRDInstallOptions{Paths: p.crds.paths, CRDs: p.crds.built, ErrorIfPathMissing: true},
		// A bound for a hang (also of RestartAPIServer): on a 2-core machine running both test
		// suites the management API server took more than 90 s to answer again.
		ControlPlaneStartTimeout: 3 * time.Minute,
		ControlPlaneStopTimeout:  proc.DefaultStopTimeout,
	}
	proc.OnSpawnerThread(func() { _, err = p.env.Start() })
	if err != nil {
		return fmt.Errorf("plane: start management API server (log: %s): %w", filepath.Join(p.LogDir(), "kube-apiserver.log"), err)
	}
	user, err := p.env.AddUser(envtest.User{Name: "plane-admin", Groups: []string{"system:masters"}}, &rest.Config{QPS: 200, Burst: 400})
	if err != nil {
		return fmt.Errorf("plane: add admin user: %w", err)
	}
	p.cfg = user.Config()
	kc, err := kubeconfigFor(p.cfg, "local-plane", "plane-admin", nil)
	if err != nil {
		return err
	}
	p.kubeconfig = filepath.Join(o.StateDir, KubeconfigFile)
	if err := os.WriteFile(p.kubeconfig, kc, 0o600); err != nil {
		return fmt.Errorf("plane: write kubeconfig: %w", err)
	}
	if p.client, err = client.New(p.cfg, client.Options{Scheme: p.scheme}); err != nil {
		return fmt.Errorf("plane: client: %w", err)
	}
	return nil
}

// kubeconfigFor writes a kubeconfig for the API server of cfg as user, authenticated with auth,
// or with cfg's client certificate when auth is nil.
func kubeconfigFor(cfg *rest.Config, cluster, user string, auth *clientcmdapi.AuthInfo) ([]byte, error) {
	if auth == nil {
		auth = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters[cluster] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[user] = auth
	ctxName := user + "@" + cluster
	kc.Contexts[ctxName] = &clientcmdapi.Context{Cluster: cluster, AuthInfo: user}
	kc.CurrentContext = ctxName
	b, err := clientcmd.Write(*kc)
	if err != nil {
		return nil, fmt.Errorf("plane: write kubeconfig: %w", err)
	}
	return b, nil
}

// startFlux starts source-, kustomize- and helm-controller and waits until each is ready.
func (p *Plane) startFlux(ctx context.Context) error {
	o := p.opts
	ports, err := proc.FreePorts(7)
	if err != nil {
		return err
	}
	addr := func(i int) string { return "127.0.0.1:" + strconv.Itoa(ports[i]) }
	storage := filepath.Join(o.StateDir, "flux", "source-storage")
	if err := os.MkdirAll(storage, 0o755); err != nil {
		return fmt.Errorf("plane: source-controller storage: %w", err)
	}
	p.sourceStorageAddr = addr(0)
	watchAll := "--watch-all-namespaces=true"
	runtimeNS := FluxNamespace
	if o.FluxWatchNamespace != "" {
		watchAll = "--watch-all-namespaces=false"
		runtimeNS = o.FluxWatchNamespace
	}
	type ctl struct {
		name       string
		args       []string
		env        []string
		healthAddr string
	}
	ctls := []ctl{
		{
			name: "source-controller",
			args: []string{
				"--storage-path=" + storage,
				"--storage-addr=" + addr(0),
				"--storage-adv-addr=" + addr(0),
				"--metrics-addr=" + addr(1),
				"--health-addr=" + addr(2),
			},
			healthAddr: addr(2),
		},
		{
			name:       "kustomize-controller",
			args:       []string{"--metrics-addr=" + addr(3), "--health-addr=" + addr(4)},
			env:        []string{"SOURCE_CONTROLLER_LOCALHOST=" + addr(0)},
			healthAddr: addr(4),
		},
		{
			name:       "helm-controller",
			args:       []string{"--metrics-addr=" + addr(5), "--health-addr=" + addr(6)},
			env:        []string{"SOURCE_CONTROLLER_LOCALHOST=" + addr(0)},
			healthAddr: addr(6),
		},
	}
	for _, c := range ctls {
		home := filepath.Join(o.StateDir, "home", c.name)
		if err := os.MkdirAll(home, 0o755); err != nil {
			return fmt.Errorf("plane: %w", err)
		}
		args := append(slices.Clone(c.args), "--enable-leader-election=false", watchAll, "--log-encoding=console")
		if c.name != "source-controller" {
			// Flux's multi-tenancy lockdown: no reference across namespaces, and every object
			// without spec.serviceAccountName applied as the namespace's default account.
			args = append(args, "--no-cross-namespace-refs=true", "--default-service-account="+o.FluxServiceAccount)
			if o.FluxConcurrent > 0 {
				args = append(args, "--concurrent="+strconv.Itoa(o.FluxConcurrent))
			}
		}
		spec := proc.Spec{
			Name: c.name,
			Path: filepath.Join(o.BinDir, c.name),
			Args: args,
			Env: append([]string{
				"KUBECONFIG=" + p.kubeconfig,
				"RUNTIME_NAMESPACE=" + runtimeNS,
				"HOME=" + home,
			}, c.env...),
			LogFile: filepath.Join(p.LogDir(), c.name+".log"),
		}
		readyz := "http://" + c.healthAddr + "/readyz"
		ready := func(ctx context.Context, pr *proc.Process) error { return proc.WaitHTTP(ctx, readyz, pr) }
		p.flux = append(p.flux, newService(spec, ready, p.record, p.log))
	}
	return startAll(ctx, p.flux)
}

// startAll starts the services at once and waits until all are ready.
func startAll(ctx context.Context, svcs []*service) error {
	if err := eachService(svcs, func(s *service) error { return s.start(ctx) }); err != nil {
		return fmt.Errorf("plane: %w", err)
	}
	return nil
}

// managementControllers are kube-controller-manager's controllers on the management API
// server. envtest alone runs none. Those every real management cluster has and the operator
// relies on: the garbage collector (owner references: a release's Flux objects, a
// ClusterAddon's ConfigMap) and the namespace controller. Those that make a Deployment's Pods
// run (kwok plays their kubelet) and report it Available: deployment and replicaset, and the
// node lifecycle controller, which lifts the node.kubernetes.io/not-ready:NoSchedule taint the
// API server puts on every new Node once kwok reports it Ready (no Pod is scheduled without).
// No ServiceAccount controller: envtest's API server runs without the ServiceAccount admission
// plugin, so Pods need no "default" ServiceAccount.
var managementControllers = []string{
	"garbage-collector-controller", "namespace-controller",
	"deployment-controller", "replicaset-controller", "node-lifecycle-controller",
}

// startManagementComponents runs kube-controller-manager, kube-scheduler and kwok against the
// management API server and creates its Nodes (package kubesim).
func (p *Plane) startManagementComponents(ctx context.Context) error {
	sim, err := kubesim.Start(ctx, p.simOptions())
	if err != nil {
		return fmt.Errorf("plane: management API server: %w", err)
	}
	p.mu.Lock()
	p.sim = sim
	p.mu.Unlock()
	return nil
}

// simOptions are the options of the management controller manager, scheduler and kwok.
func (p *Plane) simOptions() kubesim.Options {
	o := p.opts
	return kubesim.Options{
		Name:             "management",
		BinDir:           o.BinDir,
		KwokStagesDir:    o.KwokStagesDir,
		Kubeconfig:       p.kubeconfig,
		Dir:              filepath.Join(o.StateDir, "management"),
		LogDir:           p.LogDir(),
		Controllers:      managementControllers,
		Nodes:            o.ManagementNodes,
		OnProcessStarted: p.record,
	}
}

// startLocalInfra runs the localinfra controller in this process.
func (p *Plane) startLocalInfra(ctx context.Context) error {
	o := p.opts
	mgr, err := ctrl.NewManager(p.cfg, ctrl.Options{
		Scheme:                 p.scheme,
		Logger:                 o.Logger.WithName("localinfra"),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		LeaderElection:         false,
	})
	if err != nil {
		return fmt.Errorf("plane: localinfra manager: %w", err)
	}
	p.infra = localinfra.NewReconciler(mgr.GetClient(), localinfra.Options{
		BinDir:              o.BinDir,
		KwokStagesDir:       o.KwokStagesDir,
		StateDir:            filepath.Join(o.StateDir, "clusters"),
		LogDir:              filepath.Join(p.LogDir(), "clusters"),
		Nodes:               o.WorkloadNodes,
		OnProcessStarted:    p.record,
		FluxServiceAccounts: []string{o.FluxServiceAccount},
		ProviderContract:    o.WithCAPI,
	})
	if err := p.infra.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("plane: localinfra controller: %w", err)
	}
	// The machine images of OpenStack stacks, where the plane serves the stand-in Image.
	for _, gvk := range o.StandInKinds {
		if gvk == localinfra.ImageGVK {
			if err := (&localinfra.ImageReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
				return fmt.Errorf("plane: localinfra image controller: %w", err)
			}
		}
	}
	mgrCtx, cancel := context.WithCancel(context.Background())
	p.mgrCancel = cancel
	p.mgrDone = make(chan error, 1)
	go func() { p.mgrDone <- mgr.Start(mgrCtx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return errors.New("plane: localinfra cache did not sync")
	}
	return nil
}

// operatorAddrs are the addresses of one operator replica.
type operatorAddrs struct {
	metrics, health, webhook string
	webhookPort              int
}

// startOperator sets the operator up (its identity, the API proxy, the webhook balancer) and
// starts its replicas, waiting until each is ready unless Options.SkipOperatorReadyCheck.
func (p *Plane) startOperator(ctx context.Context) error {
	o := p.opts
	var err error
	if p.operatorKubeconfig, err = p.setupOperatorIdentity(ctx); err != nil {
		return err
	}
	p.operatorAPIKubeconfig = p.operatorKubeconfig
	if o.OperatorAPIProxy {
		if p.operatorAPIKubeconfig, err = p.startAPIProxy(ctx); err != nil {
			return err // names the fault proxy
		}
	}
	replicas := max(o.OperatorReplicas, 1)
	ports, err := proc.FreePorts(3 * replicas)
	if err != nil {
		return err
	}
	wh := p.env.WebhookInstallOptions
	backends := make([]string, replicas)
	for i := range replicas {
		addr := func(j int) string { return net.JoinHostPort(wh.LocalServingHost, strconv.Itoa(ports[3*i+j])) }
		a := operatorAddrs{metrics: addr(0), health: addr(1), webhook: addr(2), webhookPort: ports[3*i+2]}
		p.operatorAddrs = append(p.operatorAddrs, a)
		backends[i] = a.webhook
		p.operators = append(p.operators, p.operatorService(i, a))
	}
	// envtest pointed the webhook configuration at this address: the replicas are behind it.
	p.operatorWebhookAddr = net.JoinHostPort(wh.LocalServingHost, strconv.Itoa(wh.LocalServingPort))
	if p.webhookLB, err = startBalancer(p.operatorWebhookAddr, backends, p.log.WithName("webhook-balancer")); err != nil {
		return fmt.Errorf("plane: operator webhook: %w", err)
	}
	if err := startAll(ctx, p.operators); err != nil {
		return err
	}
	if o.WithCAPI {
		// CAPI (RuntimeSDK) discovers and calls the operator's Runtime Extension, served by
		// its webhook server with the CA envtest made.
		ec, err := hooks.ExtensionConfig("https://"+p.operatorWebhookAddr, wh.LocalServingCAData)
		if err != nil {
			return fmt.Errorf("plane: %w", err)
		}
		if err := p.client.Create(ctx, ec); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("plane: create ExtensionConfig %s: %w", ec.Name, err)
		}
	}
	return nil
}

// operatorService is operator replica i, listening on a.
func (p *Plane) operatorService(i int, a operatorAddrs) *service {
	o := p.opts
	wh := p.env.WebhookInstallOptions
	name := OperatorProcessName
	if i > 0 {
		name += "-" + strconv.Itoa(i)
	}
	args := append([]string{
		"--metrics-bind-address=" + a.metrics,
		"--health-probe-bind-address=" + a.health,
		"--enable-webhooks",
		"--webhook-host=" + wh.LocalServingHost,
		"--webhook-port=" + strconv.Itoa(a.webhookPort),
		"--webhook-cert-dir=" + wh.LocalServingCertDir,
		"--default-service-account=" + o.FluxServiceAccount,
		// The plane runs Flux's controllers as processes, locked down (startFlux): there are no
		// Deployments to read.
		"--flux-lockdown=assumed",
		// The plane's forge and Git server listen on loopback over plain http: the proposal
		// token may go there, and nowhere else over http.
		"--forge-allow-loopback-http",
	}, o.OperatorArgs...)
	if p.extClient.CA != "" {
		// Only CAPI, with its client certificate, is served by the Runtime Extension.
		args = append(args, "--runtime-extension-client-ca-file="+p.extClient.CA)
	}
	spec := proc.Spec{
		Name: name,
		Path: o.OperatorPath,
		Args: args,
		Env: append([]string{
			"KUBECONFIG=" + p.operatorAPIKubeconfig,
			// Artifact URLs name source-controller's in-cluster address; reach it here.
			"SOURCE_CONTROLLER_LOCALHOST=" + p.sourceStorageAddr,
		}, o.OperatorEnv...),
		LogFile: filepath.Join(p.LogDir(), name+".log"),
	}
	var ready func(context.Context, *proc.Process) error
	if !o.SkipOperatorReadyCheck {
		ready = func(ctx context.Context, pr *proc.Process) error {
			if err := proc.WaitHTTP(ctx, "http://"+a.health+"/readyz", pr); err != nil {
				return err
			}
			if err := waitTLS(ctx, a.webhook, wh.LocalServingCAData, pr); err != nil {
				return fmt.Errorf("webhook not serving: %w", err)
			}
			return nil
		}
	}
	return newService(spec, ready, p.record, p.log)
}

// RestartOperator stops the operator's replicas gracefully and starts them again (same flags,
// ports and log files, appended), waiting until they are ready: tests use it to check that a
// restart loses and repeats nothing.
func (p *Plane) RestartOperator(ctx context.Context) error {
	if err := p.StopOperator(false); err != nil {
		return err
	}
	return p.StartOperator(ctx)
}

// KillOperator kills the operator's replicas with SIGKILL (no graceful shutdown, as a crash)
// and starts them again, waiting until they are ready.
func (p *Plane) KillOperator(ctx context.Context) error {
	if err := p.StopOperator(true); err != nil {
		return err
	}
	return p.StartOperator(ctx)
}

// waitTLS polls addr until a TLS handshake verified against the CA caPEM succeeds, the
// process p exits, or ctx is done.
func waitTLS(ctx context.Context, addr string, caPEM []byte, p *proc.Process) error {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return errors.New("no CA certificate for the webhook")
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	dialer := &tls.Dialer{
		NetDialer: &net.Dialer{Timeout: 2 * time.Second},
		Config:    &tls.Config{RootCAs: pool, ServerName: host, MinVersion: tls.VersionTLS12},
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		conn, err := dialer.DialContext(ctx, "tcp", addr)
		if err == nil {
			return conn.Close()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for TLS on %s: %w (last: %v)", addr, ctx.Err(), err)
		case <-p.Done():
			return fmt.Errorf("wait for TLS on %s: %w", addr, p.Exited())
		case <-tick.C:
		}
	}
}

// Stop stops everything the plane started: the operator, the localinfra controller and all
// workload clusters, the Flux controllers, the management API server's controller manager,
// scheduler and kwok, the forge, the Git server and the management API server. It
// is idempotent and safe to call on a partly started plane.
func (p *Plane) Stop() error {
	p.stopOnce.Do(func() {
		var errs []error
		if err := closeAll(slices.Concat(p.operators, p.instanceServices())); err != nil {
			errs = append(errs, err)
		}
		if p.webhookLB != nil {
			if err := p.webhookLB.Close(); err != nil {
				errs = append(errs, err)
			}
		}
		if p.apiProxy != nil {
			if err := p.apiProxy.Close(); err != nil {
				errs = append(errs, fmt.Errorf("operator API proxy: %w", err))
			}
		}
		for _, pr := range []*proc.Process{p.capi, p.providerWebhooks} {
			if pr != nil {
				if err := pr.Stop(proc.DefaultStopTimeout); err != nil {
					errs = append(errs, err)
				}
			}
		}
		if p.mgrCancel != nil {
			p.mgrCancel()
			select {
			case err := <-p.mgrDone:
				if err != nil {
					errs = append(errs, fmt.Errorf("localinfra manager: %w", err))
				}
			case <-time.After(managerStopTimeout):
				errs = append(errs, errors.New("localinfra manager did not stop in time"))
			}
		}
		if p.infra != nil {
			if err := p.infra.Shutdown(); err != nil {
				errs = append(errs, err)
			}
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		stops := make([]func() error, 0, len(p.flux)+2)
		for _, f := range p.flux {
			stops = append(stops, f.close)
		}
		p.mu.Lock()
		sim := p.sim
		p.mu.Unlock()
		if sim != nil {
			stops = append(stops, sim.Stop)
		}
		if p.forge != nil {
			stops = append(stops, p.forge.Stop)
		}
		if p.oci != nil {
			stops = append(stops, p.oci.Stop)
		}
		for _, stop := range stops {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := stop(); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if p.git != nil {
			if err := p.git.Close(); err != nil {
				errs = append(errs, err)
			}
		}
		if p.env != nil {
			if err := p.env.Stop(); err != nil {
				errs = append(errs, fmt.Errorf("stop management API server: %w", err))
			}
		}
		for _, f := range p.logFiles {
			_ = f.Close()
		}
		if len(errs) == 0 && p.registry != nil {
			if err := p.registry.Remove(); err != nil {
				errs = append(errs, err)
			}
		}
		if err := errors.Join(errs...); err != nil {
			p.stopErr = fmt.Errorf("stop plane: %w", err)
		}
	})
	return p.stopErr
}

// StateDir is the plane's state directory.
func (p *Plane) StateDir() string { return p.opts.StateDir }

// LogDir is where the plane's processes log: <state-dir>/logs.
func (p *Plane) LogDir() string { return filepath.Join(p.opts.StateDir, "logs") }

// BinDir is the directory of the binaries the plane runs.
func (p *Plane) BinDir() string { return p.opts.BinDir }

// Kubeconfig is the path of the management cluster's kubeconfig file.
func (p *Plane) Kubeconfig() string { return p.kubeconfig }

// Config is a system:masters client configuration for the management API server.
func (p *Plane) Config() *rest.Config { return rest.CopyConfig(p.cfg) }

// Scheme is the scheme of Client (see NewScheme).
func (p *Plane) Scheme() *runtime.Scheme { return p.scheme }

// Client is a client for the management API server with the scheme of NewScheme.
func (p *Plane) Client() client.Client { return p.client }

// NewClient is a client for the management API server with the scheme of NewScheme and the
// kinds add registers (the operator's API, for a test suite).
func (p *Plane) NewClient(add ...func(*runtime.Scheme) error) (client.Client, error) {
	s := p.Scheme()
	for _, f := range add {
		if err := f(s); err != nil {
			return nil, err
		}
	}
	return client.New(p.Config(), client.Options{Scheme: s})
}

// RepoRoot is the checkout of this module the plane runs from (Options.RepoRoot).
func (p *Plane) RepoRoot() string { return p.opts.RepoRoot }

// Git is the plane's Git server.
func (p *Plane) Git() *gitserver.Server { return p.git }

// Forge is the plane's Gitea forge; nil without Options.WithForge.
func (p *Plane) Forge() *gitea.Forge { return p.forge }

// OCIRegistry is the plane's OCI registry (Options.WithRegistry), nil without it.
func (p *Plane) OCIRegistry() *registry.Server { return p.oci }

// SourceControllerStorageAddr is the host:port where source-controller serves artifacts.
func (p *Plane) SourceControllerStorageAddr() string { return p.sourceStorageAddr }

// OperatorHealthAddr is the health probe address of the operator's first replica ("" without
// the operator; see OperatorReplicaHealthAddr).
func (p *Plane) OperatorHealthAddr() string { return p.OperatorReplicaHealthAddr(0) }

// OperatorMetricsAddr is the metrics address of the operator's first replica ("" without the
// operator; see OperatorReplicaMetricsAddr).
func (p *Plane) OperatorMetricsAddr() string { return p.OperatorReplicaMetricsAddr(0) }

// OperatorReplicaHealthAddr is the health probe address of operator replica i ("" when there
// is no such replica). It stays the same when the replica is started again.
func (p *Plane) OperatorReplicaHealthAddr(i int) string {
	if i < 0 || i >= len(p.operatorAddrs) {
		return ""
	}
	return p.operatorAddrs[i].health
}

// OperatorReplicaMetricsAddr is the metrics address of operator replica i ("" when there is
// no such replica). It stays the same when the replica is started again.
func (p *Plane) OperatorReplicaMetricsAddr(i int) string {
	if i < 0 || i >= len(p.operatorAddrs) {
		return ""
	}
	return p.operatorAddrs[i].metrics
}

// OperatorWebhookAddr is the host:port where the API server calls the operator's webhook ("" without
// the operator): the plane forwards each connection to a replica that accepts it.
func (p *Plane) OperatorWebhookAddr() string { return p.operatorWebhookAddr }

// ProcessInfo describes one process of the plane.
type ProcessInfo struct {
	Name    string
	Pid     int
	LogFile string
	// Restarts counts the starts of the process after it exited unasked (Flux controllers and
	// operator replicas are started again, as a kubelet restarts containers).
	Restarts int
	// Running is false for a process that was stopped (StopFlux, StopOperator, ...) or that
	// exited and was not started again yet.
	Running bool
}

// Processes lists the processes the plane started itself (the management API server's
// controller manager, scheduler and kwok, the Flux controllers, CAPI, the forge and the
// operator; not envtest's nor the workload clusters').
func (p *Plane) Processes() []ProcessInfo {
	var out []ProcessInfo
	add := func(pr *proc.Process, restarts int) {
		if pr != nil {
			out = append(out, ProcessInfo{Name: pr.Name(), Pid: pr.Pid(), LogFile: pr.LogFile(), Restarts: restarts, Running: pr.Exited() == nil})
		}
	}
	p.mu.Lock()
	sim := p.sim
	p.mu.Unlock()
	if sim != nil {
		for _, pr := range sim.Processes() {
			add(pr, 0)
		}
	}
	if p.forge != nil {
		add(p.forge.Process(), 0)
	}
	for _, s := range slices.Concat(p.flux, p.operators, p.instanceServices()) {
		add(s.process(), s.restartCount())
	}
	add(p.capi, 0)
	add(p.providerWebhooks, 0)
	return out
}

// WorkloadConfig returns a client configuration for the workload cluster of Cluster
// namespace/name, read from its kubeconfig Secret.
func (p *Plane) WorkloadConfig(ctx context.Context, namespace, name string) (*rest.Config, error) {
	secret := &corev1.Secret{}
	key := types.NamespacedName{Namespace: namespace, Name: localinfra.KubeconfigSecretName(name)}
	if err := p.client.Get(ctx, key, secret); err != nil {
		return nil, fmt.Errorf("kubeconfig Secret %s: %w", key, err)
	}
	data, ok := secret.Data["value"]
	if !ok {
		return nil, fmt.Errorf("kubeconfig Secret %s has no key \"value\"", key)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig Secret %s: %w", key, err)
	}
	return cfg, nil
}

// WorkloadClient returns a client (core Kubernetes types) for the workload cluster of
// Cluster namespace/name, read from its kubeconfig Secret.
func (p *Plane) WorkloadClient(ctx context.Context, namespace, name string) (client.Client, error) {
	cfg, err := p.WorkloadConfig(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		return nil, fmt.Errorf("client for workload cluster %s/%s: %w", namespace, name, err)
	}
	return c, nil
}
