package controllers

import (
	"sync"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxstatus"
)

// DefaultProgressInterval is the default of --progress-status-interval (StatusOptions.ProgressInterval).
// With real Flux, the states a ClusterAddon passes through (helm-controller's "Running 'install'
// action", kustomize-controller's "Reconciliation in progress", the next component awaited) are a
// few seconds apart; at 2 s most of them cost a status write each, at 10 s most are merged into
// the write of the next fact (a stage applied, Available).
const DefaultProgressInterval = 10 * time.Second

// progressPacer holds back ClusterAddon status writes that only report progress
// (fluxstatus.ProgressOnly: a component Ready, the next one awaited, a new ClusterAddon's first
// "installing") for up to an interval, so that the states a ClusterAddon passes through within it
// cost one write: a Cluster whose addons are Ready a moment after they were delivered gets one
// status write, not one per Flux report. Whatever else a status says (Available, Degraded, a
// delivered release, stages, a condition's status) is written at once, and a held write is
// written when its interval is over (the reconcile is queued again for then).
//
// Only the rate limit lives in memory: the status is recomputed from the API at every reconcile,
// and a restarted process holds a write for one interval at most.
type progressPacer struct {
	// now is the clock (time.Now when nil).
	now clockFunc

	mu sync.Mutex
	// held are the progress-only writes held now, by ClusterAddon.
	held map[client.ObjectKey]heldWrite
}

// heldWrite is a progress-only status write being held.
type heldWrite struct {
	// since is when the first change of it was held, moved later by the time its ClusterAddon
	// waited in the operator's queue for a next component (nextStepReady).
	since time.Time
	// nextStepReady is when the Flux object a next component waits for was seen Ready while this
	// write was held (nextStepReady); zero when it was not, or once the reconcile after it held
	// the write again.
	nextStepReady time.Time
	// kubeconfigSeen is true when the latest status held says the kubeconfig Secret was found
	// (a fact a reconcile may use while the API server does not have it yet, see
	// heldKubeconfigSeen).
	kubeconfigSeen bool
}

// hold returns how long the write of ClusterAddon key from status cur (as stored) to next, a
// change, may still wait (0: write it now): up to interval after it was first held. A change
// that is not progress only is never held, nor any with an interval of 0.
func (p *progressPacer) hold(key client.ObjectKey, interval time.Duration, cur, next *csv1.ClusterAddonStatus) time.Duration {
	if interval <= 0 || !fluxstatus.ProgressOnly(cur, next) {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now.Now()
	h, ok := p.held[key]
	if !ok {
		if p.held == nil {
			p.held = map[client.ObjectKey]heldWrite{}
		}
		h.since = now
	}
	if !h.nextStepReady.IsZero() {
		// From when its next component could be written until now, the ClusterAddon waited in the
		// queue: that does not count.
		h.since = h.since.Add(now.Sub(h.nextStepReady))
		h.nextStepReady = time.Time{}
	}
	d := interval - now.Sub(h.since)
	if d <= 0 {
		return 0
	}
	h.kubeconfigSeen = apimeta.IsStatusConditionTrue(next.Conditions, csv1.WorkloadClusterReadyCondition)
	p.held[key] = h
	return d
}

// nextStepReady notes that the Flux object a next component of ClusterAddon key waits for is
// Ready, while a write of its status is held: the reconcile that writes the component may wait
// behind a long queue (nextStepPriority), and until it runs that wait does not count against the
// interval, so that the component is written while the report is held and shares its write. A
// report is thus held longer than the interval while the operator's queue has objects to write,
// by as long as they keep it waiting.
func (p *progressPacer) nextStepReady(key client.ObjectKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	h, ok := p.held[key]
	if !ok || !h.nextStepReady.IsZero() {
		return
	}
	h.nextStepReady = p.now.Now()
	p.held[key] = h
}

// due returns how long the progress-only write held for ClusterAddon key still waits with the
// given interval: 0 when none is held, when its interval is over, and when its next component's
// Ready was seen since (nextStepReady: the wait in the queue that follows does not count, so when
// the write is due is not known yet).
func (p *progressPacer) due(key client.ObjectKey, interval time.Duration) time.Duration {
	if interval <= 0 {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	h, ok := p.held[key]
	if !ok || !h.nextStepReady.IsZero() {
		return 0
	}
	return max(interval-p.now.Now().Sub(h.since), 0)
}

// heldKubeconfigSeen is true when a status held for key says the Cluster's kubeconfig Secret
// was found (WorkloadClusterReady True). Only a ClusterAddon's first status, held whole, has
// conditions the API server's status lacks; the Secret is then not read again at every reconcile
// until the status says so.
func (p *progressPacer) heldKubeconfigSeen(key client.ObjectKey) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held[key].kubeconfigSeen
}

// done forgets what was held for key: its status was written, needs no write, or the
// ClusterAddon is gone.
func (p *progressPacer) done(key client.ObjectKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.held, key)
}
