// Package browser starts headless Chromium for the tests that drive the dashboard in a real
// browser (chromedp): Debian's chromium package, which CI installs (.ci/run), or $CHROMIUM.
// Without it a test is skipped on a developer's machine and fails in CI (testenv.SkipOrFail).
// It is imported by tests only.
package browser

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/chromedp/chromedp"

	"github.com/clusterstack-io/clusterstack-operator/internal/testenv"
)

// TB is what Start needs of a test: *testing.T, *testing.B and Ginkgo's GinkgoT() have it.
type TB interface {
	testenv.TB
	TempDir() string
	Cleanup(func())
}

// Path is the Chromium binary: $CHROMIUM, else chromium on the PATH (Debian's /usr/bin/chromium).
func Path() (string, error) {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no chromium on the PATH (apt-get install -y chromium; .ci/run installs it) and $CHROMIUM is not set")
}

// Start starts one headless Chromium with a fresh profile, its output in logDir/chromium.log
// (t.TempDir() when logDir is ""), and returns a chromedp context of its first tab. Chromium
// stops when the test ends. The flags keep it from reaching any network but the pages it is
// sent to (the machines' network is closed).
func Start(t TB, logDir string) context.Context {
	t.Helper()
	path, err := Path()
	if err != nil {
		testenv.SkipOrFail(t, "this test drives the dashboard in headless Chromium: %v", err)
		return nil
	}
	if logDir == "" {
		logDir = t.TempDir()
	}
	logFile, err := os.Create(filepath.Join(logDir, "chromium.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = logFile.Close() })
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000),
		chromedp.CombinedOutput(logFile),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatal(fmt.Sprintf("start %s: %v (its output: %s)", path, err, logFile.Name()))
	}
	return ctx
}

// Screenshot saves a PNG of the whole page of ctx's tab to path.
func Screenshot(ctx context.Context, path string) error {
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		return fmt.Errorf("screenshot %s: %w", path, err)
	}
	return os.WriteFile(path, png, 0o644)
}
