#!/usr/bin/env bash
# Copies the CRD manifests of Flux, Cluster API, CAPD and CAPA, CAPI's webhook manifests, and kwok's stage files, out of the
# module versions pinned in hack/tools/*/go.mod into <bin>/crds and <bin>/kwok-stages.
# No network beyond the Go module proxy: the manifests ship inside the module zips.
set -euo pipefail
bin=${1:?usage: collect-crds.sh BIN_DIR}
tools=$(cd "$(dirname "$0")/tools" && pwd)

moddir() { # moddir <tools-module> <module>: the pinned module's directory in the module cache
  (cd "$tools/$1" && go mod download -json "$2" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
}

rm -rf "$bin/crds" "$bin/kwok-stages" "$bin/webhooks" "$bin/capi-webhooks"
mkdir -p "$bin/crds/flux" "$bin/kwok-stages"
for c in source-controller kustomize-controller helm-controller; do
  d=$(moddir "$c" "github.com/fluxcd/$c")
  cp "$d"/config/crd/bases/*.yaml "$bin/crds/flux/"
done
# Cluster API and its providers: each provider's whole config/crd directory (bases/, the
# kustomization.yaml that adds the cluster.x-k8s.io/<contract> labels CAPI resolves API versions
# with, patches/), which the plane builds with kustomize; tests without CAPI read bases/ only.
crddir() { # crddir <name> <module dir>/config/crd
  mkdir -p "$bin/crds/$1"
  cp -R "$2"/. "$bin/crds/$1/"
}
d=$(moddir crds sigs.k8s.io/cluster-api)
crddir capi-core "$d/core/config/crd"
crddir capi-kubeadm-bootstrap "$d/bootstrap/kubeadm/config/crd"
crddir capi-kubeadm-controlplane "$d/controlplane/kubeadm/config/crd"
# Webhook configurations: CAPI core's for bin/capi-manager; CABPK's, KCP's and CAPD's for
# bin/provider-webhooks (plane Options.WithCAPI), one directory each.
mkdir -p "$bin/webhooks/capi" "$bin/webhooks/kubeadm-bootstrap" "$bin/webhooks/kubeadm-controlplane" "$bin/webhooks/docker"
whdir() { # whdir <name> <module dir>/config/webhook
  cp "$2"/manifests.yaml "$bin/webhooks/$1/"
  printf 'resources:\n  - manifests.yaml\n' > "$bin/webhooks/$1/kustomization.yaml"
}
whdir capi "$d/core/config/webhook"
whdir kubeadm-bootstrap "$d/bootstrap/kubeadm/config/webhook"
whdir kubeadm-controlplane "$d/controlplane/kubeadm/config/webhook"
d=$(moddir capi sigs.k8s.io/cluster-api/test)
crddir capd "$d/infrastructure/docker/config/crd"
whdir docker "$d/infrastructure/docker/config/webhook"
d=$(moddir crds sigs.k8s.io/cluster-api-provider-aws/v2)
crddir capa "$d/config/crd"
d=$(moddir kwok sigs.k8s.io/kwok)
cp "$d"/kustomize/stage/node/fast/node-initialize.yaml "$d"/kustomize/stage/node/heartbeat/node-heartbeat.yaml "$bin/kwok-stages/"
for f in "$d"/kustomize/stage/pod/general/pod-*.yaml; do cp "$f" "$bin/kwok-stages/"; done
chmod -R u+w "$bin/crds" "$bin/kwok-stages" "$bin/webhooks"
echo "CRDs: $(ls "$bin"/crds/flux/*.yaml "$bin"/crds/*/bases/*.yaml | wc -l) files in $bin/crds; kwok stages: $(ls "$bin/kwok-stages" | wc -l)"
