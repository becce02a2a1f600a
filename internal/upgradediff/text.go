package upgradediff

import (
	"fmt"
	"io"
	"strings"
)

// Painter colours text output; the zero value prints plain text. The kubectl plugin passes its
// terminal style.
type Painter struct {
	// Bold, Added, Removed and Faint paint a heading, an added line, a removed line and a hunk
	// header; nil leaves the text as it is.
	Bold, Added, Removed, Faint func(string) string
}

func paint(f func(string) string, s string) string {
	if f == nil {
		return s
	}
	return f(s)
}

// changeMark is the sign of a change in lists: + added, ~ changed, - removed.
func changeMark(change string) string {
	switch change {
	case Added:
		return "+"
	case Removed:
		return "-"
	case Changed:
		return "~"
	}
	return " "
}

// versions prints "old -> new" (arrow is "->" or "→"), "-" for a side without the component,
// or the one version when it is the same.
func versions(c Component, arrow string) string {
	from, to := c.FromVersion, c.ToVersion
	if c.FromKind == "" {
		from = "-"
	}
	if c.ToKind == "" {
		to = "-"
	}
	if from == to {
		return from
	}
	return from + " " + arrow + " " + to
}

func kinds(c Component, arrow string) string {
	switch {
	case c.FromKind == "":
		return c.ToKind
	case c.ToKind == "" || c.FromKind == c.ToKind:
		return c.FromKind
	}
	return c.FromKind + " " + arrow + " " + c.ToKind
}

// Summary is a one-line count of a Cluster's changes: "2 added, 1 changed, 0 removed (1 CRD,
// 2 cluster-scoped)".
func (c ClusterDiff) Summary() string {
	s := fmt.Sprintf("%d added, %d changed, %d removed", c.Added, c.Changed, c.Removed)
	crds, cs := 0, 0
	for _, o := range c.Objects {
		if o.CRD {
			crds++
		}
		if o.ClusterScoped {
			cs++
		}
	}
	if cs > 0 {
		s += fmt.Sprintf(" (%d cluster-scoped, %d of them CRDs)", cs, crds)
	}
	return s
}

// WriteText prints the diff for a terminal: the components, then per Cluster its object
// changes (cluster-scoped first), its values diffs and its objects' diffs. Nothing is cut.
func WriteText(w io.Writer, d *Diff, p Painter) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s -> %s\n", paint(p.Bold, "Upgrade"), paint(p.Bold, d.From), paint(p.Bold, d.To))
	b.WriteString("\n" + paint(p.Bold, "Components") + "\n")
	nameW, kindW, verW := 0, 0, 0
	for _, c := range d.Components {
		nameW, kindW, verW = max(nameW, len(c.Name)), max(kindW, len(kinds(c, "->"))), max(verW, len(versions(c, "->")))
	}
	for _, c := range d.Components {
		line := fmt.Sprintf("  %s %-*s  %-*s  %-*s  %s", changeMark(c.Change), nameW, c.Name, kindW, kinds(c, "->"), verW, versions(c, "->"), c.Change)
		if c.Target == TargetManagement {
			line += " (" + TargetManagement + ")"
		}
		b.WriteString(strings.TrimRight(line, " ") + "\n")
		if c.Note != "" {
			fmt.Fprintf(&b, "      %s\n", paint(p.Faint, c.Note))
		}
	}
	for _, c := range d.Clusters {
		writeClusterText(&b, c, p)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeClusterText(b *strings.Builder, c ClusterDiff, p Painter) {
	fmt.Fprintf(b, "\n%s %s  ", paint(p.Bold, "Cluster"), paint(p.Bold, c.Cluster))
	if len(c.Objects) == 0 && len(c.Values) == 0 && len(c.Errors) == 0 {
		b.WriteString("no differences in values or objects\n")
		return
	}
	b.WriteString(c.Summary() + "\n")
	for _, e := range c.Errors {
		fmt.Fprintf(b, "  %s %s\n", paint(p.Removed, "error:"), e)
	}
	writeGroup := func(title string, objs []ObjectChange) {
		if len(objs) == 0 {
			return
		}
		fmt.Fprintf(b, "  %s\n", title)
		for _, o := range objs {
			fmt.Fprintf(b, "    %s %s  (%s)\n", changeMark(o.Change), o.Ref(), o.Component)
			if o.Note != "" {
				fmt.Fprintf(b, "        %s\n", paint(p.Faint, o.Note))
			}
		}
	}
	cs, ns := splitScope(c.Objects)
	writeGroup("Cluster-scoped objects and CRDs", cs)
	writeGroup("Namespaced objects", ns)
	if len(c.Values) > 0 {
		fmt.Fprintf(b, "  %s\n", "Values")
		for _, v := range c.Values {
			fmt.Fprintf(b, "    %s\n", valuesTitle(v))
			writeHunks(b, v.Diff, "      ", p)
		}
	}
	var withDiff []ObjectChange
	for _, o := range c.Objects {
		if o.Diff != "" {
			withDiff = append(withDiff, o)
		}
	}
	if len(withDiff) > 0 {
		fmt.Fprintf(b, "  %s\n", "Objects")
		for _, o := range withDiff {
			fmt.Fprintf(b, "    %s %s  (%s)\n", changeMark(o.Change), o.Ref(), o.Component)
			writeHunks(b, o.Diff, "      ", p)
		}
	}
}

// valuesTitle names a values diff: "variables (every component)", "cni (Helm values)",
// "cluster-info (substitution variables)".
func valuesTitle(v ValuesDiff) string {
	switch {
	case v.Component == "":
		return "variables (every component)"
	case v.Kind == "Helm":
		return v.Component + " (Helm values)"
	}
	return v.Component + " (substitution variables)"
}

func splitScope(objs []ObjectChange) (clusterScoped, namespaced []ObjectChange) {
	for _, o := range objs {
		if o.ClusterScoped {
			clusterScoped = append(clusterScoped, o)
		} else {
			namespaced = append(namespaced, o)
		}
	}
	return clusterScoped, namespaced
}

func writeHunks(b *strings.Builder, diff, indent string, p Painter) {
	for _, line := range strings.SplitAfter(diff, "\n") {
		if line == "" {
			continue
		}
		text := strings.TrimSuffix(line, "\n")
		switch {
		case strings.HasPrefix(text, "@@"):
			text = paint(p.Faint, text)
		case strings.HasPrefix(text, "+"):
			text = paint(p.Added, text)
		case strings.HasPrefix(text, "-"):
			text = paint(p.Removed, text)
		}
		b.WriteString(indent + text + "\n")
	}
}
