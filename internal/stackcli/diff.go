package stackcli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/clusterstack-io/clusterstack-operator/internal/releasename"
	"github.com/clusterstack-io/clusterstack-operator/internal/render"
	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
	"github.com/clusterstack-io/clusterstack-operator/internal/upgradediff"
)

// Exit codes of diff, those of `kubectl diff` and diff(1).
const (
	// DiffSame: no differences.
	DiffSame = 0
	// DiffDifferent: differences were found.
	DiffDifferent = 1
	// DiffError: the diff failed (or is incomplete: something did not render).
	DiffError = 2
)

// Output formats of diff.
const (
	DiffText     = "text"
	DiffMarkdown = "markdown"
	DiffJSON     = "json"
)

// DiffOptions are diff's flags.
type DiffOptions struct {
	// Format is DiffText, DiffMarkdown or DiffJSON.
	Format string
	// Budget bounds the Markdown (upgradediff.MarkdownOptions.Budget); 0: no bound.
	Budget int
}

// StackRef is one side of a diff: a stack directory, or "DIR@REV", the directory at Git
// revision REV of the checkout holding it.
type StackRef struct {
	Dir, Rev string
}

// ParseStackRef splits "DIR@REV" (REV without '/' after the last '@') from a plain directory.
func ParseStackRef(arg string) StackRef {
	if i := strings.LastIndex(arg, "@"); i > 0 && i < len(arg)-1 && !strings.ContainsAny(arg[i+1:], `/\`) {
		if fi, err := os.Stat(arg); err != nil || !fi.IsDir() {
			return StackRef{Dir: arg[:i], Rev: arg[i+1:]}
		}
	}
	return StackRef{Dir: arg}
}

func (r StackRef) String() string {
	if r.Rev == "" {
		return r.Dir
	}
	return r.Dir + "@" + r.Rev
}

// load reads the stack of r; cleanup removes what was extracted from Git.
func (r StackRef) load() (*stack.Stack, string, func(), error) {
	if r.Rev == "" {
		s, err := stack.Load(r.Dir)
		if err != nil {
			var ps stack.Problems
			if errors.As(err, &ps) {
				return nil, "", nil, fmt.Errorf("the stack at %s:\n%s", r.Dir, strings.TrimSuffix(stack.FormatProblems(r.Dir, ps), "\n"))
			}
			return nil, "", nil, err
		}
		return s, "", func() {}, nil
	}
	return StackAt(r.Dir, r.Rev)
}

// releaseOf is `.Release` of a stack read at rev: its cluster-class chart's version when that
// is a stack version, else the version of rev when rev is a release tag or a stack version.
func releaseOf(s *stack.Stack, rev string) render.Release {
	version := ""
	if _, err := releasename.ParseVersion(s.ClusterClass.Version); err == nil {
		version = s.ClusterClass.Version
	} else if r, err := releasename.Parse(rev); err == nil {
		version = r.Version
	} else if _, err := releasename.ParseVersion(rev); err == nil {
		version = rev
	}
	name := s.ReleaseName(version)
	if version == "" {
		name = strings.TrimSuffix(name, "-")
	}
	return render.Release{Name: name, Version: version, KubernetesVersion: s.KubernetesVersion}
}

// Diff prints what moving a Cluster from stack a to stack b changes (upgradediff), for the
// made-up Cluster `stackctl lint` renders values for (Stack.SampleInput; a value it lacks renders
// empty). It returns DiffSame, DiffDifferent, or DiffError with the error on stderr as
// "<prog> diff: <error>"; what does not render is printed with the diff and returns DiffError.
func Diff(prog string, a, b StackRef, opts DiffOptions, stdout, stderr io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintf(stderr, "%s diff: %v\n", prog, err)
		return DiffError
	}
	from, fromRev, cleanFrom, err := a.load()
	if err != nil {
		return fail(err)
	}
	defer cleanFrom()
	to, toRev, cleanTo, err := b.load()
	if err != nil {
		return fail(err)
	}
	defer cleanTo()
	fromRel, toRel := releaseOf(from, fromRev), releaseOf(to, toRev)
	sample := to.SampleInput(toRel.Version)
	d, err := upgradediff.Compute(upgradediff.Input{
		From:         upgradediff.Release{Release: fromRel, Stack: from},
		To:           upgradediff.Release{Release: toRel, Stack: to},
		Clusters:     []upgradediff.Cluster{{Namespace: "default", Name: clusterName(sample), Objects: sample}},
		AllowMissing: true,
	})
	if err != nil {
		return fail(err)
	}
	switch opts.Format {
	case DiffMarkdown:
		budget := opts.Budget
		if budget == 0 {
			budget = -1
		}
		md, _ := upgradediff.Markdown(d, upgradediff.MarkdownOptions{Budget: budget, FullDiff: fmt.Sprintf("`%s diff %s %s`", prog, a, b)})
		fmt.Fprint(stdout, md)
	case DiffJSON:
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(d); err != nil {
			return fail(err)
		}
	default:
		if err := upgradediff.WriteText(stdout, d, upgradediff.Painter{}); err != nil {
			return fail(err)
		}
	}
	if errs := d.Errors(); len(errs) > 0 {
		fmt.Fprintf(stderr, "%s diff: %d part(s) did not render, the diff is incomplete\n", prog, len(errs))
		return DiffError
	}
	if d.HasChanges() {
		return DiffDifferent
	}
	return DiffSame
}

func clusterName(in render.Input) string {
	md, _ := in.Cluster["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	return name
}
