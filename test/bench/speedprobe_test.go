package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// How often a speedProbe runs its job (about 2 ms of CPU): in the real-Flux phases, which take
// minutes, and in the fan-out's, which take seconds at N = 100.
const (
	realFluxProbeInterval = 2 * time.Second
	fanoutProbeInterval   = 250 * time.Millisecond
)

// speedProbe gauges the machine's speed while a phase runs, so that two phases of one run can be
// told apart from a machine that slowed down between them (this one's speed varies by a third
// between runs of one command minutes apart). Every interval, on an OS thread of its
// own, it decodes a fixed JSON document, a list of objects like those the controllers decode
// from the API server, and records the CPU time that thread spent on it. CPU time, not wall time:
// how long the job waits for a core is the phase's load, not the machine's speed; the CPU time
// of fixed work grows when the cores run slower or their caches are shared with busier
// neighbours. It also reads the time the hypervisor stole from this machine (/proc/stat).
type speedProbe struct {
	doc      []byte
	interval time.Duration
	stop     chan struct{}
	done     chan struct{}
	// steal0 is /proc/stat's cpu line at the start.
	steal0 cpuTimes

	mu      sync.Mutex
	samples []time.Duration
}

// speedReading is what a speedProbe measured over a phase.
type speedReading struct {
	// JobCPU is the median CPU time of the fixed job; Samples how many ran.
	JobCPU  time.Duration
	Samples int
	// StealPercent is the share of all CPU time the hypervisor stole over the phase; -1 when
	// /proc/stat could not be read or no clock tick passed (a phase shorter than 10 ms).
	StealPercent float64
}

func (r speedReading) String() string {
	steal := "steal unknown"
	if r.StealPercent >= 0 {
		steal = fmt.Sprintf("%.1f%% stolen", r.StealPercent)
	}
	return fmt.Sprintf("fixed job p50 %.1f ms of CPU (%d runs), %s", float64(r.JobCPU.Microseconds())/1000, r.Samples, steal)
}

// over is how many times as costly the fixed job was in r as in base: above 1, the machine ran
// slower in r; 0 when base measured nothing.
func (r speedReading) over(base speedReading) float64 {
	if base.JobCPU <= 0 {
		return 0
	}
	return float64(r.JobCPU) / float64(base.JobCPU)
}

// startSpeedProbe starts a probe that runs its job at once and every interval; stop it with Stop.
func startSpeedProbe(interval time.Duration) *speedProbe {
	p := &speedProbe{doc: speedProbeDoc(), interval: interval, stop: make(chan struct{}), done: make(chan struct{})}
	p.steal0, _ = readCPUTimes()
	go p.run()
	return p
}

func (p *speedProbe) run() {
	defer close(p.done)
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		if d, err := p.job(); err == nil {
			p.mu.Lock()
			p.samples = append(p.samples, d)
			p.mu.Unlock()
		}
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
	}
}

// job decodes the document once and returns the CPU time the thread spent on it.
func (p *speedProbe) job() (time.Duration, error) {
	return threadCPU(func() error {
		var v any
		return json.Unmarshal(p.doc, &v)
	})
}

// threadCPU runs f on one OS thread and returns the CPU time that thread spent on it: not the
// time it waited for a core, slept or was stolen.
func threadCPU(f func() error) (time.Duration, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var before, after unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &before); err != nil {
		return 0, err
	}
	if err := f(); err != nil {
		return 0, err
	}
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &after); err != nil {
		return 0, err
	}
	return time.Duration(after.Nano() - before.Nano()), nil
}

// Stop ends the probe and returns what it measured.
func (p *speedProbe) Stop() speedReading {
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	r := speedReading{JobCPU: percentile(p.samples, 50), Samples: len(p.samples), StealPercent: -1}
	if now, err := readCPUTimes(); err == nil {
		r.StealPercent = stealBetween(p.steal0, now)
	}
	return r
}

// stealBetween is the share of all CPU time stolen between two readings of /proc/stat, in
// percent; -1 when it cannot tell: the first reading is missing, or no tick passed between them.
func stealBetween(from, to cpuTimes) float64 {
	if from.total == 0 || to.total <= from.total || to.steal < from.steal {
		return -1
	}
	return 100 * float64(to.steal-from.steal) / float64(to.total-from.total)
}

// speedProbeDoc is a fixed JSON list of 200 ConfigMap-like objects (about 200 KB): labels,
// annotations, managed fields and data, as the controllers' informers decode them. It is built
// once, not at the start of every phase a probe gauges.
var speedProbeDoc = sync.OnceValue(func() []byte {
	type item struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Metadata   map[string]any    `json:"metadata"`
		Data       map[string]string `json:"data"`
	}
	items := make([]item, 200)
	for i := range items {
		name := "cluster-" + strconv.Itoa(i)
		items[i] = item{APIVersion: "v1", Kind: "ConfigMap",
			Metadata: map[string]any{
				"name": name + "-values", "namespace": "tenant", "uid": fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i),
				"resourceVersion": strconv.Itoa(100000 + i), "generation": i,
				"labels":      map[string]string{"clusterstack.io/cluster-name": name, "clusterstack.io/release": "aws-base-1-36-v1"},
				"annotations": map[string]string{"clusterstack.io/applied-hash": strings.Repeat("ab", 32)},
				"managedFields": []map[string]any{{"manager": "clusterstack-operator", "operation": "Apply",
					"fieldsV1": map[string]any{"f:data": map[string]any{"f:values.yaml": map[string]any{}}}}},
			},
			Data: map[string]string{"values.yaml": strings.Repeat("replicas: 2\nimage: registry.example/addon:v1.2.3\n", 12)},
		}
	}
	b, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	if err != nil {
		panic(err)
	}
	return b
})

// cpuTimes is /proc/stat's first line: all CPU time and the time stolen, in clock ticks.
type cpuTimes struct{ total, steal uint64 }

func readCPUTimes() (cpuTimes, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}, err
	}
	line, _, _ := strings.Cut(string(data), "\n")
	return parseCPUTimes(line)
}

// parseCPUTimes reads /proc/stat's "cpu" line: user nice system idle iowait irq softirq steal
// guest guest_nice, of which guest and guest_nice are in user and nice already.
func parseCPUTimes(line string) (cpuTimes, error) {
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return cpuTimes{}, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var t cpuTimes
	for i, s := range f[1:9] {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return cpuTimes{}, fmt.Errorf("/proc/stat: %w", err)
		}
		t.total += v
		if i == 7 {
			t.steal = v
		}
	}
	return t, nil
}
