package controllers

import (
	"errors"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterstack-io/clusterstack-operator/internal/render"
)

// How soon a Cluster whose values render ran out of time is rendered again: after
// renderAgainFirst, then twice as long after each further time-out in a row, up to
// renderAgainMax. A template that needs more than its time limit whatever the load costs each
// Cluster one render (bounded by --max-concurrent-renders) per renderAgainMax once the backoff
// is at its longest.
const (
	renderAgainFirst = 10 * time.Second
	renderAgainMax   = 10 * time.Minute
)

// renderAgainHint ends the ValuesRendered message of a render that ran out of time.
const renderAgainHint = " (tried again after a backoff: the limit counts wall-clock time, which a busy operator can run out of)"

// renderBackoff is the per-ClusterAddon backoff of renders that ran out of time (client-go's
// exponential failure rate limiter). It lives in memory only: a restarted process renders every
// Cluster again anyway.
type renderBackoff struct {
	once    sync.Once
	limiter workqueue.TypedRateLimiter[client.ObjectKey]
}

func (b *renderBackoff) get() workqueue.TypedRateLimiter[client.ObjectKey] {
	b.once.Do(func() {
		b.limiter = workqueue.NewTypedItemExponentialFailureRateLimiter[client.ObjectKey](renderAgainFirst, renderAgainMax)
	})
	return b.limiter
}

// next counts one more time-out of key's render in a row and returns when to render again.
func (b *renderBackoff) next(key client.ObjectKey) time.Duration { return b.get().When(key) }

// forget ends key's run of time-outs: its render succeeded, or the ClusterAddon is going.
func (b *renderBackoff) forget(key client.ObjectKey) { b.get().Forget(key) }

// outOfTime is true when a render failed for its time limit (render.LimitTime).
func outOfTime(err error) bool {
	var le *render.LimitError
	return errors.As(err, &le) && le.Limit == render.LimitTime
}
