# Shared helpers for hack/ scripts. Source it; do not run it.
# Every build is cached by version under $KUBETRAIN_CACHE (default ~/.cache/kubetrain).

set -euo pipefail

KUBETRAIN_CACHE="${KUBETRAIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubetrain}"
K8S_VERSION="${K8S_VERSION:-v1.36.3}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.8}"     # the etcd that K8S_VERSION's go.mod requires
KWOK_VERSION="${KWOK_VERSION:-v0.8.0}"
KUSTOMIZE_VERSION="${KUSTOMIZE_VERSION:-v5.8.2}"
# Every build gets the same flags, so the standard library and whatever else two builds share at
# one version compile once: -trimpath; and no debug information, which every link strips anyway
# (-ldflags=-s): the compiler then writes no DWARF (-dwarf=false: about 10 % less CPU, etcd's cold
# compile 112 s against 125 s of user and system time, the binary byte for byte as large). A
# build's own -ldflags (the version's -X) replaces this one and says -s -w itself.
export CGO_ENABLED=0 GOTOOLCHAIN=local
export GOFLAGS="${GOFLAGS:--mod=mod -trimpath -gcflags=all=-dwarf=false -ldflags=-s}"

# MODE: `build` (the default) builds what is missing; `fetch` (first argument `fetch`) only resolves
# and downloads what that build will need, printing nothing on stdout, so that
# build-control-plane.sh can download every component's modules at once while another compiles.
MODE="${1:-build}"
case "$MODE" in build | fetch) ;; *) echo "usage: $0 [fetch]" >&2; exit 2 ;; esac
# Step lines name their component ("==> [etcd] build etcd v3.6.8"); when a step ends, its seconds
# are printed and, under build-control-plane.sh, added to $KUBETRAIN_BUILD_TIMES for its table.
COMPONENT="$(basename "$0" .sh)"; COMPONENT="${COMPONENT#build-}"
[ "$MODE" = build ] || COMPONENT+=" fetch"
STEP="start"
STEP_T0=$(date +%s)
step_end() {
  local s=$(($(date +%s) - STEP_T0))
  [ "$STEP" != start ] && [ "$STEP" != done ] || return 0
  printf '    [%s] %s: %ss\n' "$COMPONENT" "$STEP" "$s" >&2
  [ -z "${KUBETRAIN_BUILD_TIMES:-}" ] || printf '%s\t%s\t%s\n' "$COMPONENT" "$STEP" "$s" >>"$KUBETRAIN_BUILD_TIMES"
}
step() { step_end; STEP="$*"; STEP_T0=$(date +%s); printf '==> [%s] %s\n' "$COMPONENT" "$*" >&2; }
# Any failure names the step it happened in.
trap 'rc=$?; [ $rc -eq 0 ] || printf "FAILED (exit %s) in [%s] step: %s\n" "$rc" "$COMPONENT" "$STEP" >&2' EXIT

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
