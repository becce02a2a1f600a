package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimecatalog "sigs.k8s.io/cluster-api/api/runtime/catalog"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// TestPathsAndDiscoveryAsCAPIComputesThem: the paths are where CAPI's runtime client calls a
// handler (runtimecatalog.GVHToPath of the hook CAPI's catalog knows, and the handler name),
// and the discovery answer passes the checks CAPI makes of it.
func TestPathsAndDiscoveryAsCAPIComputesThem(t *testing.T) {
	cat := runtimecatalog.New()
	if err := runtimehooksv1.AddToCatalog(cat); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		hook    runtimecatalog.Hook
		name    string
		handler string
	}{
		{runtimehooksv1.Discovery, "Discovery", ""},
		{runtimehooksv1.BeforeClusterUpgrade, "BeforeClusterUpgrade", BeforeClusterUpgradeHandler},
		{runtimehooksv1.AfterControlPlaneInitialized, "AfterControlPlaneInitialized", AfterControlPlaneInitializedHandler},
		{runtimehooksv1.BeforeClusterDelete, "BeforeClusterDelete", BeforeClusterDeleteHandler},
	} {
		gvh, err := cat.GroupVersionHook(tt.hook)
		if err != nil {
			t.Fatal(err)
		}
		if want, got := runtimecatalog.GVHToPath(gvh, tt.handler), Path(tt.name, tt.handler); got != want {
			t.Errorf("Path(%s, %q) = %s, CAPI calls %s", tt.name, tt.handler, got, want)
		}
	}
	if got, want := Path("BeforeClusterUpgrade", BeforeClusterUpgradeHandler), "/hooks.runtime.cluster.x-k8s.io/v1alpha1/beforeclusterupgrade/before-cluster-upgrade"; got != want {
		t.Errorf("path = %s, want %s", got, want)
	}
	seen := map[string]bool{}
	for _, h := range Handlers() {
		if seen[h.Name] {
			t.Errorf("handler name %s twice", h.Name)
		}
		seen[h.Name] = true
		if errs := validation.IsDNS1123Label(h.Name); len(errs) > 0 {
			t.Errorf("handler name %s: %v", h.Name, errs)
		}
		if h.TimeoutSeconds == nil || *h.TimeoutSeconds < 0 || *h.TimeoutSeconds > 30 {
			t.Errorf("handler %s: timeoutSeconds %v not within 0..30", h.Name, h.TimeoutSeconds)
		}
		if h.FailurePolicy == nil || (*h.FailurePolicy != runtimehooksv1.FailurePolicyFail && *h.FailurePolicy != runtimehooksv1.FailurePolicyIgnore) {
			t.Errorf("handler %s: failurePolicy %v", h.Name, h.FailurePolicy)
		}
		if !cat.IsHookRegistered(runtimecatalog.GroupVersionHook{Group: runtimehooksv1.GroupVersion.Group, Version: runtimehooksv1.GroupVersion.Version, Hook: h.RequestHook.Hook}) ||
			h.RequestHook.APIVersion != runtimehooksv1.GroupVersion.String() {
			t.Errorf("handler %s: hook %s/%s is not in CAPI's catalog", h.Name, h.RequestHook.APIVersion, h.RequestHook.Hook)
		}
	}
	if len(seen) != 3 {
		t.Errorf("discovery lists %d handlers, want 3", len(seen))
	}
}

type muxRegistry struct{ *http.ServeMux }

func (m muxRegistry) Register(path string, h http.Handler) { m.Handle(path, h) }

func testScheme(t *testing.T) *runtime.Scheme {
	s := runtime.NewScheme()
	if err := csv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := clusterv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// readOnly fails every write: the handlers must never write.
func readOnly(t *testing.T) interceptor.Funcs {
	write := func(what string) error {
		t.Errorf("the Runtime Extension wrote (%s)", what)
		return errors.New("no writes")
	}
	return interceptor.Funcs{
		Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
			return write("create")
		},
		Update: func(context.Context, client.WithWatch, client.Object, ...client.UpdateOption) error {
			return write("update")
		},
		Patch: func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
			return write("patch")
		},
		Delete: func(context.Context, client.WithWatch, client.Object, ...client.DeleteOption) error {
			return write("delete")
		},
		SubResourceUpdate: func(context.Context, client.Client, string, client.Object, ...client.SubResourceUpdateOption) error {
			return write("status update")
		},
		SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
			return write("status patch")
		},
	}
}

func serve(t *testing.T, reader client.Reader) *httptest.Server {
	return serveWith(t, &Server{Reader: reader})
}

func serveWith(t *testing.T, s *Server) *httptest.Server {
	mux := http.NewServeMux()
	s.Register(muxRegistry{mux})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// call POSTs req to the hook's path as CAPI does (with its timeout query) and decodes the answer.
func call(t *testing.T, srv *httptest.Server, path string, req any, resp any) {
	t.Helper()
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	r, err := http.Post(srv.URL+path+"?timeout=10s", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	if r.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: status %d", path, r.StatusCode)
	}
	if err := json.NewDecoder(r.Body).Decode(resp); err != nil {
		t.Fatal(err)
	}
}

// stored is the Cluster of the tests as the API server has it (with its uid), which requests
// name.
func stored(annotations map[string]string) *clusterv1.Cluster {
	c := cluster(target, annotations)
	c.UID = "0b0e6d2c-c1"
	return c
}

func TestServerAnswersFromStatus(t *testing.T) {
	rel := validRelease("cni", "ccm")
	a := addon(target, beforeStage(target, false, "waiting for the BeforeClusterUpgrade components at release "+target+": ccm not Ready yet"))
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(rel, a, stored(nil)).WithStatusSubresource(rel, a).WithInterceptorFuncs(readOnly(t)).Build()
	srv := serve(t, c)

	var disc runtimehooksv1.DiscoveryResponse
	call(t, srv, Path("Discovery", ""), &runtimehooksv1.DiscoveryRequest{}, &disc)
	if disc.Status != runtimehooksv1.ResponseStatusSuccess || len(disc.Handlers) != 3 || disc.Kind != "DiscoveryResponse" || disc.APIVersion != runtimehooksv1.GroupVersion.String() {
		t.Errorf("discovery = %+v", disc)
	}

	req := &runtimehooksv1.BeforeClusterUpgradeRequest{Cluster: *stored(nil), FromKubernetesVersion: "v1.36.3", ToKubernetesVersion: "v1.37.2"}
	var resp runtimehooksv1.BeforeClusterUpgradeResponse
	call(t, srv, Path("BeforeClusterUpgrade", BeforeClusterUpgradeHandler), req, &resp)
	if resp.Status != runtimehooksv1.ResponseStatusSuccess || resp.RetryAfterSeconds != RetryAfterSeconds ||
		resp.Message != "Cluster ns/c1: waiting for the BeforeClusterUpgrade components at release "+target+": ccm not Ready yet; "+SkipHint("ns", "c1") || resp.Kind != "BeforeClusterUpgradeResponse" {
		t.Errorf("while not Ready: %+v", resp)
	}

	// The controller records the stage Ready: the next call lets the upgrade through.
	a.Status.Stages[0].Ready = true
	c2 := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(rel, a, stored(nil)).WithStatusSubresource(rel, a).WithInterceptorFuncs(readOnly(t)).Build()
	resp = runtimehooksv1.BeforeClusterUpgradeResponse{}
	call(t, serve(t, c2), Path("BeforeClusterUpgrade", BeforeClusterUpgradeHandler), req, &resp)
	if resp.Status != runtimehooksv1.ResponseStatusSuccess || resp.RetryAfterSeconds != 0 {
		t.Errorf("once Ready: %+v", resp)
	}

	var acpi runtimehooksv1.AfterControlPlaneInitializedResponse
	call(t, srv, Path("AfterControlPlaneInitialized", AfterControlPlaneInitializedHandler), &runtimehooksv1.AfterControlPlaneInitializedRequest{Cluster: req.Cluster}, &acpi)
	if acpi.Status != runtimehooksv1.ResponseStatusSuccess || !strings.Contains(acpi.Message, "ns/c1") {
		t.Errorf("AfterControlPlaneInitialized = %+v", acpi)
	}
	var del runtimehooksv1.BeforeClusterDeleteResponse
	call(t, srv, Path("BeforeClusterDelete", BeforeClusterDeleteHandler), &runtimehooksv1.BeforeClusterDeleteRequest{Cluster: req.Cluster}, &del)
	if del.Status != runtimehooksv1.ResponseStatusSuccess || del.RetryAfterSeconds != 0 {
		t.Errorf("BeforeClusterDelete = %+v", del)
	}
}

// Server.RetryAfter replaces the retry period of the answers that hold an upgrade, and only of
// those.
func TestServerRetryAfter(t *testing.T) {
	rel := validRelease("cni")
	a := addon(target, beforeStage(target, false, "cni not Ready yet"))
	req := &runtimehooksv1.BeforeClusterUpgradeRequest{Cluster: *stored(nil), FromKubernetesVersion: "v1.36.3", ToKubernetesVersion: "v1.37.2"}
	for _, tc := range []struct {
		retryAfter time.Duration
		ready      bool
		want       int32
	}{
		{0, false, RetryAfterSeconds},
		{2 * time.Second, false, 2},
		{1400 * time.Millisecond, false, 1},
		{100 * time.Millisecond, false, 1},
		{2 * time.Second, true, 0},
	} {
		a := a.DeepCopy()
		a.Status.Stages[0].Ready = tc.ready
		c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(rel, a, stored(nil)).WithStatusSubresource(rel, a).WithInterceptorFuncs(readOnly(t)).Build()
		var resp runtimehooksv1.BeforeClusterUpgradeResponse
		call(t, serveWith(t, &Server{Reader: c, RetryAfter: tc.retryAfter}), Path("BeforeClusterUpgrade", BeforeClusterUpgradeHandler), req, &resp)
		if resp.Status != runtimehooksv1.ResponseStatusSuccess || resp.RetryAfterSeconds != tc.want {
			t.Errorf("RetryAfter %s, stage Ready %v: %+v, want retry after %d", tc.retryAfter, tc.ready, resp, tc.want)
		}
	}
}

func TestServerFailures(t *testing.T) {
	broken := fake.NewClientBuilder().WithScheme(testScheme(t)).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return errors.New("cache not synced")
		},
	}).Build()
	srv := serve(t, broken)
	path := Path("BeforeClusterUpgrade", BeforeClusterUpgradeHandler)

	var resp runtimehooksv1.BeforeClusterUpgradeResponse
	call(t, srv, path, &runtimehooksv1.BeforeClusterUpgradeRequest{Cluster: *stored(nil)}, &resp)
	if resp.Status != runtimehooksv1.ResponseStatusFailure || resp.Message != "read Cluster ns/c1: cache not synced" {
		t.Errorf("read error: %+v", resp)
	}

	r, err := http.Post(srv.URL+path, "application/json", strings.NewReader("{not json"))
	if err != nil {
		t.Fatal(err)
	}
	resp = runtimehooksv1.BeforeClusterUpgradeResponse{}
	if err := json.NewDecoder(r.Body).Decode(&resp); err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusOK || resp.Status != runtimehooksv1.ResponseStatusFailure || !strings.HasPrefix(resp.Message, "decode request: ") {
		t.Errorf("bad body: %d %+v", r.StatusCode, resp)
	}

	g, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	g.Body.Close()
	if g.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: status %d, want 405", g.StatusCode)
	}
}
