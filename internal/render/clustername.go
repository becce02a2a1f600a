package render

import "strings"

// ClusterNamePlaceholder may appear in a stack component's namespace (stack.yaml's
// `namespaces`): it is replaced by the Cluster's name when the operator generates the
// component's Flux objects, so that every Cluster gets a namespace (and, for Helm, a release
// name) of its own. It is meant for workload clusters that share one API server (virtual
// clusters, test setups), where two Clusters' addons would otherwise install into the same
// namespace as the same Helm release. It is spelled like the `${cluster_name}` substitution
// variable of kustomize components (BaseVariables).
const ClusterNamePlaceholder = "${cluster_name}"

// ExpandClusterName returns s with every ClusterNamePlaceholder replaced by cluster.
func ExpandClusterName(s, cluster string) string {
	return strings.ReplaceAll(s, ClusterNamePlaceholder, cluster)
}

// HasClusterName reports whether s contains ClusterNamePlaceholder.
func HasClusterName(s string) bool { return strings.Contains(s, ClusterNamePlaceholder) }
