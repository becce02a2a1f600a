package ocistack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"

	"github.com/clusterstack-io/clusterstack-operator/bootstrap/registry"
	"github.com/clusterstack-io/clusterstack-operator/internal/ocistack"
	"github.com/clusterstack-io/clusterstack-operator/internal/testenv"
)

// releaseStack is a copy of the reference stack stacks/aws/base/1-36 (a Helm cluster-class, the
// Helm addon cni and the kustomize addon cluster-info) with a third addon, the Helm chart
// metrics, whose dependencies are a vendored subchart (charts/extra) and a chart of the stack
// named by a file:// path (lib/common). It returns the stack directory.
func releaseStack(t *testing.T) string {
	t.Helper()
	root, err := testenv.Root()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "1-36")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(root, "stacks", "aws", "base", "1-36"))); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"cluster-addon/metrics/Chart.yaml": `apiVersion: v2
name: metrics
version: 0.3.0
dependencies:
  - name: common
    version: ">=0.1.0 <1.0.0"
    repository: file://../../lib/common
  - name: extra
    version: 2.0.0
`,
		"cluster-addon/metrics/values.yaml":                    "replicas: 1\n",
		"cluster-addon/metrics/templates/cm.yaml":              "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ include \"common.name\" . }}\n",
		"cluster-addon/metrics/charts/extra/Chart.yaml":        "apiVersion: v2\nname: extra\nversion: 2.0.0\n",
		"cluster-addon/metrics/charts/extra/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n",
		"lib/common/Chart.yaml":                                "apiVersion: v2\nname: common\ntype: library\nversion: 0.1.0\n",
		"lib/common/templates/_name.tpl":                       "{{- define \"common.name\" -}}metrics{{- end -}}\n",
		"clusteraddon.yaml": `apiVersion: clusteraddonconfig.x-k8s.io/v1alpha1
clusterAddonVersion: clusteraddons.clusterstack.x-k8s.io/v1alpha1
addonStages:
  AfterControlPlaneInitialized:
    - name: cni
      action: apply
    - name: cluster-info
      action: apply
    - name: metrics
      action: apply
`,
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// helmComponents are the Helm components of releaseStack and their charts' names and versions.
var helmComponents = map[string][2]string{
	"cluster-class": {"cluster-class", "v1"},
	"cni":           {"cni", "1.0.0"},
	"metrics":       {"metrics", "0.3.0"},
}

// fetchManifest reads the manifest ref of the repository.
func fetchManifest(t *testing.T, tgt ocistack.Target, ref string) (ocispec.Descriptor, ocispec.Manifest) {
	t.Helper()
	repo, err := tgt.Repository()
	if err != nil {
		t.Fatal(err)
	}
	desc, err := repo.Resolve(context.Background(), ref)
	if err != nil {
		t.Fatalf("resolve %s: %v", ref, err)
	}
	raw, err := content.FetchAll(context.Background(), repo, desc)
	if err != nil {
		t.Fatal(err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return desc, m
}

// chartOf loads the chart a Helm chart artifact (digest d) of the repository holds, checking
// that the artifact is in Helm's format.
func chartOf(t *testing.T, tgt ocistack.Target, d string) *chart.Chart {
	t.Helper()
	_, m := fetchManifest(t, tgt, d)
	if m.Config.MediaType != ocistack.HelmConfigMediaType || len(m.Layers) != 1 || m.Layers[0].MediaType != ocistack.HelmChartContentMediaType {
		t.Fatalf("%s is not a Helm chart artifact: config %s, layers %+v", d, m.Config.MediaType, m.Layers)
	}
	repo, err := tgt.Repository()
	if err != nil {
		t.Fatal(err)
	}
	layer, err := content.FetchAll(context.Background(), repo, m.Layers[0])
	if err != nil {
		t.Fatal(err)
	}
	ch, err := loader.LoadArchive(bytes.NewReader(layer))
	if err != nil {
		t.Fatalf("the layer of %s does not load as a chart: %v", d, err)
	}
	return ch
}

// A release carries one chart artifact per Helm component, beside it under ChartTag, each
// named by its digest in the release manifest's annotations; a kustomize component has none.
func TestPushReleasePublishesEachHelmChartBesideTheRelease(t *testing.T) {
	s := startRegistry(t, registry.Options{})
	ctx := context.Background()
	tgt := target(s, "stacks/aws-base")
	dir := releaseStack(t)
	origin := ocistack.Origin{Source: "https://git.example/stacks", Revision: "aws-base-1-36-v1@sha1:0123", Created: time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)}
	pub, err := ocistack.PushRelease(ctx, tgt, dir, "aws-base-1-36-v1", origin, nil)
	if err != nil {
		t.Fatal(err)
	}
	if pub.Signed {
		t.Error("Published.Signed without a signer")
	}
	desc, m := fetchManifest(t, tgt, "aws-base-1-36-v1")
	if desc.Digest != pub.Release.Digest || len(m.Layers) != 1 || m.Layers[0].MediaType != ocistack.FluxContentMediaType {
		t.Fatalf("the release is %s %+v, want %s in Flux's format", desc.Digest, m.Layers, pub.Release.Digest)
	}
	if m.Annotations[ocistack.AnnotationRevision] != origin.Revision || m.Annotations[ocistack.AnnotationCreated] != "2026-11-01T10:00:00Z" {
		t.Errorf("the release lost its origin annotations: %v", m.Annotations)
	}
	digests, err := ocistack.ChartDigests(m.Annotations)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := keys(digests), keys(helmComponents); got != want {
		t.Fatalf("the release names the charts of %s, want %s (cluster-info is kustomize: no chart); annotations %v", got, want, m.Annotations)
	}
	if got := keys(pub.Charts); got != keys(helmComponents) {
		t.Errorf("Published.Charts = %s", got)
	}
	for component, nv := range helmComponents {
		d := digests[component]
		if pub.Charts[component].Digest.String() != d {
			t.Errorf("%s: Published says %s, the release names %s", component, pub.Charts[component].Digest, d)
		}
		tagged, err := ocistack.Resolve(ctx, tgt, ocistack.ChartTag("aws-base-1-36-v1", component))
		if err != nil || tagged != d {
			t.Errorf("%s: tag %s is %s (%v), the release names %s", component, ocistack.ChartTag("aws-base-1-36-v1", component), tagged, err, d)
		}
		ch := chartOf(t, tgt, d)
		if ch.Name() != nv[0] || ch.Metadata.Version != nv[1] {
			t.Errorf("%s: the chart is %s %s, want %s %s", component, ch.Name(), ch.Metadata.Version, nv[0], nv[1])
		}
		_, cm := fetchManifest(t, tgt, d)
		if cm.Annotations[ocispec.AnnotationTitle] != nv[0] || cm.Annotations[ocistack.AnnotationCreated] != "2026-11-01T10:00:00Z" || cm.Annotations[ocistack.AnnotationRevision] != origin.Revision {
			t.Errorf("%s: the chart's annotations are %v, want its title and the release's origin", component, cm.Annotations)
		}
	}
	// The same directory and origin publish the same digests: release and charts.
	again, err := ocistack.PushRelease(ctx, tgt, dir, "again", origin, nil)
	if err != nil {
		t.Fatal(err)
	}
	if again.Release.Digest != pub.Release.Digest {
		t.Errorf("publishing the same directory again gave the release %s, first %s", again.Release.Digest, pub.Release.Digest)
	}
	for component, d := range pub.Charts {
		if again.Charts[component].Digest != d.Digest {
			t.Errorf("publishing the same directory again gave the chart of %s %s, first %s", component, again.Charts[component].Digest, d.Digest)
		}
	}
}

// A stack without Helm components publishes as Push does: no chart, no annotation.
func TestPushReleaseWithoutHelmComponentsIsPush(t *testing.T) {
	s := startRegistry(t, registry.Options{})
	ctx := context.Background()
	tgt := target(s, "stacks/kustomize")
	dir := stackDir(t, map[string]string{
		"stack.yaml":                           "provider: aws\nclusterStackName: plain\nkubernetesVersion: 1.36.3\n",
		"cluster-class/kustomization.yaml":     "resources: [cc.yaml]\n",
		"cluster-class/cc.yaml":                "apiVersion: cluster.x-k8s.io/v1beta2\nkind: ClusterClass\nmetadata:\n  name: aws-plain-1-36-v1\n",
		"cluster-addon/cni/kustomization.yaml": "resources: [cm.yaml]\n",
		"cluster-addon/cni/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cni\n",
	})
	origin := ocistack.Origin{Created: time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)}
	pub, err := ocistack.PushRelease(ctx, tgt, dir, "v1", origin, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(pub.Charts) != 0 {
		t.Errorf("charts published for kustomize components: %v", pub.Charts)
	}
	plain, err := ocistack.Push(ctx, tgt, dir, "v1-push", origin)
	if err != nil {
		t.Fatal(err)
	}
	if plain.Digest != pub.Release.Digest {
		t.Errorf("PushRelease gave %s, Push %s: without charts they are the same artifact", pub.Release.Digest, plain.Digest)
	}
	tags, err := ocistack.Tags(ctx, tgt, 10)
	if err != nil || strings.Join(tags, ",") != "v1,v1-push" {
		t.Errorf("tags = %v (%v), want v1,v1-push", tags, err)
	}
	if _, err := ocistack.PushRelease(ctx, tgt, dir, "v1_x", origin, nil); err == nil || !strings.Contains(err.Error(), "marks the tags of charts") {
		t.Errorf("a release tag with the chart separator: %v", err)
	}
}

// A chart's dependencies that charts/ lacks are built from their file:// directories, without
// touching the stack directory; vendored ones are kept; remote ones are refused, named.
func TestPackageChartBuildsLocalDependencies(t *testing.T) {
	dir := releaseStack(t)
	before := listing(t, dir)
	chartDir := filepath.Join(dir, "cluster-addon", "metrics")
	tgz, err := ocistack.PackageChart(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := loader.LoadArchive(bytes.NewReader(tgz))
	if err != nil {
		t.Fatal(err)
	}
	deps := map[string]string{}
	for _, d := range ch.Dependencies() {
		deps[d.Name()] = d.Metadata.Version
	}
	if deps["common"] != "0.1.0" || deps["extra"] != "2.0.0" || len(deps) != 2 {
		t.Errorf("the packaged chart's dependencies are %v, want common 0.1.0 (file://) and extra 2.0.0 (charts/)", deps)
	}
	if after := listing(t, dir); after != before {
		t.Errorf("packaging changed the stack directory:\nbefore %s\nafter  %s", before, after)
	}
	// The same directory packages to the same bytes: no entry keeps the time of packaging.
	entries := untar(t, tgz)
	if _, ok := entries["metrics/charts/common/templates/_name.tpl"]; !ok {
		t.Errorf("the file:// dependency is not under the packaged chart's charts/: %v", keys(entries))
	}
	again, err := ocistack.PackageChart(chartDir)
	if err != nil || !bytes.Equal(again, tgz) {
		t.Errorf("the same directory packaged to other bytes (%v)", err)
	}

	for name, tc := range map[string]struct{ chartYAML, want string }{
		"remote, not vendored": {"apiVersion: v2\nname: metrics\nversion: 0.3.0\ndependencies:\n  - name: cilium\n    version: 1.16.0\n    repository: https://helm.cilium.io\n",
			"chart metrics (" + chartDir + "): dependency cilium 1.16.0 from https://helm.cilium.io is not under charts/"},
		"OCI, not vendored": {"apiVersion: v2\nname: metrics\nversion: 0.3.0\ndependencies:\n  - name: pg\n    version: 1.0.0\n    repository: oci://registry.example/charts\n",
			"helm dependency build " + chartDir},
		"no repository, not vendored": {"apiVersion: v2\nname: metrics\nversion: 0.3.0\ndependencies:\n  - name: gone\n    version: 1.0.0\n",
			"dependency gone names no repository"},
		"file:// at another version": {"apiVersion: v2\nname: metrics\nversion: 0.3.0\ndependencies:\n  - name: common\n    version: \">=1.0.0\"\n    repository: file://../../lib/common\n",
			"holds version 0.1.0, which the constraint \">=1.0.0\" does not allow"},
		"file:// of another chart": {"apiVersion: v2\nname: metrics\nversion: 0.3.0\ndependencies:\n  - name: other\n    version: \"*\"\n    repository: file://../../lib/common\n",
			"holds the chart common, not other"},
		"file:// missing": {"apiVersion: v2\nname: metrics\nversion: 0.3.0\ndependencies:\n  - name: common\n    version: \"*\"\n    repository: file://../nowhere\n",
			"dependency common (file://../nowhere)"},
		"file:// cycle": {"apiVersion: v2\nname: metrics\nversion: 0.3.0\ndependencies:\n  - name: metrics\n    version: \"*\"\n    repository: file://.\n",
			"the file:// dependencies form a cycle: " + chartDir + " -> " + chartDir},
	} {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(filepath.Join(chartDir, "Chart.yaml"), []byte(tc.chartYAML), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := ocistack.PackageChart(chartDir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("PackageChart = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// listing is every path of dir with its size, sorted: what a change to the directory changes.
func listing(t *testing.T, dir string) string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out = append(out, fmt.Sprintf("%s:%d", strings.TrimPrefix(p, dir), info.Size()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// With a signer, each chart and the release are signed, each verifying with the public key.
func TestPushReleaseSignsEveryChart(t *testing.T) {
	s := startRegistry(t, registry.Options{})
	ctx := context.Background()
	tgt := target(s, "stacks/signed")
	signer, pub := keyPair(t)
	p, err := ocistack.PushRelease(ctx, tgt, releaseStack(t), "v1", ocistack.Origin{}, signer)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Signed || len(p.Charts) != len(helmComponents) {
		t.Fatalf("Published = signed %v, %d charts; want signed, %d", p.Signed, len(p.Charts), len(helmComponents))
	}
	if err := ocistack.VerifySignature(ctx, tgt, p.Release.Digest, pub); err != nil {
		t.Errorf("the release: %v", err)
	}
	for component, d := range p.Charts {
		if err := ocistack.VerifySignature(ctx, tgt, d.Digest, pub); err != nil {
			t.Errorf("the chart of %s: %v", component, err)
		}
	}
}

// A mirror holds the release and each chart at the same digests, tagged alike, with their
// signatures; a release naming a chart its registry lacks is not mirrored.
func TestMirrorCopiesChartsWithTheirRelease(t *testing.T) {
	src := startRegistry(t, registry.Options{})
	dst := startRegistry(t, registry.Options{TLS: true, Users: map[string]string{"mirror": "pw"}})
	ctx := context.Background()
	from := target(src, "stacks/aws-base")
	to := target(dst, "mirror/aws-base")
	to.Username, to.Password = "mirror", "pw"
	signer, pub := keyPair(t)
	p, err := ocistack.PushRelease(ctx, from, releaseStack(t), "v1", ocistack.Origin{}, signer)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ocistack.Mirror(ctx, from, to, "v1")
	if err != nil {
		t.Fatal(err)
	}
	if c.Descriptor.Digest != p.Release.Digest || !c.Signed {
		t.Fatalf("Mirror = %s signed=%v, want %s signed", c.Descriptor.Digest, c.Signed, p.Release.Digest)
	}
	if err := ocistack.VerifySignature(ctx, to, p.Release.Digest, pub); err != nil {
		t.Errorf("the mirror's release signature: %v", err)
	}
	if keys(c.Charts) != keys(p.Charts) {
		t.Fatalf("Mirror copied the charts of %s, want %s", keys(c.Charts), keys(p.Charts))
	}
	for component, d := range p.Charts {
		got := c.Charts[component]
		if got.Descriptor.Digest != d.Digest || !got.Signed || got.Tag != ocistack.ChartTag("v1", component) {
			t.Errorf("%s: copied %s %s signed=%v, want %s %s signed", component, got.Tag, got.Descriptor.Digest, got.Signed, ocistack.ChartTag("v1", component), d.Digest)
		}
		if tagged, err := ocistack.Resolve(ctx, to, ocistack.ChartTag("v1", component)); err != nil || tagged != d.Digest.String() {
			t.Errorf("%s: the mirror's tag %s is %s (%v), want %s", component, ocistack.ChartTag("v1", component), tagged, err, d.Digest)
		}
		if err := ocistack.VerifySignature(ctx, to, d.Digest, pub); err != nil {
			t.Errorf("%s: the mirror's chart signature: %v", component, err)
		}
	}

	// A release naming a chart its registry lacks.
	repo, err := from.Repository()
	if err != nil {
		t.Fatal(err)
	}
	layer, err := oras.PushBytes(ctx, repo, ocistack.FluxContentMediaType, []byte("not read"))
	if err != nil {
		t.Fatal(err)
	}
	config, err := oras.PushBytes(ctx, repo, ocistack.FluxConfigMediaType, []byte("{}"))
	if err != nil {
		t.Fatal(err)
	}
	ghost := digest.FromString("a chart nobody pushed").String()
	desc, err := oras.PackManifest(ctx, repo, oras.PackManifestVersion1_1, "", oras.PackManifestOptions{
		ConfigDescriptor:    &config,
		Layers:              []ocispec.Descriptor{layer},
		ManifestAnnotations: map[string]string{ocistack.ChartAnnotationPrefix + "ghost": ghost},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Tag(ctx, desc, "v2"); err != nil {
		t.Fatal(err)
	}
	_, err = ocistack.Mirror(ctx, from, to, "v2")
	if err == nil || !strings.Contains(err.Error(), "component ghost") || !strings.Contains(err.Error(), ghost) {
		t.Fatalf("Mirror of a release naming a missing chart = %v, want an error naming the component and %s", err, ghost)
	}
	if _, err := ocistack.Resolve(ctx, to, "v2"); err == nil {
		t.Error("the release naming a missing chart was tagged in the mirror")
	}
}

// ChartDigests reads the chart annotations and refuses what is not a digest, or too many.
func TestChartDigests(t *testing.T) {
	d := digest.FromString("chart").String()
	got, err := ocistack.ChartDigests(map[string]string{
		ocistack.ChartAnnotationPrefix + "cni":           d,
		ocistack.ChartAnnotationPrefix + "cluster-class": d,
		ocistack.AnnotationRevision:                      "v1@sha1:0123",
	})
	if err != nil || len(got) != 2 || got["cni"] != d || got["cluster-class"] != d {
		t.Fatalf("ChartDigests = %v, %v", got, err)
	}
	if got, err := ocistack.ChartDigests(nil); err != nil || len(got) != 0 {
		t.Errorf("ChartDigests(nil) = %v, %v", got, err)
	}
	for name, value := range map[string]string{
		"a tag":        "v1",
		"upper case":   strings.ToUpper(d),
		"short":        d[:40],
		"sha512":       "sha512:" + strings.Repeat("a", 128),
		"trailing":     d + "\n",
		"another algo": "md5:" + strings.Repeat("a", 64),
	} {
		_, err := ocistack.ChartDigests(map[string]string{ocistack.ChartAnnotationPrefix + "cni": value})
		if err == nil || !strings.Contains(err.Error(), ocistack.ChartAnnotationPrefix+"cni") {
			t.Errorf("%s: ChartDigests accepted %q (%v)", name, value, err)
		}
	}
	many := map[string]string{}
	for i := 0; i <= ocistack.MaxCharts; i++ {
		many[fmt.Sprintf("%sc%d", ocistack.ChartAnnotationPrefix, i)] = d
	}
	if _, err := ocistack.ChartDigests(many); err == nil || !strings.Contains(err.Error(), "more than the") {
		t.Errorf("ChartDigests accepted %d charts: %v", len(many), err)
	}
	delete(many, ocistack.ChartAnnotationPrefix+"c0")
	if got, err := ocistack.ChartDigests(many); err != nil || len(got) != ocistack.MaxCharts {
		t.Errorf("ChartDigests of %d charts = %d, %v", ocistack.MaxCharts, len(got), err)
	}
}

func keys[V any](m map[string]V) string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}
