package testenv

import (
	"fmt"
	"os"
)

// TB is what SkipOrFail needs of a test: *testing.T, *testing.B and Ginkgo's GinkgoT() have it.
type TB interface {
	Helper()
	Skip(args ...any)
	Fatal(args ...any)
}

// InCI tells whether the tests run in CI (CI=true, as CI services set it).
func InCI() bool { return os.Getenv("CI") == "true" }

// SkipOrFail skips a test whose prerequisites are missing (a tool not built, a module that
// cannot be downloaded) with reason, on a developer's machine; in CI, where every prerequisite
// is provided and a skipped test would pass unseen, it fails the test with reason instead.
func SkipOrFail(t TB, reason string, args ...any) {
	t.Helper()
	if len(args) > 0 {
		reason = fmt.Sprintf(reason, args...)
	}
	if InCI() {
		t.Fatal(reason + " (CI=true: a missing prerequisite fails the test instead of skipping it)")
		return
	}
	t.Skip(reason)
}
