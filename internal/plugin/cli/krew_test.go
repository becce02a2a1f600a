package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// krewManifest is the part of a krew Plugin manifest the test checks.
type krewManifest struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string `json:"version"`
		Homepage         string `json:"homepage"`
		ShortDescription string `json:"shortDescription"`
		Platforms        []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			SHA256 string `json:"sha256"`
			Bin    string `json:"bin"`
		} `json:"platforms"`
	} `json:"spec"`
}

// TestKrewManifest checks config/krew/clusterstack.yaml: a krew Plugin named after the binary,
// at the Makefile's VERSION, one platform per archive `make plugin-release` builds, each with
// the archive's URL at the version, the binary's name, and the checksum placeholder the release
// process fills.
func TestKrewManifest(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	data, err := os.ReadFile(filepath.Join(root, "config", "krew", "clusterstack.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var m krewManifest
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || m.Kind != "Plugin" || m.Metadata.Name != "clusterstack" {
		t.Errorf("not the krew Plugin clusterstack: %s %s %s", m.APIVersion, m.Kind, m.Metadata.Name)
	}
	if m.Spec.Homepage == "" || m.Spec.ShortDescription == "" {
		t.Error("homepage and shortDescription are required by krew-index")
	}
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if v := regexp.MustCompile(`(?m)^VERSION := (\S+)$`).FindSubmatch(makefile); len(v) == 2 && m.Spec.Version != "v"+string(v[1]) {
		t.Errorf("version %s, the Makefile's VERSION is %s", m.Spec.Version, v[1])
	}
	platforms := regexp.MustCompile(`(?m)^PLUGIN_PLATFORMS := (.+)$`).FindSubmatch(makefile)
	if platforms == nil {
		t.Fatal("the Makefile has no PLUGIN_PLATFORMS")
	}
	want := strings.Fields(string(platforms[1]))
	if len(m.Spec.Platforms) != len(want) {
		t.Fatalf("%d platforms, make plugin-release builds %v", len(m.Spec.Platforms), want)
	}
	for i, p := range m.Spec.Platforms {
		goos, goarch := p.Selector.MatchLabels["os"], p.Selector.MatchLabels["arch"]
		if goos+"/"+goarch != want[i] {
			t.Errorf("platform %d is %s/%s, want %s", i, goos, goarch, want[i])
		}
		wantURI := "https://github.com/clusterstack-io/clusterstack-operator/releases/download/" + m.Spec.Version + "/kubectl-clusterstack_" + goos + "_" + goarch + ".tar.gz"
		if p.URI != wantURI {
			t.Errorf("%s/%s: uri %s, want %s", goos, goarch, p.URI, wantURI)
		}
		wantBin := "kubectl-clusterstack"
		if goos == "windows" {
			wantBin += ".exe"
		}
		if p.Bin != wantBin {
			t.Errorf("%s/%s: bin %s, want %s", goos, goarch, p.Bin, wantBin)
		}
		if p.SHA256 != strings.Repeat("0", 64) {
			t.Errorf("%s/%s: sha256 %q is not the placeholder the release process fills", goos, goarch, p.SHA256)
		}
	}
}
