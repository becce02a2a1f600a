package plane

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/clusterstack-io/clusterstack-operator/bootstrap/faultproxy"
)

// OperatorViaProxyKubeconfigFile is the operator's kubeconfig in the state dir when it talks to
// the management API server through the fault proxy: the token of OperatorKubeconfigFile, the
// proxy's address and CA.
const OperatorViaProxyKubeconfigFile = "operator-via-proxy.kubeconfig"

// startAPIProxy starts the fault proxy (bootstrap/faultproxy) on loopback in front of the
// management API server and writes OperatorViaProxyKubeconfigFile: the operator's
// ServiceAccount token of p.operatorKubeconfig (setupOperatorIdentity), with the proxy as the
// server. It checks that the proxy forwards that token, then returns the kubeconfig's path.
// The proxy's counts start empty.
func (p *Plane) startAPIProxy(ctx context.Context) (string, error) {
	if p.operatorKubeconfig == "" {
		return "", errors.New("plane: the fault proxy needs the operator's kubeconfig (setupOperatorIdentity)")
	}
	token, err := kubeconfigToken(p.operatorKubeconfig)
	if err != nil {
		return "", err
	}
	px, err := faultproxy.Start(p.cfg, "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("plane: %w", err)
	}
	p.apiProxy = px
	viaProxy := &rest.Config{Host: px.URL(), BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: px.CAData()}}
	if err := checkIdentity(ctx, viaProxy, "system:serviceaccount:"+OperatorNamespace+":"+OperatorServiceAccount); err != nil {
		return "", err
	}
	px.ResetCounts()
	b, err := kubeconfigFor(viaProxy, "local-plane-via-fault-proxy", OperatorServiceAccount, &clientcmdapi.AuthInfo{Token: token})
	if err != nil {
		return "", err
	}
	path := filepath.Join(p.opts.StateDir, OperatorViaProxyKubeconfigFile)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return "", fmt.Errorf("plane: write the operator's kubeconfig through the fault proxy: %w", err)
	}
	return path, nil
}

// APIProxy is the fault proxy between the operator and the management API server
// (Options.OperatorAPIProxy); nil when the operator talks to the API server directly.
func (p *Plane) APIProxy() *faultproxy.Proxy { return p.apiProxy }

// kubeconfigToken is the bearer token of the current context's user of the kubeconfig at path.
func kubeconfigToken(path string) (string, error) {
	kc, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return "", fmt.Errorf("plane: load kubeconfig %s: %w", path, err)
	}
	c, ok := kc.Contexts[kc.CurrentContext]
	if !ok {
		return "", fmt.Errorf("plane: kubeconfig %s: no current context", path)
	}
	auth, ok := kc.AuthInfos[c.AuthInfo]
	if !ok || auth.Token == "" {
		return "", fmt.Errorf("plane: kubeconfig %s: user %q has no token", path, c.AuthInfo)
	}
	return auth.Token, nil
}

// checkIdentity asks the API server of cfg who cfg's credentials are (a SelfSubjectReview,
// which every authenticated user may create) and fails unless they are user.
func checkIdentity(ctx context.Context, cfg *rest.Config, user string) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("plane: %w", err)
	}
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("plane: who am I through the fault proxy %s: %w", cfg.Host, err)
	}
	if got := review.Status.UserInfo.Username; got != user {
		return fmt.Errorf("plane: through the fault proxy %s the operator's token is %q, want %q", cfg.Host, got, user)
	}
	return nil
}
