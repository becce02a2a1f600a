package controllers_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/controllers"
	"github.com/clusterstack-io/clusterstack-operator/internal/restmapping"
	"github.com/clusterstack-io/clusterstack-operator/internal/scheme"
	"github.com/clusterstack-io/clusterstack-operator/internal/testenv"
)

// The reconciler test layer: the operator's controllers, wired by controllers.Setup as
// cmd/main.go wires them, in a manager in this process against a real kube-apiserver and etcd
// (bin/, built by `make tools`) with our CRDs and those of Cluster API and Flux. No Flux or
// Cluster API controller runs: the specs play them, writing the status source-controller,
// helm-controller and kustomize-controller would write (Ready, observedGeneration, artifacts,
// history), and serving the stacks' artifacts over HTTP as source-controller's storage does.
// One file per behaviour, `<kind>_<behaviour>_test.go`, each in its own namespace; the object
// builders and the Flux stand-ins are in testbuilders_test.go.

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	SetDefaultConsistentlyDuration(2 * time.Second)
	suite, reporter := testenv.GinkgoConfiguration("controllers")
	RunSpecs(t, "Controllers on a real API server", suite, reporter)
}

// managementNamespace is the namespace the ManagementOperator controller is configured with (no
// spec here uses it).
const managementNamespace = "clusterstack-system"

var (
	env *envtest.Environment
	// k8s reads and writes the API server directly (no cache), and watches.
	k8s client.WithWatch
	// artifacts serves the stacks' artifacts; tags lists the repositories' tags.
	artifacts *artifactServer
	tags      = &tagRegistry{}
	stopMgr   context.CancelFunc
	mgrDone   = make(chan error, 1)
)

var _ = BeforeSuite(func() {
	ctrl.SetLogger(GinkgoLogr)
	var err error
	env, err = testenv.New(testenv.CRDs{Operator: true, CAPI: true, Flux: true})
	Expect(err).NotTo(HaveOccurred())
	cfg, err := env.Start()
	Expect(err).NotTo(HaveOccurred())

	scheme := scheme.New()
	k8s, err = client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	artifacts = newArtifactServer()

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  controllers.CacheOptions(managementNamespace),
		MapperProvider:         restmapping.NewDynamic, // as cmd/main.go
	})
	Expect(err).NotTo(HaveOccurred())
	mgrCtx, cancel := context.WithCancel(context.Background())
	stopMgr = cancel
	// As cmd/main.go does, with the tag listing answered by the specs' registry instead of
	// a Git server (TagLister.List). It is the main instance of sharding (docs/sharding.md):
	// Clusters labelled with a shard are left to the shards the sharding spec starts.
	mainShard, err := controllers.ParseShardSelector("!" + csv1.ShardLabel)
	Expect(err).NotTo(HaveOccurred())
	Expect(controllers.Setup(mgrCtx, mgr, controllers.Config{
		Grace:               5 * time.Minute,
		ProgressInterval:    controllers.DefaultProgressInterval,
		Tags:                &controllers.TagLister{Reader: mgr.GetAPIReader(), List: tags.list},
		ManagementNamespace: managementNamespace,
		WatchLabelSelector:  mainShard,
	})).To(Succeed())
	go func() {
		defer GinkgoRecover()
		mgrDone <- mgr.Start(mgrCtx)
	}()
	Eventually(func() bool { return mgr.GetCache().WaitForCacheSync(mgrCtx) }).Should(BeTrue())
})

var _ = AfterSuite(func() {
	if stopMgr != nil {
		stopMgr()
		Eventually(mgrDone, time.Minute).Should(Receive(BeNil()))
	}
	if artifacts != nil {
		artifacts.Close()
	}
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})
