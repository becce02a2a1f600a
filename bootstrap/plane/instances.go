package plane

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/clusterstack-io/clusterstack-operator/bootstrap/proc"
)

// operatorInstance is an extra instance of the operator (StartOperatorInstance).
type operatorInstance struct {
	svc             *service
	metrics, health string
}

// StartOperatorInstance starts an extra instance of the operator named name (a shard: pass
// --watch-label-selector, --manage-stacks=false and its own --leader-election-id in args), with
// the identity, kubeconfig and environment of the plane's operator, its own metrics and health
// ports, no webhook, and its log in <LogDir>/<name>.log; it returns once the instance is ready.
// Called again with a name it knows (after StopOperatorInstance), it starts that instance again
// with its first flags and ports, and args are ignored. Plane.Stop stops every instance.
func (p *Plane) StartOperatorInstance(ctx context.Context, name string, args ...string) error {
	if len(p.operators) == 0 {
		return errNoOperator
	}
	p.instMu.Lock()
	in := p.instances[name]
	if in == nil {
		ports, err := proc.FreePorts(2)
		if err != nil {
			p.instMu.Unlock()
			return err
		}
		host := p.env.WebhookInstallOptions.LocalServingHost
		in = &operatorInstance{
			metrics: net.JoinHostPort(host, strconv.Itoa(ports[0])),
			health:  net.JoinHostPort(host, strconv.Itoa(ports[1])),
		}
		spec := proc.Spec{
			Name: name,
			Path: p.opts.OperatorPath,
			Args: append([]string{
				"--metrics-bind-address=" + in.metrics,
				"--health-probe-bind-address=" + in.health,
				"--default-service-account=" + p.opts.FluxServiceAccount,
				"--flux-lockdown=assumed",
			}, args...),
			Env: append([]string{
				"KUBECONFIG=" + p.operatorAPIKubeconfig,
				"SOURCE_CONTROLLER_LOCALHOST=" + p.sourceStorageAddr,
			}, p.opts.OperatorEnv...),
			LogFile: filepath.Join(p.LogDir(), name+".log"),
		}
		health := in.health
		ready := func(ctx context.Context, pr *proc.Process) error {
			return proc.WaitHTTP(ctx, "http://"+health+"/readyz", pr)
		}
		in.svc = newService(spec, ready, p.record, p.log)
		if p.instances == nil {
			p.instances = map[string]*operatorInstance{}
		}
		p.instances[name] = in
	}
	p.instMu.Unlock()
	if err := in.svc.start(ctx); err != nil {
		return fmt.Errorf("plane: operator instance %s: %w", name, err)
	}
	return nil
}

// StopOperatorInstance stops the extra operator instance name gracefully (SIGTERM: it releases
// its lease) and keeps it stopped until StartOperatorInstance.
func (p *Plane) StopOperatorInstance(name string) error {
	p.instMu.Lock()
	in := p.instances[name]
	p.instMu.Unlock()
	if in == nil {
		return fmt.Errorf("plane: no operator instance %s", name)
	}
	if err := in.svc.stop(false); err != nil {
		return fmt.Errorf("plane: %w", err)
	}
	return nil
}

// OperatorInstanceMetricsAddr is the metrics address (host:port) of the extra operator instance
// name, empty for an unknown name.
func (p *Plane) OperatorInstanceMetricsAddr(name string) string {
	p.instMu.Lock()
	defer p.instMu.Unlock()
	if in := p.instances[name]; in != nil {
		return in.metrics
	}
	return ""
}

// instanceServices are the extra operator instances' services.
func (p *Plane) instanceServices() []*service {
	p.instMu.Lock()
	defer p.instMu.Unlock()
	out := make([]*service, 0, len(p.instances))
	for _, in := range p.instances {
		out = append(out, in.svc)
	}
	return out
}

// OperatorLogFiles lists the log files of every operator process the plane started: its
// replicas (manager.log, manager-1.log, ...) and the extra instances (StartOperatorInstance),
// stopped ones included, sorted. A restarted process appends to its file, so these hold all the
// operator wrote.
func (p *Plane) OperatorLogFiles() []string {
	var out []string
	for _, s := range slices.Concat(p.operators, p.instanceServices()) {
		out = append(out, s.spec.LogFile)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
