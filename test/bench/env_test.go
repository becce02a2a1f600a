package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/gitserver"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/plane"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/proc"
)

// benchEnv is what the benchmark runs on: a real kube-apiserver and etcd (envtest) with the
// operator's, Flux's and CAPI's CRDs, Flux's source-controller, a Git server and the operator
// binary, each a process of its own. No helm- or kustomize-controller and no workload clusters:
// the benchmark plays those (see fakeFlux).
type benchEnv struct {
	dir, logDir string
	cfg         *rest.Config
	kubeconfig  string
	scheme      *runtime.Scheme
	c           client.WithWatch
	git         *gitserver.Server

	source, manager *proc.Process
	managerSpec     proc.Spec
	managerStarts   int
	// auditLog is the management API server's audit log of the operator's writes, when
	// benchConfig.shipped asked for it.
	auditLog        string
	storageAddr     string
	metricsAddr     string
	probeAddr       string
	apiServerBinary string
}

// stopManager stops the operator (SIGTERM, as a rolling update would).
func (e *benchEnv) stopManager() error { return e.manager.Stop(30 * time.Second) }

// startManager starts the operator again with the same flags (its log in manager-<n>.log) and
// waits until it is ready.
func (e *benchEnv) startManager(ctx context.Context) error {
	e.managerStarts++
	spec := e.managerSpec
	spec.LogFile = filepath.Join(e.logDir, fmt.Sprintf("manager-%d.log", e.managerStarts+1))
	p, err := proc.Start(spec)
	if err != nil {
		return err
	}
	e.manager = p
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return proc.WaitHTTP(wctx, "http://"+e.probeAddr+"/readyz", p)
}

// startEnv starts everything; b.Cleanup stops it again, in reverse order, whatever happens.
func startEnv(ctx context.Context, b testing.TB, root string, cfg benchConfig) *benchEnv {
	b.Helper()
	bin := filepath.Join(root, "bin")
	manager := cfg.manager
	if manager == "" {
		manager = filepath.Join(bin, "manager")
	}
	for _, f := range []string{filepath.Join(bin, "kube-apiserver"), filepath.Join(bin, "etcd"), filepath.Join(bin, "source-controller"), manager} {
		if _, err := os.Stat(f); err != nil {
			b.Fatalf("%s missing: run `make tools build` (make bench does)", f)
		}
	}
	dir, err := os.MkdirTemp("", "clusterstack-bench-")
	if err != nil {
		b.Fatal(err)
	}
	e := &benchEnv{dir: dir, logDir: filepath.Join(dir, "logs"), apiServerBinary: filepath.Join(bin, "kube-apiserver")}
	b.Cleanup(func() {
		if b.Failed() || cfg.keep {
			fmt.Printf("bench: state and logs kept in %s\n", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	if err := os.MkdirAll(e.logDir, 0o755); err != nil {
		b.Fatal(err)
	}

	// The management API server.
	var apiFlags map[string]string
	if cfg.shipped {
		// Every write of the operator's identity, in order, for the test to list.
		e.auditLog = filepath.Join(e.logDir, plane.AuditLogFile)
		apiFlags, err = plane.AuditFlags(dir, e.auditLog, []string{plane.OperatorUser})
		must(b, err)
	}
	e.cfg = startAPIServer(b, bin, dir, filepath.Join(e.logDir, "kube-apiserver.log"), "bench", &envtest.CRDInstallOptions{
		Paths: []string{
			filepath.Join(root, "config", "crd", "bases"),
			filepath.Join(bin, "crds", "flux"),
			filepath.Join(bin, "crds", "capi-core", "bases"),
			filepath.Join(bin, "crds", "capi-kubeadm-controlplane", "bases"),
			// The reference stack's values read the infrastructure cluster's region.
			filepath.Join(bin, "crds", "capa", "bases", "infrastructure.cluster.x-k8s.io_awsclusters.yaml"),
		},
		ErrorIfPathMissing: true,
	}, apiFlags)
	e.kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(kubeconfigFor(e.cfg, "bench"), e.kubeconfig); err != nil {
		b.Fatal(err)
	}
	if e.scheme, err = plane.NewScheme(); err != nil {
		b.Fatal(err)
	}
	if err := csv1.AddToScheme(e.scheme); err != nil {
		b.Fatal(err)
	}
	if e.c, err = client.NewWithWatch(e.cfg, client.Options{Scheme: e.scheme}); err != nil {
		b.Fatal(err)
	}
	operatorKubeconfig := e.kubeconfig
	if cfg.shipped {
		// config/rbac's roles bound to the operator's ServiceAccount, and a token of it.
		operatorKubeconfig, err = plane.InstallOperatorIdentity(ctx, e.cfg, e.c, filepath.Join(root, "config", "rbac"), dir)
		must(b, err)
	}

	// The Git server holding the stacks.
	gitLog, err := os.Create(filepath.Join(e.logDir, "gitserver.log"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = gitLog.Close() })
	if e.git, err = gitserver.Start(filepath.Join(dir, "git"), "127.0.0.1:0", gitserver.WithLogOutput(gitLog)); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.git.Close() })

	ports, err := proc.FreePorts(5)
	if err != nil {
		b.Fatal(err)
	}
	addr := func(i int) string { return "127.0.0.1:" + strconv.Itoa(ports[i]) }

	// source-controller: the releases' GitRepositories and HelmCharts get real artifacts.
	e.storageAddr = addr(0)
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(filepath.Join(dir, "source-storage"), 0o755); err != nil {
		b.Fatal(err)
	}
	e.source, err = proc.Start(proc.Spec{Name: "source-controller", Path: filepath.Join(bin, "source-controller"), Args: []string{
		"--storage-path=" + filepath.Join(dir, "source-storage"),
		"--storage-addr=" + addr(0), "--storage-adv-addr=" + addr(0),
		"--metrics-addr=" + addr(1), "--health-addr=" + addr(2),
		"--enable-leader-election=false", "--watch-all-namespaces=true", "--log-encoding=console",
	}, Env: []string{"KUBECONFIG=" + e.kubeconfig, "RUNTIME_NAMESPACE=flux-system", "HOME=" + home}, LogFile: filepath.Join(e.logDir, "source-controller.log")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.source.Stop(0) })

	// The operator, exactly as shipped.
	e.metricsAddr = addr(3)
	e.probeAddr = addr(4)
	args := []string{"--metrics-bind-address=" + addr(3), "--health-probe-bind-address=" + addr(4), "--zap-log-level=" + cfg.logLevel}
	if cfg.shipped {
		// config/manager's flags: leader election in the operator's namespace.
		args = append(args, "--leader-elect", "--management-namespace="+plane.OperatorNamespace)
	} else {
		args = append(args, "--leader-elect=false")
	}
	e.managerSpec = proc.Spec{Name: "manager", Path: manager, Args: append(args, cfg.managerArgs...),
		Env: append([]string{"KUBECONFIG=" + operatorKubeconfig, "SOURCE_CONTROLLER_LOCALHOST=" + e.storageAddr}, cfg.managerEnv...), LogFile: filepath.Join(e.logDir, "manager.log")}
	if e.manager, err = proc.Start(e.managerSpec); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.manager.Stop(0) }) // e.manager at cleanup time; registered last: stopped first

	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := proc.WaitHTTP(wctx, "http://"+addr(2)+"/readyz", e.source); err != nil {
		b.Fatal(err)
	}
	if err := proc.WaitHTTP(wctx, "http://"+e.probeAddr+"/readyz", e.manager); err != nil {
		b.Fatal(err)
	}
	return e
}

// startAPIServer starts a kube-apiserver with etcd (envtest) from bin/, its state in dir and
// its log in logPath, each process getting SIGKILL should the benchmark die; b.Cleanup stops
// them. crds are installed when not nil. It returns the config of a system:masters user
// "<name>-admin".
func startAPIServer(b testing.TB, bin, dir, logPath, name string, crds *envtest.CRDInstallOptions, flags map[string]string) *rest.Config {
	b.Helper()
	logFile, err := os.Create(logPath)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = logFile.Close() })
	for _, d := range []string{"kube-apiserver", "etcd"} {
		must(b, os.MkdirAll(filepath.Join(dir, d), 0o700))
	}
	wrappers := filepath.Join(dir, "bin")
	apiPath, err := proc.DeathSignalWrapper(wrappers, filepath.Join(bin, "kube-apiserver"))
	must(b, err)
	etcdPath, err := proc.DeathSignalWrapper(wrappers, filepath.Join(bin, "etcd"))
	must(b, err)
	scheme := runtime.NewScheme() // no CAPI hub types: no conversion webhook nobody serves
	must(b, clientgoscheme.AddToScheme(scheme))
	env := &envtest.Environment{
		BinaryAssetsDirectory: bin,
		ControlPlane: envtest.ControlPlane{
			APIServer: &envtest.APIServer{Path: apiPath, CertDir: filepath.Join(dir, "kube-apiserver"), Out: logFile, Err: logFile},
			Etcd:      &envtest.Etcd{Path: etcdPath, DataDir: filepath.Join(dir, "etcd"), Out: logFile, Err: logFile},
		},
		Scheme:                   scheme,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	if crds != nil {
		env.CRDInstallOptions = *crds
	}
	for flag, value := range flags {
		env.ControlPlane.APIServer.Configure().Set(flag, value)
	}
	proc.OnSpawnerThread(func() { _, err = env.Start() })
	b.Cleanup(func() {
		if err := env.Stop(); err != nil {
			b.Errorf("stop the %s API server: %v", name, err)
		}
	})
	if err != nil {
		b.Fatalf("start the %s API server (log %s): %v", name, logPath, err)
	}
	user, err := env.AddUser(envtest.User{Name: name + "-admin", Groups: []string{"system:masters"}}, &rest.Config{QPS: 500, Burst: 1000})
	must(b, err)
	return user.Config()
}

// kubeconfigFor is a kubeconfig of cfg's server and client certificate, its cluster and context
// called name and its user "<name>-admin".
func kubeconfigFor(cfg *rest.Config, name string) clientcmdapi.Config {
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[name+"-admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name + "-admin"}
	kc.CurrentContext = name
	return *kc
}

// alive fails the benchmark when a process it needs has exited.
func (e *benchEnv) alive() error {
	for _, p := range []*proc.Process{e.source, e.manager} {
		if err := p.Exited(); err != nil {
			return err
		}
	}
	return nil
}
