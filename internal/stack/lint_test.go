package stack

import (
	"os"
	"path/filepath"
	"testing"
)

// TestLintStacks lints every stack under ../../stacks (directories with stack.yaml or
// csctl.yaml), with the version of its cluster-class chart as release version.
func TestLintStacks(t *testing.T) {
	var dirs []string
	err := filepath.WalkDir("../../stacks", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		for _, f := range []string{StackFile, CsctlFile} {
			if _, err := os.Stat(filepath.Join(p, f)); err == nil {
				dirs = append(dirs, p)
				return filepath.SkipDir
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no stacks found under ../../stacks")
	}
	for _, dir := range dirs {
		t.Run(dir, func(t *testing.T) {
			s, err := Load(dir)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			for _, p := range Lint(dir, s.ClusterClass.Version) {
				t.Errorf("%s", p)
			}
		})
	}
}

func TestLintSCSTestdata(t *testing.T) {
	for _, dir := range []string{"testdata/scs/openstack/scs/1-35", "testdata/scs/docker/ferrol/1-28"} {
		t.Run(dir, func(t *testing.T) {
			for _, p := range Lint(dir, "") {
				t.Errorf("%s", p)
			}
		})
	}
}

type wantProblem struct{ file, msg string }

func TestLintProblems(t *testing.T) {
	const (
		aws = "../../stacks/aws/base/1-36"
		scs = "testdata/scs/openstack/scs/1-35"
		old = "testdata/scs/docker/ferrol/1-28"
	)
	tests := []struct {
		name    string
		base    string
		version string
		mutate  func(t *testing.T, dir string)
		want    []wantProblem
	}{{
		name:   "no metadata",
		base:   aws,
		mutate: func(t *testing.T, dir string) { removeFile(t, dir, "stack.yaml") },
		want:   []wantProblem{{"", "no stack metadata: neither stack.yaml nor csctl.yaml exists"}},
	}, {
		name:   "unknown stack.yaml key",
		base:   aws,
		mutate: func(t *testing.T, dir string) { appendFile(t, dir, "stack.yaml", "kubernetesversion: 1.36.3\n") },
		want:   []wantProblem{{"stack.yaml", "field kubernetesversion not found"}},
	}, {
		name: "missing provider and minor-only kubernetesVersion",
		base: aws,
		mutate: func(t *testing.T, dir string) {
			writeFile(t, dir, "stack.yaml", "clusterStackName: base\nkubernetesVersion: 1.36\n")
		},
		want: []wantProblem{
			{"stack.yaml", "provider is missing"},
			{"stack.yaml", `kubernetesVersion "1.36" is not a patch version`},
		},
	}, {
		name:   "kubernetesVersion of another minor than the directory",
		base:   aws,
		mutate: func(t *testing.T, dir string) { replaceInFile(t, dir, "stack.yaml", "1.36.3", "1.35.2") },
		want:   []wantProblem{{"stack.yaml", "kubernetesVersion 1.35.2 does not match the stack directory 1-36"}},
	}, {
		name: "provider with a dash",
		base: aws,
		mutate: func(t *testing.T, dir string) {
			replaceInFile(t, dir, "stack.yaml", "provider: aws", "provider: aws-eks")
		},
		want: []wantProblem{{"stack.yaml", `provider "aws-eks" must be lower-case letters and digits only`}},
	}, {
		name: "requires: malformed entries, each reported with its index",
		base: aws,
		mutate: func(t *testing.T, dir string) {
			appendFile(t, dir, "stack.yaml", `requires:
  - operator: cluster-api
    versions: ">=1.10.0 <1.12.0"
  - operator: capa
    versions: "newest"
  - capiContract: beta2
  - operator: capa
    capiContract: v1beta2
  - {}
  - operator: cluster-api
    versions: "<2.0.0"
  - capiContract: v1beta2
    versions: ">=1.0.0"
`)
		},
		want: []wantProblem{
			{"stack.yaml", `requires[1]: operator capa: versions "newest" is not a semantic version range (e.g. ">=1.10.0 <1.12.0", "~1.10" or "1.10.x || 1.11.x")`},
			{"stack.yaml", `requires[2]: capiContract "beta2" is not a Cluster API contract such as v1beta2`},
			{"stack.yaml", "requires[3]: set operator or capiContract, not both: write them as two entries"},
			{"stack.yaml", "requires[4]: set operator (with an optional versions range) or capiContract"},
			{"stack.yaml", "requires[5]: operator cluster-api is listed again (first in requires[0]): write one entry, with one range"},
			{"stack.yaml", "requires[6]: versions applies to an operator, not to capiContract"},
		},
	}, {
		name: "requires: an unknown key",
		base: aws,
		mutate: func(t *testing.T, dir string) {
			appendFile(t, dir, "stack.yaml", "requires:\n  - operator: capa\n    version: \">=2.0.0\"\n")
		},
		want: []wantProblem{{"stack.yaml", "field version not found"}},
	}, {
		name: "csctl.yaml with an unknown apiVersion",
		base: old,
		mutate: func(t *testing.T, dir string) {
			replaceInFile(t, dir, "csctl.yaml", "csctl.clusterstack.x-k8s.io/v1alpha1", "csctl.example.com/v9")
		},
		want: []wantProblem{{"csctl.yaml", `unknown apiVersion "csctl.example.com/v9"`}},
	}, {
		name: "csctl.yaml contradicting stack.yaml",
		base: scs,
		mutate: func(t *testing.T, dir string) {
			replaceInFile(t, dir, "csctl.yaml", "clusterStackName: scs", "clusterStackName: scs2")
		},
		want: []wantProblem{{"csctl.yaml", `config.clusterStackName "scs2" contradicts stack.yaml clusterStackName "scs"`}},
	}, {
		name:   "no cluster-class",
		base:   aws,
		mutate: func(t *testing.T, dir string) { removeFile(t, dir, "cluster-class") },
		want:   []wantProblem{{"cluster-class/", "missing: a stack needs a cluster-class directory"}},
	}, {
		name: "cluster-class neither chart nor kustomize",
		base: aws,
		mutate: func(t *testing.T, dir string) {
			removeFile(t, dir, "cluster-class")
			writeFile(t, dir, "cluster-class/README.md", "nothing here\n")
		},
		want: []wantProblem{{"cluster-class/", "neither a Helm chart (no Chart.yaml) nor a kustomize directory"}},
	}, {
		name: "Chart.yaml without name and version",
		base: aws,
		mutate: func(t *testing.T, dir string) {
			writeFile(t, dir, "cluster-class/Chart.yaml", "apiVersion: v2\ntype: application\n")
		},
		want: []wantProblem{
			{"cluster-class/Chart.yaml", "name is missing"},
			{"cluster-class/Chart.yaml", "version is missing"},
		},
	}, {
		name:    "cluster-class version does not match the release",
		base:    aws,
		version: "v2",
		want:    []wantProblem{{"cluster-class/Chart.yaml", `version "v1" does not match release version "v2"`}},
	}, {
		name:    "cluster-class version spelled as SCS spells it in charts, the release as in SCS tags",
		base:    aws,
		version: "v1-alpha-0",
		mutate: func(t *testing.T, dir string) {
			replaceInFile(t, dir, "cluster-class/Chart.yaml", "version: v1", "version: v1-alpha.0")
		},
		want: []wantProblem{{"cluster-class/Chart.yaml", `version "v1-alpha.0" does not match release version "v1-alpha-0" (the same version spelled differently: the tag, the chart version and the ClusterClass name must spell it alike; publish the tag "aws-base-1-36-v1-alpha.0", or set the chart version to "v1-alpha-0")`}},
	}, {
		name: "cluster-class version is no stack version",
		base: aws,
		mutate: func(t *testing.T, dir string) {
			replaceInFile(t, dir, "cluster-class/Chart.yaml", "version: v1", "version: 0.1.0")
		},
		want: []wantProblem{{"cluster-class/Chart.yaml", `version "0.1.0" is not a stack version`}},
	}, {
		name:    "release version is no stack version",
		base:    aws,
		version: "1.0.0",
		want:    []wantProblem{{"", `release version: version "1.0.0" is not a stack version`}},
	}, {
		name: "ClusterClass not named after the release",
		base: aws,
		mutate: func(t *testing.T, dir string) {
			replaceInFile(t, dir, "cluster-class/templates/cluster-class.yaml", `name: {{ include "cluster-class.name" . }}`+"\n", "name: my-class\n")
		},
		want: []wantProblem{{"cluster-class/templates/cluster-class.yaml", `the ClusterClass is named "my-class", want the release name "aws-base-1-36-v1"`}},
	}, {
		name: "ClusterClass referring to a template the chart does not render",
		base: aws,
		mutate: func(t *testing.T, dir string) {
			removeFile(t, dir, "cluster-class/templates/kubeadm-config-template.yaml")
		},
		want: []wantProblem{{"cluster-class/templates/cluster-class.yaml",
			`spec.workers.machineDeployments[0].bootstrap.templateRef refers to KubeadmConfigTemplate "aws-base-1-36-v1-default-worker", which the cluster-class does not render`}},
	}, {
		name:   "clusteraddon.yaml naming a component that does not exist",
		base:   scs,
		mutate: func(t *testing.T, dir string) { removeFile(t, dir, "cluster-addon/ccm") },
		want:   []wantProblem{{"clusteraddon.yaml", `addonStages.AfterControlPlaneInitialized[1]: component "ccm" does not exist (no cluster-addon/ccm/ directory)`}},
	}, {
		name: "clusteraddon.yaml with an unknown stage and action",
		base: aws,
		mutate: func(t *testing.T, dir string) {
			appendFile(t, dir, "clusteraddon.yaml", "  AfterEverything:\n    - name: cni\n      action: apply\n")
			replaceInFile(t, dir, "clusteraddon.yaml", "action: apply", "action: install")
		},
		want: []wantProblem{
			{"clusteraddon.yaml", "addonStages.AfterEverything: unknown stage"},
			{"clusteraddon.yaml", `addonStages.AfterControlPlaneInitialized[0]: action "install" of cni must be apply or delete`},
		},
	}, {
		name: "overwrite.yaml that is not YAML",
		base: aws,
		mutate: func(t *testing.T, dir string) {
			writeFile(t, dir, "cluster-addon/cni/overwrite.yaml", "values: |\n  a: b\n c: [\n")
		},
		want: []wantProblem{{"cluster-addon/cni/overwrite.yaml", "not a valid values file"}},
	}, {
		name: "overwrite.yaml with values as a map",
		base: aws,
		mutate: func(t *testing.T, dir string) {
			writeFile(t, dir, "cluster-addon/cni/overwrite.yaml", "values:\n  podCIDR: x\n")
		},
		want: []wantProblem{{"cluster-addon/cni/overwrite.yaml", "values must be a string holding the template, written as `values: |`"}},
	}, {
		name: "overwrite.yaml template that does not parse",
		base: aws,
		mutate: func(t *testing.T, dir string) {
			writeFile(t, dir, "cluster-addon/cluster-info/overwrite.yaml", "values: |\n  infra:\n    region: \"{{ .InfraCluster.spec.region \"\n")
		},
		want: []wantProblem{{"cluster-addon/cluster-info/overwrite.yaml", "values template does not parse"}},
	}, {
		name: "overwrite.yaml template using env",
		base: scs,
		mutate: func(t *testing.T, dir string) {
			writeFile(t, dir, "cluster-addon/metrics-server/overwrite.yaml", "values: |\n  home: {{ env \"HOME\" }}\n")
		},
		want: []wantProblem{{"cluster-addon/metrics-server/overwrite.yaml", `function "env" not defined`}},
	}, {
		name:   "cluster-addon-values.yaml whose template does not parse",
		base:   old,
		mutate: func(t *testing.T, dir string) { appendFile(t, dir, "cluster-addon-values.yaml", "  {{ end }}\n") },
		want:   []wantProblem{{"cluster-addon-values.yaml", "values template does not parse"}},
	}, {
		name: "cluster-addon-values.yaml next to per-component directories with a key that is no component",
		base: scs,
		mutate: func(t *testing.T, dir string) {
			// cilium is the alias of cni's subchart: its values, no problem.
			writeFile(t, dir, "cluster-addon-values.yaml", "values: |\n  cni: {}\n  cilium:\n    a: b\n  calico:\n    a: b\n")
		},
		want: []wantProblem{{"cluster-addon-values.yaml", `key "calico" is neither a component of this stack (components: cni, ccm, metrics-server, csi) nor a subchart of one`}},
	}, {
		name: "dependency with a repository alias, not vendored",
		base: scs,
		mutate: func(t *testing.T, dir string) {
			removeFile(t, dir, "cluster-addon/cni/charts")
			replaceInFile(t, dir, "cluster-addon/cni/Chart.yaml", "repository: https://helm.cilium.io/", `repository: "@cilium"`)
		},
		want: []wantProblem{{"cluster-addon/cni/Chart.yaml", `dependency "cilium": repository "@cilium" names a repository of a local helm configuration`}},
	}, {
		name: "vendored dependency of another version",
		base: scs,
		mutate: func(t *testing.T, dir string) {
			replaceInFile(t, dir, "cluster-addon/cni/Chart.yaml", "version: 1.19.1", "version: 1.20.0")
		},
		want: []wantProblem{{"cluster-addon/cni/Chart.yaml", `dependency "cilium" 1.20.0 from https://helm.cilium.io/: the vendored chart does not match: cluster-addon/cni/charts/cilium-1.19.1.tgz (version 1.19.1)`}},
	}, {
		name: "dependency of the umbrella chart without repository, not vendored",
		base: old,
		mutate: func(t *testing.T, dir string) {
			removeFile(t, dir, "cluster-addon/charts/metrics-server-3.12.0.tgz")
			replaceInFile(t, dir, "cluster-addon/Chart.yaml", "    repository: https://kubernetes-sigs.github.io/metrics-server/\n", "")
		},
		want: []wantProblem{{"cluster-addon/Chart.yaml", `dependency "metrics-server" 3.12.0 has no repository and is not vendored under cluster-addon/charts/`}},
	}, {
		name: "Helm templates that do not parse",
		base: aws,
		mutate: func(t *testing.T, dir string) {
			appendFile(t, dir, "cluster-addon/cni/templates/daemonset.yaml", "{{ if .Values.x }}\n")
			appendFile(t, dir, "cluster-class/templates/aws-cluster-template.yaml", "{{ .Values.region | nosuchfunc }}\n")
		},
		want: []wantProblem{
			{"cluster-addon/cni/templates/daemonset.yaml", "Helm template does not parse"},
			{"cluster-class/templates/aws-cluster-template.yaml", `function "nosuchfunc" not defined`},
		},
	}, {
		name: "Helm template that fails to render",
		base: aws,
		mutate: func(t *testing.T, dir string) {
			appendFile(t, dir, "cluster-addon/cni/templates/configmap.yaml", "  extra: {{ .Values.nothing.here }}\n")
		},
		want: []wantProblem{{"cluster-addon/cni/templates/configmap.yaml", "at <.Values.nothing.here>: nil pointer evaluating"}},
	}, {
		name: "Helm template rendering something that is no Kubernetes object",
		base: scs,
		mutate: func(t *testing.T, dir string) {
			writeFile(t, dir, "cluster-addon/csi/templates/broken.yaml", "apiVersion: v1\ndata:\n  a: b\n")
		},
		want: []wantProblem{{"cluster-addon/csi/templates/broken.yaml", "rendered document 1 is not a Kubernetes object: kind, metadata.name missing"}},
	}, {
		name: "kustomize directory that does not build",
		base: aws,
		mutate: func(t *testing.T, dir string) {
			replaceInFile(t, dir, "cluster-addon/cluster-info/kustomization.yaml", "- deployment.yaml", "- deployment.yaml\n  - service.yaml")
		},
		want: []wantProblem{{"cluster-addon/cluster-info/", "kustomize build failed"}},
	}, {
		name:   "kustomize directory without kustomization.yaml but with overwrite.yaml",
		base:   aws,
		mutate: func(t *testing.T, dir string) { removeFile(t, dir, "cluster-addon/cluster-info/kustomization.yaml") },
		want: []wantProblem{
			{"cluster-addon/cluster-info/overwrite.yaml", "the directory has no kustomization.yaml, so Flux generates one"},
			{"cluster-addon/cluster-info/", "Flux generates one from every YAML file below it, and that fails: failed to decode Kubernetes YAML from cluster-addon/cluster-info/overwrite.yaml"},
		},
	}, {
		name: "unknown substitution variable",
		base: aws,
		mutate: func(t *testing.T, dir string) {
			replaceInFile(t, dir, "cluster-addon/cluster-info/configmap.yaml", "${infra_region}", "${infra_regoin}")
		},
		want: []wantProblem{{"cluster-addon/cluster-info/", "${infra_regoin} is neither an operator variable nor a flattened key of the overwrite.yaml values"}},
	}, {
		name: "substitution Flux cannot parse",
		base: aws,
		mutate: func(t *testing.T, dir string) {
			replaceInFile(t, dir, "cluster-addon/cluster-info/configmap.yaml", "${infra_region}", "${infra_region-eu}")
		},
		want: []wantProblem{{"cluster-addon/cluster-info/", "post-build substitution fails for ConfigMap cluster-info: variable substitution failed: missing closing brace"}},
	}, {
		name: "substitution with a default or escaped",
		base: aws,
		mutate: func(t *testing.T, dir string) {
			replaceInFile(t, dir, "cluster-addon/cluster-info/configmap.yaml", "${infra_region}", "${infra_regoin:=eu-west-1} $${literal}")
		},
	}, {
		name: "a port alone in a ConfigMap value",
		base: aws,
		mutate: func(t *testing.T, dir string) {
			appendFile(t, dir, "cluster-addon/cluster-info/configmap.yaml", "  port: \"${control_plane_endpoint_port}\"\n")
		},
		want: []wantProblem{{"cluster-addon/cluster-info/", "ConfigMap cluster-info data.port is just ${control_plane_endpoint_port}: kustomize drops the quotes"}},
	}, {
		name: "component directory that is neither chart nor kustomize",
		base: aws,
		mutate: func(t *testing.T, dir string) {
			writeFile(t, dir, "cluster-addon/storage/README.md", "todo\n")
		},
		want: []wantProblem{{"cluster-addon/storage/", "neither a Helm chart (no Chart.yaml) nor a kustomize directory"}},
	}, {
		name: "namespaces naming no component, and an invalid namespace",
		base: aws,
		mutate: func(t *testing.T, dir string) {
			appendFile(t, dir, "stack.yaml", "namespaces:\n  csi: storage\n  cni: Kube_System\n")
		},
		want: []wantProblem{
			{"stack.yaml", `namespaces.csi: there is no component "csi"`},
			{"stack.yaml", `namespaces.cni: "Kube_System" is not a valid namespace name`},
		},
	}, {
		name: "a per-cluster namespace too long for a realistic cluster name",
		base: aws,
		mutate: func(t *testing.T, dir string) {
			appendFile(t, dir, "stack.yaml", "namespaces:\n  cni: the-container-network-interface-of-${cluster_name}\n")
		},
		want: []wantProblem{
			{"stack.yaml", `namespaces.cni: "the-container-network-interface-of-${cluster_name}" is not a valid namespace name for a Cluster named "prod-eu-central-1-payments-01"`},
		},
	}, {
		name: "every problem at once",
		base: scs,
		mutate: func(t *testing.T, dir string) {
			replaceInFile(t, dir, "stack.yaml", "1.35.3", "1.35")
			writeFile(t, dir, "cluster-class/Chart.yaml", "apiVersion: v2\nname: cc\n")
			removeFile(t, dir, "cluster-addon/cni/charts")
			replaceInFile(t, dir, "cluster-addon/cni/Chart.yaml", "repository: https://helm.cilium.io/", "repository: s3://charts/cilium")
			writeFile(t, dir, "cluster-addon/metrics-server/overwrite.yaml", "values: |\n  a: {{ .Cluster\n")
			removeFile(t, dir, "cluster-addon/csi")
			appendFile(t, dir, "clusteraddon.yaml", "    - name: csi\n      action: apply\n")
		},
		want: []wantProblem{
			{"stack.yaml", `kubernetesVersion "1.35" is not a patch version`},
			{"cluster-class/Chart.yaml", "version is missing"},
			{"cluster-addon/cni/Chart.yaml", `dependency "cilium": repository "s3://charts/cilium" is no chart repository Flux fetches from`},
			{"cluster-addon/metrics-server/overwrite.yaml", "values template does not parse"},
			{"clusteraddon.yaml", `addonStages.AfterClusterUpgrade[1]: component "csi" does not exist`},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyStack(t, tt.base)
			if tt.mutate != nil {
				tt.mutate(t, dir)
			}
			checkProblems(t, Lint(dir, tt.version), tt.want)
		})
	}
}

func TestFormatProblems(t *testing.T) {
	got := FormatProblems("stacks/x/1-36/", []Problem{{File: "stack.yaml", Message: "bad"}, {Message: "worse"}})
	want := "stacks/x/1-36/stack.yaml: bad\nstacks/x/1-36/: worse\n"
	if got != want {
		t.Errorf("FormatProblems = %q, want %q", got, want)
	}
}
