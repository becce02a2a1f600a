// Module crds pins the Cluster API and CAPA releases whose CRD manifests the local plane installs.
// Nothing is built from it: hack/collect-crds.sh copies config/crd/bases out of the module zips.
module github.com/clusterstack-io/clusterstack-operator/hack/tools/crds

go 1.26.0

require (
	sigs.k8s.io/cluster-api v1.14.2
	sigs.k8s.io/cluster-api-provider-aws/v2 v2.13.0
)
