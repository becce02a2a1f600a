// Package faults is the fault-injection suite (`make test-faults`, run by `make test`): the
// operator on the local plane with real components, while the suite injects faults into them —
// the operator killed with SIGKILL at random points, the Flux controllers, the Git server, a
// workload API server and the management API server stopped and started again, a second
// operator replica taking over the leader lease, and a management API that answers slowly and
// with errors (bootstrap/faultproxy in front of the operator's client). Each scenario checks
// that the fleet converges afterwards, that nothing was lost or done twice (every generated
// object exactly once with the expected content, the values ConfigMap's data as the release
// renders it for its Cluster, the Helm release history of every workload cluster, no object
// removed or recreated), and that status was honest throughout (sampled every second: nothing
// Degraded before the grace period counted from the fault, every Degraded message naming the
// cluster, the component, the Flux object and what Flux reported for it). After the management API server
// restarts, the operator writes nothing but its lease renewals (the API server's audit log is
// the witness).
//
// It runs without Cluster API's core manager by default: localinfra builds each Cluster's
// topology itself. The faults it injects are into the operator, Flux, Git and the API servers,
// none into CAPI, and the end-to-end suite beside it covers the operator with CAPI's topology
// controller. CAPI's manager idles cheaply (about 0.08 CPU-s a minute more on an idle plane),
// but with Clusters its topology and Cluster controllers and its connection to every workload
// cluster cost the same scenarios about a fifth more CPU (measured with 3 Clusters: 141 CPU-s
// against 115), on the 2-core machine that runs this suite beside the end-to-end suite.
// FAULTS_WITH_CAPI=true runs it with CAPI; the report and the output say which ran.
//
// Settings (environment):
//
//	FAULTS_SEED      seed of every random choice (printed; set it to replay a run)
//	FAULTS_CLUSTERS  number of Clusters of the fleet in the first scenario (10)
//	FAULTS_LATER_CLUSTERS  how many of them the later scenarios keep (6)
//	FAULTS_WITH_CAPI run Cluster API's core manager in the plane (false: localinfra's topology)
//	FAULTS_REPORT    file the scenario table is written to (markdown, with the commit, date,
//	                 machine, seed, fleet and wall time), besides the test output
package faults

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterstack-io/clusterstack-operator/bootstrap/plane"
	"github.com/clusterstack-io/clusterstack-operator/internal/render"
	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
	"github.com/clusterstack-io/clusterstack-operator/internal/testenv"
	"github.com/clusterstack-io/clusterstack-operator/test/framework"
)

func TestFaults(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(4 * time.Minute)
	SetDefaultEventuallyPollingInterval(500 * time.Millisecond)
	EnforceDefaultTimeoutsWhenUsingContexts()
	suite, reporter := testenv.GinkgoConfiguration("faults")
	RunSpecs(t, "ClusterStack operator fault injection", suite, reporter)
}

const (
	// ns is the tenant namespace of the fleet.
	ns = "faults"
	// stackName is the ClusterStack of the fleet (the repository's reference stack).
	stackName = framework.StackName
	// stacksRepo is the Git repository the versions are published to.
	stacksRepo = "stacks"
	// grace is the operator's --degraded-grace-period here: short, so that scenarios see
	// Degraded soon, but above what a Flux object of a healthy Cluster may wait for a worker of
	// its controller on 2 cores shared by two planes and about 25 workload clusters (~35 s has
	// been seen), or a healthy Cluster is reported Degraded.
	grace = time.Minute
	// addonTimeout is the operator's --addon-timeout here (Flux's timeout of one install or
	// upgrade): a Helm upgrade that ran out of it on a busy machine would be remediated, an
	// extra Helm revision the scenarios would report.
	addonTimeout = time.Minute
	// Leader election of the operator's replicas.
	leaseDuration = 8 * time.Second
	renewDeadline = 6 * time.Second
	retryPeriod   = time.Second
	// versions is how many versions are published; each scenario rolls the fleet to the next.
	versions = 16
)

var (
	pl       *plane.Plane
	k8s      client.Client
	repoRoot string
	// seed seeds every random choice of the suite (FAULTS_SEED).
	seed uint64
	// fl is the fleet the scenarios roll out.
	fl *fleet
	// report collects one row per scenario.
	report = &scenarioReport{}
	// withCAPI runs Cluster API's core manager in the plane (FAULTS_WITH_CAPI).
	withCAPI = os.Getenv("FAULTS_WITH_CAPI") == "true"
	// components are the value templates of each published version, by version: what the
	// release renders into a Cluster's values ConfigMap.
	components = map[string][]render.Component{}
)

// Fleet sizes (FAULTS_CLUSTERS, FAULTS_LATER_CLUSTERS): enough Clusters that half a fleet is in
// flight when a fault hits and the rest keeps converging beside a Cluster that cannot, few
// enough that the suite's workload clusters (an API server, etcd, controller manager, scheduler
// and kwok each) leave the end-to-end suite, which runs beside it, its share of 2 cores (the
// two suites together, with 8 here, once reached a load average of 40 during scenario 3 on a
// busy host, and the starved API servers failed it).
var (
	fleetSize  = envInt("FAULTS_CLUSTERS", 10)
	laterFleet = min(fleetSize, envInt("FAULTS_LATER_CLUSTERS", 6))
)

// planeKind says whether the plane runs Cluster API's core manager, and why not by default.
func planeKind() string {
	if withCAPI {
		return "with Cluster API's core manager (FAULTS_WITH_CAPI=true): its topology controller builds the Clusters"
	}
	return "without Cluster API's core manager (FAULTS_WITH_CAPI=true to run it): localinfra builds the Clusters' topology; no fault is injected into CAPI, the end-to-end suite covers the operator with CAPI, and CAPI costs these scenarios about a fifth more CPU"
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// rng returns a random source for one use, derived from the suite's seed and a stream number,
// so that each scenario's choices replay independently of the others'.
func rng(stream uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, stream)) }

var _ = BeforeSuite(func(ctx SpecContext) {
	ctrl.SetLogger(GinkgoLogr)
	seed = uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("FAULTS_SEED"), 10, 64); err == nil {
		seed = v
	}
	report.start, report.fleet, report.later = time.Now(), fleetSize, laterFleet
	fmt.Fprintf(GinkgoWriter, "fault suite seed %d (replay: FAULTS_SEED=%d make test-faults); fleet of %d Clusters, %d after scenario 1; plane %s\n",
		seed, seed, fleetSize, laterFleet, planeKind())
	AddReportEntry("seed", seed)

	// The plane finds the checkout from the working directory and says which binaries `make
	// tools build` (make test-faults runs it) has not built yet.
	var err error
	pl, k8s, err = framework.StartPlane(ctx, "faults", plane.Options{
		WithOperator:         true,
		WithCAPI:             withCAPI,
		SkipFixtureOperators: true,
		// Two replicas with leader election, as the Helm chart installs it; the operator talks
		// to the API server through the fault proxy (which injects nothing until asked).
		OperatorReplicas: 2,
		OperatorAPIProxy: true,
		// The API server's audit log names every write of the operator (scenario 5).
		AuditWritesOf: []string{plane.OperatorUser},
		OperatorArgs: []string{
			// A controller stopped in scenario 2 is reported after the grace period, as any
			// other fault: its queue's grace period is the same here.
			"--degraded-grace-period=" + grace.String(), "--flux-queue-grace-period=" + grace.String(), "--addon-timeout=" + addonTimeout.String(),
			"--leader-elect", "--leader-elect-lease-duration=" + leaseDuration.String(),
			"--leader-elect-renew-deadline=" + renewDeadline.String(), "--leader-elect-retry-period=" + retryPeriod.String(),
		},
		StartTimeout: 4 * time.Minute,
		Logger:       GinkgoLogr,
	})
	Expect(err).NotTo(HaveOccurred())
	repoRoot = pl.RepoRoot()
	startSecretWatch(ctx)
	fmt.Fprintf(GinkgoWriter, "local plane up; kubeconfig %s, logs %s\n", pl.Kubeconfig(), pl.LogDir())

	_, err = pl.Git().CreateRepo(stacksRepo)
	Expect(err).NotTo(HaveOccurred())
	all := make([]framework.Version, 0, versions)
	for i := 1; i <= versions; i++ {
		all = append(all, versionOf(version(i)))
	}
	Expect(framework.PublishVersions(ctx, pl.Git(), repoRoot, GinkgoT().TempDir(), stacksRepo, all...)).To(Succeed())
	Expect(pl.CreateTenantNamespace(ctx, ns)).To(Succeed())

	fl = newFleet(fleetSize)
	fl.create(ctx)
}, NodeTimeout(15*time.Minute))

var _ = AfterSuite(func() {
	if pl == nil {
		return
	}
	if fl != nil && fl.status != nil {
		fl.status.Stop()
	}
	report.Print(GinkgoWriter)
	if path := os.Getenv("FAULTS_REPORT"); path != "" {
		Expect(os.WriteFile(path, []byte(report.Markdown()), 0o644)).To(Succeed())
	}
	// Credentials: no value of a Secret seen during the suite in any generated object, status,
	// Event or operator log.
	leaks, leakErr := secretLeaks()
	if CurrentSpecReport().Failed() || os.Getenv("FAULTS_KEEP_LOGS") != "" {
		fmt.Fprintf(GinkgoWriter, "logs kept in %s\n", pl.LogDir())
	}
	Expect(pl.Stop()).To(Succeed())
	Expect(leakErr).NotTo(HaveOccurred())
	Expect(leaks.Leaks).To(BeEmpty(), leaks.Summary())
})

var _ = ReportAfterEach(func(r SpecReport) {
	if r.Failed() && pl != nil {
		fmt.Fprintf(GinkgoWriter, "spec failed (seed %d); component logs: %s\n", seed, pl.LogDir())
	}
})

// version is the name of the i-th published version ("v3").
func version(i int) string { return "v" + strconv.Itoa(i) }

// releaseOf is the ClusterStackRelease (and ClusterClass) name of version v.
func releaseOf(v string) string { return framework.ReleaseOf(v) }

// versionOf is the reference stack as version v: the cluster-class chart has version v (as a
// release step sets it), and both addon components change with every version (the cni chart's
// values and the cluster-info ConfigMap carry the version), so that moving a Cluster to the next
// version is exactly one Helm upgrade and one new Kustomization revision.
func versionOf(v string) framework.Version {
	return framework.Version{Name: v, Mutate: func(sd string) error {
		appendTo(sd, "cluster-addon/cni/overwrite.yaml", "  stackVersion: \""+v+"\"\n")
		appendTo(sd, "cluster-addon/cluster-info/configmap.yaml", "  stack-version: \""+v+"\"\n")
		st, err := stack.Load(sd)
		if err != nil {
			return fmt.Errorf("load version %s: %w", v, err)
		}
		components[v] = st.RenderComponents()
		return nil
	}}
}

func appendTo(dir, rel, text string) {
	GinkgoHelper()
	path := filepath.Join(dir, rel)
	b, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	Expect(os.WriteFile(path, append(b, text...), 0o644)).To(Succeed())
}
