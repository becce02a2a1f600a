package framework

import (
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// ClusterStack is the reference stack's ClusterStack in ns, from the Git repository at url,
// looking for new tags every interval, pinned to versions.
func ClusterStack(ns, url string, interval time.Duration, versions ...string) *csv1.ClusterStack {
	return &csv1.ClusterStack{
		ObjectMeta: metav1.ObjectMeta{Name: StackName, Namespace: ns},
		Spec: csv1.ClusterStackSpec{
			Provider: Provider, Name: Name, KubernetesVersion: KubernetesVersion,
			Source:   csv1.StackSource{URL: url, Path: StackPath},
			Versions: versions,
			Interval: &metav1.Duration{Duration: interval},
		},
	}
}

// Cluster is a CAPI Cluster ns/name whose topology uses ClusterClass class (a release of the
// reference stack), with the pod CIDR podCIDR and the stack's region variable.
func Cluster(ns, name, class, podCIDR string) *clusterv1.Cluster {
	return &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: clusterv1.ClusterSpec{
			ClusterNetwork: clusterv1.ClusterNetwork{
				Pods:     clusterv1.NetworkRanges{CIDRBlocks: []string{podCIDR}},
				Services: clusterv1.NetworkRanges{CIDRBlocks: []string{"10.96.0.0/12"}},
			},
			Topology: clusterv1.Topology{
				ClassRef: clusterv1.ClusterClassRef{Name: class},
				Version:  ClusterVersion,
				Variables: []clusterv1.ClusterVariable{
					{Name: "region", Value: JSON(`"eu-north-1"`)},
				},
			},
		},
	}
}

// JSON is a raw JSON value of a ClusterClass variable.
func JSON(raw string) apiextensionsv1.JSON { return apiextensionsv1.JSON{Raw: []byte(raw)} }
