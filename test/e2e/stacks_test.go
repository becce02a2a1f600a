package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/clusterstack-io/clusterstack-operator/test/framework"
)

// The stack versions the suite publishes, each a tag of the reference stack with a change.
const (
	stackPath = framework.StackPath
	tagPrefix = framework.TagPrefix
)

// publishVersion publishes the reference stack as version v (tag aws-base-1-36-<v>), with the
// cluster-class chart version set to v (as a release step does) and mutate applied to the
// stack directory.
func publishVersion(ctx context.Context, v string, mutate func(stackDir string)) {
	GinkgoHelper()
	Expect(framework.PublishVersion(ctx, pl.Git(), repoRoot, GinkgoT().TempDir(), stacksRepo, v, orNil(mutate))).To(Succeed())
}

// publishVersions publishes the versions in the order given, with one push for all of them.
func publishVersions(ctx context.Context, versions ...framework.Version) {
	GinkgoHelper()
	Expect(framework.PublishVersions(ctx, pl.Git(), repoRoot, GinkgoT().TempDir(), stacksRepo, versions...)).To(Succeed())
}

// versionOf is version v of the reference stack with mutate (nil: none) applied, for
// publishVersions.
func versionOf(v string, mutate func(stackDir string)) framework.Version {
	return framework.Version{Name: v, Mutate: orNil(mutate)}
}

// Mutations of the reference stack.

// withStackVersion adds the key stack-version with value to the cluster-info ConfigMap of the
// kustomize component (its content changes; the cni chart does not).
func withStackVersion(value string) func(string) {
	return func(sd string) {
		editFile(sd, "cluster-addon/cluster-info/configmap.yaml", func(s string) string {
			return s + "  stack-version: \"" + value + "\"\n"
		})
	}
}

// withoutClusterInfo removes the cluster-info component from the stack.
func withoutClusterInfo(sd string) {
	Expect(os.RemoveAll(filepath.Join(sd, "cluster-addon", "cluster-info"))).To(Succeed())
	editFile(sd, "clusteraddon.yaml", func(s string) string {
		return strings.ReplaceAll(s, "    - name: cluster-info\n      action: apply\n", "")
	})
	editFile(sd, "stack.yaml", func(s string) string {
		return strings.ReplaceAll(s, "  cluster-info: 1.0.0\n", "")
	})
}

// withBrokenTemplate makes the cni values template print a field no object has.
func withBrokenTemplate(sd string) {
	editFile(sd, "cluster-addon/cni/overwrite.yaml", func(s string) string {
		return s + "  zone: \"{{ .InfraCluster.spec.noSuchField }}\"\n"
	})
}

// withUninstallableChart gives the cni chart (under a new chart version) an empty image, which
// the workload API server rejects.
func withUninstallableChart(sd string) {
	editFile(sd, "cluster-addon/cni/values.yaml", func(s string) string {
		return strings.Replace(s, "image: registry.k8s.io/pause:3.10", "image: \"\"", 1)
	})
	editFile(sd, "cluster-addon/cni/Chart.yaml", func(s string) string {
		return strings.Replace(s, "version: 1.0.0", "version: 1.0.1-broken", 1)
	})
}

// withBrokenClusterClassChart makes the cluster-class chart fail to render (a nil map lookup).
func withBrokenClusterClassChart(sd string) {
	editFile(sd, "cluster-class/templates/cluster-class.yaml", func(s string) string {
		return strings.Replace(s, "spec:\n", "spec:\n  # {{ .Values.doesNotExist.field }}\n", 1)
	})
}

// withoutClusterClass makes the stack malformed.
func withoutClusterClass(sd string) {
	Expect(os.RemoveAll(filepath.Join(sd, "cluster-class"))).To(Succeed())
}

func editFile(dir, rel string, fn func(string) string) {
	GinkgoHelper()
	p := filepath.Join(dir, rel)
	b, err := os.ReadFile(p)
	Expect(err).NotTo(HaveOccurred())
	out := fn(string(b))
	Expect(out).NotTo(Equal(string(b)), "mutation of %s changed nothing", rel)
	Expect(os.WriteFile(p, []byte(out), 0o644)).To(Succeed())
}

// withRenamedPodCIDRKey renames the cni chart's pod CIDR value (podCIDR -> clusterPodCIDR) in
// the chart and in its values template, under a new chart version: the old chart with the new
// values (or the reverse) would render an empty or failing pod-cidr.
func withRenamedPodCIDRKey(sd string) {
	editFile(sd, "cluster-addon/cni/overwrite.yaml", func(s string) string {
		return strings.Replace(s, "  podCIDR: ", "  clusterPodCIDR: ", 1)
	})
	editFile(sd, "cluster-addon/cni/values.yaml", func(s string) string {
		return strings.Replace(s, "podCIDR: \"\"", "clusterPodCIDR: \"\"", 1)
	})
	editFile(sd, "cluster-addon/cni/templates/configmap.yaml", func(s string) string {
		return strings.Replace(s, `pod-cidr: {{ required "podCIDR is required (overwrite.yaml sets it from the Cluster)" .Values.podCIDR | quote }}`,
			"pod-cidr: {{ .Values.clusterPodCIDR | quote }}\n  values-schema: \"2\"", 1)
	})
	editFile(sd, "cluster-addon/cni/Chart.yaml", func(s string) string {
		return strings.Replace(s, "version: 1.0.0", "version: 1.1.0", 1)
	})
}

// testPoolLabel is the node label the test components' Deployments select.
const testPoolLabel = "clusterstack.io/test-pool"

// deploymentYAML is a Deployment named name in kube-system that runs only on nodes labelled
// testPoolLabel=pool.
func deploymentYAML(name, pool string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ` + name + `
  namespace: kube-system
spec:
  replicas: 1
  selector:
    matchLabels: {app: ` + name + `}
  template:
    metadata:
      labels: {app: ` + name + `}
    spec:
      nodeSelector: {` + testPoolLabel + `: ` + pool + `}
      tolerations: [{operator: Exists}]
      containers:
        - name: app
          image: registry.k8s.io/pause:3.10
`
}

// withHelmDeployment adds a Helm component (last in the addon order) whose chart has a
// Deployment that runs only on nodes of the given pool.
func withHelmDeployment(component, pool string) func(string) {
	return func(sd string) {
		dir := filepath.Join(sd, "cluster-addon", component)
		Expect(os.MkdirAll(filepath.Join(dir, "templates"), 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(dir, "Chart.yaml"), []byte("apiVersion: v2\nname: "+component+"\nversion: 1.0.0\n"), 0o644)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(dir, "values.yaml"), []byte("{}\n"), 0o644)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(dir, "templates", "deployment.yaml"), []byte(deploymentYAML(component, pool)), 0o644)).To(Succeed())
	}
}

// withKustomizeDeployment adds a kustomize component (last in the addon order) with a
// Deployment that runs only on nodes of the given pool.
func withKustomizeDeployment(component, pool string) func(string) {
	return func(sd string) {
		dir := filepath.Join(sd, "cluster-addon", component)
		Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - deployment.yaml\n"), 0o644)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(dir, "deployment.yaml"), []byte(deploymentYAML(component, pool)), 0o644)).To(Succeed())
	}
}

// withClusterInfoChart makes the cluster-info component a Helm chart of the same objects (its
// ConfigMap, with the cluster's name and pod CIDR from overwrite.yaml, and its Deployment)
// instead of a kustomize directory.
func withClusterInfoChart(sd string) {
	dir := filepath.Join(sd, "cluster-addon", "cluster-info")
	deployment, err := os.ReadFile(filepath.Join(dir, "deployment.yaml"))
	Expect(err).NotTo(HaveOccurred())
	Expect(os.RemoveAll(dir)).To(Succeed())
	Expect(os.MkdirAll(filepath.Join(dir, "templates"), 0o755)).To(Succeed())
	files := map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: cluster-info\nversion: 1.0.0\n",
		"values.yaml": "clusterName: \"\"\npodCIDR: \"\"\n",
		"overwrite.yaml": "values: |\n  clusterName: \"{{ .Cluster.metadata.name }}\"\n" +
			"  podCIDR: \"{{ index .Cluster.spec.clusterNetwork.pods.cidrBlocks 0 }}\"\n",
		"templates/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cluster-info\n  namespace: kube-system\ndata:\n" +
			"  cluster-name: {{ .Values.clusterName | quote }}\n  pod-cidr: {{ .Values.podCIDR | quote }}\n  delivered-by: helm\n",
		"templates/deployment.yaml": string(deployment),
	}
	for name, content := range files {
		Expect(os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)).To(Succeed())
	}
}

// withHostileTemplate makes the cni values template ask for two billion characters.
func withHostileTemplate(sd string) {
	editFile(sd, "cluster-addon/cni/overwrite.yaml", func(s string) string {
		return s + "  junk: \"{{ \"x\" | repeat 2000000000 }}\"\n"
	})
}

// withConfigMapComponents adds one kustomize component per name, each a ConfigMap of that name
// in kube-system (last in the addon order).
func withConfigMapComponents(names ...string) func(string) {
	return func(sd string) {
		for _, name := range names {
			dir := filepath.Join(sd, "cluster-addon", name)
			Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - configmap.yaml\n"), 0o644)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(dir, "configmap.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: "+name+"\n  namespace: kube-system\ndata:\n  cluster: \"${cluster_name}\"\n"), 0o644)).To(Succeed())
		}
	}
}
