// Package gitserver runs a real Git smart-HTTP server on loopback for the local management
// plane and the end-to-end tests.
//
// The server is Go's net/http/cgi in front of `git http-backend`, the same CGI program that
// Apache or nginx put in front of Git repositories. Every repository under the root is
// exported (GIT_HTTP_EXPORT_ALL) and accepts pushes over HTTP (http.receivepack=true), without
// authentication: bind it to loopback only.
//
// Repositories are bare, created with HEAD pointing to refs/heads/main, so that a Flux
// GitRepository that follows a branch or a tag finds what [Server.Publish] pushed.
//
// Publish, DeleteTag and Head use the git command-line client, isolated from the user's and
// the system's Git configuration.
package gitserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// DefaultBranch is the branch that CreateRepo points HEAD to and that Publish commits to.
const DefaultBranch = "main"

// shutdownTimeout bounds how long Close waits for requests in flight.
const shutdownTimeout = 5 * time.Second

// repoSegment is what one slash-separated segment of a repository name may look like.
var repoSegment = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Server is a running Git smart-HTTP server. It is safe for concurrent use.
//
// [Server.Stop] and [Server.Restart] take it off the network and put it back on the same
// address, with the same repositories (to test clients against a Git server that goes away);
// [Server.Close] ends it for good.
type Server struct {
	root    string
	git     string
	url     string
	addr    string // host:port it serves on, kept for Restart
	handler http.Handler
	logger  *log.Logger
	logOut  io.Writer

	mu    sync.Mutex
	locks map[string]*sync.Mutex // one per repository: Publish runs serially per repository

	// serveMu guards the serving state.
	serveMu sync.Mutex
	srv     *http.Server // nil while stopped
	served  chan error   // Serve's result for srv
	closed  bool

	closeOnce sync.Once
	closeErr  error
}

// Option configures a Server.
type Option func(*Server)

// WithLogOutput sends the CGI program's standard error and the server's error log to w
// instead of discarding them.
func WithLogOutput(w io.Writer) Option {
	return func(s *Server) { s.logOut = w }
}

// Start serves the bare repositories under root over HTTP on addr (for example
// "127.0.0.1:0" for a free loopback port). root is created if missing.
func Start(root, addr string, opts ...Option) (*Server, error) {
	gitPath, err := exec.LookPath("git")
	if err != nil {
		return nil, fmt.Errorf("find git executable: %w", err)
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("resolve git server root %q: %w", root, err)
	}
	if err := os.MkdirAll(absRoot, 0o755); err != nil {
		return nil, fmt.Errorf("create git server root: %w", err)
	}
	s := &Server{
		root:   absRoot,
		git:    gitPath,
		logOut: io.Discard,
		locks:  map[string]*sync.Mutex{},
	}
	for _, o := range opts {
		o(s)
	}

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	s.addr = ln.Addr().String()
	s.url = "http://" + s.addr

	s.logger = log.New(s.logOut, "gitserver: ", log.LstdFlags)
	backend := &cgi.Handler{
		Path: gitPath,
		Args: []string{"http-backend"},
		Root: "/",
		Env: []string{
			"GIT_PROJECT_ROOT=" + absRoot,
			"GIT_HTTP_EXPORT_ALL=1",
			"GIT_CONFIG_NOSYSTEM=1",
			"GIT_CONFIG_GLOBAL=" + os.DevNull,
		},
		InheritEnv: []string{"PATH"},
		Logger:     s.logger,
		Stderr:     s.logOut,
	}
	s.handler = s.withoutGitSuffix(backend)
	s.serve(ln)
	return s, nil
}

// serve serves on ln; the caller holds serveMu or has the only reference to s.
func (s *Server) serve(ln net.Listener) {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          s.logger,
	}
	served := make(chan error, 1)
	go func() {
		err := srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		served <- err
	}()
	s.srv, s.served = srv, served
}

// shutdown stops serving: it closes the listener (new connections are refused), waits a
// bounded time for requests in flight, then closes every connection. The caller holds serveMu.
func (s *Server) shutdown() error {
	if s.srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	var errs []error
	if err := s.srv.Shutdown(ctx); err != nil {
		_ = s.srv.Close()
		errs = append(errs, fmt.Errorf("shut down git server: %w", err))
	}
	if err := <-s.served; err != nil {
		errs = append(errs, fmt.Errorf("git server: %w", err))
	}
	s.srv, s.served = nil, nil
	return errors.Join(errs...)
}

// Stop takes the server off the network, as if it had crashed or its host were unreachable:
// connections to its address are refused until [Server.Restart]. Requests in flight get a
// bounded time to finish. The repositories stay. Stop is idempotent; after Close it does
// nothing.
func (s *Server) Stop() error {
	s.serveMu.Lock()
	defer s.serveMu.Unlock()
	return s.shutdown()
}

// Restart serves again, on the same address (URL and RepoURL do not change), after Stop. It
// does nothing while the server serves, and fails after Close or when the address was taken
// meanwhile.
func (s *Server) Restart() error {
	s.serveMu.Lock()
	defer s.serveMu.Unlock()
	if s.closed {
		return errors.New("restart git server: it was closed")
	}
	if s.srv != nil {
		return nil
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("restart git server: listen on %s: %w", s.addr, err)
	}
	s.serve(ln)
	return nil
}

// Serving tells whether the server serves (it was not stopped, or was restarted since, and
// not closed).
func (s *Server) Serving() bool {
	s.serveMu.Lock()
	defer s.serveMu.Unlock()
	return s.srv != nil
}

// gitPathMarkers start the part of a smart-HTTP or dumb-HTTP URL path that follows the
// repository.
var gitPathMarkers = []string{"/info/refs", "/git-upload-pack", "/git-receive-pack", "/HEAD", "/objects/"}

// withoutGitSuffix lets clients name a repository without its ".git" suffix, as Git forges
// do: "/stacks/info/refs" is served from the repository "stacks.git".
func (s *Server) withoutGitSuffix(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		for _, m := range gitPathMarkers {
			i := strings.Index(p, m)
			if i <= 0 {
				continue
			}
			repo := p[:i]
			if !strings.HasSuffix(repo, ".git") {
				if st, err := os.Stat(filepath.Join(s.root, filepath.FromSlash(repo)+".git")); err == nil && st.IsDir() {
					r = r.Clone(r.Context())
					r.URL.Path = repo + ".git" + p[i:]
					r.URL.RawPath = ""
				}
			}
			break
		}
		next.ServeHTTP(w, r)
	})
}

// URL is the base URL of the server, like "http://127.0.0.1:34567".
func (s *Server) URL() string { return s.url }

// Root is the directory holding the bare repositories.
func (s *Server) Root() string { return s.root }

// RepoURL is the clone URL of repository name, whether or not it exists. The URL without
// the ".git" suffix (URL()+"/"+name) works too.
func (s *Server) RepoURL(name string) string { return s.url + "/" + name + ".git" }

// CreateRepo creates the bare repository name (if it does not exist yet) with HEAD pointing to
// main and pushes over HTTP enabled, and returns its clone URL. name may contain slashes
// ("org/repo").
func (s *Server) CreateRepo(name string) (string, error) {
	dir, err := s.repoDir(name)
	if err != nil {
		return "", err
	}
	lock := s.repoLock(name)
	lock.Lock()
	defer lock.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err == nil {
		return s.RepoURL(name), nil
	}
	if _, err := s.run(ctx, "", "init", "--quiet", "--bare", "-b", DefaultBranch, dir); err != nil {
		return "", fmt.Errorf("create repository %q: %w", name, err)
	}
	if _, err := s.run(ctx, "", "--git-dir", dir, "config", "http.receivepack", "true"); err != nil {
		return "", fmt.Errorf("enable pushes to repository %q: %w", name, err)
	}
	return s.RepoURL(name), nil
}

// Publish makes the content of srcDir the content of pathInRepo (a slash-separated path
// relative to the repository root; "" or "." is the root) on branch main of repository repo,
// replacing whatever was there, commits, tags the commit with tag (an annotated tag; moved if
// it exists; no tag when tag is empty) and pushes branch and tag over HTTP. When the content
// is unchanged, the tag is put on the current head of main. The repository must exist.
func (s *Server) Publish(ctx context.Context, repo, srcDir, pathInRepo, tag string) error {
	return s.PublishAll(ctx, repo, Publication{SrcDir: srcDir, PathInRepo: pathInRepo, Tag: tag})
}

// Publication is one commit (and tag) of PublishAll: the content of SrcDir made the content
// of PathInRepo, tagged Tag (none when empty).
type Publication struct {
	SrcDir, PathInRepo, Tag string
}

// PublishAll publishes each publication as Publish does, one commit after the other in the
// order given, on branch main of repository repo, and pushes the branch and every tag at
// once: one fetch and one push for all of them. Nothing is pushed when one fails, or when
// there is none.
func (s *Server) PublishAll(ctx context.Context, repo string, pubs ...Publication) error {
	dir, err := s.repoDir(repo)
	if err != nil {
		return err
	}
	if len(pubs) == 0 {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err != nil {
		return fmt.Errorf("publish to repository %q: repository does not exist (CreateRepo first)", repo)
	}
	rels := make([]string, len(pubs))
	for i, p := range pubs {
		if rels[i], err = cleanRepoPath(p.PathInRepo); err != nil {
			return err
		}
		if p.Tag != "" {
			if _, err := s.run(ctx, "", "check-ref-format", "refs/tags/"+p.Tag); err != nil {
				return fmt.Errorf("publish to repository %q: invalid tag %q", repo, p.Tag)
			}
		}
		if st, err := os.Stat(p.SrcDir); err != nil || !st.IsDir() {
			return fmt.Errorf("publish to repository %q: source %q is not a directory", repo, p.SrcDir)
		}
	}

	lock := s.repoLock(repo)
	lock.Lock()
	defer lock.Unlock()

	tmp, err := os.MkdirTemp("", "gitserver-publish-")
	if err != nil {
		return fmt.Errorf("create work tree: %w", err)
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	work := filepath.Join(tmp, "work")
	url := s.RepoURL(repo)

	if _, err := s.run(ctx, "", "init", "--quiet", "-b", DefaultBranch, work); err != nil {
		return fmt.Errorf("publish to %s: %w", url, err)
	}
	if _, err := s.run(ctx, work, "remote", "add", "origin", url); err != nil {
		return fmt.Errorf("publish to %s: %w", url, err)
	}
	heads, err := s.run(ctx, work, "ls-remote", "--heads", "origin", "refs/heads/"+DefaultBranch)
	if err != nil {
		return fmt.Errorf("publish to %s: list branches: %w", url, err)
	}
	hasMain := strings.TrimSpace(heads) != ""
	if hasMain {
		if _, err := s.run(ctx, work, "fetch", "--quiet", "--no-tags", "origin", DefaultBranch); err != nil {
			return fmt.Errorf("publish to %s: fetch %s: %w", url, DefaultBranch, err)
		}
		if _, err := s.run(ctx, work, "reset", "--quiet", "--hard", "FETCH_HEAD"); err != nil {
			return fmt.Errorf("publish to %s: check out %s: %w", url, DefaultBranch, err)
		}
	}

	refspecs := []string{"refs/heads/" + DefaultBranch + ":refs/heads/" + DefaultBranch}
	tagged := map[string]bool{}
	for i, p := range pubs {
		rel := rels[i]
		if err := ReplaceTree(work, rel, p.SrcDir); err != nil {
			return fmt.Errorf("publish %s to %s at %q: %w", p.SrcDir, url, rel, err)
		}
		if _, err := s.run(ctx, work, "add", "--all"); err != nil {
			return fmt.Errorf("publish to %s: %w", url, err)
		}
		status, err := s.run(ctx, work, "status", "--porcelain")
		if err != nil {
			return fmt.Errorf("publish to %s: %w", url, err)
		}
		if strings.TrimSpace(status) != "" || !hasMain {
			msg := fmt.Sprintf("Publish %s", displayPath(rel))
			if p.Tag != "" {
				msg += " as " + p.Tag
			}
			if _, err := s.run(ctx, work, "commit", "--quiet", "--allow-empty", "-m", msg); err != nil {
				return fmt.Errorf("publish to %s: commit: %w", url, err)
			}
			hasMain = true
		}
		if p.Tag != "" {
			if _, err := s.run(ctx, work, "tag", "--force", "--annotate", "-m", p.Tag, p.Tag); err != nil {
				return fmt.Errorf("publish to %s: tag %s: %w", url, p.Tag, err)
			}
			if !tagged[p.Tag] {
				tagged[p.Tag] = true
				refspecs = append(refspecs, "+refs/tags/"+p.Tag+":refs/tags/"+p.Tag)
			}
		}
	}
	args := append([]string{"push", "--quiet", "origin"}, refspecs...)
	if _, err := s.run(ctx, work, args...); err != nil {
		return fmt.Errorf("publish to %s: push: %w", url, err)
	}
	return nil
}

// DeleteTag deletes tag from repository repo. Deleting a tag that does not exist is not an
// error.
func (s *Server) DeleteTag(ctx context.Context, repo, tag string) error {
	dir, err := s.repoDir(repo)
	if err != nil {
		return err
	}
	lock := s.repoLock(repo)
	lock.Lock()
	defer lock.Unlock()
	if _, err := s.run(ctx, "", "--git-dir", dir, "rev-parse", "--verify", "--quiet", "refs/tags/"+tag); err != nil {
		return nil // the tag does not exist: nothing to delete
	}
	if _, err := s.run(ctx, "", "--git-dir", dir, "update-ref", "-d", "refs/tags/"+tag); err != nil {
		return fmt.Errorf("delete tag %s from repository %q: %w", tag, repo, err)
	}
	return nil
}

// Head returns the commit SHA that ref (a branch, tag or other revision) names in repository
// repo.
func (s *Server) Head(ctx context.Context, repo, ref string) (string, error) {
	dir, err := s.repoDir(repo)
	if err != nil {
		return "", err
	}
	out, err := s.run(ctx, "", "--git-dir", dir, "rev-parse", "--verify", ref+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("resolve %s in repository %q: %w", ref, repo, err)
	}
	return strings.TrimSpace(out), nil
}

// Close stops the server for good (see Stop; Restart fails afterwards). It is idempotent.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.serveMu.Lock()
		defer s.serveMu.Unlock()
		s.closed = true
		s.closeErr = s.shutdown()
	})
	return s.closeErr
}

func (s *Server) repoDir(name string) (string, error) {
	if name == "" {
		return "", errors.New("repository name is empty")
	}
	for _, seg := range strings.Split(name, "/") {
		if !repoSegment.MatchString(seg) || strings.HasSuffix(seg, ".git") || strings.Contains(seg, "..") {
			return "", fmt.Errorf("invalid repository name %q", name)
		}
	}
	return filepath.Join(s.root, filepath.FromSlash(name)+".git"), nil
}

func (s *Server) repoLock(name string) *sync.Mutex {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.locks[name]
	if !ok {
		l = &sync.Mutex{}
		s.locks[name] = l
	}
	return l
}

// run runs git with args in dir (the current directory when empty), isolated from the user's
// Git configuration, and returns its standard output.
func (s *Server) run(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, s.git, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=ClusterStack local plane",
		"GIT_AUTHOR_EMAIL=local-plane@clusterstack.invalid",
		"GIT_COMMITTER_NAME=ClusterStack local plane",
		"GIT_COMMITTER_EMAIL=local-plane@clusterstack.invalid",
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// cleanRepoPath turns a slash-separated path inside a repository into a clean relative path;
// "" means the repository root.
func cleanRepoPath(p string) (string, error) {
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." || seg == ".git" {
			return "", fmt.Errorf("invalid path in repository %q", p)
		}
	}
	c := strings.TrimPrefix(path.Clean("/"+p), "/")
	return c, nil
}

func displayPath(rel string) string {
	if rel == "" {
		return "/"
	}
	return rel
}

// ReplaceTree removes rel from the Git work tree work (everything but .git when rel is "", the
// root) and copies src there: regular files with their executable bit, directories and
// symbolic links, without .git directories. The forge's Publish uses it too.
func ReplaceTree(work, rel, src string) error {
	dst := filepath.Join(work, filepath.FromSlash(rel))
	if rel == "" {
		entries, err := os.ReadDir(work)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if e.Name() == ".git" {
				continue
			}
			if err := os.RemoveAll(filepath.Join(work, e.Name())); err != nil {
				return err
			}
		}
	} else if err := os.RemoveAll(dst); err != nil {
		return err
	}
	return copyTree(src, dst)
}

// copyTree copies regular files, directories and symbolic links from src to dst, keeping the
// executable bit, and skipping .git directories.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			if d.Name() == ".git" && p != src {
				return filepath.SkipDir
			}
			return os.MkdirAll(target, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			return copyFile(p, target, info.Mode().Perm()|0o600)
		default:
			return nil // sockets, devices: not content
		}
	})
}

func copyFile(src, dst string, mode fs.FileMode) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	_, err = io.Copy(out, in)
	return err
}
