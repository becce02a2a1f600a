package plane

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/clusterstack-io/clusterstack-operator/bootstrap/proc"
	"github.com/clusterstack-io/clusterstack-operator/internal/manifests"
)

const (
	// CAPIManagerBinary is Cluster API's core manager, built by `make tools` (hack/tools/capi).
	CAPIManagerBinary = "capi-manager"
	// ProviderWebhooksBinary serves the webhooks of CAPI's kubeadm bootstrap and control-plane
	// providers and of CAPD, built from their packages by `make tools`
	// (hack/tools/capi/provider-webhooks); their controllers' part is played by localinfra.
	ProviderWebhooksBinary = "provider-webhooks"
)

// capiConversionGroups are the API groups whose CRDs CAPI's core manager converts.
var capiConversionGroups = map[string]bool{
	"cluster.x-k8s.io": true, "addons.cluster.x-k8s.io": true,
	"ipam.cluster.x-k8s.io": true, "runtime.cluster.x-k8s.io": true,
}

// providerWebhookCRDDirs are the CRD directories (Options.CRDDirs base names) whose kinds
// bin/provider-webhooks converts.
var providerWebhookCRDDirs = []string{"capi-kubeadm-bootstrap", "capi-kubeadm-controlplane", "capd"}

// webhookProcess is a process serving admission and conversion webhooks on loopback.
type webhookProcess struct {
	// name is the binary in BinDir and the process name.
	name string
	// webhookDirs are the kustomize directories of its webhook configurations.
	webhookDirs []string
	// args are added to the webhook and health flags.
	args []string
	// converts tells whether the process converts the CRD.
	converts func(*apiextensionsv1.CustomResourceDefinition) bool
}

// startCAPI runs Cluster API's core manager against the management API server with the
// ClusterTopology and RuntimeSDK feature gates (and a client certificate for the Runtime
// Extensions it calls, RuntimeExtensionClient), then bin/provider-webhooks for the kubeadm
// bootstrap and control-plane providers and CAPD. Their admission webhooks are installed
// pointing at them on loopback (envtest makes the CA and serving certificates), and the CRDs
// they convert get a conversion webhook at the same address, so that v1beta1 objects are
// converted by Cluster API's own code.
func (p *Plane) startCAPI(ctx context.Context) error {
	ports, err := proc.FreePorts(1)
	if err != nil {
		return err
	}
	// CAPI calls the operator's Runtime Extension with a client certificate, and the operator
	// serves only clients of that certificate's CA (startOperator).
	if p.extClient, err = writeClientCert(filepath.Join(p.opts.StateDir, runtimeExtensionClientDir), "capi-controller-manager"); err != nil {
		return err
	}
	core := webhookProcess{
		name:        CAPIManagerBinary,
		webhookDirs: []string{filepath.Join(p.opts.BinDir, "webhooks", "capi")},
		args: []string{
			"--feature-gates=ClusterTopology=true,RuntimeSDK=true",
			"--leader-elect=false",
			"--diagnostics-address=127.0.0.1:" + strconv.Itoa(ports[0]),
			"--insecure-diagnostics",
			"--runtime-extension-client-cert-file=" + p.extClient.Cert,
			"--runtime-extension-client-key-file=" + p.extClient.Key,
		},
		converts: func(crd *apiextensionsv1.CustomResourceDefinition) bool {
			return capiConversionGroups[crd.Spec.Group]
		},
	}
	if p.capi, err = p.startWebhookProcess(ctx, core); err != nil {
		return err
	}
	providerCRDs := map[string]bool{}
	for _, d := range providerWebhookCRDDirs {
		for _, name := range p.crds.byDir[d] {
			providerCRDs[name] = true
		}
	}
	providers := webhookProcess{
		name: ProviderWebhooksBinary,
		args: []string{"--feature-gates=ClusterTopology=true,RuntimeSDK=true"},
		webhookDirs: []string{
			filepath.Join(p.opts.BinDir, "webhooks", "kubeadm-bootstrap"),
			filepath.Join(p.opts.BinDir, "webhooks", "kubeadm-controlplane"),
			filepath.Join(p.opts.BinDir, "webhooks", "docker"),
		},
		converts: func(crd *apiextensionsv1.CustomResourceDefinition) bool {
			return providerCRDs[crd.Name]
		},
	}
	p.providerWebhooks, err = p.startWebhookProcess(ctx, providers)
	return err
}

// startWebhookProcess installs w's webhook configurations, points the conversion of the
// multi-version CRDs it converts at it, starts it and waits until it serves.
func (p *Plane) startWebhookProcess(ctx context.Context, w webhookProcess) (*proc.Process, error) {
	o := p.opts
	var muts []*admissionv1.MutatingWebhookConfiguration
	var vals []*admissionv1.ValidatingWebhookConfiguration
	for _, dir := range w.webhookDirs {
		m, v, err := manifests.WebhookConfigurations(dir)
		if err == nil && len(m)+len(v) == 0 {
			err = fmt.Errorf("%s holds no webhook configuration", dir)
		}
		if err != nil {
			return nil, fmt.Errorf("plane: %s webhooks (run `make tools`): %w", w.name, err)
		}
		// Providers name their configurations alike: prefix the directory.
		for _, c := range m {
			c.Name = filepath.Base(dir) + "-" + c.Name
		}
		for _, c := range v {
			c.Name = filepath.Base(dir) + "-" + c.Name
		}
		muts, vals = append(muts, m...), append(vals, v...)
	}
	wh := &envtest.WebhookInstallOptions{MutatingWebhooks: muts, ValidatingWebhooks: vals, LocalServingHost: "127.0.0.1"}
	if err := wh.Install(p.cfg); err != nil {
		return nil, fmt.Errorf("plane: install %s webhooks: %w", w.name, err)
	}
	addr := net.JoinHostPort(wh.LocalServingHost, strconv.Itoa(wh.LocalServingPort))
	if err := p.convertCRDsWith(ctx, w.converts, "https://"+addr+"/convert", wh.LocalServingCAData); err != nil {
		return nil, fmt.Errorf("plane: %s: %w", w.name, err)
	}
	ports, err := proc.FreePorts(1)
	if err != nil {
		return nil, err
	}
	health := "127.0.0.1:" + strconv.Itoa(ports[0])
	pr, err := proc.Start(proc.Spec{
		Name: w.name,
		Path: filepath.Join(o.BinDir, w.name),
		Args: append([]string{
			"--kubeconfig=" + p.kubeconfig,
			"--health-addr=" + health,
			"--webhook-port=" + strconv.Itoa(wh.LocalServingPort),
			"--webhook-cert-dir=" + wh.LocalServingCertDir,
		}, w.args...),
		Env:     []string{"HOME=" + filepath.Join(o.StateDir, "home")},
		LogFile: filepath.Join(p.LogDir(), w.name+".log"),
	})
	if err != nil {
		return nil, fmt.Errorf("plane: %w", err)
	}
	p.record()
	if err := proc.WaitHTTP(ctx, "http://"+health+"/readyz", pr); err != nil {
		return pr, fmt.Errorf("plane: %s not ready (log: %s): %w", w.name, pr.LogFile(), err)
	}
	if err := waitTLS(ctx, addr, wh.LocalServingCAData, pr); err != nil {
		return pr, fmt.Errorf("plane: %s webhooks not serving (log: %s): %w", w.name, pr.LogFile(), err)
	}
	p.log.Info("webhooks serving", "process", w.name, "address", addr)
	return pr, nil
}

// convertCRDsWith points the conversion of the multi-version CRDs selected by converts at url.
func (p *Plane) convertCRDsWith(ctx context.Context, converts func(*apiextensionsv1.CustomResourceDefinition) bool, url string, ca []byte) error {
	var crds apiextensionsv1.CustomResourceDefinitionList
	if err := p.client.List(ctx, &crds); err != nil {
		return fmt.Errorf("list CRDs: %w", err)
	}
	n := 0
	for i := range crds.Items {
		crd := &crds.Items[i]
		if !converts(crd) || len(crd.Spec.Versions) < 2 {
			continue
		}
		patch := client.MergeFrom(crd.DeepCopy())
		crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
			Strategy: apiextensionsv1.WebhookConverter,
			Webhook: &apiextensionsv1.WebhookConversion{
				ConversionReviewVersions: []string{"v1", "v1beta1"},
				ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: ca},
			},
		}
		if err := p.client.Patch(ctx, crd, patch); err != nil {
			return fmt.Errorf("conversion webhook of CRD %s: %w", crd.Name, err)
		}
		n++
	}
	if n == 0 {
		return errors.New("no multi-version CRD found to convert (run `make tools`)")
	}
	p.log.Info("CRD conversion webhook set", "crds", n, "url", url)
	return nil
}
