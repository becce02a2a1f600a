// Package window decides whether a rollout wave's maintenance windows are open at a given time,
// and when the next one opens. A window opens at each activation of a cron schedule read in an
// IANA time zone and stays open for a duration of real (elapsed) time. It has no client and no
// clock: the caller passes the time.
//
// Daylight-saving time follows github.com/robfig/cron/v3: an activation whose wall-clock time
// does not exist that day (02:30 when clocks jump from 02:00 to 03:00) does not happen that day;
// one whose wall-clock time happens twice (02:30 when clocks fall back from 03:00 to 02:00)
// happens at both, an hour apart. The duration is elapsed time, so a window of 4h opened at 00:00
// on the night clocks fall back closes at 03:00 local time.
package window

import (
	"fmt"
	"strings"
	"time"

	// The time zone database is compiled in: the operator's image has no /usr/share/zoneinfo.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// parser reads the five standard fields and the descriptors (@daily, ...).
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Window is one parsed maintenance window.
type Window struct {
	// Spec is the window as the API has it (for messages).
	Spec     csv1.MaintenanceWindow
	schedule cron.Schedule
	loc      *time.Location
	duration time.Duration
}

// Parse checks a maintenance window: the schedule with a cron parser, the time zone against
// the time zone database, the duration's bounds. The error names what is wrong.
func Parse(w csv1.MaintenanceWindow) (Window, error) {
	tz := w.TimeZone
	if tz == "" {
		tz = "UTC"
	}
	if strings.EqualFold(tz, "local") {
		return Window{}, fmt.Errorf("time zone %q: name an IANA time zone such as UTC or Europe/Berlin; Local depends on where the operator runs", w.TimeZone)
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return Window{}, fmt.Errorf("time zone %q is not in the time zone database: name an IANA time zone such as UTC or Europe/Berlin", w.TimeZone)
	}
	if strings.Contains(w.Schedule, "TZ=") {
		return Window{}, fmt.Errorf("schedule %q: set the time zone in timeZone, not in the schedule", w.Schedule)
	}
	sched, err := parser.Parse(w.Schedule)
	if err != nil {
		return Window{}, fmt.Errorf("schedule %q is not a cron schedule (minute hour day-of-month month day-of-week): %w", w.Schedule, err)
	}
	d := w.Duration.Duration
	if d < time.Minute || d > 7*24*time.Hour {
		return Window{}, fmt.Errorf("duration %s must be between 1m and 168h", d)
	}
	return Window{Spec: w, schedule: sched, loc: loc, duration: d}, nil
}

// ParseAll parses windows; the first error names the window by its position.
func ParseAll(ws []csv1.MaintenanceWindow) ([]Window, error) {
	out := make([]Window, 0, len(ws))
	for i, w := range ws {
		p, err := Parse(w)
		if err != nil {
			return nil, fmt.Errorf("windows[%d]: %w", i, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// State is where a set of windows stands at a time.
type State struct {
	// Open is true when a window is open at the time.
	Open bool
	// Closes is when the latest-closing open window closes (zero when none is open).
	Closes time.Time
	// Opens is when a window next opens after the time (zero when none will within a year, or
	// when Open). When windows overlap, it is the first start after the time.
	Opens time.Time
	// Window is the window that is open, or the one that opens next.
	Window *Window
}

// horizon bounds the search for the next opening: a schedule that never fires (30 February)
// reports no opening rather than looping.
const horizon = 366 * 24 * time.Hour

// activation is the last start of w at or before now that is still open at now, if any.
func (w Window) activation(now time.Time) (time.Time, bool) {
	// cron's Next is the first activation strictly after its argument: the first start after
	// now-duration is the one whose window covers now, if it started by now.
	t := w.schedule.Next(now.In(w.loc).Add(-w.duration))
	if t.IsZero() || t.After(now) {
		return time.Time{}, false
	}
	return t, true
}

// At evaluates windows at now. Without windows the state is always open.
func At(ws []Window, now time.Time) State {
	if len(ws) == 0 {
		return State{Open: true}
	}
	var st State
	for i := range ws {
		w := &ws[i]
		if start, ok := w.activation(now); ok {
			end := start.Add(w.duration)
			if !st.Open || end.After(st.Closes) {
				st.Open, st.Closes, st.Window = true, end, w
			}
		}
	}
	if st.Open {
		return st
	}
	for i := range ws {
		w := &ws[i]
		next := w.schedule.Next(now.In(w.loc))
		if next.IsZero() || next.Sub(now) > horizon {
			continue
		}
		if st.Opens.IsZero() || next.Before(st.Opens) {
			st.Opens, st.Window = next, w
		}
	}
	return st
}

// String describes the window for people: `"0 2 * * 1-5" for 4h (Europe/Berlin)`.
func (w Window) String() string {
	tz := w.Spec.TimeZone
	if tz == "" {
		tz = "UTC"
	}
	return fmt.Sprintf("%q for %s (%s)", w.Spec.Schedule, shortDuration(w.duration), tz)
}

// Describe says when the state changes next, for messages: "the window "0 2 * * *" for 4h
// (Europe/Berlin) opens at 2026-11-29T02:00:00+01:00 (in 3h12m)".
func (st State) Describe(now time.Time) string {
	switch {
	case st.Window == nil && st.Open:
		return "no maintenance window is set"
	case st.Open:
		return fmt.Sprintf("maintenance window %s is open until %s", st.Window, st.Closes.In(st.Window.loc).Format(time.RFC3339))
	case st.Window == nil:
		return "no maintenance window opens within a year"
	}
	return fmt.Sprintf("maintenance window %s opens at %s (in %s)", st.Window, st.Opens.In(st.Window.loc).Format(time.RFC3339), shortDuration(st.Opens.Sub(now).Round(time.Second)))
}

func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
