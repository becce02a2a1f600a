// Package chartrepo serves Helm charts as a classic (index.yaml) Helm chart repository over
// plain HTTP on loopback, for tests of stacks whose charts depend on charts they do not vendor:
// a Chart.yaml dependency with `repository: <URL>` resolves against it, whether Helm's
// downloader or Flux's source-controller builds the chart.
//
// Charts are packaged when the repository starts (Helm's chartutil.Save, as `helm package`
// does) and served from memory as <name>-<version>.tgz next to an index.yaml that lists them
// with absolute URLs and SHA-256 digests, newest version first. There is no authentication: it
// binds to 127.0.0.1 only.
//
// The index is written here rather than with helm.sh/helm/v3/pkg/repo, which would pull
// Helm's Kubernetes client (kubectl, cli-runtime) into the module.
package chartrepo

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/provenance"
	"sigs.k8s.io/yaml"
)

// IndexFile is the path of the repository index under the repository URL.
const IndexFile = "index.yaml"

// shutdownTimeout bounds how long stop waits for requests in flight.
const shutdownTimeout = 5 * time.Second

// ServeDirs loads the chart directories (or archives) and serves them like Serve.
func ServeDirs(ctx context.Context, dirs ...string) (url string, stop func(), err error) {
	charts := make([]*chart.Chart, 0, len(dirs))
	for _, d := range dirs {
		ch, err := loader.Load(d)
		if err != nil {
			return "", nil, fmt.Errorf("load chart %s: %w", d, err)
		}
		charts = append(charts, ch)
	}
	return Serve(ctx, charts...)
}

// Serve packages the charts and serves them as a Helm chart repository on a free port of
// 127.0.0.1 until ctx is done or stop is called. url is the repository URL
// ("http://127.0.0.1:<port>"), to be used as a Chart.yaml dependency's repository; stop shuts
// the server down and may be called more than once. Two charts of the same name and version
// are an error.
func Serve(ctx context.Context, charts ...*chart.Chart) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("listen on 127.0.0.1: %w", err)
	}
	url = "http://" + ln.Addr().String()
	files, err := build(url, charts)
	if err != nil {
		_ = ln.Close()
		return "", nil, err
	}
	srv := &http.Server{Handler: handler(files), ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = srv.Serve(ln) }()

	var once sync.Once
	stop = func() {
		once.Do(func() {
			sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
			defer cancel()
			if srv.Shutdown(sctx) != nil {
				_ = srv.Close()
			}
		})
	}
	go func() {
		<-ctx.Done()
		stop()
	}()
	return url, stop, nil
}

// Index is the index.yaml of a chart repository (the fields of helm.sh/helm/v3/pkg/repo.IndexFile
// that clients read).
type Index struct {
	APIVersion string                     `json:"apiVersion"`
	Generated  time.Time                  `json:"generated"`
	Entries    map[string][]*ChartVersion `json:"entries"`
}

// ChartVersion is one chart archive of the index: the chart's metadata, where to download it
// and its SHA-256 digest (hex).
type ChartVersion struct {
	*chart.Metadata
	URLs    []string  `json:"urls"`
	Created time.Time `json:"created"`
	Digest  string    `json:"digest"`
}

// build packages the charts and returns the files of the repository by path: index.yaml and
// the archives.
func build(url string, charts []*chart.Chart) (map[string][]byte, error) {
	files := map[string][]byte{}
	index := Index{APIVersion: "v1", Generated: time.Now().UTC(), Entries: map[string][]*ChartVersion{}}
	for _, ch := range charts {
		name, data, err := pack(ch)
		if err != nil {
			return nil, err
		}
		if _, dup := files[name]; dup {
			return nil, fmt.Errorf("chart %s %s is given twice", ch.Name(), ch.Metadata.Version)
		}
		digest, err := provenance.Digest(bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		files[name] = data
		index.Entries[ch.Name()] = append(index.Entries[ch.Name()], &ChartVersion{
			Metadata: ch.Metadata, URLs: []string{url + "/" + name}, Created: index.Generated, Digest: digest,
		})
	}
	for _, versions := range index.Entries {
		sortNewestFirst(versions)
	}
	data, err := yaml.Marshal(index)
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", IndexFile, err)
	}
	files[IndexFile] = data
	return files, nil
}

// sortNewestFirst orders the versions of a chart as Helm's index does: newest first (versions
// that are no SemVer last).
func sortNewestFirst(versions []*ChartVersion) {
	sort.SliceStable(versions, func(i, j int) bool {
		vi, ei := semver.NewVersion(versions[i].Version)
		vj, ej := semver.NewVersion(versions[j].Version)
		if ei != nil || ej != nil {
			return ei == nil
		}
		return vi.GreaterThan(vj)
	})
}

// pack packages a chart as `helm package` does and returns the archive's file name
// (<name>-<version>.tgz) and content.
func pack(ch *chart.Chart) (string, []byte, error) {
	if err := ch.Validate(); err != nil {
		return "", nil, fmt.Errorf("chart %s: %w", ch.Name(), err)
	}
	tmp, err := os.MkdirTemp("", "chartrepo-")
	if err != nil {
		return "", nil, err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	file, err := chartutil.Save(ch, tmp)
	if err != nil {
		return "", nil, fmt.Errorf("package chart %s: %w", ch.Name(), err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return "", nil, err
	}
	return filepath.Base(file), data, nil
}

// handler serves the files by path; anything else is 404.
func handler(files map[string][]byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		name := r.URL.Path[1:]
		data, ok := files[name]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", contentType(name))
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(data))
	})
}

func contentType(name string) string {
	if name == IndexFile {
		return "application/x-yaml"
	}
	return "application/gzip"
}
