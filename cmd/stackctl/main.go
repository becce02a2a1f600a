// Command stackctl works with cluster stack directories (see stacks/README.md). lint and
// template share their code (internal/stackcli) with the kubectl plugin's (kubectl-clusterstack).
//
//	stackctl lint <dir> [--version v1]    report every problem as "file: problem"; exit 1 if any
//	stackctl show <dir>                   print the loaded stack as JSON
//	stackctl template <dir> [--version v] print the cluster-class objects as the operator delivers them
//	stackctl set-version <dir> <version>  set cluster-class/Chart.yaml's version (release step)
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
	"github.com/clusterstack-io/clusterstack-operator/internal/stackcli"
)

const usage = `usage:
  stackctl lint <dir> [--version <version>]   check a stack directory; prints "file: problem" lines, exits 1 if any
  stackctl show <dir>                         print the stack as the operator reads it (JSON)
  stackctl template <dir> [--version <v>]     print the rendered cluster-class objects (YAML)
  stackctl set-version <dir> <version>        set the version of <dir>/cluster-class/Chart.yaml
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "lint":
		return lint(args[1:], stdout, stderr)
	case "show":
		return show(args[1:], stdout, stderr)
	case "template":
		return templateCmd(args[1:], stdout, stderr)
	case "set-version":
		return setVersion(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "stackctl: unknown command %q\n%s", args[0], usage)
		return 2
	}
}

// dirAndVersion parses "<dir> [--version v]", the flag before or after the directory, as
// --version v or --version=v.
func dirAndVersion(cmd string, args []string, stderr io.Writer) (dir, version string, ok bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--version" || a == "-version":
			if i+1 >= len(args) {
				fmt.Fprintf(stderr, "stackctl %s: %s needs a value\n%s", cmd, a, usage)
				return "", "", false
			}
			version = args[i+1]
			i++
		case strings.HasPrefix(a, "--version=") || strings.HasPrefix(a, "-version="):
			version = a[strings.Index(a, "=")+1:]
		case strings.HasPrefix(a, "-") && a != "-":
			fmt.Fprintf(stderr, "stackctl %s: unknown flag %s\n%s", cmd, a, usage)
			return "", "", false
		case dir == "":
			dir = a
		default:
			fmt.Fprintf(stderr, "stackctl %s: one stack directory only\n%s", cmd, usage)
			return "", "", false
		}
	}
	if dir == "" {
		fmt.Fprint(stderr, usage)
		return "", "", false
	}
	return dir, version, true
}

func lint(args []string, stdout, stderr io.Writer) int {
	dir, version, ok := dirAndVersion("lint", args, stderr)
	if !ok {
		return 2
	}
	return stackcli.Lint(dir, version, stdout, stderr)
}

func templateCmd(args []string, stdout, stderr io.Writer) int {
	dir, version, ok := dirAndVersion("template", args, stderr)
	if !ok {
		return 2
	}
	return stackcli.Template("stackctl", dir, version, stdout, stderr)
}

func show(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	s, err := stack.Load(args[0])
	if err != nil {
		var ps stack.Problems
		if errors.As(err, &ps) {
			fmt.Fprint(stdout, stack.FormatProblems(args[0], ps))
		} else {
			fmt.Fprintln(stderr, err)
		}
		return 1
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

func setVersion(args []string, stdout, stderr io.Writer) int {
	if len(args) != 2 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	if err := stack.SetChartVersion(args[0], args[1]); err != nil {
		fmt.Fprintf(stderr, "stackctl set-version: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s/%s/%s: version %s\n", strings.TrimSuffix(args[0], "/"), stack.ClusterClassDir, stack.ChartFile, args[1])
	return 0
}
