package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
)

// The stack versions the suite publishes, each a tag of the reference stack with a change.
const (
	stackPath = "aws/base/1-36"
	tagPrefix = "aws-base-1-36-"
)

// publishVersion publishes the reference stack as version v (tag aws-base-1-36-<v>), with the
// cluster-class chart version set to v (as a release step does) and mutate applied to the
// stack directory.
func publishVersion(ctx context.Context, v string, mutate func(stackDir string)) {
	GinkgoHelper()
	publish(ctx, tagPrefix+v, func(dir string) {
		sd := filepath.Join(dir, stackPath)
		Expect(stack.SetChartVersion(sd, v)).To(Succeed())
		if mutate != nil {
			mutate(sd)
		}
	})
}

// Mutations of the reference stack.

// withClusterInfoKey adds a key to the cluster-info ConfigMap of the kustomize component (its
// content changes; the cni chart does not).
func withClusterInfoKey(key, value string) func(string) {
	return func(sd string) {
		editFile(sd, "cluster-addon/cluster-info/configmap.yaml", func(s string) string {
			return s + "  " + key + ": \"" + value + "\"\n"
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
