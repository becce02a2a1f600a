package plane

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/clusterstack-io/clusterstack-operator/bootstrap/gitserver"
)

// FixtureOperatorPath is where a fixture operator's manifests (a kustomize directory) are in
// its repository, at every version tag.
const FixtureOperatorPath = "config"

// fixtureRepoPrefix starts the repository name of every fixture operator on the Git server.
const fixtureRepoPrefix = "operators/"

// fixturesDir holds the manifests: <fixturesDir>/<operator>/<version>/.
const fixturesDir = "operators"

// fixtureSrcDir, in the state dir, holds the manifests while they are published.
const fixtureSrcDir = "fixture-operators"

// fixtureFS holds the fixture operators' manifests, compiled in so that the plane publishes
// exactly the versions its catalog lists, whatever directory it runs from.
//
//go:embed operators
var fixtureFS embed.FS

// FixtureOperator is a small operator that the plane publishes to its Git server (unless
// Options.SkipFixtureOperators), one repository per operator and one tag per version, so
// that tests and the demo can deliver it into the management cluster through Flux. Its
// manifests are real: a CRD of its own API group, a Namespace, a ServiceAccount and a
// Deployment, labelled app.kubernetes.io/name=<Name> and app.kubernetes.io/version=<version>.
// Its image (registry.example.com/<Name>:<version>) is never pulled: kwok runs its Pods on the
// management API server's Nodes.
type FixtureOperator struct {
	// Name names the operator and its Deployment and ServiceAccount.
	Name string
	// Namespace is the Namespace its manifests create and its Deployment runs in.
	Namespace string
	// CRD is the name of the CustomResourceDefinition it ships; its schema grows between
	// versions.
	CRD string
	// Variables are the clusterctl-style variables its manifests use, each with a default
	// (${VAR:=default}), for Flux's postBuild substitution.
	Variables []string
	// Versions are its versions in semver order, oldest first.
	Versions []FixtureVersion
	// Repository is its repository on the plane's Git server ("operators/<Name>"): each
	// version is a commit on main, tagged with the version, with the manifests at
	// FixtureOperatorPath.
	Repository string
	// URL is the clone URL of Repository (set by Plane.FixtureOperators).
	URL string
}

// FixtureVersion is a version of a FixtureOperator.
type FixtureVersion struct {
	// Version is the version, the tag in the operator's repository, its image's tag and its
	// objects' app.kubernetes.io/version label ("v1.1.0").
	Version string
	// NeverAvailable marks a version broken on purpose: its Pods select a Node label that no
	// Node has, so they are never scheduled. Installed fresh, its Deployment never becomes
	// Available; as an upgrade, its rollout never completes (the old Pods keep running). Its
	// progressDeadlineSeconds is 60, so the Deployment reports Progressing=False with reason
	// ProgressDeadlineExceeded after a minute.
	NeverAvailable bool
}

// fixtureOperators is the catalog of fixture operators; fixturesDir holds one directory per
// operator and version.
var fixtureOperators = []FixtureOperator{
	{
		Name:      "demo-infra-provider",
		Namespace: "demo-infra-system",
		CRD:       "widgets.demo-infra.example.com",
		Variables: []string{"DEMO_LOG_LEVEL"},
		Versions: []FixtureVersion{
			{Version: "v1.0.0"},
			{Version: "v1.1.0"}, // Widget gains spec.color; metrics flag
			{Version: "v1.2.0-broken", NeverAvailable: true},
		},
	},
	{
		Name:      "demo-addon-operator",
		Namespace: "demo-addon-system",
		CRD:       "gizmos.demo-addon.example.com",
		Variables: []string{"DEMO_LOG_LEVEL", "DEMO_SYNC_PERIOD"},
		Versions: []FixtureVersion{
			{Version: "v1.0.0"},
			{Version: "v2.0.0"}, // Gizmo gains spec.replicas; 2 replicas
		},
	},
}

// fixtureCatalog returns a deep copy of the catalog with Repository set.
func fixtureCatalog() []FixtureOperator {
	out := make([]FixtureOperator, len(fixtureOperators))
	for i, op := range fixtureOperators {
		op.Variables = append([]string(nil), op.Variables...)
		op.Versions = append([]FixtureVersion(nil), op.Versions...)
		op.Repository = fixtureRepoPrefix + op.Name
		out[i] = op
	}
	return out
}

// fixtureVersionFS is the manifests directory of one version of a fixture operator.
func fixtureVersionFS(operator, version string) (fs.FS, error) {
	return fs.Sub(fixtureFS, path.Join(fixturesDir, operator, version))
}

// publishFixtureOperators creates one repository per fixture operator on the Git server and
// publishes its versions in order, each as a commit on main with its manifests at
// FixtureOperatorPath, tagged with the version.
func (p *Plane) publishFixtureOperators(ctx context.Context) error {
	tmp := filepath.Join(p.opts.StateDir, fixtureSrcDir)
	defer func() { _ = os.RemoveAll(tmp) }()
	ops := fixtureCatalog()
	for i := range ops {
		op := &ops[i]
		var err error
		if op.URL, err = p.git.CreateRepo(op.Repository); err != nil {
			return fmt.Errorf("plane: fixture operator %s: %w", op.Name, err)
		}
		pubs := make([]gitserver.Publication, 0, len(op.Versions))
		for _, v := range op.Versions {
			src, err := fixtureVersionFS(op.Name, v.Version)
			if err != nil {
				return fmt.Errorf("plane: fixture operator %s %s: %w", op.Name, v.Version, err)
			}
			dir := filepath.Join(tmp, op.Name, v.Version)
			if err := os.CopyFS(dir, src); err != nil {
				return fmt.Errorf("plane: fixture operator %s %s: %w", op.Name, v.Version, err)
			}
			pubs = append(pubs, gitserver.Publication{SrcDir: dir, PathInRepo: FixtureOperatorPath, Tag: v.Version})
		}
		if err := p.git.PublishAll(ctx, op.Repository, pubs...); err != nil {
			return fmt.Errorf("plane: fixture operator %s: %w", op.Name, err)
		}
	}
	p.fixtures = ops
	return nil
}

// FixtureOperators lists the fixture operators the plane published to its Git server, with
// their repositories' URLs (none with Options.SkipFixtureOperators). The result is a copy.
func (p *Plane) FixtureOperators() []FixtureOperator {
	if p.fixtures == nil {
		return nil
	}
	out := fixtureCatalog()
	for i := range out {
		out[i].URL = p.fixtures[i].URL
	}
	return out
}

// FixtureOperatorURL is the clone URL of fixture operator name's repository on the plane's
// Git server.
func (p *Plane) FixtureOperatorURL(name string) (string, error) {
	if p.fixtures == nil {
		return "", fmt.Errorf("plane: fixture operator %q: fixture operators are not published (Options.SkipFixtureOperators)", name)
	}
	for _, op := range p.fixtures {
		if op.Name == name {
			return op.URL, nil
		}
	}
	return "", fmt.Errorf("plane: no fixture operator %q", name)
}
