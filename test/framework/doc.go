// Package framework is what the end-to-end, fault-injection and benchmark suites share: the
// local plane's start, the reference stack and publishing it at a version, builders of the
// objects a platform team writes (ClusterStacks, Clusters), condition matchers, and the checks
// that nothing delivered was reinstalled (Helm revisions, UIDs).
//
// Every part is real: the plane is the one `make demo` runs (bootstrap/plane), the Git server
// is the plane's, and the objects go to a real API server. The functions return errors, or are
// Gomega matchers, so that the Ginkgo suites and the benchmarks' testing.B use them alike.
package framework
