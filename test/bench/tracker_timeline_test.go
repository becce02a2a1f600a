package bench

import (
	"strings"
	"testing"
)

// TestTrackerTimeline: the timeline gives, per kind, when the first object came and when each
// tenth of the Clusters was reached, and nothing for a kind not seen yet.
func TestTrackerTimeline(t *testing.T) {
	tr := newFanoutTracker(20)
	tr.begin()
	for count := 1; count <= 20; count++ {
		tr.tenth("ClusterAddon", count)
	}
	tr.tenth("Ready", 1)
	line := tr.timeline()
	addons := ""
	for _, part := range strings.Split(line, "; ") {
		if strings.HasPrefix(part, "ClusterAddon ") {
			addons = part
		}
	}
	fields := strings.Fields(addons)
	// "ClusterAddon", "(first", "0.00)", then the ten tenths.
	if len(fields) != 13 || fields[1] != "(first" {
		t.Fatalf("ClusterAddon's timeline: got %q, want its first and ten tenths (in %q)", addons, line)
	}
	if !strings.Contains(line, "Ready (first ") || strings.Contains(line, "Kustomization (first") {
		t.Errorf("timeline %q: want Ready's first (one seen) and no first of Kustomizations (none seen)", line)
	}
}
