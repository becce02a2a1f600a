package plane

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/clusterstack-io/clusterstack-operator/internal/manifests"
	"github.com/clusterstack-io/clusterstack-operator/internal/proc"
)

// CAPIManagerBinary is Cluster API's core manager, built by `make tools` (hack/tools/capi).
const CAPIManagerBinary = "capi-manager"

// capiConversionGroups are the API groups whose CRDs CAPI's core manager converts between
// versions (the kubeadm bootstrap and control-plane CRDs are converted by their own managers,
// which the plane does not run).
var capiConversionGroups = map[string]bool{
	"cluster.x-k8s.io": true, "addons.cluster.x-k8s.io": true,
	"ipam.cluster.x-k8s.io": true, "runtime.cluster.x-k8s.io": true,
}

// startCAPI runs Cluster API's core manager against the management API server with the
// ClusterTopology and RuntimeSDK feature gates. Its defaulting and validating webhooks are
// installed pointing at it on loopback (envtest makes the CA and serving certificate), and the
// core CRDs get a conversion webhook at the same address, so that a v1beta1 ClusterClass or
// Cluster is converted by CAPI itself.
func (p *Plane) startCAPI(ctx context.Context) error {
	o := p.opts
	dir := filepath.Join(o.BinDir, "capi-webhooks")
	muts, vals, err := manifests.WebhookConfigurations(dir)
	if err == nil && len(muts)+len(vals) == 0 {
		err = fmt.Errorf("%s holds no webhook configuration", dir)
	}
	if err != nil {
		return fmt.Errorf("plane: CAPI webhooks (run `make tools`): %w", err)
	}
	wh := &envtest.WebhookInstallOptions{MutatingWebhooks: muts, ValidatingWebhooks: vals, LocalServingHost: "127.0.0.1"}
	if err := wh.Install(p.cfg); err != nil {
		return fmt.Errorf("plane: install CAPI webhooks: %w", err)
	}
	addr := net.JoinHostPort(wh.LocalServingHost, strconv.Itoa(wh.LocalServingPort))
	if err := p.convertCAPICRDsWith(ctx, "https://"+addr+"/convert", wh.LocalServingCAData); err != nil {
		return err
	}
	ports, err := proc.FreePorts(2)
	if err != nil {
		return err
	}
	health := "127.0.0.1:" + strconv.Itoa(ports[0])
	pr, err := proc.Start(proc.Spec{
		Name: CAPIManagerBinary,
		Path: filepath.Join(o.BinDir, CAPIManagerBinary),
		Args: []string{
			"--kubeconfig=" + p.kubeconfig,
			"--feature-gates=ClusterTopology=true,RuntimeSDK=true",
			"--leader-elect=false",
			"--health-addr=" + health,
			"--diagnostics-address=127.0.0.1:" + strconv.Itoa(ports[1]),
			"--insecure-diagnostics",
			"--webhook-port=" + strconv.Itoa(wh.LocalServingPort),
			"--webhook-cert-dir=" + wh.LocalServingCertDir,
		},
		Env:     []string{"HOME=" + filepath.Join(o.StateDir, "home")},
		LogFile: filepath.Join(p.LogDir(), CAPIManagerBinary+".log"),
	})
	if err != nil {
		return fmt.Errorf("plane: %w", err)
	}
	p.capi = pr
	p.record()
	if err := proc.WaitHTTP(ctx, "http://"+health+"/readyz", pr); err != nil {
		return fmt.Errorf("plane: CAPI core manager not ready (log: %s): %w", pr.LogFile(), err)
	}
	if err := waitTLS(ctx, addr, wh.LocalServingCAData, pr); err != nil {
		return fmt.Errorf("plane: CAPI webhooks not serving (log: %s): %w", pr.LogFile(), err)
	}
	return nil
}

// convertCAPICRDsWith points the conversion of CAPI's multi-version core CRDs at url.
func (p *Plane) convertCAPICRDsWith(ctx context.Context, url string, ca []byte) error {
	var crds apiextensionsv1.CustomResourceDefinitionList
	if err := p.client.List(ctx, &crds); err != nil {
		return fmt.Errorf("plane: list CRDs: %w", err)
	}
	n := 0
	for i := range crds.Items {
		crd := &crds.Items[i]
		if !capiConversionGroups[crd.Spec.Group] || len(crd.Spec.Versions) < 2 {
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
			return fmt.Errorf("plane: conversion webhook of CRD %s: %w", crd.Name, err)
		}
		n++
	}
	if n == 0 {
		return errors.New("plane: no CAPI CRD with several versions found to convert")
	}
	p.log.Info("CAPI CRDs converted by CAPI's webhook", "crds", n, "url", url, "groups", strings.Join(slices.Sorted(maps.Keys(capiConversionGroups)), ","))
	return nil
}
