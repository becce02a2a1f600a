// Package forge is what the operator needs of a Git forge to propose updates: listing a
// branch's pull requests in every state, opening one, and updating its title and description.
// Clients are built with fluxcd/go-git-providers (Gitea and GitHub); listing closed and merged
// pull requests and editing descriptions go through the providers' Raw() SDK clients, because
// go-git-providers' PullRequestClient lists only open pull requests and edits only titles.
package forge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"

	giteasdk "code.gitea.io/sdk/gitea"
	"github.com/fluxcd/go-git-providers/gitea"
	"github.com/fluxcd/go-git-providers/github"
	"github.com/fluxcd/go-git-providers/gitprovider"
	gh "github.com/google/go-github/v82/github"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
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
}

// Client opens and inspects pull requests on one repository.
type Client interface {
	// PullRequests lists the pull requests from branches starting with headPrefix, in every
	// state, newest first.
	PullRequests(ctx context.Context, headPrefix string) ([]PullRequest, error)
	// Create opens a pull request from head into base.
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

// ParseRepository derives the forge's base URL and the repository's owner and name from a
// clone URL such as https://gitea.example.com/team/fleet.git. apiURL, when set, overrides the
// base URL (forges served below a path, GitHub Enterprise); the clone URL's path must then
// start with apiURL's path.
func ParseRepository(cloneURL, apiURL string) (Repository, error) {
	u, err := url.Parse(cloneURL)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return Repository{}, fmt.Errorf("fleet repository URL %q is not an http(s) URL: pull requests need the forge's web address (an ssh:// source needs spec.updates.proposals.apiURL and an https mirror)", redactURL(cloneURL))
	}
	base := u.Scheme + "://" + u.Host
	path := strings.Trim(strings.TrimSuffix(u.Path, ".git"), "/")
	if apiURL != "" {
		a, err := url.Parse(apiURL)
		if err != nil || a.Host == "" {
			return Repository{}, fmt.Errorf("spec.updates.proposals.apiURL %q is not a URL", apiURL)
		}
		base = strings.TrimSuffix(apiURL, "/")
		if a.Host == u.Host {
			path = strings.Trim(strings.TrimPrefix("/"+path, strings.TrimSuffix(a.Path, "/")), "/")
		}
	}
	parts := strings.Split(path, "/")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return Repository{}, fmt.Errorf("fleet repository URL %q does not end in <owner>/<repository>", redactURL(cloneURL))
	}
	return Repository{APIURL: base, Owner: parts[0], Name: parts[1]}, nil
}

// New builds a client for repo on a forge of the given provider, authenticated with token.
// httpClient, when not nil, carries the transport (for example a CA bundle).
func New(provider csv1.ForgeProvider, repo Repository, token string, httpClient *http.Client) (Client, error) {
	opts := []gitprovider.ClientOption{}
	if httpClient != nil && httpClient.Transport != nil {
		t := httpClient.Transport
		opts = append(opts, gitprovider.WithPreChainTransportHook(func(http.RoundTripper) http.RoundTripper { return t }))
	}
	switch provider {
	case csv1.ForgeGitea:
		c, err := gitea.NewClient(token, append(opts, gitprovider.WithDomain(repo.APIURL))...)
		if err != nil {
			return nil, fmt.Errorf("gitea client for %s: %w", repo.APIURL, err)
		}
		raw, ok := c.Raw().(*giteasdk.Client)
		if !ok {
			return nil, errors.New("go-git-providers' Gitea client has no SDK client")
		}
		return &giteaClient{c: raw, repo: repo}, nil
	case csv1.ForgeGitHub:
		u, _ := url.Parse(repo.APIURL)
		if u != nil && u.Host != "github.com" && u.Host != "" {
			opts = append(opts, gitprovider.WithDomain(u.Host))
		}
		c, err := github.NewClient(append(opts, gitprovider.WithOAuth2Token(token))...)
		if err != nil {
			return nil, fmt.Errorf("github client for %s: %w", repo.APIURL, err)
		}
		raw, ok := c.Raw().(*gh.Client)
		if !ok {
			return nil, errors.New("go-git-providers' GitHub client has no SDK client")
		}
		return &githubClient{c: raw, repo: repo}, nil
	default:
		return nil, fmt.Errorf("forge provider %q is not supported (gitea, github)", provider)
	}
}

// giteaClient uses Gitea's SDK.
type giteaClient struct {
	c    *giteasdk.Client
	repo Repository
}

func (g *giteaClient) PullRequests(ctx context.Context, headPrefix string) ([]PullRequest, error) {
	g.c.SetContext(ctx)
	var out []PullRequest
	for page := 1; page <= 20; page++ {
		prs, _, err := g.c.ListRepoPullRequests(g.repo.Owner, g.repo.Name, giteasdk.ListPullRequestsOptions{
			ListOptions: giteasdk.ListOptions{Page: page, PageSize: 50}, State: giteasdk.StateAll,
		})
		if err != nil {
			return nil, fmt.Errorf("list pull requests of %s/%s on %s: %w", g.repo.Owner, g.repo.Name, g.repo.APIURL, err)
		}
		for _, pr := range prs {
			if pr.Head != nil && strings.HasPrefix(pr.Head.Ref, headPrefix) {
				out = append(out, fromGitea(pr))
			}
		}
		if len(prs) < 50 {
			break
		}
	}
	sortNewestFirst(out)
	return out, nil
}

func (g *giteaClient) Create(ctx context.Context, title, body, head, base string) (PullRequest, error) {
	g.c.SetContext(ctx)
	pr, _, err := g.c.CreatePullRequest(g.repo.Owner, g.repo.Name, giteasdk.CreatePullRequestOption{Head: head, Base: base, Title: title, Body: body})
	if err != nil {
		return PullRequest{}, fmt.Errorf("open pull request %s -> %s on %s/%s: %w", head, base, g.repo.Owner, g.repo.Name, err)
	}
	return fromGitea(pr), nil
}

func (g *giteaClient) Update(ctx context.Context, number int64, title, body string) (PullRequest, error) {
	g.c.SetContext(ctx)
	pr, _, err := g.c.EditPullRequest(g.repo.Owner, g.repo.Name, number, giteasdk.EditPullRequestOption{Title: title, Body: &body})
	if err != nil {
		return PullRequest{}, fmt.Errorf("update pull request #%d of %s/%s: %w", number, g.repo.Owner, g.repo.Name, err)
	}
	return fromGitea(pr), nil
}

func fromGitea(pr *giteasdk.PullRequest) PullRequest {
	out := PullRequest{Number: pr.Index, URL: pr.HTMLURL, Title: pr.Title, Body: pr.Body, State: StateOpen}
	if pr.Head != nil {
		out.Head = pr.Head.Ref
	}
	if pr.Base != nil {
		out.Base = pr.Base.Ref
	}
	switch {
	case pr.HasMerged:
		out.State = StateMerged
	case pr.State == giteasdk.StateClosed:
		out.State = StateClosed
	}
	return out
}

// githubClient uses go-github.
type githubClient struct {
	c    *gh.Client
	repo Repository
}

func (g *githubClient) PullRequests(ctx context.Context, headPrefix string) ([]PullRequest, error) {
	var out []PullRequest
	opts := &gh.PullRequestListOptions{State: "all", Sort: "created", Direction: "desc", ListOptions: gh.ListOptions{PerPage: 100}}
	for page := 0; page < 20; page++ {
		prs, resp, err := g.c.PullRequests.List(ctx, g.repo.Owner, g.repo.Name, opts)
		if err != nil {
			return nil, fmt.Errorf("list pull requests of %s/%s: %w", g.repo.Owner, g.repo.Name, err)
		}
		for _, pr := range prs {
			if strings.HasPrefix(pr.GetHead().GetRef(), headPrefix) {
				out = append(out, fromGitHub(pr))
			}
		}
		if resp == nil || resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	sortNewestFirst(out)
	return out, nil
}

func (g *githubClient) Create(ctx context.Context, title, body, head, base string) (PullRequest, error) {
	pr, _, err := g.c.PullRequests.Create(ctx, g.repo.Owner, g.repo.Name, &gh.NewPullRequest{Title: &title, Body: &body, Head: &head, Base: &base})
	if err != nil {
		return PullRequest{}, fmt.Errorf("open pull request %s -> %s on %s/%s: %w", head, base, g.repo.Owner, g.repo.Name, err)
	}
	return fromGitHub(pr), nil
}

func (g *githubClient) Update(ctx context.Context, number int64, title, body string) (PullRequest, error) {
	pr, _, err := g.c.PullRequests.Edit(ctx, g.repo.Owner, g.repo.Name, int(number), &gh.PullRequest{Title: &title, Body: &body})
	if err != nil {
		return PullRequest{}, fmt.Errorf("update pull request #%d of %s/%s: %w", number, g.repo.Owner, g.repo.Name, err)
	}
	return fromGitHub(pr), nil
}

func fromGitHub(pr *gh.PullRequest) PullRequest {
	out := PullRequest{Number: int64(pr.GetNumber()), URL: pr.GetHTMLURL(), Title: pr.GetTitle(), Body: pr.GetBody(),
		Head: pr.GetHead().GetRef(), Base: pr.GetBase().GetRef(), State: StateOpen}
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

// redactURL drops credentials from a URL for messages.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	u.User = nil
	return u.String()
}
