// Package proc starts and stops the long-running processes of the local plane (Flux
// controllers, kube-controller-manager, kube-scheduler, kwok, the operator) so that none
// outlives the plane:
//
//   - each process leads its own process group, and Stop signals the whole group (SIGTERM,
//     then SIGKILL after a bounded grace period);
//   - each process gets SIGKILL from the kernel when the plane process dies, however it dies
//     (Linux parent-death signal, set from one OS thread that never exits, because the kernel
//     ties that signal to the thread that forked);
//   - envtest's etcd and kube-apiserver, which envtest starts itself, get the same signal
//     through [DeathSignalWrapper] and [OnSpawnerThread];
//   - a [Registry] file records the process groups so that a later run can end whatever a
//     killed plane still left behind.
package proc

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DefaultStopTimeout is how long Stop waits after SIGTERM before it sends SIGKILL.
const DefaultStopTimeout = 10 * time.Second

// Spec describes a process to start.
type Spec struct {
	// Name names the process in errors.
	Name string
	// Path is the executable.
	Path string
	// Args are the arguments, without the executable.
	Args []string
	// Env is added to the plane's environment (later entries win).
	Env []string
	// Dir is the working directory; the plane's when empty.
	Dir string
	// LogFile receives standard output and standard error (appended; created with its
	// directory when missing).
	LogFile string
}

// Process is a started process.
type Process struct {
	name    string
	logFile string
	cmd     *exec.Cmd
	log     *os.File
	done    chan struct{}
	waitErr error

	stopOnce sync.Once
	stopErr  error
}

var (
	spawnOnce sync.Once
	spawnCh   chan func()
)

// OnSpawnerThread runs f on the one OS thread that starts every process of the plane, and
// returns when f has returned. The kernel sends the parent-death signal when the thread
// that forked a child exits, not the process; this thread never exits, so the signal comes
// exactly when the plane process dies. Use it around code that starts processes itself,
// such as envtest.Environment.Start. f must not call OnSpawnerThread or Start itself.
func OnSpawnerThread(f func()) {
	spawnOnce.Do(func() {
		spawnCh = make(chan func())
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			for fn := range spawnCh {
				fn()
			}
		}()
	})
	done := make(chan struct{})
	spawnCh <- func() {
		defer close(done)
		f()
	}
	<-done
}

// DeathSignalWrapper returns the path of an executable script in dir that runs target with
// SIGKILL as its parent-death signal (util-linux setpriv), for processes that are started by
// code that cannot set SysProcAttr, like envtest. Without setpriv on the machine it returns
// target itself.
func DeathSignalWrapper(dir, target string) (string, error) {
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		return target, nil //nolint:nilerr // no setpriv: run target as is; Registry still cleans up
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create wrapper directory: %w", err)
	}
	wrapper := filepath.Join(dir, filepath.Base(target))
	script := fmt.Sprintf("#!/bin/sh\n# Generated: run %s with SIGKILL as parent-death signal.\nexec %s --pdeathsig KILL -- %s \"$@\"\n",
		target, shellQuote(setpriv), shellQuote(target))
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		return "", fmt.Errorf("write wrapper for %s: %w", target, err)
	}
	return wrapper, nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Start starts the process described by spec.
func Start(spec Spec) (*Process, error) {
	if spec.Name == "" {
		spec.Name = filepath.Base(spec.Path)
	}
	if _, err := os.Stat(spec.Path); err != nil {
		return nil, fmt.Errorf("start %s: executable: %w", spec.Name, err)
	}
	out := io.Discard
	var logf *os.File
	if spec.LogFile != "" {
		if err := os.MkdirAll(filepath.Dir(spec.LogFile), 0o755); err != nil {
			return nil, fmt.Errorf("start %s: log directory: %w", spec.Name, err)
		}
		f, err := os.OpenFile(spec.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("start %s: open log: %w", spec.Name, err)
		}
		logf, out = f, f
	}
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Dir = spec.Dir
	cmd.Env = append(os.Environ(), spec.Env...)
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}

	var err error
	OnSpawnerThread(func() { err = cmd.Start() })
	if err != nil {
		if logf != nil {
			_ = logf.Close()
		}
		return nil, fmt.Errorf("start %s: %w", spec.Name, err)
	}
	p := &Process{name: spec.Name, logFile: spec.LogFile, cmd: cmd, log: logf, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		if p.log != nil {
			_ = p.log.Close()
		}
		close(p.done)
	}()
	return p, nil
}

// Name is the process's name.
func (p *Process) Name() string { return p.name }

// Pid is the process id, which is also its process group id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// LogFile is where the process's output goes ("" when discarded).
func (p *Process) LogFile() string { return p.logFile }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports an error describing the exit when the process has exited, nil while it runs.
func (p *Process) Exited() error {
	select {
	case <-p.done:
		return p.describeExit()
	default:
		return nil
	}
}

func (p *Process) describeExit() error {
	msg := p.name + " exited"
	if p.waitErr != nil {
		msg += ": " + p.waitErr.Error()
	}
	if p.logFile != "" {
		msg += " (log: " + p.logFile + ")"
	}
	return errors.New(msg)
}

// Stop sends SIGTERM to the process group, waits up to timeout (DefaultStopTimeout when
// zero) for the process to exit, then sends SIGKILL to the group. It is idempotent.
func (p *Process) Stop(timeout time.Duration) error {
	p.stopOnce.Do(func() {
		if timeout <= 0 {
			timeout = DefaultStopTimeout
		}
		pgid := p.Pid()
		select {
		case <-p.done:
			_ = syscall.Kill(-pgid, syscall.SIGKILL) // children left in the group, if any
			return
		default:
		}
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		t := time.NewTimer(timeout)
		defer t.Stop()
		select {
		case <-p.done:
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		case <-t.C:
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			select {
			case <-p.done:
			case <-time.After(5 * time.Second):
				p.stopErr = fmt.Errorf("stop %s (pid %d): still running after SIGKILL", p.name, pgid)
			}
		}
	})
	return p.stopErr
}

// Kill sends SIGKILL to the process group at once (no chance to clean up, as a crash or an
// OOM kill) and waits for the process to exit. Like Stop, it acts once.
func (p *Process) Kill() error {
	p.stopOnce.Do(func() {
		_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			p.stopErr = fmt.Errorf("kill %s (pid %d): still running after SIGKILL", p.name, p.Pid())
		}
	})
	return p.stopErr
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago (see FreePorts).
func FreePort() (int, error) {
	ports, err := FreePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// FreePorts returns n distinct TCP ports on 127.0.0.1 that were free a moment ago and that no
// other process has picked with FreePorts (reservePort), below the kernel's ephemeral port range
// when it is known. A port the kernel hands out for ":0" is one it
// also hands out as the local port of outgoing connections: once the process listening on it
// stops (a fault test kills and restarts it), any client's connection could take it, and the
// restarted process would fail with "address already in use". Ports below the range are never
// given to outgoing connections.
func FreePorts(n int) ([]int, error) {
	addr := func() string { return "127.0.0.1:0" }
	lo, hi := listenPortRange()
	if lo != 0 {
		addr = func() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(lo+rand.IntN(hi-lo))) }
	}
	lns := make([]net.Listener, 0, n)
	defer func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}()
	ports := make([]int, 0, n)
	for tries := 0; len(ports) < n; tries++ {
		ln, err := net.Listen("tcp", addr())
		if err == nil && !reservePort(ln.Addr().(*net.TCPAddr).Port) {
			_ = ln.Close()
			err = errReserved
		}
		if err != nil {
			if tries >= 100*n {
				return nil, fmt.Errorf("find %d free ports (%d found): %w", n, len(ports), err)
			}
			continue // in use: another
		}
		lns = append(lns, ln) // held until all are found: distinct
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

var errReserved = errors.New("reserved by another process")

// reserved holds the lock files of the ports this process picked, open (and so locked) until it
// exits.
var reserved struct {
	sync.Mutex
	files []*os.File
}

// reservePort reserves port for this process for as long as it runs, across processes: a
// second plane started side by side (the end-to-end and fault suites of make test) would
// otherwise pick the port of a process the first one stopped for a while (a fault test), and
// that process could not start again ("address already in use"). The reservation is an
// exclusive flock on a file named by the port, which the kernel releases when the process
// exits, however it exits; the file is opened close-on-exec, so the processes started do not
// hold it. false: another process holds it. Without a lock directory it reserves nothing.
func reservePort(port int) bool {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("clusterstack-ports-%d", os.Getuid()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return true
	}
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return true
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return false
	}
	reserved.Lock()
	reserved.files = append(reserved.files, f)
	reserved.Unlock()
	return true
}

// listenPortMin is the lowest port FreePorts picks.
const listenPortMin = 10000

// listenPortRange is the range FreePorts picks from: from port 10000 (above most fixed service
// ports) up to the kernel's ephemeral range (net.ipv4.ip_local_port_range): 22,768 ports with
// Linux's default range, wide enough that two planes started side by side rarely pick the same
// port in the moment between the pick and its use; 0, 0 when the range is unknown (not Linux) or
// leaves too little room below it.
func listenPortRange() (lo, hi int) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0
	}
	start, err := strconv.Atoi(f[0])
	if err != nil || start-listenPortMin < 4096 {
		return 0, 0
	}
	return listenPortMin, start
}

// WaitHTTP polls url until it answers 200 OK, the process p (when not nil) exits, or ctx is
// done. TLS certificates are not verified: the endpoints are local health endpoints with
// self-signed certificates.
func WaitHTTP(ctx context.Context, url string, p *Process) error {
	client := &http.Client{
		Timeout: 2 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // local health endpoint
		},
	}
	defer client.CloseIdleConnections()
	var done <-chan struct{}
	if p != nil {
		done = p.Done()
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Errorf("%s answered %s", url, resp.Status)
		} else {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %s: %w (last: %v)", url, ctx.Err(), last)
		case <-done:
			return fmt.Errorf("wait for %s: %w", url, p.describeExit())
		case <-tick.C:
		}
	}
}
