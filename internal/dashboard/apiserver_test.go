package dashboard

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/plugin"
	"github.com/clusterstack-io/clusterstack-operator/internal/scheme"
	"github.com/clusterstack-io/clusterstack-operator/internal/testenv"
	"github.com/clusterstack-io/clusterstack-operator/internal/testenv/browser"
)

// The dashboard against a real API server (envtest), with no operator running: the test
// writes the objects and their status itself, as the operator would. The user it reads as,
// "viewer", may get, list and watch the operator's kinds in namespace team-a only.

const (
	otherNS  = "team-b"
	viewer   = "viewer"
	waitLong = 30 * time.Second
)

type apiServer struct {
	admin      client.Client
	viewerCfg  *rest.Config
	hub        *Hub
	src        *CacheSource
	stopSource context.CancelFunc
}

func startAPIServer(t *testing.T) *apiServer {
	t.Helper()
	env, err := testenv.New(testenv.CRDs{Operator: true})
	if err != nil {
		testenv.SkipOrFail(t, "%v", err)
		return nil
	}
	cfg := testenv.StartEnv(t, env)
	ctrllog.SetLogger(logr.Discard())
	a := &apiServer{}
	if a.admin, err = client.New(cfg, client.Options{Scheme: scheme.New()}); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for _, n := range []string{ns, otherNS} {
		must(t, a.admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}))
	}
	must(t, a.admin.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dashboard-viewer"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{csv1.GroupVersion.Group}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}}}}))
	must(t, a.admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dashboard-viewer"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "dashboard-viewer"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: viewer}}}))
	user, err := env.AddUser(envtest.User{Name: viewer}, nil)
	if err != nil {
		t.Fatal(err)
	}
	a.viewerCfg = user.Config()

	// team-a: the stack with a halted rollout and one Ready Cluster; team-b: a stack and a
	// Cluster the viewer may not see.
	for _, n := range []string{ns, otherNS} {
		cs := stackObj()
		cs.Namespace = n
		cs.Spec.Versions = []string{"v1", "v2"}
		cs.Spec.Source = csv1.StackSource{URL: "https://git.example/stacks", Path: "providers/aws/base/1-36"}
		status := cs.Status
		cs.Status = csv1.ClusterStackStatus{}
		must(t, a.admin.Create(ctx, &cs))
		cs.Status = status
		must(t, a.admin.Status().Update(ctx, &cs))
	}
	a.putAddon(t, ns, "alpha", ready())
	a.putAddon(t, otherNS, "b-secret-cluster", degraded("secret of team-b"))

	a.hub = NewHub()
	sctx, cancel := context.WithCancel(context.Background())
	a.stopSource = cancel
	t.Cleanup(cancel)
	if a.src, err = NewSource(sctx, a.viewerCfg, Scope{Namespaces: []string{ns, otherNS}}, a.hub, logr.Discard()); err != nil {
		t.Fatal(err)
	}
	return a
}

// serve starts a dashboard server on the source, with its own one-time token testToken, for
// one test.
func (a *apiServer) serve(t *testing.T) *httptest.Server {
	t.Helper()
	srv, err := NewServer(Options{Source: a.src, Hub: a.hub, Token: testToken, LoopbackHosts: true})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(srv)
	base, stop := context.WithCancel(context.Background())
	ts.Config.BaseContext = func(net.Listener) context.Context { return base }
	ts.Start()
	t.Cleanup(func() {
		stop()
		ts.Close()
	})
	return ts
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// putAddon creates or updates ClusterAddon ns/name of the stack at v1, with conditions conds.
func (a *apiServer) putAddon(t *testing.T, namespace, name string, conds []metav1.Condition) {
	t.Helper()
	ctx := t.Context()
	addon := &csv1.ClusterAddon{}
	if err := a.admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, addon); err != nil {
		addon = &csv1.ClusterAddon{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: csv1.ClusterAddonSpec{ClusterName: name}}
		must(t, a.admin.Create(ctx, addon))
	}
	want := addonObj(name, relV1, conds, component(name, "cni", csv1.ComponentKindHelm, conds[0].Status == "True", relV1))
	addon.Status = want.Status
	must(t, a.admin.Status().Update(ctx, addon))
}

func TestAgainstAPIServer(t *testing.T) {
	a := startAPIServer(t)

	t.Run("reads with the user's RBAC: nothing of a namespace the user may not list", func(t *testing.T) {
		objs, err := a.src.Objects(t.Context(), Filter{})
		must(t, err)
		if len(objs.Addons) != 1 || objs.Addons[0].Namespace != ns || len(objs.Stacks) != 1 || objs.Stacks[0].Namespace != ns {
			t.Errorf("the viewer's objects: %d ClusterAddons, %d ClusterStacks; want team-a's alone", len(objs.Addons), len(objs.Stacks))
		}
		unreadable := strings.Join(objs.Unreadable, "\n")
		for _, want := range []string{"ClusterAddons in namespace team-b: you may not list them", "ManagementOperators (cluster-scoped): you may not list them"} {
			if !strings.Contains(unreadable, want) {
				t.Errorf("Unreadable does not say %q:\n%s", want, unreadable)
			}
		}
		ts := a.serve(t)
		cookie := signIn(t, ts)
		_, fleet := get(t, noRedirects(), ts.URL+"/?state=all", cookie)
		if !strings.Contains(fleet, "team-a/alpha") || strings.Contains(fleet, "b-secret-cluster") || strings.Contains(fleet, "secret of team-b") {
			t.Errorf("the fleet page shows team-b's Cluster, or not team-a's")
		}
		if !strings.Contains(fleet, "ClusterAddons in namespace team-b: you may not list them") {
			t.Error("the fleet page does not say what it cannot show")
		}
		for _, path := range []string{"/clusters/team-b/b-secret-cluster", "/stacks/team-b/" + stackName} {
			resp, body := get(t, noRedirects(), ts.URL+path, cookie)
			if resp.StatusCode != http.StatusNotFound || strings.Contains(body, "secret of team-b") {
				t.Errorf("%s: %s; want 404 and nothing of it", path, resp.Status)
			}
		}

		// Every namespace, without the right to list cluster-wide: the dashboard starts and
		// says what it cannot read.
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		all, err := NewSource(ctx, a.viewerCfg, Scope{}, NewHub(), logr.Discard())
		must(t, err)
		objs, err = all.Objects(ctx, Filter{})
		must(t, err)
		if len(objs.Addons) != 0 || !strings.Contains(strings.Join(objs.Unreadable, "\n"), "ClusterAddons in all namespaces: you may not list them") {
			t.Errorf("all namespaces as the viewer: %d ClusterAddons, Unreadable %q", len(objs.Addons), objs.Unreadable)
		}
	})

	t.Run("a change reaches the pages through the watches", func(t *testing.T) {
		ch, stop := a.hub.Subscribe(ns)
		defer stop()
		defer a.putAddon(t, ns, "alpha", ready())
		a.putAddon(t, ns, "alpha", degraded("component cni failed: image rejected"))
		select {
		case <-ch:
		case <-time.After(waitLong):
			t.Fatal("no notification after the ClusterAddon changed")
		}
		deadline := time.Now().Add(waitLong)
		for {
			objs, err := a.src.Objects(t.Context(), Filter{Namespace: ns, Cluster: "alpha"})
			must(t, err)
			if len(objs.Addons) == 1 && BucketOf(stateOf(objs.Addons[0])) == BucketDegraded {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the cache does not show the ClusterAddon Degraded")
			}
			time.Sleep(50 * time.Millisecond)
		}
	})

	t.Run("in Chromium: a halted wave shows its reason, the fleet page follows a failure live, keys work", func(t *testing.T) {
		testBrowser(t, a)
	})
}

// testBrowser drives the dashboard in headless Chromium. Screenshots go to
// $DASHBOARD_SCREENSHOTS, if set.
func testBrowser(t *testing.T, a *apiServer) {
	shots := os.Getenv("DASHBOARD_SCREENSHOTS")
	ctx := browser.Start(t, shots)
	if ctx == nil {
		return
	}
	ts := a.serve(t)
	shot := func(name string) {
		if shots != "" {
			must(t, browser.Screenshot(ctx, filepath.Join(shots, name+".png")))
		}
	}
	text := func(sel string) string {
		tctx, cancel := context.WithTimeout(ctx, waitLong)
		defer cancel()
		for {
			s, err := chromedp.Run(tctx, chromedp.Text(chromedp.CSS(sel)))
			if err == nil {
				return strings.Join(strings.Fields(s), " ")
			}
			// A live update replaced the element between finding it and reading it (DevTools:
			// "No node with given id found"): read the one that replaced it.
			if !strings.Contains(err.Error(), "No node with given id") || tctx.Err() != nil {
				t.Fatalf("text of %s: %v", sel, err)
			}
		}
	}
	eval := func(js string) {
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js)); err != nil {
			t.Fatalf("%s: %v", js, err)
		}
	}
	// The printed URL: the token is exchanged for the cookie and dropped from the address.
	must(t, chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/stacks/"+ns+"/"+stackName+"?token="+testToken)))
	loc, err := chromedp.Run(ctx, chromedp.Location())
	must(t, err)
	if strings.Contains(loc, "token") {
		t.Errorf("the address still carries the token: %s", loc)
	}
	wave := text(`[data-wave="prod"]`)
	if !strings.Contains(wave, "Halted") || !strings.Contains(wave, "Halted: cluster team-a/broken is Degraded: component cni failed") {
		t.Errorf("the halted wave does not show its reason: %q", wave)
	}
	if problems := text("section.problems"); !strings.HasPrefix(problems, "Needs attention ▲ Degraded: Rollout of aws-base-1-36-v2 halted in wave prod") {
		t.Errorf("the halt is not the first problem: %q", problems)
	}
	shot("stack-halted-wave")

	// Keyboard: Tab reaches the skip link first; "/" focuses the search.
	must(t, chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/?state=all")))
	must(t, chromedp.Do(ctx, chromedp.KeyEvent("\t")))
	focused, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.textContent`))
	must(t, err)
	if focused != "Skip to content" {
		t.Errorf("the first Tab focuses %q, not the skip link", focused)
	}
	eval(`(document.activeElement.blur(), true)`)
	must(t, chromedp.Do(ctx, chromedp.KeyEvent("/")))
	focused, err = chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.id`))
	must(t, err)
	if focused != "q" {
		t.Errorf(`"/" focuses %q, not the search field`, focused)
	}
	eval(`(document.activeElement.blur(), true)`)

	// Live: the page, left open, shows the Cluster Degraded without being reloaded.
	if row := text(`[data-cluster="team-a/alpha"]`); !strings.Contains(row, "Ready") {
		t.Fatalf("alpha is not Ready to begin with: %q", row)
	}
	eval(`(window.notReloaded = true)`)
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`new Promise(r => { const s = document.getElementById("live-status"); const t = () => s.textContent.includes("connected") ? r(true) : setTimeout(t, 50); t(); })`,
		chromedp.EvalAwaitPromise)); err != nil {
		t.Fatalf("the page's event stream does not connect: %v", err)
	}
	a.putAddon(t, ns, "alpha", degraded("component cni failed: image rejected"))
	deadline := time.Now().Add(waitLong)
	for !strings.Contains(text(`[data-cluster="team-a/alpha"]`), "Degraded") {
		if time.Now().After(deadline) {
			t.Fatalf("the fleet page does not show alpha Degraded without a reload: %q", text(`[data-cluster="team-a/alpha"]`))
		}
		time.Sleep(100 * time.Millisecond)
	}
	kept, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.notReloaded === true`))
	must(t, err)
	if !kept {
		t.Error("the page was reloaded: the change must come through the event stream")
	}
	shot("fleet-live-degraded")
}

// stateOf is the plugin state of a ClusterAddon.
func stateOf(a csv1.ClusterAddon) string {
	st, _ := plugin.ObjectState(a.Status.Conditions)
	return st
}
