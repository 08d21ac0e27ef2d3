#!/usr/bin/env bash
# Build etcd from a wrapper module around go.etcd.io/etcd/server/v3 (Debian's 3.4 is too old).
# Output: $KUBETRAIN_CACHE/etcd/$ETCD_VERSION/bin/etcd.
source "$(dirname "$0")/lib.sh"

out="$KUBETRAIN_CACHE/etcd/$ETCD_VERSION"
if have "$out/bin/etcd" "${ETCD_VERSION#v}" --version; then [ "$MODE" = fetch ] || echo "$out/bin"; exit 0; fi
mkdir -p "$out/src" "$out/bin"
cd "$out/src"
step "write the etcd wrapper module"
printf 'module kubetrain.dev/etcd-build\n\ngo 1.24\n' > go.mod
step "resolve go.etcd.io/etcd/server/v3@$ETCD_VERSION"
retry go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >/dev/null
if [ "$MODE" = fetch ]; then
  step "download the modules of its packages"
  retry go list -deps go.etcd.io/etcd/server/v3 >/dev/null
  step "done"
  exit 0
fi
step "build etcd $ETCD_VERSION"
go build -trimpath -ldflags "-s -w" -o "$out/bin/etcd.tmp" go.etcd.io/etcd/server/v3
mv "$out/bin/etcd.tmp" "$out/bin/etcd"
step "done"
echo "$out/bin"
