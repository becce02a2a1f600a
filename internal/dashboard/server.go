package dashboard

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/clusterstack-io/clusterstack-operator/internal/plugin"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Filter says which objects a page needs.
type Filter struct {
	// Namespace limits the objects to one namespace ("" for every namespace the dashboard reads).
	Namespace string
	// Cluster, with Namespace, reads one Cluster: its CAPI Cluster, ClusterAddon and Flux objects
	// (and the stacks and releases of its namespace).
	Cluster string
}

// Source reads the objects pages are built from. Its implementation reads a cache filled by
// one set of informers (NewSource); tests give literal objects.
type Source interface {
	Objects(ctx context.Context, f Filter) (Objects, error)
}

// ValuesFunc reads `kubectl clusterstack values` of Cluster ns/name.
type ValuesFunc func(ctx context.Context, ns, name string) (*plugin.ClusterValues, error)

// Options configure a Server.
type Options struct {
	// Source reads the objects.
	Source Source
	// Hub tells the event streams that objects changed (the Source's informers notify it).
	Hub *Hub
	// Values reads a Cluster's values with their provenance; nil leaves them out.
	Values ValuesFunc
	// Token is the one-time token of the URL printed for the user: the first request with
	// ?token=<Token> gets a session cookie and is redirected to the URL without it. Empty turns
	// authentication off (the in-cluster mode behind an authenticating proxy).
	Token string
	// LoopbackHosts refuses requests whose Host header is not a loopback address or
	// "localhost" (a DNS-rebinding page cannot reach the server by a name of its own).
	LoopbackHosts bool
	// EventInterval is the shortest time between two change events sent to one page (default
	// 500ms): a page is re-rendered at most that often, however fast objects change.
	EventInterval time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Log receives request errors.
	Log logr.Logger
}

// Server serves the dashboard's pages. It only reads.
type Server struct {
	opts    Options
	pages   map[string]*template.Template
	mux     *http.ServeMux
	session string

	mu        sync.Mutex
	tokenUsed bool
}

// SessionCookie is the name of the cookie that carries the session after the token exchange.
const SessionCookie = "clusterstack-dashboard"

// NewToken returns a random token for Options.Token (32 bytes, hex).
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// NewServer returns the dashboard's HTTP handler.
func NewServer(opts Options) (*Server, error) {
	if opts.Source == nil || opts.Hub == nil {
		return nil, errors.New("dashboard: Source and Hub are required")
	}
	if opts.EventInterval <= 0 {
		opts.EventInterval = 500 * time.Millisecond
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	session, err := NewToken()
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, session: session, mux: http.NewServeMux()}
	if s.pages, err = parsePages(); err != nil {
		return nil, err
	}
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, fmt.Errorf("dashboard: static files: %w", err)
	}
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	s.mux.Handle("GET /{$}", s.authed(s.fleet))
	s.mux.Handle("GET /stacks/{ns}/{name}", s.authed(s.stack))
	s.mux.Handle("GET /clusters/{ns}/{name}", s.authed(s.cluster))
	s.mux.Handle("GET /operators", s.authed(s.operators))
	s.mux.Handle("GET /operators/{name}", s.authed(s.operator))
	s.mux.Handle("GET /events", s.authed(s.events))
	return s, nil
}

// ServeHTTP sets the security headers, checks the Host header, and serves the request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	if s.opts.LoopbackHosts && !loopbackHost(r.Host) {
		http.Error(w, "the dashboard answers only on loopback addresses (127.0.0.1, [::1], localhost)", http.StatusMisdirectedRequest)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "the dashboard only reads: GET only", http.StatusMethodNotAllowed)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// loopbackHost reports whether a Host header names a loopback address or localhost.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// authed lets a request through with the session cookie; it exchanges the one-time token of
// the printed URL for the cookie and redirects to the URL without the token.
func (s *Server) authed(next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.opts.Token == "" {
			next(w, r)
			return
		}
		if tok := r.URL.Query().Get("token"); tok != "" {
			s.exchange(w, r, tok)
			return
		}
		if c, err := r.Cookie(SessionCookie); err == nil && subtle.ConstantTimeCompare([]byte(c.Value), []byte(s.session)) == 1 {
			next(w, r)
			return
		}
		http.Error(w, "Not signed in: open the URL `kubectl clusterstack dashboard` printed (it carries a one-time token).", http.StatusUnauthorized)
	})
}

func (s *Server) exchange(w http.ResponseWriter, r *http.Request, tok string) {
	if subtle.ConstantTimeCompare([]byte(tok), []byte(s.opts.Token)) != 1 {
		http.Error(w, "Wrong token: open the URL `kubectl clusterstack dashboard` printed.", http.StatusForbidden)
		return
	}
	s.mu.Lock()
	used := s.tokenUsed
	s.tokenUsed = true
	s.mu.Unlock()
	if used {
		http.Error(w, "This token was already used, by the browser that opened the URL first. Use that browser, or start `kubectl clusterstack dashboard` again for a new URL.", http.StatusForbidden)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: s.session, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	u := *r.URL
	q := u.Query()
	q.Del("token")
	u.RawQuery = q.Encode()
	http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
}

// page is what the layout template gets.
type page struct {
	Title string
	// Nav is the navigation entry of the page: fleet or operators.
	Nav string
	// Events is the event stream's URL of the page.
	Events string
	Now    time.Time
	// Commands are kubectl commands about the page's object, to copy.
	Commands []string
	Data     any
}

// liveHeader asks for the page's live region alone (the script's refresh).
const liveHeader = "X-Dashboard-Live"

func (s *Server) render(w http.ResponseWriter, r *http.Request, name string, p page) {
	t := s.pages[name]
	p.Now = s.opts.Now()
	var buf bytes.Buffer
	tmpl := "layout"
	if r.Header.Get(liveHeader) == "1" {
		tmpl = "live"
	}
	if err := t.ExecuteTemplate(&buf, tmpl, p); err != nil {
		s.opts.Log.Error(err, "render", "page", name)
		http.Error(w, "the page could not be rendered: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write([]byte(StripControl(buf.String())))
}

func (s *Server) objects(w http.ResponseWriter, r *http.Request, f Filter) (Objects, bool) {
	objs, err := s.opts.Source.Objects(r.Context(), f)
	if err != nil {
		s.opts.Log.Error(err, "read objects")
		http.Error(w, StripControl("the objects could not be read: "+err.Error()), http.StatusServiceUnavailable)
		return Objects{}, false
	}
	objs.Now = s.opts.Now()
	return objs, true
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request, what string, objs Objects) {
	w.WriteHeader(http.StatusNotFound)
	s.render(w, r, "notfound", page{Title: what + " not found", Data: struct {
		What       string
		Unreadable []string
	}{what, objs.Unreadable}})
}

func (s *Server) fleet(w http.ResponseWriter, r *http.Request) {
	objs, ok := s.objects(w, r, Filter{})
	if !ok {
		return
	}
	q := ParseQuery(r.URL.Query())
	f := BuildFleet(objs, q)
	s.render(w, r, "fleet", page{Title: "Fleet", Nav: "fleet", Events: "/events", Data: f,
		Commands: []string{"kubectl get clusterstacks -A", "kubectl clusterstack tree -A"}})
}

func (s *Server) stack(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	objs, ok := s.objects(w, r, Filter{Namespace: ns})
	if !ok {
		return
	}
	v, found := BuildStack(objs, ns, name, ParseQuery(r.URL.Query()))
	if !found {
		s.notFound(w, r, "ClusterStack "+ns+"/"+name, objs)
		return
	}
	s.render(w, r, "stack", page{Title: "ClusterStack " + ns + "/" + name, Nav: "fleet", Events: eventsURL(ns), Data: v,
		Commands: []string{
			"kubectl get clusterstack -n " + ns + " " + name,
			"kubectl clusterstack tree -n " + ns + " " + name,
			"kubectl clusterstack updates -n " + ns + " " + name,
		}})
}

func (s *Server) cluster(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	objs, ok := s.objects(w, r, Filter{Namespace: ns, Cluster: name})
	if !ok {
		return
	}
	var values *plugin.ClusterValues
	valuesErr := "values are not read by this dashboard"
	if s.opts.Values != nil {
		var err error
		if values, err = s.opts.Values(r.Context(), ns, name); err != nil {
			valuesErr = err.Error()
		} else {
			valuesErr = ""
		}
	}
	v, found := BuildCluster(objs, ns, name, values, valuesErr)
	if !found {
		s.notFound(w, r, "Cluster "+ns+"/"+name, objs)
		return
	}
	s.render(w, r, "cluster", page{Title: "Cluster " + ns + "/" + name, Nav: "fleet", Events: eventsURL(ns), Data: v,
		Commands: []string{
			"kubectl clusterstack why -n " + ns + " " + name,
			"kubectl clusterstack values -n " + ns + " " + name,
			"kubectl get clusteraddon -n " + ns + " " + name,
			"kubectl get cluster -n " + ns + " " + name,
		}})
}

func (s *Server) operators(w http.ResponseWriter, r *http.Request) {
	objs, ok := s.objects(w, r, Filter{})
	if !ok {
		return
	}
	s.render(w, r, "operators", page{Title: "ManagementOperators", Nav: "operators", Events: "/events", Data: struct {
		Operators  []OperatorSummary
		Unreadable []string
	}{operatorSummaries(objs.Operators), objs.Unreadable},
		Commands: []string{"kubectl get managementoperators"}})
}

func (s *Server) operator(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	objs, ok := s.objects(w, r, Filter{})
	if !ok {
		return
	}
	v, found := BuildOperator(objs, name)
	if !found {
		s.notFound(w, r, "ManagementOperator "+name, objs)
		return
	}
	s.render(w, r, "operator", page{Title: "ManagementOperator " + name, Nav: "operators", Events: "/events", Data: v,
		Commands: []string{"kubectl get managementoperator " + name, "kubectl describe managementoperator " + name}})
}

func eventsURL(ns string) string { return "/events?" + url.Values{"ns": {ns}}.Encode() }

// events is a page's stream of server-sent events: "change" after objects of its namespace
// changed, at most one per EventInterval, and a comment every 15s to keep proxies from closing
// it.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	ch, stop := s.opts.Hub.Subscribe(r.URL.Query().Get("ns"))
	defer stop()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	_, _ = fmt.Fprint(w, "retry: 2000\n\n")
	fl.Flush()
	ping := time.NewTicker(15 * time.Second)
	defer ping.Stop()
	var last time.Time
	for n := 1; ; {
		select {
		case <-r.Context().Done():
			return
		case <-ping.C:
			_, _ = fmt.Fprint(w, ": ping\n\n")
		case <-ch:
			if wait := s.opts.EventInterval - time.Since(last); wait > 0 {
				select {
				case <-r.Context().Done():
					return
				case <-time.After(wait):
				}
			}
			// Changes during the wait are part of this event.
			select {
			case <-ch:
			default:
			}
			last = time.Now()
			if _, err := fmt.Fprintf(w, "event: change\ndata: %d\n\n", n); err != nil {
				return
			}
			n++
		}
		fl.Flush()
	}
}
