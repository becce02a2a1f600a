package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/plane"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
	"github.com/clusterstack-io/clusterstack-operator/test/framework"
)

// Attacks on what the operator generates from tenants' input and on the shipped defaults
// (docs/multi-tenancy.md, "What the tests try"):
//   - a Cluster labelled with Flux's sharding key gets Flux objects without it (Flux's main
//     shard): the platform allows no shard;
//   - an edit of a values ConfigMap's data (a changed value, an added key) is reverted;
//   - a ClusterStack naming a privileged ServiceAccount its namespace's owner did not label is
//     refused, and nothing is created for it;
//   - releases whose requirements need disjoint versions of a ManagementOperator (a cycle) make
//     the moving ClusterAddon Degraded after the grace period, naming the cycle and the skip
//     annotation;
//   - the operator with its default --flux-lockdown=detect against a Flux installed without the
//     lockdown reports it on every ClusterStack, and with --flux-lockdown=required creates no
//     release.
var _ = Describe("Attacks on generated objects and the shipped defaults", Ordered, SpecPriority(1), ContinueOnFailure, func() {
	const ns = "defaults-attacks"

	BeforeAll(func(ctx SpecContext) {
		createNamespace(ctx, ns)
		Expect(k8s.Create(ctx, newClusterStack(ns, "v1"))).To(Succeed())
		c := newCluster(ns, "c1", "v1", "10.150.0.0/16")
		// The tenant asks for a Flux shard of its choosing.
		c.Labels = map[string]string{fluxgen.FluxShardLabel: "privileged-shard"}
		Expect(k8s.Create(ctx, c)).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			g.Expect(getAddon(ctx, g, ns, "c1")).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue, tagPrefix+"v1"))
		}).WithTimeout(4 * time.Minute).Should(Succeed())
	}, NodeTimeout(5*time.Minute))

	It("generates no Flux object for a Flux shard the platform did not allow", func(ctx SpecContext) {
		sel := client.MatchingLabels{csv1.ClusterNameLabel: "c1"}
		hrs, kss := &helmv2.HelmReleaseList{}, &kustomizev1.KustomizationList{}
		Expect(k8s.List(ctx, hrs, client.InNamespace(ns), sel)).To(Succeed())
		Expect(k8s.List(ctx, kss, client.InNamespace(ns), sel)).To(Succeed())
		Expect(len(hrs.Items) + len(kss.Items)).To(BeNumerically(">", 0))
		for _, o := range append(objectsOf(hrs.Items), objectsOf(kss.Items)...) {
			Expect(o.GetLabels()).NotTo(HaveKey(fluxgen.FluxShardLabel), "%s carries the tenant's Flux shard", o.GetName())
		}
	})

	It("reverts an edit of a values ConfigMap's data", func(ctx SpecContext) {
		cm := valuesOf(ctx, Default, ns, "c1")
		rendered := cm.Data
		edited := map[string]string{"injected": "postRenderers: []"}
		for k, v := range rendered {
			edited[k] = v
		}
		edited["cluster_name"] = "someone-else"
		cm.Data = edited
		Expect(k8s.Update(ctx, cm, client.FieldOwner("kubectl-edit"))).To(Succeed())
		Eventually(ctx, func(g Gomega) map[string]string {
			return valuesOf(ctx, g, ns, "c1").Data
		}).WithTimeout(time.Minute).Should(Equal(rendered), "the data is as rendered again, the added key gone")
	})

	It("refuses a ClusterStack naming a privileged ServiceAccount its namespace's owner did not allow, and creates nothing", func(ctx SpecContext) {
		const saNS = "privileged-sa"
		createNamespace(ctx, saNS)
		Expect(k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: saNS, Name: "ci-admin"}})).To(Succeed())
		Expect(k8s.Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "e2e-ci-admin"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "ci-admin", Namespace: saNS}},
		})).To(Succeed())
		cs := newClusterStack(saNS, "v1")
		cs.Spec.ServiceAccountName = "ci-admin"
		Expect(k8s.Create(ctx, cs)).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			st := getStack(ctx, g, saNS)
			c := framework.Condition(st, csv1.ReleasesResolvedCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(csv1.ReasonServiceAccountNotAllowed))
			GinkgoWriter.Printf("the operator said: %s\n", c.Message)
			g.Expect(c.Message).To(ContainSubstring("kubectl label serviceaccount -n " + saNS + " ci-admin " + csv1.ServiceAccountOptInLabel + "=true"))
			g.Expect(st).To(framework.HaveCondition(csv1.DegradedCondition, metav1.ConditionTrue, "ci-admin"))
		}).Should(Succeed())
		Consistently(ctx, func(g Gomega) {
			rels, repos := &csv1.ClusterStackReleaseList{}, &sourcev1.GitRepositoryList{}
			g.Expect(k8s.List(ctx, rels, client.InNamespace(saNS))).To(Succeed())
			g.Expect(k8s.List(ctx, repos, client.InNamespace(saNS))).To(Succeed())
			g.Expect(rels.Items).To(BeEmpty(), "no release for a refused account")
			g.Expect(repos.Items).To(BeEmpty(), "nothing for Flux to apply as ci-admin")
		}, 2*stackInterval, time.Second).Should(Succeed())
	})

	It("names a requirements cycle, and the skip annotation, once the grace period is over and not before", func(ctx SpecContext) {
		const (
			cycleNS  = "req-cycle"
			repo     = "cycle-stacks"
			operator = "cycle-provider"
			delivery = "cycle-delivery"
			oldTag   = "aws-base-1-35-v1"
			newTag   = "aws-base-1-36-v1"
		)
		var fx plane.FixtureOperator
		for _, f := range pl.FixtureOperators() {
			if f.Name == "demo-infra-provider" {
				fx = f
			}
		}
		Expect(fx.URL).NotTo(BeEmpty())
		grantDelivery(ctx, delivery)
		Expect(k8s.Create(ctx, &csv1.ManagementOperator{
			ObjectMeta: metav1.ObjectMeta{Name: operator},
			Spec: csv1.ManagementOperatorSpec{
				Component:          csv1.OperatorComponent{Type: csv1.InfrastructureProvider, Name: operator},
				Version:            "v1.0.0",
				Source:             csv1.OperatorSource{Git: &csv1.OperatorGitSource{URL: fx.URL, Path: plane.FixtureOperatorPath}},
				Kustomize:          &csv1.OperatorKustomize{},
				ServiceAccountName: delivery,
				Interval:           &metav1.Duration{Duration: 10 * time.Second},
				Timeout:            &metav1.Duration{Duration: 30 * time.Second},
			},
		})).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, &csv1.ManagementOperator{ObjectMeta: metav1.ObjectMeta{Name: operator}}))).To(Succeed())
		})

		// 1.35's release allows the operator below 1.1.0, 1.36's only from 1.1.0 on.
		_, err := pl.Git().CreateRepo(repo)
		Expect(err).NotTo(HaveOccurred())
		twoMinors := func(dir string) {
			from, to := filepath.Join(dir, "aws/base/1-36"), filepath.Join(dir, "aws/base/1-35")
			Expect(os.CopyFS(to, os.DirFS(from))).To(Succeed())
			editFile(to, "stack.yaml", func(s string) string {
				return strings.ReplaceAll(s, "kubernetesVersion: 1.36.3", "kubernetesVersion: 1.35.4") +
					"requires:\n  - operator: " + operator + "\n    versions: \"<1.1.0\"\n"
			})
			editFile(from, "stack.yaml", func(s string) string {
				return s + "requires:\n  - operator: " + operator + "\n    versions: \">=1.1.0\"\n"
			})
		}
		publishTo(ctx, repo, oldTag, twoMinors)
		publishTo(ctx, repo, newTag, twoMinors)
		createNamespace(ctx, cycleNS)
		for _, minor := range []string{"1.35", "1.36"} {
			Expect(k8s.Create(ctx, &csv1.ClusterStack{
				ObjectMeta: metav1.ObjectMeta{Name: "aws-base-" + strings.ReplaceAll(minor, ".", "-"), Namespace: cycleNS},
				Spec: csv1.ClusterStackSpec{
					Provider: "aws", Name: "base", KubernetesVersion: minor,
					Source:   csv1.StackSource{URL: pl.Git().RepoURL(repo), Path: "aws/base/" + strings.ReplaceAll(minor, ".", "-")},
					Versions: []string{"v1"},
					Interval: &metav1.Duration{Duration: stackInterval},
				},
			})).To(Succeed())
		}
		c := newCluster(cycleNS, "stuck", "v1", "10.151.0.0/16")
		c.Spec.Topology.ClassRef.Name, c.Spec.Topology.Version = oldTag, "v1.35.4"
		Eventually(ctx, func() error {
			return k8s.Get(ctx, client.ObjectKey{Namespace: cycleNS, Name: oldTag}, &csv1.ClusterStackRelease{})
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		Eventually(ctx, func() error { return k8s.Create(ctx, c.DeepCopy()) }).WithTimeout(2 * time.Minute).Should(Succeed())
		Eventually(ctx, func(g Gomega) {
			g.Expect(getAddon(ctx, g, cycleNS, "stuck")).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue, oldTag))
		}).WithTimeout(4*time.Minute).Should(Succeed(), "the operator is delivered at v1.0.0, which 1.35's release allows")

		By("moving the Cluster to 1.36: the operator may not leave <1.1.0 while the Cluster is at 1.35, and 1.36 needs >=1.1.0")
		Eventually(ctx, func() error {
			return k8s.Get(ctx, client.ObjectKey{Namespace: cycleNS, Name: newTag}, &csv1.ClusterStackRelease{})
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		Eventually(ctx, func() error { return patchTopology(ctx, cycleNS, "stuck", newTag, "v1.36.3") }).WithTimeout(2 * time.Minute).Should(Succeed())
		var held, degraded *metav1.Condition
		Eventually(ctx, func(g Gomega) {
			a := getAddon(ctx, g, cycleNS, "stuck")
			held = framework.Condition(a, csv1.ReleaseReadyCondition)
			g.Expect(held).NotTo(BeNil())
			g.Expect(held.Reason).To(Equal(csv1.ReasonRequirementsConflict))
			degraded = framework.Condition(a, csv1.DegradedCondition)
			g.Expect(degraded).NotTo(BeNil())
			g.Expect(degraded.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(degraded.Reason).To(Equal(csv1.ReasonRequirementsConflict))
		}).WithTimeout(3 * time.Minute).Should(Succeed())
		GinkgoWriter.Printf("the operator said: %s\n", degraded.Message)
		Expect(degraded.Message).To(And(
			ContainSubstring("requirements cycle"),
			ContainSubstring("release "+oldTag+" requires "+operator+" <1.1.0 and release "+newTag+" requires "+operator+" >=1.1.0"),
			ContainSubstring("kubectl annotate cluster -n "+cycleNS+" stuck "+csv1.SkipBeforeUpgradeGateAnnotation+"=")))
		Expect(degraded.LastTransitionTime.Sub(held.LastTransitionTime.Time)).To(BeNumerically(">=", grace),
			"Degraded at %s, held since %s: not before the grace period of %s", degraded.LastTransitionTime, held.LastTransitionTime, grace)
		Eventually(ctx, func(g Gomega) {
			st := &csv1.ClusterStack{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: cycleNS, Name: "aws-base-1-36"}, st)).To(Succeed())
			g.Expect(st).To(framework.HaveCondition(csv1.DegradedCondition, metav1.ConditionTrue, "requirements cycle"))
		}).Should(Succeed(), "the ClusterStack's roll-up names the cycle")
		Expect(getAddon(ctx, Default, cycleNS, "stuck").Status.LastAppliedRelease).To(Equal(oldTag), "the addons stay where they are")
	})

	It("reports a Flux without its lockdown on every ClusterStack, and with --flux-lockdown=required creates no release", func(ctx SpecContext) {
		const fluxNS = "flux-unlocked"
		// Flux installed without the lockdown: kustomize- and helm-controller without
		// --no-cross-namespace-refs and --default-service-account (Flux's default install).
		Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fluxNS}})).To(Succeed())
		for _, name := range []string{"kustomize-controller", "helm-controller"} {
			labels := map[string]string{"app": name}
			Expect(k8s.Create(ctx, &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Namespace: fluxNS, Name: name},
				Spec: appsv1.DeploymentSpec{
					Replicas: ptr.To[int32](1),
					Selector: &metav1.LabelSelector{MatchLabels: labels},
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: labels},
						Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "ghcr.io/fluxcd/" + name + ":v1.7.3",
							Args: []string{"--events-addr=http://notification-controller." + fluxNS + ".svc.cluster.local./", "--watch-all-namespaces=true", "--log-level=info"}}}},
					},
				},
			})).To(Succeed())
		}
		By("the operator in its default mode (detect), pointed at that Flux")
		Expect(pl.StopOperator(false)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(pl.StartOperator(ctx)).To(Succeed()) }, NodeTimeout(3*time.Minute))
		Expect(pl.StartOperatorInstance(ctx, "lockdown-detect", append([]string{"--flux-lockdown=detect", "--flux-namespace=" + fluxNS}, operatorArgs...)...)).To(Succeed())
		stopped := false
		DeferCleanup(func() {
			if !stopped {
				Expect(pl.StopOperatorInstance("lockdown-detect")).To(Succeed())
			}
		})
		Eventually(ctx, func(g Gomega) {
			stacks := &csv1.ClusterStackList{}
			g.Expect(k8s.List(ctx, stacks)).To(Succeed())
			g.Expect(stacks.Items).NotTo(BeEmpty())
			for i := range stacks.Items {
				st := &stacks.Items[i]
				if !st.DeletionTimestamp.IsZero() {
					continue
				}
				c := apimeta.FindStatusCondition(st.Status.Conditions, csv1.FluxLockdownCondition)
				g.Expect(c).NotTo(BeNil(), "ClusterStack %s/%s has no FluxLockdown condition", st.Namespace, st.Name)
				g.Expect(c.Status).To(Equal(metav1.ConditionFalse), "ClusterStack %s/%s: %s", st.Namespace, st.Name, c.Message)
				g.Expect(c.Reason).To(Equal(csv1.ReasonFluxNotLockedDown))
				g.Expect(c.Message).To(ContainSubstring("kustomize-controller runs without --no-cross-namespace-refs=true and --default-service-account"))
			}
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		st := getStack(ctx, Default, ns)
		GinkgoWriter.Printf("the operator said: %s\n", framework.Condition(st, csv1.FluxLockdownCondition).Message)

		By("with --flux-lockdown=required, a new ClusterStack gets no release")
		Expect(pl.StopOperatorInstance("lockdown-detect")).To(Succeed())
		stopped = true
		Expect(pl.StartOperatorInstance(ctx, "lockdown-required", append([]string{"--flux-lockdown=required", "--flux-namespace=" + fluxNS}, operatorArgs...)...)).To(Succeed())
		DeferCleanup(func() { Expect(pl.StopOperatorInstance("lockdown-required")).To(Succeed()) })
		const newNS = "unlocked-new"
		createNamespace(ctx, newNS)
		Expect(k8s.Create(ctx, newClusterStack(newNS, "v1"))).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			c := framework.Condition(getStack(ctx, g, newNS), csv1.ReleasesResolvedCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(csv1.ReasonFluxLockdownRequired))
			g.Expect(c.Message).To(ContainSubstring("--flux-lockdown=required"))
			GinkgoWriter.Printf("the operator said: %s\n", c.Message)
		}).Should(Succeed())
		Consistently(ctx, func(g Gomega) {
			rels, repos := &csv1.ClusterStackReleaseList{}, &sourcev1.GitRepositoryList{}
			g.Expect(k8s.List(ctx, rels, client.InNamespace(newNS))).To(Succeed())
			g.Expect(k8s.List(ctx, repos, client.InNamespace(newNS))).To(Succeed())
			g.Expect(rels.Items).To(BeEmpty(), "no release while Flux runs without the lockdown")
			g.Expect(repos.Items).To(BeEmpty())
		}, 2*stackInterval, time.Second).Should(Succeed())
	})
})

// objectsOf returns pointers to the items as client.Objects.
func objectsOf[T any, PT interface {
	*T
	client.Object
}](items []T) []client.Object {
	out := make([]client.Object, 0, len(items))
	for i := range items {
		out = append(out, PT(&items[i]))
	}
	return out
}
