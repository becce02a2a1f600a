package proc

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clusterstack-io/clusterstack-operator/internal/testenv"
)

func sleepPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("sleep")
	if err != nil {
		testenv.SkipOrFail(t, "no sleep executable")
	}
	return p
}

func TestStartStopKillsGroup(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		testenv.SkipOrFail(t, "no sh")
	}
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	// The shell starts a grandchild in the same process group and ignores SIGTERM, so only
	// the group SIGKILL after the timeout ends both.
	p, err := Start(Spec{
		Name:    "sh",
		Path:    sh,
		Args:    []string{"-c", "trap '' TERM; " + sleepPath(t) + " 300 & echo $! > " + pidFile + "; wait"},
		LogFile: filepath.Join(dir, "logs", "sh.log"),
	})
	if err != nil {
		t.Fatal(err)
	}
	var child int
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(pidFile)
		if s := strings.TrimSpace(string(b)); s != "" {
			child, _ = strconv.Atoi(s)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if child == 0 {
		t.Fatal("grandchild did not start")
	}
	if err := p.Exited(); err != nil {
		t.Fatalf("process exited early: %v", err)
	}
	if err := p.Stop(500 * time.Millisecond); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if p.Exited() == nil {
		t.Fatal("process still running after Stop")
	}
	waitGone(t, child)
	// Stop is idempotent.
	if err := p.Stop(time.Second); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		// A killed grandchild re-parented to init may linger as a zombie briefly.
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil || strings.Contains(string(b), ") Z ") {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("process %d still alive", pid)
}

func TestRegistryReapsRecordedGroups(t *testing.T) {
	dir := t.TempDir()
	p, err := Start(Spec{Path: sleepPath(t), Args: []string{"300"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(time.Second) })
	reg := NewRegistry(filepath.Join(dir, "run", "pids"))
	if err := reg.RecordChildren(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "run", "pids"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), strconv.Itoa(p.Pid())+" ") {
		t.Fatalf("registry does not list pid %d:\n%s", p.Pid(), b)
	}
	killed, err := ReapStale(filepath.Join(dir, "run", "pids"))
	if err != nil {
		t.Fatal(err)
	}
	if len(killed) != 1 || killed[0] != p.Pid() {
		t.Fatalf("ReapStale killed %v, want [%d]", killed, p.Pid())
	}
	select {
	case <-p.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("reaped process still running")
	}
	if _, err := os.Stat(filepath.Join(dir, "run", "pids")); !os.IsNotExist(err) {
		t.Fatalf("registry file not removed: %v", err)
	}
	if killed, err := ReapStale(filepath.Join(dir, "run", "pids")); err != nil || len(killed) != 0 {
		t.Fatalf("ReapStale on a missing file = %v, %v", killed, err)
	}
}

func TestWaitHTTPFailsWhenProcessExits(t *testing.T) {
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(Spec{Path: sleepPath(t), Args: []string{"0.2"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = WaitHTTP(ctx, "http://127.0.0.1:"+strconv.Itoa(port)+"/healthz", p)
	if err == nil || !strings.Contains(err.Error(), "exited") {
		t.Fatalf("WaitHTTP = %v, want an error saying the process exited", err)
	}
}

func TestDeathSignalWrapperRunsTarget(t *testing.T) {
	printf, err := exec.LookPath("printf")
	if err != nil {
		testenv.SkipOrFail(t, "no printf executable")
	}
	wrapper, err := DeathSignalWrapper(filepath.Join(t.TempDir(), "it's bin"), printf)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(wrapper, "%s-%s", "a b", "c").CombinedOutput()
	if err != nil {
		t.Fatalf("wrapper: %v: %s", err, out)
	}
	if string(out) != "a b-c" {
		t.Fatalf("wrapper output %q, want %q", out, "a b-c")
	}
}

// Kill ends a process that ignores SIGTERM (SIGKILL, no graceful stop).
func TestKillDoesNotWaitForGracefulStop(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		testenv.SkipOrFail(t, "no sh")
	}
	p, err := Start(Spec{Name: "sh", Path: sh, Args: []string{"-c", "trap '' TERM; " + sleepPath(t) + " 300"}})
	if err != nil {
		t.Fatal(err)
	}
	// SIGTERM would leave it running: Kill reports an error if it is not gone.
	if err := p.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if p.Exited() == nil {
		t.Fatal("process still running after Kill")
	}
	if err := p.Stop(time.Second); err != nil {
		t.Errorf("Stop after Kill: %v", err)
	}
}

func TestChildrenFindsAStartedProcessWithItsArguments(t *testing.T) {
	sleep := sleepPath(t)
	p, err := Start(Spec{Name: "sleep", Path: sleep, Args: []string{"301"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Kill() })
	exe, err := filepath.EvalSymlinks(sleep)
	if err != nil {
		t.Fatal(err)
	}
	children, err := Children()
	if err != nil {
		t.Fatalf("Children: %v", err)
	}
	var found *Child
	for i, c := range children {
		if c.Pid == p.Pid() {
			found = &children[i]
		}
	}
	if found == nil {
		t.Fatalf("pid %d not among the children %+v", p.Pid(), children)
	}
	if found.Exe != exe || len(found.Args) != 2 || found.Args[1] != "301" {
		t.Fatalf("child %+v: want executable %s and arguments [%s 301]", *found, exe, sleep)
	}
	for _, c := range []struct {
		exe  string
		args []string
		want int
	}{
		{sleep, []string{"301"}, p.Pid()},
		{sleep, nil, p.Pid()},
		{sleep, []string{"302"}, 0},
		{"/bin/sh", []string{"301"}, 0},
	} {
		if got, err := ChildPid(c.exe, c.args...); err != nil || got != c.want {
			t.Errorf("ChildPid(%s, %v) = %d, %v; want %d", c.exe, c.args, got, err, c.want)
		}
	}
	if err := WaitGone(p.Pid(), 100*time.Millisecond); err == nil {
		t.Fatal("WaitGone returned for a running process")
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := WaitGone(p.Pid(), 5*time.Second); err != nil {
		t.Fatalf("WaitGone after Kill: %v", err)
	}
	children, err = Children()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range children {
		if c.Pid == p.Pid() {
			t.Fatalf("pid %d still listed after Kill", c.Pid)
		}
	}
}

func TestTerminateKillsAProcessThatIgnoresSIGTERM(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		testenv.SkipOrFail(t, "no sh")
	}
	for _, c := range []struct {
		name, script string
		atLeast      time.Duration
	}{
		{"exits on SIGTERM", "exec " + sleepPath(t) + " 300", 0},
		{"ignores SIGTERM", "trap '' TERM; touch \"$0\"; while :; do " + sleepPath(t) + " 1; done", 300 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "trapped")
			p, err := Start(Spec{Name: "sh", Path: sh, Args: []string{"-c", c.script, marker}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = p.Kill() })
			if c.atLeast > 0 { // wait until the shell ignores SIGTERM
				deadline := time.Now().Add(10 * time.Second)
				for _, err := os.Stat(marker); err != nil; _, err = os.Stat(marker) {
					if time.Now().After(deadline) {
						t.Fatal("the shell did not set its trap")
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
			start := time.Now()
			if err := Terminate(p.Pid(), 300*time.Millisecond); err != nil {
				t.Fatalf("Terminate: %v", err)
			}
			if took := time.Since(start); took < c.atLeast {
				t.Fatalf("Terminate took %s, want at least the grace period %s", took, c.atLeast)
			}
			select {
			case <-p.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("process still running after Terminate")
			}
			if err := Terminate(p.Pid(), time.Second); err != nil {
				t.Fatalf("Terminate of a process that is gone: %v", err)
			}
		})
	}
}

func TestFreePortsAreDistinctFreeAndOutsideTheEphemeralRange(t *testing.T) {
	ports, err := FreePorts(50)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := listenPortRange()
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] {
			t.Fatalf("port %d returned twice: %v", p, ports)
		}
		seen[p] = true
		if lo != 0 && (p < lo || p >= hi) {
			t.Errorf("port %d outside %d-%d: the kernel may give it to an outgoing connection", p, lo, hi)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Errorf("port %d is not free: %v", p, err)
			continue
		}
		_ = ln.Close()
	}
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 && lo == 0 {
			if start, err := strconv.Atoi(f[0]); err == nil && start >= listenPortMin+4096 {
				t.Errorf("the kernel's ephemeral range (%s) is readable but not used", strings.TrimSpace(string(b)))
			}
		}
	}
}

// TestFreePortsReservedAcrossProcesses: a port FreePorts picked stays reserved for this process
// while nothing listens on it (its process stopped by a fault test): another process's
// FreePorts does not pick it, a port nobody picked it may.
func TestFreePortsReservedAcrossProcesses(t *testing.T) {
	if port := os.Getenv("PROC_TEST_RESERVE_PORT"); port != "" {
		p, err := strconv.Atoi(port)
		if err != nil {
			t.Fatal(err)
		}
		if reservePort(p) {
			os.Exit(10) // reserved here
		}
		os.Exit(11) // held by another process
	}
	ports, err := FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	other, err := FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	free := other[0] + 1 // picked by nobody (unless just now)
	for _, tc := range []struct {
		port int
		want int
	}{{ports[0], 11}, {ports[1], 11}, {free, 10}} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestFreePortsReservedAcrossProcesses$")
		cmd.Env = append(os.Environ(), "PROC_TEST_RESERVE_PORT="+strconv.Itoa(tc.port))
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tc.want {
			t.Errorf("port %d in another process: exit %d, want %d (10: reserved there, 11: held here)", tc.port, code, tc.want)
		}
	}
}
