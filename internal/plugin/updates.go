package plugin

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// Updates is the output of `updates`: per ClusterStack, its available and conditional updates
// and rollout, and per Cluster the releases it may move to.
type Updates struct {
	// Stacks, by namespace and name.
	Stacks []StackUpdates `json:"stacks"`
}

// StackUpdates are one ClusterStack's updates.
type StackUpdates struct {
	// Namespace of the ClusterStack.
	Namespace string `json:"namespace"`
	// Name of the ClusterStack.
	Name string `json:"name"`
	// AvailableVersion is status.versions.available.
	AvailableVersion string `json:"availableVersion,omitempty"`
	// AvailableUpdates is status.availableUpdates: releases the Clusters may move to, newest first.
	AvailableUpdates []csv1.StackUpdate `json:"availableUpdates"`
	// ConditionalUpdates is status.conditionalUpdates: newer releases held back, with the risks.
	ConditionalUpdates []csv1.ConditionalUpdate `json:"conditionalUpdates"`
	// Rollout is status.rollout, when the stack proposes updates.
	Rollout *csv1.RolloutStatus `json:"rollout,omitempty"`
	// UpdatesProposed is the UpdatesProposed condition, when set.
	UpdatesProposed *Condition `json:"updatesProposed,omitempty"`
	// Clusters of the stack with the upgrades each may take.
	Clusters []ClusterUpgrades `json:"clusters"`
}

// ClusterUpgrades are the releases one Cluster may move to.
type ClusterUpgrades struct {
	// Name of the Cluster (and its ClusterAddon).
	Name string `json:"name"`
	// Release the Cluster uses (desiredRelease).
	Release string `json:"release,omitempty"`
	// AvailableUpgrades is the ClusterAddon's status.availableUpgrades, newest first.
	AvailableUpgrades []string `json:"availableUpgrades"`
}

// BuildUpdates gathers the updates of the stacks and the upgrades of their Clusters' ClusterAddons.
func BuildUpdates(stacks []csv1.ClusterStack, addons []csv1.ClusterAddon) Updates {
	out := Updates{Stacks: []StackUpdates{}}
	stacks = slices.Clone(stacks)
	slices.SortFunc(stacks, func(a, b csv1.ClusterStack) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	for _, cs := range stacks {
		su := StackUpdates{
			Namespace: cs.Namespace, Name: cs.Name, AvailableVersion: cs.Status.Versions.Available,
			AvailableUpdates:   nonNil(cs.Status.AvailableUpdates),
			ConditionalUpdates: nonNil(cs.Status.ConditionalUpdates),
			Rollout:            cs.Status.Rollout,
			UpdatesProposed:    conditionOf(cs.Status.Conditions, csv1.UpdatesProposedCondition),
			Clusters:           []ClusterUpgrades{},
		}
		for _, a := range addons {
			if a.Namespace != cs.Namespace || a.Status.ClusterStack != cs.Name {
				continue
			}
			su.Clusters = append(su.Clusters, ClusterUpgrades{Name: a.Name, Release: a.Status.DesiredRelease, AvailableUpgrades: nonNil(a.Status.AvailableUpgrades)})
		}
		slices.SortFunc(su.Clusters, func(a, b ClusterUpgrades) int { return strings.Compare(a.Name, b.Name) })
		out.Stacks = append(out.Stacks, su)
	}
	return out
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// WriteUpdates prints the updates as text.
func WriteUpdates(w io.Writer, u Updates, st Style) error {
	u = ForTerminal(u) // what the objects say is printed, never acted on by the terminal
	if len(u.Stacks) == 0 {
		_, err := fmt.Fprintln(w, "No ClusterStacks found.")
		return err
	}
	var b strings.Builder
	for i, s := range u.Stacks {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%s %s", st.Bold("ClusterStack"), st.Bold(s.Namespace+"/"+s.Name))
		if s.AvailableVersion != "" {
			fmt.Fprintf(&b, "  available %s", s.AvailableVersion)
		}
		b.WriteString("\n")
		if len(s.AvailableUpdates) == 0 {
			b.WriteString("  Available updates: none\n")
		} else {
			b.WriteString("  Available updates:\n")
			relW, verW := 0, 0
			for _, up := range s.AvailableUpdates {
				relW, verW = max(relW, len(up.Release)), max(verW, len(up.Version))
			}
			for _, up := range s.AvailableUpdates {
				line := fmt.Sprintf("    %s%s  %-*s%s", st.Good(up.Release), strings.Repeat(" ", relW-len(up.Release)), verW, up.Version, discovered(up.DiscoveredAt))
				fmt.Fprintln(&b, strings.TrimRight(line, " "))
			}
		}
		if len(s.ConditionalUpdates) > 0 {
			b.WriteString("  Conditional updates:\n")
			for _, cu := range s.ConditionalUpdates {
				fmt.Fprintf(&b, "    %s  %s%s\n", st.Warn(cu.Release), cu.Version, discovered(cu.DiscoveredAt))
				for _, r := range cu.Risks {
					fmt.Fprintf(&b, "      %s: %s\n", st.Warn(string(r.Type)), oneLine(r.Message, 0))
				}
			}
		}
		if s.Rollout != nil {
			fmt.Fprintf(&b, "  Rollout of %s:\n", st.Bold(s.Rollout.Target))
			nameW, phaseW := 0, 0
			for _, wv := range s.Rollout.Waves {
				nameW, phaseW = max(nameW, len(wv.Name)), max(phaseW, len(wv.Phase))
			}
			for _, wv := range s.Rollout.Waves {
				line := fmt.Sprintf("    %-*s  %s%s  %d/%d updated", nameW, wv.Name, st.State(string(wv.Phase)), strings.Repeat(" ", phaseW-len(wv.Phase)), wv.Updated, len(wv.Clusters))
				// The wave's message often says the pull request already ("pull request #1 open:
				// <url>"): then it stands for it.
				if pr := wv.PullRequest; pr != nil && (pr.URL == "" || !strings.Contains(wv.Message, pr.URL)) {
					line += fmt.Sprintf("  pull request #%d %s (%s)", pr.Number, pr.URL, orUnknown(pr.State))
				}
				if wv.Message != "" {
					line += "  " + st.Faint(oneLine(wv.Message, treeMessageLen))
				}
				fmt.Fprintln(&b, line)
			}
		}
		if c := s.UpdatesProposed; c != nil && c.Status != "True" {
			fmt.Fprintf(&b, "  UpdatesProposed=%s (%s): %s\n", st.State(string(c.Status)), c.Reason, oneLine(c.Message, 0))
		}
		if len(s.Clusters) > 0 {
			b.WriteString("  Clusters:\n")
			nameW, relW := 0, 0
			for _, c := range s.Clusters {
				nameW, relW = max(nameW, len(c.Name)), max(relW, len(c.Release))
			}
			for _, c := range s.Clusters {
				next := "no upgrade available"
				if len(c.AvailableUpgrades) > 0 {
					next = "may move to " + strings.Join(c.AvailableUpgrades, ", ")
				}
				fmt.Fprintf(&b, "    %-*s  at %-*s  %s\n", nameW, c.Name, relW, c.Release, next)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func discovered(t *metav1.Time) string {
	if t.IsZero() {
		return ""
	}
	return "  discovered " + t.UTC().Format(time.RFC3339)
}
