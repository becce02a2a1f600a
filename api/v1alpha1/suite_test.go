package v1alpha1_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/testenv"
)

// These tests run the CRDs' validation (OpenAPI schema and CEL rules) in a real kube-apiserver.

func TestAPI(t *testing.T) {
	RegisterFailHandler(Fail)
	suite, reporter := testenv.GinkgoConfiguration("api")
	RunSpecs(t, "API validation (envtest)", suite, reporter)
}

var (
	env *envtest.Environment
	k8s client.Client
)

var _ = BeforeSuite(func() {
	var err error
	env, err = testenv.New(testenv.CRDs{Operator: true})
	Expect(err).NotTo(HaveOccurred())
	cfg, err := env.Start()
	Expect(err).NotTo(HaveOccurred())
	scheme := runtime.NewScheme()
	Expect(csv1.AddToScheme(scheme)).To(Succeed())
	k8s, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})
