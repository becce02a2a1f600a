package proc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
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

// childGroupLeaders lists the processes whose parent is ppid and that lead their own process
// group.
func childGroupLeaders(ppid int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []int
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
		parent, _ := strconv.Atoi(fields[1])
		pgrp, _ := strconv.Atoi(fields[2])
		if parent == ppid && pgrp == pid {
			out = append(out, pid)
		}
	}
	return out, nil
}
