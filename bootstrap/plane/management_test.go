package plane_test

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterstack-io/clusterstack-operator/bootstrap/kubesim"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/plane"
)

var _ = Describe("Workloads on the management API server", func() {
	It("schedules a Deployment's Pods to the kwok Nodes and reports the Deployment Available", func(ctx SpecContext) {
		c := pl.Client()
		ns := createNamespace(ctx, "workloads")

		nodes := &corev1.NodeList{}
		Expect(c.List(ctx, nodes)).To(Succeed())
		Expect(nodes.Items).To(ConsistOf(HaveField("Name", "management-node-0")))

		deploy := webDeployment(ns)
		Expect(c.Create(ctx, deploy)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(deploy), deploy)).To(Succeed())
			g.Expect(deploy.Status.ObservedGeneration).To(Equal(deploy.Generation))
			g.Expect(deploy.Status.AvailableReplicas).To(Equal(int32(2)), "Deployment status: %+v", deploy.Status)
			g.Expect(deploy.Status.Conditions).To(ContainElement(And(
				HaveField("Type", appsv1.DeploymentAvailable), HaveField("Status", corev1.ConditionTrue))))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())

		pods := &corev1.PodList{}
		Expect(c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels(webLabels))).To(Succeed())
		Expect(pods.Items).To(HaveLen(2))
		for _, p := range pods.Items {
			Expect(p.Spec.NodeName).To(Equal("management-node-0"))
			Expect(p.Status.Phase).To(Equal(corev1.PodRunning))
		}
	}, SpecTimeout(90*time.Second))

	It("keeps a host-network Pod (a CNI's DaemonSet's) Running, with its Node's address as its IP", func(ctx SpecContext) {
		c := pl.Client()
		ns := createNamespace(ctx, "hostnet")
		node := &corev1.Node{}
		Expect(c.Get(ctx, client.ObjectKey{Name: "management-node-0"}, node)).To(Succeed())
		Expect(node.Status.Addresses).To(ContainElement(corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: kubesim.NodeIP(node.Name)}))

		// Bound to the Node as a DaemonSet's Pods are (the management API server runs no
		// DaemonSet controller).
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "cni", Namespace: ns},
			Spec: corev1.PodSpec{NodeName: node.Name, HostNetwork: true,
				Containers: []corev1.Container{{Name: "cni", Image: "registry.invalid/cni:1"}}},
		}
		Expect(c.Create(ctx, pod)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
			g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
			g.Expect(pod.Status.PodIP).To(Equal(kubesim.NodeIP(node.Name)))
			g.Expect(pod.Status.Conditions).To(ContainElement(And(
				HaveField("Type", corev1.PodReady), HaveField("Status", corev1.ConditionTrue))))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
		// On a Node without an address, kwok set such a Pod back to ContainerCreating every few
		// seconds: it must stay as it is.
		Consistently(func(g Gomega) {
			now := &corev1.Pod{}
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(pod), now)).To(Succeed())
			g.Expect(now.ResourceVersion).To(Equal(pod.ResourceVersion), "Pod status changed: %+v", now.Status)
		}).WithContext(ctx).WithTimeout(15 * time.Second).WithPolling(time.Second).Should(Succeed())
	}, SpecTimeout(2*time.Minute))
})

var _ = Describe("Fixture operators on the local Git server", func() {
	It("publishes every version of every fixture operator as a tag, in semver order, with its manifests", func(ctx SpecContext) {
		ops := pl.FixtureOperators()
		Expect(len(ops)).To(BeNumerically(">=", 2))
		for _, op := range ops {
			url, err := pl.FixtureOperatorURL(op.Name)
			Expect(err).NotTo(HaveOccurred())
			Expect(op.URL).To(Equal(url))
			Expect(op.URL).To(Equal(pl.Git().RepoURL(op.Repository)))
			var versions []string
			for _, v := range op.Versions {
				versions = append(versions, v.Version)
			}

			By("listing the tags of " + op.URL)
			remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{op.URL}})
			refs, err := remote.ListContext(ctx, &git.ListOptions{})
			Expect(err).NotTo(HaveOccurred())
			var tags []string
			for _, r := range refs {
				if r.Name().IsTag() && !strings.HasSuffix(r.Name().String(), "^{}") {
					tags = append(tags, r.Name().Short())
				}
			}
			Expect(tags).To(ConsistOf(versions))

			By("cloning " + op.URL + " and reading each tag's tree")
			repo, err := git.CloneContext(ctx, memory.NewStorage(), nil, &git.CloneOptions{URL: op.URL, Tags: git.AllTags})
			Expect(err).NotTo(HaveOccurred())
			var prev *object.Commit
			for _, v := range versions {
				ref, err := repo.Reference(plumbing.NewTagReferenceName(v), true)
				Expect(err).NotTo(HaveOccurred(), "tag %s", v)
				tag, err := repo.TagObject(ref.Hash())
				Expect(err).NotTo(HaveOccurred(), "tag %s is not annotated", v)
				commit, err := tag.Commit()
				Expect(err).NotTo(HaveOccurred())
				// One commit per version, each on the previous one: the tags are in semver order.
				if prev != nil {
					Expect(commit.ParentHashes).To(Equal([]plumbing.Hash{prev.Hash}), "%s does not follow the previous version", v)
				}
				prev = commit

				tree, err := commit.Tree()
				Expect(err).NotTo(HaveOccurred())
				got := map[string]string{}
				Expect(tree.Files().ForEach(func(f *object.File) error {
					content, err := f.Contents()
					got[f.Name] = content
					return err
				})).To(Succeed())
				want := map[string]string{}
				dir := filepath.Join("operators", op.Name, v)
				entries, err := os.ReadDir(dir)
				Expect(err).NotTo(HaveOccurred())
				for _, e := range entries {
					b, err := os.ReadFile(filepath.Join(dir, e.Name()))
					Expect(err).NotTo(HaveOccurred())
					want[path.Join(plane.FixtureOperatorPath, e.Name())] = string(b)
				}
				Expect(want).To(HaveKey(plane.FixtureOperatorPath + "/kustomization.yaml"))
				Expect(got).To(Equal(want), "files of %s at %s", op.Repository, v)
			}
		}
	}, SpecTimeout(60*time.Second))

	It("delivers a fixture operator through Flux with health checks, and a broken version fails them", func(ctx SpecContext) {
		c := pl.Client()
		ns := createNamespace(ctx, "operators")
		// The fixtures install cluster-scoped objects (a Namespace, a CRD): the identity Flux
		// applies them as (the namespace's Flux ServiceAccount) needs cluster-wide rights.
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: pl.FluxServiceAccount(), Namespace: ns}}
		Expect(c.Create(ctx, sa)).To(Succeed())
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: ns + "-cluster-admin"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: ns}},
		}
		Expect(c.Create(ctx, binding)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(c.Delete(ctx, binding)).To(Succeed()) })

		fixture := func(name string) plane.FixtureOperator {
			for _, op := range pl.FixtureOperators() {
				if op.Name == name {
					return op
				}
			}
			Fail("no fixture operator " + name)
			return plane.FixtureOperator{}
		}
		deliver := func(op plane.FixtureOperator, version string, timeout time.Duration) *kustomizev1.Kustomization {
			name := op.Name + "-" + strings.ReplaceAll(version, ".", "-")
			repo := &sourcev1.GitRepository{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Spec: sourcev1.GitRepositorySpec{
					URL:       op.URL,
					Interval:  metav1.Duration{Duration: time.Minute},
					Reference: &sourcev1.GitRepositoryRef{Tag: version},
				},
			}
			Expect(c.Create(ctx, repo)).To(Succeed())
			// Wait for the artifact first: a Kustomization that finds none requeues itself in
			// 30s, and that stray retry restarts the health checks right after they fail.
			Eventually(func(g Gomega) {
				g.Expect(c.Get(ctx, client.ObjectKeyFromObject(repo), repo)).To(Succeed())
				g.Expect(apimeta.IsStatusConditionTrue(repo.Status.Conditions, meta.ReadyCondition)).To(BeTrue(), "GitRepository: %+v", repo.Status.Conditions)
			}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
			ks := &kustomizev1.Kustomization{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Spec: kustomizev1.KustomizationSpec{
					SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: name},
					Path:      "./" + plane.FixtureOperatorPath,
					Interval:  metav1.Duration{Duration: time.Minute},
					Prune:     true,
					Wait:      true,
					Timeout:   &metav1.Duration{Duration: timeout},
					PostBuild: &kustomizev1.PostBuild{Substitute: map[string]string{"DEMO_LOG_LEVEL": "debug"}},
				},
			}
			Expect(c.Create(ctx, ks)).To(Succeed())
			return ks
		}

		By("delivering demo-addon-operator v1.0.0")
		addon := fixture("demo-addon-operator")
		ks := deliver(addon, addon.Versions[0].Version, time.Minute)
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(ks), ks)).To(Succeed())
			ready := apimeta.FindStatusCondition(ks.Status.Conditions, meta.ReadyCondition)
			g.Expect(ready).NotTo(BeNil(), "no Ready condition yet")
			g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "Ready: %s: %s", ready.Reason, ready.Message)
		}).WithContext(ctx).WithTimeout(90 * time.Second).WithPolling(time.Second).Should(Succeed())
		deploy := &appsv1.Deployment{}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: addon.Namespace, Name: addon.Name}, deploy)).To(Succeed())
		Expect(deploy.Status.AvailableReplicas).To(Equal(*deploy.Spec.Replicas))
		Expect(deploy.Labels).To(HaveKeyWithValue("app.kubernetes.io/version", addon.Versions[0].Version))
		Expect(deploy.Spec.Template.Spec.Containers[0].Args).To(ContainElements("--log-level=debug", "--sync-period=10m"))
		Expect(c.Get(ctx, client.ObjectKey{Name: addon.CRD}, &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{
			APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"}})).To(Succeed())

		By("delivering demo-infra-provider's broken version")
		infra := fixture("demo-infra-provider")
		var broken string
		for _, v := range infra.Versions {
			if v.NeverAvailable {
				broken = v.Version
			}
		}
		Expect(broken).NotTo(BeEmpty())
		ks = deliver(infra, broken, 30*time.Second) // kustomize-controller's shortest timeout
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(ks), ks)).To(Succeed())
			ready := apimeta.FindStatusCondition(ks.Status.Conditions, meta.ReadyCondition)
			g.Expect(ready).NotTo(BeNil(), "no Ready condition yet")
			g.Expect(ready.Status).To(Equal(metav1.ConditionFalse), "Ready: %s: %s", ready.Reason, ready.Message)
			g.Expect(ready.Reason).To(Equal(meta.HealthCheckFailedReason), "Ready: %s: %s", ready.Reason, ready.Message)
			g.Expect(ready.Message).To(ContainSubstring("Deployment/" + infra.Namespace + "/" + infra.Name))
		}).WithContext(ctx).WithTimeout(90 * time.Second).WithPolling(time.Second).Should(Succeed())
		// The health check fails on the Deployment alone: its Pod may still be on its way from
		// kube-controller-manager (which retries a ReplicaSet sync on a stale read) and the
		// scheduler.
		Eventually(func(g Gomega) {
			pods := &corev1.PodList{}
			g.Expect(c.List(ctx, pods, client.InNamespace(infra.Namespace))).To(Succeed())
			g.Expect(pods.Items).To(HaveLen(1))
			g.Expect(pods.Items[0].Spec.NodeName).To(BeEmpty())
			g.Expect(pods.Items[0].Status.Conditions).To(ContainElement(And(
				HaveField("Type", corev1.PodScheduled), HaveField("Status", corev1.ConditionFalse),
				HaveField("Reason", corev1.PodReasonUnschedulable))))
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
	}, SpecTimeout(4*time.Minute))
})
