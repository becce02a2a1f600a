// Package fleet turns the examples/ manifests into a fleet repository on the local plane's
// forge and has Flux apply it, as a platform team runs its fleet: ClusterStacks, Clusters and
// ManagementOperators are committed to Git, and a Flux Kustomization applies them with health
// checks on the ClusterStacks. `make demo` and the end-to-end suite use it.
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
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/forge"
)

const (
	// Name of the GitRepository, Kustomization and ServiceAccount in FluxNamespace.
	Name = "fleet"
	// FluxNamespace is where the fleet's Flux objects live.
	FluxNamespace = "flux-system"
	// GitURLPlaceholder in the examples is replaced by the plane's Git server URL.
	GitURLPlaceholder = "${GIT_URL}"
	// ProposalSecret is the Secret, in each ClusterStack namespace of the fleet, holding the
	// bot's token for the operator's pull requests (spec.updates.proposals.secretRef).
	ProposalSecret = "fleet-bot"
)

// Object names one object of the fleet.
type Object struct {
	APIVersion, Kind, Namespace, Name string
}

// Render copies the *.yaml files of examplesDir into dir, with GitURLPlaceholder replaced by
// gitURL, and returns the objects they define. The copies stay plain manifests.
func Render(examplesDir, gitURL, dir string) ([]Object, error) {
	files, err := filepath.Glob(filepath.Join(examplesDir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no *.yaml in %s", examplesDir)
	}
	sort.Strings(files)
	var objs []Object
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		data = bytes.ReplaceAll(data, []byte(GitURLPlaceholder), []byte(gitURL))
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), data, 0o644); err != nil {
			return nil, err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, fmt.Errorf("decode %s: %w", f, err)
			}
			if len(u.Object) > 0 {
				objs = append(objs, Object{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()})
			}
		}
	}
	return objs, nil
}

// Publish commits dir to the forge's fleet repository as its administrator (a person).
func Publish(ctx context.Context, f *forge.Forge, dir, message string) (string, error) {
	return f.Publish(ctx, f.Owner(), f.Repo(), dir, message)
}

// Apply creates the Flux objects that apply the fleet repository: a ServiceAccount bound to
// cluster-admin (the platform team's fleet creates namespaces, RBAC and cluster-scoped
// ManagementOperators; Flux runs with --default-service-account, so the Kustomization names
// this account), a GitRepository following main (read anonymously: the repository is public on
// the local forge) and a Kustomization with a health check on every ClusterStack in objs.
func Apply(ctx context.Context, c client.Client, f *forge.Forge, objs []Object) error {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: Name + "-applier", Namespace: FluxNamespace}}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "fleet-applier"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: sa.Namespace}}}
	repo := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: FluxNamespace},
		Spec: sourcev1.GitRepositorySpec{URL: f.RepoURL(f.Owner(), f.Repo()),
			Reference: &sourcev1.GitRepositoryRef{Branch: forge.DefaultBranch}, Interval: metav1.Duration{Duration: 10 * time.Second}}}
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: FluxNamespace},
		Spec: kustomizev1.KustomizationSpec{
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: Name},
			Path:      "./", Prune: true, ServiceAccountName: sa.Name,
			Interval: metav1.Duration{Duration: time.Minute}, RetryInterval: &metav1.Duration{Duration: 10 * time.Second},
			Timeout: &metav1.Duration{Duration: 5 * time.Minute},
		}}
	for _, o := range objs {
		if o.Kind == "ClusterStack" && strings.HasPrefix(o.APIVersion, csv1.GroupVersion.Group+"/") {
			ks.Spec.HealthChecks = append(ks.Spec.HealthChecks, meta.NamespacedObjectKindReference{
				APIVersion: o.APIVersion, Kind: o.Kind, Name: o.Name, Namespace: o.Namespace})
		}
	}
	for _, o := range []client.Object{sa, crb, repo, ks} {
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}

// ProposalSecrets creates, in each namespace of objs that has a ClusterStack, the Secret
// ProposalSecret with the bot's token: the write credential the operator uses for pull
// requests when a ClusterStack asks for them, kept apart from Flux's read access. It waits for
// the namespaces, which Flux creates from the fleet.
func ProposalSecrets(ctx context.Context, c client.Client, f *forge.Forge, objs []Object) error {
	done := map[string]bool{}
	for _, o := range objs {
		if o.Kind != "ClusterStack" || o.Namespace == "" || done[o.Namespace] {
			continue
		}
		done[o.Namespace] = true
		for {
			err := c.Get(ctx, client.ObjectKey{Name: o.Namespace}, &corev1.Namespace{})
			if err == nil {
				break
			}
			if !apierrors.IsNotFound(err) {
				return err
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("namespace %s was not created by the fleet: %w", o.Namespace, ctx.Err())
			case <-time.After(time.Second):
			}
		}
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: ProposalSecret, Namespace: o.Namespace},
			StringData: map[string]string{"token": f.BotToken()}}
		if err := c.Create(ctx, sec); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create Secret %s/%s: %w", o.Namespace, ProposalSecret, err)
		}
	}
	return nil
}
