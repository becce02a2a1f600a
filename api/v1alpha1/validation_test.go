package v1alpha1_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

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
	)

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
