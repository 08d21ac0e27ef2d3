#!/usr/bin/env bash
# kwok (fake nodes and pod lifecycle) and kustomize: plain `go install` at release tags.
# Output: $KUBETRAIN_CACHE/tools/bin. The kwok module's stage sets are kept beside it.
source "$(dirname "$0")/lib.sh"

out="$KUBETRAIN_CACHE/tools"
mkdir -p "$out/bin"
if ! have "$out/bin/kwok" "$KWOK_VERSION" --version; then
  step "go install sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  GOBIN="$out/bin" retry go install "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" >/dev/null
fi
if ! have "$out/bin/kustomize" "${KUSTOMIZE_VERSION}" version; then
  step "go install sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION"
  GOBIN="$out/bin" retry go install "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION" >/dev/null
fi
step "done"
echo "$out/bin"
