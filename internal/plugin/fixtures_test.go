package plugin

import (
	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// Literal objects for the table tests, as the operator and Flux write them.

const ns = "team-a"

func cond(t string, s metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg}
}

// ready are the conditions of a healthy ClusterStack, release or ClusterAddon.
func ready() []metav1.Condition {
	return []metav1.Condition{
		cond(csv1.AvailableCondition, "True", csv1.ReasonAsExpected, "available"),
		cond(csv1.ProgressingCondition, "False", csv1.ReasonAsExpected, "up to date"),
		cond(csv1.DegradedCondition, "False", csv1.ReasonAsExpected, "fine"),
		cond(csv1.ReadyCondition, "True", csv1.ReasonAsExpected, "ready"),
	}
}

// degraded are the conditions of a Degraded object with message msg.
func degraded(msg string) []metav1.Condition {
	return []metav1.Condition{
		cond(csv1.AvailableCondition, "False", csv1.ReasonFluxNotReady, msg),
		cond(csv1.ProgressingCondition, "False", csv1.ReasonAsExpected, "not moving"),
		cond(csv1.DegradedCondition, "True", csv1.ReasonFluxNotReady, msg),
		cond(csv1.ReadyCondition, "False", csv1.ReasonFluxNotReady, msg),
	}
}

// progressing are the conditions of a ClusterAddon on its way to a release.
func progressing(msg string) []metav1.Condition {
	return []metav1.Condition{
		cond(csv1.AvailableCondition, "False", csv1.ReasonReconciling, msg),
		cond(csv1.ProgressingCondition, "True", csv1.ReasonReconciling, msg),
		cond(csv1.DegradedCondition, "False", csv1.ReasonAsExpected, "fine"),
		cond(csv1.ReadyCondition, "False", csv1.ReasonReconciling, msg),
	}
}

func with(conds []metav1.Condition, extra ...metav1.Condition) []metav1.Condition {
	out := append([]metav1.Condition{}, conds...)
	for _, e := range extra {
		replaced := false
		for i := range out {
			if out[i].Type == e.Type {
				out[i], replaced = e, true
			}
		}
		if !replaced {
			out = append(out, e)
		}
	}
	return out
}

func clusterStack(name string, mutate ...func(*csv1.ClusterStack)) csv1.ClusterStack {
	cs := csv1.ClusterStack{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       csv1.ClusterStackSpec{Provider: "aws", Name: "base", KubernetesVersion: "1.36"},
		Status: csv1.ClusterStackStatus{
			Conditions: ready(), Versions: csv1.StackVersions{Available: "v1"}, ClustersSummary: "1/1",
			Releases: []csv1.ReleaseSummary{{Name: "aws-base-1-36-v1", Version: "v1", Reasons: []string{"Pinned", "InUse"}, Available: true}},
		},
	}
	for _, m := range mutate {
		m(&cs)
	}
	return cs
}

func release(name, version string, conds []metav1.Condition) csv1.ClusterStackRelease {
	return csv1.ClusterStackRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       csv1.ClusterStackReleaseSpec{ClusterStack: "aws-base-1-36", Provider: "aws", StackName: "base", KubernetesVersion: "1.36", Version: version},
		Status:     csv1.ClusterStackReleaseStatus{Conditions: conds, KubernetesVersion: "v1.36.3", Revision: name + "@sha1:abc"},
	}
}

func cluster(name, class string, mutate ...func(*clusterv1.Cluster)) clusterv1.Cluster {
	c := clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: clusterv1.ClusterSpec{Topology: clusterv1.Topology{
			ClassRef: clusterv1.ClusterClassRef{Name: class}, Version: "v1.36.3",
		}},
	}
	for _, m := range mutate {
		m(&c)
	}
	return c
}

func component(name string, kind csv1.ComponentKind, release, fluxObject string, ready bool) csv1.AddonComponentStatus {
	return csv1.AddonComponentStatus{Name: name, Kind: kind, Release: release, Version: "1.0.0", FluxObject: fluxObject, Ready: ready}
}

// addon is a healthy ClusterAddon of cluster name at release rel with components cni (Helm)
// and cluster-info (Kustomize).
func addon(name, rel string, mutate ...func(*csv1.ClusterAddon)) csv1.ClusterAddon {
	a := csv1.ClusterAddon{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       csv1.ClusterAddonSpec{ClusterName: name},
		Status: csv1.ClusterAddonStatus{
			Conditions: with(ready(),
				cond(csv1.ReleaseReadyCondition, "True", csv1.ReasonAsExpected, "release ready"),
				cond(csv1.WorkloadClusterReadyCondition, "True", csv1.ReasonAsExpected, "reachable"),
				cond(csv1.ValuesRenderedCondition, "True", csv1.ReasonAsExpected, "rendered"),
			),
			ClusterStack: "aws-base-1-36", DesiredRelease: rel, LastAppliedRelease: rel, Progress: "2/2",
			Components: []csv1.AddonComponentStatus{
				component("cni", csv1.ComponentKindHelm, rel, "HelmRelease/"+name+"-cni", true),
				component("cluster-info", csv1.ComponentKindKustomize, rel, "Kustomization/"+name+"-cluster-info", true),
			},
		},
	}
	for _, m := range mutate {
		m(&a)
	}
	return a
}

func helmRelease(name string, conds []metav1.Condition, mutate ...func(*helmv2.HelmRelease)) helmv2.HelmRelease {
	hr := helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Status: helmv2.HelmReleaseStatus{Conditions: conds}}
	for _, m := range mutate {
		m(&hr)
	}
	return hr
}

func kustomization(name string, conds []metav1.Condition) kustomizev1.Kustomization {
	return kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Status: kustomizev1.KustomizationStatus{Conditions: conds, LastAppliedRevision: "sha1:abc"}}
}

var (
	fluxReady   = []metav1.Condition{cond("Ready", "True", "InstallSucceeded", "Helm install succeeded for release kube-system/cni.v1 with chart cni@1.0.0")}
	ksReady     = []metav1.Condition{cond("Ready", "True", "ReconciliationSucceeded", "Applied revision: sha1:abc")}
	installFail = "Helm install failed for release kube-system/cni with chart cni@1.0.1-broken: DaemonSet.apps \"cni\" is invalid: spec.template.spec.containers[0].image: Required value"
	fluxFailed  = []metav1.Condition{cond("Ready", "False", "InstallFailed", installFail)}
	fluxRetry   = []metav1.Condition{cond("Ready", "Unknown", "Progressing", "Running 'install' action with timeout of 30s")}
)

// healthyFlux is the Flux objects of the healthy Cluster "one".
func healthyFlux() ([]helmv2.HelmRelease, []kustomizev1.Kustomization) {
	return []helmv2.HelmRelease{helmRelease("one-cni", fluxReady)}, []kustomizev1.Kustomization{kustomization("one-cluster-info", ksReady)}
}
