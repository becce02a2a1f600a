// Package cli is the kubectl plugin kubectl-clusterstack's command line: cobra commands with
// kubectl's connection flags (k8s.io/cli-runtime), reading the objects through a
// controller-runtime client and handing them to the pure functions of internal/plugin.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterstack-io/clusterstack-operator/internal/plugin"
	"github.com/clusterstack-io/clusterstack-operator/internal/scheme"
)

// ExitError ends the command with an exit code, having printed what it had to say.
type ExitError struct {
	// Code is the process's exit code.
	Code int
}

func (e *ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// ExitCode is the exit code for the error Execute returned: 0 for nil, an ExitError's code, 1
// otherwise.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return 1
}

// Run runs the command line args (without the program's name) and returns the exit code: an
// error other than an ExitError is printed on stderr as "error: ...", as kubectl does.
func Run(ctx context.Context, args []string, streams genericiooptions.IOStreams) int {
	cmd := NewCommand(streams)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	var ee *ExitError
	if err != nil && !errors.As(err, &ee) {
		fmt.Fprintf(streams.ErrOut, "error: %v\n", err)
	}
	return ExitCode(err)
}

// options are the flags every command shares.
type options struct {
	flags   *genericclioptions.ConfigFlags
	streams genericiooptions.IOStreams
	output  string
	getenv  func(string) string
}

// style is the text style: colour only on a terminal and without NO_COLOR.
func (o *options) style() plugin.Style {
	f, ok := o.streams.Out.(*os.File)
	tty := ok && term.IsTerminal(int(f.Fd()))
	return plugin.Style{Color: plugin.ColorEnabled(tty, o.getenv)}
}

// namespace is the namespace of -n, or the kubeconfig context's, or "default".
func (o *options) namespace() (string, error) {
	ns, _, err := o.flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", fmt.Errorf("namespace from the kubeconfig: %w", err)
	}
	return ns, nil
}

func (o *options) restConfig() (*rest.Config, error) {
	cfg, err := o.flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return cfg, nil
}

func (o *options) client() (client.Client, error) {
	cfg, err := o.restConfig()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, fmt.Errorf("connect to the API server: %w", err)
	}
	return c, nil
}

// print writes data as JSON or YAML with -o, else as text with text.
func (o *options) print(data any, text func(io.Writer, plugin.Style) error) error {
	if o.output != plugin.FormatText {
		return plugin.WriteData(o.streams.Out, o.output, data)
	}
	return text(o.streams.Out, o.style())
}

// NewCommand is the root command, `kubectl clusterstack`.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &options{flags: genericclioptions.NewConfigFlags(true), streams: streams, getenv: os.Getenv}
	root := &cobra.Command{
		Use:   "kubectl-clusterstack",
		Short: "Inspect cluster stacks: their releases, clusters, addons, values and updates",
		Long: `kubectl clusterstack shows what the clusterstack-operator does with a management cluster's
ClusterStacks, their releases, the CAPI Clusters using them and the Flux objects delivering
their addons, and checks and renders stack directories.

Every command prints text (coloured only on a terminal, and never with NO_COLOR set) or,
with -o json or -o yaml, a stable machine-readable structure.`,
		Annotations: map[string]string{
			cobra.CommandDisplayNameAnnotation: "kubectl clusterstack",
		},
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			return plugin.ValidFormat(o.output)
		},
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	o.flags.AddFlags(root.PersistentFlags())
	root.PersistentFlags().StringVarP(&o.output, "output", "o", "", "output format: json or yaml (default: text)")
	root.AddCommand(newTreeCommand(o), newWhyCommand(o), newValuesCommand(o), newUpdatesCommand(o),
		newDiffCommand(o), newDashboardCommand(o), newLintCommand(o), newTemplateCommand(o))
	return root
}
