package controllers

import (
	"context"
	"errors"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// phase is one step of a reconcile, in the manner of Cluster API's core reconcilers: it reads
// and adds to the reconcile's scope S, and says when the reconcile should come back. Every
// reconciler with more than one step is a deletion branch or an ordered list of phases run by
// runPhases; what the phases learned is written to the status once, in a defer.
type phase[S any] func(ctx context.Context, s S) (ctrl.Result, error)

// errPhasesDone is returned by a phase that has done all this reconcile can do (it waits for
// something, or recorded a problem in the scope that its status reports): runPhases stops there,
// without an error.
var errPhasesDone = errors.New("nothing more to do in this reconcile")

// runPhases runs phases in order. It stops at the first error (errPhasesDone: without one) and
// returns the soonest requeue any phase that ran asked for.
func runPhases[S any](ctx context.Context, s S, phases ...phase[S]) (ctrl.Result, error) {
	var res ctrl.Result
	for _, p := range phases {
		r, err := p(ctx, s)
		res = lowestRequeue(res, r)
		if errors.Is(err, errPhasesDone) {
			return res, nil
		}
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// statusWrite writes what a reconcile's phases put in its scope, and says when the reconcile
// should come back for the status (0: not for its sake).
type statusWrite[S any] func(ctx context.Context, s S) (ctrl.Result, error)

// statusPolicy says when a reconcile's status is written.
type statusPolicy int

const (
	// statusAfterWholePass: only once every phase ran without an error. The status says what a
	// whole pass found; after an error it stays as the last whole pass left it, and the
	// reconcile is retried.
	statusAfterWholePass statusPolicy = iota
	// statusAlways: whether the phases all ran, one stopped or one failed: what they learned
	// is recorded.
	statusAlways
)

// runPhasesThenStatus is a reconcile's ordered phases (runPhases) and its one status write, in a
// defer, as policy says. The write's error is returned when the phases had none; with an error
// the result is empty, else the soonest requeue of the phases and the write.
func runPhasesThenStatus[S any](ctx context.Context, s S, policy statusPolicy, write statusWrite[S], phases ...phase[S]) (res ctrl.Result, retErr error) {
	defer func() {
		if retErr != nil && policy == statusAfterWholePass {
			res = ctrl.Result{} // controller-runtime ignores a result returned with an error
			return
		}
		written, err := write(ctx, s)
		if retErr == nil {
			retErr = err
		}
		if retErr != nil {
			res = ctrl.Result{}
			return
		}
		res = lowestRequeue(res, written)
	}()
	return runPhases(ctx, s, phases...)
}

// lowestRequeue is the result that comes back soonest of a and b, with its priority (see
// reportPriority): a RequeueAfter of 0 means "not for this reason".
func lowestRequeue(a, b ctrl.Result) ctrl.Result {
	d := soonest(a.RequeueAfter, b.RequeueAfter)
	if d == 0 {
		return ctrl.Result{}
	}
	res := ctrl.Result{RequeueAfter: d}
	// The priority of the one that wants it back then; when both do, the request's own unless
	// both ask for the same.
	switch {
	case d != b.RequeueAfter:
		res.Priority = a.Priority
	case d != a.RequeueAfter:
		res.Priority = b.Priority
	case a.Priority != nil && b.Priority != nil && *a.Priority == *b.Priority:
		res.Priority = a.Priority
	}
	return res
}

// requeueIn is the result of a phase that wants the reconcile back after d (0: not for its
// own sake).
func requeueIn(d time.Duration) ctrl.Result { return ctrl.Result{RequeueAfter: d} }

// soonest is the earliest of two requeue delays, 0 meaning none.
func soonest(a, b time.Duration) time.Duration {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}
