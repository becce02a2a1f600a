package dashboard

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// staticSource serves literal objects, filtered as the cache-backed source filters them.
type staticSource struct{ objs Objects }

func (s staticSource) Objects(_ context.Context, f Filter) (Objects, error) {
	o := s.objs
	o.Stacks, o.Releases, o.Addons, o.Clusters = nil, nil, nil, nil
	for _, x := range s.objs.Stacks {
		if f.Namespace == "" || x.Namespace == f.Namespace {
			o.Stacks = append(o.Stacks, x)
		}
	}
	for _, x := range s.objs.Releases {
		if f.Namespace == "" || x.Namespace == f.Namespace {
			o.Releases = append(o.Releases, x)
		}
	}
	for _, x := range s.objs.Addons {
		if (f.Namespace == "" || x.Namespace == f.Namespace) && (f.Cluster == "" || x.Name == f.Cluster) {
			o.Addons = append(o.Addons, x)
		}
	}
	for _, x := range s.objs.Clusters {
		if (f.Namespace == "" || x.Namespace == f.Namespace) && (f.Cluster == "" || x.Name == f.Cluster) {
			o.Clusters = append(o.Clusters, x)
		}
	}
	return o, nil
}

const testToken = "0123456789abcdef"

// newTestServer serves the fixture with token testToken; it stops when the test ends, event
// streams included.
func newTestServer(t *testing.T, objs Objects, hub *Hub) *httptest.Server {
	t.Helper()
	srv, err := NewServer(Options{Source: staticSource{objs}, Hub: hub, Token: testToken, LoopbackHosts: true,
		EventInterval: 50 * time.Millisecond, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(srv)
	base, cancel := context.WithCancel(context.Background())
	ts.Config.BaseContext = func(net.Listener) context.Context { return base }
	ts.Start()
	t.Cleanup(func() {
		cancel()
		ts.Close()
	})
	return ts
}

// noRedirects is a client that returns redirects instead of following them.
func noRedirects() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 10 * time.Second}
}

// reply is a response, its body read and closed.
type reply struct {
	StatusCode int
	Status     string
	Header     http.Header
	cookies    []*http.Cookie
}

// Cookies are the cookies the response sets.
func (r reply) Cookies() []*http.Cookie { return r.cookies }

func get(t *testing.T, c *http.Client, u string, cookie *http.Cookie, header ...string) (reply, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cookie != nil {
		req.AddCookie(cookie)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{StatusCode: resp.StatusCode, Status: resp.Status, Header: resp.Header, cookies: resp.Cookies()}, string(body)
}

// signIn exchanges the token for the session cookie.
func signIn(t *testing.T, ts *httptest.Server) *http.Cookie {
	t.Helper()
	resp, _ := get(t, noRedirects(), ts.URL+"/?token="+testToken, nil)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("token exchange: %s", resp.Status)
	}
	for _, c := range resp.Cookies() {
		if c.Name == SessionCookie {
			return c
		}
	}
	t.Fatal("no session cookie")
	return nil
}

func TestTokenExchange(t *testing.T) {
	ts := newTestServer(t, fixture(), NewHub())
	c := noRedirects()

	resp, body := get(t, c, ts.URL+"/", nil)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "kubectl clusterstack dashboard") {
		t.Errorf("without cookie: %s %q", resp.Status, body)
	}
	resp, _ = get(t, c, ts.URL+"/?token=wrong", nil)
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("wrong token: %s", resp.Status)
	}
	resp, _ = get(t, c, ts.URL+"/?token="+testToken+"&state=all", nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/?state=all" {
		t.Fatalf("token exchange: %s to %q, want 303 to the URL without the token", resp.Status, resp.Header.Get("Location"))
	}
	var session *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == SessionCookie {
			session = ck
		}
	}
	if session == nil || !session.HttpOnly || session.SameSite != http.SameSiteStrictMode || session.Value == testToken || session.Path != "/" {
		t.Fatalf("session cookie = %+v: want HttpOnly, SameSite=Strict, Path=/, not the token itself", session)
	}
	resp, body = get(t, c, ts.URL+"/", session)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "team-a/broken") {
		t.Errorf("with the cookie: %s", resp.Status)
	}
	resp, _ = get(t, c, ts.URL+"/", &http.Cookie{Name: SessionCookie, Value: session.Value + "x"})
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a wrong cookie: %s", resp.Status)
	}
	resp, body = get(t, c, ts.URL+"/?token="+testToken, nil)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "already used") {
		t.Errorf("the token a second time: %s %q, want 403: it works once", resp.Status, body)
	}
}

func TestSecurityHeadersAndRequests(t *testing.T) {
	ts := newTestServer(t, fixture(), NewHub())
	cookie := signIn(t, ts)
	c := noRedirects()
	resp, _ := get(t, c, ts.URL+"/", cookie)
	h := resp.Header
	if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "default-src 'none'") ||
		!strings.Contains(csp, "frame-ancestors 'none'") || strings.Contains(csp, "unsafe") {
		t.Errorf("Content-Security-Policy = %q", csp)
	}
	for k, want := range map[string]string{"X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"} {
		if got := h.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}

	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/", strings.NewReader("x"))
	req.AddCookie(cookie)
	post, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = post.Body.Close()
	if post.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %s, want 405", post.Status)
	}

	req, _ = http.NewRequest(http.MethodGet, ts.URL+"/", nil)
	req.Host = "attacker.example:80"
	req.AddCookie(cookie)
	rebound, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = rebound.Body.Close()
	if rebound.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("a Host that is not loopback (DNS rebinding): %s, want 421", rebound.Status)
	}
	for _, host := range []string{"127.0.0.1:1234", "localhost:80", "[::1]:8080", "LOCALHOST"} {
		if !loopbackHost(host) {
			t.Errorf("loopbackHost(%q) = false", host)
		}
	}
	for _, host := range []string{"10.0.0.1:80", "localhost.attacker.example", "127.0.0.1.nip.io"} {
		if loopbackHost(host) {
			t.Errorf("loopbackHost(%q) = true", host)
		}
	}
}

// TestPagesEscapeAndStayScriptless renders every page with a Flux message carrying markup,
// terminal escapes and a bidirectional override: the markup is escaped, the control
// characters are gone, and no page has inline script, event handler or style attribute (the
// Content-Security-Policy would block them).
func TestPagesEscapeAndStayScriptless(t *testing.T) {
	ts := newTestServer(t, fixture(), NewHub())
	cookie := signIn(t, ts)
	inline := regexp.MustCompile(`(?i)<script(?:\s[^>]*)?>[^<]|\son[a-z]+\s*=|\sstyle\s*=|(?:href|src|action)\s*=\s*"?javascript:`)
	pages := map[string]string{
		"/":                                  "team-a/broken",
		"/?state=all&q=%3Cscript%3E":         "team-a/broken",
		"/stacks/team-a/aws-base-1-36":       "halted in wave prod",
		"/clusters/team-a/broken":            "HelmRelease/broken-cni",
		"/operators":                         "cluster-api",
		"/operators/cluster-api":             "requires cluster-api &gt;=1.10.0 &lt;1.12.0",
		"/clusters/team-a/fresh":             "ClusterAddonNotFound",
		"/stacks/team-a/aws-base-1-36?q=zzz": "No Cluster matches",
	}
	for path, want := range pages {
		resp, body := get(t, noRedirects(), ts.URL+path, cookie)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %s", path, resp.Status)
			continue
		}
		if !strings.Contains(body, want) {
			t.Errorf("%s does not say %q", path, want)
		}
		if strings.Contains(body, "<script>alert") || strings.ContainsAny(body, "\x1b\x07\u202E") {
			t.Errorf("%s shows the hostile message unescaped or with control characters", path)
		}
		if m := inline.FindString(body); m != "" {
			t.Errorf("%s has inline script or style: %q", path, m)
		}
	}
	_, body := get(t, noRedirects(), ts.URL+"/clusters/team-a/broken", cookie)
	if !strings.Contains(body, "install failed: &lt;script&gt;alert(1)&lt;/script&gt; image &#34;&#34; rejected gnp.exe") {
		t.Errorf("the cluster page does not show Flux's message, escaped and without control characters:\n%s", body)
	}
	for _, path := range []string{"/stacks/team-a/nothing", "/clusters/team-b/broken", "/operators/nothing"} {
		if resp, _ := get(t, noRedirects(), ts.URL+path, cookie); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %s, want 404", path, resp.Status)
		}
	}
}

func TestLiveRegion(t *testing.T) {
	ts := newTestServer(t, fixture(), NewHub())
	cookie := signIn(t, ts)
	_, full := get(t, noRedirects(), ts.URL+"/", cookie)
	_, live := get(t, noRedirects(), ts.URL+"/", cookie, liveHeader, "1")
	if !strings.HasPrefix(full, "<!DOCTYPE html>") || !strings.Contains(full, `data-events="/events"`) {
		t.Errorf("the page is no complete document with its event stream:\n%.300s", full)
	}
	if strings.Contains(live, "<html") || !strings.HasPrefix(live, "<h1>Fleet</h1>") || !strings.Contains(live, "team-a/broken") {
		t.Errorf("the live region is not the main content alone:\n%.300s", live)
	}
	_, stack := get(t, noRedirects(), ts.URL+"/stacks/team-a/aws-base-1-36", cookie)
	if !strings.Contains(stack, `data-events="/events?ns=team-a"`) {
		t.Error("the stack page does not follow its namespace's events")
	}
}

// TestEvents reads a page's event stream: a change in its namespace sends an event, a change in
// another namespace none.
func TestEvents(t *testing.T) {
	hub := NewHub()
	ts := newTestServer(t, fixture(), hub)
	cookie := signIn(t, ts)
	req, _ := http.NewRequest(http.MethodGet, ts.URL+"/events?"+url.Values{"ns": {ns}}.Encode(), nil)
	req.AddCookie(cookie)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q", ct)
	}
	events := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "event: ") {
				events <- sc.Text()
			}
		}
		close(events)
	}()
	waitSubscribers := func() {
		deadline := time.Now().Add(10 * time.Second)
		for hub.Subscribers() == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the event stream did not subscribe")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitSubscribers()

	hub.Notify("team-b")
	hub.Notify(ns)
	select {
	case e := <-events:
		if e != "event: change" {
			t.Fatalf("event %q", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event after a change in the page's namespace")
	}
	hub.Notify("team-b")
	select {
	case e := <-events:
		t.Errorf("a change in another namespace sent %q", e)
	case <-time.After(500 * time.Millisecond): // 10 event intervals
	}
}

// TestHubFoldsBursts: a subscriber that has not read yet holds one notification, however many
// changes came; subscribers of other namespaces get none, those of every namespace get all.
func TestHubFoldsBursts(t *testing.T) {
	hub := NewHub()
	mine, stopMine := hub.Subscribe(ns)
	other, stopOther := hub.Subscribe("team-b")
	all, stopAll := hub.Subscribe("")
	for range 1000 {
		hub.Notify(ns)
	}
	if len(mine) != 1 || len(other) != 0 || len(all) != 1 {
		t.Errorf("pending after 1,000 changes in %s: %d for it, %d for team-b, %d for all; want 1, 0, 1", ns, len(mine), len(other), len(all))
	}
	hub.Notify("")
	if len(other) != 1 {
		t.Error("a change of a cluster-scoped object does not reach every subscriber")
	}
	stopMine()
	stopOther()
	stopAll()
	if hub.Subscribers() != 0 {
		t.Errorf("%d subscribers after all stopped", hub.Subscribers())
	}
}
