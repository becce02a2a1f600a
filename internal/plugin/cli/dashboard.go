package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	fluxmeta "github.com/fluxcd/pkg/apis/meta"
	"github.com/go-logr/logr/funcr"
	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/dashboard"
	"github.com/clusterstack-io/clusterstack-operator/internal/plugin"
	"github.com/clusterstack-io/clusterstack-operator/internal/scheme"
	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
)

// dashboardOptions are the flags of `dashboard`.
type dashboardOptions struct {
	address    string
	all        bool
	namespaces []string
	inCluster  bool
	values     valuesOptions
}

func newDashboardCommand(o *options) *cobra.Command {
	do := &dashboardOptions{}
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Serve a read-only web view of the fleet on loopback, reading with your kubeconfig",
		Long: `Serve a read-only web dashboard of the ClusterStacks, their releases and Clusters, rollouts and
ManagementOperators, and print its URL. Pages update live (server-sent events) from one set of
watches shared by all open pages.

The dashboard reads with your kubeconfig, so it shows exactly what your RBAC lets you list and
nothing else, and it only gets, lists and watches. It listens on 127.0.0.1 on a random port; the
printed URL carries a one-time token that the first browser to open it exchanges for a session
cookie. --address listens elsewhere (with a warning: anyone who reaches the port and has the URL
reads with your identity).

It reads the kubeconfig context's namespace, --namespace, the namespaces of --namespaces, or
with -A every namespace. A kind you may not list in a namespace is left out, and the pages say
so. --in-cluster is the mode of the optional in-cluster Deployment (docs/dashboard.md): it reads
with the Pod's ServiceAccount and leaves authentication to the proxy in front of it.`,
		Example: `  kubectl clusterstack dashboard -n team-a
  kubectl clusterstack dashboard -A
  kubectl clusterstack dashboard --namespaces team-a,team-b`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.runDashboard(cmd.Context(), do, cmd.Flags().Changed("address"))
		},
	}
	cmd.Flags().StringVar(&do.address, "address", "127.0.0.1:0", "host:port to listen on; the default is loopback with a random port")
	cmd.Flags().BoolVarP(&do.all, "all-namespaces", "A", false, "read every namespace (needs cluster-wide list and watch)")
	cmd.Flags().StringSliceVar(&do.namespaces, "namespaces", nil, "read these namespaces (comma-separated) instead of one")
	cmd.Flags().BoolVar(&do.inCluster, "in-cluster", false, "run inside the cluster: read with the Pod's ServiceAccount, no token (authentication is the proxy's), listen on --address (default :8080)")
	cmd.Flags().StringVar(&do.values.artifactHost, "artifact-host", "", "host:port to fetch source artifacts from (for the values' origins) instead of the URL's")
	return cmd
}

func (o *options) runDashboard(ctx context.Context, do *dashboardOptions, addressSet bool) error {
	errOut := o.streams.ErrOut
	var cfg *rest.Config
	var err error
	if do.inCluster {
		if cfg, err = rest.InClusterConfig(); err != nil {
			return fmt.Errorf("--in-cluster: %w", err)
		}
		if !addressSet {
			do.address = ":8080"
		}
		do.values.directArtifacts = true
	} else if cfg, err = o.restConfig(); err != nil {
		return err
	}
	scope := dashboard.Scope{}
	switch {
	case do.all:
	case len(do.namespaces) > 0:
		scope.Namespaces = do.namespaces
	default:
		ns, err := o.namespace()
		if err != nil {
			return err
		}
		scope.Namespaces = []string{ns}
	}
	ln, err := net.Listen("tcp", do.address)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", do.address, err)
	}
	defer func() { _ = ln.Close() }()
	loopback := isLoopbackListener(ln)
	if !loopback && !do.inCluster {
		fmt.Fprintf(errOut, "Warning: the dashboard listens on %s, beyond this machine: whoever reaches it with the URL reads the cluster with your identity.\n", ln.Addr())
	}

	log := funcr.New(func(prefix, args string) { fmt.Fprintln(errOut, prefix, args) }, funcr.Options{})
	// controller-runtime's cache logs through its global logger; errors go to stderr.
	ctrllog.SetLogger(log)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	hub := dashboard.NewHub()
	where := "namespaces " + strings.Join(scope.Namespaces, ", ")
	if do.all {
		where = "all namespaces"
	}
	fmt.Fprintf(errOut, "Reading %s and starting the watches...\n", where)
	src, err := dashboard.NewSource(ctx, cfg, scope, hub, log)
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return fmt.Errorf("connect to the API server: %w", err)
	}
	token := ""
	if !do.inCluster {
		if token, err = dashboard.NewToken(); err != nil {
			return err
		}
	}
	stacks := &stackMemo{entries: map[string]*stack.Stack{}}
	srv, err := dashboard.NewServer(dashboard.Options{
		Source: src, Hub: hub, Token: token, LoopbackHosts: loopback, Log: log,
		Values: func(ctx context.Context, ns, name string) (*plugin.ClusterValues, error) {
			in, err := valuesInput(ctx, c, cfg, ns, name, &do.values, stacks.fetch)
			if err != nil {
				return nil, err
			}
			v := plugin.ClusterValuesOf(in)
			return &v, nil
		},
	})
	if err != nil {
		return err
	}
	base, stopStreams := context.WithCancel(context.Background())
	defer stopStreams()
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		BaseContext: func(net.Listener) context.Context { return base }}
	url := "http://" + ln.Addr().String() + "/"
	if token != "" {
		url += "?token=" + token
	}
	fmt.Fprintf(o.streams.Out, "ClusterStack dashboard: %s\n", url)
	fmt.Fprintln(errOut, "Open the URL in a browser (its token works once). Ctrl-C stops the dashboard.")
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		if !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serve: %w", err)
		}
		return nil
	case <-ctx.Done():
	}
	stopStreams()
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	_ = hs.Shutdown(sctx)
	return nil
}

// isLoopbackListener reports whether ln listens on a loopback address only.
func isLoopbackListener(ln net.Listener) bool {
	a, ok := ln.Addr().(*net.TCPAddr)
	return ok && a.IP.IsLoopback()
}

// stackMemo keeps the stacks loaded from releases' artifacts, by release and artifact digest,
// so that a Cluster page refreshed by every change does not download them again.
type stackMemo struct {
	mu      sync.Mutex
	entries map[string]*stack.Stack
}

// maxMemoStacks bounds the stacks kept.
const maxMemoStacks = 32

func (m *stackMemo) fetch(ctx context.Context, c client.Client, cfg *rest.Config, rel *csv1.ClusterStackRelease, vo *valuesOptions) (*stack.Stack, error) {
	art, err := releaseArtifact(ctx, c, rel)
	if err != nil {
		return nil, err
	}
	key := memoKey(rel, art)
	m.mu.Lock()
	st, ok := m.entries[key]
	m.mu.Unlock()
	if ok {
		return st, nil
	}
	st, err = loadArtifactStack(ctx, cfg, rel, art, vo)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	if len(m.entries) >= maxMemoStacks {
		clear(m.entries)
	}
	m.entries[key] = st
	m.mu.Unlock()
	return st, nil
}

func memoKey(rel *csv1.ClusterStackRelease, art *fluxmeta.Artifact) string {
	return rel.Namespace + "/" + rel.Name + "@" + art.Digest + "/" + rel.Spec.Source.Path
}
