package bench

import (
	"testing"
	"time"
)

func TestParseCPUTimes(t *testing.T) {
	got, err := parseCPUTimes("cpu  3374330 979 747450 2675042 26932 0 52699 29374 11 12")
	if err != nil {
		t.Fatal(err)
	}
	// guest (11) and guest_nice (12) are in user and nice already.
	if want := (cpuTimes{total: 3374330 + 979 + 747450 + 2675042 + 26932 + 0 + 52699 + 29374, steal: 29374}); got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for _, bad := range []string{"", "intr 1 2 3", "cpu 1 2 3", "cpu 1 2 3 4 5 6 7 x"} {
		if _, err := parseCPUTimes(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestStealBetween(t *testing.T) {
	for _, c := range []struct {
		name     string
		from, to cpuTimes
		want     float64
	}{
		{"a quarter stolen", cpuTimes{total: 1000, steal: 10}, cpuTimes{total: 1400, steal: 110}, 25},
		{"none stolen", cpuTimes{total: 1000, steal: 10}, cpuTimes{total: 1200, steal: 10}, 0},
		{"no tick between", cpuTimes{total: 1000, steal: 10}, cpuTimes{total: 1000, steal: 10}, -1},
		{"no first reading", cpuTimes{}, cpuTimes{total: 1000, steal: 10}, -1},
		{"counters went back", cpuTimes{total: 1000, steal: 10}, cpuTimes{total: 1200, steal: 5}, -1},
	} {
		if got := stealBetween(c.from, c.to); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

// TestSpeedProbe runs the probe's job on this machine: it records the CPU time of each run, and
// a job of more work takes more of it.
func TestSpeedProbe(t *testing.T) {
	p := startSpeedProbe(time.Hour)
	time.Sleep(10 * time.Millisecond) // the first job runs at once
	r := p.Stop()
	if r.Samples < 1 || r.JobCPU <= 0 {
		t.Fatalf("no job measured: %+v", r)
	}
	// 10 ms may pass within one clock tick of /proc/stat: then the steal is unknown (-1).
	if r.StealPercent != -1 && (r.StealPercent < 0 || r.StealPercent > 100) {
		t.Errorf("steal %.2f%%, want 0 to 100 or unknown (-1)", r.StealPercent)
	}
	// CPU time, not wall time: a sleep takes none.
	slept, err := threadCPU(func() error { time.Sleep(100 * time.Millisecond); return nil })
	if err != nil || slept > 20*time.Millisecond {
		t.Errorf("a sleep of 100ms took %s of CPU (%v), want almost none", slept, err)
	}
	// Four documents' decode takes more CPU than one's.
	one := &speedProbe{doc: speedProbeDoc()}
	four := &speedProbe{doc: []byte("[" + string(one.doc) + "," + string(one.doc) + "," + string(one.doc) + "," + string(one.doc) + "]")}
	best := func(p *speedProbe) time.Duration {
		var m time.Duration
		for range 5 {
			d, err := p.job()
			if err != nil {
				t.Fatal(err)
			}
			if m == 0 || d < m {
				m = d
			}
		}
		return m
	}
	if a, b := best(one), best(four); b < 2*a {
		t.Errorf("four documents took %s of CPU, one %s: want at least twice", b, a)
	}
}
