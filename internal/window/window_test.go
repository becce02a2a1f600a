package window

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

func mw(schedule, d, tz string) csv1.MaintenanceWindow {
	dur, err := time.ParseDuration(d)
	if err != nil {
		panic(err)
	}
	return csv1.MaintenanceWindow{Schedule: schedule, Duration: metav1.Duration{Duration: dur}, TimeZone: tz}
}

func at(t *testing.T, s, tz string) time.Time {
	t.Helper()
	loc, err := time.LoadLocation(tz)
	if err != nil {
		t.Fatal(err)
	}
	v, err := time.ParseInLocation("2006-01-02 15:04:05", s, loc)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    csv1.MaintenanceWindow
		want string
	}{
		{"unknown zone", mw("0 2 * * *", "1h", "Mars/Olympus"), `time zone "Mars/Olympus" is not in the time zone database`},
		{"local", mw("0 2 * * *", "1h", "Local"), "Local depends on where the operator runs"},
		{"minute out of range", mw("61 2 * * *", "1h", ""), `schedule "61 2 * * *" is not a cron schedule`},
		{"six fields", mw("0 0 2 * * *", "1h", ""), "is not a cron schedule"},
		{"CRON_TZ", mw("CRON_TZ=UTC 0 2 * * *", "1h", ""), "set the time zone in timeZone"},
		{"too short", mw("0 2 * * *", "30s", ""), "between 1m and 168h"},
		{"too long", mw("0 2 * * *", "169h", ""), "between 1m and 168h"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.w)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse(%+v) = %v, want an error containing %q", tc.w, err, tc.want)
			}
		})
	}
	if _, err := Parse(mw("@daily", "1h", "Europe/Berlin")); err != nil {
		t.Fatalf("a descriptor: %v", err)
	}
}

func TestAt(t *testing.T) {
	for _, tc := range []struct {
		name    string
		windows []csv1.MaintenanceWindow
		now     time.Time
		open    bool
		closes  time.Time // when open
		opens   time.Time // when closed
	}{
		{name: "no windows: always open", now: at(t, "2026-11-28 12:00:00", "UTC"), open: true},
		{
			name: "inside a window", windows: []csv1.MaintenanceWindow{mw("0 2 * * *", "4h", "UTC")},
			now: at(t, "2026-11-28 03:00:00", "UTC"), open: true, closes: at(t, "2026-11-28 06:00:00", "UTC"),
		},
		{
			name: "at the start: open", windows: []csv1.MaintenanceWindow{mw("0 2 * * *", "4h", "UTC")},
			now: at(t, "2026-11-28 02:00:00", "UTC"), open: true, closes: at(t, "2026-11-28 06:00:00", "UTC"),
		},
		{
			name: "at the end: closed, opens the next day", windows: []csv1.MaintenanceWindow{mw("0 2 * * *", "4h", "UTC")},
			now: at(t, "2026-11-28 06:00:00", "UTC"), opens: at(t, "2026-11-29 02:00:00", "UTC"),
		},
		{
			name: "the schedule is read in its time zone", windows: []csv1.MaintenanceWindow{mw("0 2 * * *", "1h", "Europe/Berlin")},
			// 02:00 in Berlin (CET, UTC+1) is 01:00 UTC.
			now: at(t, "2026-11-28 01:30:00", "UTC"), open: true, closes: at(t, "2026-11-28 03:00:00", "Europe/Berlin"),
		},
		{
			name: "the same UTC time is outside the window in another zone", windows: []csv1.MaintenanceWindow{mw("0 2 * * *", "1h", "America/New_York")},
			now: at(t, "2026-11-28 01:30:00", "UTC"), opens: at(t, "2026-11-28 02:00:00", "America/New_York"),
		},
		{
			name: "weekdays only: Saturday waits for Monday", windows: []csv1.MaintenanceWindow{mw("0 2 * * 1-5", "4h", "UTC")},
			now: at(t, "2026-11-28 03:00:00", "UTC"), opens: at(t, "2026-11-30 02:00:00", "UTC"),
		},
		{
			name: "a window spanning midnight", windows: []csv1.MaintenanceWindow{mw("0 22 * * *", "4h", "UTC")},
			now: at(t, "2026-11-29 01:00:00", "UTC"), open: true, closes: at(t, "2026-11-29 02:00:00", "UTC"),
		},
		{
			name: "two windows: the open one counts", windows: []csv1.MaintenanceWindow{mw("0 2 * * *", "1h", "UTC"), mw("0 12 * * *", "2h", "UTC")},
			now: at(t, "2026-11-28 13:00:00", "UTC"), open: true, closes: at(t, "2026-11-28 14:00:00", "UTC"),
		},
		{
			name: "two windows: the sooner opening counts", windows: []csv1.MaintenanceWindow{mw("0 2 * * *", "1h", "UTC"), mw("0 12 * * *", "2h", "UTC")},
			now: at(t, "2026-11-28 05:00:00", "UTC"), opens: at(t, "2026-11-28 12:00:00", "UTC"),
		},
		{
			name: "overlapping windows: open until the later closes", windows: []csv1.MaintenanceWindow{mw("0 2 * * *", "3h", "UTC"), mw("0 3 * * *", "3h", "UTC")},
			now: at(t, "2026-11-28 04:00:00", "UTC"), open: true, closes: at(t, "2026-11-28 06:00:00", "UTC"),
		},
		{
			name: "a schedule that never fires never opens", windows: []csv1.MaintenanceWindow{mw("0 2 30 2 *", "1h", "UTC")},
			now: at(t, "2026-11-28 05:00:00", "UTC"),
		},
		// Daylight-saving time in Europe/Berlin: 2026-03-29 02:00 CET jumps to 03:00 CEST;
		// 2026-10-25 03:00 CEST falls back to 02:00 CET.
		{
			name: "spring forward: 02:30 does not exist that day, the window opens the next day", windows: []csv1.MaintenanceWindow{mw("30 2 * * *", "1h", "Europe/Berlin")},
			now: at(t, "2026-03-29 01:00:00", "UTC"), opens: at(t, "2026-03-30 02:30:00", "Europe/Berlin"),
		},
		{
			name: "spring forward: a window opened before the jump lasts its elapsed duration", windows: []csv1.MaintenanceWindow{mw("0 1 * * *", "2h", "Europe/Berlin")},
			// 01:00 CET = 00:00 UTC; two hours later it is 02:00 UTC = 04:00 CEST.
			now: at(t, "2026-03-29 01:30:00", "UTC"), open: true, closes: at(t, "2026-03-29 02:00:00", "UTC"),
		},
		{
			name: "fall back: 02:30 happens twice, the window opens at the first", windows: []csv1.MaintenanceWindow{mw("30 2 * * *", "20m", "Europe/Berlin")},
			// The first 02:30 (CEST) is 00:30 UTC, the second (CET) 01:30 UTC.
			now: at(t, "2026-10-25 00:40:00", "UTC"), open: true, closes: at(t, "2026-10-25 00:50:00", "UTC"),
		},
		{
			name: "fall back: closed between the two 02:30s", windows: []csv1.MaintenanceWindow{mw("30 2 * * *", "20m", "Europe/Berlin")},
			now: at(t, "2026-10-25 01:00:00", "UTC"), opens: at(t, "2026-10-25 01:30:00", "UTC"),
		},
		{
			name: "fall back: and opens again at the second", windows: []csv1.MaintenanceWindow{mw("30 2 * * *", "20m", "Europe/Berlin")},
			now: at(t, "2026-10-25 01:40:00", "UTC"), open: true, closes: at(t, "2026-10-25 01:50:00", "UTC"),
		},
		{
			name: "fall back: a 4h window from midnight closes at 03:00 local (elapsed time)", windows: []csv1.MaintenanceWindow{mw("0 0 * * *", "4h", "Europe/Berlin")},
			// 00:00 CEST = 22:00 UTC the day before; +4h = 02:00 UTC = 03:00 CET.
			now: at(t, "2026-10-25 01:59:00", "UTC"), open: true, closes: at(t, "2026-10-25 03:00:00", "Europe/Berlin"),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws, err := ParseAll(tc.windows)
			if err != nil {
				t.Fatal(err)
			}
			st := At(ws, tc.now)
			if st.Open != tc.open {
				t.Fatalf("At(%s).Open = %v, want %v (%s)", tc.now.UTC(), st.Open, tc.open, st.Describe(tc.now))
			}
			if !st.Closes.Equal(tc.closes) {
				t.Errorf("Closes = %s, want %s", st.Closes.UTC(), tc.closes.UTC())
			}
			if !st.Opens.Equal(tc.opens) {
				t.Errorf("Opens = %s, want %s", st.Opens.UTC(), tc.opens.UTC())
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	ws, err := ParseAll([]csv1.MaintenanceWindow{mw("0 2 * * 1-5", "4h", "Europe/Berlin")})
	if err != nil {
		t.Fatal(err)
	}
	now := at(t, "2026-11-28 12:00:00", "UTC")
	got := At(ws, now).Describe(now)
	want := `maintenance window "0 2 * * 1-5" for 4h (Europe/Berlin) opens at 2026-11-30T02:00:00+01:00 (in 37h)`
	if got != want {
		t.Fatalf("Describe = %q, want %q", got, want)
	}
}
