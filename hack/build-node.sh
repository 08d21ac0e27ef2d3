#!/usr/bin/env bash
# A real node's parts: kubelet and kube-proxy (from the same wrapper module as build-k8s.sh),
# containerd and ctr, CoreDNS, and the pause program; runc and the CNI plugins from Debian.
# Output: $KUBETRAIN_CACHE/node/bin (plus the Debian binaries' directories), one per line.
# Idempotent: what is cached at the right version is reused.
source "$(dirname "$0")/lib.sh"
here="$(cd "$(dirname "$0")" && pwd)"

CONTAINERD_VERSION="${CONTAINERD_VERSION:-v2.2.1}"
COREDNS_VERSION="${COREDNS_VERSION:-v1.12.4}"
NODE_APT=(runc containernetworking-plugins iptables conntrack mmdebstrap)

out="$KUBETRAIN_CACHE/node"
mkdir -p "$out/bin"

# Debian's packages, in fetch mode too: a download that overlaps the Go builds.
"$here/apt-install.sh" build-node "${NODE_APT[@]}"

# kubelet and kube-proxy: build-k8s.sh leaves its wrapper module in the cache (its fetch mode
# downloads their modules too). One go build for both: their links run side by side.
node_k8s=()
for b in kubelet kube-proxy; do have "$out/bin/$b" "$K8S_VERSION" --version || node_k8s+=("$b"); done
if [ "$MODE" = build ]; then
  k8s_bin="$("$here/build-k8s.sh")"
  src="$KUBETRAIN_CACHE/k8s/$K8S_VERSION/src"
  if [ ${#node_k8s[@]} -gt 0 ]; then
    minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
    ldflags="-s -w"
    for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      ldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
    done
    pkgs=("${node_k8s[@]/#/k8s.io/kubernetes/cmd/}")
    step "build ${node_k8s[*]} $K8S_VERSION"
    rm -rf "$out/bin.tmp" && mkdir -p "$out/bin.tmp"
    (cd "$src" && retry go get "${pkgs[@]/%/@$K8S_VERSION}" >/dev/null &&
      go build -trimpath -ldflags "$ldflags" -o "$out/bin.tmp/" "${pkgs[@]}")
    for b in "${node_k8s[@]}"; do mv "$out/bin.tmp/$b" "$out/bin/$b"; done
    rmdir "$out/bin.tmp"
  fi
fi

# -n (fetch mode): print the commands instead of running them, having downloaded what they need.
n=(); [ "$MODE" = fetch ] && n=(-n)
if ! have "$out/bin/containerd" "$CONTAINERD_VERSION" --version || [ ! -x "$out/bin/ctr" ] ||
  [ ! -x "$out/bin/containerd-shim-runc-v2" ]; then
  step "go install ${n[*]} containerd, ctr and containerd-shim-runc-v2 $CONTAINERD_VERSION"
  # One go install for the three (one version of one module): one module graph, links side by side.
  cmds=(containerd ctr containerd-shim-runc-v2)
  cmds=("${cmds[@]/#/github.com/containerd/containerd/v2/cmd/}")
  GOBIN="$out/bin" retry go install "${n[@]}" -tags no_btrfs \
    -ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=$CONTAINERD_VERSION" \
    "${cmds[@]/%/@$CONTAINERD_VERSION}" >/dev/null
fi

# CoreDNS with the plugins a node's Corefile uses (devcluster/services.py: bind, errors, ready,
# kubernetes), not all of them: the release's main imports every plugin, and the cloud ones (AWS,
# Azure, Google, Datadog tracing, etcd...) were most of its build. The same release's code, from a
# wrapper module requiring it (its module graph, so the same versions); main is coredns.go's with
# core/plugin's list of imports cut down to those four.
plugins=(bind errors ready kubernetes)
coredns_build="$COREDNS_VERSION+${plugins[*]}"; coredns_build=${coredns_build// /,}
# A CoreDNS built whole before (no coredns.build: every plugin) serves as well and is kept.
stamp="$out/bin/coredns.build"
if ! have "$out/bin/coredns" "${COREDNS_VERSION#v}" -version || { [ -e "$stamp" ] && [ "$(cat "$stamp")" != "$coredns_build" ]; }; then
  src="$out/src/coredns"
  mkdir -p "$src"
  step "resolve github.com/coredns/coredns@$COREDNS_VERSION (plugins ${plugins[*]})"
  printf 'module kubetrain.dev/coredns-build\n\ngo 1.24\n' >"$src/go.mod"
  {
    printf '// CoreDNS %s with the plugins %s only (hack/build-node.sh).\npackage main\n\nimport (\n' \
      "$COREDNS_VERSION" "${plugins[*]}"
    printf '\t_ "github.com/coredns/caddy/onevent"\n\t_ "github.com/coredns/coredns/core/dnsserver"\n'
    for p in "${plugins[@]}"; do printf '\t_ "github.com/coredns/coredns/plugin/%s"\n' "$p"; done
    printf '\n\t"github.com/coredns/coredns/coremain"\n)\n\nfunc main() { coremain.Run() }\n'
  } >"$src/main.go"
  (cd "$src" && retry go get "github.com/coredns/coredns@$COREDNS_VERSION" >/dev/null)
  if [ "$MODE" = fetch ]; then
    (cd "$src" && retry go list -deps . >/dev/null)
  else
    step "build coredns $coredns_build"
    (cd "$src" && retry go build -trimpath -ldflags "-s -w" -o "$out/bin/coredns.tmp" . >/dev/null)
    mv "$out/bin/coredns.tmp" "$out/bin/coredns"
    echo "$coredns_build" >"$stamp"
  fi
fi
[ "$MODE" = build ] || { step "done"; exit 0; }

# The pause container: sleeps until SIGTERM or SIGINT. Static (CGO_ENABLED=0), so it runs
# in an image that holds nothing else.
if [ ! -x "$out/bin/pause" ] || [ "$here/pause.go" -nt "$out/bin/pause" ]; then
  step "build pause"
  go build -trimpath -ldflags "-s -w" -o "$out/bin/pause" "$here/pause.go"
fi

step "done"
echo "$out/bin"
echo "$k8s_bin"
echo "/usr/sbin"
echo "/usr/lib/cni"
