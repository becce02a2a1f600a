package proc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Registry records, in a file, the process groups that this plane process started (directly
// or through envtest), so that ReapStale in a later run can end those that a killed plane
// left behind. Each line is "<pid> <executable>": a process is only killed when its
// executable is still the recorded one, so a reused pid is left alone.
type Registry struct {
	path string
	mu   sync.Mutex
}

// NewRegistry returns a registry kept in file path.
func NewRegistry(path string) *Registry { return &Registry{path: path} }

// RecordChildren writes the current child processes of this process that lead their own
// process group into the registry file, replacing its content.
func (r *Registry) RecordChildren() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	children, err := childGroupLeaders(os.Getpid())
	if err != nil {
		return fmt.Errorf("list child processes: %w", err)
	}
	var b strings.Builder
	for _, pid := range children {
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil {
			continue // exited meanwhile
		}
		fmt.Fprintf(&b, "%d %s\n", pid, exe)
	}
	if err := os.MkdirAll(filepath.Dir(r.path), 0o755); err != nil {
		return fmt.Errorf("create registry directory: %w", err)
	}
	tmp := r.path + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("write process registry: %w", err)
	}
	if err := os.Rename(tmp, r.path); err != nil {
		return fmt.Errorf("write process registry: %w", err)
	}
	return nil
}

// Remove deletes the registry file: call it once everything recorded was stopped.
func (r *Registry) Remove() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := os.Remove(r.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove process registry: %w", err)
	}
	return nil
}

// ReapStale kills (SIGKILL, whole process group) the processes recorded in the registry file
// at path that still run the recorded executable, removes the file, and returns the pids it
// killed. A missing file is not an error.
func ReapStale(path string) ([]int, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read process registry: %w", err)
	}
	var killed []int
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		pidStr, exe, ok := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		if !ok {
			continue
		}
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid <= 1 {
			continue
		}
		cur, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil || cur != exe {
			continue // gone, or the pid was reused
		}
		if err := syscall.Kill(-pid, syscall.SIGKILL); err == nil {
			killed = append(killed, pid)
		} else if err := syscall.Kill(pid, syscall.SIGKILL); err == nil {
			killed = append(killed, pid)
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return killed, fmt.Errorf("remove process registry: %w", err)
	}
	return killed, nil
}

// Child is a direct child process of this process.
type Child struct {
	// Pid is its process id.
	Pid int
	// Exe is the executable it runs (the target of /proc/<pid>/exe): after a wrapper script
	// exec'd its target, the target.
	Exe string
	// Args are its command line, the program name first.
	Args []string
}

// Children lists the direct child processes of this process (those that exit meanwhile are
// left out), for example to find the pid of a process that other code started, like envtest's
// kube-apiserver.
func Children() ([]Child, error) {
	procs, err := listProcs()
	if err != nil {
		return nil, fmt.Errorf("list child processes: %w", err)
	}
	self := os.Getpid()
	var out []Child
	for _, p := range procs {
		if p.ppid != self {
			continue
		}
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", p.pid))
		if err != nil {
			continue // exited meanwhile
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.pid))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00")
		out = append(out, Child{Pid: p.pid, Exe: exe, Args: args})
	}
	return out, nil
}

// ChildPid returns the pid of the first child process of this process that runs the
// executable exe (symbolic links resolved) with every argument of args on its command line, or
// 0 when none does.
func ChildPid(exe string, args ...string) (int, error) {
	want, err := filepath.EvalSymlinks(exe)
	if err != nil {
		return 0, fmt.Errorf("resolve %s: %w", exe, err)
	}
	children, err := Children()
	if err != nil {
		return 0, err
	}
	for _, c := range children {
		if c.Exe != want {
			continue
		}
		all := true
		for _, a := range args {
			all = all && slices.Contains(c.Args[1:], a)
		}
		if all {
			return c.Pid, nil
		}
	}
	return 0, nil
}

// Terminate ends process pid (not its group) that another package started: SIGTERM, then
// SIGKILL when it still exists after grace, and waits until it is gone. For processes that
// finish their graceful shutdown quickly but then linger, like a kube-apiserver that waits up
// to its request timeout (60 s) for the watches in flight.
func Terminate(pid int, grace time.Duration) error {
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return fmt.Errorf("terminate process %d: %w", pid, err)
	}
	if WaitGone(pid, grace) == nil {
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill process %d: %w", pid, err)
	}
	return WaitGone(pid, 5*time.Second)
}

// WaitGone waits up to timeout until process pid no longer exists (it exited and was reaped).
func WaitGone(pid int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process %d still exists after %s", pid, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// childGroupLeaders lists the processes whose parent is ppid and that lead their own process
// group.
func childGroupLeaders(ppid int) ([]int, error) {
	procs, err := listProcs()
	if err != nil {
		return nil, err
	}
	var out []int
	for _, p := range procs {
		if p.ppid == ppid && p.pgrp == p.pid {
			out = append(out, p.pid)
		}
	}
	return out, nil
}

type procStat struct{ pid, ppid, pgrp int }

// listProcs reads the pid, parent pid and process group of every process in /proc.
func listProcs() ([]procStat, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []procStat
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// Fields after the command name (which is in parentheses and may contain spaces):
		// state ppid pgrp ...
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) < 3 {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		pgrp, _ := strconv.Atoi(fields[2])
		out = append(out, procStat{pid: pid, ppid: ppid, pgrp: pgrp})
	}
	return out, nil
}
