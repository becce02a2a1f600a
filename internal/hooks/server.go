package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	runtimecatalog "sigs.k8s.io/cluster-api/api/runtime/catalog"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// Names of the extension handlers. CAPI registers them as "<name>.<ExtensionConfig name>" and
// calls POST <clientConfig>/hooks.runtime.cluster.x-k8s.io/v1alpha1/<hook, lower case>/<name>.
const (
	BeforeClusterUpgradeHandler         = "before-cluster-upgrade"
	AfterControlPlaneInitializedHandler = "after-control-plane-initialized"
	BeforeClusterDeleteHandler          = "before-cluster-delete"
)

// TimeoutSeconds is the timeout CAPI gives each call (the answers read the cache only).
const TimeoutSeconds int32 = 10

// maxRequestBytes bounds a request body, as CAPI's own extension server does.
const maxRequestBytes = 20 << 20

// Path is where CAPI calls a hook: /<group>/<version>/<hook in lower case>[/<handler name>]
// (runtimecatalog.GVHToPath). The discovery hook has no handler name.
func Path(hook, handler string) string {
	gv := runtimehooksv1.GroupVersion
	return runtimecatalog.GVHToPath(runtimecatalog.GroupVersionHook{Group: gv.Group, Version: gv.Version, Hook: hook}, handler)
}

// Handlers is the discovery answer: the hooks served, with their failure policies.
// BeforeClusterUpgrade fails closed (Fail: while the operator cannot answer, the upgrade waits
// rather than run ahead of its addons); the two others fail open (Ignore: an unreachable
// operator must never hold a deletion, and AfterControlPlaneInitialized is informative).
func Handlers() []runtimehooksv1.ExtensionHandler {
	h := func(name, hook string, policy runtimehooksv1.FailurePolicy) runtimehooksv1.ExtensionHandler {
		return runtimehooksv1.ExtensionHandler{
			Name:           name,
			RequestHook:    runtimehooksv1.GroupVersionHook{APIVersion: runtimehooksv1.GroupVersion.String(), Hook: hook},
			TimeoutSeconds: ptr.To(TimeoutSeconds),
			FailurePolicy:  ptr.To(policy),
		}
	}
	return []runtimehooksv1.ExtensionHandler{
		h(BeforeClusterUpgradeHandler, "BeforeClusterUpgrade", runtimehooksv1.FailurePolicyFail),
		h(AfterControlPlaneInitializedHandler, "AfterControlPlaneInitialized", runtimehooksv1.FailurePolicyIgnore),
		h(BeforeClusterDeleteHandler, "BeforeClusterDelete", runtimehooksv1.FailurePolicyIgnore),
	}
}

// Server answers CAPI's Runtime SDK calls. It reads and never writes.
type Server struct {
	// Reader reads ClusterAddons and ClusterStackReleases: the manager's cache-backed client.
	Reader client.Reader
}

// Registry is where handlers are registered: the manager's webhook server.
type Registry interface {
	Register(path string, hook http.Handler)
}

// Register adds the discovery and hook handlers to r.
func (s *Server) Register(r Registry) {
	r.Register(Path("Discovery", ""), handle(s.discovery))
	r.Register(Path("BeforeClusterUpgrade", BeforeClusterUpgradeHandler), handle(s.beforeClusterUpgrade))
	r.Register(Path("AfterControlPlaneInitialized", AfterControlPlaneInitializedHandler), handle(s.afterControlPlaneInitialized))
	r.Register(Path("BeforeClusterDelete", BeforeClusterDeleteHandler), handle(s.beforeClusterDelete))
}

// SetupWithManager serves the Runtime Extension from the manager's webhook server (its TLS
// certificate is the one the ExtensionConfig's CA bundle must trust) and registers the
// informers its reads need, so that a replica not leading the controllers answers from a
// synced cache too.
func SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	for _, obj := range []client.Object{&csv1.ClusterAddon{}, &csv1.ClusterStackRelease{}} {
		if _, err := mgr.GetCache().GetInformer(ctx, obj, cache.BlockUntilSynced(false)); err != nil {
			return fmt.Errorf("runtime extension: informer for %T: %w", obj, err)
		}
	}
	(&Server{Reader: mgr.GetClient()}).Register(mgr.GetWebhookServer())
	return nil
}

func (s *Server) discovery(_ context.Context, _ *runtimehooksv1.DiscoveryRequest, resp *runtimehooksv1.DiscoveryResponse) {
	resp.Status = runtimehooksv1.ResponseStatusSuccess
	resp.Handlers = Handlers()
}

func (s *Server) beforeClusterUpgrade(ctx context.Context, req *runtimehooksv1.BeforeClusterUpgradeRequest, resp *runtimehooksv1.BeforeClusterUpgradeResponse) {
	c := &req.Cluster
	f := UpgradeFacts{Cluster: c}
	if class := ClassOf(c); class != "" {
		rel := &csv1.ClusterStackRelease{}
		if err := s.get(ctx, c.Namespace, class, rel); err != nil {
			fail(resp, fmt.Errorf("read ClusterStackRelease %s/%s of Cluster %s: %w", c.Namespace, class, c.Name, err))
			return
		}
		if rel.Name != "" {
			f.Release = rel
		}
	}
	addon := &csv1.ClusterAddon{}
	if err := s.get(ctx, c.Namespace, c.Name, addon); err != nil {
		fail(resp, fmt.Errorf("read ClusterAddon %s/%s: %w", c.Namespace, c.Name, err))
		return
	}
	if addon.Name != "" {
		f.Addon = addon
	}
	a := BeforeClusterUpgrade(f)
	resp.Status, resp.Message, resp.RetryAfterSeconds = a.Status, a.Message, a.RetryAfterSeconds
	log.FromContext(ctx).V(1).Info("BeforeClusterUpgrade answered", "cluster", c.Namespace+"/"+c.Name,
		"from", req.FromKubernetesVersion, "to", req.ToKubernetesVersion, "retryAfterSeconds", a.RetryAfterSeconds, "message", a.Message)
}

func (s *Server) afterControlPlaneInitialized(_ context.Context, req *runtimehooksv1.AfterControlPlaneInitializedRequest, resp *runtimehooksv1.AfterControlPlaneInitializedResponse) {
	a := AfterControlPlaneInitialized(&req.Cluster)
	resp.Status, resp.Message = a.Status, a.Message
}

func (s *Server) beforeClusterDelete(_ context.Context, req *runtimehooksv1.BeforeClusterDeleteRequest, resp *runtimehooksv1.BeforeClusterDeleteResponse) {
	a := BeforeClusterDelete(&req.Cluster)
	resp.Status, resp.Message, resp.RetryAfterSeconds = a.Status, a.Message, a.RetryAfterSeconds
}

// get reads an object through the cache; a missing object leaves obj empty (no name) and no error.
func (s *Server) get(ctx context.Context, ns, name string, obj client.Object) error {
	err := s.Reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func fail(resp runtimehooksv1.ResponseObject, err error) {
	resp.SetStatus(runtimehooksv1.ResponseStatusFailure)
	resp.SetMessage(err.Error())
}

// handle turns a typed hook function into an HTTP handler speaking the Runtime SDK's JSON: a
// POST with the request object, answered with status 200 and the response object (apiVersion
// and kind set). A request that cannot be read is answered with status Failure, as CAPI's own
// extension server does.
func handle[Req any, Resp any, PReq interface{ *Req }, PResp interface {
	*Resp
	runtimehooksv1.ResponseObject
}](fn func(context.Context, PReq, PResp)) http.Handler {
	kind := reflect.TypeFor[Resp]().Name()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "only POST is served", http.StatusMethodNotAllowed)
			return
		}
		resp := PResp(new(Resp))
		req := PReq(new(Req))
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBytes))
		if err != nil {
			fail(resp, fmt.Errorf("read request: %w", err))
		} else if err := json.Unmarshal(body, req); err != nil {
			fail(resp, fmt.Errorf("decode request: %w", err))
		} else {
			fn(ctrl.LoggerInto(r.Context(), log.Log.WithName("runtime-extension")), req, resp)
		}
		resp.GetObjectKind().SetGroupVersionKind(runtimehooksv1.GroupVersion.WithKind(kind))
		out, err := json.Marshal(resp)
		if err != nil {
			http.Error(w, fmt.Sprintf("encode response: %v", err), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
	})
}
