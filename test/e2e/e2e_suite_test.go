// Package e2e holds the end-to-end tests: the operator (bin/manager) on the local management
// plane (package bootstrap/plane), every process on loopback.
//
// Real, built from their upstream modules and run as they run in a cluster: kube-apiserver and
// etcd (the management cluster and each workload cluster), kube-controller-manager and
// kube-scheduler (management and workload clusters), Flux's source-, kustomize- and
// helm-controller, Cluster API's core manager with its webhooks and topology controller, and
// the kubeadm bootstrap and control-plane providers' and CAPD's webhooks (E2E_WITH_CAPI=false
// leaves CAPI out), a Git smart-HTTP server (git http-backend) and Gitea for pull requests.
//
// Standing in: kwok plays the kubelets (Nodes turn Ready, Pods become Running and Ready
// without containers); package bootstrap/localinfra plays the infrastructure, control-plane and
// bootstrap providers (a Cluster becomes a local workload cluster, its kubeconfig Secret and the
// provider objects' status; without CAPI also the topology step); and the plane installs
// permissive stand-in CRDs (plane.StandInCRD) for provider kinds no pinned module ships
// (Cluster API Provider OpenStack's and ORC's Image).
package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/plane"
	"github.com/clusterstack-io/clusterstack-operator/internal/testenv"
	"github.com/clusterstack-io/clusterstack-operator/test/framework"
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	// Bounds of a spec's waits, not of its expected time: on 2 cores shared with the fault
	// suite's plane, creating a workload cluster and installing its addons has taken over 3
	// minutes.
	SetDefaultEventuallyTimeout(5 * time.Minute)
	SetDefaultEventuallyPollingInterval(500 * time.Millisecond)
	EnforceDefaultTimeoutsWhenUsingContexts()
	suite, reporter := testenv.GinkgoConfiguration("e2e")
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
	// pushRetry is the operator's --push-retry-interval in these tests: how long after the
	// forge refused a push the operator tries again. It is longer than two intervals of the
	// GitOps loop's stack (10s), at each of which the operator reconciles the stack's updates: a
	// push retried at every reconcile shows within the spec's window of two intervals.
	pushRetry = 30 * time.Second
	// forgeAPITimeout and gitOperationTimeout are the operator's --forge-api-timeout and
	// --git-operation-timeout in these tests: a forge that holds a request (the tarpit of the
	// proposal attacks) is given up on within them.
	forgeAPITimeout     = 10 * time.Second
	gitOperationTimeout = 20 * time.Second
	// hookRetry is the operator's --upgrade-hook-retry-after in these tests: how often CAPI asks
	// the BeforeClusterUpgrade hook again while it holds an upgrade.
	hookRetry = 2 * time.Second
)

// operatorArgs are the flags of every operator instance of these tests, besides those the plane
// sets.
var operatorArgs = []string{"--degraded-grace-period=" + grace.String(), "--flux-queue-grace-period=" + grace.String(), "--addon-timeout=" + addonTimeout.String(),
	"--push-retry-interval=" + pushRetry.String(), "--upgrade-hook-retry-after=" + hookRetry.String(),
	"--forge-api-timeout=" + forgeAPITimeout.String(), "--git-operation-timeout=" + gitOperationTimeout.String(), "--zap-log-level=debug"}

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

// The ten longest top-level containers carry a SpecPriority, 10 for the longest: Ginkgo starts
// them first, so that the processes end together instead of one running the GitOps loop alone
// at the end (a longest-first schedule). Their order follows the run times hack/slowspecs prints;
// keep it roughly right when they change.

var _ = BeforeSuite(func(ctx SpecContext) {
	ctrl.SetLogger(GinkgoLogr)
	// The plane finds the checkout from the working directory and says which binaries `make
	// tools build` (make test runs it) has not built yet.
	var err error
	pl, k8s, err = framework.StartPlane(ctx, "e2e", plane.Options{
		WithOperator: true,
		// E2E_MANAGER runs another operator binary (bin/manager when unset), e.g. a build made to
		// misbehave on purpose, to see a check of this suite fail.
		OperatorPath: os.Getenv("E2E_MANAGER"),
		// Cluster API's topology controller builds the Clusters; localinfra plays the
		// providers (E2E_WITH_CAPI=false: localinfra's own minimal topology, faster).
		WithCAPI: withCAPI,
		// Gitea hosts the fleet repositories Flux applies and the operator proposes to.
		WithForge: true,
		// The OCI registry (CNCF Distribution) ManagementOperators are published to.
		WithRegistry: true,
		// The main instance of sharding (docs/sharding.md): Clusters labelled with a shard are
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
	Expect(err).NotTo(HaveOccurred())
	// Beside the fault suite on 2 cores, the API servers are at times too short of CPU to answer
	// within their timeout: the specs' reads are sent again then (framework.RetryingReads).
	k8s = framework.RetryingReads(k8s)
	repoRoot = pl.RepoRoot()
	startSecretWatch(ctx)
	GinkgoWriter.Printf("local plane up; kubeconfig %s, logs %s\n", pl.Kubeconfig(), pl.LogDir())

	_, err = pl.Git().CreateRepo(stacksRepo)
	Expect(err).NotTo(HaveOccurred())
	// The versions the specs use; tags are global to the repository, so each is published here,
	// before any spec runs (Ginkgo randomizes the order of top-level containers). Only the
	// auto-subscribe spec publishes a newer one (v20) while it runs, the missing-release spec
	// publishes v14, and the specs that move tags move only the versions they alone use (v4, v5,
	// v7).
	publishVersions(ctx,
		versionOf("v1", nil),
		versionOf("v2", withStackVersion("v2")),
		versionOf("v3", withoutClusterInfo),
		versionOf("v4", withStackVersion("v4")),
		versionOf("v5", withBrokenTemplate),
		versionOf("v6", withUninstallableChart),
		versionOf("v7", nil),
		versionOf("v8", withBrokenClusterClassChart),
		versionOf("v9", withRenamedPodCIDRKey),
		versionOf("v10", withBrokenTemplate),
		versionOf("v11", withHelmDeployment("never-helm", "none")),
		versionOf("v12", withKustomizeDeployment("never-ks", "none")),
		versionOf(pinnedVersion, withKustomizeDeployment("pinned", "special")),
		versionOf(helmInfoVersion, withClusterInfoChart),
		versionOf(hostileVersion, withHostileTemplate),
		versionOf(namesVersion, withConfigMapComponents(namesComponents...)),
		versionOf(newestVersion, withStackVersion(newestVersion)),
	)
	// The versions the lifecycle specs from an OCI registry use, published there as `stackctl
	// push` publishes them (unsigned: the signature specs publish to repositories of their own).
	_, err = framework.PushVersions(ctx, ociTarget(ociStacksRepo), repoRoot, GinkgoT().TempDir(), nil,
		versionOf("v1", nil),
		versionOf("v2", withStackVersion("v2")),
		versionOf("v6", withUninstallableChart),
		versionOf("v10", withBrokenTemplate),
		versionOf(newestVersion, withStackVersion(newestVersion)),
	)
	Expect(err).NotTo(HaveOccurred())
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
	// Credentials: no value of a Secret seen during the suite in any generated object, status,
	// Event or operator log, after everything the suite did.
	if secretWatch != nil {
		defer secretWatch.Stop()
		expectNoSecretLeaked(ctx, true)
	}
})

// publishTo commits the stacks/ tree of this repository, changed by mutate (which gets a copy),
// to repository repo of the Git server and tags it.
func publishTo(ctx context.Context, repo, tag string, mutate func(dir string)) {
	GinkgoHelper()
	Expect(framework.PublishStacks(ctx, pl.Git(), repoRoot, GinkgoT().TempDir(), repo, tag, orNil(mutate))).To(Succeed())
}

// orNil adapts the suite's mutations (which fail the spec themselves) to the framework's.
func orNil(mutate func(dir string)) func(string) error {
	if mutate == nil {
		return nil
	}
	return func(dir string) error { mutate(dir); return nil }
}

// gitURL is the URL of the stacks repository.
func gitURL() string { return pl.Git().RepoURL(stacksRepo) }

// failureLogs prints where the logs are when a spec fails.
var _ = ReportAfterEach(func(r SpecReport) {
	if r.Failed() && pl != nil {
		fmt.Fprintf(GinkgoWriter, "spec failed; component logs: %s\n", pl.LogDir())
	}
})

// workloadClient is a client of the workload cluster of Cluster ns/name whose reads are sent
// again when its API server is too busy to answer (framework.RetryingReads), as k8s's are.
func workloadClient(ctx context.Context, ns, name string) (client.Client, error) {
	c, err := pl.WorkloadClient(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	return framework.RetryingReads(c), nil
}
