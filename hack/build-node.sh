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

missing=()
for p in "${NODE_APT[@]}"; do
  [ "$(dpkg-query -W -f '${db:Status-Status}' "$p" 2>/dev/null)" = installed ] || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then echo "build-node: as root, apt-get install ${missing[*]}" >&2; exit 1; fi
  step "apt-get install ${missing[*]}"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# kubelet and kube-proxy: build-k8s.sh leaves its wrapper module in the cache.
k8s_bin="$("$here/build-k8s.sh")"
src="$KUBETRAIN_CACHE/k8s/$K8S_VERSION/src"
for b in kubelet kube-proxy; do
  if ! have "$out/bin/$b" "$K8S_VERSION" --version; then
    minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
    ldflags="-s -w"
    for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      ldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
    done
    step "build $b $K8S_VERSION"
    (cd "$src" && retry go get "k8s.io/kubernetes/cmd/$b@$K8S_VERSION" >/dev/null &&
      go build -trimpath -ldflags "$ldflags" -o "$out/bin/$b.tmp" "k8s.io/kubernetes/cmd/$b")
    mv "$out/bin/$b.tmp" "$out/bin/$b"
  fi
done

if ! have "$out/bin/containerd" "$CONTAINERD_VERSION" --version || [ ! -x "$out/bin/ctr" ] ||
  [ ! -x "$out/bin/containerd-shim-runc-v2" ]; then
  step "go install containerd, ctr and containerd-shim-runc-v2 $CONTAINERD_VERSION"
  for c in containerd ctr containerd-shim-runc-v2; do
    GOBIN="$out/bin" retry go install -tags no_btrfs \
      -ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=$CONTAINERD_VERSION" \
      "github.com/containerd/containerd/v2/cmd/$c@$CONTAINERD_VERSION" >/dev/null
  done
fi

if ! have "$out/bin/coredns" "${COREDNS_VERSION#v}" -version; then
  step "go install github.com/coredns/coredns@$COREDNS_VERSION"
  GOBIN="$out/bin" retry go install -ldflags "-s -w" "github.com/coredns/coredns@$COREDNS_VERSION" >/dev/null
fi

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
