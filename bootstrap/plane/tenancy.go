package plane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/manifests"
)

const (
	// DefaultFluxServiceAccount is the plane's Flux --default-service-account (and the
	// operator's): the identity Flux applies each namespace's stacks with.
	DefaultFluxServiceAccount = "clusterstack-flux"
	// TenantClusterRole is config/tenant's ClusterRole, bound in each tenant namespace.
	TenantClusterRole = "clusterstack-tenant"
	// OperatorNamespace and OperatorServiceAccount are the operator's identity in config/rbac.
	OperatorNamespace      = "clusterstack-system"
	OperatorServiceAccount = "clusterstack-operator"
	// OperatorKubeconfigFile is the operator's kubeconfig (its ServiceAccount token) in the
	// state dir.
	OperatorKubeconfigFile = "operator.kubeconfig"
	// operatorTokenLifetime is how long the operator's token is valid: longer than any plane runs.
	operatorTokenLifetime = 30 * 24 * 3600
	fieldOwner            = "clusterstack-plane"
)

// installConfig applies the kustomize directory dir (config/rbac, config/tenant) as the admin,
// with server-side apply, exactly as a deployment would install it.
func (p *Plane) installConfig(ctx context.Context, dir string) error {
	return applyConfig(ctx, p.client, dir)
}

// applyConfig is installConfig with the client c.
func applyConfig(ctx context.Context, c client.Client, dir string) error {
	objs, err := manifests.Build(dir)
	if err != nil {
		return fmt.Errorf("plane: %w", err)
	}
	for _, o := range objs {
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
			return fmt.Errorf("plane: apply %s %s from %s: %w", o.GetKind(), o.GetName(), dir, err)
		}
	}
	return nil
}

// setupOperatorIdentity installs config/rbac and writes a kubeconfig with a token of the
// operator's ServiceAccount: the operator then runs with exactly the RBAC it ships, so that a
// missing rule fails the tests and an excess one is visible in config/rbac.
func (p *Plane) setupOperatorIdentity(ctx context.Context) (string, error) {
	return InstallOperatorIdentity(ctx, p.cfg, p.client, p.opts.RBACConfigDir, p.opts.StateDir)
}

// InstallOperatorIdentity installs the operator's RBAC (the kustomize directory rbacDir,
// config/rbac) into the cluster of cfg as its admin c, and writes into dir a kubeconfig with a
// token of the operator's ServiceAccount, whose path it returns: a process using it has exactly
// the permissions the operator ships with, and its requests are OperatorUser's.
func InstallOperatorIdentity(ctx context.Context, cfg *rest.Config, c client.Client, rbacDir, dir string) (string, error) {
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: OperatorNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("plane: create namespace %s: %w", OperatorNamespace, err)
	}
	if err := applyConfig(ctx, c, rbacDir); err != nil {
		return "", err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", fmt.Errorf("plane: %w", err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(OperatorNamespace).CreateToken(ctx, OperatorServiceAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](operatorTokenLifetime)},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("plane: token for ServiceAccount %s/%s: %w", OperatorNamespace, OperatorServiceAccount, err)
	}
	b, err := kubeconfigFor(cfg, "local-plane", OperatorServiceAccount, &clientcmdapi.AuthInfo{Token: tr.Status.Token})
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, OperatorKubeconfigFile)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return "", fmt.Errorf("plane: write operator kubeconfig: %w", err)
	}
	return path, nil
}

// TenantObjects are what a platform team creates for a team's namespace ns: the namespace,
// labelled as a tenant's (csv1.TenantNamespaceLabel: Cluster API calls the operator's Runtime
// Extension for its Clusters), the ServiceAccount Flux applies its stacks as (sa), and a
// RoleBinding of config/tenant's ClusterRole to it in ns. examples/00-namespace.yaml holds the
// same for the demo.
func TenantObjects(ns, sa string) []client.Object {
	return []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{csv1.TenantNamespaceLabel: csv1.TenantNamespaceValue}}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns}},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: TenantClusterRole},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}},
		},
	}
}

// CreateTenantNamespace creates namespace ns with the plane's Flux ServiceAccount bound to the
// tenant ClusterRole (TenantObjects).
func (p *Plane) CreateTenantNamespace(ctx context.Context, ns string) error {
	for _, o := range TenantObjects(ns, p.opts.FluxServiceAccount) {
		if err := p.client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("plane: create %T %s in %s: %w", o, o.GetName(), ns, err)
		}
	}
	return nil
}

// FluxServiceAccount is the Flux --default-service-account the plane runs with.
func (p *Plane) FluxServiceAccount() string { return p.opts.FluxServiceAccount }
