// Package forge is what the operator needs of a Git forge to propose updates: who the token
// belongs to, listing a branch's pull requests in every state (with their author and the
// repository their head branch is in), opening one, and updating its title and description;
// and a bounded checkout of the fleet repository to commit the proposal to (git.go). Clients
// are built with fluxcd/go-git-providers (Gitea and GitHub); listing closed and merged pull
// requests and editing descriptions go through the providers' Raw() SDK clients, because
// go-git-providers' PullRequestClient lists only open pull requests and edits only titles.
//
// Every call is bounded (Limits): each forge API call and each Git operation has a deadline,
// every response body and every checkout a size. The token is never sent over plain http
// (except to a loopback address when Policy allows it), never to a host but the fleet
// repository's own or one the platform allows, and every error the package returns is
// redacted (redact.Error) and says the HTTP status and a short reason, never a raw
// response body.
package forge

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"

	giteasdk "code.gitea.io/sdk/gitea"
	"github.com/fluxcd/go-git-providers/gitea"
	"github.com/fluxcd/go-git-providers/github"
	"github.com/fluxcd/go-git-providers/gitprovider"
	gh "github.com/google/go-github/v82/github"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/gitauth"
	"github.com/clusterstack-io/clusterstack-operator/internal/redact"
)

// Pull request states as the operator reports them.
const (
	StateOpen   = "open"
	StateMerged = "merged"
	StateClosed = "closed"
)

// PullRequest is a pull request as the operator sees it.
type PullRequest struct {
	Number int64
	URL    string
	Title  string
	Body   string
	// Head and Base are branch names.
	Head, Base string
	// State is StateOpen, StateMerged or StateClosed (closed without merging).
	State string
	// Author is the login of the forge user who opened the pull request.
	Author string
	// HeadRepo is the repository the head branch is in, "owner/name"; empty when the forge
	// does not say (a deleted fork).
	HeadRepo string
	// FromBase is true when the head branch is in the base repository itself, not in a fork.
	FromBase bool
	// Labels are the names of the pull request's labels (at most maxLabels, each cut to
	// maxLabelLen).
	Labels []string
}

// Bounds of the labels a PullRequest carries.
const (
	maxLabels   = 32
	maxLabelLen = 100
)

// LabelHistory is implemented by the clients that can say who added a label to a pull request.
type LabelHistory interface {
	// LabelAddedBy returns the login of the user who last added label to pull request number,
	// and when; "" when the forge's history (its first pages) does not say.
	LabelAddedBy(ctx context.Context, number int64, label string) (string, time.Time, error)
}

// labelNames bounds a pull request's label names.
func labelNames(names []string) []string {
	var out []string
	for _, n := range names {
		if len(out) == maxLabels {
			break
		}
		if len(n) > maxLabelLen {
			n = n[:maxLabelLen]
		}
		out = append(out, n)
	}
	return out
}

// maxHistoryPages bounds the pages of a pull request's history read for LabelAddedBy.
const maxHistoryPages = 5

// Client opens and inspects pull requests on one repository. Each method is one forge API
// call for Limits.APITimeout (a listing with all its pages included).
type Client interface {
	// Me returns the login of the forge user the token belongs to.
	Me(ctx context.Context) (string, error)
	// PullRequests lists the pull requests from branches starting with headPrefix, in every
	// state and from every repository (forks included), newest first.
	PullRequests(ctx context.Context, headPrefix string) ([]PullRequest, error)
	// Create opens a pull request from head (a branch of the repository itself) into base.
	Create(ctx context.Context, title, body, head, base string) (PullRequest, error)
	// Update changes an open pull request's title and description.
	Update(ctx context.Context, number int64, title, body string) (PullRequest, error)
}

// Repository names a repository on a forge.
type Repository struct {
	// APIURL is the forge's base URL (scheme and host, plus a path for forges not at the root).
	APIURL string
	// Owner and Name of the repository.
	Owner, Name string
}

// FullName is "owner/name".
func (r Repository) FullName() string { return r.Owner + "/" + r.Name }

// Defaults of Limits.
const (
	DefaultAPITimeout = 30 * time.Second
	DefaultGitTimeout = time.Minute
	DefaultMaxBytes   = 64 << 20
)

// Limits bound what one proposal may cost the operator.
type Limits struct {
	// APITimeout bounds each forge API call (DefaultAPITimeout when 0).
	APITimeout time.Duration
	// GitTimeout bounds each Git operation on the fleet repository: listing its branches,
	// cloning, fetching and pushing (DefaultGitTimeout when 0).
	GitTimeout time.Duration
	// MaxBytes bounds what one checkout fetches from the fleet repository, and the size of the
	// files it checks out (DefaultMaxBytes when 0).
	MaxBytes int64
}

// WithDefaults returns l with its zero fields set to the defaults.
func (l Limits) WithDefaults() Limits {
	if l.APITimeout <= 0 {
		l.APITimeout = DefaultAPITimeout
	}
	if l.GitTimeout <= 0 {
		l.GitTimeout = DefaultGitTimeout
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	return l
}

// Policy says where the operator may send a proposal token.
type Policy struct {
	// APIHosts are the hosts ("host" or "host:port", as in a URL) that
	// spec.updates.proposals.apiURL may name besides the fleet repository's own host (a forge
	// whose API is served from another host). Empty: only the fleet repository's host.
	APIHosts []string
	// AllowLoopbackHTTP lets the token go over plain http to a loopback address (127.0.0.0/8,
	// ::1, localhost): local planes and tests. Otherwise the token goes over https only.
	AllowLoopbackHTTP bool
}

// ParseRepository derives the forge's base URL and the repository's owner and name from a
// clone URL such as https://gitea.example.com/team/fleet.git. apiURL, when set, overrides the
// base URL (forges served below a path, GitHub Enterprise); the clone URL's path must then
// start with apiURL's path, and apiURL's host must be the clone URL's or one of
// policy.APIHosts. Neither URL may be plain http unless policy allows it for loopback
// (gitauth.RefusePlainHTTP); tokenFrom names the token's Secret for that message.
func ParseRepository(cloneURL, apiURL, tokenFrom string, policy Policy) (Repository, error) {
	u, err := url.Parse(cloneURL)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return Repository{}, fmt.Errorf("fleet repository URL %q is not an http(s) URL: pull requests need the forge's web address (an ssh:// source needs spec.updates.proposals.apiURL and an https mirror)", redact.URL(cloneURL))
	}
	if err := gitauth.RefusePlainHTTP(cloneURL, tokenFrom, policy.AllowLoopbackHTTP); err != nil {
		return Repository{}, fmt.Errorf("fleet repository URL: %w", err)
	}
	base := u.Scheme + "://" + u.Host
	path := strings.Trim(strings.TrimSuffix(u.Path, ".git"), "/")
	if apiURL != "" {
		a, err := url.Parse(apiURL)
		if err != nil || a.Host == "" || (a.Scheme != "https" && a.Scheme != "http") || a.User != nil {
			return Repository{}, fmt.Errorf("spec.updates.proposals.apiURL %q is not an http(s) URL without userinfo", redact.URL(apiURL))
		}
		if err := gitauth.RefusePlainHTTP(apiURL, tokenFrom, policy.AllowLoopbackHTTP); err != nil {
			return Repository{}, fmt.Errorf("spec.updates.proposals.apiURL: %w", err)
		}
		if !sameHost(a, u) && !slices.ContainsFunc(policy.APIHosts, func(h string) bool { return strings.EqualFold(h, a.Host) }) {
			allowed := "none"
			if len(policy.APIHosts) > 0 {
				allowed = strings.Join(policy.APIHosts, ", ")
			}
			return Repository{}, fmt.Errorf("spec.updates.proposals.apiURL names host %s, which is neither the fleet repository's host %s nor one of the forge hosts the platform allows (%s; the manager's --forge-api-hosts): the token is sent only there",
				a.Host, u.Host, allowed)
		}
		base = strings.TrimSuffix(apiURL, "/")
		if strings.EqualFold(a.Host, u.Host) {
			path = strings.Trim(strings.TrimPrefix("/"+path, strings.TrimSuffix(a.Path, "/")), "/")
		}
	}
	parts := strings.Split(path, "/")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return Repository{}, fmt.Errorf("fleet repository URL %q does not end in <owner>/<repository>", redact.URL(cloneURL))
	}
	return Repository{APIURL: base, Owner: parts[0], Name: parts[1]}, nil
}

// sameHost reports whether a and b name the same host and port (the scheme's default port
// when none is given).
func sameHost(a, b *url.URL) bool {
	port := func(u *url.URL) string {
		if p := u.Port(); p != "" {
			return p
		}
		if strings.EqualFold(u.Scheme, "http") {
			return "80"
		}
		return "443"
	}
	return strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

// HostKey is the forge host a URL names ("scheme://host:port", lowercase), for budgets per host.
func HostKey(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port == "" {
		port = "443"
		if strings.EqualFold(u.Scheme, "http") {
			port = "80"
		}
	}
	return strings.ToLower(u.Scheme) + "://" + net.JoinHostPort(host, port)
}

// Options of New.
type Options struct {
	// Limits of the client's calls.
	Limits Limits
	// Policy checked again before any token is sent (ParseRepository applies it first).
	Policy Policy
	// Transport, when set, is the HTTP transport under the client's limits (tests).
	Transport http.RoundTripper
}

// New builds a client for repo on a forge of the given provider, authenticated with token.
// Nothing is sent before the first call but, for Gitea, the SDK's check of the server version.
func New(provider csv1.ForgeProvider, repo Repository, token string, o Options) (Client, error) {
	lim := o.Limits.WithDefaults()
	if err := gitauth.RefusePlainHTTP(repo.APIURL, "the proposal token", o.Policy.AllowLoopbackHTTP); err != nil {
		return nil, err
	}
	next := o.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	t := &apiTransport{next: next, timeout: lim.APITimeout}
	opts := []gitprovider.ClientOption{gitprovider.WithPreChainTransportHook(func(http.RoundTripper) http.RoundTripper { return t })}
	fail := func(err error) error {
		return apiError(fmt.Sprintf("connect to the forge API at %s", redact.URL(repo.APIURL)), nil, err, lim.APITimeout, token)
	}
	switch provider {
	case csv1.ForgeGitea:
		// The SDK asks the server's version here, with a context of its own: the transport's
		// deadline bounds that call too.
		c, err := gitea.NewClient(token, append(opts, gitprovider.WithDomain(repo.APIURL))...)
		if err != nil {
			return nil, fail(err)
		}
		raw, ok := c.Raw().(*giteasdk.Client)
		if !ok {
			return nil, errors.New("go-git-providers' Gitea client has no SDK client")
		}
		return &giteaClient{c: raw, repo: repo, timeout: lim.APITimeout, token: token}, nil
	case csv1.ForgeGitHub:
		u, _ := url.Parse(repo.APIURL)
		if u != nil && u.Host != "github.com" && u.Host != "" {
			opts = append(opts, gitprovider.WithDomain(u.Host))
		}
		c, err := github.NewClient(append(opts, gitprovider.WithOAuth2Token(token))...)
		if err != nil {
			return nil, fail(err)
		}
		raw, ok := c.Raw().(*gh.Client)
		if !ok {
			return nil, errors.New("go-git-providers' GitHub client has no SDK client")
		}
		return &githubClient{c: raw, repo: repo, timeout: lim.APITimeout, token: token}, nil
	default:
		return nil, fmt.Errorf("forge provider %q is not supported (gitea, github)", provider)
	}
}

// maxPages bounds the pages of one listing of pull requests.
const maxPages = 20

// giteaClient uses Gitea's SDK.
type giteaClient struct {
	c       *giteasdk.Client
	repo    Repository
	timeout time.Duration
	token   string
}

// call runs f with the client's context bounded by the API deadline.
func (g *giteaClient) call(ctx context.Context, what string, f func() (*giteasdk.Response, error)) error {
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	g.c.SetContext(ctx)
	resp, err := f()
	if err != nil {
		var hr *http.Response
		if resp != nil {
			hr = resp.Response
		}
		return apiError(what, hr, err, g.timeout, g.token)
	}
	return nil
}

func (g *giteaClient) Me(ctx context.Context) (string, error) {
	var login string
	err := g.call(ctx, "ask "+redact.URL(g.repo.APIURL)+" which user the token belongs to", func() (*giteasdk.Response, error) {
		u, resp, err := g.c.GetMyUserInfo()
		if err == nil {
			login = u.UserName
		}
		return resp, err
	})
	return login, err
}

func (g *giteaClient) PullRequests(ctx context.Context, headPrefix string) ([]PullRequest, error) {
	var out []PullRequest
	err := g.call(ctx, fmt.Sprintf("list pull requests of %s on %s", g.repo.FullName(), redact.URL(g.repo.APIURL)), func() (*giteasdk.Response, error) {
		for page := 1; page <= maxPages; page++ {
			prs, resp, err := g.c.ListRepoPullRequests(g.repo.Owner, g.repo.Name, giteasdk.ListPullRequestsOptions{
				ListOptions: giteasdk.ListOptions{Page: page, PageSize: 50}, State: giteasdk.StateAll,
			})
			if err != nil {
				return resp, err
			}
			for _, pr := range prs {
				if pr.Head != nil && strings.HasPrefix(pr.Head.Ref, headPrefix) {
					out = append(out, fromGitea(pr, g.repo))
				}
			}
			if len(prs) < 50 {
				break
			}
		}
		return nil, nil
	})
	if err != nil {
		return nil, err
	}
	sortNewestFirst(out)
	return out, nil
}

func (g *giteaClient) Create(ctx context.Context, title, body, head, base string) (PullRequest, error) {
	var out PullRequest
	err := g.call(ctx, fmt.Sprintf("open pull request %s -> %s on %s", head, base, g.repo.FullName()), func() (*giteasdk.Response, error) {
		pr, resp, err := g.c.CreatePullRequest(g.repo.Owner, g.repo.Name, giteasdk.CreatePullRequestOption{Head: head, Base: base, Title: title, Body: body})
		if err == nil {
			out = fromGitea(pr, g.repo)
		}
		return resp, err
	})
	return out, err
}

func (g *giteaClient) Update(ctx context.Context, number int64, title, body string) (PullRequest, error) {
	var out PullRequest
	err := g.call(ctx, fmt.Sprintf("update pull request #%d of %s", number, g.repo.FullName()), func() (*giteasdk.Response, error) {
		pr, resp, err := g.c.EditPullRequest(g.repo.Owner, g.repo.Name, number, giteasdk.EditPullRequestOption{Title: title, Body: &body})
		if err == nil {
			out = fromGitea(pr, g.repo)
		}
		return resp, err
	})
	return out, err
}

func fromGitea(pr *giteasdk.PullRequest, repo Repository) PullRequest {
	out := PullRequest{Number: pr.Index, URL: pr.HTMLURL, Title: pr.Title, Body: pr.Body, State: StateOpen}
	if pr.Poster != nil {
		out.Author = pr.Poster.UserName
	}
	if pr.Head != nil {
		out.Head = pr.Head.Ref
		if pr.Head.Repository != nil {
			out.HeadRepo = pr.Head.Repository.FullName
		}
	}
	if pr.Base != nil {
		out.Base = pr.Base.Ref
	}
	var labels []string
	for _, l := range pr.Labels {
		if l != nil {
			labels = append(labels, l.Name)
		}
	}
	out.Labels = labelNames(labels)
	// The head is in the base repository when both name the same repository: by ID when the
	// forge gives both, and the head repository must be this one by name too.
	if pr.Head != nil && pr.Base != nil && pr.Head.Repository != nil {
		sameID := pr.Head.RepoID != 0 && pr.Head.RepoID == pr.Base.RepoID
		out.FromBase = sameID && strings.EqualFold(pr.Head.Repository.FullName, repo.FullName())
	}
	switch {
	case pr.HasMerged:
		out.State = StateMerged
	case pr.State == giteasdk.StateClosed:
		out.State = StateClosed
	}
	return out
}

// LabelAddedBy reads the pull request's timeline (its first maxHistoryPages pages) for the
// last "label" entry adding label.
func (g *giteaClient) LabelAddedBy(ctx context.Context, number int64, label string) (string, time.Time, error) {
	var who string
	var at time.Time
	err := g.call(ctx, fmt.Sprintf("read the timeline of pull request #%d of %s", number, g.repo.FullName()), func() (*giteasdk.Response, error) {
		for page := 1; page <= maxHistoryPages; page++ {
			items, resp, err := g.c.ListIssueTimeline(g.repo.Owner, g.repo.Name, number, giteasdk.ListIssueCommentOptions{ListOptions: giteasdk.ListOptions{Page: page, PageSize: 50}})
			if err != nil {
				return resp, err
			}
			for _, it := range items {
				// Gitea's label entries carry the label, and body "1" when it was added.
				if it.Type != "label" || it.Body != "1" || it.Poster == nil {
					continue
				}
				for _, l := range it.Label {
					if l != nil && l.Name == label && !it.Created.Before(at) {
						who, at = it.Poster.UserName, it.Created
					}
				}
			}
			if len(items) < 50 {
				break
			}
		}
		return nil, nil
	})
	return shortText(who), at, err
}

// githubClient uses go-github.
type githubClient struct {
	c       *gh.Client
	repo    Repository
	timeout time.Duration
	token   string
}

func (g *githubClient) call(ctx context.Context, what string, f func(context.Context) (*gh.Response, error)) error {
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	resp, err := f(ctx)
	if err != nil {
		var hr *http.Response
		if resp != nil {
			hr = resp.Response
		}
		return apiError(what, hr, err, g.timeout, g.token)
	}
	return nil
}

func (g *githubClient) Me(ctx context.Context) (string, error) {
	var login string
	err := g.call(ctx, "ask "+redact.URL(g.repo.APIURL)+" which user the token belongs to", func(ctx context.Context) (*gh.Response, error) {
		u, resp, err := g.c.Users.Get(ctx, "")
		if err == nil {
			login = u.GetLogin()
		}
		return resp, err
	})
	return login, err
}

func (g *githubClient) PullRequests(ctx context.Context, headPrefix string) ([]PullRequest, error) {
	var out []PullRequest
	err := g.call(ctx, "list pull requests of "+g.repo.FullName(), func(ctx context.Context) (*gh.Response, error) {
		opts := &gh.PullRequestListOptions{State: "all", Sort: "created", Direction: "desc", ListOptions: gh.ListOptions{PerPage: 100}}
		for page := 0; page < maxPages; page++ {
			prs, resp, err := g.c.PullRequests.List(ctx, g.repo.Owner, g.repo.Name, opts)
			if err != nil {
				return resp, err
			}
			for _, pr := range prs {
				if strings.HasPrefix(pr.GetHead().GetRef(), headPrefix) {
					out = append(out, fromGitHub(pr, g.repo))
				}
			}
			if resp == nil || resp.NextPage == 0 {
				break
			}
			opts.Page = resp.NextPage
		}
		return nil, nil
	})
	if err != nil {
		return nil, err
	}
	sortNewestFirst(out)
	return out, nil
}

func (g *githubClient) Create(ctx context.Context, title, body, head, base string) (PullRequest, error) {
	var out PullRequest
	err := g.call(ctx, fmt.Sprintf("open pull request %s -> %s on %s", head, base, g.repo.FullName()), func(ctx context.Context) (*gh.Response, error) {
		pr, resp, err := g.c.PullRequests.Create(ctx, g.repo.Owner, g.repo.Name, &gh.NewPullRequest{Title: &title, Body: &body, Head: &head, Base: &base})
		if err == nil {
			out = fromGitHub(pr, g.repo)
		}
		return resp, err
	})
	return out, err
}

func (g *githubClient) Update(ctx context.Context, number int64, title, body string) (PullRequest, error) {
	var out PullRequest
	err := g.call(ctx, fmt.Sprintf("update pull request #%d of %s", number, g.repo.FullName()), func(ctx context.Context) (*gh.Response, error) {
		pr, resp, err := g.c.PullRequests.Edit(ctx, g.repo.Owner, g.repo.Name, int(number), &gh.PullRequest{Title: &title, Body: &body})
		if err == nil {
			out = fromGitHub(pr, g.repo)
		}
		return resp, err
	})
	return out, err
}

// LabelAddedBy reads the pull request's issue events (their first maxHistoryPages pages) for
// the last "labeled" event of label.
func (g *githubClient) LabelAddedBy(ctx context.Context, number int64, label string) (string, time.Time, error) {
	var who string
	var at time.Time
	err := g.call(ctx, fmt.Sprintf("read the events of pull request #%d of %s", number, g.repo.FullName()), func(ctx context.Context) (*gh.Response, error) {
		opts := &gh.ListOptions{PerPage: 100}
		for page := 0; page < maxHistoryPages; page++ {
			evs, resp, err := g.c.Issues.ListIssueEvents(ctx, g.repo.Owner, g.repo.Name, int(number), opts)
			if err != nil {
				return resp, err
			}
			for _, e := range evs {
				if e.GetEvent() == "labeled" && e.GetLabel().GetName() == label && !e.GetCreatedAt().Before(at) {
					who, at = e.GetActor().GetLogin(), e.GetCreatedAt().Time
				}
			}
			if resp == nil || resp.NextPage == 0 {
				break
			}
			opts.Page = resp.NextPage
		}
		return nil, nil
	})
	return shortText(who), at, err
}

func fromGitHub(pr *gh.PullRequest, repo Repository) PullRequest {
	out := PullRequest{Number: int64(pr.GetNumber()), URL: pr.GetHTMLURL(), Title: pr.GetTitle(), Body: pr.GetBody(),
		Head: pr.GetHead().GetRef(), Base: pr.GetBase().GetRef(), State: StateOpen,
		Author: pr.GetUser().GetLogin(), HeadRepo: pr.GetHead().GetRepo().GetFullName()}
	var labels []string
	for _, l := range pr.Labels {
		labels = append(labels, l.GetName())
	}
	out.Labels = labelNames(labels)
	headID, baseID := pr.GetHead().GetRepo().GetID(), pr.GetBase().GetRepo().GetID()
	out.FromBase = headID != 0 && headID == baseID && strings.EqualFold(out.HeadRepo, repo.FullName())
	switch {
	case pr.MergedAt != nil || pr.GetMerged():
		out.State = StateMerged
	case pr.GetState() == "closed":
		out.State = StateClosed
	}
	return out
}

func sortNewestFirst(prs []PullRequest) {
	sort.Slice(prs, func(i, j int) bool { return prs[i].Number > prs[j].Number })
}

// maxReasonLen bounds the reason a forge gave that an error repeats.
const maxReasonLen = 120

// apiError is the error of a forge API call: what the operator tried, the HTTP status and a
// short reason (the forge's own message, when it gave one, cut to maxReasonLen printable
// characters), or that the forge did not answer within the deadline. Never the response body,
// never the token.
func apiError(what string, resp *http.Response, err error, timeout time.Duration, token string) error {
	var msg string
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errAPIDeadline) || isTimeout(err):
		msg = fmt.Sprintf("%s: no answer within %s (the forge API deadline, --forge-api-timeout)", what, timeout)
	case resp != nil && resp.StatusCode >= 300:
		msg = fmt.Sprintf("%s: HTTP %s", what, resp.Status)
		if r := reason(err, resp); r != "" {
			msg += ": " + r
		}
	default:
		msg = fmt.Sprintf("%s: %s", what, shortText(transportError(err)))
	}
	return redact.Error(&forgeError{msg: msg, err: err}, token)
}

// forgeError carries the message of apiError and the original error for errors.Is.
type forgeError struct {
	msg string
	err error
}

func (e *forgeError) Error() string        { return e.msg }
func (e *forgeError) Is(target error) bool { return errors.Is(e.err, target) }

// reason is the forge's own message of an error response: go-github's ErrorResponse message,
// or what Gitea's SDK took from the body's "message" field. A body the SDK repeats whole (not
// JSON, or JSON without a message) is dropped.
func reason(err error, resp *http.Response) string {
	var ghErr *gh.ErrorResponse
	if errors.As(err, &ghErr) {
		return shortText(ghErr.Message)
	}
	text := err.Error()
	if strings.HasPrefix(text, "unknown API error") || strings.HasPrefix(text, resp.Status) || strings.Contains(text, "body read on HTTP error") {
		return ""
	}
	return shortText(text)
}

// transportError is the text of an error that got no HTTP answer, without the request URL
// (url.Error repeats it, with its query).
func transportError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// shortText is the first line of s, printable characters only, cut to maxReasonLen.
func shortText(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n >= maxReasonLen {
			b.WriteString("…")
			break
		}
		if !unicode.IsPrint(r) {
			r = ' '
		}
		b.WriteRune(r)
		n++
	}
	return strings.TrimSpace(b.String())
}
