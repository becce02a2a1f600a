// Command local runs the ClusterStack operator on a local management plane made of real
// components (see package plane): a management API server, Flux's controllers, a Git server,
// the operator, and localinfra, which stands in for a CAPI infrastructure provider (it is not
// part of the operator) by turning each Cluster into a local workload cluster.
//
//	go run ./bootstrap/local up [--state-dir .local] [--bin-dir bin] [--no-examples]
//
// Unless --no-examples is given, it publishes the stacks/ tree to the repository "stacks" on
// the local Git server with the release tag(s) of --tags, starts a Gitea forge, commits the
// manifests of examples/ (with ${GIT_URL} replaced by the Git server's URL) to its fleet
// repository, and has a Flux Kustomization apply that repository (package fleet): from then on
// the fleet changes by commits and merged pull requests. It runs until SIGINT or SIGTERM, then
// stops everything it started.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/clusterstack-io/clusterstack-operator/bootstrap/fleet"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/gitea"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/plane"
	"github.com/clusterstack-io/clusterstack-operator/internal/ocistack"
	"github.com/clusterstack-io/clusterstack-operator/internal/releasename"
	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
)

const (
	// stacksRepo is the repository the stacks/ tree is published to; the examples'
	// ClusterStack points at ${GIT_URL}/stacks.
	stacksRepo = "stacks"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: go run ./bootstrap/local up [flags]\n\n"+
		"Starts a local management plane (API server, Flux, Git server, localinfra, the operator)\n"+
		"and, unless --no-examples, publishes stacks/ and commits examples/ to the fleet repository Flux applies. Ctrl-C stops it.\n\nFlags:\n")
	fs.SetOutput(w)
	fs.PrintDefaults()
}

type config struct {
	stateDir, binDir, repoRoot, stacksDir, examplesDir string
	tags                                               string
	noExamples, noOperator, verbose, withCAPI          bool
	nodes, managementNodes                             int
	startTimeout                                       time.Duration
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	var cfg config
	fs.StringVar(&cfg.stateDir, "state-dir", ".local", "Directory for the plane's state and logs (its contents are replaced).")
	fs.StringVar(&cfg.binDir, "bin-dir", "", "Directory of the binaries from `make tools` and `make build` (default <repo>/bin).")
	fs.StringVar(&cfg.repoRoot, "repo-root", "", "Checkout of the operator (default: found from the working directory).")
	fs.StringVar(&cfg.stacksDir, "stacks-dir", "", "Tree published to the Git repository \"stacks\" (default <repo>/stacks).")
	fs.StringVar(&cfg.examplesDir, "examples-dir", "", "Manifests committed to the fleet repository Flux applies (default <repo>/examples).")
	fs.StringVar(&cfg.tags, "tags", "aws-base-1-36-v1,aws-base-1-36-v2", "Comma-separated release tags put on the published stacks commit (v2 is an update the demo's ClusterStack can take).")
	fs.BoolVar(&cfg.noExamples, "no-examples", false, "Do not publish stacks/ nor the fleet repository (and start no forge).")
	fs.BoolVar(&cfg.noOperator, "no-operator", false, "Do not start the operator (bin/manager); run it yourself with the printed KUBECONFIG.")
	fs.BoolVar(&cfg.withCAPI, "with-capi", true, "Run Cluster API's core manager (topology controller, webhooks, conversion) and the kubeadm/CAPD providers' webhooks; localinfra then plays the providers by contract (false: localinfra builds a minimal topology itself).")
	fs.IntVar(&cfg.nodes, "nodes", 1, "kwok Nodes per workload cluster (a Cluster's annotation localinfra.clusterstack.io/nodes overrides it).")
	fs.IntVar(&cfg.managementNodes, "management-nodes", 1, "kwok Nodes of the management API server, where operators delivered into the management cluster run.")
	fs.DurationVar(&cfg.startTimeout, "start-timeout", plane.DefaultStartTimeout, "Bound on starting the plane.")
	fs.BoolVar(&cfg.verbose, "verbose", false, "Also print the plane's own log (always in <state-dir>/plane.log) on standard error.")
	fs.Usage = func() { usage(os.Stderr, fs) }

	if len(args) == 0 || args[0] != "up" {
		usage(os.Stderr, fs)
		return errors.New("expected the subcommand \"up\"")
	}
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}

	// The plane's own log (envtest, localinfra) goes to a file; the terminal gets what to do.
	if err := os.MkdirAll(cfg.stateDir, 0o755); err != nil {
		return err
	}
	logFile, err := os.OpenFile(filepath.Join(cfg.stateDir, "plane.log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer func() { _ = logFile.Close() }()
	var logOut io.Writer = logFile
	if cfg.verbose {
		logOut = io.MultiWriter(logFile, os.Stderr)
	}
	log := zap.New(zap.UseDevMode(true), zap.WriteTo(logOut))
	ctrl.SetLogger(log)

	if cfg.repoRoot == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		if cfg.repoRoot, err = plane.FindRepoRoot(wd); err != nil {
			return err
		}
	}
	if cfg.stacksDir == "" {
		cfg.stacksDir = filepath.Join(cfg.repoRoot, "stacks")
	}
	if cfg.examplesDir == "" {
		cfg.examplesDir = filepath.Join(cfg.repoRoot, "examples")
	}

	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()

	fmt.Fprintln(out, "Starting the local management plane (logs in", filepath.Join(cfg.stateDir, "logs"), "and", filepath.Join(cfg.stateDir, "plane.log")+") ...")
	p, err := plane.Start(ctx, plane.Options{
		StateDir:        cfg.stateDir,
		RepoRoot:        cfg.repoRoot,
		BinDir:          cfg.binDir,
		WithOperator:    !cfg.noOperator,
		WithCAPI:        cfg.withCAPI,
		WithForge:       !cfg.noExamples,
		WithRegistry:    !cfg.noExamples,
		WorkloadNodes:   cfg.nodes,
		ManagementNodes: cfg.managementNodes,
		StartTimeout:    cfg.startTimeout,
		Logger:          log,
	})
	if err != nil {
		return err
	}
	// Stop the plane however this function ends, a panic included.
	defer func() {
		fmt.Fprintln(out, "Stopping the local management plane ...")
		if err := p.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			return
		}
		fmt.Fprintln(out, "Stopped.")
	}()

	var clusters []string
	if !cfg.noExamples {
		if clusters, err = loadExamples(ctx, p, cfg); err != nil {
			return err
		}
	}
	printHelp(out, p, cfg, clusters)

	<-ctx.Done()
	// A second Ctrl-C ends the process at once; the plane's processes get SIGKILL from the
	// kernel and the next `up` ends what is left.
	stopSignals()
	return nil
}

// loadExamples publishes the stacks tree to the Git server, commits the example manifests to
// the forge's fleet repository and creates the Flux objects that apply it, and the bot's
// Secret for proposals once Flux created the namespaces (package fleet). It returns the
// Clusters ("namespace/name") the examples define.
func loadExamples(ctx context.Context, p *plane.Plane, cfg config) ([]string, error) {
	if _, err := p.Git().CreateRepo(stacksRepo); err != nil {
		return nil, err
	}
	tags := splitList(cfg.tags)
	if len(tags) == 0 {
		tags = []string{""}
	}
	for _, tag := range tags {
		dir, err := stackTreeFor(cfg.stacksDir, tag)
		if err != nil {
			return nil, err
		}
		err = p.Git().Publish(ctx, stacksRepo, dir, "", tag)
		if err == nil {
			err = pushRelease(ctx, p, dir, tag)
		}
		if dir != cfg.stacksDir {
			_ = os.RemoveAll(dir)
		}
		if err != nil {
			return nil, fmt.Errorf("publish %s: %w", cfg.stacksDir, err)
		}
	}

	// The examples become the fleet repository on the forge, and Flux applies it.
	dir, err := os.MkdirTemp("", "fleet-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	objs, err := fleet.Render(cfg.examplesDir, fleet.URLs{Git: p.Git().URL(), OCI: "oci://" + p.OCIRegistry().Host()}, dir)
	if err != nil {
		return nil, err
	}
	if _, err := fleet.Publish(ctx, p.Forge(), dir, "Fleet: the examples"); err != nil {
		return nil, fmt.Errorf("publish the fleet repository: %w", err)
	}
	if err := fleet.Apply(ctx, p.Client(), p.Forge(), objs); err != nil {
		return nil, err
	}
	wait, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := fleet.ProposalSecrets(wait, p.Client(), p.Forge(), objs); err != nil {
		return nil, err
	}
	var clusters []string
	for _, o := range objs {
		if o.IsCluster() {
			clusters = append(clusters, o.Namespace+"/"+o.Name)
		}
	}
	return clusters, nil
}

// pushRelease publishes the stack of release tag in the stacks tree dir to the plane's OCI
// registry as `stackctl push` does, to the repository stacks/<provider>-<name>
// (ociRepository), so that a ClusterStack can read it from there too. A tag that is no release of
// a stack in the tree is not pushed.
func pushRelease(ctx context.Context, p *plane.Plane, dir, tag string) error {
	rel, err := releasename.Parse(tag)
	if err != nil {
		return nil //nolint:nilerr // not a release tag
	}
	sub, err := stackDirOf(dir, rel)
	if err != nil || sub == "" {
		return err
	}
	reg := p.OCIRegistry()
	t := ocistack.Target{URL: reg.URL(ociRepository(rel)), Insecure: reg.Insecure()}
	if _, err := ocistack.PushRelease(ctx, t, filepath.Join(dir, sub), tag, ocistack.Origin{Source: p.Git().URL() + "/" + stacksRepo}, nil); err != nil {
		return fmt.Errorf("push %s to %s: %w", tag, t.URL, err)
	}
	return nil
}

// ociRepository is the plane registry's repository the demo pushes a stack's releases to.
func ociRepository(rel releasename.Release) string {
	return "stacks/" + rel.Provider + "-" + rel.Name
}

// stackTreeFor returns the stacks tree to tag with tag: for a release tag of a stack in the
// tree, a copy whose cluster-class chart carries the release's version (as a release step
// sets it; validation checks it), else the tree itself.
func stackTreeFor(stacksDir, tag string) (string, error) {
	rel, err := releasename.Parse(tag)
	if err != nil {
		return stacksDir, nil //nolint:nilerr // not a release tag: the tree itself
	}
	sub, err := stackDirOf(stacksDir, rel)
	if err != nil {
		return "", fmt.Errorf("tag %s: %w", tag, err)
	}
	if sub == "" {
		return stacksDir, nil // a release of a stack that is not in the tree: the tree itself
	}
	dir, err := os.MkdirTemp("", "stacks-")
	if err != nil {
		return "", err
	}
	if err := os.CopyFS(dir, os.DirFS(stacksDir)); err != nil {
		return "", err
	}
	if err := stack.SetChartVersion(filepath.Join(dir, sub), rel.Version); err != nil {
		return "", fmt.Errorf("tag %s: %w", tag, err)
	}
	return dir, nil
}

// stackDirOf returns the directory (relative to stacksDir) of the stack rel is a release of:
// <provider>/<name>/<major>-<minor> as in stacks/, else the first directory (in lexical order)
// whose stack metadata (stack.yaml or csctl.yaml) names the same provider, stack name and
// Kubernetes minor version, as in SCS's providers/<provider>/<name> layout; "" when none.
func stackDirOf(stacksDir string, rel releasename.Release) (string, error) {
	sub := filepath.Join(rel.Provider, rel.Name, fmt.Sprintf("%d-%d", rel.Major, rel.Minor))
	if _, err := os.Stat(filepath.Join(stacksDir, sub)); err == nil {
		return sub, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	minor := fmt.Sprintf("%d.%d", rel.Major, rel.Minor)
	found := ""
	err := filepath.WalkDir(stacksDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || found != "" {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.IsDir() || (d.Name() != stack.StackFile && d.Name() != stack.CsctlFile) {
			return nil
		}
		dir := filepath.Dir(path)
		s, err := stack.Load(dir)
		if err != nil || s.Provider != rel.Provider || s.Name != rel.Name || s.KubernetesMinor != minor {
			return nil //nolint:nilerr // not this release's stack (or not a valid one): keep looking
		}
		found, err = filepath.Rel(stacksDir, dir)
		return err
	})
	return found, err
}

// withUser returns rawURL with user and password in it (a local demo's clone URL, so that
// the push needs no prompt); rawURL itself when it does not parse.
func withUser(rawURL, user, password string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	u.User = url.UserPassword(user, password)
	return u.String()
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func printHelp(out io.Writer, p *plane.Plane, cfg config, clusters []string) {
	kc := p.Kubeconfig()
	fmt.Fprintf(out, `
The local management plane is up.

  export KUBECONFIG=%s
  kubectl get clusterstacks -A
  kubectl get gitrepositories,helmcharts,helmreleases,kustomizations -A
  kubectl get clusters,clusterclasses -A

`, kc)
	if !cfg.noExamples {
		fmt.Fprintf(out, "Git server: %s (repository %s/%s, tags %s)\n", p.Git().URL(), p.Git().URL(), stacksRepo, cfg.tags)
	} else {
		fmt.Fprintf(out, "Git server: %s (create repositories with the gitserver package, or push to %s/<name>.git after CreateRepo)\n", p.Git().URL(), p.Git().URL())
	}
	if f := p.Forge(); f != nil {
		repoURL := f.RepoURL(f.Owner(), f.Repo())
		fmt.Fprintf(out, `
The fleet: examples/ committed to the repository %s/%s on Gitea, applied by the Flux
Kustomization %s/%s (health checks on the ClusterStacks).
  Gitea web:  %s   (user %s, password %s; main is protected: only %s pushes)
  Clone URL:  %s
Walkthrough: commit a stack version, Flux applies it, the operator delivers it:
  git clone -c user.name=%s -c user.email=%s@%s %s && cd %s
  sed -i 's/    - v1$/    - v1\n    - v2/' 10-clusterstack.yaml
  git commit -am "demo: deliver v2" && git push
  kubectl get kustomizations -A        # what `+"`flux get kustomizations`"+` shows
  kubectl get clusterstacks -A
The operator's pull requests (spec.updates.proposals, Secret %s in the ClusterStack's namespace) are opened as %s.
`, f.Owner(), f.Repo(), fleet.FluxNamespace, fleet.Name,
			f.URL(), f.AdminUser(), f.AdminPassword(), f.AdminUser(),
			repoURL,
			f.AdminUser(), f.AdminUser(), gitea.EmailDomain, withUser(repoURL, f.AdminUser(), f.AdminPassword()), f.Repo(),
			fleet.ProposalSecret, f.BotUser())
	}
	if ops := p.FixtureOperators(); len(ops) > 0 {
		fmt.Fprintf(out, "\nFixture operators (manifests at %s/ of each tag), for ManagementOperators:\n", plane.FixtureOperatorPath)
		for _, op := range ops {
			var versions []string
			for _, v := range op.Versions {
				versions = append(versions, v.Version)
			}
			fmt.Fprintf(out, "  %s %s (tags %s)\n", op.Name, op.URL, strings.Join(versions, ", "))
		}
	}
	if len(clusters) > 0 {
		fmt.Fprintln(out, "\nWorkload clusters (started by localinfra, a stand-in for a CAPI provider), e.g.:")
		for _, c := range clusters {
			ns, name, _ := strings.Cut(c, "/")
			fmt.Fprintf(out, "  kubectl -n %s get secret %s-kubeconfig -o jsonpath={.data.value} | base64 -d > %s.kubeconfig\n", ns, name, name)
			fmt.Fprintf(out, "  kubectl --kubeconfig %s.kubeconfig get nodes,pods -A\n", name)
		}
	} else {
		fmt.Fprintln(out, "\nA workload cluster's kubeconfig: kubectl -n <ns> get secret <cluster>-kubeconfig -o jsonpath={.data.value} | base64 -d > c.kubeconfig")
	}
	fmt.Fprintf(out, "\nLogs: %s (workload clusters in %s)\n", p.LogDir(), filepath.Join(p.LogDir(), "clusters"))
	if cfg.noOperator {
		fmt.Fprintf(out, "The operator is not running: KUBECONFIG=%s SOURCE_CONTROLLER_LOCALHOST=%s go run ./cmd\n", kc, p.SourceControllerStorageAddr())
	}
	fmt.Fprintln(out, "\nPress Ctrl-C to stop everything.")
}
