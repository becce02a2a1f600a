// Package e2e holds the end-to-end tests: the operator (bin/manager) on the local management
// plane with real API servers, real Flux controllers, a real Git server and workload clusters
// with kwok nodes. Nothing is faked.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/plane"
	"github.com/clusterstack-io/clusterstack-operator/internal/testenv"
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	// Bounds of a spec's waits, not of its expected time: on 2 cores shared with the fault
	// suite's plane, creating a workload cluster and installing its addons has taken over 3
	// minutes.
	SetDefaultEventuallyTimeout(5 * time.Minute)
	SetDefaultEventuallyPollingInterval(500 * time.Millisecond)
	EnforceDefaultTimeoutsWhenUsingContexts()
	suite, reporter := testenv.GinkgoConfiguration()
	RunSpecs(t, "ClusterStack operator end-to-end", suite, reporter)
}

const (
	// grace is the operator's degraded grace period in these tests.
	grace = 20 * time.Second
	// stacksRepo is the Git repository the reference stacks are published to.
	stacksRepo = "stacks"
	// newestVersion is the newest version published before the specs run.
	newestVersion = "v18"
	// namesVersion has components whose names collide with cluster names when joined with '-'
	// (see namesComponents).
	namesVersion = "v17"
	// hostileVersion has a values template that asks for two billion characters.
	hostileVersion = "v16"
	// pinnedVersion has a component whose Deployment runs only on nodes labelled
	// testPoolLabel=special.
	pinnedVersion = "v13"
	// helmInfoVersion delivers the cluster-info component as a Helm chart instead of a kustomize
	// directory (withClusterInfoChart). It is older than every other version: the webhook lists
	// the five newest published releases, and the missing-release spec expects v14 among them.
	helmInfoVersion = "v0"
	// addonTimeout is the operator's --addon-timeout in these tests (Flux's install, upgrade and
	// health-check timeout of cluster addons), short so that failures and retries come quickly.
	addonTimeout = 30 * time.Second
)

// operatorArgs are the flags of every operator instance of these tests, besides those the plane
// sets.
var operatorArgs = []string{"--degraded-grace-period=" + grace.String(), "--addon-timeout=" + addonTimeout.String(), "--zap-log-level=debug"}

// namesComponents are the extra components of namesVersion: with Clusters "a" and "a-b", "b-c"
// and "c" give the same "<cluster>-<component>"; the last has 40 characters.
var namesComponents = []string{"b-c", "c", "component-with-a-forty-character-name-xx"}

var (
	pl       *plane.Plane
	k8s      client.Client
	repoRoot string
	// withCAPI: the plane runs Cluster API's core manager and the providers' webhooks
	// (plane.Options.WithCAPI); E2E_WITH_CAPI=false runs the suite on localinfra's own
	// minimal topology instead.
	withCAPI = os.Getenv("E2E_WITH_CAPI") != "false"
)

var _ = BeforeSuite(func(ctx SpecContext) {
	ctrl.SetLogger(GinkgoLogr)
	stateDir, err := os.MkdirTemp("", "clusterstack-e2e-")
	Expect(err).NotTo(HaveOccurred())
	// Start finds the checkout from the working directory and says which binaries `make tools
	// build` (make test runs it) has not built yet.
	pl, err = plane.Start(ctx, plane.Options{
		StateDir:     stateDir,
		WithOperator: true,
		// Cluster API's topology controller builds the Clusters; localinfra plays the
		// providers (E2E_WITH_CAPI=false: localinfra's own minimal topology, faster).
		WithCAPI: withCAPI,
		// Gitea hosts the fleet repositories Flux applies and the operator proposes to.
		WithForge: true,
		// The main instance of sharding (README, Sharding): Clusters labelled with a shard are
		// the shards' ("Sharding by label"); no other spec labels its Clusters.
		OperatorArgs: append([]string{"--watch-label-selector=!" + csv1.ShardLabel}, operatorArgs...),
		// The specs leave their failures in place (a chart that never installs, an upgrade
		// rolled back again and again), and each such loop holds a helm-controller worker for
		// tens of seconds at a time: with Flux's default of 4 workers, late in the suite a
		// HelmRelease another spec asks to reconcile could wait minutes for one.
		FluxConcurrent: 10,
		StartTimeout:   4 * time.Minute,
		Logger:         GinkgoLogr,
	})
	Expect(err).NotTo(HaveOccurred(), "start the local plane; logs in %s", filepath.Join(stateDir, "logs"))
	repoRoot = pl.RepoRoot()
	k8s, err = pl.NewClient(csv1.AddToScheme)
	Expect(err).NotTo(HaveOccurred())
	GinkgoWriter.Printf("local plane up; kubeconfig %s, logs %s\n", pl.Kubeconfig(), pl.LogDir())

	_, err = pl.Git().CreateRepo(stacksRepo)
	Expect(err).NotTo(HaveOccurred())
	// The versions the specs use; tags are global to the repository, so each is published here,
	// before any spec runs (Ginkgo randomizes the order of top-level containers). Only the
	// auto-subscribe spec publishes a newer one (v20) while it runs, the missing-release spec
	// publishes v14, and the specs that move tags move only the versions they alone use (v4, v5,
	// v7).
	publishVersion(ctx, "v1", nil)
	publishVersion(ctx, "v2", withStackVersion("v2"))
	publishVersion(ctx, "v3", withoutClusterInfo)
	publishVersion(ctx, "v4", withStackVersion("v4"))
	publishVersion(ctx, "v5", withBrokenTemplate)
	publishVersion(ctx, "v6", withUninstallableChart)
	publishVersion(ctx, "v7", nil)
	publishVersion(ctx, "v8", withBrokenClusterClassChart)
	publishVersion(ctx, "v9", withRenamedPodCIDRKey)
	publishVersion(ctx, "v10", withBrokenTemplate)
	publishVersion(ctx, "v11", withHelmDeployment("never-helm", "none"))
	publishVersion(ctx, "v12", withKustomizeDeployment("never-ks", "none"))
	publishVersion(ctx, pinnedVersion, withKustomizeDeployment("pinned", "special"))
	publishVersion(ctx, helmInfoVersion, withClusterInfoChart)
	publishVersion(ctx, hostileVersion, withHostileTemplate)
	publishVersion(ctx, namesVersion, withConfigMapComponents(namesComponents...))
	publishVersion(ctx, newestVersion, withStackVersion(newestVersion))
}, NodeTimeout(6*time.Minute))

var _ = AfterSuite(func(ctx SpecContext) {
	if pl == nil {
		return
	}
	defer func() {
		if CurrentSpecReport().Failed() || os.Getenv("E2E_KEEP_LOGS") != "" {
			GinkgoWriter.Printf("logs kept in %s\n", pl.LogDir())
		}
		Expect(pl.Stop()).To(Succeed())
	}()
	// Credentials (issue 9): no Secret value in any generated object, status, Event or the
	// operator's log, after everything the suite did.
	expectNoSecretLeaked(ctx, true)
})

// publish commits the stacks/ tree of this repository, changed by mutate (which gets a copy), to
// the Git server and tags it.
func publish(ctx context.Context, tag string, mutate func(dir string)) {
	GinkgoHelper()
	publishTo(ctx, stacksRepo, tag, mutate)
}

// publishTo is publish into another repository of the Git server.
func publishTo(ctx context.Context, repo, tag string, mutate func(dir string)) {
	GinkgoHelper()
	dir := GinkgoT().TempDir()
	Expect(os.CopyFS(dir, os.DirFS(filepath.Join(repoRoot, "stacks")))).To(Succeed())
	if mutate != nil {
		mutate(dir)
	}
	Expect(pl.Git().Publish(ctx, repo, dir, ".", tag)).To(Succeed())
}

// gitURL is the URL of the stacks repository.
func gitURL() string { return pl.Git().RepoURL(stacksRepo) }

// failureLogs prints where the logs are when a spec fails.
var _ = ReportAfterEach(func(r SpecReport) {
	if r.Failed() && pl != nil {
		fmt.Fprintf(GinkgoWriter, "spec failed; component logs: %s\n", pl.LogDir())
	}
})
