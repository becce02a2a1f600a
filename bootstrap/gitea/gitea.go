// Package gitea runs a real Git forge, Gitea, on loopback for the local management plane and
// the tests of pull-request flows: the GitOps loop proposes changes to a fleet repository as
// pull requests that a person reviews and merges.
//
// [Start] runs the Gitea binary that `make tools` builds into bin/gitea (with its options/,
// templates/ and public/ directories copied to bin/gitea-assets), with all its state in one
// directory:
//
//   - app.ini: SQLite database, HTTP on 127.0.0.1 on a free port, offline, no SSH, no mail, no
//     registration, anonymous reading, basic authentication and API tokens, push-to-create;
//   - `gitea migrate` and `gitea admin user create --admin` for the administrator
//     ([DefaultAdminUser]), a person with a password;
//   - `gitea web`, as a process of package bootstrap/proc (its own process group, SIGKILL when
//     the plane process dies), checked healthy through /api/healthz;
//   - through the REST API: the bot user ([DefaultBotUser], an ordinary user) with an API token
//     scoped to write repositories, the repository [DefaultRepo] owned by the administrator
//     (empty, default branch main), the bot as a collaborator with write access, and a
//     protection of main that lets only the administrator push: the bot proposes changes on
//     other branches and opens pull requests, a person merges them.
//
// The helpers act as that person, with the administrator's credentials: [Forge.Publish]
// commits a directory to main with the git command-line client (isolated from the user's
// Git configuration); the pull-request helpers use the REST API with net/http.
package gitea

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"

	"github.com/clusterstack-io/clusterstack-operator/bootstrap/gitserver"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/proc"
)

const (
	// Binary is the Gitea executable's name in the bin directory.
	Binary = "gitea"
	// AssetsDir is the directory, in the bin directory, holding Gitea's options/, templates/
	// and public/ (its STATIC_ROOT_PATH).
	AssetsDir = "gitea-assets"
	// DefaultAdminUser is the administrator: the person who owns the fleet repository, may push
	// to its main branch and merges pull requests.
	DefaultAdminUser = "fleet-admin"
	// DefaultBotUser is the bot: an ordinary user with write access to the fleet repository
	// but not to its main branch, authenticated with an API token.
	DefaultBotUser = "clusterstack-bot"
	// DefaultRepo is the fleet repository, owned by the administrator.
	DefaultRepo = "fleet"
	// DefaultBranch is the default branch of the repositories, protected by Start.
	DefaultBranch = "main"
	// EmailDomain is the domain of the users' e-mail addresses (a reserved, never delivered
	// domain: the forge sends no mail).
	EmailDomain = "clusterstack.invalid"

	// mergeRetryTimeout bounds how long MergePullRequest waits for the forge to finish the
	// mergeability check of a pull request.
	mergeRetryTimeout = 30 * time.Second
	// pushSettleTimeout bounds how long WaitBranch waits for the forge to process a push.
	pushSettleTimeout = 30 * time.Second
	// hammerTime is Gitea's GRACEFUL_HAMMER_TIME: how long it lets requests in flight finish
	// after SIGTERM, below proc.DefaultStopTimeout.
	hammerTime = "5s"
)

// DefaultBotTokenScopes are the scopes of the bot's API token: push branches, open pull
// requests and read the repositories; read its own user.
var DefaultBotTokenScopes = []string{"write:repository", "read:user"}

// Options configures a forge. BinDir and StateDir are required.
type Options struct {
	// BinDir holds the Gitea binary (Binary) and its assets (AssetsDir), from `make tools`.
	BinDir string
	// StateDir is Gitea's work path: app.ini, the SQLite database, the repositories. Start
	// creates it and removes what an earlier forge left in it.
	StateDir string
	// LogFile receives the output of every gitea command, including the server's log
	// (level Warn, so refused pushes are there). Default: <StateDir>/gitea.log.
	LogFile string
	// Logger receives what Start does and how long it takes; discarded when unset.
	Logger logr.Logger
	// AdminUser is the administrator's name. Default: DefaultAdminUser.
	AdminUser string
	// BotUser is the bot's name. Default: DefaultBotUser.
	BotUser string
	// Repo is the repository Start creates for the administrator. Default: DefaultRepo.
	Repo string
	// BotTokenScopes are the scopes of the bot's token. Default: DefaultBotTokenScopes.
	BotTokenScopes []string
}

// Forge is a running Gitea. Its methods are safe for concurrent use.
type Forge struct {
	opts          Options
	log           logr.Logger
	url           string
	appIni        string
	adminPassword string
	botPassword   string
	botToken      string
	git           string
	client        *http.Client
	process       *proc.Process

	mu    sync.Mutex
	locks map[string]*sync.Mutex // one per repository: Publish runs serially per repository
}

// PullRequest is a pull request as the forge reports it.
type PullRequest struct {
	// Number is the pull request's number in its repository.
	Number int64
	// Title and Body are what its author wrote.
	Title, Body string
	// Head is the branch it proposes to merge; HeadSHA the commit that branch pointed to.
	Head, HeadSHA string
	// Base is the branch it targets.
	Base string
	// State is "open" or "closed" (merged pull requests are closed too).
	State string
	// Merged tells whether it was merged; MergeCommit is then the merge commit.
	Merged      bool
	MergeCommit string
	// Mergeable is the forge's verdict of its last check (false while it checks).
	Mergeable bool
	// Author is the user who opened it.
	Author string
	// HTMLURL is its page on the forge.
	HTMLURL string
}

// APIError is an answer of the forge's REST API other than the expected status.
type APIError struct {
	// Method and Path name the request.
	Method, Path string
	// StatusCode is the HTTP status of the answer.
	StatusCode int
	// Message is the forge's message, or the body when it has none.
	Message string
}

// Error describes the failed request.
func (e *APIError) Error() string {
	return fmt.Sprintf("forge API %s %s: %d %s: %s", e.Method, e.Path, e.StatusCode, http.StatusText(e.StatusCode), e.Message)
}

// IsNotFound tells whether err is an APIError with status 404.
func IsNotFound(err error) bool {
	var apiErr *APIError
	return errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusNotFound
}

// Missing lists what Start needs from binDir and does not find there (Binary, AssetsDir).
func Missing(binDir string) []string {
	var missing []string
	if st, err := os.Stat(filepath.Join(binDir, Binary)); err != nil || st.IsDir() {
		missing = append(missing, Binary)
	}
	for _, sub := range []string{"options", "templates"} {
		if st, err := os.Stat(filepath.Join(binDir, AssetsDir, sub)); err != nil || !st.IsDir() {
			missing = append(missing, AssetsDir)
			break
		}
	}
	return missing
}

func (o Options) withDefaults() (Options, error) {
	if o.BinDir == "" || o.StateDir == "" {
		return o, errors.New("forge: BinDir and StateDir are required")
	}
	var err error
	if o.BinDir, err = filepath.Abs(o.BinDir); err != nil {
		return o, err
	}
	if o.StateDir, err = filepath.Abs(o.StateDir); err != nil {
		return o, err
	}
	if o.LogFile == "" {
		o.LogFile = filepath.Join(o.StateDir, "gitea.log")
	}
	if o.LogFile, err = filepath.Abs(o.LogFile); err != nil {
		return o, err
	}
	if o.Logger.GetSink() == nil {
		o.Logger = logr.Discard()
	}
	if o.AdminUser == "" {
		o.AdminUser = DefaultAdminUser
	}
	if o.BotUser == "" {
		o.BotUser = DefaultBotUser
	}
	if o.Repo == "" {
		o.Repo = DefaultRepo
	}
	if o.BotTokenScopes == nil {
		o.BotTokenScopes = DefaultBotTokenScopes
	}
	return o, nil
}

// Start starts Gitea and prepares the users, the repository and its protection (see the
// package documentation). ctx bounds the start only; the forge runs until Stop. On error,
// whatever was started is stopped again.
func Start(ctx context.Context, opts Options) (_ *Forge, retErr error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if missing := Missing(opts.BinDir); len(missing) > 0 {
		return nil, fmt.Errorf("forge: %s missing in %s: run `make tools`", strings.Join(missing, ", "), opts.BinDir)
	}
	gitPath, err := exec.LookPath("git")
	if err != nil {
		return nil, fmt.Errorf("forge: find git executable: %w", err)
	}
	started := time.Now()
	f := &Forge{
		opts:   opts,
		log:    opts.Logger.WithName("forge"),
		appIni: filepath.Join(opts.StateDir, "app.ini"),
		git:    gitPath,
		client: &http.Client{Timeout: time.Minute},
		locks:  map[string]*sync.Mutex{},
	}
	defer func() {
		if retErr != nil {
			if err := f.Stop(); err != nil {
				retErr = fmt.Errorf("%w (and stopping the forge: %v)", retErr, err)
			}
		}
	}()
	if err := f.prepareStateDir(); err != nil {
		return nil, err
	}
	for _, p := range []*string{&f.adminPassword, &f.botPassword} {
		if *p, err = randomHex(16); err != nil {
			return nil, err
		}
	}
	port, err := proc.FreePort()
	if err != nil {
		return nil, fmt.Errorf("forge: %w", err)
	}
	f.url = "http://127.0.0.1:" + strconv.Itoa(port)
	if err := f.writeAppIni(port); err != nil {
		return nil, err
	}

	step := time.Now()
	if err := f.runGitea(ctx, "migrate"); err != nil {
		return nil, err
	}
	if err := f.runGitea(ctx, "admin", "user", "create", "--admin",
		"--username", opts.AdminUser, "--password", f.adminPassword,
		"--email", opts.AdminUser+"@"+EmailDomain, "--must-change-password=false"); err != nil {
		return nil, err
	}
	f.log.Info("database migrated and administrator created", "user", opts.AdminUser, "took", time.Since(step).Round(time.Millisecond))

	step = time.Now()
	f.process, err = proc.Start(proc.Spec{
		Name:    "gitea",
		Path:    filepath.Join(opts.BinDir, Binary),
		Args:    f.giteaArgs("web"),
		Env:     f.giteaEnv(),
		Dir:     opts.StateDir,
		LogFile: opts.LogFile,
	})
	if err != nil {
		return nil, fmt.Errorf("forge: %w", err)
	}
	if err := proc.WaitHTTP(ctx, f.url+"/api/healthz", f.process); err != nil {
		return nil, fmt.Errorf("forge: gitea web not healthy (log: %s): %w", opts.LogFile, err)
	}
	f.log.Info("gitea web healthy", "url", f.url, "pid", f.process.Pid(), "took", time.Since(step).Round(time.Millisecond))

	step = time.Now()
	if err := f.setUp(ctx); err != nil {
		return nil, fmt.Errorf("forge: %w (log: %s)", err, opts.LogFile)
	}
	f.log.Info("forge ready", "repository", f.RepoURL(opts.AdminUser, opts.Repo), "bot", opts.BotUser,
		"setup took", time.Since(step).Round(time.Millisecond), "took", time.Since(started).Round(time.Millisecond))
	return f, nil
}

// prepareStateDir creates the state dir and removes what an earlier forge left in it.
func (f *Forge) prepareStateDir() error {
	dir := f.opts.StateDir
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("forge: create state dir: %w", err)
	}
	for _, sub := range []string{"app.ini", "data", "custom", "log", "home"} {
		if err := os.RemoveAll(filepath.Join(dir, sub)); err != nil {
			return fmt.Errorf("forge: clean state dir: %w", err)
		}
	}
	for _, sub := range []string{"data", "custom", "log", "home"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return fmt.Errorf("forge: create state dir: %w", err)
		}
	}
	return nil
}

// writeAppIni writes Gitea's configuration for a forge on 127.0.0.1:port.
func (f *Forge) writeAppIni(port int) error {
	secretKey, err := randomHex(32)
	if err != nil {
		return err
	}
	internalToken, err := randomHex(32)
	if err != nil {
		return err
	}
	jwt := make([]byte, 32)
	if _, err := rand.Read(jwt); err != nil {
		return fmt.Errorf("forge: random secret: %w", err)
	}
	o := f.opts
	data := filepath.Join(o.StateDir, "data")
	vars := map[string]string{
		"WORK":           o.StateDir,
		"DATA":           data,
		"STATIC":         filepath.Join(o.BinDir, AssetsDir),
		"PORT":           strconv.Itoa(port),
		"URL":            f.url + "/",
		"SECRET_KEY":     secretKey,
		"INTERNAL_TOKEN": internalToken,
		"JWT_SECRET":     base64.RawURLEncoding.EncodeToString(jwt),
		"HAMMER":         hammerTime,
	}
	ini := appIniTemplate
	for k, v := range vars {
		ini = strings.ReplaceAll(ini, "${"+k+"}", v)
	}
	if err := os.WriteFile(f.appIni, []byte(ini), 0o600); err != nil {
		return fmt.Errorf("forge: write app.ini: %w", err)
	}
	return nil
}

// appIniTemplate is the forge's app.ini; ${NAME} are replaced by writeAppIni. The machines of
// this project run as root, which Gitea refuses unless told at the top of app.ini.
const appIniTemplate = `I_AM_BEING_UNSAFE_RUNNING_AS_ROOT = true
APP_NAME = ClusterStack local forge
RUN_MODE = prod
WORK_PATH = ${WORK}

[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = ${PORT}
DOMAIN = 127.0.0.1
ROOT_URL = ${URL}
LOCAL_ROOT_URL = ${URL}
APP_DATA_PATH = ${DATA}
STATIC_ROOT_PATH = ${STATIC}
OFFLINE_MODE = true
DISABLE_SSH = true
START_SSH_SERVER = false
LFS_START_SERVER = false
GRACEFUL_HAMMER_TIME = ${HAMMER}

[database]
DB_TYPE = sqlite3
PATH = ${DATA}/gitea.db
SQLITE_JOURNAL_MODE = WAL

[repository]
ROOT = ${DATA}/repositories
DEFAULT_BRANCH = main
DEFAULT_PRIVATE = public
ENABLE_PUSH_CREATE_USER = true
ENABLE_PUSH_CREATE_ORG = true
DEFAULT_PUSH_CREATE_PRIVATE = false

[security]
INSTALL_LOCK = true
SECRET_KEY = ${SECRET_KEY}
INTERNAL_TOKEN = ${INTERNAL_TOKEN}
PASSWORD_COMPLEXITY = off
MIN_PASSWORD_LENGTH = 8
; Basic authentication hashes the password on every request (Gitea's default, pbkdf2 at 50,000
; iterations: tens of milliseconds of CPU each), and the suites poll the API with the admin's
; password. The forge is reached on loopback only, with random passwords: 1,000 iterations.
PASSWORD_HASH_ALGO = pbkdf2$1000$50

[oauth2]
JWT_SECRET = ${JWT_SECRET}

[service]
DISABLE_REGISTRATION = true
REQUIRE_SIGNIN_VIEW = false
ENABLE_BASIC_AUTHENTICATION = true
ENABLE_NOTIFY_MAIL = false
DEFAULT_KEEP_EMAIL_PRIVATE = true

[mailer]
ENABLED = false

[session]
PROVIDER = memory

[cache]
ADAPTER = memory

[queue]
TYPE = channel

[indexer]
ISSUE_INDEXER_TYPE = db
REPO_INDEXER_ENABLED = false

[actions]
ENABLED = false

[packages]
ENABLED = false

[api]
ENABLE_SWAGGER = false

[webhook]
; Webhooks may call receivers on loopback (the plane's processes).
ALLOWED_HOST_LIST = loopback

[cron.update_checker]
ENABLED = false

[log]
MODE = console
LEVEL = Warn
ROOT_PATH = ${WORK}/log
logger.router.MODE =
logger.access.MODE =
`

// giteaArgs are the arguments of a gitea subcommand with this forge's configuration.
func (f *Forge) giteaArgs(args ...string) []string {
	return append([]string{"--config", f.appIni, "--work-path", f.opts.StateDir}, args...)
}

// giteaEnv isolates gitea (and the git processes it runs) from the user's environment.
func (f *Forge) giteaEnv() []string {
	return []string{
		"GITEA_WORK_DIR=" + f.opts.StateDir,
		"GITEA_CUSTOM=" + filepath.Join(f.opts.StateDir, "custom"),
		"HOME=" + filepath.Join(f.opts.StateDir, "home"),
		"GIT_CONFIG_NOSYSTEM=1",
	}
}

// runGitea runs a gitea subcommand to completion, its output appended to the log file. Like
// the plane's processes, it gets SIGKILL if the plane process dies.
func (f *Forge) runGitea(ctx context.Context, args ...string) error {
	if err := os.MkdirAll(filepath.Dir(f.opts.LogFile), 0o755); err != nil {
		return fmt.Errorf("forge: log directory: %w", err)
	}
	logf, err := os.OpenFile(f.opts.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("forge: open log: %w", err)
	}
	defer func() { _ = logf.Close() }()
	var out bytes.Buffer
	w := io.MultiWriter(logf, &out)
	cmd := exec.CommandContext(ctx, filepath.Join(f.opts.BinDir, Binary), f.giteaArgs(args...)...)
	cmd.Dir = f.opts.StateDir
	cmd.Env = append(os.Environ(), f.giteaEnv()...)
	cmd.Stdout, cmd.Stderr = w, w
	cmd.WaitDelay = 5 * time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	proc.OnSpawnerThread(func() { err = cmd.Start() })
	if err == nil {
		err = cmd.Wait()
	}
	if err != nil {
		return fmt.Errorf("forge: gitea %s: %w: %s (log: %s)", args[0], err, lastLines(out.String(), 5), f.opts.LogFile)
	}
	return nil
}

// setUp creates the bot, its token, the repository, the bot's access and main's protection.
func (f *Forge) setUp(ctx context.Context) error {
	o := f.opts
	admin := f.adminAuth()
	mustChange := false
	if err := f.call(ctx, admin, http.MethodPost, "/admin/users", map[string]any{
		"username":             o.BotUser,
		"email":                o.BotUser + "@" + EmailDomain,
		"password":             f.botPassword,
		"must_change_password": &mustChange,
		"visibility":           "public",
	}, http.StatusCreated, nil); err != nil {
		return fmt.Errorf("create bot user: %w", err)
	}
	var tok struct {
		Token string `json:"sha1"`
	}
	if err := f.call(ctx, basicAuth(o.BotUser, f.botPassword), http.MethodPost, "/users/"+url.PathEscape(o.BotUser)+"/tokens", map[string]any{
		"name":   o.BotUser,
		"scopes": o.BotTokenScopes,
	}, http.StatusCreated, &tok); err != nil {
		return fmt.Errorf("create the bot's token: %w", err)
	}
	if tok.Token == "" {
		return errors.New("create the bot's token: the forge returned no token")
	}
	f.botToken = tok.Token
	if err := f.CreateRepo(ctx, o.Repo); err != nil {
		return err
	}
	if err := f.AddCollaborator(ctx, o.AdminUser, o.Repo, o.BotUser, "write"); err != nil {
		return err
	}
	return f.ProtectBranch(ctx, o.AdminUser, o.Repo, DefaultBranch, []string{o.AdminUser})
}

// URL is the forge's base URL, like "http://127.0.0.1:34567" (no trailing slash).
func (f *Forge) URL() string { return f.url }

// APIURL is the base URL of the forge's REST API (URL()+"/api/v1").
func (f *Forge) APIURL() string { return f.url + "/api/v1" }

// RepoURL is the HTTP clone URL of repository owner/repo, whether or not it exists.
func (f *Forge) RepoURL(owner, repo string) string {
	return f.url + "/" + url.PathEscape(owner) + "/" + url.PathEscape(repo) + ".git"
}

// AdminUser is the administrator's user name.
func (f *Forge) AdminUser() string { return f.opts.AdminUser }

// AdminPassword is the administrator's password (random, per Start).
func (f *Forge) AdminPassword() string { return f.adminPassword }

// BotUser is the bot's user name.
func (f *Forge) BotUser() string { return f.opts.BotUser }

// BotToken is the bot's API token (scopes Options.BotTokenScopes). It also authenticates Git
// over HTTP, as the password of basic authentication with the bot's user name.
func (f *Forge) BotToken() string { return f.botToken }

// Owner is the owner of the fleet repository: the administrator.
func (f *Forge) Owner() string { return f.opts.AdminUser }

// Repo is the fleet repository's name.
func (f *Forge) Repo() string { return f.opts.Repo }

// StateDir is Gitea's work path.
func (f *Forge) StateDir() string { return f.opts.StateDir }

// LogFile is where Gitea's output goes.
func (f *Forge) LogFile() string { return f.opts.LogFile }

// Process is the running `gitea web` (nil before Start got to it).
func (f *Forge) Process() *proc.Process { return f.process }

// Stop stops `gitea web` (SIGTERM to its process group, SIGKILL after
// proc.DefaultStopTimeout). It is idempotent and safe on a partly started forge.
func (f *Forge) Stop() error {
	if f == nil || f.process == nil {
		return nil
	}
	if err := f.process.Stop(proc.DefaultStopTimeout); err != nil {
		return fmt.Errorf("forge: %w", err)
	}
	return nil
}

// CreateRepo creates the empty public repository name owned by the administrator, with
// default branch main. It exists once its first branch is pushed (see Publish).
func (f *Forge) CreateRepo(ctx context.Context, name string) error {
	if err := f.call(ctx, f.adminAuth(), http.MethodPost, "/user/repos", map[string]any{
		"name":           name,
		"auto_init":      false,
		"private":        false,
		"default_branch": DefaultBranch,
	}, http.StatusCreated, nil); err != nil {
		return fmt.Errorf("create repository %s/%s: %w", f.opts.AdminUser, name, err)
	}
	return nil
}

// AddCollaborator gives user permission ("read", "write" or "admin") on owner/repo.
func (f *Forge) AddCollaborator(ctx context.Context, owner, repo, user, permission string) error {
	if err := f.call(ctx, f.adminAuth(), http.MethodPut, repoPath(owner, repo)+"/collaborators/"+url.PathEscape(user),
		map[string]any{"permission": permission}, http.StatusNoContent, nil); err != nil {
		return fmt.Errorf("make %s a collaborator of %s/%s: %w", user, owner, repo, err)
	}
	return nil
}

// ProtectBranch protects the branches of owner/repo that match pattern (a branch name or a
// glob): only the users of pushWhitelist may push to them (none when empty), no one may
// force-push, and they change otherwise only by merging pull requests. An existing rule for
// the pattern is updated.
func (f *Forge) ProtectBranch(ctx context.Context, owner, repo, pattern string, pushWhitelist []string) error {
	if pushWhitelist == nil {
		pushWhitelist = []string{}
	}
	rule := map[string]any{
		"enable_push":              true,
		"enable_push_whitelist":    true,
		"push_whitelist_usernames": pushWhitelist,
		"enable_force_push":        false,
	}
	auth := f.adminAuth()
	rulePath := repoPath(owner, repo) + "/branch_protections/" + url.PathEscape(pattern)
	err := f.call(ctx, auth, http.MethodGet, rulePath, nil, http.StatusOK, nil)
	switch {
	case err == nil:
		err = f.call(ctx, auth, http.MethodPatch, rulePath, rule, http.StatusOK, nil)
	case IsNotFound(err):
		rule["rule_name"] = pattern
		err = f.call(ctx, auth, http.MethodPost, repoPath(owner, repo)+"/branch_protections", rule, http.StatusCreated, nil)
	}
	if err != nil {
		return fmt.Errorf("protect %s in %s/%s: %w", pattern, owner, repo, err)
	}
	return nil
}

// Publish makes the content of srcDir the whole content of branch main of owner/repo, as one
// new commit (also when nothing changed) with message, authored and pushed by the
// administrator, and returns the commit once the forge's API shows it (WaitBranch). The
// first Publish creates main, and the repository when it does not exist (push-to-create,
// public). It pushes as a person would: main's protection lets the administrator push.
func (f *Forge) Publish(ctx context.Context, owner, repo, srcDir, message string) (string, error) {
	if st, err := os.Stat(srcDir); err != nil || !st.IsDir() {
		return "", fmt.Errorf("publish to %s/%s: source %q is not a directory", owner, repo, srcDir)
	}
	if message == "" {
		message = "Publish " + filepath.Base(srcDir)
	}
	lock := f.repoLock(owner + "/" + repo)
	lock.Lock()
	defer lock.Unlock()

	tmp, err := os.MkdirTemp("", "forge-publish-")
	if err != nil {
		return "", fmt.Errorf("create work tree: %w", err)
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	work := filepath.Join(tmp, "work")
	remote := f.RepoURL(owner, repo)
	run := func(dir string, args ...string) (string, error) {
		return f.runGit(ctx, dir, f.opts.AdminUser, f.adminPassword, args...)
	}

	if _, err := run("", "init", "--quiet", "-b", DefaultBranch, work); err != nil {
		return "", fmt.Errorf("publish to %s: %w", remote, err)
	}
	if _, err := run(work, "remote", "add", "origin", remote); err != nil {
		return "", fmt.Errorf("publish to %s: %w", remote, err)
	}
	// A repository that does not exist yet is created by the push (push-to-create).
	exists := true
	if err := f.call(ctx, f.adminAuth(), http.MethodGet, repoPath(owner, repo), nil, http.StatusOK, nil); IsNotFound(err) {
		exists = false
	} else if err != nil {
		return "", fmt.Errorf("publish to %s: %w", remote, err)
	}
	heads := ""
	if exists {
		if heads, err = run(work, "ls-remote", "--heads", "origin", "refs/heads/"+DefaultBranch); err != nil {
			return "", fmt.Errorf("publish to %s: list branches: %w", remote, err)
		}
	}
	if strings.TrimSpace(heads) != "" {
		if _, err := run(work, "fetch", "--quiet", "--no-tags", "origin", DefaultBranch); err != nil {
			return "", fmt.Errorf("publish to %s: fetch %s: %w", remote, DefaultBranch, err)
		}
		if _, err := run(work, "reset", "--quiet", "--hard", "FETCH_HEAD"); err != nil {
			return "", fmt.Errorf("publish to %s: check out %s: %w", remote, DefaultBranch, err)
		}
	}
	if err := gitserver.ReplaceTree(work, "", srcDir); err != nil {
		return "", fmt.Errorf("publish %s to %s: %w", srcDir, remote, err)
	}
	if _, err := run(work, "add", "--all"); err != nil {
		return "", fmt.Errorf("publish to %s: %w", remote, err)
	}
	if _, err := run(work, "commit", "--quiet", "--allow-empty", "-m", message); err != nil {
		return "", fmt.Errorf("publish to %s: commit: %w", remote, err)
	}
	if _, err := run(work, "push", "--quiet", "origin", "refs/heads/"+DefaultBranch+":refs/heads/"+DefaultBranch); err != nil {
		return "", fmt.Errorf("publish to %s: push: %w", remote, err)
	}
	out, err := run(work, "rev-parse", "HEAD")
	if err != nil {
		return "", fmt.Errorf("publish to %s: %w", remote, err)
	}
	commit := strings.TrimSpace(out)
	if err := f.WaitBranch(ctx, owner, repo, DefaultBranch, commit); err != nil {
		return "", fmt.Errorf("publish to %s: %w", remote, err)
	}
	return commit, nil
}

// WaitBranch waits until the forge's API shows branch of owner/repo at commit (up to 30 s,
// or until ctx is done). The forge processes a push after accepting it: until then the API
// may not know the branch (opening a pull request from it fails), and on a repository's
// first push it answers 500 for its branches.
func (f *Forge) WaitBranch(ctx context.Context, owner, repo, branch, commit string) error {
	ctx, cancel := context.WithTimeout(ctx, pushSettleTimeout)
	defer cancel()
	for {
		head, err := f.Head(ctx, owner, repo, branch)
		if err == nil && head == commit {
			return nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = fmt.Errorf("at %s", head)
			}
			return fmt.Errorf("wait for %s of %s/%s at %s: %w (last: %v)", branch, owner, repo, commit, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Head returns the commit that branch of owner/repo points to; an error for which IsNotFound
// holds when the branch (or the repository) does not exist.
func (f *Forge) Head(ctx context.Context, owner, repo, branch string) (string, error) {
	var b struct {
		Commit struct {
			ID string `json:"id"`
		} `json:"commit"`
	}
	if err := f.call(ctx, f.adminAuth(), http.MethodGet, repoPath(owner, repo)+"/branches/"+url.PathEscape(branch), nil, http.StatusOK, &b); err != nil {
		return "", fmt.Errorf("head of %s in %s/%s: %w", branch, owner, repo, err)
	}
	return b.Commit.ID, nil
}

// apiPullRequest is the part of the forge's pull request the helpers read.
type apiPullRequest struct {
	Number      int64  `json:"number"`
	Title       string `json:"title"`
	Body        string `json:"body"`
	State       string `json:"state"`
	Merged      bool   `json:"merged"`
	MergeCommit string `json:"merge_commit_sha"`
	Mergeable   bool   `json:"mergeable"`
	HTMLURL     string `json:"html_url"`
	User        struct {
		Login string `json:"login"`
	} `json:"user"`
	Head struct {
		Ref string `json:"ref"`
		SHA string `json:"sha"`
	} `json:"head"`
	Base struct {
		Ref string `json:"ref"`
	} `json:"base"`
}

func (p apiPullRequest) public() PullRequest {
	return PullRequest{
		Number: p.Number, Title: p.Title, Body: p.Body,
		Head: p.Head.Ref, HeadSHA: p.Head.SHA, Base: p.Base.Ref,
		State: p.State, Merged: p.Merged, MergeCommit: p.MergeCommit, Mergeable: p.Mergeable,
		Author: p.User.Login, HTMLURL: p.HTMLURL,
	}
}

// pageSize is the page size of list calls (Gitea's default maximum).
const pageSize = 50

// PullRequests lists the pull requests of owner/repo in state "open" (also when state is
// empty), "closed" or "all", newest first.
func (f *Forge) PullRequests(ctx context.Context, owner, repo, state string) ([]PullRequest, error) {
	if state == "" {
		state = "open"
	}
	var out []PullRequest
	for page := 1; ; page++ {
		var prs []apiPullRequest
		path := fmt.Sprintf("%s/pulls?state=%s&sort=newest&limit=%d&page=%d", repoPath(owner, repo), url.QueryEscape(state), pageSize, page)
		if err := f.call(ctx, f.adminAuth(), http.MethodGet, path, nil, http.StatusOK, &prs); err != nil {
			return nil, fmt.Errorf("list pull requests of %s/%s: %w", owner, repo, err)
		}
		for _, p := range prs {
			out = append(out, p.public())
		}
		if len(prs) < pageSize {
			return out, nil
		}
	}
}

// PullRequest returns pull request number of owner/repo.
func (f *Forge) PullRequest(ctx context.Context, owner, repo string, number int64) (PullRequest, error) {
	var p apiPullRequest
	if err := f.call(ctx, f.adminAuth(), http.MethodGet, pullPath(owner, repo, number), nil, http.StatusOK, &p); err != nil {
		return PullRequest{}, fmt.Errorf("pull request %s/%s#%d: %w", owner, repo, number, err)
	}
	return p.public(), nil
}

// PullRequestDiff returns the unified diff of pull request number of owner/repo.
func (f *Forge) PullRequestDiff(ctx context.Context, owner, repo string, number int64) (string, error) {
	body, err := f.request(ctx, f.adminAuth(), http.MethodGet, pullPath(owner, repo, number)+".diff", nil, http.StatusOK)
	if err != nil {
		return "", fmt.Errorf("diff of pull request %s/%s#%d: %w", owner, repo, number, err)
	}
	return string(body), nil
}

// MergePullRequest merges pull request number of owner/repo with a merge commit, as the
// administrator. The forge checks a new pull request's mergeability in the background; until
// it has, MergePullRequest retries (up to 30 s).
func (f *Forge) MergePullRequest(ctx context.Context, owner, repo string, number int64) error {
	deadline := time.Now().Add(mergeRetryTimeout)
	for {
		err := f.call(ctx, f.adminAuth(), http.MethodPost, pullPath(owner, repo, number)+"/merge",
			map[string]any{"do": "merge"}, http.StatusOK, nil)
		var apiErr *APIError
		if err == nil || !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusMethodNotAllowed ||
			!strings.Contains(apiErr.Message, "try again later") || time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("merge pull request %s/%s#%d: %w", owner, repo, number, err)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("merge pull request %s/%s#%d: %w (last: %v)", owner, repo, number, ctx.Err(), err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// ClosePullRequest closes pull request number of owner/repo without merging it.
func (f *Forge) ClosePullRequest(ctx context.Context, owner, repo string, number int64) error {
	if err := f.call(ctx, f.adminAuth(), http.MethodPatch, pullPath(owner, repo, number),
		map[string]any{"state": "closed"}, http.StatusCreated, nil); err != nil {
		return fmt.Errorf("close pull request %s/%s#%d: %w", owner, repo, number, err)
	}
	return nil
}

func repoPath(owner, repo string) string {
	return "/repos/" + url.PathEscape(owner) + "/" + url.PathEscape(repo)
}

func pullPath(owner, repo string, number int64) string {
	return repoPath(owner, repo) + "/pulls/" + strconv.FormatInt(number, 10)
}

// authorizer sets a request's credentials.
type authorizer func(*http.Request)

func basicAuth(user, password string) authorizer {
	return func(r *http.Request) { r.SetBasicAuth(user, password) }
}

func (f *Forge) adminAuth() authorizer { return basicAuth(f.opts.AdminUser, f.adminPassword) }

// call sends a JSON request to the REST API path (relative to /api/v1) and decodes the
// answer into out (when not nil); an answer other than want is an *APIError.
func (f *Forge) call(ctx context.Context, auth authorizer, method, path string, in any, want int, out any) error {
	body, err := f.request(ctx, auth, method, path, in, want)
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("forge API %s %s: decode answer: %w", method, path, err)
	}
	return nil
}

// request sends a request to the REST API path and returns the body of an answer with status
// want; any other answer is an *APIError.
func (f *Forge) request(ctx context.Context, auth authorizer, method, path string, in any, want int) ([]byte, error) {
	var reqBody io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		reqBody = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, f.APIURL()+path, reqBody)
	if err != nil {
		return nil, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if auth != nil {
		auth(req)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("forge API %s %s: %w", method, path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("forge API %s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode != want {
		msg := strings.TrimSpace(string(body))
		var m struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(body, &m) == nil && m.Message != "" {
			msg = m.Message
		}
		return nil, &APIError{Method: method, Path: path, StatusCode: resp.StatusCode, Message: msg}
	}
	return body, nil
}

func (f *Forge) repoLock(name string) *sync.Mutex {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, ok := f.locks[name]
	if !ok {
		l = &sync.Mutex{}
		f.locks[name] = l
	}
	return l
}

// runGit runs git with args in dir (the current directory when empty), isolated from the
// user's Git configuration, committing as user and authenticating to the forge over HTTP as
// user with password (a header set through the environment, so that the credentials appear
// neither in URLs nor in errors), and returns its standard output.
func (f *Forge) runGit(ctx context.Context, dir, user, password string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, f.git, args...)
	cmd.Dir = dir
	header := "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
	cmd.Env = append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_TERMINAL_PROMPT=0",
		"GIT_CONFIG_COUNT=1",
		"GIT_CONFIG_KEY_0=http.extraHeader",
		"GIT_CONFIG_VALUE_0="+header,
		"GIT_AUTHOR_NAME="+user,
		"GIT_AUTHOR_EMAIL="+user+"@"+EmailDomain,
		"GIT_COMMITTER_NAME="+user,
		"GIT_COMMITTER_EMAIL="+user+"@"+EmailDomain,
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

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("forge: random secret: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// lastLines returns the last n non-empty lines of s, joined by " | ".
func lastLines(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// CommitFile commits content as path on branch (which must exist) through the REST API, as
// the administrator (a person editing a file in the web interface), or as the bot when asBot
// is set. It returns the forge's answer as an error when the commit is refused.
func (f *Forge) CommitFile(ctx context.Context, owner, repo, branch, path, content, message string, asBot bool) error {
	auth := f.adminAuth()
	if asBot {
		auth = basicAuth(f.opts.BotUser, f.botToken)
	}
	var existing struct {
		SHA string `json:"sha"`
	}
	filePath := repoPath(owner, repo) + "/contents/" + path
	method, want := http.MethodPost, http.StatusCreated
	if err := f.call(ctx, auth, http.MethodGet, filePath+"?ref="+url.QueryEscape(branch), nil, http.StatusOK, &existing); err == nil && existing.SHA != "" {
		method, want = http.MethodPut, http.StatusOK
	}
	in := map[string]any{
		"branch": branch, "message": message, "content": base64.StdEncoding.EncodeToString([]byte(content)),
	}
	if existing.SHA != "" {
		in["sha"] = existing.SHA
	}
	return f.call(ctx, auth, method, filePath, in, want, nil)
}

// UnprotectBranch removes the branch protection rule named pattern.
func (f *Forge) UnprotectBranch(ctx context.Context, owner, repo, pattern string) error {
	return f.call(ctx, f.adminAuth(), http.MethodDelete, repoPath(owner, repo)+"/branch_protections/"+url.PathEscape(pattern), nil, http.StatusNoContent, nil)
}
