package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	fluxmeta "github.com/fluxcd/pkg/apis/meta"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/overrides"
	"github.com/clusterstack-io/clusterstack-operator/internal/plugin"
	"github.com/clusterstack-io/clusterstack-operator/internal/render"
	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
)

// valuesOptions are the flags of `values`.
type valuesOptions struct {
	stackDir     string
	artifactHost string
	// directArtifacts fetches artifacts from their URL also when it names a cluster-internal
	// Service (the dashboard's in-cluster mode, which resolves such names).
	directArtifacts bool
}

func newValuesCommand(o *options) *cobra.Command {
	vo := &valuesOptions{}
	cmd := &cobra.Command{
		Use:   "values CLUSTER",
		Short: "Show a Cluster's rendered values per component, and where each value came from",
		Long: `Show the values the operator rendered for a Cluster into its values ConfigMap(s), one per
release its components use: the variables every component gets (cluster_name, ...), each Helm
component's values and each kustomize component's substitution variables.

For each value it says where it came from: a field of the Cluster, a topology variable, a field
of the control plane or the infrastructure cluster, the release, or the stack's values template
itself (a default of the stack). The operator does not record this; the plugin computes it with
the operator's own rendering code: it reads the release's stack (from the GitRepository's
artifact, or --stack-dir), renders each template again with one input field changed at a time,
and names the fields whose change changes the value.

The artifact is fetched from the URL source-controller advertises; when that is a cluster-internal
Service name (*.svc, *.svc.cluster.local) it is read through the API server's service proxy
(which needs get on services/proxy in the GitRepository's Service namespace). --artifact-host
replaces the URL's host (like Flux's SOURCE_CONTROLLER_LOCALHOST).`,
		Example: `  kubectl clusterstack values alpha -n team-a
  kubectl clusterstack values alpha -n team-a --stack-dir ./providers/aws/base/1-36 -o yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := o.gatherValues(cmd.Context(), args[0], vo)
			if err != nil {
				return err
			}
			v := plugin.ClusterValuesOf(in)
			return o.print(v, func(w io.Writer, st plugin.Style) error { return plugin.WriteValues(w, v, st) })
		},
	}
	cmd.Flags().StringVar(&vo.stackDir, "stack-dir", "", "read the stack from this directory (a checkout of the release's tag) instead of the release's GitRepository artifact")
	cmd.Flags().StringVar(&vo.artifactHost, "artifact-host", os.Getenv("SOURCE_CONTROLLER_LOCALHOST"), "host:port to fetch source artifacts from instead of the URL's (default $SOURCE_CONTROLLER_LOCALHOST)")
	return cmd
}

// gatherValues reads the Cluster, its control plane and infrastructure cluster, its
// ClusterAddon, and per release its components use: the release, the values ConfigMap and the
// stack.
func (o *options) gatherValues(ctx context.Context, name string, vo *valuesOptions) (plugin.ValuesInput, error) {
	c, err := o.client()
	if err != nil {
		return plugin.ValuesInput{}, err
	}
	ns, err := o.namespace()
	if err != nil {
		return plugin.ValuesInput{}, err
	}
	cfg, err := o.restConfig()
	if err != nil {
		return plugin.ValuesInput{}, err
	}
	return valuesInput(ctx, c, cfg, ns, name, vo, fetchStack)
}

// stackFetcher loads the stack of a release (fetchStack; the dashboard keeps what it loaded).
type stackFetcher func(ctx context.Context, c client.Client, cfg *rest.Config, rel *csv1.ClusterStackRelease, vo *valuesOptions) (*stack.Stack, error)

// valuesInput reads what `values` needs of Cluster ns/name with c.
func valuesInput(ctx context.Context, c client.Client, cfg *rest.Config, ns, name string, vo *valuesOptions, fetch stackFetcher) (plugin.ValuesInput, error) {
	in := plugin.ValuesInput{Namespace: ns, Cluster: name, Releases: map[string]plugin.ReleaseValues{}}
	key := client.ObjectKey{Namespace: ns, Name: name}
	cluster := &clusterv1.Cluster{}
	if ok, err := getOrNil(ctx, c, key, cluster); err != nil {
		return in, err
	} else if !ok {
		return in, fmt.Errorf("cluster %s not found", key)
	}
	addon := &csv1.ClusterAddon{}
	if ok, err := getOrNil(ctx, c, key, addon); err != nil || !ok {
		return in, err
	}
	in.Addon = addon
	var err error
	if in.Objects, err = renderObjects(ctx, c, cluster); err != nil {
		return in, err
	}

	releases := []string{}
	if addon.Status.DesiredRelease != "" {
		releases = append(releases, addon.Status.DesiredRelease)
	}
	for _, comp := range addon.Status.Components {
		if !slices.Contains(releases, comp.Release) {
			releases = append(releases, comp.Release)
		}
	}
	var dirStack *stack.Stack
	var dirErr error
	if vo.stackDir != "" {
		dirStack, dirErr = stack.Load(vo.stackDir)
	}
	for _, relName := range releases {
		rv := plugin.ReleaseValues{Release: render.Release{Name: relName}}
		rel := &csv1.ClusterStackRelease{}
		relFound, err := getOrNil(ctx, c, client.ObjectKey{Namespace: ns, Name: relName}, rel)
		if err != nil {
			return in, err
		}
		if relFound {
			rv.Release.Version, rv.Release.KubernetesVersion = rel.Spec.Version, rel.Status.KubernetesVersion
		}
		cm := &corev1.ConfigMap{}
		if ok, err := getOrNil(ctx, c, client.ObjectKey{Namespace: ns, Name: fluxgen.ValuesConfigMapName(name, relName)}, cm); err != nil {
			return in, err
		} else if ok {
			rv.ConfigMap = cm
			for _, oname := range overrides.ParseNames(cm.Annotations[csv1.OverridesAnnotation]) {
				ov := &csv1.ClusterAddonOverride{}
				found, err := getOrNil(ctx, c, client.ObjectKey{Namespace: ns, Name: oname}, ov)
				if err != nil {
					return in, err
				}
				if !found {
					rv.OverrideNotes = append(rv.OverrideNotes, fmt.Sprintf("release %s: ConfigMap %s was rendered with ClusterAddonOverride %s, which no longer exists (the operator renders again without it)", relName, cm.Name, oname))
					continue
				}
				ros, err := overrides.ToRender([]*csv1.ClusterAddonOverride{ov})
				if err != nil {
					rv.OverrideNotes = append(rv.OverrideNotes, fmt.Sprintf("release %s: %v", relName, err))
					continue
				}
				rv.Overrides = append(rv.Overrides, ros...)
			}
		}
		switch {
		case vo.stackDir != "" && dirErr != nil:
			rv.StackError = fmt.Sprintf("load --stack-dir %s: %v", vo.stackDir, dirErr)
		case vo.stackDir != "":
			rv.Stack = dirStack
		case !relFound:
			rv.StackError = "ClusterStackRelease " + relName + " not found"
		default:
			st, err := fetch(ctx, c, cfg, rel, vo)
			if err != nil {
				rv.StackError = err.Error()
			}
			rv.Stack = st
		}
		in.Releases[relName] = rv
	}
	return in, nil
}

// renderObjects gathers the Cluster, its control plane and its infrastructure cluster as the
// operator renders them (controllers/clusteraddon_controller.go renderInput).
func renderObjects(ctx context.Context, c client.Client, cluster *clusterv1.Cluster) (render.Input, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cluster)
	if err != nil {
		return render.Input{}, fmt.Errorf("convert Cluster %s: %w", cluster.Name, err)
	}
	in := render.Input{Cluster: render.Clean(m)}
	if in.ControlPlane, err = referenced(ctx, c, cluster, cluster.Spec.ControlPlaneRef); err != nil {
		return in, err
	}
	if in.InfraCluster, err = referenced(ctx, c, cluster, cluster.Spec.InfrastructureRef); err != nil {
		return in, err
	}
	return in, nil
}

// referenced reads an object the Cluster refers to, in the Cluster's namespace; nil when the
// reference is empty or the object does not exist.
func referenced(ctx context.Context, c client.Client, cluster *clusterv1.Cluster, ref clusterv1.ContractVersionedObjectReference) (map[string]any, error) {
	if ref.Name == "" || ref.Kind == "" {
		return nil, nil
	}
	mapping, err := c.RESTMapper().RESTMapping(schema.GroupKind{Group: ref.APIGroup, Kind: ref.Kind})
	if err != nil {
		return nil, fmt.Errorf("resolve %s.%s referenced by Cluster %s: %w", ref.Kind, ref.APIGroup, cluster.Name, err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(mapping.GroupVersionKind)
	if ok, err := getOrNil(ctx, c, client.ObjectKey{Namespace: cluster.Namespace, Name: ref.Name}, u); err != nil || !ok {
		return nil, err
	}
	return render.Clean(u.Object), nil
}

// fetchStack loads the stack of a release from its GitRepository's artifact.
func fetchStack(ctx context.Context, c client.Client, cfg *rest.Config, rel *csv1.ClusterStackRelease, vo *valuesOptions) (*stack.Stack, error) {
	art, err := releaseArtifact(ctx, c, rel)
	if err != nil {
		return nil, err
	}
	return loadArtifactStack(ctx, cfg, rel, art, vo)
}

// releaseArtifact is the artifact of the release's source (GitRepository or OCIRepository).
func releaseArtifact(ctx context.Context, c client.Client, rel *csv1.ClusterStackRelease) (*fluxmeta.Artifact, error) {
	repo := fluxgen.NewReleaseSource(rel)
	kind := fluxgen.SourceKind(rel)
	key := client.ObjectKey{Namespace: rel.Namespace, Name: fluxgen.GitRepositoryName(rel.Name)}
	if err := c.Get(ctx, key, repo); err != nil {
		return nil, fmt.Errorf("get %s %s: %w", kind, key, err)
	}
	if repo.GetArtifact() == nil {
		return nil, fmt.Errorf("%s %s has no artifact yet", kind, key)
	}
	return repo.GetArtifact(), nil
}

// loadArtifactStack downloads the artifact and loads the release's stack from it.
func loadArtifactStack(ctx context.Context, cfg *rest.Config, rel *csv1.ClusterStackRelease, art *fluxmeta.Artifact, vo *valuesOptions) (*stack.Stack, error) {
	key := client.ObjectKey{Namespace: rel.Namespace, Name: fluxgen.GitRepositoryName(rel.Name)}
	dir, err := os.MkdirTemp("", "kubectl-clusterstack-")
	if err != nil {
		return nil, fmt.Errorf("temporary directory: %w", err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if err := fetchArtifact(ctx, cfg, art.URL, art.Digest, vo.artifactHost, vo.directArtifacts, dir); err != nil {
		return nil, fmt.Errorf("fetch the artifact of %s %s (revision %s): %w", fluxgen.SourceKind(rel), key, art.Revision, err)
	}
	st, err := stack.Load(filepath.Join(dir, filepath.FromSlash(rel.Spec.Source.Path)))
	if err != nil {
		return nil, fmt.Errorf("load the stack at %s of revision %s: %w", rel.Spec.Source.Path, art.Revision, err)
	}
	return st, nil
}
