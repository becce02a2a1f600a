package v1alpha1_test

import (
	"strings"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
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
	)

	It("keeps the limits the rules enforce in the API's constants", func() {
		Expect(csv1.MaxReleaseName).To(Equal(63))
		// The autoSubscribe rule allows size(provider)+size(name)+size(kubernetesVersion) <= 44:
		// with the three '-' and the one before the version, 47, leaving 16.
		Expect(csv1.MaxReleaseName - 44 - 3).To(Equal(csv1.MinAutoSubscribeVersionRoom))
		Expect(len(stack.ReleaseName("aws", "base", "1.33", versionOfLength(49)))).To(Equal(csv1.MaxReleaseName))
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
