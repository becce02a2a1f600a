package rollout

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// WindowsOf are the maintenance windows of wave w of policy u: its own, else the stack's.
func WindowsOf(u *csv1.UpdatePolicy, w *csv1.RolloutWave) []csv1.MaintenanceWindow {
	if w != nil && len(w.Windows) > 0 {
		return w.Windows
	}
	if u == nil {
		return nil
	}
	return u.Windows
}

// WaveWindows says which wave of policy u a Cluster with lbls belongs to (the first whose
// selector matches, else Remaining, as WaveOf decides) and that wave's maintenance windows. A
// selector that does not parse is an error naming the wave.
func WaveWindows(u *csv1.UpdatePolicy, lbls map[string]string) (string, []csv1.MaintenanceWindow, error) {
	if u == nil {
		return Remaining, nil, nil
	}
	for i := range u.Waves {
		w := &u.Waves[i]
		sel, err := metav1.LabelSelectorAsSelector(&w.Selector)
		if err != nil {
			return "", nil, fmt.Errorf("spec.updates.waves[%s].selector: %w", w.Name, err)
		}
		if sel.Matches(labels.Set(lbls)) {
			return w.Name, WindowsOf(u, w), nil
		}
	}
	return Remaining, WindowsOf(u, nil), nil
}

// maxHoldText bounds the who and the reason taken from the annotation.
const (
	maxHoldBy     = 256
	maxHoldReason = 1024
)

// ParseHold reads the clusterstack.io/hold annotation's value "<who>: <reason>". Without a
// "<who>: " prefix (no colon, or a who with spaces) who is empty and the whole value is the
// reason. Both are cut to the API's bounds, control characters dropped.
func ParseHold(v string) (by, reason string) {
	v = clean(v)
	if who, why, ok := strings.Cut(v, ":"); ok && who != "" && !strings.ContainsAny(strings.TrimSpace(who), " \t") {
		by, reason = strings.TrimSpace(who), strings.TrimSpace(why)
	} else {
		reason = strings.TrimSpace(v)
	}
	return cut(by, maxHoldBy), cut(reason, maxHoldReason)
}

// AnnotationWriter is the field manager that last wrote annotation key, from managedFields
// ("" when none says): who set a hold whose value does not name anyone.
func AnnotationWriter(entries []metav1.ManagedFieldsEntry, key string) string {
	needle := `"f:` + key + `"`
	var best string
	var at time.Time
	for _, e := range entries {
		if e.FieldsV1 == nil || !strings.Contains(e.FieldsV1.GetRawString(), needle) {
			continue
		}
		var t time.Time
		if e.Time != nil {
			t = e.Time.Time
		}
		if best == "" || !t.Before(at) {
			best, at = e.Manager, t
		}
	}
	return cut(clean(best), maxHoldBy)
}

// HoldText says who holds a rollout, since when and why, for messages.
func HoldText(h *csv1.RolloutHold) string {
	by := h.By
	if by == "" {
		by = "someone the API does not name"
	}
	var from string
	switch h.Source {
	case csv1.HoldFromPullRequestLabel:
		from = "the hold label of pull request " + h.PullRequest
	default:
		from = "the " + csv1.HoldAnnotation + " annotation"
	}
	out := fmt.Sprintf("%s since %s (%s)", by, h.Since.UTC().Format(time.RFC3339), from)
	if h.Reason != "" {
		out += ": " + h.Reason
	}
	return out
}

func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}
