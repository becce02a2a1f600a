package opgen

import (
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/kustomize"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

const ns = "clusterstack-system"

func operator(mut ...func(*csv1.ManagementOperator)) *csv1.ManagementOperator {
	op := &csv1.ManagementOperator{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-api"},
		Spec: csv1.ManagementOperatorSpec{
			Component: csv1.OperatorComponent{Type: csv1.CoreProvider, Name: "cluster-api"},
			Version:   "v1.10.3",
			Source:    csv1.OperatorSource{Git: &csv1.OperatorGitSource{URL: "https://git.example.com/operators.git", Path: "capi"}},
		},
	}
	for _, m := range mut {
		m(op)
	}
	return op
}

var labels = map[string]string{
	"app.kubernetes.io/managed-by":        "clusterstack-operator",
	"clusterstack.io/management-operator": "cluster-api",
}

func om() metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: "cluster-api-operator", Namespace: ns, Labels: labels}
}

func dur(d time.Duration) metav1.Duration   { return metav1.Duration{Duration: d} }
func durp(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }
func strp(s string) *string                 { return &s }

var (
	grTM = metav1.TypeMeta{APIVersion: "source.toolkit.fluxcd.io/v1", Kind: "GitRepository"}
	ksTM = metav1.TypeMeta{APIVersion: "kustomize.toolkit.fluxcd.io/v1", Kind: "Kustomization"}
	hcTM = metav1.TypeMeta{APIVersion: "source.toolkit.fluxcd.io/v1", Kind: "HelmChart"}
	hrTM = metav1.TypeMeta{APIVersion: "helm.toolkit.fluxcd.io/v2", Kind: "HelmRelease"}
)

func gitRepo(mut func(*sourcev1.GitRepository)) *sourcev1.GitRepository {
	gr := &sourcev1.GitRepository{
		TypeMeta: grTM, ObjectMeta: om(),
		Spec: sourcev1.GitRepositorySpec{
			URL:       "https://git.example.com/operators.git",
			Interval:  dur(10 * time.Minute),
			Reference: &sourcev1.GitRepositoryRef{Tag: "v1.10.3"},
			Ignore:    strp("/*\n!/capi/\n"),
		},
	}
	if mut != nil {
		mut(gr)
	}
	return gr
}

func ociSource() *csv1.OperatorOCISource {
	return &csv1.OperatorOCISource{
		OCISource: csv1.OCISource{
			URL:           "oci://registry.example.com/operators/capi",
			SecretRef:     &meta.LocalObjectReference{Name: "registry"},
			CertSecretRef: &meta.LocalObjectReference{Name: "registry-ca"},
			Verify:        &csv1.OCIVerification{SecretRef: meta.LocalObjectReference{Name: "cosign-keys"}},
		},
		TagPrefix: "capi-",
	}
}

func ociRepo(mut func(*sourcev1.OCIRepository)) *sourcev1.OCIRepository {
	r := &sourcev1.OCIRepository{
		TypeMeta: metav1.TypeMeta{APIVersion: "source.toolkit.fluxcd.io/v1", Kind: "OCIRepository"}, ObjectMeta: om(),
		Spec: sourcev1.OCIRepositorySpec{
			URL:           "oci://registry.example.com/operators/capi",
			Reference:     &sourcev1.OCIRepositoryRef{Tag: "capi-v1.10.3"},
			SecretRef:     &meta.LocalObjectReference{Name: "registry"},
			CertSecretRef: &meta.LocalObjectReference{Name: "registry-ca"},
			Verify:        &sourcev1.OCIRepositoryVerification{Provider: "cosign", SecretRef: &meta.LocalObjectReference{Name: "cosign-keys"}},
			Interval:      dur(10 * time.Minute),
		},
	}
	if mut != nil {
		mut(r)
	}
	return r
}

func kustomization(mut func(*kustomizev1.Kustomization)) *kustomizev1.Kustomization {
	ks := &kustomizev1.Kustomization{
		TypeMeta: ksTM, ObjectMeta: om(),
		Spec: kustomizev1.KustomizationSpec{
			SourceRef:      kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "cluster-api-operator"},
			Path:           "./capi",
			Interval:       dur(10 * time.Minute),
			RetryInterval:  durp(time.Minute),
			Timeout:        durp(10 * time.Minute),
			Prune:          true,
			DeletionPolicy: "Orphan",
			Wait:           true,
		},
	}
	if mut != nil {
		mut(ks)
	}
	return ks
}

func TestObjects(t *testing.T) {
	tests := []struct {
		name    string
		op      *csv1.ManagementOperator
		version string
		commit  string
		want    []client.Object
	}{
		{
			name:    "defaults: kustomize, tag = version, only the operator's directory, prune, wait, orphan on deletion",
			op:      operator(),
			version: "v1.10.3",
			want:    []client.Object{gitRepo(nil), kustomization(nil)},
		},
		{
			name: "the version given, not spec.version, is the tag (a refused spec.version leaves the accepted one)",
			op:   operator(func(op *csv1.ManagementOperator) { op.Spec.Version = "v1.9.0" }),
			// e.g. a refused downgrade: the objects stay at the accepted version.
			version: "v1.10.3",
			want:    []client.Object{gitRepo(nil), kustomization(nil)},
		},
		{
			name:    "a commit pins the GitRepository (Flux's ref.commit wins over the tag, which stays for people)",
			op:      operator(),
			version: "v1.10.3",
			commit:  "0123456789abcdef0123456789abcdef01234567",
			want: []client.Object{
				gitRepo(func(gr *sourcev1.GitRepository) {
					gr.Spec.Reference.Commit = "0123456789abcdef0123456789abcdef01234567"
				}),
				kustomization(nil),
			},
		},
		{
			name: "tag prefix, credentials, interval and timeout",
			op: operator(func(op *csv1.ManagementOperator) {
				op.Spec.Source.Git.TagPrefix = "cluster-api/"
				op.Spec.Source.Git.SecretRef = &meta.LocalObjectReference{Name: "git-creds"}
				op.Spec.Interval = &metav1.Duration{Duration: time.Minute}
				op.Spec.Timeout = &metav1.Duration{Duration: 3 * time.Minute}
			}),
			version: "v1.10.3",
			want: []client.Object{
				gitRepo(func(gr *sourcev1.GitRepository) {
					gr.Spec.Reference.Tag = "cluster-api/v1.10.3"
					gr.Spec.SecretRef = &meta.LocalObjectReference{Name: "git-creds"}
					gr.Spec.Interval = dur(time.Minute)
				}),
				kustomization(func(ks *kustomizev1.Kustomization) {
					ks.Spec.Interval = dur(time.Minute)
					ks.Spec.Timeout = durp(3 * time.Minute)
				}),
			},
		},
		{
			name: "kustomize: patches, variables Secret as postBuild.substituteFrom, target namespace, health checks, service account",
			op: operator(func(op *csv1.ManagementOperator) {
				op.Spec.Kustomize = &csv1.OperatorKustomize{
					Patches:            []kustomize.Patch{{Patch: "- op: add\n  path: /spec/replicas\n  value: 2\n", Target: &kustomize.Selector{Kind: "Deployment", Name: "capi-controller-manager"}}},
					VariablesSecretRef: &meta.LocalObjectReference{Name: "capi-variables"},
					TargetNamespace:    "capi-system",
				}
				op.Spec.HealthChecks = []meta.NamespacedObjectKindReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "webhook", Namespace: "capi-system"}}
				op.Spec.ServiceAccountName = "flux-operators"
			}),
			version: "v1.10.3",
			want: []client.Object{
				gitRepo(nil),
				kustomization(func(ks *kustomizev1.Kustomization) {
					ks.Spec.Patches = []kustomize.Patch{{Patch: "- op: add\n  path: /spec/replicas\n  value: 2\n", Target: &kustomize.Selector{Kind: "Deployment", Name: "capi-controller-manager"}}}
					ks.Spec.PostBuild = &kustomizev1.PostBuild{SubstituteFrom: []kustomizev1.SubstituteReference{{Kind: "Secret", Name: "capi-variables"}}}
					ks.Spec.TargetNamespace = "capi-system"
					ks.Spec.HealthChecks = []meta.NamespacedObjectKindReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "webhook", Namespace: "capi-system"}}
					ks.Spec.ServiceAccountName = "flux-operators"
				}),
			},
		},
		{
			name:    "the repository root: nothing ignored, path ./",
			op:      operator(func(op *csv1.ManagementOperator) { op.Spec.Source.Git.Path = "" }),
			version: "v1.10.3",
			want: []client.Object{
				gitRepo(func(gr *sourcev1.GitRepository) { gr.Spec.Ignore = nil }),
				kustomization(func(ks *kustomizev1.Kustomization) { ks.Spec.Path = "./" }),
			},
		},
		{
			name: "chart: HelmChart at the chart's path with the Revision strategy, HelmRelease with values, CRDs created and replaced",
			op: operator(func(op *csv1.ManagementOperator) {
				op.Spec.Source.Git.Path = "charts/"
				op.Spec.Chart = &csv1.OperatorChart{Path: "cluster-api", Values: &apiextensionsv1.JSON{Raw: []byte(`{"replicas":2}`)}, TargetNamespace: "capi-system"}
			}),
			version: "v1.10.3",
			want: []client.Object{
				gitRepo(func(gr *sourcev1.GitRepository) { gr.Spec.Ignore = strp("/*\n!/charts/\n") }),
				&sourcev1.HelmChart{
					TypeMeta: hcTM, ObjectMeta: om(),
					Spec: sourcev1.HelmChartSpec{
						Chart:             "./charts/cluster-api",
						SourceRef:         sourcev1.LocalHelmChartSourceReference{Kind: "GitRepository", Name: "cluster-api-operator"},
						Interval:          dur(10 * time.Minute),
						ReconcileStrategy: "Revision",
					},
				},
				&helmv2.HelmRelease{
					TypeMeta: hrTM, ObjectMeta: om(),
					Spec: helmv2.HelmReleaseSpec{
						ChartRef:         &helmv2.CrossNamespaceSourceReference{Kind: "HelmChart", Name: "cluster-api-operator"},
						Interval:         dur(10 * time.Minute),
						ReleaseName:      "cluster-api",
						TargetNamespace:  "capi-system",
						StorageNamespace: "capi-system",
						Timeout:          durp(10 * time.Minute),
						Install:          &helmv2.Install{CreateNamespace: true, CRDs: "CreateReplace", Remediation: &helmv2.InstallRemediation{Retries: -1}},
						Upgrade:          &helmv2.Upgrade{CRDs: "CreateReplace", Remediation: &helmv2.UpgradeRemediation{Retries: -1}},
						Values:           &apiextensionsv1.JSON{Raw: []byte(`{"replicas":2}`)},
					},
				},
			},
		},
		{
			name:    "chart without values or namespace: installed into the management namespace",
			op:      operator(func(op *csv1.ManagementOperator) { op.Spec.Chart = &csv1.OperatorChart{} }),
			version: "v1.10.3",
			want: []client.Object{
				gitRepo(nil),
				&sourcev1.HelmChart{
					TypeMeta: hcTM, ObjectMeta: om(),
					Spec: sourcev1.HelmChartSpec{
						Chart:             "./capi",
						SourceRef:         sourcev1.LocalHelmChartSourceReference{Kind: "GitRepository", Name: "cluster-api-operator"},
						Interval:          dur(10 * time.Minute),
						ReconcileStrategy: "Revision",
					},
				},
				&helmv2.HelmRelease{
					TypeMeta: hrTM, ObjectMeta: om(),
					Spec: helmv2.HelmReleaseSpec{
						ChartRef:         &helmv2.CrossNamespaceSourceReference{Kind: "HelmChart", Name: "cluster-api-operator"},
						Interval:         dur(10 * time.Minute),
						ReleaseName:      "cluster-api",
						TargetNamespace:  ns,
						StorageNamespace: ns,
						Timeout:          durp(10 * time.Minute),
						Install:          &helmv2.Install{CreateNamespace: true, CRDs: "CreateReplace", Remediation: &helmv2.InstallRemediation{Retries: -1}},
						Upgrade:          &helmv2.Upgrade{CRDs: "CreateReplace", Remediation: &helmv2.UpgradeRemediation{Retries: -1}},
					},
				},
			},
		},
		{
			name: "an OCI source: an OCIRepository at the prefixed tag with the Secrets and cosign verification, read by the Kustomization at its root",
			op: operator(func(op *csv1.ManagementOperator) {
				op.Spec.Source = csv1.OperatorSource{OCI: ociSource()}
			}),
			version: "v1.10.3",
			want: []client.Object{
				ociRepo(nil),
				kustomization(func(ks *kustomizev1.Kustomization) {
					ks.Spec.SourceRef.Kind = "OCIRepository"
					ks.Spec.Path = "./"
				}),
			},
		},
		{
			name: "an OCI source pinned: Flux's ref.digest (sha256) wins over the tag",
			op: operator(func(op *csv1.ManagementOperator) {
				op.Spec.Source = csv1.OperatorSource{OCI: ociSource()}
			}),
			version: "v1.10.3",
			commit:  strings.Repeat("ab", 32),
			want: []client.Object{
				ociRepo(func(r *sourcev1.OCIRepository) { r.Spec.Reference.Digest = "sha256:" + strings.Repeat("ab", 32) }),
				kustomization(func(ks *kustomizev1.Kustomization) {
					ks.Spec.SourceRef.Kind = "OCIRepository"
					ks.Spec.Path = "./"
				}),
			},
		},
		{
			name: "an OCI chart: the OCIRepository keeps the Helm chart layer, the HelmRelease reads it (no HelmChart)",
			op: operator(func(op *csv1.ManagementOperator) {
				op.Spec.Source = csv1.OperatorSource{OCI: ociSource()}
				op.Spec.Chart = &csv1.OperatorChart{}
			}),
			version: "v1.10.3",
			want: []client.Object{
				ociRepo(func(r *sourcev1.OCIRepository) {
					r.Spec.LayerSelector = &sourcev1.OCILayerSelector{MediaType: "application/vnd.cncf.helm.chart.content.v1.tar+gzip", Operation: "copy"}
				}),
				&helmv2.HelmRelease{
					TypeMeta: hrTM, ObjectMeta: om(),
					Spec: helmv2.HelmReleaseSpec{
						ChartRef:         &helmv2.CrossNamespaceSourceReference{Kind: "OCIRepository", Name: "cluster-api-operator"},
						Interval:         dur(10 * time.Minute),
						ReleaseName:      "cluster-api",
						TargetNamespace:  ns,
						StorageNamespace: ns,
						Timeout:          durp(10 * time.Minute),
						Install:          &helmv2.Install{CreateNamespace: true, CRDs: "CreateReplace", Remediation: &helmv2.InstallRemediation{Retries: -1}},
						Upgrade:          &helmv2.Upgrade{CRDs: "CreateReplace", Remediation: &helmv2.UpgradeRemediation{Retries: -1}},
					},
				},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Objects(tt.op, ns, tt.version, tt.commit)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Objects (-want +got):\n%s", diff)
			}
		})
	}
}

func TestObjectsDoNotAliasTheSpec(t *testing.T) {
	op := operator(func(op *csv1.ManagementOperator) {
		op.Spec.Source.Git.SecretRef = &meta.LocalObjectReference{Name: "git-creds"}
		op.Spec.Kustomize = &csv1.OperatorKustomize{Patches: []kustomize.Patch{{Patch: "p", Target: &kustomize.Selector{Kind: "Deployment"}}}}
		op.Spec.HealthChecks = []meta.NamespacedObjectKindReference{{Kind: "Deployment", Name: "a"}}
	})
	before := op.DeepCopy()
	objs := Objects(op, ns, "v1.10.3", "")
	gr, ks := objs[0].(*sourcev1.GitRepository), objs[1].(*kustomizev1.Kustomization)
	gr.Spec.SecretRef.Name = "changed"
	ks.Spec.Patches[0].Patch = "changed"
	ks.Spec.Patches[0].Target.Kind = "changed"
	ks.Spec.HealthChecks[0].Name = "changed"
	if diff := cmp.Diff(before, op); diff != "" {
		t.Errorf("changing the generated objects changed the ManagementOperator (-before +after):\n%s", diff)
	}

	chart := operator(func(op *csv1.ManagementOperator) {
		op.Spec.Chart = &csv1.OperatorChart{Values: &apiextensionsv1.JSON{Raw: []byte(`{"a":1}`)}}
	})
	hr := Objects(chart, ns, "v1.10.3", "")[2].(*helmv2.HelmRelease)
	hr.Spec.Values.Raw[2] = 'b'
	if got := string(chart.Spec.Chart.Values.Raw); got != `{"a":1}` {
		t.Errorf("changing the HelmRelease's values changed the ManagementOperator's: %s", got)
	}
}

func TestObjectName(t *testing.T) {
	tests := []struct{ name, want string }{
		{"cluster-api", "cluster-api-operator"},
		{"capo", "capo-operator"},
		{strings.Repeat("a", 63), strings.Repeat("a", 50) + "-" + "<hash>"},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		got := ObjectName(tt.name)
		if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
			t.Errorf("ObjectName(%q) = %q is not a DNS label: %v", tt.name, got, errs)
		}
		if strings.HasSuffix(tt.want, "<hash>") {
			if !strings.HasPrefix(got, strings.TrimSuffix(tt.want, "<hash>")) || len(got) != 63 {
				t.Errorf("ObjectName(%q) = %q, want %s", tt.name, got, tt.want)
			}
		} else if got != tt.want {
			t.Errorf("ObjectName(%q) = %q, want %q", tt.name, got, tt.want)
		}
		if other, ok := seen[got]; ok {
			t.Errorf("ObjectName(%q) = ObjectName(%q) = %q", tt.name, other, got)
		}
		seen[got] = tt.name
	}
}

func TestLabelsOfEveryObject(t *testing.T) {
	long := strings.Repeat("x", 63)
	for _, op := range []*csv1.ManagementOperator{
		operator(),
		operator(func(op *csv1.ManagementOperator) { op.Spec.Chart = &csv1.OperatorChart{} }),
		operator(func(op *csv1.ManagementOperator) { op.Name, op.Spec.Component.Name = long, long }),
	} {
		for _, o := range Objects(op, ns, "v1.10.3", "") {
			l := o.GetLabels()
			if l[csv1.ManagedByLabel] != csv1.ManagedByValue || l[csv1.ManagementOperatorLabel] != op.Name {
				t.Errorf("%T %s: labels %v, want managed-by and %s=%s", o, o.GetName(), l, csv1.ManagementOperatorLabel, op.Name)
			}
			if o.GetNamespace() != ns {
				t.Errorf("%T %s: namespace %q, want the management namespace %q", o, o.GetName(), o.GetNamespace(), ns)
			}
		}
	}
}

func TestRelatedObjects(t *testing.T) {
	tests := []struct {
		name string
		op   *csv1.ManagementOperator
		want []csv1.ResourceReference
	}{
		{
			name: "kustomize",
			op:   operator(),
			want: []csv1.ResourceReference{
				{Group: "source.toolkit.fluxcd.io", Resource: "gitrepositories", Namespace: ns, Name: "cluster-api-operator"},
				{Group: "kustomize.toolkit.fluxcd.io", Resource: "kustomizations", Namespace: ns, Name: "cluster-api-operator"},
			},
		},
		{
			name: "chart",
			op:   operator(func(op *csv1.ManagementOperator) { op.Spec.Chart = &csv1.OperatorChart{} }),
			want: []csv1.ResourceReference{
				{Group: "source.toolkit.fluxcd.io", Resource: "gitrepositories", Namespace: ns, Name: "cluster-api-operator"},
				{Group: "source.toolkit.fluxcd.io", Resource: "helmcharts", Namespace: ns, Name: "cluster-api-operator"},
				{Group: "helm.toolkit.fluxcd.io", Resource: "helmreleases", Namespace: ns, Name: "cluster-api-operator"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, RelatedObjects(tt.op, ns)); diff != "" {
				t.Errorf("RelatedObjects (-want +got):\n%s", diff)
			}
		})
	}
}
