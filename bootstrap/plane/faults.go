package plane

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/clusterstack-io/clusterstack-operator/bootstrap/kubesim"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/proc"
)

// This file injects faults into the plane's real components and undoes them, for the fault
// tests (test/faults): a Flux controller stopped, the Git server unreachable, the management
// API server restarted with its etcd kept, a workload cluster's API server down, operator
// replicas killed and started again.

const (
	// OperatorLeaseName is the name of the operator's leader-election Lease
	// (controller-runtime's LeaderElectionID in cmd/main.go).
	OperatorLeaseName = "clusterstack-operator.clusterstack.io"
	// operatorLeaderTimeout bounds OperatorLeader's wait for a leader.
	operatorLeaderTimeout = 2 * time.Minute
)

// errNoOperator is returned by the operator's fault methods without Options.WithOperator.
var errNoOperator = errors.New("plane: the operator is not running (Options.WithOperator)")

// FluxControllers are the names of the Flux controllers the plane runs, for StopFlux and
// StartFlux.
var FluxControllers = []string{"source-controller", "kustomize-controller", "helm-controller"}

func (p *Plane) fluxService(name string) (*service, error) {
	for _, s := range p.flux {
		if s.name() == name {
			return s, nil
		}
	}
	return nil, fmt.Errorf("plane: no Flux controller %q (one of %s)", name, strings.Join(FluxControllers, ", "))
}

// StopFlux stops the Flux controller name ("source-controller", "kustomize-controller" or
// "helm-controller") gracefully (SIGTERM; SIGKILL after proc.DefaultStopTimeout), as when its
// Pod is deleted, and keeps it stopped until StartFlux. Stopping a stopped controller does
// nothing. source-controller's artifacts stay in its storage directory.
func (p *Plane) StopFlux(name string) error {
	s, err := p.fluxService(name)
	if err != nil {
		return err
	}
	if err := s.stop(false); err != nil {
		return fmt.Errorf("plane: %w", err)
	}
	return nil
}

// StartFlux starts the Flux controller name again with the same flags, environment, ports and
// storage (its log is appended to), and returns once it reports ready. It does nothing but
// wait for readiness while the controller runs.
func (p *Plane) StartFlux(ctx context.Context, name string) error {
	s, err := p.fluxService(name)
	if err != nil {
		return err
	}
	if err := s.start(ctx); err != nil {
		return fmt.Errorf("plane: %w", err)
	}
	return nil
}

// StopGit takes the Git server off the network: connections to its address are refused until
// StartGit (gitserver.Server.Stop). Publishing to it fails meanwhile.
func (p *Plane) StopGit() error {
	if err := p.git.Stop(); err != nil {
		return fmt.Errorf("plane: %w", err)
	}
	return nil
}

// StartGit serves the Git server again on the same address, with the same repositories: the
// URLs that GitRepositories point at stay valid.
func (p *Plane) StartGit() error {
	if err := p.git.Restart(); err != nil {
		return fmt.Errorf("plane: %w", err)
	}
	return nil
}

// RestartAPIServer stops the management kube-apiserver (SIGTERM; etcd keeps running) and
// starts it again with the same flags, port and certificates, and returns once it answers
// /readyz. Every existing kubeconfig keeps working: the admin client certificate (Kubeconfig,
// Config), the operator's ServiceAccount token, Flux's. The clients of the plane's processes
// lose their connections and watches and reconnect. The management controller manager,
// scheduler and kwok are started again if they exited meanwhile.
func (p *Plane) RestartAPIServer(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	api := p.env.ControlPlane.APIServer
	logFile := filepath.Join(p.LogDir(), "kube-apiserver.log")
	stopped := time.Now()
	if err := stopAPIServer(api, p.APIServerPid()); err != nil {
		return fmt.Errorf("plane: stop management API server (log: %s): %w", logFile, err)
	}
	// envtest keeps what the API server is started with: the port, the serving certificate
	// and the service-account keys (files in its cert dir, written only when missing) and the
	// client CA (in memory, written again). It waits for /healthz.
	var err error
	proc.OnSpawnerThread(func() { err = api.Start() })
	if err != nil {
		return fmt.Errorf("plane: start management API server again (log: %s): %w", logFile, err)
	}
	p.record()
	if err := p.waitAPIReady(ctx); err != nil {
		return err
	}
	p.log.Info("management API server restarted", "down", time.Since(stopped).Round(time.Millisecond))
	if p.sim == nil || p.sim.Exited() == nil {
		return nil
	}
	p.log.Info("starting the management controller manager, scheduler and kwok again", "exited", p.sim.Exited().Error())
	if err := p.sim.Stop(); err != nil {
		return fmt.Errorf("plane: stop management components: %w", err)
	}
	sim, err := kubesim.Start(ctx, p.simOptions())
	if err != nil {
		return fmt.Errorf("plane: start management components again: %w", err)
	}
	p.sim = sim
	return nil
}

// apiServerStopGrace is how long a kube-apiserver gets after SIGTERM before SIGKILL. It stops
// listening and drains its short requests in a few milliseconds, then waits up to its request
// timeout (60 s) for the watches in flight, which clients keep open: nothing is lost by
// cutting that short.
const apiServerStopGrace = 3 * time.Second

// stopAPIServer stops envtest's API server api, whose process is pid (0: unknown, then
// envtest stops it, with SIGKILL after its stop timeout).
func stopAPIServer(api *envtest.APIServer, pid int) error {
	if pid == 0 {
		return api.Stop()
	}
	if err := proc.Terminate(pid, apiServerStopGrace); err != nil {
		return err
	}
	// envtest then only notes the exit; it may still try to signal the process that is gone.
	_ = api.Stop()
	return nil
}

// waitAPIReady polls the management API server's /readyz until it answers ok.
func (p *Plane) waitAPIReady(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(p.cfg)
	if err != nil {
		return fmt.Errorf("plane: %w", err)
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil && strings.TrimSpace(string(body)) == "ok" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("plane: management API server not ready: %w (last: %v %s)", ctx.Err(), err, body)
		case <-tick.C:
		}
	}
}

// APIServerPid is the process id of the management kube-apiserver (it changes with
// RestartAPIServer), or 0 when it is not found.
func (p *Plane) APIServerPid() int {
	// The wrapper script exec'd the binary: the child runs it, with envtest's flags. Workload
	// clusters' API servers are children too, on other ports.
	pid, err := proc.ChildPid(filepath.Join(p.opts.BinDir, "kube-apiserver"), "--secure-port="+p.env.ControlPlane.APIServer.SecureServing.Port)
	if err != nil {
		return 0
	}
	return pid
}

// StopWorkloadAPIServer stops the kube-apiserver of the workload cluster of Cluster ns/name
// and keeps the rest of that cluster (etcd, its data, certificates, controller manager, kwok),
// as an outage of its control plane. localinfra does not replace the cluster meanwhile, and
// deleting the Cluster still completes. It is idempotent.
func (p *Plane) StopWorkloadAPIServer(ns, name string) error {
	if err := p.infra.StopWorkloadAPIServer(types.NamespacedName{Namespace: ns, Name: name}); err != nil {
		return fmt.Errorf("plane: %w", err)
	}
	return nil
}

// StartWorkloadAPIServer starts the API server that StopWorkloadAPIServer stopped again, on
// the same port with the same certificates and data (the Cluster's kubeconfig Secret keeps
// working; objects in the workload cluster, Helm's release Secrets among them, are kept), and
// returns once it is healthy.
func (p *Plane) StartWorkloadAPIServer(ctx context.Context, ns, name string) error {
	if err := p.infra.StartWorkloadAPIServer(ctx, types.NamespacedName{Namespace: ns, Name: name}); err != nil {
		return fmt.Errorf("plane: %w", err)
	}
	return nil
}

// OperatorReplicas is the number of operator replicas (0 without the operator).
func (p *Plane) OperatorReplicas() int { return len(p.operators) }

func (p *Plane) operatorReplica(i int) (*service, error) {
	if len(p.operators) == 0 {
		return nil, errNoOperator
	}
	if i < 0 || i >= len(p.operators) {
		return nil, fmt.Errorf("plane: no operator replica %d (%d replicas)", i, len(p.operators))
	}
	return p.operators[i], nil
}

// StopOperator stops every operator replica, with SIGKILL when kill (a crash: no lease
// released, nothing flushed), else gracefully (SIGTERM), and keeps them stopped until
// StartOperator. The webhook is not served meanwhile.
func (p *Plane) StopOperator(kill bool) error {
	if len(p.operators) == 0 {
		return errNoOperator
	}
	if err := eachService(p.operators, func(s *service) error { return s.stop(kill) }); err != nil {
		return fmt.Errorf("plane: stop operator: %w", err)
	}
	return nil
}

// StartOperator starts the operator replicas that do not run, with the same flags, ports and
// log files (appended to), and returns once every replica is ready and serves its webhook
// (unless Options.SkipOperatorReadyCheck).
func (p *Plane) StartOperator(ctx context.Context) error {
	if len(p.operators) == 0 {
		return errNoOperator
	}
	return startAll(ctx, p.operators)
}

// StopOperatorReplica stops operator replica i (0-based), with SIGKILL when kill, else
// gracefully, and keeps it stopped until StartOperatorReplica or StartOperator.
func (p *Plane) StopOperatorReplica(i int, kill bool) error {
	s, err := p.operatorReplica(i)
	if err != nil {
		return err
	}
	if err := s.stop(kill); err != nil {
		return fmt.Errorf("plane: %w", err)
	}
	return nil
}

// KillOperatorReplica kills operator replica i with SIGKILL, as a crash or an OOM kill, and
// keeps it stopped until StartOperatorReplica or StartOperator.
func (p *Plane) KillOperatorReplica(i int) error { return p.StopOperatorReplica(i, true) }

// StartOperatorReplica starts operator replica i again (unless it runs) and returns once it is
// ready.
func (p *Plane) StartOperatorReplica(ctx context.Context, i int) error {
	s, err := p.operatorReplica(i)
	if err != nil {
		return err
	}
	if err := s.start(ctx); err != nil {
		return fmt.Errorf("plane: %w", err)
	}
	return nil
}

// OperatorReplicaPids are the process ids of the operator replicas, by index; 0 for a replica
// that does not run.
func (p *Plane) OperatorReplicaPids() []int {
	pids := make([]int, len(p.operators))
	for i, s := range p.operators {
		if pr := s.process(); pr != nil && pr.Exited() == nil {
			pids[i] = pr.Pid()
		}
	}
	return pids
}

// OperatorLeader returns the index of the operator replica that leads (holds the Lease
// OperatorLeaseName, with --leader-elect), waiting up to two minutes (or until ctx is done)
// until exactly one running replica does. Each replica reports it in the metric
// leader_election_master_status of its own metrics endpoint: the Lease's holder identity
// ("<hostname>_<uuid>") does not tell the replicas of one host apart.
func (p *Plane) OperatorLeader(ctx context.Context) (int, error) {
	if len(p.operators) == 0 {
		return -1, errNoOperator
	}
	ctx, cancel := context.WithTimeout(ctx, operatorLeaderTimeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	defer client.CloseIdleConnections()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var last string
	for {
		var leaders []int
		for i, s := range p.operators {
			if !s.running() {
				continue
			}
			leads, err := replicaLeads(ctx, client, p.operatorAddrs[i].metrics)
			if err != nil {
				last = fmt.Sprintf("replica %d: %v", i, err)
				continue
			}
			if leads {
				leaders = append(leaders, i)
			}
		}
		if len(leaders) == 1 {
			return leaders[0], nil
		}
		if len(leaders) > 1 {
			last = fmt.Sprintf("replicas %v all report leadership", leaders)
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("plane: no single operator replica leads: %w (last: %s)", ctx.Err(), last)
		case <-tick.C:
		}
	}
}

// replicaLeads reads the metric leader_election_master_status of the operator's Lease from the
// metrics endpoint at addr.
func replicaLeads(ctx context.Context, client *http.Client, addr string) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return false, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return false, fmt.Errorf("metrics answered %s", resp.Status)
	}
	return leaderMetric(resp.Body)
}

// leaderMetric tells whether the Prometheus text exposition r reports leadership of the
// operator's Lease: leader_election_master_status{name="<OperatorLeaseName>"} 1.
func leaderMetric(r io.Reader) (bool, error) {
	prefix := `leader_election_master_status{name="` + OperatorLeaseName + `"}`
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimPrefix(line, prefix)), 64)
		if err != nil {
			return false, fmt.Errorf("metric line %q: %w", line, err)
		}
		return v == 1, nil
	}
	return false, sc.Err()
}

// closeAll stops the services for good, all at once.
func closeAll(svcs []*service) error {
	return eachService(svcs, (*service).close)
}

// eachService calls f on every service at once and joins their errors.
func eachService(svcs []*service, f func(*service) error) error {
	errs := make([]error, len(svcs))
	var wg sync.WaitGroup
	for i, s := range svcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(s)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
