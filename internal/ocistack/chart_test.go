package ocistack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"oras.land/oras-go/v2/content"

	"github.com/clusterstack-io/clusterstack-operator/bootstrap/registry"
	"github.com/clusterstack-io/clusterstack-operator/internal/ocistack"
)

// A chart is pushed in the format `helm push` writes: the metadata as the config, the packaged
// chart, unchanged, as the one layer, tagged as asked (not necessarily the chart's version).
func TestPushChartWritesHelmsFormat(t *testing.T) {
	s := startRegistry(t, registry.Options{})
	ctx := context.Background()
	tgt := target(s, "charts/demo")
	ch := &chart.Chart{
		Metadata:  &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "demo", Version: "1.2.0", AppVersion: "v1.2.0"},
		Templates: []*chart.File{{Name: "templates/cm.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: demo}\n")}},
	}
	path, err := chartutil.Save(ch, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tgz, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := ocistack.PushChart(ctx, tgt, tgz, "v1.2.0")
	if err != nil {
		t.Fatal(err)
	}
	repo, err := tgt.Repository()
	if err != nil {
		t.Fatal(err)
	}
	got, err := repo.Resolve(ctx, "v1.2.0")
	if err != nil || got.Digest != desc.Digest {
		t.Fatalf("tag v1.2.0 resolves to %v (%v), want %s", got.Digest, err, desc.Digest)
	}
	raw, err := content.FetchAll(ctx, repo, desc)
	if err != nil {
		t.Fatal(err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if m.Config.MediaType != ocistack.HelmConfigMediaType || len(m.Layers) != 1 || m.Layers[0].MediaType != ocistack.HelmChartContentMediaType {
		t.Fatalf("manifest is not in Helm's format: %+v", m)
	}
	if m.Annotations[ocispec.AnnotationTitle] != "demo" || m.Annotations[ocispec.AnnotationVersion] != "1.2.0" {
		t.Errorf("annotations = %v", m.Annotations)
	}
	config, err := content.FetchAll(ctx, repo, m.Config)
	if err != nil {
		t.Fatal(err)
	}
	var meta chart.Metadata
	if err := json.Unmarshal(config, &meta); err != nil || meta.Name != "demo" || meta.Version != "1.2.0" {
		t.Errorf("config = %s (%v), want the chart's metadata", config, err)
	}
	layer, err := content.FetchAll(ctx, repo, m.Layers[0])
	if err != nil {
		t.Fatal(err)
	}
	back, err := loader.LoadArchive(bytes.NewReader(layer))
	if err != nil || back.Metadata.Version != "1.2.0" || len(back.Templates) != 1 {
		t.Errorf("the layer does not load as the chart: %v", err)
	}

	if _, err := ocistack.PushChart(ctx, tgt, []byte("not a chart"), "broken"); err == nil {
		t.Error("pushed bytes that are not a chart")
	}
}

// DockerConfigCredentials reads what `kubectl create secret docker-registry` writes, and says
// what is wrong without the credentials.
func TestDockerConfigCredentials(t *testing.T) {
	for _, tc := range []struct {
		name, config, host, user, password, err string
	}{
		{"auth", `{"auths":{"reg.example:5000":{"auth":"dXNlcjpwYTpzcw=="}}}`, "reg.example:5000", "user", "pa:ss", ""},
		{"username and password, URL key", `{"auths":{"https://reg.example/v1/":{"username":"u","password":"p"}}}`, "reg.example", "u", "p", ""},
		{"another host", `{"auths":{"reg.example":{"username":"u","password":"p"}}}`, "reg.example:5000", "", "", "no credentials for the registry reg.example:5000"},
		{"not JSON", `{"auths":`, "reg.example", "", "", "not valid JSON"},
		{"auth not base64", `{"auths":{"reg.example":{"auth":"%%%"}}}`, "reg.example", "", "", "not base64"},
		{"empty entry", `{"auths":{"reg.example":{}}}`, "reg.example", "", "", "neither auth nor username and password"},
	} {
		u, p, err := ocistack.DockerConfigCredentials([]byte(tc.config), tc.host)
		switch {
		case tc.err == "" && (err != nil || u != tc.user || p != tc.password):
			t.Errorf("%s: = %q, %q, %v; want %q, %q", tc.name, u, p, err, tc.user, tc.password)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.err)
		case err != nil && (strings.Contains(err.Error(), "pa:ss") || strings.Contains(err.Error(), "dXNlcjpwYTpzcw")):
			t.Errorf("%s: error carries the credentials: %v", tc.name, err)
		}
	}
	big := make([]byte, 65<<10)
	if _, _, err := ocistack.DockerConfigCredentials(big, "reg.example"); err == nil || !strings.Contains(err.Error(), "more than the 65536 allowed") {
		t.Errorf("an oversized config: %v", err)
	}
}
