#!/usr/bin/env bash
# Build kube-apiserver, kube-controller-manager, kube-scheduler and kubectl from Go modules.
#
# `go install k8s.io/kubernetes/cmd/...@v` is refused because k8s.io/kubernetes's go.mod
# replaces its staging modules with local paths. So we make a small wrapper module that
# requires k8s.io/kubernetes and replaces every staging module with its published v0.N.P,
# copying the replace list and godebug line from k8s.io/kubernetes's own go.mod.
# Output: $KUBETRAIN_CACHE/k8s/$K8S_VERSION/bin. Idempotent: a complete cache is reused.
source "$(dirname "$0")/lib.sh"

out="$KUBETRAIN_CACHE/k8s/$K8S_VERSION"
bins=(kube-apiserver kube-controller-manager kube-scheduler kubectl)
complete=1
for b in "${bins[@]}"; do
  args=(--version); [ "$b" = kubectl ] && args=(version --client)
  have "$out/bin/$b" "$K8S_VERSION" "${args[@]}" || complete=0
done
if [ "$MODE" = fetch ]; then # the real node's kubelet and kube-proxy (build-node.sh) come from here too
  for b in kubelet kube-proxy; do have "$KUBETRAIN_CACHE/node/bin/$b" "$K8S_VERSION" --version || complete=0; done
fi
if [ $complete = 1 ]; then [ "$MODE" = fetch ] || echo "$out/bin"; exit 0; fi

minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
staging_version="v0.${K8S_VERSION#v1.}"
src="$out/src"
mkdir -p "$src" "$out/bin"

step "download k8s.io/kubernetes@$K8S_VERSION go.mod"
gomod=$(retry go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')

step "write the wrapper module (staging modules at $staging_version)"
{
  echo "module kubetrain.dev/k8s-build"
  echo
  grep -E '^go ' "$gomod"
  grep -E '^godebug' "$gomod" || true
  echo
  echo "require k8s.io/kubernetes $K8S_VERSION"
  echo
  echo "replace ("
  for m in $(sed -n '/^replace (/,/^)/p' "$gomod" | awk '/=> \.\/staging/{print $1}'); do
    if retry go list -m "$m@$staging_version" >/dev/null 2>&1; then
      echo "	$m => $m $staging_version"
    else
      # Unpublished staging module (e.g. sample-cli-plugin): nothing we build imports it,
      # but the module graph must resolve, so point it at an empty local module.
      mkdir -p "$src/stubs/$m" && printf 'module %s\n\ngo 1.21\n' "$m" > "$src/stubs/$m/go.mod"
      echo "	$m => ./stubs/$m"
    fi
  done
  echo ")"
} > "$src/go.mod"

cd "$src"
pkgs=(); for b in "${bins[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$b"); done
if [ "$MODE" = fetch ]; then
  pkgs+=(k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy)
  step "resolve and download the dependencies of ${pkgs[*]##*/}"
  retry go get "${pkgs[@]/%/@$K8S_VERSION}" >/dev/null
  retry go list -deps "${pkgs[@]}" >/dev/null
  step "done"
  exit 0
fi
step "resolve dependencies of the commands"
retry go get "${pkgs[@]/%/@$K8S_VERSION}" >/dev/null

date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$date"
done
# One go build for all of them: their packages compile once, and their links (each mostly one
# core's work) run side by side instead of one after another.
step "build ${bins[*]} $K8S_VERSION"
rm -rf "$out/bin.tmp" && mkdir -p "$out/bin.tmp"
go build -trimpath -ldflags "$ldflags" -o "$out/bin.tmp/" "${pkgs[@]}"
for b in "${bins[@]}"; do mv "$out/bin.tmp/$b" "$out/bin/$b"; done
rmdir "$out/bin.tmp"
step "done"
echo "$out/bin"
