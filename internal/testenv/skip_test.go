package testenv

import (
	"fmt"
	"testing"
)

// recorder is a TB that records what SkipOrFail asked of it.
type recorder struct{ skipped, failed string }

func (r *recorder) Helper()           {}
func (r *recorder) Skip(args ...any)  { r.skipped = fmt.Sprint(args...) }
func (r *recorder) Fatal(args ...any) { r.failed = fmt.Sprint(args...) }

func TestSkipOrFail(t *testing.T) {
	for _, tt := range []struct {
		ci                  string
		wantSkip, wantFatal string
	}{
		{ci: "", wantSkip: "no git in /usr/bin"},
		{ci: "false", wantSkip: "no git in /usr/bin"},
		{ci: "true", wantFatal: "no git in /usr/bin (CI=true: a missing prerequisite fails the test instead of skipping it)"},
	} {
		t.Run("CI="+tt.ci, func(t *testing.T) {
			t.Setenv("CI", tt.ci)
			r := &recorder{}
			SkipOrFail(r, "no %s in %s", "git", "/usr/bin")
			if r.skipped != tt.wantSkip || r.failed != tt.wantFatal {
				t.Errorf("SkipOrFail with CI=%q: skipped %q, failed %q; want %q, %q", tt.ci, r.skipped, r.failed, tt.wantSkip, tt.wantFatal)
			}
		})
	}
}
