package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/clusterstack-io/clusterstack-operator/internal/plugin"
	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
	"github.com/clusterstack-io/clusterstack-operator/internal/stackcli"
)

// LintResult is `lint -o json|yaml`: the directory and its problems.
type LintResult struct {
	// Dir is the stack directory checked.
	Dir string `json:"dir"`
	// Version is the release version checked for ("" for the chart's own).
	Version string `json:"version,omitempty"`
	// Problems are every problem found, each with the file (relative to Dir) and what is wrong.
	Problems []stack.Problem `json:"problems"`
	// Notes say where SCS's own tooling (csctl, the cluster-stack-operator) would read the
	// stack otherwise than the operator does; they are not problems.
	Notes []stack.Problem `json:"notes,omitempty"`
}

func newLintCommand(o *options) *cobra.Command {
	var version string
	cmd := &cobra.Command{
		Use:   "lint DIR",
		Short: "Check a stack directory as stackctl lint does",
		Long: `Check the stack directory DIR (stacks/README.md) as the operator will read it, exactly as
stackctl lint does: every problem as a "file: problem" line; exit code 1 if there is any.
Lines starting "note:" say where SCS's own tooling would read the stack otherwise; they are
not problems. With -o json or -o yaml: {dir, version, problems: [{file, message}], notes},
with the same exit code.`,
		Example: `  kubectl clusterstack lint providers/aws/base/1-36 --version v2`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if o.output == plugin.FormatText {
				return exitCode(stackcli.Lint(dir, version, o.streams.Out, o.streams.ErrOut))
			}
			ps := stack.Lint(dir, version)
			res := LintResult{Dir: dir, Version: version, Problems: nonNilProblems(ps), Notes: stack.SCSNotes(dir)}
			if err := plugin.WriteData(o.streams.Out, o.output, res); err != nil {
				return err
			}
			if len(ps) > 0 {
				return &ExitError{Code: stackcli.ExitProblems}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&version, "version", "", "release version to check for (e.g. v2): the cluster-class chart's version must match it")
	return cmd
}

func newTemplateCommand(o *options) *cobra.Command {
	var version string
	cmd := &cobra.Command{
		Use:   "template DIR",
		Short: "Render a stack directory's cluster-class objects as stackctl template does",
		Long: `Render the cluster-class objects of the stack directory DIR as the operator delivers them
for release --version (default: the chart's own version), exactly as stackctl template does:
YAML documents. With -o json: a JSON list of the objects (problems go to stderr then); -o yaml is
the default output.`,
		Example: `  kubectl clusterstack template providers/aws/base/1-36 --version v2`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if o.output != plugin.FormatJSON {
				return exitCode(stackcli.Template("kubectl clusterstack", dir, version, o.streams.Out, o.streams.ErrOut))
			}
			objs, err := stack.RenderClusterClass(dir, version)
			if err != nil {
				var ps stack.Problems
				if errors.As(err, &ps) {
					fmt.Fprint(o.streams.ErrOut, stack.FormatProblems(dir, ps))
					return &ExitError{Code: stackcli.ExitProblems}
				}
				return fmt.Errorf("template %s: %w", dir, err)
			}
			if objs == nil {
				objs = []map[string]any{}
			}
			return plugin.WriteData(o.streams.Out, plugin.FormatJSON, objs)
		},
	}
	cmd.Flags().StringVar(&version, "version", "", "release version to render for (e.g. v2)")
	return cmd
}

func exitCode(code int) error {
	if code == 0 {
		return nil
	}
	return &ExitError{Code: code}
}

func nonNilProblems(ps stack.Problems) []stack.Problem {
	if ps == nil {
		return []stack.Problem{}
	}
	return ps
}
