package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The processes of the benchmark never outlive it, however it ends:
//   - each leads its own process group, and stop signals the whole group (SIGTERM, then
//     SIGKILL);
//   - each gets SIGKILL from the kernel when the benchmark process dies (a panic on -timeout,
//     Ctrl-C): the parent-death signal is tied to the thread that forked, so every process is
//     started from one OS thread that never exits;
//   - envtest's etcd and kube-apiserver, which envtest starts itself, get the same signal
//     through a setpriv wrapper.

var (
	spawnOnce sync.Once
	spawnCh   chan func()
)

// onSpawnerThread runs f on the one OS thread that starts every process.
func onSpawnerThread(f func()) {
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

// deathSignalWrapper writes a script in dir that runs target with SIGKILL as parent-death
// signal (util-linux setpriv), for envtest, which starts its binaries itself. Without setpriv it
// returns target.
func deathSignalWrapper(dir, target string) (string, error) {
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		return target, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
	wrapper := filepath.Join(dir, filepath.Base(target))
	script := fmt.Sprintf("#!/bin/sh\nexec %s --pdeathsig KILL -- %s \"$@\"\n", q(setpriv), q(target))
	return wrapper, os.WriteFile(wrapper, []byte(script), 0o755)
}

// process is a started child process.
type process struct {
	name, logFile string
	cmd           *exec.Cmd
	done          chan struct{}
	waitErr       error
	stopOnce      sync.Once
}

// startProcess starts path with args and env added to ours, output appended to logFile.
func startProcess(name, path string, args, env []string, logFile string) (*process, error) {
	if err := os.MkdirAll(filepath.Dir(logFile), 0o755); err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	onSpawnerThread(func() { err = cmd.Start() })
	if err != nil {
		_ = logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, logFile: logFile, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		_ = logf.Close()
		close(p.done)
	}()
	return p, nil
}

// exited returns an error describing the exit once the process has exited, nil while it runs.
func (p *process) exited() error {
	select {
	case <-p.done:
		return fmt.Errorf("%s exited: %v (log: %s)", p.name, p.waitErr, p.logFile)
	default:
		return nil
	}
}

// stop sends SIGTERM to the process group, then SIGKILL after 10s, and waits for the exit.
func (p *process) stop() {
	p.stopOnce.Do(func() {
		pgid := p.cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL) // and anything left in the group
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
		}
	})
}

// freePorts returns n distinct TCP ports on 127.0.0.1 that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}()
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// waitHTTP polls url until it answers 200, p exits or ctx ends.
func waitHTTP(ctx context.Context, url string, p *process) error {
	c := &http.Client{Timeout: 2 * time.Second}
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := c.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("%s answered %s", url, resp.Status)
		}
		last = err
		if err := p.exited(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %s: %w (last: %v)", url, ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
