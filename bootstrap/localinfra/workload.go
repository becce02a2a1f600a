package localinfra

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/clusterstack-io/clusterstack-operator/bootstrap/kubesim"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/proc"
)

const (
	// DefaultStartTimeout bounds how long starting one workload cluster may take. A start takes
	// 10 to 60 s, and up to 2 min on a 2-core machine running both test suites; the bound is for
	// a start that hangs. A start cut off at its bound begins again from nothing, which costs a
	// busy machine more than waiting would have: on that machine a CI run cut off two starts of
	// one workload cluster, each after its API server was serving.
	DefaultStartTimeout = 6 * time.Minute
	// componentStartTimeout bounds each envtest component (etcd, kube-apiserver) until it is
	// ready; on that machine an API server took 76 s to serve and was cut off before it was ready.
	componentStartTimeout = 3 * time.Minute
	// stopTimeout is the grace period of each process on Stop.
	stopTimeout = 10 * time.Second
	// apiServerStopGrace is how long StopAPIServer gives kube-apiserver after SIGTERM.
	apiServerStopGrace = 3 * time.Second
)

// quietAPIServerFlags turn off what a single-member workload API server does on its own every
// few seconds for features no local cluster uses: API priority and fairness (its configuration
// controller and queues), the API server identity leases (and the mixed-version proxy that needs
// them) and the reconciler of the default/kubernetes Endpoints (nothing runs in a Pod here).
// Measured idle, they cut a workload API server's and its etcd's CPU by about a fifth; the test
// suites run up to 25 such clusters at once on 2 cores. Requests, RBAC, admission and watches
// are unchanged.
var quietAPIServerFlags = map[string]string{
	"enable-priority-and-fairness": "false",
	"endpoint-reconciler-type":     "none",
	"feature-gates":                "APIServerIdentity=false,UnknownVersionInteroperabilityProxy=false",
}

// workloadControllers are kube-controller-manager's controllers in a workload cluster: those
// that make what Helm and Flux deliver ready as kstatus (their readiness checks) sees it —
// deployment and replicaset, daemonset, statefulset, job, disruption (a PodDisruptionBudget's
// status), and the node lifecycle controller, which lifts the not-ready taint the API server
// puts on every new Node once kwok reports it Ready (no Pod is scheduled without) — and those
// deletion needs: the garbage collector (a Deployment's ReplicaSets and Pods after Helm
// uninstalls it) and the namespace controller. No ServiceAccount controller: envtest's API
// server runs without the ServiceAccount admission plugin. Measured idle against all of them
// ('*'), the controller manager's CPU drops by about half (0.24-0.34 to 0.12-0.15 CPU-s per
// minute), the whole cluster's by about a tenth.
var workloadControllers = []string{
	"deployment-controller", "replicaset-controller", "daemonset-controller", "statefulset-controller",
	"job-controller", "disruption-controller", "garbage-collector-controller", "namespace-controller",
	"node-lifecycle-controller",
}

// quietEtcdFlags make a workload cluster's single-member etcd tick its raft loop once a second
// instead of ten times (heartbeat interval 1 s, election timeout 10 s; alone, it elects itself
// at once at start). Measured idle, etcd's CPU drops by a seventh to a third.
var quietEtcdFlags = map[string]string{
	"heartbeat-interval": "1000",
	"election-timeout":   "10000",
}

// WorkloadOptions configures a workload cluster.
type WorkloadOptions struct {
	// Name names the cluster in its kubeconfig and its Nodes ("<name>-node-<i>").
	Name string
	// BinDir holds kube-apiserver, etcd, kube-controller-manager, kube-scheduler and kwok.
	BinDir string
	// KwokStagesDir holds kwok Stage manifests (*.yaml, one stage per file), for example
	// node-initialize.yaml, node-heartbeat.yaml and the pod-*.yaml of kwok's general stages.
	KwokStagesDir string
	// Dir holds the cluster's state (etcd data, certificates, the components' kubeconfig). It
	// is removed by Stop.
	Dir string
	// LogDir receives one log file per process (etcd.log, kube-apiserver.log, ...).
	LogDir string
	// Nodes is how many Nodes to create; 1 when zero.
	Nodes int
	// StartTimeout bounds the whole start; DefaultStartTimeout when zero.
	StartTimeout time.Duration
	// OnProcessStarted, when set, is called after each process was started (the plane uses
	// it to record process groups for cleanup after a crash).
	OnProcessStarted func()
	// AdminUsers are bound to cluster-admin in the workload cluster (ClusterRoleBinding
	// AdminBindingName). The local plane lists the Flux identities of the Cluster's namespace
	// here: Flux impersonates a HelmRelease's or Kustomization's service account on the cluster
	// its kubeConfig points to, so the workload cluster must grant that user what the addons
	// need, as a real cluster's bootstrap (kubeadm postKubeadmCommands, a ClusterResourceSet)
	// would.
	AdminUsers []string
}

// AdminBindingName is the ClusterRoleBinding granting WorkloadOptions.AdminUsers cluster-admin.
const AdminBindingName = "clusterstack-flux-admin"

// WorkloadCluster is a running workload cluster: an API server with etcd, a controller
// manager, a scheduler and kwok, all as local processes.
type WorkloadCluster struct {
	opts      WorkloadOptions
	env       *envtest.Environment
	apiServer *envtest.APIServer
	cfg       *rest.Config
	host      string
	port      int32
	logFiles  []*os.File

	// mu guards sim, apiDown and stopped: StopAPIServer and StartAPIServer change them while
	// the Reconciler checks the processes.
	mu      sync.Mutex
	sim     *kubesim.Components
	apiDown bool // the API server was stopped on purpose (StopAPIServer)
	stopped bool

	stopOnce sync.Once
	stopErr  error
}

// StartWorkloadCluster starts a workload cluster and returns once its Nodes are Ready. On
// error, whatever was started is stopped again.
func StartWorkloadCluster(ctx context.Context, opts WorkloadOptions) (_ *WorkloadCluster, retErr error) {
	if opts.Name == "" {
		return nil, errors.New("workload cluster: name is empty")
	}
	if opts.Nodes <= 0 {
		opts.Nodes = 1
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	if opts.OnProcessStarted == nil {
		opts.OnProcessStarted = func() {}
	}
	for _, bin := range append([]string{"kube-apiserver", "etcd"}, kubesim.Binaries...) {
		if _, err := os.Stat(filepath.Join(opts.BinDir, bin)); err != nil {
			return nil, fmt.Errorf("workload cluster %s: %s not found in %s (run `make tools`): %w", opts.Name, bin, opts.BinDir, err)
		}
	}
	// Checked here too, to fail before the API server starts.
	if _, err := kubesim.StageFiles(opts.KwokStagesDir); err != nil {
		return nil, fmt.Errorf("workload cluster %s: %w", opts.Name, err)
	}
	for _, d := range []string{opts.Dir, opts.LogDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("workload cluster %s: %w", opts.Name, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()

	w := &WorkloadCluster{opts: opts}
	defer func() {
		if retErr != nil {
			if err := w.Stop(); err != nil {
				retErr = fmt.Errorf("%w (and stopping it again: %v)", retErr, err)
			}
		}
	}()

	if err := w.startAPIServer(); err != nil {
		return nil, err
	}
	opts.OnProcessStarted()

	kc, err := w.Kubeconfig()
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(w.kubeconfigPath(), kc, 0o600); err != nil {
		return nil, fmt.Errorf("workload cluster %s: write kubeconfig: %w", opts.Name, err)
	}

	// kube-controller-manager (workloadControllers), kube-scheduler, kwok and the Nodes.
	sim, err := kubesim.Start(ctx, w.simOptions())
	if err != nil {
		return nil, fmt.Errorf("workload cluster %s: %w", opts.Name, err)
	}
	w.mu.Lock()
	w.sim = sim
	w.mu.Unlock()
	if err := w.bindAdmins(ctx); err != nil {
		return nil, err
	}
	return w, nil
}

// simOptions are the options of the cluster's controller manager (workloadControllers),
// scheduler and kwok.
func (w *WorkloadCluster) simOptions() kubesim.Options {
	o := w.opts
	return kubesim.Options{
		Name:             o.Name,
		BinDir:           o.BinDir,
		KwokStagesDir:    o.KwokStagesDir,
		Kubeconfig:       w.kubeconfigPath(),
		Dir:              o.Dir,
		LogDir:           o.LogDir,
		Controllers:      workloadControllers,
		Nodes:            o.Nodes,
		OnProcessStarted: o.OnProcessStarted,
	}
}

// kubeconfigPath is the admin kubeconfig the cluster's components use.
func (w *WorkloadCluster) kubeconfigPath() string {
	return filepath.Join(w.opts.Dir, "admin.kubeconfig")
}

func (w *WorkloadCluster) startAPIServer() error {
	o := w.opts
	port, err := proc.FreePort()
	if err != nil {
		return err
	}
	apiLog, err := w.openLog("kube-apiserver.log")
	if err != nil {
		return err
	}
	etcdLog, err := w.openLog("etcd.log")
	if err != nil {
		return err
	}
	certDir, dataDir := filepath.Join(o.Dir, "kube-apiserver"), filepath.Join(o.Dir, "etcd")
	for _, d := range []string{certDir, dataDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("workload cluster %s: %w", o.Name, err)
		}
	}
	// envtest starts these two itself: wrap them so that they die with the plane process.
	wrappers := filepath.Join(o.Dir, "bin")
	apiPath, err := proc.DeathSignalWrapper(wrappers, filepath.Join(o.BinDir, "kube-apiserver"))
	if err != nil {
		return fmt.Errorf("workload cluster %s: %w", o.Name, err)
	}
	etcdPath, err := proc.DeathSignalWrapper(wrappers, filepath.Join(o.BinDir, "etcd"))
	if err != nil {
		return fmt.Errorf("workload cluster %s: %w", o.Name, err)
	}
	apiServer := &envtest.APIServer{
		Path:    apiPath,
		CertDir: certDir,
		Out:     apiLog,
		Err:     apiLog,
	}
	apiServer.SecureServing.ListenAddr = envtest.ListenAddr{Address: "127.0.0.1", Port: strconv.Itoa(port)}
	for flag, value := range quietAPIServerFlags {
		apiServer.Configure().Set(flag, value)
	}
	w.apiServer = apiServer
	etcd := &envtest.Etcd{
		Path:    etcdPath,
		DataDir: dataDir,
		Out:     etcdLog,
		Err:     etcdLog,
	}
	for flag, value := range quietEtcdFlags {
		etcd.Configure().Set(flag, value)
	}
	w.env = &envtest.Environment{
		BinaryAssetsDirectory: o.BinDir,
		ControlPlane: envtest.ControlPlane{
			APIServer: apiServer,
			Etcd:      etcd,
		},
		ControlPlaneStartTimeout: componentStartTimeout,
		ControlPlaneStopTimeout:  stopTimeout,
	}
	proc.OnSpawnerThread(func() { _, err = w.env.Start() })
	if err != nil {
		return fmt.Errorf("workload cluster %s: start API server (log: %s): %w", o.Name, filepath.Join(o.LogDir, "kube-apiserver.log"), err)
	}
	user, err := w.env.AddUser(envtest.User{Name: "localinfra-admin", Groups: []string{"system:masters"}}, &rest.Config{QPS: 100, Burst: 200})
	if err != nil {
		return fmt.Errorf("workload cluster %s: add admin user: %w", o.Name, err)
	}
	w.cfg = user.Config()
	u, err := url.Parse(w.cfg.Host)
	if err != nil {
		return fmt.Errorf("workload cluster %s: API server URL %q: %w", o.Name, w.cfg.Host, err)
	}
	host, portStr, err := net.SplitHostPort(u.Host)
	if err != nil {
		return fmt.Errorf("workload cluster %s: API server URL %q: %w", o.Name, w.cfg.Host, err)
	}
	p, err := strconv.ParseInt(portStr, 10, 32)
	if err != nil {
		return fmt.Errorf("workload cluster %s: API server port %q: %w", o.Name, portStr, err)
	}
	w.host, w.port = host, int32(p)
	return nil
}

func (w *WorkloadCluster) openLog(name string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(w.opts.LogDir, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("workload cluster %s: open log: %w", w.opts.Name, err)
	}
	w.logFiles = append(w.logFiles, f)
	return f, nil
}

// EnsureNode creates the kwok Node name with providerID (a Machine's node, found by CAPI
// through its providerID) reporting kubeletVersion (the Machine's version, which CAPI compares
// during upgrades), unless it exists. kwok makes it Ready.
func (w *WorkloadCluster) EnsureNode(ctx context.Context, name, providerID, kubeletVersion string) error {
	cs, err := kubernetes.NewForConfig(w.cfg)
	if err != nil {
		return fmt.Errorf("workload cluster %s: client: %w", w.opts.Name, err)
	}
	if _, err := cs.CoreV1().Nodes().Create(ctx, kubesim.Node(name, providerID, kubeletVersion), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("workload cluster %s: create node %s: %w", w.opts.Name, name, err)
	}
	return nil
}

// Config is a system:masters client configuration for the workload API server.
func (w *WorkloadCluster) Config() *rest.Config { return rest.CopyConfig(w.cfg) }

// Endpoint is the host and port of the workload API server.
func (w *WorkloadCluster) Endpoint() (host string, port int32) { return w.host, w.port }

// Kubeconfig returns a kubeconfig for the workload API server with a system:masters user,
// named like CAPI names them: cluster "<name>", user "<name>-admin", context
// "<name>-admin@<name>".
func (w *WorkloadCluster) Kubeconfig() ([]byte, error) {
	name := w.opts.Name
	user := name + "-admin"
	ctxName := user + "@" + name
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{
		Server:                   w.cfg.Host,
		CertificateAuthorityData: w.cfg.CAData,
	}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{
		ClientCertificateData: w.cfg.CertData,
		ClientKeyData:         w.cfg.KeyData,
	}
	cfg.Contexts[ctxName] = &clientcmdapi.Context{Cluster: name, AuthInfo: user}
	cfg.CurrentContext = ctxName
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("workload cluster %s: write kubeconfig: %w", name, err)
	}
	return b, nil
}

// Exited reports an error when one of the cluster's processes (other than envtest's) has
// exited, nil while all run, and nil while the API server is down on purpose (StopAPIServer):
// the controller manager, the scheduler and kwok may give up meanwhile, and StartAPIServer
// starts them again.
func (w *WorkloadCluster) Exited() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sim == nil || w.apiDown {
		return nil
	}
	return w.sim.Exited()
}

// APIServerDown tells whether the API server was stopped with StopAPIServer and not started
// again.
func (w *WorkloadCluster) APIServerDown() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.apiDown
}

// StopAPIServer stops the cluster's kube-apiserver (SIGTERM), as an outage of a workload
// cluster's control plane, and leaves etcd, the controller manager, the scheduler and kwok
// running: clients of the kubeconfig get "connection refused" until StartAPIServer. Until
// then Exited reports nothing, so that the Reconciler does not start the cluster afresh. It
// is idempotent.
func (w *WorkloadCluster) StopAPIServer() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return fmt.Errorf("workload cluster %s: stop API server: the cluster was stopped", w.opts.Name)
	}
	if w.apiDown {
		return nil
	}
	w.apiDown = true
	pid := w.APIServerPid()
	if pid == 0 {
		if err := w.apiServer.Stop(); err != nil {
			return fmt.Errorf("workload cluster %s: stop API server: %w", w.opts.Name, err)
		}
		return nil
	}
	// kube-apiserver stops listening and drains its short requests at once on SIGTERM, then
	// waits up to its request timeout (60 s) for the watches its clients keep open: cut that
	// short.
	if err := proc.Terminate(pid, apiServerStopGrace); err != nil {
		return fmt.Errorf("workload cluster %s: stop API server: %w", w.opts.Name, err)
	}
	_ = w.apiServer.Stop() // envtest only notes the exit (or fails to signal the process that is gone)
	return nil
}

// APIServerPid is the process id of the cluster's kube-apiserver, 0 when it does not run.
func (w *WorkloadCluster) APIServerPid() int {
	pid, err := proc.ChildPid(filepath.Join(w.opts.BinDir, "kube-apiserver"), "--secure-port="+strconv.Itoa(int(w.port)))
	if err != nil {
		return 0
	}
	return pid
}

// StartAPIServer starts the kube-apiserver that StopAPIServer stopped again, with the same
// flags, port, certificates and etcd (the data is kept; the kubeconfig and its
// credentials stay valid), and returns once it is healthy. The controller manager, scheduler
// or kwok processes that exited meanwhile are started again (the Nodes are kept). It does
// nothing while the API server runs.
func (w *WorkloadCluster) StartAPIServer(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return fmt.Errorf("workload cluster %s: start API server: the cluster was stopped", w.opts.Name)
	}
	if !w.apiDown {
		return nil
	}
	// envtest keeps the serving certificates (in the cert dir), the client CA and the port,
	// and starts the same process again; it waits for /healthz.
	var err error
	proc.OnSpawnerThread(func() { err = w.apiServer.Start() })
	if err != nil {
		return fmt.Errorf("workload cluster %s: start API server again (log: %s): %w", w.opts.Name, filepath.Join(w.opts.LogDir, "kube-apiserver.log"), err)
	}
	w.apiDown = false
	w.opts.OnProcessStarted()
	if w.sim == nil || w.sim.Exited() == nil {
		return nil
	}
	if err := w.sim.Stop(); err != nil {
		return fmt.Errorf("workload cluster %s: stop the exited components: %w", w.opts.Name, err)
	}
	sim, err := kubesim.Start(ctx, w.simOptions())
	if err != nil {
		return fmt.Errorf("workload cluster %s: start controller manager, scheduler and kwok again: %w", w.opts.Name, err)
	}
	w.sim = sim
	return nil
}

// Stop stops all processes of the cluster and removes its state directory. It is idempotent.
func (w *WorkloadCluster) Stop() error {
	w.stopOnce.Do(func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.stopped = true
		var errs []error
		if w.sim != nil {
			if err := w.sim.Stop(); err != nil {
				errs = append(errs, err)
			}
		}
		if w.env != nil {
			if err := w.env.Stop(); err != nil {
				errs = append(errs, fmt.Errorf("stop API server and etcd: %w", err))
			}
		}
		for _, f := range w.logFiles {
			_ = f.Close()
		}
		if err := os.RemoveAll(w.opts.Dir); err != nil {
			errs = append(errs, err)
		}
		if err := errors.Join(errs...); err != nil {
			w.stopErr = fmt.Errorf("stop workload cluster %s: %w", w.opts.Name, err)
		}
	})
	return w.stopErr
}

// bindAdmins grants WorkloadOptions.AdminUsers cluster-admin (see there).
func (w *WorkloadCluster) bindAdmins(ctx context.Context) error {
	if len(w.opts.AdminUsers) == 0 {
		return nil
	}
	cs, err := kubernetes.NewForConfig(w.cfg)
	if err != nil {
		return fmt.Errorf("workload cluster %s: %w", w.opts.Name, err)
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: AdminBindingName},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
	}
	for _, u := range w.opts.AdminUsers {
		crb.Subjects = append(crb.Subjects, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: u})
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("workload cluster %s: bind %v to cluster-admin: %w", w.opts.Name, w.opts.AdminUsers, err)
	}
	return nil
}
