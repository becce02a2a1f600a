package install_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// dockerStage is one stage of a Dockerfile: its FROM line and instructions (continuation lines
// joined).
type dockerStage struct {
	from  string
	lines []string
}

// parseDockerfile splits the Dockerfile at path into stages; comments and blank lines are left
// out.
func parseDockerfile(t *testing.T, path string) []dockerStage {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var stages []dockerStage
	var cont string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			cont += strings.TrimSuffix(line, "\\") + " "
			continue
		}
		line, cont = cont+line, ""
		if strings.HasPrefix(strings.ToUpper(line), "FROM ") {
			stages = append(stages, dockerStage{from: line})
			continue
		}
		if len(stages) == 0 {
			t.Fatalf("%s: %q before the first FROM", path, line)
		}
		stages[len(stages)-1].lines = append(stages[len(stages)-1].lines, line)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return stages
}

// TestDockerfile: the manager image is built static (CGO_ENABLED=0) with the Go version of
// go.mod, from every directory of this module the manager imports, into a distroless static
// image that runs as the non-root user 65532. (There is no Docker engine on the project's
// machines; this keeps the file right for release builds.)
func TestDockerfile(t *testing.T) {
	root := repoRoot(t)
	stages := parseDockerfile(t, filepath.Join(root, "Dockerfile"))
	if len(stages) != 2 {
		t.Fatalf("Dockerfile has %d stages, want a builder and the runtime image", len(stages))
	}
	builder, final := stages[0], stages[1]

	// Runtime: distroless static, non-root.
	if !regexp.MustCompile(`^FROM gcr\.io/distroless/static(-debian\d+)?:nonroot(@sha256:[0-9a-f]+)?$`).MatchString(final.from) {
		t.Errorf("runtime image %q, want gcr.io/distroless/static:nonroot", final.from)
	}
	var users []string
	for _, l := range final.lines {
		if strings.HasPrefix(l, "USER ") {
			users = append(users, strings.TrimPrefix(l, "USER "))
		}
	}
	if !slices.Equal(users, []string{"65532:65532"}) {
		t.Errorf("runtime stage USER %v, want exactly 65532:65532 (distroless nonroot)", users)
	}
	if i := slices.IndexFunc(final.lines, func(l string) bool { return strings.HasPrefix(l, "ENTRYPOINT") }); i < 0 || final.lines[i] != `ENTRYPOINT ["/manager"]` {
		t.Errorf("runtime stage does not run /manager: %v", final.lines)
	}

	// Builder: the Go version of go.mod, a static build of ./cmd.
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	if len(m) != 2 {
		t.Fatal("go.mod has no go directive")
	}
	if goVersion := string(m[1]); !strings.HasPrefix(builder.from, "FROM golang:"+goVersion+" ") {
		t.Errorf("builder %q, want golang:%s (go.mod)", builder.from, goVersion)
	}
	build := slices.IndexFunc(builder.lines, func(l string) bool { return strings.Contains(l, "go build") })
	if build < 0 {
		t.Fatal("the builder runs no go build")
	}
	if l := builder.lines[build]; !strings.Contains(l, "CGO_ENABLED=0 ") || !strings.HasSuffix(l, " ./cmd") {
		t.Errorf("the build %q is not a static build (CGO_ENABLED=0) of ./cmd", l)
	}

	// Every directory of this module the manager imports is copied in before the build, and
	// not excluded by .dockerignore.
	copied := map[string]bool{}
	for _, l := range builder.lines[:build] {
		f := strings.Fields(l)
		if f[0] == "COPY" && !strings.HasPrefix(f[1], "--") {
			for _, src := range f[1 : len(f)-1] {
				copied[strings.TrimSuffix(src, "/")] = true
			}
		}
	}
	for _, need := range []string{"go.mod", "go.sum"} {
		if !copied[need] {
			t.Errorf("the builder does not copy %s", need)
		}
	}
	cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "./cmd")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps ./cmd: %v", err)
	}
	ignored, _ := os.ReadFile(filepath.Join(root, ".dockerignore"))
	const module = "github.com/clusterstack-io/clusterstack-operator/"
	dirs := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		if rel, ok := strings.CutPrefix(p, module); ok {
			dirs[strings.SplitN(rel, "/", 2)[0]] = true
		}
	}
	if len(dirs) == 0 {
		t.Fatal("go list found no package of this module in the manager")
	}
	for d := range dirs {
		if !copied[d] {
			t.Errorf("the manager imports packages under %s/, which the Dockerfile does not COPY", d)
		}
		for _, pat := range strings.Fields(string(ignored)) {
			if strings.TrimSuffix(strings.TrimPrefix(pat, "/"), "/") == d {
				t.Errorf(".dockerignore excludes %s/, which the manager imports", d)
			}
		}
	}
}
