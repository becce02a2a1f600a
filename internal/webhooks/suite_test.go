package webhooks_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/testenv"
	"github.com/clusterstack-io/clusterstack-operator/internal/webhooks"
)

// The webhook on a real kube-apiserver (bin/, built by `make tools`), configured from
// config/webhook as a deployment is (matchConditions and failure policy included), served from
// a manager in this process.

func TestWebhooks(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	suite, reporter := testenv.GinkgoConfiguration("webhooks")
	RunSpecs(t, "Webhooks on a real API server", suite, reporter)
}

var (
	env      *envtest.Environment
	k8s      client.Client
	warnings = &warningRecorder{}
	stopMgr  context.CancelFunc
	mgrDone  = make(chan error, 1)
)

// cached is the manager's cached client, through which the webhook reads releases.
var cached client.Reader

var _ = BeforeSuite(func(ctx SpecContext) {
	ctrl.SetLogger(GinkgoLogr)
	root, err := testenv.Root()
	Expect(err).NotTo(HaveOccurred())
	vwcs, err := webhooks.LoadValidatingWebhookConfigurations(filepath.Join(root, webhooks.ConfigDir))
	Expect(err).NotTo(HaveOccurred())
	env, err = testenv.New(testenv.CRDs{Operator: true, CAPI: true})
	Expect(err).NotTo(HaveOccurred())
	env.WebhookInstallOptions = envtest.WebhookInstallOptions{ValidatingWebhooks: vwcs, LocalServingHost: "127.0.0.1"}
	cfg, err := env.Start()
	Expect(err).NotTo(HaveOccurred())

	scheme := runtime.NewScheme()
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(clusterv1.AddToScheme(scheme)).To(Succeed())
	Expect(csv1.AddToScheme(scheme)).To(Succeed())

	wh := env.WebhookInstallOptions
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: wh.LocalServingHost, Port: wh.LocalServingPort, CertDir: wh.LocalServingCertDir,
		}),
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(webhooks.SetupClusterWebhookWithManager(mgr, nil)).To(Succeed())
	cached = mgr.GetClient()
	mgrCtx, cancel := context.WithCancel(context.Background())
	stopMgr = cancel
	go func() { mgrDone <- mgr.Start(mgrCtx) }()
	Eventually(func() error { return mgr.GetWebhookServer().StartedChecker()(nil) }).Should(Succeed())

	clientCfg := rest.CopyConfig(cfg)
	clientCfg.WarningHandlerWithContext = warnings
	k8s, err = client.New(clientCfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
}, NodeTimeout(3*time.Minute))

var _ = AfterSuite(func() {
	if stopMgr != nil {
		stopMgr()
		Eventually(mgrDone).Should(Receive(BeNil()))
	}
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})

// warningRecorder keeps the warnings the API server returns to the test client.
type warningRecorder struct {
	mu   sync.Mutex
	seen []string
}

func (w *warningRecorder) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, text)
}

func (w *warningRecorder) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.seen...)
}
