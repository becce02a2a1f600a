// Package stackcli holds the stack directory commands shared by stackctl and the kubectl plugin
// (kubectl-clusterstack): `lint DIR` and `template DIR`, with the same output and exit codes in
// both binaries.
package stackcli

import (
	"errors"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"

	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
)

// Exit codes of the commands.
const (
	// ExitOK: the stack is fine (lint) or was rendered (template).
	ExitOK = 0
	// ExitProblems: lint found problems, or the stack could not be rendered.
	ExitProblems = 1
	// ExitUsage: the command line is wrong.
	ExitUsage = 2
)

// Lint checks the stack directory dir for release version ("" for the chart's own) and reports
// every problem as a "<dir>/<file>: problem" line on stdout, their count on stderr, and
// "<dir>: ok" on stderr when there is none. Where SCS's own tooling would read the stack
// otherwise (stack.SCSNotes), or a chart would render differently delivered from an OCI
// registry (stack.OCINotes), it says so first, in "<dir>/<file>: note: ..." lines on stdout,
// which do not count as problems. It returns ExitProblems when there are problems, ExitOK
// otherwise.
func Lint(dir, version string, stdout, stderr io.Writer) int {
	problems := stack.Lint(dir, version)
	if notes := append(stack.SCSNotes(dir), stack.OCINotes(dir)...); len(notes) > 0 {
		for i := range notes {
			notes[i].Message = "note: " + notes[i].Message
		}
		fmt.Fprint(stdout, stack.FormatProblems(dir, notes))
	}
	if len(problems) > 0 {
		fmt.Fprint(stdout, stack.FormatProblems(dir, problems))
		fmt.Fprintf(stderr, "%d problem(s)\n", len(problems))
		return ExitProblems
	}
	fmt.Fprintf(stderr, "%s: ok\n", dir)
	return ExitOK
}

// Template renders the cluster-class objects of the stack directory dir as the operator delivers
// them for release version ("" for the chart's own) and prints them on stdout as YAML documents,
// each started by "---". A malformed stack prints its problems as Lint does; any other failure
// is printed on stderr as "<prog> template: <error>". It returns ExitProblems on failure.
func Template(prog, dir, version string, stdout, stderr io.Writer) int {
	objs, err := stack.RenderClusterClass(dir, version)
	if err != nil {
		var ps stack.Problems
		if errors.As(err, &ps) {
			fmt.Fprint(stdout, stack.FormatProblems(dir, ps))
		} else {
			fmt.Fprintf(stderr, "%s template: %v\n", prog, err)
		}
		return ExitProblems
	}
	for _, o := range objs {
		data, err := yaml.Marshal(o)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return ExitProblems
		}
		fmt.Fprintf(stdout, "---\n%s", data)
	}
	return ExitOK
}
