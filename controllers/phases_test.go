package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// TestRunPhases: the phases run in order until the first error, which is returned, or the first
// errPhasesDone, which stops them without one; the result is the soonest requeue any phase that
// ran asked for, a RequeueAfter of 0 asking for none.
func TestRunPhases(t *testing.T) {
	boom := errors.New("boom")
	step := func(name string, after time.Duration, err error) phase[*[]string] {
		return func(_ context.Context, ran *[]string) (ctrl.Result, error) {
			*ran = append(*ran, name)
			return ctrl.Result{RequeueAfter: after}, err
		}
	}
	for _, tc := range []struct {
		name    string
		phases  []phase[*[]string]
		ran     string
		after   time.Duration
		wantErr error
	}{
		{name: "all run; the soonest requeue, 0 is none",
			phases: []phase[*[]string]{step("a", time.Minute, nil), step("b", 0, nil), step("c", 10*time.Second, nil)}, ran: "abc", after: 10 * time.Second},
		{name: "no requeue",
			phases: []phase[*[]string]{step("a", 0, nil), step("b", 0, nil)}, ran: "ab"},
		{name: "done: stops without an error, with the requeues so far",
			phases: []phase[*[]string]{step("a", time.Minute, nil), step("b", 30*time.Second, errPhasesDone), step("c", time.Second, nil)}, ran: "ab", after: 30 * time.Second},
		{name: "an error stops the phases and is returned",
			phases: []phase[*[]string]{step("a", 0, nil), step("b", 0, boom), step("c", 0, nil)}, ran: "ab", wantErr: boom},
		{name: "a wrapped errPhasesDone is done too",
			phases: []phase[*[]string]{step("a", 0, fmt.Errorf("waiting: %w", errPhasesDone)), step("b", 0, nil)}, ran: "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ran []string
			res, err := runPhases(context.Background(), &ran, tc.phases...)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Errorf("error %v, want %v", err, tc.wantErr)
			}
			if got := strings.Join(ran, ""); got != tc.ran {
				t.Errorf("ran %q, want %q", got, tc.ran)
			}
			if res.RequeueAfter != tc.after {
				t.Errorf("requeue after %s, want %s", res.RequeueAfter, tc.after)
			}
		})
	}
}

// TestRunPhasesThenStatus: the status is written once, after the phases: always with
// statusAlways, only after a whole pass without an error with statusAfterWholePass. The phases'
// error wins over the write's; with an error the result is empty, else the soonest requeue of
// the phases and the write.
func TestRunPhasesThenStatus(t *testing.T) {
	boom, writeFailed := errors.New("boom"), errors.New("write failed")
	for _, tc := range []struct {
		name     string
		policy   statusPolicy
		phaseErr error
		writeErr error
		wrote    bool
		after    time.Duration
		wantErr  error
	}{
		{name: "whole pass: written, soonest requeue of phase and write", policy: statusAfterWholePass, wrote: true, after: 20 * time.Second},
		{name: "whole pass, phase failed: not written", policy: statusAfterWholePass, phaseErr: boom, wantErr: boom},
		{name: "whole pass, phases done early: written", policy: statusAfterWholePass, phaseErr: errPhasesDone, wrote: true, after: 20 * time.Second},
		{name: "whole pass, write failed: its error, no requeue", policy: statusAfterWholePass, writeErr: writeFailed, wrote: true, wantErr: writeFailed},
		{name: "always, phase failed: written, the phase's error", policy: statusAlways, phaseErr: boom, writeErr: writeFailed, wrote: true, wantErr: boom},
		{name: "always: written", policy: statusAlways, wrote: true, after: 20 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wrote := false
			write := func(context.Context, *[]string) (ctrl.Result, error) {
				wrote = true
				return ctrl.Result{RequeueAfter: 20 * time.Second}, tc.writeErr
			}
			p := func(context.Context, *[]string) (ctrl.Result, error) {
				return ctrl.Result{RequeueAfter: time.Minute}, tc.phaseErr
			}
			res, err := runPhasesThenStatus(context.Background(), &[]string{}, tc.policy, write, p)
			if wrote != tc.wrote {
				t.Errorf("status written %v, want %v", wrote, tc.wrote)
			}
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Errorf("error %v, want %v", err, tc.wantErr)
			}
			if res.RequeueAfter != tc.after {
				t.Errorf("requeue after %s, want %s", res.RequeueAfter, tc.after)
			}
		})
	}
}
