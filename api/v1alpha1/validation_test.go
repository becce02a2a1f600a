package v1alpha1_test

import (
	"strings"
	"time"

	"github.com/fluxcd/pkg/apis/kustomize"
	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/releasename"
)

// versionOfLength is a valid stack version ("v1-aaa....0") of n >= 6 characters.
func versionOfLength(n int) string { return "v1-" + strings.Repeat("a", n-5) + ".0" }

func validStack(name string) *csv1.ClusterStack {
	return &csv1.ClusterStack{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: csv1.ClusterStackSpec{
			Provider: "aws", Name: "base", KubernetesVersion: "1.33",
			Source:   csv1.StackSource{URL: "https://git.example.com/stacks.git", Path: "providers/aws/base/1-33"},
			Versions: []string{"v1"},
		},
	}
}

var _ = Describe("ClusterStack validation", func() {
	It("accepts a valid ClusterStack and defaults its interval", func(ctx SpecContext) {
		cs := validStack("valid")
		Expect(k8s.Create(ctx, cs)).To(Succeed())
		Expect(cs.Spec.Interval.Duration.String()).To(Equal("5m0s"))
		Expect(cs.Spec.AutoSubscribe).To(BeFalse())
	})

	DescribeTable("rejects bad input with a message a person can act on",
		func(ctx SpecContext, mutate func(*csv1.ClusterStack), message string) {
			cs := validStack("bad")
			mutate(cs)
			err := k8s.Create(ctx, cs)
			Expect(err).To(HaveOccurred())
			Expect(err.Error()).To(ContainSubstring(message))
		},
		Entry("no version and no auto-subscribe", func(cs *csv1.ClusterStack) { cs.Spec.Versions = nil },
			"set spec.versions to at least one version"),
		Entry("a provider with a dash, which would make tags ambiguous", func(cs *csv1.ClusterStack) { cs.Spec.Provider = "my-cloud" },
			"spec.provider"),
		Entry("a Kubernetes patch version instead of a minor", func(cs *csv1.ClusterStack) { cs.Spec.KubernetesVersion = "1.33.4" },
			"spec.kubernetesVersion"),
		Entry("a version that is not vN", func(cs *csv1.ClusterStack) { cs.Spec.Versions = []string{"1.0"} },
			"spec.versions[0]"),
		Entry("a path leaving the repository", func(cs *csv1.ClusterStack) { cs.Spec.Source.Path = "../other" },
			"spec.source.path must be relative to the repository root and must not contain '..'"),
		Entry("a URL that is not Git over HTTP(S) or SSH", func(cs *csv1.ClusterStack) { cs.Spec.Source.URL = "file:///etc" },
			"spec.source.url"),
		Entry("no version and no auto-subscribe: the message is the rule's, not a CEL evaluation error", func(cs *csv1.ClusterStack) { cs.Spec.Versions = nil },
			"spec: Invalid value: set spec.versions to at least one version"),
		Entry("a version whose release name would be 64 characters", func(cs *csv1.ClusterStack) { cs.Spec.Versions = []string{"v1", versionOfLength(50)} },
			"spec.versions: release name aws-base-1-33-"+versionOfLength(50)+" would be 64 characters; release names (tags) must be at most 63: use a shorter provider, name or version"),
		Entry("a long version with the longest provider and name", func(cs *csv1.ClusterStack) {
			cs.Spec.Provider, cs.Spec.Name, cs.Spec.Versions = strings.Repeat("p", 32), strings.Repeat("n", 32), []string{"v123"}
		}, "would be 75 characters; release names (tags) must be at most 63"),
		Entry("auto-subscribe with a provider, name and minor leaving less than 16 characters for the version", func(cs *csv1.ClusterStack) {
			cs.Spec.AutoSubscribe, cs.Spec.Versions = true, nil
			cs.Spec.Provider, cs.Spec.Name = strings.Repeat("p", 32), strings.Repeat("n", 9)
		}, "spec.provider, spec.name, spec.kubernetesVersion: the release names start with "+strings.Repeat("p", 32)+"-"+strings.Repeat("n", 9)+"-1-33-, 48 characters; with spec.autoSubscribe that must be at most 47 so that versions of up to 16 characters fit into release names (tags) of at most 63: use a shorter provider or name, or pin spec.versions instead of autoSubscribe"),
		Entry("a name of 64 characters", func(cs *csv1.ClusterStack) { cs.Name = strings.Repeat("s", 64) },
			"metadata.name is 64 characters; a ClusterStack name must be at most 63 (it goes into label values and generated names): choose a shorter name"),
		Entry("a name of 253 characters", func(cs *csv1.ClusterStack) { cs.Name = strings.Repeat("s", 253) },
			"metadata.name is 253 characters; a ClusterStack name must be at most 63"),
		Entry("an interval of 9s", func(cs *csv1.ClusterStack) { cs.Spec.Interval = &metav1.Duration{Duration: 9 * time.Second} },
			"spec.interval must be a duration of at least 10s, such as 30s or 5m"),
		Entry("an interval just below 10s", func(cs *csv1.ClusterStack) { cs.Spec.Interval = &metav1.Duration{Duration: 9999 * time.Millisecond} },
			"spec.interval must be a duration of at least 10s"),
		Entry("an interval of 0s", func(cs *csv1.ClusterStack) { cs.Spec.Interval = &metav1.Duration{} },
			"spec.interval must be a duration of at least 10s"),
		Entry("a secretRef that is not a Secret name", func(cs *csv1.ClusterStack) { cs.Spec.Source.SecretRef = &meta.LocalObjectReference{Name: "Git_Creds"} },
			"spec.source.secretRef.name must be the name of a Secret in the same namespace"),
		Entry("an empty secretRef name", func(cs *csv1.ClusterStack) { cs.Spec.Source.SecretRef = &meta.LocalObjectReference{} },
			"spec.source.secretRef.name must be the name of a Secret"),
		Entry("no source", func(cs *csv1.ClusterStack) { cs.Spec.Source = csv1.StackSource{} },
			"set spec.source.url (a Git repository) or spec.source.oci (an OCI repository), exactly one of them"),
		Entry("both a Git and an OCI source", func(cs *csv1.ClusterStack) {
			cs.Spec.Source.OCI = &csv1.OCISource{URL: "oci://ghcr.io/org/stacks/aws-base"}
		}, "set spec.source.url (a Git repository) or spec.source.oci (an OCI repository), exactly one of them"),
		Entry("a Git source without a path", func(cs *csv1.ClusterStack) { cs.Spec.Source.Path = "" },
			"spec.source.path is required with a Git repository (spec.source.url)"),
		Entry("Git credentials with an OCI source", func(cs *csv1.ClusterStack) {
			cs.Spec.Source = csv1.StackSource{OCI: &csv1.OCISource{URL: "oci://ghcr.io/org/stacks/aws-base"}, SecretRef: &meta.LocalObjectReference{Name: "git"}}
		}, "with spec.source.oci, set the registry's credentials in spec.source.oci.secretRef"),
		Entry("an OCI URL with a tag", func(cs *csv1.ClusterStack) {
			cs.Spec.Source = csv1.StackSource{OCI: &csv1.OCISource{URL: "oci://ghcr.io/org/stacks/aws-base:v1"}}
		}, "url must be an OCI repository URL without tag or digest"),
		Entry("plain http to a registry that is not on loopback", func(cs *csv1.ClusterStack) {
			cs.Spec.Source = csv1.StackSource{OCI: &csv1.OCISource{URL: "oci://registry.example.com/stacks", Insecure: true}}
		}, "insecure (plain http) is allowed only for a registry on a loopback address"),
		Entry("a branch prefix naming another namespace's branches", func(cs *csv1.ClusterStack) {
			cs.Spec.Updates = &csv1.UpdatePolicy{Proposals: &csv1.ProposalPolicy{Provider: csv1.ForgeGitea, SecretRef: meta.LocalObjectReference{Name: "bot"},
				BranchPrefix: "clusterstack/team-b/aws-base-1-33"}}
		}, "spec.updates.proposals.branchPrefix must be one path element without '/': the operator appends /<namespace>/<stack>/<wave> itself"),
		Entry("a branch prefix ending in '/'", func(cs *csv1.ClusterStack) {
			cs.Spec.Updates = &csv1.UpdatePolicy{Proposals: &csv1.ProposalPolicy{Provider: csv1.ForgeGitea, SecretRef: meta.LocalObjectReference{Name: "bot"},
				BranchPrefix: "bots/"}}
		}, "spec.updates.proposals.branchPrefix must be one path element"),
	)

	DescribeTable("accepts the boundary values",
		func(ctx SpecContext, mutate func(*csv1.ClusterStack)) {
			cs := validStack("boundary")
			mutate(cs)
			Expect(k8s.Create(ctx, cs, client.DryRunAll)).To(Succeed())
		},
		Entry("a version whose release name is 63 characters", func(cs *csv1.ClusterStack) { cs.Spec.Versions = []string{"v1", versionOfLength(49)} }),
		Entry("the longest provider and name with a short version, pinned", func(cs *csv1.ClusterStack) {
			cs.Spec.Provider, cs.Spec.Name, cs.Spec.Versions = strings.Repeat("p", 32), strings.Repeat("n", 22), []string{"v1"}
		}),
		Entry("auto-subscribe leaving exactly 16 characters for the version", func(cs *csv1.ClusterStack) {
			cs.Spec.AutoSubscribe, cs.Spec.Versions = true, nil
			cs.Spec.Provider, cs.Spec.Name = strings.Repeat("p", 32), strings.Repeat("n", 8)
		}),
		Entry("auto-subscribe with pinned versions too", func(cs *csv1.ClusterStack) { cs.Spec.AutoSubscribe = true }),
		Entry("a name of 63 characters", func(cs *csv1.ClusterStack) { cs.Name = strings.Repeat("s", 63) }),
		Entry("an interval of 10s", func(cs *csv1.ClusterStack) { cs.Spec.Interval = &metav1.Duration{Duration: 10 * time.Second} }),
		Entry("a secretRef", func(cs *csv1.ClusterStack) {
			cs.Spec.Source.SecretRef = &meta.LocalObjectReference{Name: "git-creds.v1"}
		}),
		Entry("an OCI source, verified, at the artifact's root", func(cs *csv1.ClusterStack) {
			cs.Spec.Source = csv1.StackSource{OCI: &csv1.OCISource{URL: "oci://ghcr.io/org/stacks/aws-base",
				SecretRef: &meta.LocalObjectReference{Name: "registry"}, Verify: &csv1.OCIVerification{SecretRef: meta.LocalObjectReference{Name: "cosign"}}}}
		}),
		Entry("an OCI source with a directory in the artifact", func(cs *csv1.ClusterStack) {
			cs.Spec.Source = csv1.StackSource{OCI: &csv1.OCISource{URL: "oci://127.0.0.1:5000/stacks", Insecure: true}, Path: "providers/aws/base/1-33"}
		}),
		Entry("a branch prefix of one path element", func(cs *csv1.ClusterStack) {
			cs.Spec.Updates = &csv1.UpdatePolicy{Proposals: &csv1.ProposalPolicy{Provider: csv1.ForgeGitea, SecretRef: meta.LocalObjectReference{Name: "bot"},
				BranchPrefix: "fleet-bot_v2.proposals"}}
		}),
	)

	It("keeps the limits the rules enforce in the API's constants", func() {
		Expect(csv1.MaxReleaseName).To(Equal(63))
		// The autoSubscribe rule allows size(provider)+size(name)+size(kubernetesVersion) <= 44:
		// with the three '-' and the one before the version, 47, leaving 16.
		Expect(csv1.MaxReleaseName - 44 - 3).To(Equal(csv1.MinAutoSubscribeVersionRoom))
		Expect(releasename.Format("aws", "base", "1.33", versionOfLength(49))).To(HaveLen(csv1.MaxReleaseName))
	})

	DescribeTable("keeps identity fields immutable",
		func(ctx SpecContext, name string, mutate func(*csv1.ClusterStack), message string) {
			cs := validStack(name)
			Expect(k8s.Create(ctx, cs)).To(Succeed())
			mutate(cs)
			err := k8s.Update(ctx, cs)
			Expect(err).To(HaveOccurred())
			Expect(err.Error()).To(ContainSubstring(message))
		},
		Entry("provider", "imm-provider", func(cs *csv1.ClusterStack) { cs.Spec.Provider = "gcp" },
			"spec.provider cannot be changed; create a new ClusterStack instead"),
		Entry("name", "imm-name", func(cs *csv1.ClusterStack) { cs.Spec.Name = "other" },
			"spec.name cannot be changed"),
		Entry("Kubernetes minor", "imm-minor", func(cs *csv1.ClusterStack) { cs.Spec.KubernetesVersion = "1.34" },
			"spec.kubernetesVersion cannot be changed; create a new ClusterStack for another Kubernetes minor"),
	)

	It("lets versions change", func(ctx SpecContext) {
		cs := validStack("mutable-versions")
		Expect(k8s.Create(ctx, cs)).To(Succeed())
		cs.Spec.Versions = []string{"v1", "v2"}
		Expect(k8s.Update(ctx, cs)).To(Succeed())
	})
})

var _ = Describe("ClusterStackRelease validation", func() {
	release := func(name string) *csv1.ClusterStackRelease {
		return &csv1.ClusterStackRelease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: csv1.ClusterStackReleaseSpec{
				ClusterStack: "s", Provider: "aws", StackName: "base", KubernetesVersion: "1.33", Version: "v2",
				Source: csv1.StackSource{URL: "https://git.example.com/stacks.git", Path: "p"},
			},
		}
	}
	It("requires the name to be the release tag", func(ctx SpecContext) {
		Expect(k8s.Create(ctx, release("aws-base-1-33-v2"))).To(Succeed())
		err := k8s.Create(ctx, release("something-else"))
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("metadata.name must be <provider>-<stackName>-<major>-<minor>-<version>"))
	})
	It("bounds the name (tag) to 63 characters", func(ctx SpecContext) {
		long := release("aws-base-1-33-v2-" + strings.Repeat("a", 45) + ".1")
		long.Spec.Version = "v2-" + strings.Repeat("a", 45) + ".1"
		err := k8s.Create(ctx, long, client.DryRunAll)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("metadata.name (the release tag) must be at most 63 characters"))
		ok := release("aws-base-1-33-v2-" + strings.Repeat("a", 44) + ".1")
		ok.Spec.Version = "v2-" + strings.Repeat("a", 44) + ".1"
		Expect(ok.Name).To(HaveLen(63))
		Expect(k8s.Create(ctx, ok, client.DryRunAll)).To(Succeed())
	})
	It("does not let the version change", func(ctx SpecContext) {
		r := &csv1.ClusterStackRelease{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: "aws-base-1-33-v2"}, r)).To(Succeed())
		r.Spec.Version = "v3"
		err := k8s.Update(ctx, r)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("spec.version cannot be changed"))
	})
})

var _ = Describe("ClusterAddon validation", func() {
	It("does not let the cluster name change", func(ctx SpecContext) {
		a := &csv1.ClusterAddon{ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: "default"}, Spec: csv1.ClusterAddonSpec{ClusterName: "c1"}}
		Expect(k8s.Create(ctx, a)).To(Succeed())
		a.Spec.ClusterName = "c2"
		err := k8s.Update(ctx, a)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("spec.clusterName cannot be changed"))
	})
})

func validOperator(name string) *csv1.ManagementOperator {
	return &csv1.ManagementOperator{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: csv1.ManagementOperatorSpec{
			Component: csv1.OperatorComponent{Type: csv1.CoreProvider, Name: name},
			Version:   "v1.10.3",
			Source: csv1.OperatorSource{Git: &csv1.OperatorGitSource{
				URL: "https://git.example.com/operators.git", Path: "cluster-api",
			}},
		},
	}
}

var _ = Describe("ManagementOperator validation", func() {
	It("accepts a valid ManagementOperator and defaults its interval and timeout", func(ctx SpecContext) {
		op := validOperator("cluster-api")
		Expect(k8s.Create(ctx, op)).To(Succeed())
		Expect(op.Namespace).To(BeEmpty(), "cluster-scoped")
		Expect(op.Spec.Interval.Duration).To(Equal(10 * time.Minute))
		Expect(op.Spec.Timeout.Duration).To(Equal(10 * time.Minute))
	})

	DescribeTable("rejects bad input with a message a person can act on",
		func(ctx SpecContext, mutate func(*csv1.ManagementOperator), message string) {
			op := validOperator("bad")
			mutate(op)
			err := k8s.Create(ctx, op, client.DryRunAll)
			Expect(err).To(HaveOccurred())
			Expect(err.Error()).To(ContainSubstring(message))
		},
		Entry("a version without the leading v", func(op *csv1.ManagementOperator) { op.Spec.Version = "1.10.3" },
			"spec.version must be an exact semantic version with a leading v, such as v1.10.3"),
		Entry("a version that is a range", func(op *csv1.ManagementOperator) { op.Spec.Version = ">=v1.10.0" },
			"a range belongs in spec.channel"),
		Entry("a version without a patch", func(op *csv1.ManagementOperator) { op.Spec.Version = "v1.10" },
			"spec.version must be an exact semantic version"),
		Entry("a version with a leading zero", func(op *csv1.ManagementOperator) { op.Spec.Version = "v1.01.0" },
			"spec.version must be an exact semantic version"),
		Entry("a channel that is not a range", func(op *csv1.ManagementOperator) { op.Spec.Channel = "stable" },
			"spec.channel must be a semantic version range such as \">=1.10.0 <1.12.0\""),
		Entry("a channel with shell characters", func(op *csv1.ManagementOperator) { op.Spec.Channel = ">=1.10; rm -rf" },
			"spec.channel must be a semantic version range"),
		Entry("a component name that is not a DNS label", func(op *csv1.ManagementOperator) { op.Spec.Component.Name = "Cluster_API" },
			"spec.component.name must be a DNS label"),
		Entry("a component type outside the enum", func(op *csv1.ManagementOperator) { op.Spec.Component.Type = "Provider" },
			"spec.component.type"),
		Entry("a name other than the component's", func(op *csv1.ManagementOperator) { op.Spec.Component.Name = "capo" },
			"metadata.name must equal spec.component.name: name the ManagementOperator after its component"),
		Entry("no source", func(op *csv1.ManagementOperator) { op.Spec.Source.Git = nil },
			"spec.source.git must be set: the Git repository holding the operator's manifests"),
		Entry("both a Git and an OCI source", func(op *csv1.ManagementOperator) {
			op.Spec.Source.OCI = &csv1.OperatorOCISource{OCISource: csv1.OCISource{URL: "oci://ghcr.io/org/capi"}}
		}, "set either spec.source.git or spec.source.oci, not both"),
		Entry("an OCI URL with a tag", func(op *csv1.ManagementOperator) {
			op.Spec.Source = csv1.OperatorSource{OCI: &csv1.OperatorOCISource{OCISource: csv1.OCISource{URL: "oci://ghcr.io/org/capi:v1.0.0"}}}
		}, "url must be an OCI repository URL without tag or digest"),
		Entry("an OCI URL over https", func(op *csv1.ManagementOperator) {
			op.Spec.Source = csv1.OperatorSource{OCI: &csv1.OperatorOCISource{OCISource: csv1.OCISource{URL: "https://ghcr.io/org/capi"}}}
		}, "url must be an OCI repository URL without tag or digest, oci://<registry host>[:<port>]/<repository>"),
		Entry("plain http to a registry that is not on loopback", func(op *csv1.ManagementOperator) {
			op.Spec.Source = csv1.OperatorSource{OCI: &csv1.OperatorOCISource{OCISource: csv1.OCISource{URL: "oci://registry.example.com:5000/capi", Insecure: true}}}
		}, "insecure (plain http) is allowed only for a registry on a loopback address"),
		Entry("plain http to a host whose name starts like a loopback address", func(op *csv1.ManagementOperator) {
			op.Spec.Source = csv1.OperatorSource{OCI: &csv1.OperatorOCISource{OCISource: csv1.OCISource{URL: "oci://127.0.0.1.example.com/capi", Insecure: true}}}
		}, "insecure (plain http) is allowed only for a registry on a loopback address"),
		Entry("credentials over plain http", func(op *csv1.ManagementOperator) {
			op.Spec.Source = csv1.OperatorSource{OCI: &csv1.OperatorOCISource{OCISource: csv1.OCISource{URL: "oci://127.0.0.1:5000/capi", Insecure: true,
				SecretRef: &meta.LocalObjectReference{Name: "registry"}}}}
		}, "credentials are never sent over plain http"),
		Entry("an OCI tag prefix with '/'", func(op *csv1.ManagementOperator) {
			op.Spec.Source = csv1.OperatorSource{OCI: &csv1.OperatorOCISource{OCISource: csv1.OCISource{URL: "oci://ghcr.io/org/capi"}, TagPrefix: "capi/"}}
		}, "spec.source.oci.tagPrefix must start with a letter, digit or '_'"),
		Entry("a verification provider other than cosign", func(op *csv1.ManagementOperator) {
			op.Spec.Source = csv1.OperatorSource{OCI: &csv1.OperatorOCISource{OCISource: csv1.OCISource{URL: "oci://ghcr.io/org/capi",
				Verify: &csv1.OCIVerification{Provider: "notation", SecretRef: meta.LocalObjectReference{Name: "keys"}}}}}
		}, "Unsupported value: \"notation\""),
		Entry("a chart path with an OCI source", func(op *csv1.ManagementOperator) {
			op.Spec.Source = csv1.OperatorSource{OCI: &csv1.OperatorOCISource{OCISource: csv1.OCISource{URL: "oci://ghcr.io/org/capi"}}}
			op.Spec.Chart = &csv1.OperatorChart{Path: "charts/capi"}
		}, "spec.chart.path is a directory of a Git source: an OCI source's artifact is the chart itself"),
		Entry("a URL that is not Git over HTTP(S) or SSH", func(op *csv1.ManagementOperator) { op.Spec.Source.Git.URL = "file:///etc" },
			"spec.source.git.url must be an http://, https:// or ssh:// Git URL"),
		Entry("a path leaving the repository", func(op *csv1.ManagementOperator) { op.Spec.Source.Git.Path = "a/../../b" },
			"spec.source.git.path must be relative to the repository root and must not contain '..'"),
		Entry("an absolute path", func(op *csv1.ManagementOperator) { op.Spec.Source.Git.Path = "/etc" },
			"spec.source.git.path must be relative"),
		Entry("a secretRef that is not a Secret name", func(op *csv1.ManagementOperator) {
			op.Spec.Source.Git.SecretRef = &meta.LocalObjectReference{Name: "Git_Creds"}
		}, "spec.source.git.secretRef.name must be the name of a Secret in the management namespace"),
		Entry("a tag prefix with a space", func(op *csv1.ManagementOperator) { op.Spec.Source.Git.TagPrefix = "cluster api/" },
			"spec.source.git.tagPrefix must start with a letter or digit"),
		Entry("a tag prefix with '..'", func(op *csv1.ManagementOperator) { op.Spec.Source.Git.TagPrefix = "a..b-" },
			"spec.source.git.tagPrefix must start with a letter or digit"),
		Entry("both kustomize and chart", func(op *csv1.ManagementOperator) {
			op.Spec.Kustomize = &csv1.OperatorKustomize{}
			op.Spec.Chart = &csv1.OperatorChart{}
		}, "set either spec.kustomize (apply the directory with kustomize, with patches and variables) or spec.chart (install it as a Helm chart with values), not both"),
		Entry("health checks with a chart", func(op *csv1.ManagementOperator) {
			op.Spec.Chart = &csv1.OperatorChart{}
			op.Spec.HealthChecks = []meta.NamespacedObjectKindReference{{Kind: "Deployment", Name: "x", Namespace: "y"}}
		}, "spec.healthChecks are checked by the Kustomization of spec.kustomize"),
		Entry("a variables Secret that is not a Secret name", func(op *csv1.ManagementOperator) {
			op.Spec.Kustomize = &csv1.OperatorKustomize{VariablesSecretRef: &meta.LocalObjectReference{Name: "-vars"}}
		}, "spec.kustomize.variablesSecretRef.name must be the name of a Secret in the management namespace"),
		Entry("a target namespace that is not a namespace name", func(op *csv1.ManagementOperator) {
			op.Spec.Kustomize = &csv1.OperatorKustomize{TargetNamespace: "capi.system"}
		}, "spec.kustomize.targetNamespace must be a namespace name"),
		Entry("a chart path leaving the source path", func(op *csv1.ManagementOperator) {
			op.Spec.Chart = &csv1.OperatorChart{Path: "../chart"}
		}, "spec.chart.path must be relative to spec.source.git.path"),
		Entry("an interval of 9s", func(op *csv1.ManagementOperator) { op.Spec.Interval = &metav1.Duration{Duration: 9 * time.Second} },
			"spec.interval must be a duration of at least 10s"),
		Entry("a timeout of 10s", func(op *csv1.ManagementOperator) { op.Spec.Timeout = &metav1.Duration{Duration: 10 * time.Second} },
			"spec.timeout must be a duration between 30s and 2h"),
		Entry("a service account that is not a name", func(op *csv1.ManagementOperator) { op.Spec.ServiceAccountName = "Flux Admin" },
			"spec.serviceAccountName must be the name of a ServiceAccount in the management namespace"),
	)

	DescribeTable("accepts the boundary values",
		func(ctx SpecContext, mutate func(*csv1.ManagementOperator)) {
			op := validOperator("boundary")
			mutate(op)
			Expect(k8s.Create(ctx, op, client.DryRunAll)).To(Succeed())
		},
		Entry("a pre-release with build metadata", func(op *csv1.ManagementOperator) { op.Spec.Version = "v1.11.0-rc.1+build.5" }),
		Entry("an OCI source on a loopback registry over plain http, verified", func(op *csv1.ManagementOperator) {
			op.Spec.Source = csv1.OperatorSource{OCI: &csv1.OperatorOCISource{OCISource: csv1.OCISource{URL: "oci://127.0.0.1:5000/operators/cluster-api", Insecure: true,
				Verify: &csv1.OCIVerification{SecretRef: meta.LocalObjectReference{Name: "cosign-keys"}}}, TagPrefix: "capi-"}}
		}),
		Entry("an OCI source over https with credentials and a CA, delivering a chart", func(op *csv1.ManagementOperator) {
			op.Spec.Source = csv1.OperatorSource{OCI: &csv1.OperatorOCISource{OCISource: csv1.OCISource{URL: "oci://registry.example.com:5000/operators/cluster-api",
				SecretRef: &meta.LocalObjectReference{Name: "registry"}, CertSecretRef: &meta.LocalObjectReference{Name: "registry-ca"}}}}
			op.Spec.Chart = &csv1.OperatorChart{}
		}),
		Entry("channels in the forms Masterminds/semver parses", func(op *csv1.ManagementOperator) {
			op.Spec.Channel = ">=1.10.0 <1.12.0 || ~2.0, 1.x - 2.3 || ^0.4 || !=1.10.2 || *"
		}),
		Entry("a tag prefix with a slash", func(op *csv1.ManagementOperator) { op.Spec.Source.Git.TagPrefix = "cluster-api/" }),
		Entry("the repository root", func(op *csv1.ManagementOperator) { op.Spec.Source.Git.Path = "" }),
		Entry("kustomize with patches, variables and a target namespace", func(op *csv1.ManagementOperator) {
			op.Spec.Kustomize = &csv1.OperatorKustomize{
				Patches:            []kustomize.Patch{{Patch: "- op: add\n  path: /spec/replicas\n  value: 2\n", Target: &kustomize.Selector{Kind: "Deployment"}}},
				VariablesSecretRef: &meta.LocalObjectReference{Name: "capi-variables"},
				TargetNamespace:    "capi-system",
			}
			op.Spec.HealthChecks = []meta.NamespacedObjectKindReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "capi-controller-manager", Namespace: "capi-system"}}
		}),
		Entry("a chart with values", func(op *csv1.ManagementOperator) {
			op.Spec.Chart = &csv1.OperatorChart{Path: "chart", Values: &apiextensionsv1.JSON{Raw: []byte(`{"replicas":2,"nested":{"a":[1,2]}}`)}, TargetNamespace: "cert-manager"}
		}),
		Entry("an interval of 10s and a timeout of 2h", func(op *csv1.ManagementOperator) {
			op.Spec.Interval = &metav1.Duration{Duration: 10 * time.Second}
			op.Spec.Timeout = &metav1.Duration{Duration: 2 * time.Hour}
		}),
		Entry("the override of stack requirements", func(op *csv1.ManagementOperator) { op.Spec.OverrideStackRequirements = true }),
	)

	It("does not let the component change", func(ctx SpecContext) {
		op := validOperator("capd")
		op.Spec.Component.Type = csv1.InfrastructureProvider
		Expect(k8s.Create(ctx, op)).To(Succeed())
		op.Spec.Component.Type = csv1.OtherComponent
		err := k8s.Update(ctx, op)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("spec.component cannot be changed; create a new ManagementOperator for another component"))
	})

	It("keeps the status a ClusterOperator reader expects", func(ctx SpecContext) {
		op := validOperator("cert-manager")
		op.Spec.Component.Type = csv1.OtherComponent
		Expect(k8s.Create(ctx, op)).To(Succeed())
		now := metav1.NewTime(time.Now().Truncate(time.Second))
		op.Status = csv1.ManagementOperatorStatus{
			Versions:       []csv1.OperandVersion{{Name: csv1.OperatorVersionName, Version: "v1.10.3"}},
			DesiredVersion: "v1.10.3",
			History:        []csv1.OperatorHistoryEntry{{Version: "v1.10.3", State: csv1.UpdateCompleted, StartedTime: now, CompletionTime: &now}},
			RelatedObjects: []csv1.ResourceReference{{Group: "apps", Resource: "deployments", Namespace: "cert-manager", Name: "cert-manager"}},
		}
		Expect(k8s.Status().Update(ctx, op)).To(Succeed())
		tooLong := make([]csv1.OperatorHistoryEntry, csv1.MaxOperatorHistory+1)
		for i := range tooLong {
			tooLong[i] = csv1.OperatorHistoryEntry{Version: "v1.10.3", State: csv1.UpdatePartial, StartedTime: now}
		}
		op.Status.History = tooLong
		err := k8s.Status().Update(ctx, op)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("status.history"))
	})
})
