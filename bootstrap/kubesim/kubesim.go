// Package kubesim completes an API server (envtest's kube-apiserver and etcd, which run no
// controllers) into a cluster whose workloads run, simulated: it starts kube-controller-manager,
// kube-scheduler and kwok as local processes and creates kwok Nodes. kwok turns the Nodes Ready
// and plays the kubelet for the Pods scheduled to them (they become Running and Ready; no
// container runs and no image is pulled), so Deployments, DaemonSets and the like report what
// a real cluster would.
//
// Both the local management plane (package plane) and its workload clusters (package
// localinfra) use it.
package kubesim

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/clusterstack-io/clusterstack-operator/bootstrap/proc"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
)

// Binaries are the executables Start runs from Options.BinDir.
var Binaries = []string{"kube-controller-manager", "kube-scheduler", "kwok"}

// DefaultControllers are kube-controller-manager's controllers when Options.Controllers is
// empty: all that are on by default but the service-account token controller, which needs a
// signing key file (nothing local needs legacy token Secrets).
var DefaultControllers = []string{"*", "-serviceaccount-token-controller"}

// Options configures Start.
type Options struct {
	// Name names the Nodes ("<name>-node-<i>", see NodeName). Errors do not name the cluster:
	// callers add that context.
	Name string
	// BinDir holds kube-controller-manager, kube-scheduler and kwok.
	BinDir string
	// KwokStagesDir holds kwok Stage manifests (*.yaml, one stage per file, see StageFiles):
	// node-initialize.yaml, node-heartbeat.yaml and the pod-*.yaml of kwok's general stages.
	KwokStagesDir string
	// Kubeconfig is the path of a kubeconfig with system:masters rights on the API server; the
	// three processes and Start itself use it.
	Kubeconfig string
	// Dir receives the serving certificates of kube-controller-manager and kube-scheduler.
	Dir string
	// LogDir receives kube-controller-manager.log, kube-scheduler.log and kwok.log.
	LogDir string
	// Controllers is kube-controller-manager's --controllers; DefaultControllers when empty.
	Controllers []string
	// Nodes is how many Nodes to create; 1 when zero, none when negative.
	Nodes int
	// OnProcessStarted, when set, is called after the processes were started (the plane uses
	// it to record process groups for cleanup after a crash).
	OnProcessStarted func()
}

// Components are the running kube-controller-manager, kube-scheduler and kwok of a cluster.
type Components struct {
	opts  Options
	procs []*proc.Process
	nodes []string

	stopOnce sync.Once
	stopErr  error
}

// Start starts kube-controller-manager, kube-scheduler and kwok against the API server of
// opts.Kubeconfig, waits until the first two are healthy, creates opts.Nodes kwok Nodes and
// returns once they are Ready. On error, whatever was started is stopped again.
func Start(ctx context.Context, opts Options) (_ *Components, retErr error) {
	if opts.Name == "" {
		return nil, errors.New("no cluster name to name the Nodes after")
	}
	if opts.Nodes == 0 {
		opts.Nodes = 1
	}
	if len(opts.Controllers) == 0 {
		opts.Controllers = DefaultControllers
	}
	if opts.OnProcessStarted == nil {
		opts.OnProcessStarted = func() {}
	}
	for _, bin := range Binaries {
		if _, err := os.Stat(filepath.Join(opts.BinDir, bin)); err != nil {
			return nil, fmt.Errorf("%s not found in %s (run `make tools`): %w", bin, opts.BinDir, err)
		}
	}
	stages, err := StageFiles(opts.KwokStagesDir)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", opts.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}

	c := &Components{opts: opts}
	defer func() {
		if retErr != nil {
			if err := c.Stop(); err != nil {
				retErr = fmt.Errorf("%w (and stopping again: %v)", retErr, err)
			}
		}
	}()
	ports, err := proc.FreePorts(3)
	if err != nil {
		return nil, err
	}
	kcmPort, schedPort, kwokPort := ports[0], ports[1], ports[2]
	authFlags := []string{
		"--kubeconfig=" + opts.Kubeconfig,
		"--authentication-kubeconfig=" + opts.Kubeconfig,
		"--authorization-kubeconfig=" + opts.Kubeconfig,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
	}
	kcm, err := c.start("kube-controller-manager", append(append([]string{}, authFlags...),
		"--controllers="+strings.Join(opts.Controllers, ","),
		"--secure-port="+strconv.Itoa(kcmPort),
		"--cert-dir="+filepath.Join(opts.Dir, "kube-controller-manager"),
	))
	if err != nil {
		return nil, err
	}
	sched, err := c.start("kube-scheduler", append(append([]string{}, authFlags...),
		"--secure-port="+strconv.Itoa(schedPort),
		"--cert-dir="+filepath.Join(opts.Dir, "kube-scheduler"),
	))
	if err != nil {
		return nil, err
	}
	kwokArgs := []string{
		"--kubeconfig=" + opts.Kubeconfig,
		"--manage-all-nodes=true",
		"--server-address=127.0.0.1:" + strconv.Itoa(kwokPort),
	}
	for _, s := range stages {
		kwokArgs = append(kwokArgs, "--config="+s)
	}
	if _, err := c.start("kwok", kwokArgs); err != nil {
		return nil, err
	}
	opts.OnProcessStarted()

	if err := proc.WaitHTTP(ctx, fmt.Sprintf("https://127.0.0.1:%d/healthz", kcmPort), kcm); err != nil {
		return nil, fmt.Errorf("kube-controller-manager not healthy (log: %s): %w", kcm.LogFile(), err)
	}
	if err := proc.WaitHTTP(ctx, fmt.Sprintf("https://127.0.0.1:%d/healthz", schedPort), sched); err != nil {
		return nil, fmt.Errorf("kube-scheduler not healthy (log: %s): %w", sched.LogFile(), err)
	}
	if err := c.createNodes(ctx, cs); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Components) start(name string, args []string) (*proc.Process, error) {
	p, err := proc.Start(proc.Spec{
		Name:    name,
		Path:    filepath.Join(c.opts.BinDir, name),
		Args:    args,
		LogFile: filepath.Join(c.opts.LogDir, name+".log"),
	})
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, p)
	return p, nil
}

// createNodes creates the Nodes and waits until kwok reports them Ready.
func (c *Components) createNodes(ctx context.Context, cs kubernetes.Interface) error {
	for i := range c.opts.Nodes {
		name := NodeName(c.opts.Name, i)
		c.nodes = append(c.nodes, name)
		if _, err := cs.CoreV1().Nodes().Create(ctx, Node(name, "", ""), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create node %s: %w", name, err)
		}
	}
	var notReady []string
	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if err := c.Exited(); err != nil {
			return false, err
		}
		notReady = notReady[:0]
		for _, name := range c.nodes {
			n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil || !NodeReady(n) {
				notReady = append(notReady, name)
			}
		}
		return len(notReady) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("nodes %v not Ready (kwok log: %s): %w",
			notReady, filepath.Join(c.opts.LogDir, "kwok.log"), err)
	}
	return nil
}

// NodeName is the name of the i-th Node of cluster name: "<name>-node-<i>", shortened to fit a
// label value (63 characters), since it is also the Node's hostname label.
func NodeName(name string, i int) string {
	return fluxgen.SafeName(fluxgen.MaxLabelValue, name, "node", strconv.Itoa(i))
}

// NodeIP is the InternalIP address of the Node named name: 192.168.x.y from a hash of the name,
// the same whenever the Node is made again. kwok gives a host-network Pod (a CNI's DaemonSet)
// its Node's address as the Pod's IP. On a Node without an address such a Pod got no IP, and
// kwok's pod-create stage, which matches every Pod without one, set it back to ContainerCreating
// every few seconds: never Running for long, and a stream of status writes in every cluster.
func NodeIP(name string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	s := h.Sum32()
	return fmt.Sprintf("192.168.%d.%d", byte(s>>8), 1+s%254)
}

// Node is a Node that kwok manages (Ready, runs its Pods), with its addresses (NodeIP and the
// name as hostname), and providerID and the kubelet version it reports (kwok keeps it) when not
// empty. A Node's status may be set when it is created, as a kubelet registering does.
func Node(name, providerID, kubeletVersion string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				"kubernetes.io/hostname": name,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
				"type":                   "kwok",
			},
			Annotations: map[string]string{
				"kwok.x-k8s.io/node":           "fake",
				"node.alpha.kubernetes.io/ttl": "0",
			},
		},
		Spec: corev1.NodeSpec{ProviderID: providerID},
		Status: corev1.NodeStatus{
			NodeInfo: corev1.NodeSystemInfo{KubeletVersion: kubeletVersion},
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: NodeIP(name)},
				{Type: corev1.NodeHostName, Address: name},
			},
		},
	}
}

// NodeReady tells whether n's Ready condition is True.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// StageFiles lists the kwok Stage manifests in dir (*.yaml and *.yml, except kustomization
// files), sorted. kwok exits with "no stages found" without them.
func StageFiles(dir string) ([]string, error) {
	if dir == "" {
		return nil, errors.New("no kwok stages directory configured")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("kwok stages directory (run `make tools`): %w", err)
	}
	var files []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || strings.HasPrefix(n, "kustomization.") {
			continue
		}
		if strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml") {
			files = append(files, filepath.Join(dir, n))
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no kwok stage files (*.yaml) in %s", dir)
	}
	sort.Strings(files)
	return files, nil
}

// NodeNames are the Nodes Start created.
func (c *Components) NodeNames() []string { return append([]string(nil), c.nodes...) }

// Processes are kube-controller-manager, kube-scheduler and kwok (those started so far).
func (c *Components) Processes() []*proc.Process { return append([]*proc.Process(nil), c.procs...) }

// Exited reports an error when one of the processes has exited, nil while all run.
func (c *Components) Exited() error {
	for _, p := range c.procs {
		if err := p.Exited(); err != nil {
			return err
		}
	}
	return nil
}

// Stop stops the processes, all at once, each with proc.DefaultStopTimeout. It is idempotent.
func (c *Components) Stop() error {
	c.stopOnce.Do(func() {
		errs := make([]error, len(c.procs))
		var wg sync.WaitGroup
		for i, p := range c.procs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = p.Stop(proc.DefaultStopTimeout)
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			c.stopErr = err
		}
	})
	return c.stopErr
}
