package forge

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	giteasdk "code.gitea.io/sdk/gitea"
	gh "github.com/google/go-github/v82/github"
)

func TestParseRepository(t *testing.T) {
	loopback := Policy{AllowLoopbackHTTP: true}
	for _, tc := range []struct {
		url, api string
		policy   Policy
		base     string
		owner    string
		name     string
	}{
		{"http://127.0.0.1:3000/fleet-admin/fleet.git", "", loopback, "http://127.0.0.1:3000", "fleet-admin", "fleet"},
		{"https://github.com/org/fleet", "", Policy{}, "https://github.com", "org", "fleet"},
		{"https://git.example.com/gitea/team/fleet.git", "https://git.example.com/gitea", Policy{}, "https://git.example.com/gitea", "team", "fleet"},
		{"https://git.example.com/team/fleet.git", "https://api.example.com", Policy{APIHosts: []string{"API.example.com"}}, "https://api.example.com", "team", "fleet"},
		{"https://git.example.com/team/fleet.git", "https://git.example.com:443/", Policy{}, "https://git.example.com:443", "team", "fleet"},
	} {
		r, err := ParseRepository(tc.url, tc.api, "Secret ns/bot", tc.policy)
		if err != nil || r.APIURL != tc.base || r.Owner != tc.owner || r.Name != tc.name {
			t.Errorf("ParseRepository(%s, %s) = %+v, %v", tc.url, tc.api, r, err)
		}
	}
	for _, tc := range []struct {
		url, api string
		policy   Policy
		want     string
	}{
		{"ssh://git@host/org/fleet.git", "", Policy{}, "is not an http(s) URL"},
		{"https://host/only-one", "", Policy{}, "does not end in <owner>/<repository>"},
		{"https://user:secret@host/a/b/c", "", Policy{}, "does not end in"},
		// The token never goes over plain http, but to loopback when allowed.
		{"http://gitea.example.com/o/fleet.git", "", loopback, "fleet repository URL: refusing to send credentials (from Secret ns/bot) over plain http to http://gitea.example.com/o/fleet.git: use an https URL"},
		{"http://127.0.0.1:3000/o/fleet.git", "", Policy{}, "refusing to send credentials"},
		{"https://gitea.example.com/o/fleet.git", "http://gitea.example.com", Policy{APIHosts: []string{"gitea.example.com"}}, "spec.updates.proposals.apiURL: refusing to send credentials (from Secret ns/bot) over plain http"},
		// apiURL names only the fleet repository's host or one the platform allows.
		{"https://gitea.example.com/o/fleet.git", "https://169.254.169.254", Policy{}, "spec.updates.proposals.apiURL names host 169.254.169.254, which is neither the fleet repository's host gitea.example.com nor one of the forge hosts the platform allows (none; the manager's --forge-api-hosts)"},
		{"https://gitea.example.com/o/fleet.git", "https://gitea.example.com:8443", Policy{}, "names host gitea.example.com:8443"},
		{"https://gitea.example.com/o/fleet.git", "https://user:pw@gitea.example.com", Policy{}, "without userinfo"},
	} {
		_, err := ParseRepository(tc.url, tc.api, "Secret ns/bot", tc.policy)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "pw@") {
			t.Errorf("ParseRepository(%s, %s) = %v, want an error containing %q and no credentials", tc.url, tc.api, err, tc.want)
		}
	}
}

// fakeGitea answers Gitea's version endpoint and hands every other request to h.
func fakeGitea(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/version" {
			_, _ = w.Write([]byte(`{"version":"1.26.1"}`))
			return
		}
		h(w, r)
	}))
	t.Cleanup(s.Close)
	t.Cleanup(s.CloseClientConnections) // first: lets go of the requests a handler holds
	return s
}

func giteaClientFor(t *testing.T, s *httptest.Server, timeout time.Duration) Client {
	t.Helper()
	c, err := New("gitea", Repository{APIURL: s.URL, Owner: "o", Name: "fleet"}, "s3cr3t-token",
		Options{Limits: Limits{APITimeout: timeout}, Policy: Policy{AllowLoopbackHTTP: true}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Error bodies are never repeated: the HTTP status and a short, printable reason, without the
// token.
func TestAPIErrorsAreShortAndRedacted(t *testing.T) {
	body := ""
	status := http.StatusInternalServerError
	s := fakeGitea(t, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	})
	c := giteaClientFor(t, s, 5*time.Second)
	for _, tc := range []struct {
		status    int
		body      string
		want      string
		forbidden []string
	}{
		{http.StatusInternalServerError, "<html>internal host 10.0.0.7 dump: root:x:0:0 s3cr3t-token</html>",
			"list pull requests of o/fleet on " + s.URL + ": HTTP 500 Internal Server Error", []string{"root:x", "10.0.0.7", "s3cr3t-token", "html"}},
		{http.StatusNotFound, `{"message":"The target couldn't be found.\nsecond line s3cr3t-token","url":"https://x"}`,
			"HTTP 404 Not Found: The target couldn't be found.", []string{"second line", "s3cr3t-token", "https://x"}},
		{http.StatusForbidden, `{"message":"\u001b[31mred` + strings.Repeat("A", 500) + `"}`,
			"HTTP 403 Forbidden: [31mred" + strings.Repeat("A", 112) + "…", []string{"\x1b", strings.Repeat("A", 113)}},
		{http.StatusUnauthorized, `{"message":"token s3cr3t-token is invalid"}`, "HTTP 401 Unauthorized: token *** is invalid", []string{"s3cr3t-token"}},
	} {
		status, body = tc.status, tc.body
		_, err := c.PullRequests(context.Background(), "clusterstack/")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("status %d: error %v, want %q", tc.status, err, tc.want)
			continue
		}
		for _, f := range tc.forbidden {
			if strings.Contains(err.Error(), f) {
				t.Errorf("status %d: error %q contains %q", tc.status, err, f)
			}
		}
	}
}

func TestAPIDeadline(t *testing.T) {
	s := fakeGitea(t, func(w http.ResponseWriter, r *http.Request) {
		// Headers at once, then a trickle of a body that never ends.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"login":"`))
		for {
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
			if _, err := w.Write([]byte("a")); err != nil {
				return
			}
		}
	})
	c := giteaClientFor(t, s, 400*time.Millisecond)
	err := within(t, "Me", func() error { _, err := c.Me(context.Background()); return err })
	if err == nil || !strings.Contains(err.Error(), "no answer within 400ms (the forge API deadline, --forge-api-timeout)") {
		t.Fatalf("Me = %v, want the deadline", err)
	}

	// A forge that does not even answer the SDK's version check when the client is built.
	hang := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(hang.Close)
	t.Cleanup(hang.CloseClientConnections)
	err = within(t, "New", func() error {
		_, err := New("gitea", Repository{APIURL: hang.URL, Owner: "o", Name: "fleet"}, "s3cr3t-token",
			Options{Limits: Limits{APITimeout: 300 * time.Millisecond}, Policy: Policy{AllowLoopbackHTTP: true}})
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "no answer within 300ms") {
		t.Fatalf("New = %v, want the deadline", err)
	}
}

// within runs f and fails the test when it has not returned after 20 seconds (a missing
// deadline would hold it for ever).
func within(t *testing.T, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not return within 20s: no deadline held it", what)
		return nil
	}
}

func TestAPIResponseSizeLimit(t *testing.T) {
	s := fakeGitea(t, func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"login":"`))
		chunk := []byte(strings.Repeat("a", 1<<20))
		for range 20 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	_, err := giteaClientFor(t, s, 10*time.Second).Me(context.Background())
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Me = %v, want ErrTooLarge", err)
	}
}

// The pull requests say who opened them and whether their head is in the base repository.
func TestPullRequestOrigin(t *testing.T) {
	repo := Repository{Owner: "fleet-admin", Name: "fleet"}
	base := &giteasdk.PRBranchInfo{Ref: "main", RepoID: 7, Repository: &giteasdk.Repository{ID: 7, FullName: "fleet-admin/fleet"}}
	for _, tc := range []struct {
		name string
		head *giteasdk.PRBranchInfo
		want bool
	}{
		{"same repository", &giteasdk.PRBranchInfo{Ref: "b", RepoID: 7, Repository: &giteasdk.Repository{ID: 7, FullName: "fleet-admin/fleet"}}, true},
		{"fork", &giteasdk.PRBranchInfo{Ref: "b", RepoID: 9, Repository: &giteasdk.Repository{ID: 9, FullName: "mallory/fleet"}}, false},
		{"deleted fork", &giteasdk.PRBranchInfo{Ref: "b", RepoID: 9}, false},
		{"fork claiming the base's ID", &giteasdk.PRBranchInfo{Ref: "b", RepoID: 7, Repository: &giteasdk.Repository{ID: 9, FullName: "mallory/fleet"}}, false},
	} {
		pr := fromGitea(&giteasdk.PullRequest{Index: 1, Head: tc.head, Base: base, Poster: &giteasdk.User{UserName: "mallory"}}, repo)
		if pr.FromBase != tc.want || pr.Author != "mallory" {
			t.Errorf("gitea %s: FromBase %v, Author %q", tc.name, pr.FromBase, pr.Author)
		}
	}
	ghRepo := func(id int64, name string) *gh.Repository { return &gh.Repository{ID: &id, FullName: &name} }
	login := "fleet-bot"
	for _, tc := range []struct {
		name string
		head *gh.Repository
		want bool
	}{
		{"same repository", ghRepo(7, "fleet-admin/fleet"), true},
		{"fork", ghRepo(9, "mallory/fleet"), false},
		{"deleted fork", nil, false},
	} {
		pr := fromGitHub(&gh.PullRequest{Head: &gh.PullRequestBranch{Repo: tc.head}, Base: &gh.PullRequestBranch{Repo: ghRepo(7, "fleet-admin/fleet")},
			User: &gh.User{Login: &login}}, repo)
		if pr.FromBase != tc.want || pr.Author != "fleet-bot" {
			t.Errorf("github %s: FromBase %v, Author %q", tc.name, pr.FromBase, pr.Author)
		}
	}
}
