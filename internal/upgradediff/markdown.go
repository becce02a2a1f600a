package upgradediff

import (
	"fmt"
	"html"
	"strings"

	"github.com/clusterstack-io/clusterstack-operator/internal/markdown"
)

// DefaultBudget is the size Markdown bounds a pull request description's diff to by default:
// forges cap descriptions (GitHub at 65,536 characters), and the rest of the description needs
// room too.
const DefaultBudget = 60 << 10

// MarkdownOptions bound and point Markdown.
type MarkdownOptions struct {
	// Budget is the most bytes the Markdown takes; 0 means DefaultBudget, a negative number no
	// bound.
	Budget int
	// FullDiff says where the whole diff is when the Markdown is cut: "the file
	// .clusterstack/diff.md of this branch", a link to an artifact. Empty: the note names the
	// kubectl plugin's command.
	FullDiff string
}

// minPartial is the least room worth filling with the start of a section that does not fit
// whole.
const minPartial = 512

// Markdown renders the diff for a pull request description: a table of the components, per
// Cluster its object changes (CRDs and other cluster-scoped objects first), then per Cluster
// the values diffs and the objects' diffs in collapsed sections. It is cut to opts.Budget bytes
// at a section boundary (the section that does not fit is shown in part when there is room),
// ending with a note that says what was left out and where the full diff is; truncated reports
// whether anything was cut.
func Markdown(d *Diff, opts MarkdownOptions) (text string, truncated bool) {
	budget := opts.Budget
	if budget == 0 {
		budget = DefaultBudget
	}
	sections := markdownSections(d)
	if budget < 0 {
		var b strings.Builder
		for _, s := range sections {
			b.WriteString(s.text)
		}
		return b.String(), false
	}
	where := opts.FullDiff
	if where == "" {
		where = "`kubectl clusterstack diff CLUSTER --to " + strings.ReplaceAll(d.To, "`", "") + "` prints it"
	}
	reserve := len(cutNote("", []section{{what: strings.Repeat("x", maxNoteList)}}, where)) + 64
	var b strings.Builder
	for i, s := range sections {
		need := len(s.text)
		if i < len(sections)-1 {
			need += reserve
		}
		if b.Len()+need <= budget {
			b.WriteString(s.text)
			continue
		}
		// The section does not fit: show its start if there is room, then say what is missing.
		left, shown := sections[i:], ""
		if room := budget - b.Len() - reserve; room >= minPartial {
			if part, ok := s.partial(room); ok {
				b.WriteString(part)
				left, shown = sections[i+1:], s.what
			}
		}
		note := cutNote(shown, left, where)
		if b.Len()+len(note) > budget {
			return fitHard(d, budget, where), true
		}
		b.WriteString(note)
		return b.String(), true
	}
	return b.String(), false
}

// section is one piece of the Markdown; code is its fenced block's body, which may be cut.
type section struct {
	text string
	what string
	// head, code and tail make a section whose code can be shown in part.
	head, code, tail string
	fence            string
}

// partial is the start of the section within room bytes: its head and the lines of its code
// block that fit, the block closed.
func (s section) partial(room int) (string, bool) {
	if s.code == "" {
		return "", false
	}
	open := s.head + s.fence + "diff\n"
	closing := s.fence + "\n" + s.tail
	marker := "... (cut)\n"
	left := room - len(open) - len(closing) - len(marker)
	if left <= 0 {
		return "", false
	}
	var b strings.Builder
	for _, line := range strings.SplitAfter(s.code, "\n") {
		if b.Len()+len(line) > left {
			break
		}
		b.WriteString(line)
	}
	if b.Len() == 0 {
		return "", false
	}
	return open + b.String() + marker + closing, true
}

// maxNoteList bounds the list of left-out sections in the cut note.
const maxNoteList = 400

// cutNote says which section is shown only in part, how many sections are left out (naming
// them), and where the full diff is.
func cutNote(partial string, left []section, where string) string {
	var b strings.Builder
	b.WriteString("\n> **The diff is cut** to fit the description:")
	if partial != "" {
		b.WriteString(" " + mdText(partial) + " is shown in part;")
	}
	if len(left) > 0 {
		names := make([]string, 0, len(left))
		for _, s := range left {
			names = append(names, s.what)
		}
		list := strings.Join(names, "; ")
		if len(list) > maxNoteList {
			list = strings.ToValidUTF8(list[:maxNoteList], "") + "..."
		}
		fmt.Fprintf(&b, " %d more section(s) are not shown (%s).", len(left), mdText(list))
	}
	fmt.Fprintf(&b, " The full diff: %s.\n", where)
	return b.String()
}

// fitHard is the fallback for budgets too small for any section: the title and the note.
func fitHard(d *Diff, budget int, where string) string {
	s := "**" + mdText(d.From) + " → " + mdText(d.To) + "**: the diff does not fit here; the full diff: " + where + ".\n"
	if len(s) > budget {
		return strings.ToValidUTF8(s[:max(budget, 0)], "")
	}
	return s
}

// markdownSections are the Markdown's sections in the order they are shown (and kept when
// cut): the components, each Cluster's object list, each Cluster's values and object diffs.
func markdownSections(d *Diff) []section {
	var out []section
	var b strings.Builder
	fmt.Fprintf(&b, "### Rendered diff: %s → %s\n\n", code(d.From), code(d.To))
	b.WriteString("| Component | Kind | Version | Change |\n|---|---|---|---|\n")
	for _, c := range d.Components {
		change := c.Change
		if c.Target == TargetManagement {
			change += " (" + TargetManagement + ")"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", code(c.Name), mdText(kinds(c, "→")), code(versions(c, "→")), change)
	}
	for _, c := range d.Components {
		if c.Note != "" {
			fmt.Fprintf(&b, "\n%s: %s", code(c.Name), mdText(c.Note))
		}
	}
	b.WriteString("\n")
	out = append(out, section{text: b.String(), what: "components"})

	for _, c := range d.Clusters {
		b.Reset()
		fmt.Fprintf(&b, "\n#### Cluster %s: ", code(c.Cluster))
		if len(c.Objects) == 0 && len(c.Values) == 0 && len(c.Errors) == 0 {
			b.WriteString("no differences in values or objects\n")
			out = append(out, section{text: b.String(), what: "Cluster " + c.Cluster})
			continue
		}
		b.WriteString(mdText(c.Summary()) + "\n")
		if len(c.Errors) > 0 {
			b.WriteString("\n")
		}
		for _, e := range c.Errors {
			fmt.Fprintf(&b, "- :warning: %s\n", mdText(e))
		}
		cs, ns := splitScope(c.Objects)
		for _, g := range []struct {
			title string
			objs  []ObjectChange
		}{{"Cluster-scoped objects and CRDs", cs}, {"Namespaced objects", ns}} {
			if len(g.objs) == 0 {
				continue
			}
			fmt.Fprintf(&b, "\n**%s**\n\n", g.title)
			for _, o := range g.objs {
				fmt.Fprintf(&b, "- %s %s %s (%s)", o.Change, mdText(o.Kind), code(objName(o)), code(o.Component))
				if o.Note != "" {
					b.WriteString(": " + mdText(o.Note))
				}
				b.WriteString("\n")
			}
		}
		out = append(out, section{text: b.String(), what: "Cluster " + c.Cluster})
	}

	for _, c := range d.Clusters {
		for _, v := range c.Values {
			out = append(out, detailSection(fmt.Sprintf("%s: values of %s", c.Cluster, valuesTitle(v)), v.Diff))
		}
		for _, o := range c.Objects {
			if o.Diff == "" {
				continue
			}
			out = append(out, detailSection(fmt.Sprintf("%s: %s %s (%s)", c.Cluster, o.Change, o.Ref(), o.Component), o.Diff))
		}
	}
	return out
}

// detailSection is a collapsed section with a diff block.
func detailSection(title, diff string) section {
	fence := markdown.Fence(diff, 3)
	s := section{
		what:  title,
		head:  "\n<details><summary>" + html.EscapeString(title) + "</summary>\n\n",
		code:  diff,
		tail:  "\n</details>\n",
		fence: fence,
	}
	s.text = s.head + fence + "diff\n" + diff + fence + "\n" + s.tail
	return s
}

func objName(o ObjectChange) string {
	if o.Namespace == "" {
		return o.Name
	}
	return o.Namespace + "/" + o.Name
}

// code is text as an inline code span, safe in a table cell: one line, '|' escaped, delimited
// by more backticks than it contains.
func code(text string) string {
	text = strings.Join(strings.Fields(text), " ")
	text = strings.ReplaceAll(text, "|", `\|`)
	if text == "" {
		return ""
	}
	return markdown.CodeSpan(text)
}

// mdReplacer escapes what Markdown or HTML would act on in plain text.
var mdReplacer = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`, "<", "&lt;", ">", "&gt;", "|", `\|`, "#", `\#`, "!", `\!`, "~", `\~`,
)

// mdText is text escaped for Markdown, on one line.
func mdText(text string) string {
	return mdReplacer.Replace(strings.Join(strings.Fields(text), " "))
}

// ForProposal is the diff of a move as a pull request shows it, in one call: the Markdown
// bounded by opts for the description, and the whole Markdown (unbounded) for the file or
// artifact opts.FullDiff names, which is needed only when truncated.
func ForProposal(in Input, opts MarkdownOptions) (description, full string, truncated bool, err error) {
	d, err := Compute(in)
	if err != nil {
		return "", "", false, err
	}
	description, truncated = Markdown(d, opts)
	full, _ = Markdown(d, MarkdownOptions{Budget: -1})
	return description, full, truncated, nil
}
