package hooks

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"reflect"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
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

// maxRequestBytes bounds a request body. A request carries one Cluster (BeforeClusterUpgrade,
// AfterControlPlaneInitialized, BeforeClusterDelete) or nothing (Discovery); etcd holds no object
// above 1.5 MiB, so every request CAPI can send fits, and a client cannot make the operator read
// more. (CAPI's own extension server allows 20 MiB.)
const maxRequestBytes = 2 << 20

// maxInFlight bounds the requests the handlers serve at once (each holds at most
// maxRequestBytes); more wait for a slot until their own deadline. CAPI calls a hook at most
// once per Cluster reconcile, with its topology controller's few workers.
const maxInFlight = 16

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
//
// A request names a Cluster, and the answer is decided from that Cluster as the API server has
// it (read by namespace and name through APIReader), never from the copy in the request body,
// and only when the request's metadata.uid is that Cluster's: a request for a Cluster that
// does not exist, or with another uid, is answered Success with a message that says nothing
// of any stage. CAPI always sends the Cluster it read, uid included; a client that has not read
// the Cluster does not know its uid. With RequireClientCert, only clients with a certificate
// the webhook server verified (ClientCAs: CAPI's --runtime-extension-client-cert-file) are
// served at all.
type Server struct {
	// Reader reads ClusterAddons and ClusterStackReleases: the manager's cache-backed client.
	Reader client.Reader
	// APIReader reads the Cluster a request names from the API server (the manager's API
	// reader); nil reads it through Reader.
	APIReader client.Reader
	// RetryAfter replaces RetryAfterSeconds in the answers that make CAPI ask again (whole
	// seconds, at least one); 0 keeps RetryAfterSeconds.
	RetryAfter time.Duration
	// RequireClientCert refuses (HTTP 403) every request that did not come with a client
	// certificate verified by the TLS server (ClientTLSConfig with VerifyClientCertIfGiven: the
	// webhook server also serves the API server's admission calls, which come without one).
	RequireClientCert bool

	slots chan struct{}
}

// Registry is where handlers are registered: the manager's webhook server.
type Registry interface {
	Register(path string, hook http.Handler)
}

// Register adds the discovery and hook handlers to r.
func (s *Server) Register(r Registry) {
	s.slots = make(chan struct{}, maxInFlight)
	r.Register(Path("Discovery", ""), s.guard(handle(s.discovery)))
	r.Register(Path("BeforeClusterUpgrade", BeforeClusterUpgradeHandler), s.guard(handle(s.beforeClusterUpgrade)))
	r.Register(Path("AfterControlPlaneInitialized", AfterControlPlaneInitializedHandler), s.guard(handle(s.afterControlPlaneInitialized)))
	r.Register(Path("BeforeClusterDelete", BeforeClusterDeleteHandler), s.guard(handle(s.beforeClusterDelete)))
}

// guard refuses clients without a verified certificate (RequireClientCert) and bounds the
// requests served at once (maxInFlight).
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.RequireClientCert && (r.TLS == nil || len(r.TLS.VerifiedChains) == 0) {
			http.Error(w, "the Runtime Extension serves only clients with a certificate of its client CA (--runtime-extension-client-ca-file)", http.StatusForbidden)
			return
		}
		select {
		case s.slots <- struct{}{}:
			defer func() { <-s.slots }()
		case <-r.Context().Done():
			http.Error(w, "too many requests at once", http.StatusServiceUnavailable)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// ClientTLSConfig returns the webhook server's TLS option that verifies the client certificates
// of the Runtime Extension's clients against the CA certificates in the PEM file caFile:
// verified when given (tls.VerifyClientCertIfGiven), as the same server answers the API
// server's admission calls without one; Server.RequireClientCert then refuses hook calls
// without. The file is read once.
func ClientTLSConfig(caFile string) (func(*tls.Config), error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("runtime extension client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("runtime extension client CA: %s holds no PEM certificate", caFile)
	}
	return func(c *tls.Config) {
		c.ClientCAs = pool
		c.ClientAuth = tls.VerifyClientCertIfGiven
	}, nil
}

// SetupWithManager serves the Runtime Extension from the manager's webhook server (its TLS
// certificate is the one the ExtensionConfig's CA bundle must trust) and registers the
// informers its reads need, so that a replica not leading the controllers answers from a
// synced cache too. retryAfter is Server.RetryAfter; requireClientCert is
// Server.RequireClientCert (the webhook server must then verify client certificates:
// ClientTLSConfig).
func SetupWithManager(ctx context.Context, mgr ctrl.Manager, retryAfter time.Duration, requireClientCert bool) error {
	for _, obj := range []client.Object{&csv1.ClusterAddon{}, &csv1.ClusterStackRelease{}} {
		if _, err := mgr.GetCache().GetInformer(ctx, obj, cache.BlockUntilSynced(false)); err != nil {
			return fmt.Errorf("runtime extension: informer for %T: %w", obj, err)
		}
	}
	(&Server{Reader: mgr.GetClient(), APIReader: mgr.GetAPIReader(), RetryAfter: retryAfter, RequireClientCert: requireClientCert}).Register(mgr.GetWebhookServer())
	return nil
}

func (s *Server) discovery(_ context.Context, _ *runtimehooksv1.DiscoveryRequest, resp *runtimehooksv1.DiscoveryResponse) {
	resp.Status = runtimehooksv1.ResponseStatusSuccess
	resp.Handlers = Handlers()
}

func (s *Server) beforeClusterUpgrade(ctx context.Context, req *runtimehooksv1.BeforeClusterUpgradeRequest, resp *runtimehooksv1.BeforeClusterUpgradeResponse) {
	c, err := s.clusterOf(ctx, &req.Cluster)
	if err != nil {
		fail(resp, err)
		return
	}
	if c == nil {
		resp.Status, resp.Message = runtimehooksv1.ResponseStatusSuccess, unknownCluster(&req.Cluster)
		return
	}
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
	if a.RetryAfterSeconds != 0 && s.RetryAfter > 0 {
		a.RetryAfterSeconds = max(1, int32(s.RetryAfter.Round(time.Second)/time.Second))
	}
	resp.Status, resp.Message, resp.RetryAfterSeconds = a.Status, a.Message, a.RetryAfterSeconds
	log.FromContext(ctx).V(1).Info("BeforeClusterUpgrade answered", "cluster", c.Namespace+"/"+c.Name,
		"from", req.FromKubernetesVersion, "to", req.ToKubernetesVersion, "retryAfterSeconds", a.RetryAfterSeconds, "message", a.Message)
}

// clusterOf reads the Cluster the request names from the API server: nil when there is no such
// Cluster, or when the request's uid is not its uid (a request not made from the Cluster as it
// is, which gets no answer about it).
func (s *Server) clusterOf(ctx context.Context, sent *clusterv1.Cluster) (*clusterv1.Cluster, error) {
	if sent.Name == "" || sent.Namespace == "" || sent.UID == "" {
		return nil, nil
	}
	r := s.APIReader
	if r == nil {
		r = s.Reader
	}
	c := &clusterv1.Cluster{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: sent.Namespace, Name: sent.Name}, c); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("read Cluster %s/%s: %w", sent.Namespace, sent.Name, err)
	}
	if c.UID != sent.UID {
		log.FromContext(ctx).Info("request for a Cluster with another uid: answered without its state",
			"cluster", sent.Namespace+"/"+sent.Name)
		return nil, nil
	}
	return c, nil
}

// unknownCluster is the answer's message for a request naming no existing Cluster (by
// namespace, name and uid): it says nothing about any Cluster's addons.
func unknownCluster(sent *clusterv1.Cluster) string {
	return fmt.Sprintf("no Cluster %s/%s with uid %q: nothing to wait for", sent.Namespace, sent.Name, sent.UID)
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
