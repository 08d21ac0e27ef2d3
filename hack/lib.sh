# Shared helpers for hack/ scripts. Source it; do not run it.
# Every build is cached by version under $KUBETRAIN_CACHE (default ~/.cache/kubetrain).

set -euo pipefail

KUBETRAIN_CACHE="${KUBETRAIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubetrain}"
K8S_VERSION="${K8S_VERSION:-v1.36.3}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.8}"     # the etcd that K8S_VERSION's go.mod requires
KWOK_VERSION="${KWOK_VERSION:-v0.8.0}"
KUSTOMIZE_VERSION="${KUSTOMIZE_VERSION:-v5.8.2}"
export CGO_ENABLED=0 GOFLAGS="${GOFLAGS:--mod=mod}" GOTOOLCHAIN=local

STEP="start"
step() { STEP="$*"; printf '==> %s\n' "$*" >&2; }
# Any failure names the step it happened in.
trap 'rc=$?; [ $rc -eq 0 ] || printf "FAILED (exit %s) in step: %s\n" "$rc" "$STEP" >&2' EXIT

# retry CMD...: module downloads fail transiently (proxy resets, timeouts); other errors do not.
retry() {
  local attempt=1 max=5 delay=5 out
  while true; do
    if out=$("$@" 2>&1); then printf '%s' "$out"; return 0; fi
    if [ $attempt -ge $max ] || ! grep -qiE 'timeout|timed out|connection reset|EOF|TLS handshake|50[234]|temporary|i/o timeout|no such host' <<<"$out"; then
      printf '%s\n' "$out" >&2
      return 1
    fi
    printf 'transient failure (attempt %s/%s), retrying in %ss\n' "$attempt" "$max" "$delay" >&2
    sleep $delay; attempt=$((attempt + 1)); delay=$((delay * 2))
  done
}

# have BIN VERSION_SUBSTRING ARGS...: the cached binary exists and reports the version.
# (Output is captured first: `grep -q` in a pipeline would SIGPIPE the binary under pipefail.)
have() {
  local bin=$1 want=$2 out; shift 2
  [ -x "$bin" ] || return 1
  out=$("$bin" "$@" 2>&1) || return 1
  [[ "$out" == *"$want"* ]]
}
