// Command provider-webhooks serves the admission and CRD-conversion webhooks of Cluster API's
// kubeadm bootstrap provider (CABPK), kubeadm control-plane provider (KCP) and Docker
// infrastructure provider (CAPD), built from those providers' own packages, without any of
// their controllers.
//
// It exists for the local management plane only (bootstrap/plane, Options.WithCAPI): there,
// bootstrap/localinfra plays these providers' controllers by their contracts, while the
// validation, defaulting and v1beta1<->v1beta2 conversion of their objects stay the real ones.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	bootstrapv1beta1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta1"
	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	controlplanev1beta1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta1"
	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	bootstrapadmission "sigs.k8s.io/cluster-api/bootstrap/kubeadm/webhooks/admission"
	controlplaneadmission "sigs.k8s.io/cluster-api/controlplane/kubeadm/webhooks/admission"
	controlplaneconversion "sigs.k8s.io/cluster-api/controlplane/kubeadm/webhooks/conversion"
	"sigs.k8s.io/cluster-api/feature"
	dockerv1beta1 "sigs.k8s.io/cluster-api/test/infrastructure/docker/api/v1beta1"
	dockerv1 "sigs.k8s.io/cluster-api/test/infrastructure/docker/api/v1beta2"
	dockerwebhooks "sigs.k8s.io/cluster-api/test/infrastructure/docker/webhooks"
)

type setupper interface {
	SetupWebhookWithManager(ctrl.Manager) error
}

func main() {
	var port int
	var certDir, healthAddr, gates string
	flag.IntVar(&port, "webhook-port", 9443, "Port the webhook server listens on.")
	flag.StringVar(&certDir, "webhook-cert-dir", "", "Directory with tls.crt and tls.key.")
	flag.StringVar(&healthAddr, "health-addr", "127.0.0.1:9440", "Address of /readyz and /healthz.")
	flag.StringVar(&gates, "feature-gates", "ClusterTopology=true", "Cluster API feature gates, as the providers' --feature-gates.")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse() // --kubeconfig is registered by controller-runtime.
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	if err := feature.MutableGates.Set(gates); err != nil {
		fmt.Fprintln(os.Stderr, "provider-webhooks: --feature-gates:", err)
		os.Exit(2)
	}
	if err := run(port, certDir, healthAddr); err != nil {
		fmt.Fprintln(os.Stderr, "provider-webhooks:", err)
		os.Exit(1)
	}
}

func run(port int, certDir, healthAddr string) error {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, clusterv1.AddToScheme,
		bootstrapv1beta1.AddToScheme, bootstrapv1.AddToScheme,
		controlplanev1beta1.AddToScheme, controlplanev1.AddToScheme,
		dockerv1beta1.AddToScheme, dockerv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: healthAddr,
		WebhookServer:          webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: certDir}),
	})
	if err != nil {
		return err
	}
	// KCP's conversion to v1beta1 needs the apiVersion of referenced kinds, read (as KCP's
	// own manager does) from the contract labels of their CRDs.
	reader := mgr.GetAPIReader()
	controlplaneconversion.SetAPIVersionGetter(func(ctx context.Context, gk schema.GroupKind) (string, error) {
		return apiVersionOf(ctx, reader, gk)
	})
	for name, s := range map[string]setupper{
		"KubeadmConfig":               &bootstrapadmission.KubeadmConfig{},
		"KubeadmConfigTemplate":       &bootstrapadmission.KubeadmConfigTemplate{},
		"KubeadmControlPlane":         &controlplaneadmission.KubeadmControlPlane{},
		"KubeadmControlPlane scale":   &controlplaneadmission.ScaleValidator{Client: mgr.GetClient()},
		"KubeadmControlPlaneTemplate": &controlplaneadmission.KubeadmControlPlaneTemplate{},
		"DockerCluster":               &dockerwebhooks.DockerCluster{},
		"DockerClusterTemplate":       &dockerwebhooks.DockerClusterTemplate{},
		"DockerMachine":               &dockerwebhooks.DockerMachine{},
		"DockerMachineTemplate":       &dockerwebhooks.DockerMachineTemplate{},
		"DevCluster":                  &dockerwebhooks.DevCluster{},
		"DevClusterTemplate":          &dockerwebhooks.DevClusterTemplate{},
		"DevMachine":                  &dockerwebhooks.DevMachine{},
		"DevMachineTemplate":          &dockerwebhooks.DevMachineTemplate{},
	} {
		if err := s.SetupWebhookWithManager(mgr); err != nil {
			return fmt.Errorf("webhook %s: %w", name, err)
		}
	}
	if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}

// apiVersionOf returns the newest API version of gk that implements the CAPI v1beta2 contract
// (or v1beta1), from the cluster.x-k8s.io/<contract> label of gk's CRD.
func apiVersionOf(ctx context.Context, c client.Reader, gk schema.GroupKind) (string, error) {
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := c.List(ctx, crds); err != nil {
		return "", err
	}
	for _, crd := range crds.Items {
		if crd.Spec.Group != gk.Group || crd.Spec.Names.Kind != gk.Kind {
			continue
		}
		for _, contract := range []string{"v1beta2", "v1beta1"} {
			if v := crd.Labels[clusterv1.GroupVersion.Group+"/"+contract]; v != "" {
				versions := strings.Split(v, "_")
				return schema.GroupVersion{Group: gk.Group, Version: versions[len(versions)-1]}.String(), nil
			}
		}
		return "", fmt.Errorf("CRD %s has no cluster.x-k8s.io/<contract> label", crd.Name)
	}
	return "", fmt.Errorf("no CRD for %s", gk)
}
