package faultproxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/clusterstack-io/clusterstack-operator/internal/testenv"
)

// The proxy in front of a real kube-apiserver and etcd (bin/, built by `make tools`), used by a
// client-go client that authenticates with a ServiceAccount token, as the operator does.

func TestFaultProxy(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(10 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	suite, reporter := testenv.GinkgoConfiguration("faultproxy")
	RunSpecs(t, "Fault proxy in front of a real API server", suite, reporter)
}

const (
	namespace = "faultproxy"
	account   = "tester"
)

var (
	env *envtest.Environment
	// admin talks to the API server directly.
	admin *kubernetes.Clientset
	// px is the proxy; viaProxy talks through it with the ServiceAccount's token, anonymous
	// through it without credentials.
	px        *Proxy
	viaProxy  *kubernetes.Clientset
	anonymous *kubernetes.Clientset
	// raw sends plain HTTP requests to the proxy with the ServiceAccount's token.
	raw   *http.Client
	token string
)

var _ = BeforeSuite(func(ctx SpecContext) {
	var err error
	env, err = testenv.New(testenv.CRDs{})
	Expect(err).NotTo(HaveOccurred())
	cfg, err := env.Start()
	Expect(err).NotTo(HaveOccurred())
	admin, err = kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())

	// A ServiceAccount that may do everything with ConfigMaps in one namespace.
	_, err = admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	_, err = admin.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: account}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	_, err = admin.RbacV1().Roles(namespace).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: account},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"*"}}},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	_, err = admin.RbacV1().RoleBindings(namespace).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: account},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: account},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: account, Namespace: namespace}},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	tr, err := admin.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, account, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	token = tr.Status.Token

	// The proxy gets the admin's config, client certificate included: it must not use it.
	px, err = Start(cfg, "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	proxied := &rest.Config{Host: px.URL(), BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: px.CAData()}, QPS: 100, Burst: 200}
	viaProxy, err = kubernetes.NewForConfig(proxied)
	Expect(err).NotTo(HaveOccurred())
	anonymous, err = kubernetes.NewForConfig(&rest.Config{Host: px.URL(), TLSClientConfig: rest.TLSClientConfig{CAData: px.CAData()}})
	Expect(err).NotTo(HaveOccurred())
	pool := x509.NewCertPool()
	Expect(pool.AppendCertsFromPEM(px.CAData())).To(BeTrue())
	raw = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}, Timeout: 30 * time.Second}
})

var _ = AfterSuite(func() {
	if px != nil {
		Expect(px.Close()).To(Succeed())
	}
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})

// get sends GET path through the proxy with the ServiceAccount's token.
func get(ctx context.Context, path string) *http.Response {
	GinkgoHelper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, px.URL()+path, nil)
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := raw.Do(req)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(resp.Body.Close)
	return resp
}

const configMapsPath = "/api/v1/namespaces/" + namespace + "/configmaps"

var _ = Describe("The fault proxy", func() {
	BeforeEach(func() {
		px.Clear()
		px.ResetCounts()
		DeferCleanup(px.Clear)
	})

	It("forwards the client's own credentials and counts requests by verb and resource", func(ctx SpecContext) {
		review, err := viaProxy.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(review.Status.UserInfo.Username).To(Equal("system:serviceaccount:" + namespace + ":" + account))
		_, err = anonymous.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{})
		Expect(apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err)).To(BeTrue(), "a request without a token must not gain the proxy's credentials: %v", err)

		cms := viaProxy.CoreV1().ConfigMaps(namespace)
		for _, name := range []string{"counted-a", "counted-b", "counted-c"} {
			_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
		}
		cm, err := cms.Get(ctx, "counted-a", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		cm.Data["k"] = "w"
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = cms.Patch(ctx, "counted-b", types.MergePatchType, []byte(`{"data":{"k":"x"}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		// A chunked list: three pages of one.
		var names []string
		pages := 0
		opts := metav1.ListOptions{Limit: 1}
		for {
			page, err := cms.List(ctx, opts)
			Expect(err).NotTo(HaveOccurred())
			pages++
			for _, item := range page.Items {
				names = append(names, item.Name)
			}
			if page.Continue == "" {
				break
			}
			opts.Continue = page.Continue
		}
		Expect(names).To(ContainElements("counted-a", "counted-b", "counted-c"))
		Expect(pages).To(BeNumerically(">=", 3))
		Expect(cms.Delete(ctx, "counted-c", metav1.DeleteOptions{})).To(Succeed())
		Expect(cms.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})).To(Succeed())

		// A request for no resource, counted by its path.
		Expect(get(ctx, "/version").StatusCode).To(Equal(http.StatusOK))

		c := px.Counts()
		Expect(c.ByVerbResource).To(HaveKeyWithValue("get /version", 1))
		Expect(c.ByVerbResource).To(HaveKeyWithValue("create selfsubjectreviews", 1))
		Expect(c.ByVerbResource).To(HaveKeyWithValue("create configmaps", 3))
		Expect(c.ByVerbResource).To(HaveKeyWithValue("get configmaps", 1))
		Expect(c.ByVerbResource).To(HaveKeyWithValue("update configmaps", 1))
		Expect(c.ByVerbResource).To(HaveKeyWithValue("patch configmaps", 1))
		Expect(c.ByVerbResource).To(HaveKeyWithValue("delete configmaps", 1))
		Expect(c.ByVerbResource).To(HaveKeyWithValue("deletecollection configmaps", 1))
		Expect(c.ByVerbResource["list configmaps"]).To(Equal(pages+1), "the anonymous list and one per page")
		Expect(c.Writes()).To(Equal(1 + 3 + 1 + 1 + 1 + 1))
		Expect(c.Injected).To(BeZero())
		total := 0
		for _, n := range c.ByVerb {
			total += n
		}
		Expect(c.Total).To(Equal(total))

		// Counts is a copy; ResetCounts starts again.
		c.ByVerb["create"] = 1000
		Expect(px.Counts().ByVerb["create"]).To(Equal(4))
		px.ResetCounts()
		Expect(px.Counts()).To(Equal(Counts{ByVerb: map[string]int{}, ByVerbResource: map[string]int{}}))
	})

	It("streams watches and ends them on CloseStreams, as an API server restart does", func(ctx SpecContext) {
		cms := viaProxy.CoreV1().ConfigMaps(namespace)
		w, err := cms.Watch(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		defer w.Stop()
		_, err = admin.CoreV1().ConfigMaps(namespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "watched"}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		var ev watch.Event
		Eventually(w.ResultChan()).Should(Receive(&ev))
		Expect(ev.Type).To(Equal(watch.Added))
		Expect(ev.Object.(*corev1.ConfigMap).Name).To(Equal("watched"))
		Expect(px.Counts().ByVerbResource).To(HaveKeyWithValue("watch configmaps", 1))

		px.CloseStreams()
		Eventually(w.ResultChan()).Should(BeClosed())

		// A new watch is served as before.
		w2, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: ev.Object.(*corev1.ConfigMap).ResourceVersion})
		Expect(err).NotTo(HaveOccurred())
		defer w2.Stop()
		Expect(admin.CoreV1().ConfigMaps(namespace).Delete(ctx, "watched", metav1.DeleteOptions{})).To(Succeed())
		Eventually(w2.ResultChan()).Should(Receive(HaveField("Type", watch.Deleted)))
	})

	It("answers with 429 and Retry-After, which client-go waits for and retries", func(ctx SpecContext) {
		px.Inject(Faults{ErrorRate: 1, Codes: []int{http.StatusTooManyRequests}, Seed: 1})
		start := time.Now()
		err := viaProxy.CoreV1().RESTClient().Get().Namespace(namespace).Resource("configmaps").MaxRetries(1).Do(ctx).Error()
		took := time.Since(start)
		Expect(apierrors.IsTooManyRequests(err)).To(BeTrue(), "got %v", err)
		delay, ok := apierrors.SuggestsClientDelay(err)
		Expect(ok).To(BeTrue())
		Expect(delay).To(Equal(1))
		c := px.Counts()
		Expect(c.Injected).To(Equal(2), "the request and client-go's one retry")
		Expect(c.ByVerbResource).To(HaveKeyWithValue("list configmaps", 2))
		Expect(took).To(BeNumerically(">=", time.Second), "client-go waited Retry-After before retrying")

		px.Clear()
		_, err = viaProxy.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(px.Counts().Injected).To(Equal(2))
	})

	DescribeTable("answers injected errors with a Status as the API server does",
		func(ctx SpecContext, code int, reason metav1.StatusReason, retryAfter string) {
			px.Inject(Faults{ErrorRate: 1, Codes: []int{code}})
			resp := get(ctx, configMapsPath)
			Expect(resp.StatusCode).To(Equal(code))
			Expect(resp.Header.Get("Content-Type")).To(Equal("application/json"))
			Expect(resp.Header.Get("Retry-After")).To(Equal(retryAfter))
			var st metav1.Status
			Expect(json.NewDecoder(resp.Body).Decode(&st)).To(Succeed())
			Expect(st.Kind).To(Equal("Status"))
			Expect(st.Code).To(BeEquivalentTo(code))
			Expect(st.Reason).To(Equal(reason))
			Expect(st.Message).To(ContainSubstring("injected"))
		},
		Entry("500", http.StatusInternalServerError, metav1.StatusReasonInternalError, ""),
		Entry("503", http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "1"),
		Entry("429", http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, "1"),
	)

	It("injects only into the verbs asked for", func(ctx SpecContext) {
		px.Inject(Faults{ErrorRate: 1, Codes: []int{http.StatusServiceUnavailable}, Verbs: []string{"create"}})
		_, err := viaProxy.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		err = viaProxy.CoreV1().RESTClient().Post().Namespace(namespace).Resource("configmaps").
			Body(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "refused"}}).MaxRetries(0).Do(ctx).Error()
		Expect(apierrors.IsServiceUnavailable(err)).To(BeTrue(), "got %v", err)
		_, err = admin.CoreV1().ConfigMaps(namespace).Get(ctx, "refused", metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the injected error was not forwarded: %v", err)
		Expect(px.Counts().Injected).To(Equal(1))
	})

	It("delays requests by Latency plus Jitter", func(ctx SpecContext) {
		px.Inject(Faults{Latency: 400 * time.Millisecond, Jitter: 100 * time.Millisecond, Seed: 3})
		for range 3 {
			start := time.Now()
			resp := get(ctx, configMapsPath)
			Expect(resp.StatusCode).To(Equal(http.StatusOK))
			Expect(time.Since(start)).To(BeNumerically(">=", 400*time.Millisecond))
		}
		px.Clear()
		Expect(get(ctx, configMapsPath).StatusCode).To(Equal(http.StatusOK))
		Expect(px.Counts().Injected).To(BeZero())
	})

	It("replays the same faults from the same seed", func(ctx SpecContext) {
		run := func() []int {
			px.Inject(Faults{ErrorRate: 0.5, Codes: []int{500, 503, 429}, Seed: 42})
			var codes []int
			for range 30 {
				codes = append(codes, get(ctx, configMapsPath).StatusCode)
			}
			return codes
		}
		first := run()
		Expect(run()).To(Equal(first))
		Expect(first).To(ContainElement(http.StatusOK))
		Expect(first).To(ContainElements(500, 503, 429))
	})

	It("answers 502 with a Status while the API server is unreachable", func(ctx SpecContext) {
		down, err := Start(&rest.Config{Host: "https://127.0.0.1:1", TLSClientConfig: rest.TLSClientConfig{CAData: px.CAData()}}, "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		defer func() { Expect(down.Close()).To(Succeed()) }()
		c, err := kubernetes.NewForConfig(&rest.Config{Host: down.URL(), BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: down.CAData()}})
		Expect(err).NotTo(HaveOccurred())
		_, err = c.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{})
		var status apierrors.APIStatus
		Expect(errors.As(err, &status)).To(BeTrue(), "got %v", err)
		Expect(status.Status().Code).To(BeEquivalentTo(http.StatusBadGateway))
		Expect(status.Status().Message).To(ContainSubstring("unreachable"))
	})
})

var _ = DescribeTable("classify names requests as the API server's RequestInfo does",
	func(method, target, wantVerb, wantKey string, wantLongRunning bool) {
		u, err := url.Parse(target)
		Expect(err).NotTo(HaveOccurred())
		info := requestInfo(&http.Request{Method: method, URL: u})
		verb, key := classify(info)
		Expect(verb).To(Equal(wantVerb))
		Expect(key).To(Equal(wantKey))
		Expect(longRunning(info)).To(Equal(wantLongRunning))
	},
	Entry(nil, "GET", "/api/v1/namespaces/ns/configmaps", "list", "list configmaps", false),
	Entry(nil, "GET", "/api/v1/namespaces/ns/configmaps?limit=500&resourceVersion=0", "list", "list configmaps", false),
	Entry(nil, "GET", "/api/v1/namespaces/ns/configmaps?watch=true&resourceVersion=5&allowWatchBookmarks=true", "watch", "watch configmaps", true),
	Entry(nil, "GET", "/apis/cluster.x-k8s.io/v1beta2/clusters?watch=1", "watch", "watch clusters", true),
	Entry(nil, "GET", "/api/v1/watch/namespaces/ns/configmaps", "watch", "watch configmaps", true),
	Entry(nil, "GET", "/api/v1/namespaces/ns/configmaps/a", "get", "get configmaps", false),
	Entry(nil, "GET", "/api/v1/namespaces/ns/configmaps?fieldSelector=metadata.name%3Da", "list", "list configmaps", false),
	Entry(nil, "POST", "/api/v1/namespaces/ns/configmaps", "create", "create configmaps", false),
	Entry(nil, "PUT", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l", "update", "update leases", false),
	Entry(nil, "PATCH", "/apis/clusterstack.io/v1alpha1/namespaces/ns/clusteraddons/a/status", "patch", "patch clusteraddons/status", false),
	Entry(nil, "PUT", "/apis/clusterstack.io/v1alpha1/namespaces/ns/clusteraddons/a/status", "update", "update clusteraddons/status", false),
	Entry(nil, "DELETE", "/api/v1/namespaces/ns/configmaps/a", "delete", "delete configmaps", false),
	Entry(nil, "DELETE", "/api/v1/namespaces/ns/configmaps", "deletecollection", "deletecollection configmaps", false),
	Entry(nil, "GET", "/api/v1/namespaces", "list", "list namespaces", false),
	Entry(nil, "GET", "/api/v1/namespaces/ns", "get", "get namespaces", false),
	Entry(nil, "PUT", "/api/v1/namespaces/ns/finalize", "update", "update namespaces/finalize", false),
	Entry(nil, "GET", "/api/v1/namespaces/ns/pods/p/log?follow=true", "get", "get pods/log", true),
	Entry(nil, "POST", "/apis/events.k8s.io/v1/namespaces/ns/events", "create", "create events", false),
	Entry(nil, "GET", "/apis", "get", "get /apis", false),
	Entry(nil, "GET", "/apis/apps/v1", "get", "get /apis/apps/v1", false),
	Entry(nil, "GET", "/version", "get", "get /version", false),
	Entry(nil, "GET", "/api/v1/watch", "get", "get /api/v1/watch", false),
)
