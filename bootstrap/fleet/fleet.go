// Package fleet turns the examples/ manifests into a fleet repository on the local plane's
// forge (package forge) and has Flux apply it, as a platform team runs its fleet:
// ClusterStacks, Clusters and ManagementOperators are committed to Git, and a Flux
// Kustomization applies them with a health check on every ClusterStack. `make demo`
// (bootstrap/local) and the end-to-end suite (test/e2e) use it, in this order:
//
//	objs, _ := fleet.Render(examplesDir, pl.Git().URL(), dir) // plain manifests in dir
//	commit, _ := fleet.Publish(ctx, pl.Forge(), dir, "msg")   // a commit on main, as the admin
//	_ = fleet.Apply(ctx, c, pl.Forge(), objs)                 // Flux's GitRepository and Kustomization
//	_ = fleet.ProposalSecrets(ctx, c, pl.Forge(), objs)       // the bot's token for pull requests
//
// From then on the fleet changes by commits to the repository (and merged pull requests):
// Flux applies what main holds.
package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/kustomize"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/gitea"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/plane"
)

const (
	// Name is the name of the fleet's GitRepository and Kustomization in FluxNamespace; Flux
	// labels what it applies with kustomize.toolkit.fluxcd.io/name=Name.
	Name = "fleet"
	// ApplierServiceAccount is the ServiceAccount, in FluxNamespace, Flux applies the fleet
	// as; ClusterRoleBinding ApplierServiceAccount binds it to cluster-admin.
	ApplierServiceAccount = Name + "-applier"
	// FluxNamespace is where the fleet's Flux objects live (the plane creates it).
	FluxNamespace = plane.FluxNamespace
	// GitURLPlaceholder in the examples is replaced by the plane's Git server URL.
	GitURLPlaceholder = "${GIT_URL}"
	// OCIURLPlaceholder in the examples is replaced by the plane's OCI registry, as
	// oci://<host>:<port>.
	OCIURLPlaceholder = "${OCI_URL}"
	// ProposalSecret is the Secret ProposalSecrets creates for a ClusterStack that names none
	// in spec.updates.proposals.secretRef: the name examples/10-clusterstack.yaml uses in its
	// commented-out proposals, so that uncommenting them (and committing) is all it takes.
	ProposalSecret = "fleet-bot"
	// ProposalSecretKey is the key of the bot's token in a proposal Secret.
	ProposalSecretKey = "token"

	// SourceInterval is how often Flux fetches the fleet repository.
	SourceInterval = 10 * time.Second
	// Interval is how often Flux applies the fleet again without a new commit.
	Interval = time.Minute
	// RetryInterval is how soon Flux retries after an apply or a health check failed.
	RetryInterval = 15 * time.Second
	// Timeout bounds one apply including the health checks on the ClusterStacks (their
	// Clusters are built meanwhile, which takes a minute or two on the local plane).
	Timeout = 5 * time.Minute
)

// ClusterStackHealth is how the fleet's Kustomization judges a ClusterStack (CEL, evaluated
// by kustomize-controller after Flux's own check that status.observedGeneration, when set, is
// metadata.generation). Flux's default (kstatus) takes an object without a status for
// healthy, and a ClusterStack whose spec just changed may report Ready before the releases of
// its new versions have a status; so healthy here means Ready=True *and* a release Available
// for every version pinned in spec.versions. Stalled=True (e.g. a release whose stack is
// invalid) fails the check at once. Until the operator has written conditions, the
// expressions cannot be evaluated and Flux keeps waiting.
var ClusterStackHealth = kustomize.CustomHealthCheck{
	APIVersion: csv1.GroupVersion.String(),
	Kind:       "ClusterStack",
	HealthCheckExpressions: kustomize.HealthCheckExpressions{
		Current: "status.conditions.exists(c, c.type == 'Ready' && c.status == 'True') && " +
			"(!has(spec.versions) || spec.versions.all(v, has(status.releases) && " +
			"status.releases.exists(r, r.version == v && has(r.available) && r.available)))",
		Failed: "status.conditions.exists(c, c.type == 'Stalled' && c.status == 'True')",
	},
}

// Object names one object of the fleet's manifests, as Render read it.
type Object struct {
	// APIVersion and Kind are the object's type, as written in the manifest.
	APIVersion, Kind string
	// Namespace is empty for a cluster-scoped object (or one that relies on a default).
	Namespace string
	// Name is metadata.name.
	Name string
	// ProposalSecretRef is, for a ClusterStack, spec.updates.proposals.secretRef.name (empty
	// when the ClusterStack asks for no pull requests).
	ProposalSecretRef string
}

// IsClusterStack tells whether o is a ClusterStack of this operator's API group.
func (o Object) IsClusterStack() bool {
	return o.Kind == "ClusterStack" && strings.HasPrefix(o.APIVersion, csv1.GroupVersion.Group+"/")
}

// IsCluster tells whether o is a Cluster API Cluster.
func (o Object) IsCluster() bool {
	return o.Kind == "Cluster" && strings.HasPrefix(o.APIVersion, "cluster.x-k8s.io/")
}

// Render copies the *.yaml files of examplesDir into dir (which must exist) with every
// GitURLPlaceholder replaced by urls.Git and every OCIURLPlaceholder by urls.OCI, the
// substitutions `make demo` applies, and
// returns the objects they define in file order. The copies stay plain manifests: what a user
// would commit to a fleet repository of their own.
func Render(examplesDir string, urls URLs, dir string) ([]Object, error) {
	files, err := filepath.Glob(filepath.Join(examplesDir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("fleet: no *.yaml in %s", examplesDir)
	}
	sort.Strings(files)
	var objs []Object
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		data = bytes.ReplaceAll(data, []byte(GitURLPlaceholder), []byte(urls.Git))
		data = bytes.ReplaceAll(data, []byte(OCIURLPlaceholder), []byte(urls.OCI))
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), data, 0o644); err != nil {
			return nil, err
		}
		found, err := Objects(data)
		if err != nil {
			return nil, fmt.Errorf("fleet: %s: %w", f, err)
		}
		objs = append(objs, found...)
	}
	return objs, nil
}

// URLs are what the examples' placeholders are replaced with.
type URLs struct {
	// Git is the Git server's URL (GitURLPlaceholder).
	Git string
	// OCI is the OCI registry, oci://<host>:<port> (OCIURLPlaceholder).
	OCI string
}

// Objects decodes the YAML documents of a manifest file (empty documents skipped).
func Objects(data []byte) ([]Object, error) {
	var objs []Object
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, err
		}
		if len(u.Object) == 0 {
			continue
		}
		o := Object{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
		if o.IsClusterStack() {
			o.ProposalSecretRef, _, _ = unstructured.NestedString(u.Object, "spec", "updates", "proposals", "secretRef", "name")
		}
		objs = append(objs, o)
	}
}

// Publish commits the content of dir as a new commit on main of the forge's fleet repository
// (gitea.Forge.Owner / Repo), as its administrator: a person, the only one main's protection
// lets push. It returns the commit, once the forge shows it.
func Publish(ctx context.Context, f *gitea.Forge, dir, message string) (string, error) {
	return f.Publish(ctx, f.Owner(), f.Repo(), dir, message)
}

// Apply creates, in FluxNamespace, the Flux objects that apply the forge's fleet repository
// (objects that exist already are left as they are):
//
//   - ServiceAccount ApplierServiceAccount, bound to cluster-admin by a ClusterRoleBinding of
//     the same name. The fleet is the platform team's: it creates Namespaces, RBAC (the
//     tenants' RoleBindings) and cluster-scoped ManagementOperators. The plane's Flux runs in
//     the multi-tenancy lockdown (--default-service-account, --no-cross-namespace-refs), so
//     the Kustomization must name an account with those rights; its sourceRef stays in its
//     own namespace.
//   - GitRepository Name following branch main. No Secret: the repository is public on the
//     local forge and Flux clones it anonymously. Flux only reads; the operator's write
//     credential is a separate Secret (ProposalSecrets).
//   - Kustomization Name applying the repository's root with prune, and a health check on
//     every ClusterStack in objs (judged by ClusterStackHealth): it is Ready once Flux applied
//     the commit and the ClusterStacks deliver every version it pins.
func Apply(ctx context.Context, c client.Client, f *gitea.Forge, objs []Object) error {
	for _, o := range fluxObjects(f.RepoURL(f.Owner(), f.Repo()), objs) {
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("fleet: create %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}

// fluxObjects returns what Apply creates for the fleet repository at repoURL.
func fluxObjects(repoURL string, objs []Object) []client.Object {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: ApplierServiceAccount, Namespace: FluxNamespace}}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ApplierServiceAccount},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: sa.Namespace}}}
	repo := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: FluxNamespace},
		Spec: sourcev1.GitRepositorySpec{
			URL:       repoURL,
			Reference: &sourcev1.GitRepositoryRef{Branch: gitea.DefaultBranch},
			Interval:  metav1.Duration{Duration: SourceInterval},
		}}
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: FluxNamespace},
		Spec: kustomizev1.KustomizationSpec{
			SourceRef:          kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: repo.Name},
			Path:               "./",
			Prune:              true,
			ServiceAccountName: sa.Name,
			Interval:           metav1.Duration{Duration: Interval},
			RetryInterval:      &metav1.Duration{Duration: RetryInterval},
			Timeout:            &metav1.Duration{Duration: Timeout},
			HealthChecks:       HealthChecks(objs),
			HealthCheckExprs:   []kustomize.CustomHealthCheck{ClusterStackHealth},
		}}
	return []client.Object{sa, crb, repo, ks}
}

// HealthChecks returns one Kustomization health check per ClusterStack in objs.
func HealthChecks(objs []Object) []meta.NamespacedObjectKindReference {
	var out []meta.NamespacedObjectKindReference
	for _, o := range objs {
		if o.IsClusterStack() {
			out = append(out, meta.NamespacedObjectKindReference{APIVersion: o.APIVersion, Kind: o.Kind, Name: o.Name, Namespace: o.Namespace})
		}
	}
	return out
}

// ProposalSecrets creates, in the namespace of each ClusterStack in objs, the Secret its
// spec.updates.proposals.secretRef names (ProposalSecret when it names none, so that a
// ClusterStack can turn proposals on by a commit alone), with key ProposalSecretKey holding
// the forge bot's token: the write credential the operator pushes branches and opens pull
// requests with, kept apart from Flux's read access. Flux creates the namespaces from the
// fleet, so it waits for each (until ctx is done); Secrets that exist are left as they are.
func ProposalSecrets(ctx context.Context, c client.Client, f *gitea.Forge, objs []Object) error {
	return proposalSecrets(ctx, c, f.BotToken(), objs, time.Second)
}

// proposalSecrets is ProposalSecrets with the token given, polling namespaces every poll.
func proposalSecrets(ctx context.Context, c client.Client, token string, objs []Object, poll time.Duration) error {
	done := map[client.ObjectKey]bool{}
	for _, o := range objs {
		if !o.IsClusterStack() || o.Namespace == "" {
			continue
		}
		key := client.ObjectKey{Namespace: o.Namespace, Name: o.ProposalSecretRef}
		if key.Name == "" {
			key.Name = ProposalSecret
		}
		if done[key] {
			continue
		}
		done[key] = true
		for {
			err := c.Get(ctx, client.ObjectKey{Name: o.Namespace}, &corev1.Namespace{})
			if err == nil {
				break
			}
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("fleet: get namespace %s: %w", o.Namespace, err)
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("fleet: namespace %s was not created from the fleet: %w", o.Namespace, ctx.Err())
			case <-time.After(poll):
			}
		}
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace},
			StringData: map[string]string{ProposalSecretKey: token}}
		if err := c.Create(ctx, sec); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("fleet: create Secret %s: %w", key, err)
		}
	}
	return nil
}
