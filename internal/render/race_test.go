//go:build race

package render

// raceSlowdown scales the time bounds of these tests under the race detector, which makes
// template execution and YAML decoding (reflection, many small allocations) much slower: this
// package's tests took 11s without it and 107s with it on 2 cores.
const raceSlowdown = 10
