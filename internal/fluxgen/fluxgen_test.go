package fluxgen

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/kustomize"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

const (
	testRelease = "aws-base-1-33-v2"
	testNS      = "stacks"
	testPath    = "providers/aws/base/1-33"
)

func release(mut ...func(*csv1.ClusterStackRelease)) *csv1.ClusterStackRelease {
	rel := &csv1.ClusterStackRelease{
		ObjectMeta: metav1.ObjectMeta{Name: testRelease, Namespace: testNS},
		Spec: csv1.ClusterStackReleaseSpec{
			ClusterStack:      "aws-base",
			Provider:          "aws",
			StackName:         "base",
			KubernetesVersion: "1.33",
			Version:           "v2",
			Source:            csv1.StackSource{URL: "https://github.com/org/stacks", Path: testPath},
		},
		Status: csv1.ClusterStackReleaseStatus{KubernetesVersion: "v1.33.4"},
	}
	for _, m := range mut {
		m(rel)
	}
	return rel
}

func releaseLabels(component string) map[string]string {
	l := map[string]string{
		"app.kubernetes.io/managed-by": "clusterstack-operator",
		"clusterstack.io/stack":        "aws-base",
		"clusterstack.io/release":      testRelease,
	}
	if component != "" {
		l["clusterstack.io/component"] = component
	}
	return l
}

func dur(d time.Duration) metav1.Duration   { return metav1.Duration{Duration: d} }
func durp(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }
func strp(s string) *string                 { return &s }

// wantGitRepository is the GitRepository of the default release(), changed by mutate.
func wantGitRepository(mutate func(*sourcev1.GitRepositorySpec)) *sourcev1.GitRepository {
	gr := &sourcev1.GitRepository{
		TypeMeta:   metav1.TypeMeta{APIVersion: "source.toolkit.fluxcd.io/v1", Kind: "GitRepository"},
		ObjectMeta: metav1.ObjectMeta{Name: testRelease, Namespace: testNS, Labels: releaseLabels("")},
		Spec: sourcev1.GitRepositorySpec{
			URL:       "https://github.com/org/stacks",
			Interval:  dur(5 * time.Minute),
			Reference: &sourcev1.GitRepositoryRef{Tag: testRelease},
			Ignore:    strp("/*\n!/providers/\n/providers/*\n!/providers/aws/\n/providers/aws/*\n!/providers/aws/base/\n/providers/aws/base/*\n!/providers/aws/base/1-33/\n"),
		},
	}
	if mutate != nil {
		mutate(&gr.Spec)
	}
	return gr
}

func TestGitRepository(t *testing.T) {
	const commit = "5d4e3031a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7"
	validated := func(interval time.Duration, follow bool) *csv1.ClusterStackRelease {
		return release(func(r *csv1.ClusterStackRelease) {
			r.Spec.Interval, r.Spec.FollowMovedTags, r.Status.Commit = dur(interval), follow, commit
		})
	}
	tests := []struct {
		name string
		rel  *csv1.ClusterStackRelease
		want *sourcev1.GitRepository
	}{
		{
			name: "defaults: tag ref, 5m interval, only the stack path, no secret",
			rel:  release(),
			want: wantGitRepository(nil),
		},
		{
			name: "interval and secretRef copied",
			rel: release(func(r *csv1.ClusterStackRelease) {
				r.Spec.Interval = dur(90 * time.Second)
				r.Spec.Source.SecretRef = &meta.LocalObjectReference{Name: "git-creds"}
			}),
			want: wantGitRepository(func(s *sourcev1.GitRepositorySpec) {
				s.SecretRef = &meta.LocalObjectReference{Name: "git-creds"}
				s.Interval = dur(90 * time.Second)
			}),
		},
		{
			name: "validated: pinned to the commit, re-checked at most hourly",
			rel:  validated(90*time.Second, false),
			want: wantGitRepository(func(s *sourcev1.GitRepositorySpec) {
				s.Interval = dur(time.Hour)
				s.Reference.Commit = commit
			}),
		},
		{
			name: "validated, interval longer than an hour: kept",
			rel:  validated(3*time.Hour, false),
			want: wantGitRepository(func(s *sourcev1.GitRepositorySpec) {
				s.Interval = dur(3 * time.Hour)
				s.Reference.Commit = commit
			}),
		},
		{
			name: "validated, following moved tags: the tag, at the release's interval",
			rel:  validated(90*time.Second, true),
			want: wantGitRepository(func(s *sourcev1.GitRepositorySpec) { s.Interval = dur(90 * time.Second) }),
		},
		{
			name: "trailing slash in path is cleaned",
			rel:  release(func(r *csv1.ClusterStackRelease) { r.Spec.Source.Path = "stacks/aws/" }),
			want: wantGitRepository(func(s *sourcev1.GitRepositorySpec) { s.Ignore = strp("/*\n!/stacks/\n/stacks/*\n!/stacks/aws/\n") }),
		},
		{
			name: "stack at the repository root: nothing ignored",
			rel:  release(func(r *csv1.ClusterStackRelease) { r.Spec.Source.Path = "." }),
			want: wantGitRepository(func(s *sourcev1.GitRepositorySpec) { s.Ignore = nil }),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := GitRepository(tt.rel)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("GitRepository() mismatch (-want +got):\n%s", diff)
			}
			if got.Spec.SecretRef != nil && got.Spec.SecretRef == tt.rel.Spec.Source.SecretRef {
				t.Errorf("secretRef aliases the release's secretRef; want a copy")
			}
		})
	}
}

// TestGitRepositoryIgnoreKeepsOnlyStack evaluates the generated ignore rules with go-git's
// gitignore matcher, the one Flux's source-controller uses (fluxcd/pkg/sourceignore).
func TestGitRepositoryIgnoreKeepsOnlyStack(t *testing.T) {
	rules := *GitRepository(release()).Spec.Ignore
	var patterns []gitignore.Pattern
	for _, l := range strings.Split(rules, "\n") {
		if strings.TrimSpace(l) != "" {
			patterns = append(patterns, gitignore.ParsePattern(l, nil))
		}
	}
	m := gitignore.NewMatcher(patterns)
	tests := []struct {
		path        string
		dir         bool
		wantIgnored bool
	}{
		{path: "providers/aws/base/1-33/stack.yaml", wantIgnored: false},
		{path: "providers/aws/base/1-33/cluster-class/Chart.yaml", wantIgnored: false},
		{path: "providers/aws/base/1-33/cluster-addon/cni/templates/ds.yaml", wantIgnored: false},
		{path: "providers/aws/base/1-33", dir: true, wantIgnored: false},
		{path: "README.md", wantIgnored: true},
		{path: "providers/aws/base/1-32/stack.yaml", wantIgnored: true},
		{path: "providers/aws/base/1-33-old/stack.yaml", wantIgnored: true},
		{path: "providers/aws/base/1-333/stack.yaml", wantIgnored: true},
		{path: "providers/aws/other.yaml", wantIgnored: true},
		{path: "providers/openstack/scs/1-33/stack.yaml", wantIgnored: true},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			// As git does, a path is ignored when it or any of its parent directories is:
			// the rules must re-include every ancestor of the stack directory.
			parts := strings.Split(tt.path, "/")
			got := false
			for i := 1; i <= len(parts); i++ {
				if m.Match(parts[:i], i < len(parts) || tt.dir) {
					got = true
					break
				}
			}
			if got != tt.wantIgnored {
				t.Errorf("ignored(%q) = %v, want %v (rules %q)", tt.path, got, tt.wantIgnored, rules)
			}
		})
	}
}

func TestClusterClassObjects(t *testing.T) {
	ccName := testRelease + "-cluster-class"
	helmChart := &sourcev1.HelmChart{
		TypeMeta:   metav1.TypeMeta{APIVersion: "source.toolkit.fluxcd.io/v1", Kind: "HelmChart"},
		ObjectMeta: metav1.ObjectMeta{Name: ccName, Namespace: testNS, Labels: releaseLabels("cluster-class")},
		Spec: sourcev1.HelmChartSpec{
			Chart:             "./providers/aws/base/1-33/cluster-class",
			SourceRef:         sourcev1.LocalHelmChartSourceReference{Kind: "GitRepository", Name: testRelease},
			Interval:          dur(5 * time.Minute),
			ReconcileStrategy: "ChartVersion",
		},
	}
	helmRelease := &helmv2.HelmRelease{
		TypeMeta:   metav1.TypeMeta{APIVersion: "helm.toolkit.fluxcd.io/v2", Kind: "HelmRelease"},
		ObjectMeta: metav1.ObjectMeta{Name: ccName, Namespace: testNS, Labels: releaseLabels("cluster-class")},
		Spec: helmv2.HelmReleaseSpec{
			ChartRef:        &helmv2.CrossNamespaceSourceReference{Kind: "HelmChart", Name: ccName},
			Interval:        dur(5 * time.Minute),
			ReleaseName:     testRelease,
			TargetNamespace: testNS,
			Install:         &helmv2.Install{Remediation: &helmv2.InstallRemediation{Retries: -1}},
			Upgrade:         &helmv2.Upgrade{Remediation: &helmv2.UpgradeRemediation{Retries: -1}},
			PostRenderers: []helmv2.PostRenderer{{Kustomize: &helmv2.Kustomize{Patches: []kustomize.Patch{{
				Target: &kustomize.Selector{Group: "cluster.x-k8s.io", Kind: "ClusterClass"},
				Patch:  "- op: replace\n  path: /metadata/name\n  value: aws-base-1-33-v2\n",
			}}}}},
		},
	}
	kustomization := &kustomizev1.Kustomization{
		TypeMeta:   metav1.TypeMeta{APIVersion: "kustomize.toolkit.fluxcd.io/v1", Kind: "Kustomization"},
		ObjectMeta: metav1.ObjectMeta{Name: ccName, Namespace: testNS, Labels: releaseLabels("cluster-class")},
		Spec: kustomizev1.KustomizationSpec{
			SourceRef:       kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: testRelease},
			Path:            "./providers/aws/base/1-33/cluster-class",
			Interval:        dur(5 * time.Minute),
			Prune:           true,
			Wait:            true,
			Timeout:         durp(5 * time.Minute),
			TargetNamespace: testNS,
			// stacks/README.md: the operator substitutes these in a kustomize cluster-class.
			PostBuild: &kustomizev1.PostBuild{Substitute: map[string]string{
				"cluster_class_name": "aws-base-1-33-v2",
				"release_name":       "aws-base-1-33",
				"release_version":    "v2",
				"kubernetes_version": "v1.33.4",
			}},
		},
	}
	tests := []struct {
		name      string
		component csv1.ReleaseComponent
		want      []client.Object
	}{
		{
			name:      "helm chart: HelmChart + HelmRelease named after the release",
			component: csv1.ReleaseComponent{Name: "cluster-class", Kind: csv1.ComponentKindHelm, Path: "cluster-class", Version: "v2"},
			want:      []client.Object{helmChart, helmRelease},
		},
		{
			name:      "kustomize directory: one Kustomization with the cluster-class variables",
			component: csv1.ReleaseComponent{Name: "cluster-class", Kind: csv1.ComponentKindKustomize, Path: "cluster-class", Version: "sha256-0123456789ab"},
			want:      []client.Object{kustomization},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ClusterClassObjects(release(), tt.component)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ClusterClassObjects() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestClusterClassPostRendererRenames applies the generated post-renderer patch as Flux does (a
// JSON 6902 patch written in YAML) to the ClusterClass a chart renders: the ClusterClass gets
// the release name, even when the Helm release name had to be shortened.
func TestClusterClassPostRendererRenames(t *testing.T) {
	long := "openstack-scs-1-33-v0-sha.0123456789abcdef0123456789abcdef01234567"
	tests := []struct {
		name            string
		release         string
		chartVersion    string
		wantReleaseName string
	}{
		{name: "short release name", release: testRelease, chartVersion: "v2", wantReleaseName: testRelease},
		{name: "release name longer than Helm allows", release: long, chartVersion: "v0-sha.0123456789abcdef0123456789abcdef01234567", wantReleaseName: HelmReleaseName(long)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rel := release(func(r *csv1.ClusterStackRelease) { r.Name = tt.release })
			objs := ClusterClassObjects(rel, csv1.ReleaseComponent{Name: "cluster-class", Kind: csv1.ComponentKindHelm, Path: "cluster-class"})
			if len(objs) != 2 {
				t.Fatalf("got %d objects, want 2", len(objs))
			}
			hr, ok := objs[1].(*helmv2.HelmRelease)
			if !ok {
				t.Fatalf("second object is %T, want *HelmRelease", objs[1])
			}
			if hr.Spec.ReleaseName != tt.wantReleaseName {
				t.Errorf("releaseName = %q, want %q", hr.Spec.ReleaseName, tt.wantReleaseName)
			}
			if len(hr.Spec.ReleaseName) > 53 {
				t.Errorf("releaseName %q is longer than 53", hr.Spec.ReleaseName)
			}
			if len(hr.Spec.PostRenderers) != 1 || hr.Spec.PostRenderers[0].Kustomize == nil || len(hr.Spec.PostRenderers[0].Kustomize.Patches) != 1 {
				t.Fatalf("want one kustomize post-renderer with one patch, got %+v", hr.Spec.PostRenderers)
			}
			p := hr.Spec.PostRenderers[0].Kustomize.Patches[0]
			if p.Target == nil || p.Target.Group != "cluster.x-k8s.io" || p.Target.Kind != "ClusterClass" || p.Target.Name != "" {
				t.Errorf("patch target = %+v, want every ClusterClass of group cluster.x-k8s.io", p.Target)
			}
			patchJSON, err := yaml.YAMLToJSON([]byte(p.Patch))
			if err != nil {
				t.Fatalf("patch is not YAML: %v", err)
			}
			patch, err := jsonpatch.DecodePatch(patchJSON)
			if err != nil {
				t.Fatalf("patch is not a JSON 6902 patch: %v", err)
			}
			// What a chart following the SCS convention renders: {{ .Release.Name }}-{{ .Chart.Version }}.
			cc := `{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"ClusterClass","metadata":{"name":"` + hr.Spec.ReleaseName + "-" + tt.chartVersion + `","namespace":"stacks"},"spec":{"controlPlane":{"templateRef":{"name":"x-control-plane"}}}}`
			out, err := patch.Apply([]byte(cc))
			if err != nil {
				t.Fatalf("apply patch: %v", err)
			}
			var obj struct {
				Metadata struct{ Name, Namespace string }
				Spec     map[string]any
			}
			if err := json.Unmarshal(out, &obj); err != nil {
				t.Fatal(err)
			}
			if obj.Metadata.Name != tt.release {
				t.Errorf("ClusterClass name after post-render = %q, want %q", obj.Metadata.Name, tt.release)
			}
			if obj.Metadata.Namespace != "stacks" || obj.Spec["controlPlane"] == nil {
				t.Errorf("patch changed more than the name: %s", out)
			}
		})
	}
}

func TestAddonCharts(t *testing.T) {
	chart := func(component, path string) *sourcev1.HelmChart {
		return &sourcev1.HelmChart{
			TypeMeta:   metav1.TypeMeta{APIVersion: "source.toolkit.fluxcd.io/v1", Kind: "HelmChart"},
			ObjectMeta: metav1.ObjectMeta{Name: AddonChartName(testRelease, component), Namespace: testNS, Labels: releaseLabels(component)},
			Spec: sourcev1.HelmChartSpec{
				Chart:             "./providers/aws/base/1-33/" + path,
				SourceRef:         sourcev1.LocalHelmChartSourceReference{Kind: "GitRepository", Name: testRelease},
				Interval:          dur(5 * time.Minute),
				ReconcileStrategy: "ChartVersion",
			},
		}
	}
	tests := []struct {
		name       string
		components []csv1.ReleaseComponent
		want       []client.Object
	}{
		{name: "no components", components: nil, want: nil},
		{
			name:       "only kustomize components",
			components: []csv1.ReleaseComponent{{Name: "cluster-info", Kind: csv1.ComponentKindKustomize, Path: "cluster-addon/cluster-info"}},
			want:       nil,
		},
		{
			name: "helm components in order, kustomize skipped",
			components: []csv1.ReleaseComponent{
				{Name: "cni", Kind: csv1.ComponentKindHelm, Path: "cluster-addon/cni", Version: "1.0.0"},
				{Name: "cluster-info", Kind: csv1.ComponentKindKustomize, Path: "cluster-addon/cluster-info"},
				{Name: "csi", Kind: csv1.ComponentKindHelm, Path: "cluster-addon/csi/", Version: "2.0.0"},
			},
			want: []client.Object{chart("cni", "cluster-addon/cni"), chart("csi", "cluster-addon/csi")},
		},
		{
			name:       "old single-chart stack: cluster-addon umbrella chart",
			components: []csv1.ReleaseComponent{{Name: "cluster-addon", Kind: csv1.ComponentKindHelm, Path: "cluster-addon"}},
			want:       []client.Object{chart("cluster-addon", "cluster-addon")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, AddonCharts(release(), tt.components)); diff != "" {
				t.Errorf("AddonCharts() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPinnedReleaseIntervals: once pinned to a commit, a release's charts are re-checked at most
// hourly like its source, and what applies them keeps the release's interval (drift).
func TestPinnedReleaseIntervals(t *testing.T) {
	rel := release(func(r *csv1.ClusterStackRelease) {
		r.Spec.Interval = dur(30 * time.Second)
		r.Status.Commit = "5d4e3031a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7"
	})
	charts := AddonCharts(rel, []csv1.ReleaseComponent{{Name: "cni", Kind: csv1.ComponentKindHelm, Path: "cluster-addon/cni"}})
	objs := ClusterClassObjects(rel, csv1.ReleaseComponent{Name: csv1.ClusterClassComponent, Kind: csv1.ComponentKindHelm, Path: "cluster-class"})
	if len(charts) != 1 || len(objs) != 2 {
		t.Fatalf("got %d addon charts and %d cluster-class objects, want 1 and 2", len(charts), len(objs))
	}
	for _, c := range []*sourcev1.HelmChart{charts[0].(*sourcev1.HelmChart), objs[0].(*sourcev1.HelmChart)} {
		if c.Spec.Interval != dur(time.Hour) {
			t.Errorf("HelmChart %s: interval %v, want 1h", c.Name, c.Spec.Interval.Duration)
		}
	}
	if hr := objs[1].(*helmv2.HelmRelease); hr.Spec.Interval != dur(30*time.Second) {
		t.Errorf("HelmRelease %s: interval %v, want the release's 30s", hr.Name, hr.Spec.Interval.Duration)
	}
}

func TestAddonObjects(t *testing.T) {
	clusterLabels := func(component string) map[string]string {
		return map[string]string{
			"app.kubernetes.io/managed-by":  "clusterstack-operator",
			"clusterstack.io/stack":         "aws-base",
			"clusterstack.io/release":       testRelease,
			"cluster.x-k8s.io/cluster-name": "c1",
			"clusterstack.io/component":     component,
		}
	}
	kubeconfig := &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: "c1-kubeconfig", Key: "value"}}
	hr := func(component, ns, dependsOn string) *helmv2.HelmRelease {
		o := &helmv2.HelmRelease{
			TypeMeta:   metav1.TypeMeta{APIVersion: "helm.toolkit.fluxcd.io/v2", Kind: "HelmRelease"},
			ObjectMeta: metav1.ObjectMeta{Name: AddonObjectName("c1", component), Namespace: "tenant", Labels: clusterLabels(component)},
			Spec: helmv2.HelmReleaseSpec{
				ChartRef:         &helmv2.CrossNamespaceSourceReference{Kind: "HelmChart", Name: AddonChartName(testRelease, component)},
				Interval:         dur(10 * time.Minute),
				KubeConfig:       kubeconfig,
				ReleaseName:      component,
				TargetNamespace:  ns,
				StorageNamespace: ns,
				Timeout:          durp(5 * time.Minute),
				Install:          &helmv2.Install{CreateNamespace: true, Remediation: &helmv2.InstallRemediation{Retries: -1}},
				Upgrade:          &helmv2.Upgrade{Remediation: &helmv2.UpgradeRemediation{Retries: -1}},
				ValuesFrom:       []helmv2.ValuesReference{{Kind: "ConfigMap", Name: "c1-aws-base-1-33-v2-values-6d72c6eb62ae", ValuesKey: "helm_values_" + strings.ReplaceAll(component, "-", "_")}},
			},
		}
		if dependsOn != "" {
			o.Spec.DependsOn = []helmv2.DependencyReference{{Name: dependsOn}}
		}
		return o
	}
	ks := func(component, path, dependsOn string) *kustomizev1.Kustomization {
		o := &kustomizev1.Kustomization{
			TypeMeta:   metav1.TypeMeta{APIVersion: "kustomize.toolkit.fluxcd.io/v1", Kind: "Kustomization"},
			ObjectMeta: metav1.ObjectMeta{Name: AddonObjectName("c1", component), Namespace: "tenant", Labels: clusterLabels(component)},
			Spec: kustomizev1.KustomizationSpec{
				SourceRef:     kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: testRelease},
				Path:          "./providers/aws/base/1-33/" + path,
				Interval:      dur(10 * time.Minute),
				RetryInterval: durp(30 * time.Second),
				Timeout:       durp(5 * time.Minute),
				KubeConfig:    kubeconfig,
				Prune:         true,
				Wait:          true,
				PostBuild:     &kustomizev1.PostBuild{SubstituteFrom: []kustomizev1.SubstituteReference{{Kind: "ConfigMap", Name: "c1-aws-base-1-33-v2-values-6d72c6eb62ae"}}},
			},
		}
		if dependsOn != "" {
			o.Spec.DependsOn = []kustomizev1.DependencyReference{{Name: dependsOn}}
		}
		return o
	}
	tests := []struct {
		name       string
		components []csv1.ReleaseComponent
		want       []client.Object
	}{
		{name: "no components", want: nil},
		{
			name:       "one helm component, namespace defaults to kube-system",
			components: []csv1.ReleaseComponent{{Name: "cni", Kind: csv1.ComponentKindHelm, Path: "cluster-addon/cni"}},
			want:       []client.Object{hr("cni", "kube-system", "")},
		},
		{
			name: "dependsOn chains within a kind only; namespaces kept",
			components: []csv1.ReleaseComponent{
				{Name: "cni", Kind: csv1.ComponentKindHelm, Path: "cluster-addon/cni"},
				{Name: "cluster-info", Kind: csv1.ComponentKindKustomize, Path: "cluster-addon/cluster-info", Namespace: "cluster-info-system"},
				{Name: "metrics-server", Kind: csv1.ComponentKindHelm, Path: "cluster-addon/metrics-server", Namespace: "monitoring"},
				{Name: "policies", Kind: csv1.ComponentKindKustomize, Path: "cluster-addon/policies"},
				{Name: "csi", Kind: csv1.ComponentKindHelm, Path: "cluster-addon/csi"},
			},
			want: []client.Object{
				hr("cni", "kube-system", ""),
				ks("cluster-info", "cluster-addon/cluster-info", ""),
				hr("metrics-server", "monitoring", "c1-cni"),
				ks("policies", "cluster-addon/policies", "c1-cluster-info-fec7590e5f61"),
				hr("csi", "kube-system", "c1-metrics-server-53f9808b3667"),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := AddonObjects(ClusterInput{Cluster: "c1", Namespace: "tenant", Stack: "aws-base", Release: release(), Components: tt.components})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("AddonObjects() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAddonObjectsKubeconfigNotShared: every object gets its own kubeConfig reference, so a
// caller changing one does not change the others.
func TestAddonObjectsKubeconfigNotShared(t *testing.T) {
	objs := AddonObjects(ClusterInput{Cluster: "c1", Namespace: "tenant", Stack: "aws-base", Release: release(), Components: []csv1.ReleaseComponent{
		{Name: "a", Kind: csv1.ComponentKindHelm}, {Name: "b", Kind: csv1.ComponentKindHelm}, {Name: "c", Kind: csv1.ComponentKindKustomize},
	}})
	objs[0].(*helmv2.HelmRelease).Spec.KubeConfig.SecretRef.Name = "changed"
	if got := objs[1].(*helmv2.HelmRelease).Spec.KubeConfig.SecretRef.Name; got != "c1-kubeconfig" {
		t.Errorf("second HelmRelease kubeConfig = %q, want c1-kubeconfig", got)
	}
	if got := objs[2].(*kustomizev1.Kustomization).Spec.KubeConfig.SecretRef.Name; got != "c1-kubeconfig" {
		t.Errorf("Kustomization kubeConfig = %q, want c1-kubeconfig", got)
	}
}

func TestAddonTarget(t *testing.T) {
	long := strings.Repeat("x", 60) // a 60-character cluster name
	tests := []struct {
		name, cluster, namespace string
		wantNS, wantRelease      string
	}{
		{name: "no namespace: kube-system, the component's name", cluster: "c1", wantNS: "kube-system", wantRelease: "cni"},
		{name: "a fixed namespace is shared by every cluster", cluster: "c1", namespace: "net", wantNS: "net", wantRelease: "cni"},
		{name: "placeholder: namespace and release per cluster", cluster: "c1", namespace: "cni-${cluster_name}", wantNS: "cni-c1", wantRelease: "c1-cni"},
		{name: "placeholder alone", cluster: "tenant-a", namespace: "${cluster_name}", wantNS: "tenant-a", wantRelease: "tenant-a-cni"},
		{name: "placeholder twice", cluster: "c1", namespace: "${cluster_name}-x-${cluster_name}", wantNS: "c1-x-c1", wantRelease: "c1-cni"},
		{
			name: "too long after the substitution: shortened with a hash", cluster: long, namespace: "cni-${cluster_name}",
			wantNS: "cni-" + strings.Repeat("x", 46) + "-" + tupleHash([]string{"cni-" + long}), wantRelease: strings.Repeat("x", 40) + "-345f7887bf7d",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := csv1.ReleaseComponent{Name: "cni", Kind: csv1.ComponentKindHelm, Path: "cluster-addon/cni", Namespace: tt.namespace}
			ns, rel := AddonTarget(tt.cluster, c)
			if ns != tt.wantNS || rel != tt.wantRelease {
				t.Errorf("AddonTarget(%q, namespace %q) = %q, %q; want %q, %q", tt.cluster, tt.namespace, ns, rel, tt.wantNS, tt.wantRelease)
			}
			if !isLabelChars(ns) || len(ns) > MaxObjectName {
				t.Errorf("namespace %q is no DNS label of at most 63 characters", ns)
			}
			if !helmReleaseNameRE.MatchString(rel) || len(rel) > MaxHelmReleaseName {
				t.Errorf("release name %q is no Helm release name", rel)
			}
			hr := AddonObjects(ClusterInput{Cluster: tt.cluster, Namespace: "tenant", Stack: "aws-base", Release: release(), Components: []csv1.ReleaseComponent{c}})[0].(*helmv2.HelmRelease)
			if hr.Spec.TargetNamespace != ns || hr.Spec.StorageNamespace != ns || hr.Spec.ReleaseName != rel {
				t.Errorf("HelmRelease targets %q/%q (storage %q), want %q/%q", hr.Spec.TargetNamespace, hr.Spec.ReleaseName, hr.Spec.StorageNamespace, ns, rel)
			}
		})
	}
	t.Run("clusters whose names share a long prefix stay apart", func(t *testing.T) {
		c := csv1.ReleaseComponent{Name: "cni", Kind: csv1.ComponentKindHelm, Namespace: "cni-${cluster_name}"}
		ns1, rel1 := AddonTarget(long+"-1", c)
		ns2, rel2 := AddonTarget(long+"-2", c)
		if ns1 == ns2 || rel1 == rel2 {
			t.Errorf("two clusters share %q/%q and %q/%q", ns1, rel1, ns2, rel2)
		}
	})
}

// helmReleaseNameRE is Helm's release name pattern (helm.sh/helm/v3/pkg/chartutil).
var helmReleaseNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

func TestHelmReleaseName(t *testing.T) {
	name53 := strings.Repeat("a", 50) + "-v1"
	name54 := strings.Repeat("a", 51) + "-v1"
	long := "openstack-scs-1-33-v0-sha.0123456789abcdef0123456789abcdef01234567"
	tests := []struct {
		name string
		in   string
		want string
	}{
		{name: "short name unchanged", in: "cni", want: "cni"},
		{name: "release name unchanged", in: "aws-base-1-33-v2", want: "aws-base-1-33-v2"},
		{name: "exactly 53 unchanged", in: name53, want: name53},
		{name: "dots kept when it fits", in: "aws-base-1-36-v1-rc.1", want: "aws-base-1-36-v1-rc.1"},
		{name: "54 shortened to prefix and hash", in: name54, want: strings.Repeat("a", 40) + "-cdb8c0dfac62"},
		{name: "long SCS hash release: dots become dashes in the prefix", in: long, want: "openstack-scs-1-33-v0-sha-0123456789abcd-dd3ebc45f81d"},
		{name: "dash at the cut is trimmed", in: strings.Repeat("a", 39) + "-" + strings.Repeat("b", 20), want: strings.Repeat("a", 39) + "-fdf084e4e3f4"},
		{name: "a name shaped like a hashed one is hashed too", in: "cni-0123456789ab", want: "cni-0123456789ab-bf6774edf30c"},
		{name: "upper case is not a Helm name", in: "CNI", want: "cni-9172aa1f208c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := HelmReleaseName(tt.in)
			if got != tt.want {
				t.Errorf("HelmReleaseName(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if len(got) > 53 {
				t.Errorf("HelmReleaseName(%q) = %q has %d characters, more than 53", tt.in, got, len(got))
			}
			if !helmReleaseNameRE.MatchString(got) {
				t.Errorf("HelmReleaseName(%q) = %q is not a valid Helm release name", tt.in, got)
			}
			if again := HelmReleaseName(tt.in); again != got {
				t.Errorf("HelmReleaseName is not stable: %q then %q", got, again)
			}
		})
	}
	t.Run("long names with a common prefix stay distinct", func(t *testing.T) {
		a := HelmReleaseName(strings.Repeat("x", 60) + "-v1")
		b := HelmReleaseName(strings.Repeat("x", 60) + "-v2")
		if a == b {
			t.Errorf("two names shortened to the same %q", a)
		}
	})
}

// Every HelmRelease and Kustomization of a release, cluster-class and addons alike, runs as the
// release's service account; none is set when the release names none (Flux's default applies).
func TestServiceAccountOnEveryAppliedObject(t *testing.T) {
	comps := []csv1.ReleaseComponent{
		{Name: "cni", Kind: csv1.ComponentKindHelm, Path: "cluster-addon/cni"},
		{Name: "info", Kind: csv1.ComponentKindKustomize, Path: "cluster-addon/info"},
	}
	for _, sa := range []string{"team-flux", ""} {
		rel := release(func(r *csv1.ClusterStackRelease) { r.Spec.ServiceAccountName = sa })
		var objs []client.Object
		for _, kind := range []csv1.ComponentKind{csv1.ComponentKindHelm, csv1.ComponentKindKustomize} {
			objs = append(objs, ClusterClassObjects(rel, csv1.ReleaseComponent{Name: csv1.ClusterClassComponent, Kind: kind, Path: "cluster-class"})...)
		}
		objs = append(objs, AddonObjects(ClusterInput{Cluster: "c1", Namespace: rel.Namespace, Stack: "s", Release: rel, Components: comps})...)
		n := 0
		for _, o := range objs {
			var got string
			switch o := o.(type) {
			case *helmv2.HelmRelease:
				got = o.Spec.ServiceAccountName
			case *kustomizev1.Kustomization:
				got = o.Spec.ServiceAccountName
			default:
				continue
			}
			n++
			if got != sa {
				t.Errorf("%T %s: serviceAccountName %q, want %q", o, o.GetName(), got, sa)
			}
		}
		if n != 4 {
			t.Errorf("checked %d HelmReleases and Kustomizations, want 4", n)
		}
	}
}

// TestAddonObjectsFluxShard: the Cluster's Flux shard (FluxShardLabel) is copied onto every
// HelmRelease and Kustomization, so Flux's shard of the Cluster reconciles them; without one no
// label is added.
func TestAddonObjectsFluxShard(t *testing.T) {
	components := []csv1.ReleaseComponent{
		{Name: "cni", Kind: csv1.ComponentKindHelm, Path: "cluster-addon/cni"},
		{Name: "cluster-info", Kind: csv1.ComponentKindKustomize, Path: "cluster-addon/cluster-info"},
	}
	tests := []struct {
		name, shard string
		want        []string // the label's value on each object; "-" for no label
	}{
		{name: "no Flux shard", shard: "", want: []string{"-", "-"}},
		{name: "Flux shard1", shard: "shard1", want: []string{"shard1", "shard1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := AddonObjects(ClusterInput{Cluster: "c1", Namespace: "tenant", Stack: "aws-base", Release: release(), Components: components, FluxShard: tt.shard})
			var got []string
			for _, o := range objs {
				v, ok := o.GetLabels()[FluxShardLabel]
				if !ok {
					v = "-"
				}
				got = append(got, v)
				if o.GetLabels()[csv1.ClusterNameLabel] != "c1" {
					t.Errorf("%s lost the cluster labels: %v", o.GetName(), o.GetLabels())
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("%s label (-want +got):\n%s", FluxShardLabel, diff)
			}
		})
	}
}
