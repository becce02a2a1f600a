package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
	"github.com/clusterstack-io/clusterstack-operator/test/framework"
)

// `kubectl clusterstack diff` (the kubectl plugin, built and run as a user runs it) against the
// plane: a Cluster on v1 of the reference stack, and v2 as the suite publishes it (the
// cluster-info ConfigMap gains a key) with a cni chart bump that adds a ClusterRole and a value.
// The two versions live in a repository of their own, so that no other spec sees their tags.
var _ = Describe("kubectl clusterstack diff", Ordered, func() {
	const (
		ns      = "diff"
		repo    = "diff-stacks"
		cluster = "solo"
	)
	var binDir string

	BeforeAll(func(ctx SpecContext) {
		binDir = GinkgoT().TempDir()
		build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(binDir, "kubectl-clusterstack"), "./cmd/kubectl-clusterstack")
		build.Dir = repoRoot
		build.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
		out, err := build.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "go build ./cmd/kubectl-clusterstack: %s", out)

		_, err = pl.Git().CreateRepo(repo)
		Expect(err).NotTo(HaveOccurred())
		for _, v := range []string{"v1", "v2"} {
			publishTo(ctx, repo, tagPrefix+v, func(dir string) {
				sd := filepath.Join(dir, stackPath)
				Expect(stack.SetChartVersion(sd, v)).To(Succeed())
				if v == "v2" {
					withStackVersion("v2")(sd)
					withCNIClusterRole(sd)
				}
			})
		}
		createNamespace(ctx, ns)
		cs := newClusterStack(ns, "v1", "v2")
		cs.Spec.Source.URL = pl.Git().RepoURL(repo)
		Expect(k8s.Create(ctx, cs)).To(Succeed())
		Expect(k8s.Create(ctx, newCluster(ns, cluster, "v1", "10.43.0.0/16"))).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			g.Expect(getAddon(ctx, g, ns, cluster)).To(framework.HaveCondition(csv1.ReadyCondition, metav1.ConditionTrue))
			// v2's stack is read from its GitRepository's artifact: the release has validated it.
			g.Expect(getRelease(ctx, g, ns, "v2")).To(framework.HaveCondition(csv1.StackValidCondition, metav1.ConditionTrue))
		}).Should(Succeed())
	}, NodeTimeout(8*time.Minute))

	// diff runs `kubectl clusterstack diff` and returns stdout, stderr and the exit code.
	diff := func(ctx SpecContext, args ...string) (string, string, int) {
		GinkgoHelper()
		cmd := exec.CommandContext(ctx, "kubectl", append([]string{"clusterstack", "--kubeconfig", pl.Kubeconfig(), "diff", "-n", ns}, args...)...)
		cmd.Env = append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			Fail("run kubectl clusterstack diff: " + err.Error())
		}
		GinkgoWriter.Printf("$ kubectl clusterstack diff -n %s %s\n%s%s(exit code %d)\n", ns, strings.Join(args, " "), out.String(), errOut.String(), cmd.ProcessState.ExitCode())
		return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
	}

	It("names the changed chart version, a changed value and the cluster-scoped object, and exits 1", func(ctx SpecContext) {
		out, errOut, code := diff(ctx, cluster, "--to", tagPrefix+"v2")
		Expect(code).To(Equal(1), "exit code 1: differences; stderr: %s", errOut)
		Expect(out).To(HavePrefix("Upgrade " + tagPrefix + "v1 -> " + tagPrefix + "v2\n"))
		Expect(out).To(MatchRegexp(`~ cni +Helm +1\.0\.0 -> 1\.1\.0 +Changed`), "the chart version")
		Expect(out).To(ContainSubstring("    cni (Helm values)\n"), "the rendered values of cni")
		Expect(out).To(ContainSubstring("      +mtu: 9001\n"), "the changed value")
		Expect(out).To(ContainSubstring("  Cluster-scoped objects and CRDs\n    + ClusterRole cni-nodes  (cni)\n"), "the ClusterRole first")
		Expect(out).To(ContainSubstring("    ~ ConfigMap kube-system/cluster-info  (cluster-info)\n"), "the kustomize component's ConfigMap")
		Expect(out).To(ContainSubstring("      +  stack-version: v2\n"))
		Expect(out).To(ContainSubstring("      +  mtu: \"9001\"\n"), "the value as Helm renders it into cni's ConfigMap")
	})

	It("exits 0 for the Cluster's current release", func(ctx SpecContext) {
		out, errOut, code := diff(ctx, cluster, "--to", "v1")
		Expect(code).To(Equal(0), "exit code 0: no differences; stdout: %s, stderr: %s", out, errOut)
		Expect(out).To(ContainSubstring("Cluster " + ns + "/" + cluster + "  no differences in values or objects\n"))
	})

	// The Cluster moves only inside its wave's maintenance window, and keeps its override
	// across the move. The window opens at the next whole minute at least 20 s away (time
	// enough to see a move refused before it opens), for one minute (the least the API
	// allows); the Cluster admission webhook is the operator's.
	It("keeps a ClusterAddonOverride across the upgrade, which waits for the wave's maintenance window", func(ctx SpecContext) {
		plugin := func(args ...string) string {
			GinkgoHelper()
			cmd := exec.CommandContext(ctx, "kubectl", append([]string{"clusterstack", "--kubeconfig", pl.Kubeconfig()}, args...)...)
			cmd.Env = append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
			out, err := cmd.CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), "kubectl clusterstack %s: %s", strings.Join(args, " "), out)
			return string(out)
		}
		By("an override of the Cluster's cni values, shown in provenance")
		Expect(k8s.Create(ctx, &csv1.ClusterAddonOverride{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "solo-mtu"},
			Spec: csv1.ClusterAddonOverrideSpec{ClusterName: cluster, Components: []csv1.ComponentOverride{{Name: "cni", Values: apiextensionsv1.JSON{Raw: []byte(`{"mtu":1400}`)}}}}})).To(Succeed())
		valuesHaveOverride := func(release string) {
			GinkgoHelper()
			Eventually(ctx, func(g Gomega) {
				cm := &corev1.ConfigMap{}
				g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: fluxgen.ValuesConfigMapName(cluster, tagPrefix+release)}, cm)).To(Succeed())
				g.Expect(cm.Annotations).To(HaveKeyWithValue(csv1.OverridesAnnotation, "solo-mtu"))
				g.Expect(cm.Data).To(ContainElement(ContainSubstring("mtu: 1400")), "values ConfigMap %s", cm.Name)
			}).WithTimeout(2 * time.Minute).Should(Succeed())
			out := plugin("values", cluster, "-n", ns)
			GinkgoWriter.Printf("$ kubectl clusterstack values %s -n %s\n%s\n", cluster, ns, out)
			Expect(out).To(MatchRegexp(`\n  mtu +1400 +<- override solo-mtu \.spec\.components\[cni\]\.values\.mtu\n`), "the override's value with its provenance, on release %s", release)
		}
		valuesHaveOverride("v1")

		By("a maintenance window for every wave, opening at the next whole minute at least 20 s away")
		now := time.Now().UTC()
		opens := now.Truncate(time.Minute).Add(time.Minute)
		if opens.Sub(now) < 20*time.Second {
			opens = opens.Add(time.Minute)
		}
		cs := &csv1.ClusterStack{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "aws-base-1-36"}, cs)).To(Succeed())
		patch := client.MergeFrom(cs.DeepCopy())
		cs.Spec.Updates = &csv1.UpdatePolicy{Windows: []csv1.MaintenanceWindow{{
			Schedule: fmt.Sprintf("%d %d * * *", opens.Minute(), opens.Hour()), Duration: metav1.Duration{Duration: time.Minute}, TimeZone: "UTC"}}}
		Expect(k8s.Patch(ctx, cs, patch)).To(Succeed())

		By("the move to v2 is refused until the window opens, then goes through")
		err := patchTopology(ctx, ns, cluster, tagPrefix+"v2", "")
		Expect(err).To(HaveOccurred(), "a move before the window opens")
		Expect(err.Error()).To(ContainSubstring("no maintenance window of the wave is open now"))
		GinkgoWriter.Printf("%s: refused: %v\n", time.Now().UTC().Format(time.TimeOnly), err)
		Eventually(ctx, func() error { return patchTopology(ctx, ns, cluster, tagPrefix+"v2", "") }).
			WithTimeout(4*time.Minute).WithPolling(2*time.Second).Should(Succeed(), "the move once the window opens at %s", opens.Format(time.TimeOnly))
		moved := time.Now().UTC()
		GinkgoWriter.Printf("%s: moved (the window opened at %s)\n", moved.Format(time.TimeOnly), opens.Format(time.TimeOnly))
		Expect(moved).To(BeTemporally(">=", opens), "not before the window")

		By("on v2 the override is still in the values, and in provenance")
		Eventually(ctx, func(g Gomega) {
			a := getAddon(ctx, g, ns, cluster)
			g.Expect(a.Status.LastAppliedRelease).To(Equal(tagPrefix + "v2"))
			g.Expect(a).To(framework.HaveCondition(csv1.AvailableCondition, metav1.ConditionTrue))
		}).WithTimeout(4 * time.Minute).Should(Succeed())
		valuesHaveOverride("v2")
	}, NodeTimeout(12*time.Minute))
})

// withCNIClusterRole bumps the cni chart to 1.1.0, adds a ClusterRole to it and has its values
// template set the MTU.
func withCNIClusterRole(sd string) {
	editFile(sd, "cluster-addon/cni/Chart.yaml", func(s string) string { return strings.Replace(s, "version: 1.0.0", "version: 1.1.0", 1) })
	editFile(sd, "cluster-addon/cni/overwrite.yaml", func(s string) string { return strings.Replace(s, "  apiServer:\n", "  mtu: 9001\n  apiServer:\n", 1) })
	role := "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {{ .Release.Name }}-nodes\nrules:\n" +
		"  - apiGroups: [\"\"]\n    resources: [nodes]\n    verbs: [get, list, watch]\n"
	Expect(os.WriteFile(filepath.Join(sd, "cluster-addon/cni/templates/clusterrole.yaml"), []byte(role), 0o644)).To(Succeed())
}
