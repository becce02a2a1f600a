package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/plugin"
	"github.com/clusterstack-io/clusterstack-operator/internal/testenv"
	"github.com/clusterstack-io/clusterstack-operator/test/framework"
)

// The kubectl plugin (cmd/kubectl-clusterstack), built and run as a user runs it (kubectl finds it
// on the PATH), against the suite's plane: a stack with a healthy Cluster (v1) and a Cluster whose cni chart cannot be
// installed (v6, an empty image the workload API server rejects).
var _ = Describe("The kubectl plugin", Ordered, func() {
	const ns = "plugin"
	// binDir holds the plugin; kubectl finds it on the PATH.
	var binDir string
	pathEnv := func() string { return "PATH=" + binDir + string(os.PathListSeparator) + os.Getenv("PATH") }

	// run runs `kubectl clusterstack` with the suite's kubeconfig and returns stdout, stderr and
	// the exit code.
	run := func(ctx context.Context, args ...string) (string, string, int) {
		GinkgoHelper()
		cmd := exec.CommandContext(ctx, "kubectl", append([]string{"clusterstack", "--kubeconfig", pl.Kubeconfig()}, args...)...)
		cmd.Env = append(os.Environ(), pathEnv())
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			Fail("run kubectl clusterstack: " + err.Error())
		}
		return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
	}
	// runOK runs the plugin, expects exit code 0 and no ANSI escapes (stdout is a pipe), and
	// prints the command and its output (for docs/kubectl-plugin.md).
	runOK := func(ctx context.Context, args ...string) string {
		GinkgoHelper()
		out, errOut, code := run(ctx, args...)
		Expect(code).To(Equal(0), "kubectl clusterstack %s: %s%s", strings.Join(args, " "), out, errOut)
		Expect(out).NotTo(ContainSubstring("\x1b["), "no colour when stdout is no terminal")
		GinkgoWriter.Printf("$ kubectl clusterstack %s\n%s", strings.Join(args, " "), out)
		return out
	}
	// runJSON runs the plugin with -o json and decodes its output into v.
	runJSON := func(ctx context.Context, v any, args ...string) {
		GinkgoHelper()
		out, errOut, code := run(ctx, append(args, "-o", "json")...)
		Expect(code).To(Equal(0), "kubectl clusterstack %s -o json: %s%s", strings.Join(args, " "), out, errOut)
		Expect(json.Unmarshal([]byte(out), v)).To(Succeed(), "-o json parses:\n%s", out)
	}

	BeforeAll(func(ctx SpecContext) {
		binDir = GinkgoT().TempDir()
		build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(binDir, "kubectl-clusterstack"), "./cmd/kubectl-clusterstack")
		build.Dir = repoRoot
		build.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
		out, err := build.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "go build ./cmd/kubectl-clusterstack: %s", out)

		createNamespace(ctx, ns)
		Expect(k8s.Create(ctx, newClusterStack(ns, "v1", "v6"))).To(Succeed())
		Expect(k8s.Create(ctx, newCluster(ns, "healthy", "v1", "10.41.0.0/16"))).To(Succeed())
		Expect(k8s.Create(ctx, newCluster(ns, "broken", "v6", "10.42.0.0/16"))).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			g.Expect(getAddon(ctx, g, ns, "healthy")).To(framework.HaveCondition(csv1.ReadyCondition, metav1.ConditionTrue))
			g.Expect(getAddon(ctx, g, ns, "broken")).To(framework.HaveCondition(csv1.DegradedCondition, metav1.ConditionTrue, "component cni", "HelmRelease/broken-cni"))
			// The stack's roll-up follows its ClusterAddons (written at most once a second).
			g.Expect(getStack(ctx, g, ns)).To(framework.HaveCondition(csv1.DegradedCondition, metav1.ConditionTrue, "cluster "+ns+"/broken"))
		}).Should(Succeed())
	}, NodeTimeout(8*time.Minute))

	It("tree shows the stack, its releases, the Clusters on each and their components with Flux's state", func(ctx SpecContext) {
		var t plugin.Tree
		runJSON(ctx, &t, "tree", "-n", ns)
		Expect(t.Stacks).To(HaveLen(1))
		s := t.Stacks[0]
		Expect(s.Namespace + "/" + s.Name).To(Equal(ns + "/aws-base-1-36"))
		releases := map[string]plugin.ReleaseNode{}
		for _, r := range s.Releases {
			releases[r.Name] = r
		}
		Expect(releases).To(HaveKey(tagPrefix + "v1"))
		Expect(releases).To(HaveKey(tagPrefix + "v6"))
		v1 := releases[tagPrefix+"v1"]
		Expect(v1.Available).To(BeTrue())
		Expect(v1.Reasons).To(ContainElements("Pinned", "InUse"))
		Expect(v1.Clusters).To(ConsistOf(HaveField("Name", "healthy")))
		healthy := v1.Clusters[0]
		Expect(healthy.State).To(Equal(plugin.StateReady))
		Expect(healthy.Components).To(ConsistOf(
			And(HaveField("Name", "cni"), HaveField("Flux.Kind", "HelmRelease"), HaveField("Flux.Name", "healthy-cni"), HaveField("Flux.State", plugin.StateReady)),
			And(HaveField("Name", "cluster-info"), HaveField("Flux.Kind", "Kustomization"), HaveField("Flux.State", plugin.StateReady)),
		))
		Expect(releases[tagPrefix+"v6"].Clusters).To(ConsistOf(And(HaveField("Name", "broken"), HaveField("State", plugin.StateDegraded))))
		broken := releases[tagPrefix+"v6"].Clusters[0]
		Expect(broken.Components).To(ContainElement(And(HaveField("Name", "cni"), HaveField("Flux.Name", "broken-cni"), HaveField("Ready", false))))

		text := runOK(ctx, "tree", "-n", ns)
		Expect(text).To(ContainSubstring("ClusterStack "+ns+"/aws-base-1-36  Degraded"), "the broken Cluster degrades the stack")
		Expect(text).To(MatchRegexp(`ClusterStackRelease ` + tagPrefix + `v1  Ready  \[[^]]*Pinned`))
		Expect(text).To(ContainSubstring("Cluster healthy  Ready  2/2 components"))
		Expect(text).To(MatchRegexp(`cni +HelmRelease/healthy-cni +Ready`))
		Expect(text).To(ContainSubstring("Cluster broken  Degraded"))

		var all plugin.Tree
		out, _, code := run(ctx, "tree", "-A", "-o", "yaml")
		Expect(code).To(Equal(0))
		Expect(yaml.Unmarshal([]byte(out), &all)).To(Succeed(), "-o yaml parses")
		Expect(all.Stacks).To(ContainElement(HaveField("Namespace", ns)))
	})

	It("why says nothing blocks a healthy Cluster", func(ctx SpecContext) {
		var v plugin.Verdict
		runJSON(ctx, &v, "why", "healthy", "-n", ns)
		Expect(v.Blocked).To(BeFalse(), v.Summary)
		Expect(v.Blocker).To(Equal(plugin.BlockerNone))
		text := runOK(ctx, "why", "healthy", "-n", ns)
		Expect(text).To(HavePrefix("OK  Nothing blocks Cluster " + ns + "/healthy: its addons are Ready at release " + tagPrefix + "v1 (2/2 components)."))
	})

	It("why names the failing component, its Flux object and what Flux said", func(ctx SpecContext) {
		var v plugin.Verdict
		runJSON(ctx, &v, "why", "broken", "-n", ns)
		Expect(v.Blocked).To(BeTrue())
		Expect(v.Blocker).To(Equal(plugin.BlockerComponentFailing), v.Summary)
		Expect(v.Component).To(Equal("cni"))
		Expect(v.FluxObject).NotTo(BeNil())
		Expect(v.FluxObject.Ref()).To(Equal("HelmRelease/broken-cni"))

		// What Flux said: the HelmRelease's Ready message when it reports the failure, or the
		// failure the operator kept while Flux retries; either names the rejected image.
		said := v.FluxObject.Message()
		if v.FluxObject.State != plugin.StateFailed {
			said = v.LastFailure
		}
		Expect(said).To(ContainSubstring("image"), "Flux's message: %+v", v)
		Expect(v.Summary).To(ContainSubstring("Component cni is failing: HelmRelease " + ns + "/broken-cni: " + strings.Join(strings.Fields(said), " ")))
		hr := &helmv2.HelmRelease{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "broken-cni"}, hr)).To(Succeed())
		Expect(apimeta.FindStatusCondition(hr.Status.Conditions, "Ready")).NotTo(BeNil())
		Expect(v.FluxObject.InstallFailures+v.FluxObject.Failures).To(BeNumerically(">", 0), "the HelmRelease's failures are reported")

		text := runOK(ctx, "why", "broken", "-n", ns)
		Expect(text).To(HavePrefix("BLOCKED ComponentFailing  Component cni is failing: HelmRelease " + ns + "/broken-cni: "))
		Expect(text).To(ContainSubstring("Evidence:"))

		By("a Cluster that does not exist: a verdict, exit code 0")
		runJSON(ctx, &v, "why", "no-such-cluster", "-n", ns)
		Expect(v.Blocker).To(Equal(plugin.BlockerClusterNotFound))
		By("an API server that cannot be reached: an error, exit code 1")
		_, errOut, code := run(ctx, "why", "healthy", "-n", ns, "--server", "https://127.0.0.1:1", "--request-timeout", "5s")
		Expect(code).To(Equal(1))
		Expect(errOut).To(HavePrefix("error: "))
	})

	It("values shows each value and where it came from", func(ctx SpecContext) {
		var v plugin.ClusterValues
		runJSON(ctx, &v, "values", "healthy", "-n", ns)
		Expect(v.Release).To(Equal(tagPrefix + "v1"))
		Expect(v.Notes).To(BeEmpty(), "the stack was read from the release's artifact")
		Expect(v.ConfigMaps).To(HaveLen(1))
		Expect(v.Variables).To(ContainElement(And(HaveField("Key", "cluster_name"), HaveField("Value", "healthy"),
			HaveField("From", ConsistOf(plugin.Origin{Source: plugin.SourceCluster, Object: "Cluster/healthy", Field: ".metadata.name"})))))
		comps := map[string]plugin.ComponentValues{}
		for _, c := range v.Components {
			comps[c.Name] = c
		}
		Expect(comps["cni"].Key).To(Equal("helm_values_cni"))
		Expect(comps["cni"].Note).To(BeEmpty())
		Expect(comps["cni"].Values).To(ContainElement(And(HaveField("Key", "podCIDR"), HaveField("Value", "10.41.0.0/16"),
			HaveField("From", ConsistOf(plugin.Origin{Source: plugin.SourceCluster, Object: "Cluster/healthy", Field: ".spec.clusterNetwork.pods.cidrBlocks[0]"})))))
		Expect(comps["cni"].Values).To(ContainElement(And(HaveField("Key", "apiServer.host"),
			HaveField("From", ConsistOf(HaveField("Field", ".spec.controlPlaneEndpoint.host"))))))
		Expect(comps["cluster-info"].Values).To(ContainElement(And(HaveField("Key", "infra_region"), HaveField("Value", "eu-north-1"),
			HaveField("From", ConsistOf(And(HaveField("Source", plugin.SourceInfraCluster), HaveField("Field", ".spec.region")))))))

		text := runOK(ctx, "values", "healthy", "-n", ns)
		Expect(text).To(MatchRegexp(`podCIDR +10\.41\.0\.0/16 +<- Cluster/healthy \.spec\.clusterNetwork\.pods\.cidrBlocks\[0\]`))
		Expect(text).To(MatchRegexp(`infra_region +eu-north-1 +<- \w+/\S+ \.spec\.region`))
	})

	It("updates lists the releases each Cluster may move to", func(ctx SpecContext) {
		var u plugin.Updates
		runJSON(ctx, &u, "updates", "-n", ns)
		Expect(u.Stacks).To(HaveLen(1))
		Expect(u.Stacks[0].Clusters).To(ContainElement(And(HaveField("Name", "healthy"), HaveField("AvailableUpgrades", ContainElement(tagPrefix+"v6")))),
			"v6 is a validated newer release of the stack")
		runOK(ctx, "updates", "aws-base-1-36", "-n", ns)
	})

	It("lint and template work on a stack directory as stackctl does", func(ctx SpecContext) {
		dir := filepath.Join(repoRoot, "stacks", stackPath)
		out, errOut, code := run(ctx, "lint", dir)
		Expect(code).To(Equal(0), out+errOut)
		Expect(errOut).To(Equal(dir + ": ok\n"))
		var lint struct{ Problems []any }
		runJSON(ctx, &lint, "lint", dir)
		Expect(lint.Problems).To(BeEmpty())
		_, _, code = run(ctx, "lint", dir, "--version", "v3")
		Expect(code).To(Equal(1), "the chart's version is not v3")

		var objs []map[string]any
		runJSON(ctx, &objs, "template", dir, "--version", "v2")
		Expect(objs).To(ContainElement(And(HaveKeyWithValue("kind", "ClusterClass"), HaveKeyWithValue("metadata", HaveKeyWithValue("name", tagPrefix+"v2")))))
	})

	It("colours only on a terminal, and not with NO_COLOR", func(ctx SpecContext) {
		script, err := exec.LookPath("script")
		if err != nil {
			testenv.SkipOrFail(GinkgoT(), "no script(1) to run the plugin on a pseudo-terminal")
		}
		onTTY := func(env ...string) string {
			cmd := exec.CommandContext(ctx, script, "-qec", "kubectl clusterstack --kubeconfig "+pl.Kubeconfig()+" tree -n "+ns, "/dev/null")
			cmd.Env = append(append(os.Environ(), pathEnv()), env...)
			out, err := cmd.Output()
			Expect(err).NotTo(HaveOccurred(), string(out))
			return string(out)
		}
		Expect(onTTY("NO_COLOR=")).To(ContainSubstring("\x1b[32mReady\x1b[0m"))
		Expect(onTTY("NO_COLOR=1")).NotTo(ContainSubstring("\x1b["))
	})
})
