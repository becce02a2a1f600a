package e2e

import (
	"os"
	"path/filepath"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
	"github.com/clusterstack-io/clusterstack-operator/test/framework"
)

// attacksRepo holds stacks whose cluster-class tries to leave its namespace. It is a repository
// of its own so that its tags never mix with the reference stack's.
const attacksRepo = "attacks"

// attack is a cluster-class template that reaches outside the stack's namespace.
type attack struct {
	version  string
	what     string
	file     string
	template string
	// created reports whether the object the template asks for exists.
	created func(ctx SpecContext) bool
	// mentions are parts of Flux's answer the Degraded condition must carry.
	mentions []string
}

func exists(ctx SpecContext, key client.ObjectKey, obj client.Object) bool {
	err := k8s.Get(ctx, key, obj)
	Expect(client.IgnoreNotFound(err)).To(Succeed())
	return err == nil
}

var _ = Describe("Tenant isolation: a stack gets only what its namespace may do", Ordered, SpecPriority(3), func() {
	const (
		attacker = "tenant-a"
		victim   = "tenant-b"
	)
	attacks := []attack{{
		version: "v1", what: "a ClusterRoleBinding to cluster-admin", file: "attack-crb.yaml",
		template: `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: attack-cluster-admin
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: cluster-admin
subjects:
  - kind: ServiceAccount
    name: clusterstack-flux
    namespace: {{ .Release.Namespace }}
`,
		created: func(ctx SpecContext) bool {
			return exists(ctx, client.ObjectKey{Name: "attack-cluster-admin"}, &rbacv1.ClusterRoleBinding{})
		},
		mentions: []string{"clusterrolebindings", "attack-cluster-admin", "forbidden"},
	}, {
		version: "v2", what: "a ConfigMap in kube-system", file: "attack-kube-system.yaml",
		template: `apiVersion: v1
kind: ConfigMap
metadata:
  name: attack-kube-system
  namespace: kube-system
data:
  owned: "yes"
`,
		created: func(ctx SpecContext) bool {
			return exists(ctx, client.ObjectKey{Namespace: "kube-system", Name: "attack-kube-system"}, &corev1.ConfigMap{})
		},
		mentions: []string{"configmaps", "kube-system", "forbidden"},
	}, {
		version: "v3", what: "a ConfigMap in another team's namespace", file: "attack-other-team.yaml",
		template: `apiVersion: v1
kind: ConfigMap
metadata:
  name: attack-other-team
  namespace: ` + victim + `
data:
  owned: "yes"
`,
		created: func(ctx SpecContext) bool {
			return exists(ctx, client.ObjectKey{Namespace: victim, Name: "attack-other-team"}, &corev1.ConfigMap{})
		},
		mentions: []string{"configmaps", victim, "forbidden"},
	}, {
		version: "v4", what: "a validating webhook configuration", file: "attack-webhook.yaml",
		template: `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: attack-webhook
webhooks:
  - name: attack.example.com
    admissionReviewVersions: ["v1"]
    sideEffects: None
    failurePolicy: Ignore
    clientConfig:
      url: https://attacker.invalid/validate
    rules:
      - apiGroups: ["attack.example.com"]
        apiVersions: ["v1"]
        operations: ["CREATE"]
        resources: ["nothing"]
`,
		created: func(ctx SpecContext) bool {
			return exists(ctx, client.ObjectKey{Name: "attack-webhook"}, &admissionregistrationv1.ValidatingWebhookConfiguration{})
		},
		mentions: []string{"validatingwebhookconfigurations", "attack-webhook", "forbidden"},
	}}

	BeforeAll(func(ctx SpecContext) {
		createNamespace(ctx, attacker)
		createNamespace(ctx, victim)
		_, err := pl.Git().CreateRepo(attacksRepo)
		Expect(err).NotTo(HaveOccurred())
		for _, a := range attacks {
			publishTo(ctx, attacksRepo, tagPrefix+a.version, func(dir string) {
				sd := filepath.Join(dir, stackPath)
				Expect(stack.SetChartVersion(sd, a.version)).To(Succeed())
				Expect(os.WriteFile(filepath.Join(sd, "cluster-class", "templates", a.file), []byte(a.template), 0o644)).To(Succeed())
			})
		}
		By("the other team runs the reference stack with a Cluster")
		Expect(k8s.Create(ctx, newClusterStack(victim, "v1"))).To(Succeed())
		Expect(k8s.Create(ctx, newCluster(victim, "victim", "v1", "10.81.0.0/16"))).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			g.Expect(getAddon(ctx, g, victim, "victim")).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue))
		}).WithTimeout(4 * time.Minute).Should(Succeed())
	})

	It("refuses every attack of a stack's cluster-class: Degraded naming the object and what Flux said, nothing created, the other team unaffected", func(ctx SpecContext) {
		cs := newClusterStack(attacker)
		cs.Spec.Source.URL = pl.Git().RepoURL(attacksRepo)
		for _, a := range attacks {
			cs.Spec.Versions = append(cs.Spec.Versions, a.version)
		}
		Expect(k8s.Create(ctx, cs)).To(Succeed())
		for _, a := range attacks {
			By(a.what)
			Eventually(ctx, func(g Gomega) {
				rel := getRelease(ctx, g, attacker, a.version)
				parts := append([]string{"HelmRelease/" + fluxgen.ClusterClassObjectName(rel.Name)}, a.mentions...)
				g.Expect(rel).To(framework.HaveCondition(csv1.DegradedCondition, metav1.ConditionTrue, parts...))
				g.Expect(rel).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionFalse))
				c := framework.Condition(rel, csv1.DegradedCondition)
				GinkgoWriter.Printf("%s: Degraded: %s\n", a.what, c.Message)
			}).WithTimeout(3 * time.Minute).Should(Succeed())
			Expect(a.created(ctx)).To(BeFalse(), "%s must not be created", a.what)
		}
		Eventually(ctx, func(g Gomega) {
			g.Expect(getStack(ctx, g, attacker)).To(framework.HaveCondition(csv1.DegradedCondition, metav1.ConditionTrue))
		}).Should(Succeed())

		By("the other team's stack and cluster stay Available, and nothing was created anywhere, through two of Flux's retries (at the stack's interval)")
		Consistently(ctx, func(g Gomega) {
			g.Expect(getStack(ctx, g, victim)).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue))
			g.Expect(getAddon(ctx, g, victim, "victim")).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue))
			for _, a := range attacks {
				g.Expect(a.created(ctx)).To(BeFalse(), "%s must not be created", a.what)
			}
		}, 2*stackInterval, time.Second).Should(Succeed())
	})

	It("never follows a Cluster's classRef into another namespace: the webhook refuses it, naming the field", func(ctx SpecContext) {
		c := newCluster(attacker, "borrower", "v1", "10.82.0.0/16")
		c.Spec.Topology.ClassRef.Namespace = victim
		err := k8s.Create(ctx, c)
		Expect(err).To(HaveOccurred())
		Expect(apierrors.IsForbidden(err) || apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(And(ContainSubstring("spec.topology.classRef.namespace"), ContainSubstring(attacker)))
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: attacker, Name: "borrower"}, &clusterv1.Cluster{})).NotTo(Succeed())
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: attacker, Name: "borrower"}, &csv1.ClusterAddon{})).NotTo(Succeed())
	})

	It("removes a hand-made ClusterAddon that names another namespace's cluster, and leaves that cluster alone", func(ctx SpecContext) {
		before := getAddon(ctx, Default, victim, "victim").Status.LastAppliedRelease
		Expect(k8s.Create(ctx, &csv1.ClusterAddon{
			ObjectMeta: metav1.ObjectMeta{Namespace: attacker, Name: "victim"},
			Spec:       csv1.ClusterAddonSpec{ClusterName: "victim"},
		})).To(Succeed())
		Eventually(ctx, func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: attacker, Name: "victim"}, &csv1.ClusterAddon{}))
		}).Should(BeTrue(), "a ClusterAddon without a Cluster of its own namespace is removed")
		var hrs helmv2.HelmReleaseList
		Expect(k8s.List(ctx, &hrs, client.InNamespace(attacker), client.MatchingLabels{csv1.ClusterNameLabel: "victim"})).To(Succeed())
		Expect(hrs.Items).To(BeEmpty(), "nothing is generated in the attacker's namespace for the other team's cluster")
		a := getAddon(ctx, Default, victim, "victim")
		Expect(a.Status.LastAppliedRelease).To(Equal(before))
		Expect(a).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue))
	})

	// credentialsStack creates a Secret with password in secretNS and an auto-subscribing
	// ClusterStack in the attacker's namespace whose source names it, and waits until the stack is
	// Degraded with a message holding every part and not the password (nor its first 15
	// characters); then deletes the stack and waits until it is gone.
	credentialsStack := func(ctx SpecContext, name, secretNS, secret, password string, parts ...string) *csv1.ClusterStack {
		GinkgoHelper()
		Expect(k8s.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: secret, Namespace: secretNS},
			StringData: map[string]string{"username": secretNS, "password": password},
		})).To(Succeed())
		cs := newClusterStack(attacker)
		cs.Name = name
		cs.Spec.Versions = nil
		cs.Spec.AutoSubscribe = true
		cs.Spec.Source.SecretRef = &meta.LocalObjectReference{Name: secret}
		Expect(k8s.Create(ctx, cs)).To(Succeed())
		s := &csv1.ClusterStack{}
		Eventually(ctx, func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: attacker, Name: name}, s)).To(Succeed())
			g.Expect(s).To(framework.HaveCondition(csv1.DegradedCondition, metav1.ConditionTrue, parts...))
			// Not even the start of the password ("team-b-password" of team B's).
			g.Expect(framework.Condition(s, csv1.DegradedCondition).Message).NotTo(ContainSubstring(password[:15]))
		}).Should(Succeed())
		awaitGone(ctx, cs, 2*time.Minute)
		return s
	}

	It("reads a stack's credentials Secret only in the stack's own namespace", func(ctx SpecContext) {
		s := credentialsStack(ctx, "borrowed-credentials", victim, "team-b-git", "team-b-password-3f9c2a7e51", attacker+"/team-b-git")
		Expect(s.Status.Releases).To(BeEmpty())
	})

	It("refuses to send a stack's credentials over plain http, and says so without them", func(ctx SpecContext) {
		credentialsStack(ctx, "plain-http-credentials", attacker, "team-a-git", "tenant-a-password-7e1b9c3d42", attacker+"/team-a-git", "plain http", "https")
	})

	It("runs a stack's Flux objects as its spec.serviceAccountName: refused and reported until that account is granted, then delivered", func(ctx SpecContext) {
		const ns, sa = "tenant-c", "stack-deployer"
		createNamespace(ctx, ns)
		// The namespace's owner allows the account to be named (the opt-in label); what it may
		// do is still up to RBAC.
		Expect(k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns,
			Labels: map[string]string{csv1.ServiceAccountOptInLabel: "true"}}})).To(Succeed())
		cs := newClusterStack(ns, "v1")
		cs.Spec.ServiceAccountName = sa
		Expect(k8s.Create(ctx, cs)).To(Succeed())
		user := "system:serviceaccount:" + ns + ":" + sa
		Eventually(ctx, func(g Gomega) {
			rel := getRelease(ctx, g, ns, "v1")
			g.Expect(rel.Spec.ServiceAccountName).To(Equal(sa))
			g.Expect(rel).To(framework.HaveCondition(csv1.DegradedCondition, metav1.ConditionTrue, "HelmRelease/"+fluxgen.ClusterClassObjectName(rel.Name), user, "forbidden"))
		}).WithTimeout(2 * time.Minute).Should(Succeed())

		By("granting the account the tenant role in its namespace")
		Expect(k8s.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "clusterstack-tenant"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}},
		})).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			g.Expect(getRelease(ctx, g, ns, "v1")).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue))
		}).WithTimeout(3 * time.Minute).Should(Succeed())

		By("a Cluster's addons run as the same account on its workload cluster, which must grant it too")
		Expect(k8s.Create(ctx, newCluster(ns, "own-identity", "v1", "10.83.0.0/16"))).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			a := getAddon(ctx, g, ns, "own-identity")
			g.Expect(a).To(framework.HaveCondition(csv1.DegradedCondition, metav1.ConditionTrue, user))
			var hrs helmv2.HelmReleaseList
			g.Expect(k8s.List(ctx, &hrs, client.InNamespace(ns), client.MatchingLabels{csv1.ClusterNameLabel: "own-identity"})).To(Succeed())
			g.Expect(hrs.Items).NotTo(BeEmpty())
			for _, hr := range hrs.Items {
				g.Expect(hr.Spec.ServiceAccountName).To(Equal(sa), "HelmRelease %s", hr.Name)
			}
		}).WithTimeout(3 * time.Minute).Should(Succeed())
		wc, err := workloadClient(ctx, ns, "own-identity")
		Expect(err).NotTo(HaveOccurred())
		Expect(wc.Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "stack-deployer-admin"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
		})).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			g.Expect(getAddon(ctx, g, ns, "own-identity")).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue))
		}).WithTimeout(4 * time.Minute).Should(Succeed())
	})
})
