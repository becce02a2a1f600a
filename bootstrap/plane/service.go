package plane

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/clusterstack-io/clusterstack-operator/bootstrap/proc"
)

const (
	// restartDelay is how long a service waits before it starts a process that exited
	// unasked again, doubled after each quick exit up to maxRestartDelay.
	restartDelay    = time.Second
	maxRestartDelay = 30 * time.Second
	// steadyRun is how long a process must have run for its exit not to count as a quick one.
	steadyRun = time.Minute
)

// service is a process of the plane (a Flux controller, an operator replica) that can be
// stopped and started again with the same spec (flags, environment, ports, log file), and that
// is started again when it exits without being asked to (a crash, an exit on lost leadership),
// after a delay, as a kubelet restarts a Pod's container. A process stopped through the service
// stays stopped until start.
type service struct {
	spec proc.Spec
	// ready waits until a started process is ready; nil: no readiness check.
	ready func(ctx context.Context, pr *proc.Process) error
	// started is called after each start (the plane records the process groups).
	started func()
	log     logr.Logger

	mu       sync.Mutex
	cur      *proc.Process
	startAt  time.Time
	want     bool // the process should run: restart it when it exits
	closed   bool // the plane stops: never start again
	restarts int  // starts after unasked exits
	quick    int  // consecutive quick exits
	wake     chan struct{}
}

func newService(spec proc.Spec, ready func(context.Context, *proc.Process) error, started func(), log logr.Logger) *service {
	return &service{spec: spec, ready: ready, started: started, log: log.WithValues("process", spec.Name), wake: make(chan struct{})}
}

// name is the process's name.
func (s *service) name() string { return s.spec.Name }

// start starts the process unless it runs, and waits until it is ready.
func (s *service) start(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return fmt.Errorf("start %s: the plane is stopping", s.spec.Name)
	}
	s.want = true
	pr := s.cur
	if pr == nil || pr.Exited() != nil {
		var err error
		if pr, err = s.launchLocked(); err != nil {
			s.mu.Unlock()
			return err
		}
	}
	s.mu.Unlock()
	if s.ready == nil {
		return nil
	}
	if err := s.ready(ctx, pr); err != nil {
		return fmt.Errorf("%s not ready (log: %s): %w", s.spec.Name, pr.LogFile(), err)
	}
	return nil
}

// launchLocked starts a new process and watches it; the caller holds mu.
func (s *service) launchLocked() (*proc.Process, error) {
	pr, err := proc.Start(s.spec)
	if err != nil {
		return nil, err
	}
	s.cur, s.startAt = pr, time.Now()
	go s.watch(pr)
	if s.started != nil {
		s.started()
	}
	return pr, nil
}

// watch starts pr's successor when pr exits while the process should run.
func (s *service) watch(pr *proc.Process) {
	<-pr.Done()
	s.mu.Lock()
	if s.cur != pr || !s.want || s.closed {
		s.mu.Unlock()
		return
	}
	if time.Since(s.startAt) < steadyRun {
		s.quick++
	} else {
		s.quick = 0
	}
	delay := restartDelay
	for i := 1; i < s.quick && delay < maxRestartDelay; i++ {
		delay *= 2
	}
	delay = min(delay, maxRestartDelay)
	wake := s.wake
	s.mu.Unlock()
	s.log.Info("process exited unasked; starting it again", "exit", pr.Exited().Error(), "in", delay)

	select {
	case <-time.After(delay):
	case <-wake:
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != pr || !s.want || s.closed {
		return // stopped or started meanwhile
	}
	if _, err := s.launchLocked(); err != nil {
		s.log.Error(err, "start again")
		return
	}
	s.restarts++
}

// stop stops the process (SIGTERM, SIGKILL after proc.DefaultStopTimeout; SIGKILL at once
// when kill) and keeps it stopped. It does nothing when no process runs.
func (s *service) stop(kill bool) error {
	s.mu.Lock()
	s.want = false
	pr := s.cur
	s.mu.Unlock()
	if pr == nil {
		return nil
	}
	var err error
	if kill {
		err = pr.Kill()
	} else {
		err = pr.Stop(proc.DefaultStopTimeout)
	}
	if err != nil {
		return fmt.Errorf("stop %s: %w", s.spec.Name, err)
	}
	return nil
}

// close stops the process for good: no start afterwards.
func (s *service) close() error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.wake)
	}
	s.mu.Unlock()
	return s.stop(false)
}

// process is the current process (perhaps exited), nil before the first start.
func (s *service) process() *proc.Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// running tells whether the current process runs.
func (s *service) running() bool {
	pr := s.process()
	return pr != nil && pr.Exited() == nil
}

// restartCount is how often the process was started again after an unasked exit.
func (s *service) restartCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restarts
}
