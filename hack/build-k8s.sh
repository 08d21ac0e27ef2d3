#!/usr/bin/env bash
# Build kube-apiserver, kube-controller-manager, kube-scheduler and kubectl from the Kubernetes
# module graph (k8s_graph in lib.sh: a wrapper module, since `go install k8s.io/kubernetes/cmd/...`
# is refused).
# Output: $KUBETRAIN_CACHE/k8s/$K8S_VERSION/bin. Idempotent: a complete cache is reused.
source "$(dirname "$0")/lib.sh"

out="$KUBETRAIN_CACHE/k8s/$K8S_VERSION"
bins=(kube-apiserver kube-controller-manager kube-scheduler kubectl)
complete=1
for b in "${bins[@]}"; do
  args=(--version); [ "$b" = kubectl ] && args=(version --client)
  have "$out/bin/$b" "$K8S_VERSION" "${args[@]}" && from_graph "$out/bin/$b" || complete=0
done
if [ "$MODE" = fetch ]; then # the real node's kubelet and kube-proxy (build-node.sh) come from here too
  for b in kubelet kube-proxy; do
    have "$KUBETRAIN_CACHE/node/bin/$b" "$K8S_VERSION" --version && from_graph "$KUBETRAIN_CACHE/node/bin/$b" || complete=0
  done
fi
if [ $complete = 1 ]; then [ "$MODE" = fetch ] || echo "$out/bin"; exit 0; fi

k8s_graph
cd "$K8S_GRAPH"
pkgs=(); for b in "${bins[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$b"); done
if [ "$MODE" = fetch ]; then
  pkgs+=(k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy)
  step "download the dependencies of ${pkgs[*]##*/}"
  retry go list -deps "${pkgs[@]}" >/dev/null
  step "done"
  exit 0
fi
# One go build for all of them: their packages compile once, and their links (each mostly one
# core's work) run side by side instead of one after another.
step "build ${bins[*]} $K8S_VERSION"
mkdir -p "$out/bin"
rm -rf "$out/bin.tmp" && mkdir -p "$out/bin.tmp"
go build -trimpath -ldflags "$(k8s_ldflags)" -o "$out/bin.tmp/" "${pkgs[@]}"
for b in "${bins[@]}"; do mv "$out/bin.tmp/$b" "$out/bin/$b" && mark_graph "$out/bin/$b"; done
rmdir "$out/bin.tmp"
step "done"
echo "$out/bin"
