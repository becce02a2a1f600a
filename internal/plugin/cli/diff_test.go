package cli

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/scheme"
	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
	"github.com/clusterstack-io/clusterstack-operator/internal/stackcli"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/")

// golden compares got with testdata/<name>, or writes it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	file := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run the test with -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (run with -update after checking):\n--- got\n%s\n--- want\n%s", file, got, want)
	}
}

const stackPath = "aws/base/1-36"

// withCNIRBAC bumps the reference stack's cni chart, gives it a ClusterRole, and has its values
// template set a larger MTU.
func withCNIRBAC(t *testing.T, sd string) {
	edit(t, filepath.Join(sd, "cluster-addon/cni/Chart.yaml"), "version: 1.0.0", "version: 1.1.0")
	edit(t, filepath.Join(sd, "cluster-addon/cni/overwrite.yaml"), "  apiServer:\n", "  mtu: 9001\n  apiServer:\n")
	role := "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {{ .Release.Name }}-nodes\nrules:\n" +
		"  - apiGroups: [\"\"]\n    resources: [nodes]\n    verbs: [get, list, watch]\n"
	if err := os.WriteFile(filepath.Join(sd, "cluster-addon/cni/templates/clusterrole.yaml"), []byte(role), 0o644); err != nil {
		t.Fatal(err)
	}
}

func edit(t *testing.T, file, old, replacement string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s has no %q", file, old)
	}
	if err := os.WriteFile(file, []byte(strings.Replace(string(b), old, replacement, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// stackCheckout is a Git checkout of the stacks/ tree with the release tags aws-base-1-36-v1
// (the reference stack) and aws-base-1-36-v2 (withCNIRBAC), as a release step makes them.
func stackCheckout(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "stacks")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "..", "..", "stacks"))); err != nil {
		t.Fatal(err)
	}
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	sd := filepath.Join(dir, stackPath)
	for _, v := range []string{"v1", "v2"} {
		if err := stack.SetChartVersion(sd, v); err != nil {
			t.Fatal(err)
		}
		if v == "v2" {
			withCNIRBAC(t, sd)
		}
		if err := wt.AddGlob("."); err != nil {
			t.Fatal(err)
		}
		sig := &object.Signature{Name: "author", Email: "author@example.com", When: time.Unix(1_800_000_000, 0)}
		h, err := wt.Commit("release "+v, &git.CommitOptions{Author: sig})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := repo.CreateTag("aws-base-1-36-"+v, h, nil); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

var awsClusterGVK = schema.GroupVersionKind{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta2", Kind: "AWSCluster"}

// fleet is a management cluster's objects: a ClusterStack with a canary wave, its release v1,
// and two Clusters on v1 (alpha in the canary wave, beta in the remaining one), each with its
// ClusterAddon and AWSCluster.
func fleet(t *testing.T) client.Client {
	t.Helper()
	const ns = "team-a"
	objs := []client.Object{
		&csv1.ClusterStack{ObjectMeta: metav1.ObjectMeta{Name: "aws-base-1-36", Namespace: ns}, Spec: csv1.ClusterStackSpec{
			Provider: "aws", Name: "base", KubernetesVersion: "1.36",
			Source:  csv1.StackSource{URL: "https://git.example.com/stacks", Path: stackPath},
			Updates: &csv1.UpdatePolicy{Waves: []csv1.RolloutWave{{Name: "canary", Selector: metav1.LabelSelector{MatchLabels: map[string]string{"rollout": "canary"}}}}},
		}},
		&csv1.ClusterStackRelease{ObjectMeta: metav1.ObjectMeta{Name: "aws-base-1-36-v1", Namespace: ns}, Spec: csv1.ClusterStackReleaseSpec{
			ClusterStack: "aws-base-1-36", Provider: "aws", StackName: "base", KubernetesVersion: "1.36", Version: "v1",
			Source: csv1.StackSource{URL: "https://git.example.com/stacks", Path: stackPath},
		}, Status: csv1.ClusterStackReleaseStatus{KubernetesVersion: "v1.36.3"}},
	}
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{awsClusterGVK.GroupVersion()})
	mapper.Add(awsClusterGVK, meta.RESTScopeNamespace)
	for _, c := range []struct{ name, cidr, region, wave string }{{"alpha", "10.41.0.0/16", "eu-north-1", "canary"}, {"beta", "10.42.0.0/16", "eu-west-1", ""}} {
		cl := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: c.name, Namespace: ns}, Spec: clusterv1.ClusterSpec{
			ClusterNetwork:       clusterv1.ClusterNetwork{Pods: clusterv1.NetworkRanges{CIDRBlocks: []string{c.cidr}}, Services: clusterv1.NetworkRanges{CIDRBlocks: []string{"10.96.0.0/12"}}},
			ControlPlaneEndpoint: clusterv1.APIEndpoint{Host: c.name + ".example.com", Port: 6443},
			InfrastructureRef:    clusterv1.ContractVersionedObjectReference{APIGroup: awsClusterGVK.Group, Kind: awsClusterGVK.Kind, Name: c.name},
			Topology:             clusterv1.Topology{ClassRef: clusterv1.ClusterClassRef{Name: "aws-base-1-36-v1"}, Version: "v1.36.3"},
		}}
		if c.wave != "" {
			cl.Labels = map[string]string{"rollout": c.wave}
		}
		infra := &unstructured.Unstructured{}
		infra.SetGroupVersionKind(awsClusterGVK)
		infra.SetNamespace(ns)
		infra.SetName(c.name)
		if err := unstructured.SetNestedField(infra.Object, c.region, "spec", "region"); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, cl, infra,
			&csv1.ClusterAddon{ObjectMeta: metav1.ObjectMeta{Name: c.name, Namespace: ns}, Spec: csv1.ClusterAddonSpec{ClusterName: c.name},
				Status: csv1.ClusterAddonStatus{DesiredRelease: "aws-base-1-36-v1", LastAppliedRelease: "aws-base-1-36-v1"}})
	}
	return fake.NewClientBuilder().WithScheme(scheme.New()).WithRESTMapper(mapper).WithObjects(objs...).WithStatusSubresource(&csv1.ClusterAddon{}, &csv1.ClusterStackRelease{}).Build()
}

// runDiffWith runs the diff of Cluster (or wave) name in team-a against c and returns stdout,
// stderr and the exit code, as the command prints them.
func runDiffWith(t *testing.T, c client.Client, name string, do diffOptions, output string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	o := &options{streams: genericiooptions.IOStreams{Out: &out, ErrOut: &errOut}, output: output, getenv: func(string) string { return "" }}
	diffs, err := gatherDiffs(context.Background(), c, nil, "team-a", name, &do)
	if err != nil {
		errOut.WriteString("error: " + err.Error() + "\n")
		return out.String(), errOut.String(), stackcli.DiffError
	}
	code, err := o.printDiffs(diffs, &do)
	if err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

func TestDiffCommand(t *testing.T) {
	checkout := stackCheckout(t)
	c := fleet(t)
	tests := []struct {
		name   string
		arg    string
		do     diffOptions
		output string
		code   int
		golden string
		stderr string
	}{
		{name: "a Cluster to the next release, from a checkout: the chart version, a value, the ClusterRole first", arg: "alpha",
			do: diffOptions{to: "aws-base-1-36-v2", fromDir: checkout}, code: stackcli.DiffDifferent, golden: "diff-alpha-v2.txt"},
		{name: "the same with --to a stack version", arg: "alpha", do: diffOptions{to: "v2", fromDir: checkout}, code: stackcli.DiffDifferent, golden: "diff-alpha-v2.txt"},
		{name: "a wave: its Clusters only", arg: "aws-base-1-36", do: diffOptions{wave: "canary", to: "v2", fromDir: checkout}, code: stackcli.DiffDifferent, golden: "diff-alpha-v2.txt"},
		{name: "the wave of the Clusters no wave selects", arg: "aws-base-1-36", do: diffOptions{wave: "remaining", to: "v2", fromDir: checkout, markdown: true},
			code: stackcli.DiffDifferent, golden: "diff-remaining-v2.md"},
		{name: "the Cluster's current release: no differences, exit code 0", arg: "alpha", do: diffOptions{to: "v1", fromDir: checkout}, code: stackcli.DiffSame, golden: "diff-alpha-v1.txt"},
		{name: "a release the ClusterStack does not deliver, without a checkout", arg: "alpha", do: diffOptions{to: "v2"}, code: stackcli.DiffError,
			stderr: "error: ClusterStackRelease team-a/aws-base-1-36-v2 not found: the ClusterStack does not deliver it (yet); diff from a checkout of the stack repository with --from-dir\n"},
		{name: "a release the checkout has no tag of", arg: "alpha", do: diffOptions{to: "v3", fromDir: checkout}, code: stackcli.DiffError,
			stderr: "error: release aws-base-1-36-v3 from the checkout " + checkout + ": revision \"aws-base-1-36-v3\": reference not found\n"},
		{name: "a wave the stack does not have", arg: "aws-base-1-36", do: diffOptions{wave: "prod", to: "v2", fromDir: checkout}, code: stackcli.DiffError,
			stderr: "error: ClusterStack aws-base-1-36 has no wave \"prod\" (its waves: canary, remaining)\n"},
		{name: "no --to", arg: "alpha", do: diffOptions{fromDir: checkout}, code: stackcli.DiffError,
			stderr: "error: give the release to move to with --to (e.g. --to aws-base-1-36-v2 or --to v2)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := runDiffWith(t, c, tt.arg, tt.do, tt.output)
			if code != tt.code {
				t.Errorf("exit code %d, want %d; stderr: %s", code, tt.code, errOut)
			}
			if errOut != tt.stderr {
				t.Errorf("stderr %q, want %q", errOut, tt.stderr)
			}
			if tt.golden != "" {
				golden(t, tt.golden, out)
			} else if out != "" {
				t.Errorf("stdout %q, want none", out)
			}
		})
	}
	t.Run("-o json: the diff as data", func(t *testing.T) {
		out, _, code := runDiffWith(t, c, "alpha", diffOptions{to: "v2", fromDir: checkout}, "json")
		if code != stackcli.DiffDifferent || !strings.Contains(out, `"kind": "ClusterRole"`) || !strings.Contains(out, `"clusterScoped": true`) {
			t.Errorf("exit code %d:\n%s", code, out)
		}
	})
}

func TestDiffFlags(t *testing.T) {
	out, errOut, code := execute(t, "diff")
	if code != 1 || out != "" || errOut != "error: accepts 1 arg(s), received 0\n" {
		t.Errorf("no argument: exit code %d, stdout %q, stderr %q", code, out, errOut)
	}
	out, errOut, code = execute(t, "diff", "alpha", "--to", "v2", "--server", "https://127.0.0.1:1", "--request-timeout", "2s")
	if code != stackcli.DiffError || out != "" || !strings.HasPrefix(errOut, "error: ") {
		t.Errorf("an API server that cannot be reached: exit code %d, stdout %q, stderr %q", code, out, errOut)
	}
}
