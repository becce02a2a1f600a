package plane_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/clusterstack-io/clusterstack-operator/bootstrap/plane"
	"github.com/clusterstack-io/clusterstack-operator/internal/testenv"
)

func TestPlane(t *testing.T) {
	RegisterFailHandler(Fail)
	suite, reporter := testenv.GinkgoConfiguration("plane")
	if suite.Timeout == testenv.SuiteTimeout { // no -ginkgo.timeout given
		// `make test` runs this package with go test -timeout 30m: Ginkgo ends first, and reports.
		suite.Timeout = 28 * time.Minute
	}
	RunSpecs(t, "Local management plane", suite, reporter)
}

var (
	pl       *plane.Plane
	stateDir string
)

var _ = BeforeSuite(func(ctx SpecContext) {
	ctrl.SetLogger(GinkgoLogr)
	wd, err := os.Getwd()
	Expect(err).NotTo(HaveOccurred())
	root, err := plane.FindRepoRoot(wd)
	Expect(err).NotTo(HaveOccurred())
	binDir := filepath.Join(root, "bin")
	if _, err := os.Stat(filepath.Join(binDir, "kube-apiserver")); err != nil {
		testenv.SkipOrFail(GinkgoT(), "the local plane needs the binaries built by `make tools`: %s/kube-apiserver is missing", binDir)
	}
	if missing := plane.MissingBinaries(binDir); len(missing) > 0 {
		testenv.SkipOrFail(GinkgoT(), "the local plane needs the binaries built by `make tools`: missing in %s: %s", binDir, strings.Join(missing, ", "))
	}

	stateDir, err = os.MkdirTemp("", "plane-test-")
	Expect(err).NotTo(HaveOccurred())
	started := time.Now()
	pl, err = plane.Start(ctx, plane.Options{
		StateDir:     stateDir,
		RepoRoot:     root,
		WithRegistry: true,
		StartTimeout: 5 * time.Minute, // beside the end-to-end suite, a start may wait for the cores
		Logger:       GinkgoLogr,
	})
	Expect(err).NotTo(HaveOccurred(), "start plane; logs in %s", filepath.Join(stateDir, "logs"))
	GinkgoWriter.Printf("plane started in %s; kubeconfig %s\n", time.Since(started).Round(time.Millisecond), pl.Kubeconfig())
}, NodeTimeout(6*time.Minute))

var _ = AfterSuite(func() {
	if pl != nil {
		Expect(pl.Stop()).To(Succeed())
	}
})

// Keep the state and logs of a failed run for inspection.
var _ = ReportAfterSuite("local plane state", func(r Report) {
	if stateDir == "" {
		return
	}
	if !r.SuiteSucceeded {
		fmt.Fprintf(GinkgoWriter, "keeping state and logs of the failed run in %s\n", stateDir)
		return
	}
	_ = os.RemoveAll(stateDir)
})
