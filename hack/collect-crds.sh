#!/usr/bin/env bash
# Copies the CRD manifests of Flux, Cluster API and CAPA, and kwok's stage files, out of the
# module versions pinned in hack/tools/*/go.mod into <bin>/crds and <bin>/kwok-stages.
# No network beyond the Go module proxy: the manifests ship inside the module zips.
set -euo pipefail
bin=${1:?usage: collect-crds.sh BIN_DIR}
tools=$(cd "$(dirname "$0")/tools" && pwd)

moddir() { # moddir <tools-module> <module>: the pinned module's directory in the module cache
  (cd "$tools/$1" && go mod download -json "$2" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
}

rm -rf "$bin/crds" "$bin/kwok-stages" "$bin/capi-webhooks"
mkdir -p "$bin/crds/flux" "$bin/crds/capi" "$bin/crds/capa" "$bin/kwok-stages"
for c in source-controller kustomize-controller helm-controller; do
  d=$(moddir "$c" "github.com/fluxcd/$c")
  cp "$d"/config/crd/bases/*.yaml "$bin/crds/flux/"
done
d=$(moddir crds sigs.k8s.io/cluster-api)
for sub in core bootstrap/kubeadm controlplane/kubeadm; do
  cp "$d/$sub"/config/crd/bases/*.yaml "$bin/crds/capi/"
done
# CAPI core's webhook configurations, for the plane's CAPI core manager (Options.WithCAPI).
mkdir -p "$bin/capi-webhooks"
cp "$d"/core/config/webhook/manifests.yaml "$bin/capi-webhooks/"
printf 'resources:\n  - manifests.yaml\n' > "$bin/capi-webhooks/kustomization.yaml"
d=$(moddir crds sigs.k8s.io/cluster-api-provider-aws/v2)
cp "$d"/config/crd/bases/*.yaml "$bin/crds/capa/"
d=$(moddir kwok sigs.k8s.io/kwok)
cp "$d"/kustomize/stage/node/fast/node-initialize.yaml "$d"/kustomize/stage/node/heartbeat/node-heartbeat.yaml "$bin/kwok-stages/"
for f in "$d"/kustomize/stage/pod/general/pod-*.yaml; do cp "$f" "$bin/kwok-stages/"; done
chmod -R u+w "$bin/crds" "$bin/kwok-stages" "$bin/capi-webhooks"
echo "CRDs: $(ls "$bin"/crds/*/*.yaml | wc -l) files in $bin/crds; kwok stages: $(ls "$bin/kwok-stages" | wc -l)"
