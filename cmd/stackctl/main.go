// Command stackctl works with cluster stack directories (see stacks/README.md). lint and
// template share their code (internal/stackcli) with the kubectl plugin's (kubectl-clusterstack).
//
//	stackctl lint <dir> [--version v1]    report every problem as "file: problem"; exit 1 if any
//	stackctl show <dir>                   print the loaded stack as JSON
//	stackctl template <dir> [--version v] print the cluster-class objects as the operator delivers them
//	stackctl set-version <dir> <version>  set cluster-class/Chart.yaml's version (release step)
//	stackctl diff <old> <new>             what moving a Cluster from one stack to the other changes
//	stackctl push <dir> oci://<host>/<repo>   publish a stack release as an OCI artifact (docs/oci.md)
//	stackctl mirror <from> oci://<host>/<repo> copy releases from a registry or a Git checkout
//	stackctl key-pair <prefix>            write a cosign key pair to sign releases with
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
	"github.com/clusterstack-io/clusterstack-operator/internal/stackcli"
)

const usage = `usage:
  stackctl lint <dir> [--version <version>]   check a stack directory; prints "file: problem" lines, exits 1 if any
  stackctl show <dir>                         print the stack as the operator reads it (JSON)
  stackctl template <dir> [--version <v>]     print the rendered cluster-class objects (YAML)
  stackctl set-version <dir> <version>        set the version of <dir>/cluster-class/Chart.yaml
  stackctl diff <old> <new> [-o text|markdown|json] [--budget <bytes>]
                                              what moving a Cluster from <old> to <new> changes: components,
                                              values, workload-cluster objects; <old> and <new> are stack
                                              directories or <dir>@<git revision> (a tag, a branch, a commit,
                                              or a stack version: <dir>@v2 is the stack's release tag);
                                              exits 0: no differences, 1: differences, 2: error
  stackctl push <dir> oci://<host>/<repository> [--version <v>] [--tag <t>] [--sign-key <cosign.key>]
                [--username <u>] [--ca-file <f>] [--insecure] [--source <url>] [--revision <rev>]
                                              publish the stack directory at a version as an OCI artifact in
                                              Flux's format (tag: the release name) and each Helm chart of it
                                              beside it in Helm's format (tag: <release>_<component>), optionally
                                              signed with a cosign key; passwords from $REGISTRY_PASSWORD,
                                              $COSIGN_PASSWORD
  stackctl mirror <from> oci://<host>/<repository> [--tags <t1,t2>] [--from-username <u>]
                [--from-ca-file <f>] [--from-insecure] [--username <u>] [--ca-file <f>] [--insecure]
                [--sign-key <cosign.key>]
                                              copy releases into a registry (air-gapped sites): <from> is a
                                              registry (oci://..., copied byte for byte with their charts and
                                              cosign signatures) or a stack directory in a Git checkout (each
                                              release tag published as push does, reproducibly; --sign-key
                                              signs them)
  stackctl key-pair <prefix>                  write <prefix>.key (cosign's format, encrypted with
                                              $COSIGN_PASSWORD) and <prefix>.pub (for spec.source.oci.verify)
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
	case "diff":
		return diff(args[1:], stdout, stderr)
	case "push":
		return push(args[1:], stdout, stderr)
	case "mirror":
		return mirror(args[1:], stdout, stderr)
	case "key-pair":
		return keyPair(args[1:], stdout, stderr)
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

// diff parses "<old> <new> [-o text|markdown|json] [--budget N]", flags anywhere.
func diff(args []string, stdout, stderr io.Writer) int {
	var refs []string
	opts := stackcli.DiffOptions{Format: stackcli.DiffText}
	value := func(i int, name string) (string, bool) {
		if i+1 >= len(args) {
			fmt.Fprintf(stderr, "stackctl diff: %s needs a value\n%s", name, usage)
			return "", false
		}
		return args[i+1], true
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(a, "=")
		switch name {
		case "-o", "--output", "-output":
			if !hasVal {
				var ok bool
				if val, ok = value(i, name); !ok {
					return stackcli.DiffError
				}
				i++
			}
			switch val {
			case stackcli.DiffText, stackcli.DiffMarkdown, stackcli.DiffJSON:
				opts.Format = val
			default:
				fmt.Fprintf(stderr, "stackctl diff: unknown output format %q (text, markdown or json)\n", val)
				return stackcli.DiffError
			}
		case "--budget", "-budget":
			if !hasVal {
				var ok bool
				if val, ok = value(i, name); !ok {
					return stackcli.DiffError
				}
				i++
			}
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 {
				fmt.Fprintf(stderr, "stackctl diff: --budget %q is not a number of bytes\n", val)
				return stackcli.DiffError
			}
			opts.Budget = n
		default:
			if strings.HasPrefix(a, "-") && a != "-" {
				fmt.Fprintf(stderr, "stackctl diff: unknown flag %s\n%s", a, usage)
				return stackcli.DiffError
			}
			refs = append(refs, a)
		}
	}
	if len(refs) != 2 {
		fmt.Fprintf(stderr, "stackctl diff: give two stacks, <old> and <new>\n%s", usage)
		return stackcli.DiffError
	}
	return stackcli.Diff("stackctl", stackcli.ParseStackRef(refs[0]), stackcli.ParseStackRef(refs[1]), opts, stdout, stderr)
}
