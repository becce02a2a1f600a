// Package testenv is the real API server the tests of this repository run against: envtest's
// kube-apiserver and etcd from the repository's bin/ (built by `make tools`), with the CRDs a test
// asks for. It is imported by tests only; the local plane (bootstrap/plane) starts its own.
package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/clusterstack-io/clusterstack-operator/internal/checkout"
)

// CRDs are the CustomResourceDefinitions an environment installs once its API server is up.
type CRDs struct {
	// Operator installs the operator's own CRDs (config/crd/bases).
	Operator bool
	// CAPI installs Cluster API core's CRDs (bin/crds/capi-core/bases, from `make tools`).
	CAPI bool
	// Flux installs the CRDs of Flux's source-, kustomize- and helm-controller (bin/crds/flux).
	Flux bool
}

// Root is the repository's root: the checkout at or above the working directory (a test's
// package directory).
func Root() (string, error) { return checkout.Root(".") }

// New returns an environment (not started) of the API server and etcd in bin/ with crds, or an
// error that names what is missing and how to get it. Callers add what else they need (webhooks,
// a scheme) before env.Start. Its scheme is client-go's alone: with Cluster API's types in it,
// envtest would point the CAPI CRDs at a conversion webhook nobody serves.
func New(crds CRDs) (*envtest.Environment, error) {
	root, err := Root()
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(root, "bin")
	var dirs []string
	if crds.Operator {
		dirs = append(dirs, filepath.Join(root, "config", "crd", "bases"))
	}
	if crds.CAPI {
		dirs = append(dirs, filepath.Join(bin, "crds", "capi-core", "bases"))
	}
	if crds.Flux {
		dirs = append(dirs, filepath.Join(bin, "crds", "flux"))
	}
	for _, p := range append([]string{filepath.Join(bin, "kube-apiserver"), filepath.Join(bin, "etcd")}, dirs...) {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("this test runs a real API server: %s is missing; run `make tools` (make test does)", p)
		}
	}
	return &envtest.Environment{
		BinaryAssetsDirectory: bin,
		CRDDirectoryPaths:     dirs,
		ErrorIfCRDPathMissing: len(dirs) > 0,
		Scheme:                clientgoscheme.Scheme,
	}, nil
}

// Start starts an environment with crds for one Go test and stops it when the test ends.
func Start(t testing.TB, crds CRDs) *rest.Config {
	t.Helper()
	env, err := New(crds)
	if err != nil {
		t.Fatal(err)
	}
	return StartEnv(t, env)
}

// StartEnv starts env (from New, with what the test added) and stops it when the test ends.
func StartEnv(t testing.TB, env *envtest.Environment) *rest.Config {
	t.Helper()
	cfg, err := env.Start()
	if err != nil {
		// envtest leaves the API server and etcd it started running when a later step of
		// Start (installing the CRDs or webhooks) fails: stop them, or they outlive the test.
		_ = env.Stop()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	return cfg
}

// SuiteTimeout bounds an end-to-end or fault-injection suite: below the 77m `make test` gives
// each package (`go test -timeout`), so that Ginkgo reports what ran before go test kills it,
// and above Ginkgo's default of one hour, which the suites outgrow on a slow 2-core machine
// (the end-to-end suite took 65 min there beside the whole fault suite). With the ~12 min of
// tools, build, lint and the race-detector run before it, `.ci/run` stays under 90 min.
const SuiteTimeout = 74 * time.Minute

// ReportDirEnv names a directory into which the end-to-end, fault and local plane suites write
// their Ginkgo JSON reports (<suite>.json), for `make test` to print the slowest specs and the
// failures (hack/slowspecs).
const ReportDirEnv = "GINKGO_REPORT_DIR"

// GinkgoConfiguration is Ginkgo's configuration with the suite timeout SuiteTimeout instead of
// Ginkgo's default (a -ginkgo.timeout given on the command line is kept), and, when ReportDirEnv
// is set and no -ginkgo.json-report is given, a JSON report <dir>/<name>.json.
func GinkgoConfiguration(name string) (types.SuiteConfig, types.ReporterConfig) {
	suite, reporter := ginkgo.GinkgoConfiguration()
	if suite.Timeout == types.NewDefaultSuiteConfig().Timeout {
		suite.Timeout = SuiteTimeout
	}
	if dir := os.Getenv(ReportDirEnv); dir != "" && reporter.JSONReport == "" {
		reporter.JSONReport = filepath.Join(dir, name+".json")
	}
	return suite, reporter
}
