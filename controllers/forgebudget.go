package controllers

import "sync"

// hostBudget bounds how many ClusterStacks talk to one forge host at once. It never blocks: a
// stack that finds no room skips the forge for this reconcile and tries again shortly, so that
// a slow or hostile forge holds at most capacity workers of the updates controller (each for
// at most the forge's deadlines), never all of them.
type hostBudget struct {
	capacity int
	mu       sync.Mutex
	inUse    map[string]int
}

func newHostBudget(capacity int) *hostBudget {
	return &hostBudget{capacity: capacity, inUse: map[string]int{}}
}

// acquire takes room on host, and reports whether there was some.
func (b *hostBudget) acquire(host string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.inUse[host] >= b.capacity {
		return false
	}
	b.inUse[host]++
	return true
}

// release gives back room taken on host.
func (b *hostBudget) release(host string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.inUse[host] <= 1 {
		delete(b.inUse, host)
		return
	}
	b.inUse[host]--
}
