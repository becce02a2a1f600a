package upgradediff

import (
	"strings"

	"github.com/pmezard/go-difflib/difflib"
)

// unified returns the unified diff of two texts given as lines (each ending with "\n"): its
// hunks ("@@ -a,b +c,d @@" and the lines), without file headers; "" when they are equal.
func unified(a, b []string, context int) string {
	if equalLines(a, b) {
		return ""
	}
	var sb strings.Builder
	// WriteUnifiedDiff fails only when the writer does.
	_ = difflib.WriteUnifiedDiff(&sb, difflib.UnifiedDiff{A: a, B: b, Context: context})
	return sb.String()
}

func equalLines(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
