package chartrepo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"sigs.k8s.io/yaml"
)

const greeterDir = "testdata/greeter"

// greeter returns the test chart with another version.
func greeter(t *testing.T, version string) *chart.Chart {
	t.Helper()
	ch, err := loader.LoadDir(greeterDir)
	if err != nil {
		t.Fatal(err)
	}
	ch.Metadata.Version = version
	return ch
}

func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, data
}

func index(t *testing.T, url string) Index {
	t.Helper()
	code, data := get(t, url+"/"+IndexFile)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d", IndexFile, code)
	}
	var idx Index
	if err := yaml.Unmarshal(data, &idx); err != nil {
		t.Fatalf("index.yaml: %v\n%s", err, data)
	}
	return idx
}

func TestServe(t *testing.T) {
	url, stop, err := Serve(context.Background(), greeter(t, "0.1.0"), greeter(t, "0.10.0"), greeter(t, "0.2.0"))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Errorf("url = %s", url)
	}
	idx := index(t, url)
	versions := idx.Entries["greeter"]
	if idx.APIVersion != "v1" || len(idx.Entries) != 1 || len(versions) != 3 {
		t.Fatalf("index = %+v", idx)
	}
	for i, want := range []string{"0.10.0", "0.2.0", "0.1.0"} {
		v := versions[i]
		if v.Version != want || v.Name != "greeter" || len(v.URLs) != 1 || v.URLs[0] != url+"/greeter-"+want+".tgz" {
			t.Errorf("entry %d = %s %s %v, want version %s", i, v.Name, v.Version, v.URLs, want)
		}
	}
	// The archive is the chart, and its digest is the index's.
	code, data := get(t, versions[1].URLs[0])
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d", versions[1].URLs[0], code)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != versions[1].Digest {
		t.Errorf("digest = %s, index says %s", hex.EncodeToString(sum[:]), versions[1].Digest)
	}
	ch, err := loader.LoadArchive(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if ch.Name() != "greeter" || ch.Metadata.Version != "0.2.0" || len(ch.Templates) != 1 || ch.Values["name"] != "world" {
		t.Errorf("archive holds %s %s with %d templates, values %v", ch.Name(), ch.Metadata.Version, len(ch.Templates), ch.Values)
	}
	for path, want := range map[string]int{"/": 404, "/greeter-9.9.9.tgz": 404, "/greeter-0.1.0.tgz": 200} {
		if code, _ := get(t, url+path); code != want {
			t.Errorf("GET %s: %d, want %d", path, code, want)
		}
	}
	resp, err := http.Post(url+"/"+IndexFile, "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", resp.StatusCode)
	}
}

// TestDependencyFromRepository resolves a chart dependency against the repository the way
// Helm's and Flux's dependency managers do (index, version constraint, archive, digest) and
// renders the parent chart with it.
func TestDependencyFromRepository(t *testing.T) {
	url, stop, err := ServeDirs(context.Background(), greeterDir)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	parent := &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: "v2", Name: "cni", Version: "v1", Dependencies: []*chart.Dependency{
			{Name: "greeter", Alias: "cilium", Version: "~0.1.0", Repository: url},
		}},
		Values: map[string]any{"cilium": map[string]any{"name": "stacks"}},
	}
	for _, dep := range parent.Metadata.Dependencies {
		parent.AddDependency(fetch(t, dep))
	}
	if err := chartutil.ProcessDependenciesWithMerge(parent, map[string]any{}); err != nil {
		t.Fatal(err)
	}
	vals, err := chartutil.ToRenderValues(parent, map[string]any{}, chartutil.ReleaseOptions{Name: "cni", Namespace: "kube-system"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := engine.Render(parent, vals)
	if err != nil {
		t.Fatal(err)
	}
	got := out["cni/charts/cilium/templates/configmap.yaml"]
	if !strings.Contains(got, `greeting: "hello stacks"`) {
		t.Errorf("rendered = %v", out)
	}
}

// fetch resolves dep from its repository: the newest version of the index that satisfies the
// constraint, downloaded and checked against the index's digest.
func fetch(t *testing.T, dep *chart.Dependency) *chart.Chart {
	t.Helper()
	constraint, err := semver.NewConstraint(dep.Version)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range index(t, dep.Repository).Entries[dep.Name] {
		sv, err := semver.NewVersion(v.Version)
		if err != nil || !constraint.Check(sv) {
			continue
		}
		_, data := get(t, v.URLs[0])
		if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != v.Digest {
			t.Fatalf("%s: digest does not match the index", v.URLs[0])
		}
		ch, err := loader.LoadArchive(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		return ch
	}
	t.Fatalf("no version of %s matches %s in %s", dep.Name, dep.Version, dep.Repository)
	return nil
}

func TestStop(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	url, stop, err := ServeDirs(ctx, greeterDir)
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := get(t, url+"/"+IndexFile); code != http.StatusOK {
		t.Fatalf("GET %s: %d", IndexFile, code)
	}
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := http.Get(url + "/" + IndexFile)
		if err != nil {
			break
		}
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatal("the repository still serves after its context was cancelled")
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop() // after the context stopped it: does nothing, does not block
}

func TestServeErrors(t *testing.T) {
	noVersion := greeter(t, "")
	tests := []struct {
		name   string
		charts []*chart.Chart
		want   string
	}{{
		name:   "the same chart twice",
		charts: []*chart.Chart{greeter(t, "0.1.0"), greeter(t, "0.1.0")},
		want:   "chart greeter 0.1.0 is given twice",
	}, {
		name:   "a chart without version",
		charts: []*chart.Chart{noVersion},
		want:   "chart greeter: validation: chart.metadata.version is required",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url, stop, err := Serve(context.Background(), tt.charts...)
			if err == nil {
				stop()
				t.Fatalf("Serve() = %s, want an error", url)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want %q", err, tt.want)
			}
		})
	}
	if _, _, err := ServeDirs(context.Background(), "testdata/nothing"); err == nil || !strings.Contains(err.Error(), "load chart testdata/nothing") {
		t.Errorf("ServeDirs(missing) error = %v", err)
	}
}
