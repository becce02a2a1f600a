package stack

import "sort"

// Value templates (overwrite.yaml, cluster-addon-values.yaml) are rendered by internal/render,
// the same renderer the operator uses, so lint and the operator agree on functions, data and
// errors.

// ClusterClassVariables are the substitution variables the operator provides to a kustomize
// cluster-class: the ClusterClass name (the release tag), the Helm-style release name
// (tag without version), the stack version and the Kubernetes version.
var ClusterClassVariables = []string{
	"cluster_class_name",
	"release_name",
	"release_version",
	"kubernetes_version",
}

func sortedKeys[M ~map[string]V, V any](m M) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
