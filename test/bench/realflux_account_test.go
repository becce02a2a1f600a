package bench

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// phaseAccount is what one phase of BenchmarkRealFlux cost the whole plane: the CPU each process
// spent in it, by name, and the API servers' requests (watches left out, as they are
// long-running), by "resource[/subresource] VERB", the workload API servers' summed with
// workloadRequests before it (scrapePlaneRequests). Set side by side for the operator's phase and
// Flux alone's, it says what the operator's phase adds to Flux alone's work, which the phases'
// times, on two saturated cores whose speed drifts, say only through the drift.
type phaseAccount struct {
	cpu      map[string]time.Duration
	requests map[string]float64
}

// notWatch keeps every verb but the long-running ones.
func notWatch(verb string) bool { return verb != "WATCH" && verb != "CONNECT" }

// newPhaseAccount is the account of a phase whose servers and controllers (usage; those whose
// figures could not be read are left out) spent what they did, with the requests the API servers
// served in it (scrapePlaneRequests).
func newPhaseAccount(servers phaseCPU, usage []procUsage, requests map[string]float64) phaseAccount {
	a := phaseAccount{requests: requests, cpu: map[string]time.Duration{
		"management API server": servers.api, "etcd": servers.etcd, "this benchmark": servers.self, "workload API servers": servers.workloads,
	}}
	for _, u := range usage {
		if u.err == nil {
			a.cpu[u.name] = time.Duration(u.cpu * float64(time.Second))
		}
	}
	return a
}

// total is the CPU every process of the phase spent.
func (a phaseAccount) total() time.Duration {
	var t time.Duration
	for _, d := range a.cpu {
		t += d
	}
	return t
}

// meanAccount is the mean of the accounts, figure by figure; a figure missing from one counts 0 there.
func meanAccount(accounts ...phaseAccount) phaseAccount {
	m := phaseAccount{cpu: map[string]time.Duration{}, requests: map[string]float64{}}
	if len(accounts) == 0 {
		return m
	}
	for _, a := range accounts {
		for k, d := range a.cpu {
			m.cpu[k] += d / time.Duration(len(accounts))
		}
		for k, v := range a.requests {
			m.requests[k] += v / float64(len(accounts))
		}
	}
	return m
}

// cpuBeyond is how much more CPU a's phase took than base's: in all, as a ratio, and by process,
// the largest differences first.
func cpuBeyond(a, base phaseAccount) string {
	ds := largestDiffs(a.cpu, base.cpu, 100*time.Millisecond)
	parts := make([]string, 0, len(ds))
	for _, d := range ds {
		parts = append(parts, fmt.Sprintf("%s %s", d.key, signed(d.d.Round(100*time.Millisecond).String(), d.d >= 0)))
	}
	ratio := math.NaN()
	if base.total() > 0 {
		ratio = a.total().Seconds() / base.total().Seconds()
	}
	return fmt.Sprintf("%s against %s (%.2fx): %s", a.total().Round(time.Second), base.total().Round(time.Second), ratio, strings.Join(parts, ", "))
}

// requestsBeyond is how many more requests of each kind the API servers served in a's phase than
// in base's, for n Clusters: those that differ by at least min, the largest
// differences first, with their number per Cluster.
func requestsBeyond(a, base phaseAccount, n int, min float64) string {
	ds := largestDiffs(a.requests, base.requests, min)
	if len(ds) == 0 {
		return fmt.Sprintf("none differs by %.0f or more", min)
	}
	parts := make([]string, 0, len(ds))
	for _, d := range ds {
		parts = append(parts, fmt.Sprintf("%s %s (%.2f per Cluster)", d.key, signed(fmt.Sprintf("%.0f", math.Abs(d.d)), d.d >= 0), d.d/float64(n)))
	}
	return strings.Join(parts, ", ")
}

// writesPerCluster is how many writes the management API server served in a's phase for each of
// its n Clusters (the workload API servers' left out), and those of each kind with at least 0.05
// per Cluster, the most first: what every write a phase adds is to be set against.
func writesPerCluster(a phaseAccount, n int) string {
	if n <= 0 {
		return "no Clusters"
	}
	var total float64
	writes := map[string]float64{}
	for k, v := range a.requests {
		i := strings.LastIndexByte(k, ' ')
		if strings.HasPrefix(k, workloadRequests) || i < 0 || !apiWriteVerbs[k[i+1:]] {
			continue
		}
		total += v
		if v/float64(n) >= 0.05 {
			writes[k] = v
		}
	}
	ds := largestDiffs(writes, nil, 0)
	parts := make([]string, 0, len(ds))
	for _, d := range ds {
		parts = append(parts, fmt.Sprintf("%s %.2f", d.key, d.d/float64(n)))
	}
	return fmt.Sprintf("%.2f (%s)", total/float64(n), strings.Join(parts, ", "))
}

// keyedDiff is how much a figure of one account exceeds the same of another.
type keyedDiff[V ~int64 | ~float64] struct {
	key string
	d   V
}

// largestDiffs is a's figures less b's, for every key of either whose difference is at least min
// either way, the largest differences first (of equal ones, by key).
func largestDiffs[V ~int64 | ~float64](a, b map[string]V, min V) []keyedDiff[V] {
	abs := func(v V) V { return max(v, -v) }
	var ds []keyedDiff[V]
	for _, k := range keysOf(a, b) {
		if d := a[k] - b[k]; abs(d) >= min {
			ds = append(ds, keyedDiff[V]{k, d})
		}
	}
	slices.SortStableFunc(ds, func(x, y keyedDiff[V]) int { return cmp.Compare(abs(y.d), abs(x.d)) })
	return ds
}

// signed puts the sign of a difference before its magnitude, s.
func signed(s string, positive bool) string {
	s = strings.TrimPrefix(s, "-")
	if positive {
		return "+" + s
	}
	return "-" + s
}

// keysOf is the keys of both maps, sorted.
func keysOf[V any](a, b map[string]V) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// diffMap is how much each count grew from before to after.
func diffMap(before, after map[string]float64) map[string]float64 {
	out := make(map[string]float64, len(after))
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}
