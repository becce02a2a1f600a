package hooks_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/hooks"
	"github.com/clusterstack-io/clusterstack-operator/internal/testenv"
)

// TestRuntimeExtensionOnAPIServer serves the Runtime Extension from a manager's webhook server
// (TLS, cache-backed reads) against a real API server (bin/, built by `make tools`): the
// BeforeClusterUpgrade answer follows the ClusterAddon's status as the controller would write
// it, and the ExtensionConfig hooks.ExtensionConfig builds for that server is accepted by CAPI's
// CRD.
func TestRuntimeExtensionOnAPIServer(t *testing.T) {
	env, err := testenv.New(testenv.CRDs{Operator: true, CAPI: true})
	if err != nil {
		t.Fatal(err)
	}
	env.WebhookInstallOptions = envtest.WebhookInstallOptions{LocalServingHost: "127.0.0.1"}
	cfg := testenv.StartEnv(t, env)

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, csv1.AddToScheme, clusterv1.AddToScheme, runtimev1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	wh := env.WebhookInstallOptions
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		WebhookServer: webhook.NewServer(webhook.Options{Host: wh.LocalServingHost, Port: wh.LocalServingPort, CertDir: wh.LocalServingCertDir}),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := hooks.SetupWithManager(ctx, mgr, 0, false); err != nil {
		t.Fatal(err)
	}
	go func() { _ = mgr.Start(ctx) }()
	k8s, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}

	// The release the Cluster moves to, validated, with cni before the upgrade.
	const ns, release = "default", "docker-ferrol-1-37-v1"
	rel := &csv1.ClusterStackRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: release},
		Spec: csv1.ClusterStackReleaseSpec{ClusterStack: "ferrol", Provider: "docker", StackName: "ferrol", KubernetesVersion: "1.37", Version: "v1",
			Source: csv1.StackSource{URL: "https://git.example.com/stacks", Path: "docker/ferrol/1-37"}},
	}
	must(t, k8s.Create(ctx, rel))
	rel.Status = csv1.ClusterStackReleaseStatus{
		KubernetesVersion: "v1.37.2",
		Conditions:        []metav1.Condition{{Type: csv1.StackValidCondition, Status: metav1.ConditionTrue, Reason: csv1.ReasonAsExpected, Message: "valid", LastTransitionTime: metav1.Now()}},
		Components:        []csv1.ReleaseComponent{{Name: "cni", Kind: csv1.ComponentKindHelm, Path: "cluster-addon/cni"}, {Name: "csi", Kind: csv1.ComponentKindHelm, Path: "cluster-addon/csi"}},
		Stages:            []csv1.ReleaseStage{{Name: csv1.StageBeforeClusterUpgrade, Steps: []csv1.ReleaseStageStep{{Component: "cni", Action: csv1.StageActionApply}}}},
	}
	must(t, k8s.Status().Update(ctx, rel))
	addon := &csv1.ClusterAddon{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c1"}, Spec: csv1.ClusterAddonSpec{ClusterName: "c1"}}
	must(t, k8s.Create(ctx, addon))
	stage := csv1.AddonStageStatus{Name: csv1.StageBeforeClusterUpgrade, Release: release, Components: []string{"cni"}, Applied: true,
		Message: "waiting for the BeforeClusterUpgrade components at release " + release + ": cni not Ready yet", LastTransitionTime: metav1.Now()}
	addon.Status.DesiredRelease, addon.Status.Stages = release, []csv1.AddonStageStatus{stage}
	must(t, k8s.Status().Update(ctx, addon))

	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(wh.LocalServingCAData) {
		t.Fatal("envtest's serving CA does not parse")
	}
	httpc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	base := fmt.Sprintf("https://%s:%d", wh.LocalServingHost, wh.LocalServingPort)
	// The Cluster as the API server has it: the hook answers for it, by its uid.
	cluster := clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c1"}}
	cluster.Spec.Topology.ClassRef.Name = release
	cluster.Spec.Topology.Version = "v1.37.2"
	must(t, k8s.Create(ctx, &cluster))
	ask := func() (runtimehooksv1.BeforeClusterUpgradeResponse, error) {
		var resp runtimehooksv1.BeforeClusterUpgradeResponse
		body, _ := json.Marshal(&runtimehooksv1.BeforeClusterUpgradeRequest{Cluster: cluster, FromKubernetesVersion: "v1.36.3", ToKubernetesVersion: "v1.37.2"})
		r, err := httpc.Post(base+hooks.Path("BeforeClusterUpgrade", hooks.BeforeClusterUpgradeHandler)+"?timeout=10s", "application/json", bytes.NewReader(body))
		if err != nil {
			return resp, err
		}
		defer r.Body.Close()
		// Decode before the return: the order in which a return statement reads resp and calls
		// Decode is unspecified.
		err = json.NewDecoder(r.Body).Decode(&resp)
		return resp, err
	}
	eventually(t, "the gate is closed while cni is not Ready", func() error {
		resp, err := ask()
		if err != nil {
			return err
		}
		if want := "Cluster default/c1: " + stage.Message + "; " + hooks.SkipHint(ns, "c1"); resp.RetryAfterSeconds != hooks.RetryAfterSeconds || resp.Message != want {
			return fmt.Errorf("answer %+v, want retry after %d with %q", resp, hooks.RetryAfterSeconds, want)
		}
		return nil
	})

	addon.Status.Stages[0].Ready = true
	must(t, k8s.Status().Update(ctx, addon))
	eventually(t, "the gate opens once the stage is Ready", func() error {
		resp, err := ask()
		if err != nil {
			return err
		}
		if resp.Status != runtimehooksv1.ResponseStatusSuccess || resp.RetryAfterSeconds != 0 {
			return fmt.Errorf("answer %+v, want Success without retry", resp)
		}
		return nil
	})

	ec, err := hooks.ExtensionConfig(base, wh.LocalServingCAData)
	if err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(ctx, ec); err != nil {
		t.Fatalf("CAPI's ExtensionConfig CRD refuses the ExtensionConfig: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
