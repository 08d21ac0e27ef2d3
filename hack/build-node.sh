#!/usr/bin/env bash
# A real node's parts: kubelet and kube-proxy (from the Kubernetes module graph, as build-k8s.sh's),
# containerd and ctr, CoreDNS, and the pause program; runc and the CNI plugins from Debian.
# Output: $KUBETRAIN_CACHE/node/bin (plus the Debian binaries' directories), one per line.
# Idempotent: what is cached at the right version is reused.
source "$(dirname "$0")/lib.sh"
here="$(cd "$(dirname "$0")" && pwd)"

CONTAINERD_VERSION="${CONTAINERD_VERSION:-v2.2.1}"
NODE_APT=(runc containernetworking-plugins iptables conntrack mmdebstrap)

out="$KUBETRAIN_CACHE/node"
mkdir -p "$out/bin"

# Debian's packages, in fetch mode too: a download that overlaps the Go builds.
"$here/apt-install.sh" build-node "${NODE_APT[@]}"

# kubelet and kube-proxy, from the Kubernetes module graph (build-k8s.sh's fetch mode downloads
# their modules too). One go build for both: their links run side by side.
node_k8s=()
for b in kubelet kube-proxy; do
  have "$out/bin/$b" "$K8S_VERSION" --version && from_graph "$out/bin/$b" || node_k8s+=("$b")
done
if [ "$MODE" = build ]; then
  k8s_bin="$("$here/build-k8s.sh")"
  if [ ${#node_k8s[@]} -gt 0 ]; then
    k8s_graph
    pkgs=("${node_k8s[@]/#/k8s.io/kubernetes/cmd/}")
    step "build ${node_k8s[*]} $K8S_VERSION"
    rm -rf "$out/bin.tmp" && mkdir -p "$out/bin.tmp"
    (cd "$K8S_GRAPH" && go build -trimpath -ldflags "$(k8s_ldflags)" -o "$out/bin.tmp/" "${pkgs[@]}")
    for b in "${node_k8s[@]}"; do mv "$out/bin.tmp/$b" "$out/bin/$b" && mark_graph "$out/bin/$b"; done
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
# Azure, Google, Datadog tracing, etcd...) were most of its build. The release's code, from the
# Kubernetes module graph (lib.sh; its kubernetes plugin on the control plane's client-go), with
# coredns.go's main, core/plugin's list of imports cut down to those four.
plugins=(bind errors ready kubernetes)
coredns_build="$COREDNS_VERSION+${plugins[*]}"; coredns_build=${coredns_build// /,}
stamp="$out/bin/coredns.build"
if ! have "$out/bin/coredns" "${COREDNS_VERSION#v}" -version || [ "$(cat "$stamp" 2>/dev/null)" != "$coredns_build" ] ||
  ! from_graph "$out/bin/coredns"; then
  k8s_graph
  src="$K8S_GRAPH/coredns"
  mkdir -p "$src"
  {
    printf '// CoreDNS %s with the plugins %s only (hack/build-node.sh).\npackage main\n\nimport (\n' \
      "$COREDNS_VERSION" "${plugins[*]}"
    printf '\t_ "github.com/coredns/caddy/onevent"\n\t_ "github.com/coredns/coredns/core/dnsserver"\n'
    for p in "${plugins[@]}"; do printf '\t_ "github.com/coredns/coredns/plugin/%s"\n' "$p"; done
    printf '\n\t"github.com/coredns/coredns/coremain"\n)\n\nfunc main() { coremain.Run() }\n'
  } >"$src/main.go"
  if [ "$MODE" = fetch ]; then
    step "download the dependencies of coredns $coredns_build"
    (cd "$src" && retry go list -deps . >/dev/null)
  else
    step "build coredns $coredns_build"
    (cd "$src" && retry go build -trimpath -ldflags "-s -w" -o "$out/bin/coredns.tmp" . >/dev/null)
    mv "$out/bin/coredns.tmp" "$out/bin/coredns"
    echo "$coredns_build" >"$stamp"
    mark_graph "$out/bin/coredns"
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
